//! Walking the workspace the guest sees (read-only, as its current directory):
//! whole trees through the host, single folders through WASI.

use crate::host;
use ragbox_protocol::walk::{
    IGNORE_FILES, MAX_IGNORE_FILE_BYTES, SECRET_LEFT_OUT, is_agent_config, is_secret, is_skipped,
};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Default cap on the size of a file a tool reads (larger files are skipped).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 8 << 20;

/// A file the walk yields: its workspace-relative `/`-separated path and size.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Workspace-relative path with `/` separators.
    pub path: String,
    /// Size in bytes, from the directory entry.
    pub size: u64,
    /// Modification time, seconds since the Unix epoch (0 when unknown).
    pub mtime: i64,
}

/// Size and modification time (seconds, 0 when unknown) of a file's metadata.
pub fn stat(meta: &std::fs::Metadata) -> (u64, i64) {
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    (meta.len(), mtime.map_or(0, |d| d.as_secs() as i64))
}

/// The files at or under `root` (a path inside the workspace, `.` for all of
/// it) in path order, honouring `.gitignore` and `.ignore` even outside a git
/// repository, and skipping ragbox's data dir and VCS folders (so
/// `.git/info/exclude` is not read) and the agents' MCP config files. Hidden files are included: Cortext keeps its
/// memory under `.workspace/`. Listed by the host (`host.files`), natively:
/// walking through WASI costs the filesystem guard several syscalls an entry.
/// What could not be listed (unreadable folder, broken symlink, a name that
/// is not UTF-8) is passed to `on_error` as (path when known, what happened).
pub fn files(root: &str, mut on_error: impl FnMut(Option<String>, String)) -> Vec<Entry> {
    match host::files(root) {
        Ok((found, errors)) => {
            for e in errors {
                on_error(e.path, e.message);
            }
            found.into_iter().map(|f| Entry { path: f.path, size: f.size, mtime: f.mtime }).collect()
        }
        Err(e) => {
            on_error(Some(root.to_string()), e.message);
            Vec::new()
        }
    }
}

/// The walk a folder's listing takes (for a watcher's paths): the host's
/// rules for `host.files` (`host/src/walk.rs`), through WASI.
fn builder(root: &str) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(root);
    b.hidden(false)
        .require_git(false)
        .git_exclude(false)
        .git_global(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        // A worktree's `.git` is a file (a pointer to the main repository): never content either.
        .filter_entry(|e| !(e.depth() > 0 && e.file_name().to_str().is_some_and(is_skipped)));
    b
}

/// What a full walk of the workspace would yield at or under `paths`
/// (workspace-relative files or folders, e.g. the ones a watcher saw change),
/// in path order and without duplicates. A path that is gone, ignored, or
/// inside an ignored or skipped folder yields nothing. Only the folders that
/// hold the paths are listed, so a few changes in a big workspace cost little.
pub fn files_at(paths: &[String], mut on_error: impl FnMut(Option<String>, String)) -> Vec<Entry> {
    let mut listings = Listings::default();
    let mut out = BTreeMap::new();
    let mut wanted: Vec<&str> = paths.iter().map(|p| p.trim_matches('/')).filter(|p| !p.is_empty()).collect();
    wanted.sort_unstable();
    wanted.dedup();
    for path in wanted {
        if path == "." {
            out.extend(files(".", &mut on_error).into_iter().map(|e| (e.path.clone(), e)));
            continue;
        }
        let (parent, name) = split(path);
        if !listings.visible_dir(parent, &mut on_error) {
            continue;
        }
        match listings.get(parent, &mut on_error).get(name) {
            Some(&Listed::File(..)) if is_agent_config(path) => {}
            // A name that marks credentials: only what the host lists (the user may let one in).
            Some(&Listed::File(..)) if is_secret(name) => {
                let listed = files(path, &mut on_error);
                if listed.is_empty() {
                    on_error(Some(path.to_string()), SECRET_LEFT_OUT.to_string());
                }
                out.extend(listed.into_iter().map(|e| (e.path.clone(), e)));
            }
            Some(&Listed::File(size, mtime)) => {
                out.insert(path.to_string(), Entry { path: path.to_string(), size, mtime });
            }
            Some(Listed::Dir) => out.extend(files(path, &mut on_error).into_iter().map(|e| (e.path.clone(), e))),
            None => {}
        }
    }
    out.into_values().collect()
}

/// A child of a folder as a full walk sees it.
enum Listed {
    /// A file, its size and mtime.
    File(u64, i64),
    Dir,
}

/// Folder listings as a full walk sees them (ignore rules applied), each read once.
#[derive(Default)]
struct Listings {
    dirs: HashMap<String, HashMap<String, Listed>>,
}

impl Listings {
    /// The visible children of `dir` (workspace-relative, `.` for the root):
    /// none when an ignore file of it cannot be read, as the host's walk.
    fn get(&mut self, dir: &str, on_error: &mut impl FnMut(Option<String>, String)) -> &HashMap<String, Listed> {
        self.dirs.entry(dir.to_string()).or_insert_with(|| {
            let mut children = HashMap::new();
            if let Some((file, why)) = unread_rules(dir) {
                on_error(Some(file), format!("{why}: its rules are not read, so nothing in its folder is indexed"));
                return children;
            }
            let walker = builder(dir).max_depth(Some(1)).build();
            for item in walker {
                match item {
                    Ok(entry) if entry.depth() == 1 => {
                        let Some(name) = entry.file_name().to_str() else { continue };
                        let Some(kind) = entry.file_type() else { continue };
                        if kind.is_dir() {
                            children.insert(name.to_string(), Listed::Dir);
                        } else if kind.is_file() {
                            let (size, mtime) = entry.metadata().map(|m| stat(&m)).unwrap_or_default();
                            children.insert(name.to_string(), Listed::File(size, mtime));
                        }
                    }
                    Ok(_) => {}
                    // A folder that is gone is not an error: its files were deleted.
                    Err(err) if is_not_found(&err) => {}
                    Err(err) => {
                        let (path, message) = describe(&err);
                        on_error(path, message);
                    }
                }
            }
            children
        })
    }

    /// Whether a full walk enters `dir`: every folder from the root down to it is listed in its parent.
    fn visible_dir(&mut self, dir: &str, on_error: &mut impl FnMut(Option<String>, String)) -> bool {
        if dir == "." {
            return true;
        }
        let (parent, name) = split(dir);
        self.visible_dir(parent, on_error) && matches!(self.get(parent, on_error).get(name), Some(Listed::Dir))
    }
}

/// An ignore file of `dir` whose rules cannot be read (not a regular file,
/// or over the size the host reads), and why.
fn unread_rules(dir: &str) -> Option<(String, String)> {
    IGNORE_FILES.iter().find_map(|name| {
        let path = if dir == "." { (*name).to_string() } else { format!("{dir}/{name}") };
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() {
            return Some((path, "not a regular file".to_string()));
        }
        (meta.len() > MAX_IGNORE_FILE_BYTES).then(|| (path, format!("over {} KiB", MAX_IGNORE_FILE_BYTES >> 10)))
    })
}

/// `a/b/c` → (`a/b`, `c`); `c` → (`.`, `c`).
fn split(path: &str) -> (&str, &str) {
    match path.rsplit_once('/') {
        Some((parent, name)) => (parent, name),
        None => (".", path),
    }
}

fn is_not_found(err: &ignore::Error) -> bool {
    match err {
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => is_not_found(err),
        ignore::Error::Io(e) => e.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    }
}

/// The path an error is about, when it says, and what happened in words a user can act on.
fn describe(err: &ignore::Error) -> (Option<String>, String) {
    match err {
        ignore::Error::WithPath { path, err } => (Some(relative(path)), describe(err).1),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => describe(err),
        ignore::Error::Io(e) if e.raw_os_error() == Some(25) || e.to_string().contains("Illegal byte sequence") => (
            None,
            "a file or folder name that is not valid UTF-8 ended the listing of its folder, so files listed \
             after it were not seen (WebAssembly tools get names as UTF-8 text): rename it, e.g. with convmv"
                .to_string(),
        ),
        other => (None, other.to_string()),
    }
}

/// Turns a walked path (`./a/b.md`) into the workspace-relative form `a/b.md`.
pub fn relative(path: &Path) -> String {
    // WASI paths are `/`-separated; a backslash is part of a file's name.
    let s = path.to_string_lossy();
    s.trim_start_matches("./").to_string()
}

/// The workspace-relative form of a path an agent gave: relative, or absolute
/// inside the workspace at `root` (its host path). `None` when it points
/// outside the workspace; `.` for the workspace itself.
pub fn in_workspace(path: &str, root: &str) -> Option<String> {
    let path = path.trim();
    let rel = if path.starts_with('/') {
        let root = root.trim_end_matches('/');
        let rest = path.strip_prefix(root)?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest.trim_start_matches('/')
    } else {
        path
    };
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") {
        return None;
    }
    Some(if parts.is_empty() { ".".to_string() } else { parts.join("/") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_the_workspace_only() {
        let root = "/home/u/ws";
        assert_eq!(in_workspace("brainstorm/2025-11-17/001-x", root).as_deref(), Some("brainstorm/2025-11-17/001-x"));
        assert_eq!(in_workspace("./notes/", root).as_deref(), Some("notes"));
        assert_eq!(in_workspace("/home/u/ws/notes/a.md", root).as_deref(), Some("notes/a.md"));
        assert_eq!(in_workspace("/home/u/ws", root).as_deref(), Some("."));
        assert_eq!(in_workspace("/home/u/wsx/a.md", root), None);
        assert_eq!(in_workspace("/etc/passwd", root), None);
        assert_eq!(in_workspace("notes/../../x", root), None);
    }

    #[test]
    fn relative_strips_dot_prefix() {
        assert_eq!(relative(Path::new("./a/b.md")), "a/b.md");
        assert_eq!(relative(Path::new("a/b.md")), "a/b.md");
        assert_eq!(relative(Path::new("./dir/odd\\name.md")), "dir/odd\\name.md");
    }
}
