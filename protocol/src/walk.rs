//! What every listing of a workspace skips, host (`host.files`, the file
//! watch) and guests (a folder listed through WASI) alike: kept here so
//! the two sides cannot drift apart.

/// Folders never walked: ragbox's data dir and version control's.
pub const SKIPPED_DIRS: [&str; 4] = [".ragbox", ".git", ".hg", ".svn"];

/// The ignore files read in each folder, weakest first: `.ignore` overrides
/// `.gitignore`, as in ripgrep.
pub const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];
