//! The workspace's files as ragbox's indexer sees them, listed natively for
//! the `host.files` capability: through WASI every entry costs the
//! filesystem guard several syscalls, here a `getdents` per folder and an
//! `lstat` per file.
//!
//! The workspace may be a hostile clone, and this walk runs outside the
//! sandbox, so it opens nothing but regular files beneath the workspace: it
//! never follows a symlink, reads an ignore file only when it is a regular
//! file of at most [`MAX_IGNORE_FILE_BYTES`], and never reads `.git` (so
//! `.git/info/exclude`, which git lets point anywhere, is not honoured).
//! What it skips is shared with the guest SDK's single-folder listing
//! (`ragbox_protocol::walk`).

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ragbox_protocol::walk::{IGNORE_FILES, SKIPPED_DIRS};
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Component, Path, PathBuf};

/// Larger ignore files are not read (and say so).
const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// A file the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the Unix epoch (0 when unknown).
    pub mtime: i64,
}

/// Something the walk could not list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkError {
    /// Workspace-relative path, when known.
    pub path: Option<String>,
    /// What happened, in words a user can act on.
    pub message: String,
}

/// A root that is not a workspace-relative path.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a path inside the workspace")]
pub struct OutsideWorkspace(pub String);

/// The files at or under `root` (workspace-relative, `.` for all) of the
/// workspace at `workspace`, in path order, and what could not be listed.
/// Ignore files of every folder from the workspace down apply, none above it.
pub fn files(workspace: &Path, root: &str) -> Result<(Vec<FileEntry>, Vec<WalkError>), OutsideWorkspace> {
    let mut target = Vec::new();
    for part in Path::new(root).components() {
        match part {
            Component::CurDir => {}
            Component::Normal(name) => target.push(name.to_string_lossy().into_owned()),
            _ => return Err(OutsideWorkspace(root.to_string())),
        }
    }
    let mut walk = Walk { workspace, target, levels: Vec::new(), found: Vec::new(), errors: Vec::new() };
    walk.dir(workspace.to_path_buf(), String::new());
    if walk.found.is_empty() && walk.errors.is_empty() && !walk.reached() {
        walk.errors.push(WalkError { path: Some(root.to_string()), message: "no such file or folder".into() });
    }
    Ok((walk.found, walk.errors))
}

struct Walk<'a> {
    workspace: &'a Path,
    /// The root asked for, as path components (empty: everything).
    target: Vec<String>,
    /// The ignore rules of each folder from the workspace down to the current one.
    levels: Vec<[Option<Gitignore>; 2]>,
    found: Vec<FileEntry>,
    errors: Vec<WalkError>,
}

impl Walk<'_> {
    /// Whether the target itself exists (a missing root is reported).
    fn reached(&self) -> bool {
        self.workspace.join(self.target.join("/")).symlink_metadata().is_ok()
    }

    /// Lists `abs` (`rel` from the workspace, empty at its root) and what is under it.
    fn dir(&mut self, abs: PathBuf, rel: String) {
        let rules = IGNORE_FILES.map(|name| self.ignore_file(&abs, &rel, name));
        self.levels.push(rules);
        let mut children = Vec::new();
        match std::fs::read_dir(&abs) {
            Ok(entries) => {
                for entry in entries {
                    match entry.and_then(|e| Ok((e.file_name(), e.file_type()?))) {
                        Ok(child) => children.push(child),
                        Err(e) => self.error(&rel, format!("cannot list it: {e}")),
                    }
                }
            }
            Err(e) => self.error(&rel, format!("cannot list it: {e}")),
        }
        children.sort_by(|a, b| a.0.cmp(&b.0));
        let depth = rel.split('/').filter(|p| !p.is_empty()).count();
        for (name, kind) in children {
            // Only the folders on the way to the root asked for, then everything under it.
            if let Some(want) = self.target.get(depth)
                && name.as_os_str() != std::ffi::OsStr::new(want)
            {
                continue;
            }
            let Some(name) = name.to_str() else {
                self.error(
                    &rel,
                    format!(
                        "{name:?}: a name that is not valid UTF-8 was left out (tools get names as UTF-8 \
                         text): rename it, e.g. with convmv"
                    ),
                );
                continue;
            };
            let child_rel = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
            let child_abs = abs.join(name);
            // The root asked for is listed even when ignored (as a walk starting there would).
            let on_the_way = depth < self.target.len();
            if kind.is_dir() {
                if SKIPPED_DIRS.contains(&name) || (!on_the_way && self.ignored(&child_abs, true)) {
                    continue;
                }
                self.dir(child_abs, child_rel);
            } else if kind.is_file() && (on_the_way || !self.ignored(&child_abs, false)) {
                self.file(&child_abs, child_rel);
            }
        }
        self.levels.pop();
    }

    /// Records the regular file at `abs` with its size and mtime.
    fn file(&mut self, abs: &Path, rel: String) {
        match abs.symlink_metadata() {
            Ok(meta) => {
                let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                let mtime = mtime.map_or(0, |d| d.as_secs() as i64);
                self.found.push(FileEntry { path: rel, size: meta.len(), mtime });
            }
            // Gone since the folder was listed: not there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => self.error(&rel, format!("cannot read its metadata: {e}")),
        }
    }

    /// Whether the rules in force ignore `path`: the nearest folder's rule wins,
    /// and an `.ignore` rule anywhere wins over a `.gitignore` one (as in the `ignore` crate).
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for kind in (0..IGNORE_FILES.len()).rev() {
            for level in self.levels.iter().rev() {
                match level[kind].as_ref().map(|g| g.matched(path, is_dir)) {
                    Some(Match::Ignore(_)) => return true,
                    Some(Match::Whitelist(_)) => return false,
                    _ => {}
                }
            }
        }
        false
    }

    /// The rules of `dir/name`, when it is a regular file small enough to read.
    fn ignore_file(&mut self, dir: &Path, rel: &str, name: &str) -> Option<Gitignore> {
        let path = dir.join(name);
        let shown = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
        let meta = path.symlink_metadata().ok()?;
        if !meta.is_file() {
            self.error(&shown, "not a regular file, so its rules are not read".into());
            return None;
        }
        // O_NOFOLLOW | O_NONBLOCK: what was checked is what is opened, and nothing can block.
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32 | rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&path);
        let mut text = String::new();
        let read = opened.and_then(|f| {
            if !f.metadata()?.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            f.take(MAX_IGNORE_FILE_BYTES + 1).read_to_string(&mut text)
        });
        match read {
            Ok(n) if n as u64 > MAX_IGNORE_FILE_BYTES => {
                self.error(&shown, format!("over {} MiB, so its rules are not read", MAX_IGNORE_FILE_BYTES >> 20));
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                self.error(&shown, format!("cannot read its rules: {e}"));
                return None;
            }
        }
        let mut builder = GitignoreBuilder::new(dir);
        for line in text.lines() {
            // A bad pattern is skipped, as git does.
            let _ = builder.add_line(Some(path.clone()), line);
        }
        builder.build().ok()
    }

    fn error(&mut self, rel: &str, message: String) {
        let path = if rel.is_empty() { ".".to_string() } else { rel.to_string() };
        self.errors.push(WalkError { path: Some(path), message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt as _;

    fn paths(found: &[FileEntry]) -> Vec<&str> {
        found.iter().map(|e| e.path.as_str()).collect()
    }

    fn write(ws: &Path, rel: &str, text: &str) {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn ignore_files_hidden_files_and_skipped_folders() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        write(ws, ".gitignore", "build/\n*.log\n!keep.log\n");
        write(ws, "notes/a.md", "a");
        write(ws, "notes/b.log", "log");
        write(ws, "notes/keep.log", "kept");
        write(ws, "notes/.ignore", "secret.md\n");
        write(ws, "notes/secret.md", "ignored by .ignore");
        write(ws, "notes/sub/.gitignore", "!*.log\n");
        write(ws, "notes/sub/c.log", "nearest rule wins");
        write(ws, "build/out.md", "built");
        write(ws, ".workspace/memory/decisions.md", "hidden but wanted");
        write(ws, ".ragbox/store.redb", "data");
        write(ws, ".git/HEAD", "ref");
        write(ws, ".git/info/exclude", "notes/\n");
        write(ws, "deep/.git/HEAD", "ref");
        std::os::unix::fs::symlink(ws.join("notes/a.md"), ws.join("link.md")).unwrap();
        std::os::unix::fs::symlink(ws.join("notes"), ws.join("linked-dir")).unwrap();

        let (found, errors) = files(ws, ".").unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            paths(&found),
            [
                ".gitignore",
                ".workspace/memory/decisions.md",
                "notes/.ignore",
                "notes/a.md",
                "notes/keep.log",
                "notes/sub/.gitignore",
                "notes/sub/c.log"
            ]
        );
        assert_eq!(found[3].size, 1);
        assert!(found[3].mtime > 0);

        let (found, _) = files(ws, "notes/sub").unwrap();
        assert_eq!(paths(&found), ["notes/sub/.gitignore", "notes/sub/c.log"]);
        let (found, _) = files(ws, "./notes/a.md").unwrap();
        assert_eq!(paths(&found), ["notes/a.md"]);
        // Asked for by name, an ignored file is listed (as a walk from it would).
        assert_eq!(paths(&files(ws, "build/out.md").unwrap().0), ["build/out.md"]);
        assert!(files(ws, ".ragbox").unwrap().0.is_empty());
        let (found, errors) = files(ws, "nowhere").unwrap();
        assert!(found.is_empty() && errors.len() == 1, "{errors:?}");
        assert!(files(ws, "../x").is_err());
        assert!(files(ws, "/etc").is_err());
    }

    #[test]
    fn hostile_ignore_files_and_names_are_reported_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        write(ws, "a/x.md", "x");
        write(ws, "b/y.md", "y");
        write(ws, "c/z.md", "z");
        // A FIFO would block a reader forever; a symlink could lead anywhere (/dev/zero).
        rustix::fs::mkfifoat(rustix::fs::CWD, ws.join("a/.gitignore"), rustix::fs::Mode::RUSR).unwrap();
        std::os::unix::fs::symlink("/dev/zero", ws.join("b/.gitignore")).unwrap();
        std::fs::write(ws.join("c/.ignore"), "#".repeat(MAX_IGNORE_FILE_BYTES as usize + 1)).unwrap();
        std::fs::write(ws.join(std::ffi::OsStr::from_bytes(b"m-\xff.md")), "x").unwrap();

        let (found, errors) = files(ws, "c").unwrap();
        assert_eq!(paths(&found), ["c/.ignore", "c/z.md"]);
        assert_eq!(errors.len(), 1, "only what lies on the way or under it: {errors:?}");
        let (found, errors) = files(ws, ".").unwrap();
        assert_eq!(paths(&found), ["a/x.md", "b/y.md", "c/.ignore", "c/z.md"]);
        let said: Vec<String> =
            errors.iter().map(|e| format!("{}: {}", e.path.as_deref().unwrap(), e.message)).collect();
        assert_eq!(said.len(), 4, "{said:?}");
        assert!(said.iter().any(|s| s.starts_with(".: \"m-\\xFF.md\": a name that is not valid UTF-8")), "{said:?}");
        assert!(said.iter().any(|s| s.starts_with("a/.gitignore: not a regular file")), "{said:?}");
        assert!(said.iter().any(|s| s.starts_with("b/.gitignore: not a regular file")), "{said:?}");
        assert!(said.iter().any(|s| s.starts_with("c/.ignore: over 1 MiB")), "{said:?}");
    }
}
