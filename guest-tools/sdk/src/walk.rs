//! Walking the workspace the guest sees (read-only, as its current directory).

use std::path::Path;

/// Folders never searched or indexed: ragbox's own data and VCS internals.
const SKIPPED_DIRS: &[&str] = &[".ragbox", ".git", ".hg", ".svn"];

/// Default cap on the size of a file a tool reads (larger files are skipped).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 8 << 20;

/// A file the walk yields: its workspace-relative `/`-separated path and size.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Workspace-relative path with `/` separators.
    pub path: String,
    /// Size in bytes, from the directory entry.
    pub size: u64,
}

/// Walks `root` (a path inside the workspace, `.` for all of it) in path order,
/// honouring `.gitignore`, `.ignore` and `.git/info/exclude` even outside a git
/// repository, and skipping ragbox's data dir and VCS folders. Hidden files are
/// included: Cortext keeps its memory under `.workspace/`. Errors on single
/// entries (unreadable folder, broken symlink) are passed to `on_error` and the
/// walk goes on.
pub fn files(root: &str, mut on_error: impl FnMut(String)) -> Vec<Entry> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| {
            !(e.depth() > 0
                && e.file_type().is_some_and(|t| t.is_dir())
                && e.file_name().to_str().is_some_and(|n| SKIPPED_DIRS.contains(&n)))
        })
        .build();
    for item in walker {
        match item {
            Ok(entry) => {
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                out.push(Entry { path: relative(entry.path()), size });
            }
            Err(err) => on_error(err.to_string()),
        }
    }
    out
}

/// Turns a walked path (`./a/b.md`) into the workspace-relative form `a/b.md`.
pub fn relative(path: &Path) -> String {
    let s = path.to_string_lossy().replace('\\', "/");
    s.trim_start_matches("./").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_strips_dot_prefix() {
        assert_eq!(relative(Path::new("./a/b.md")), "a/b.md");
        assert_eq!(relative(Path::new("a/b.md")), "a/b.md");
    }
}
