//! The workspace's files as ragbox's indexer sees them, listed natively for
//! the `host.files` capability: through WASI every entry costs the
//! filesystem guard several syscalls, here a `getdents` per folder and an
//! `lstat` per file.
//!
//! The workspace may be a hostile clone, and this walk runs outside the
//! sandbox, so it opens nothing but regular files beneath the workspace: it
//! goes from folder to folder through held handles, never following a symlink
//! (a folder swapped for a link mid-walk is refused), reads an ignore file
//! only when it is a regular file of at most [`MAX_IGNORE_FILE_BYTES`] (and
//! at most [`MAX_IGNORE_BYTES_PER_WALK`] of them in all) and lists nothing of
//! a folder whose ignore file it could not read (its rules might exclude
//! anything there), lists no file whose name marks it secret
//! (`ragbox_protocol::walk::SECRET_FILES`) unless the user's config lets it
//! in, never reads `.git`
//! (so `.git/info/exclude`, which git lets point anywhere, is not honoured),
//! keeps no recursion (a tree of any depth cannot exhaust the stack; past
//! [`MAX_DEPTH`] levels it reports instead of listing), and stops when the
//! call must.
//! What it skips (data and VCS folders, the agents' MCP config files) is
//! shared with the guest SDK's single-folder listing (`ragbox_protocol::walk`).

use crate::platform;
use cap_fs_ext::DirExt as _;
use cap_std::ambient_authority;
use cap_std::fs::{Dir, FileType, OpenOptions};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ragbox_protocol::walk::{
    IGNORE_FILES, MAX_IGNORE_FILE_BYTES, SECRET_LEFT_OUT, is_agent_config, is_secret, is_skipped,
};
use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

/// Ignore rules read in one walk, all files together; past it, further
/// ignore files are not read, and their folders not listed (which it says).
/// Real trees have tens of KiB.
const MAX_IGNORE_BYTES_PER_WALK: u64 = 1 << 20;
/// Folders nested deeper than this are not listed (and say so); no real
/// tree goes near it (git's own default limit is 4,096).
pub const MAX_DEPTH: usize = 1024;
/// Folders the walk holds open at once besides the workspace's: deeper
/// levels' ancestors are let go and opened again (beneath a held one, never
/// through a link) when the walk comes back up to them, so a deep tree
/// cannot use up the process's file descriptors (256 by default on macOS).
const HELD_LEVELS: usize = 32;
/// Entries handled between two looks at whether the call must stop.
const STOP_EVERY: usize = 256;

/// A file the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the Unix epoch (0 when unknown).
    pub mtime: i64,
    /// It has other names (hard links), perhaps outside the workspace,
    /// through which it can change without a watch of the workspace seeing it.
    pub linked: bool,
}

/// Something the walk could not list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkError {
    /// Workspace-relative path, when known.
    pub path: Option<String>,
    /// What happened, in words a user can act on.
    pub message: String,
}

/// Why a walk gave no listing at all.
#[derive(Debug, thiserror::Error)]
pub enum WalkFailed {
    /// The root asked for is not a workspace-relative path.
    #[error("{0:?} is not a path inside the workspace")]
    Outside(String),
    /// The workspace folder cannot be opened.
    #[error("cannot open the workspace {0}: {1}")]
    Workspace(PathBuf, std::io::Error),
    /// The call was cancelled or ran out of time mid-walk.
    #[error("the workspace walk stopped: the call was cancelled or ran out of time")]
    Stopped,
}

/// Files the user's own config lets in although their names mark them
/// secret (`index_secrets`: patterns as in an ignore file, from the
/// workspace folder). A workspace's config cannot.
pub struct SecretsLetIn(Option<Gitignore>);

impl SecretsLetIn {
    /// None let in.
    pub fn none() -> Self {
        Self(None)
    }

    /// Those `patterns` match in the workspace at `workspace`.
    pub fn new(workspace: &Path, patterns: &[String]) -> Self {
        if patterns.is_empty() {
            return Self(None);
        }
        let mut builder = GitignoreBuilder::new(workspace);
        for pattern in patterns {
            // A bad pattern lets nothing in.
            let _ = builder.add_line(None, pattern);
        }
        Self(builder.build().ok())
    }

    /// Whether the file at `path` (absolute) is kept out: its name marks it
    /// secret, and no pattern lets it in.
    pub fn keeps_out(&self, path: &Path) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        is_secret(name) && !self.0.as_ref().is_some_and(|g| g.matched(path, false).is_ignore())
    }
}

/// The files at or under `root` (workspace-relative, `.` for all) of the
/// workspace at `workspace`, in path order, and what could not be listed.
/// Ignore files of every folder from the workspace down apply, none above
/// it. Folders in `hidden` (absolute) are passed over like data dirs; files
/// whose names mark them secret, unless `secrets` lets them in. `stop` is
/// asked as the walk goes: when it says so, the walk ends with
/// [`WalkFailed::Stopped`].
pub fn files(
    workspace: &Path,
    root: &str,
    hidden: &[PathBuf],
    secrets: &SecretsLetIn,
    stop: &dyn Fn() -> bool,
) -> Result<(Vec<FileEntry>, Vec<WalkError>), WalkFailed> {
    let mut target = Vec::new();
    for part in Path::new(root).components() {
        match part {
            Component::CurDir => {}
            Component::Normal(name) => target.push(name.to_string_lossy().into_owned()),
            _ => return Err(WalkFailed::Outside(root.to_string())),
        }
    }
    let top = Dir::open_ambient_dir(workspace, ambient_authority())
        .map_err(|e| WalkFailed::Workspace(workspace.to_path_buf(), e))?;
    let reached = target.is_empty() || top.symlink_metadata(target.join("/")).is_ok();
    let mut walk = Walk {
        workspace,
        hidden,
        secrets,
        target,
        levels: Vec::new(),
        found: Vec::new(),
        errors: Vec::new(),
        ignore_bytes: 0,
    };
    walk.run(top, stop)?;
    if walk.found.is_empty() && walk.errors.is_empty() && !reached {
        walk.errors.push(WalkError { path: Some(root.to_string()), message: "no such file or folder".into() });
    }
    Ok((walk.found, walk.errors))
}

struct Walk<'a> {
    workspace: &'a Path,
    hidden: &'a [PathBuf],
    secrets: &'a SecretsLetIn,
    /// The root asked for, as path components (empty: everything).
    target: Vec<String>,
    /// The ignore rules of each folder from the workspace down to the current one.
    levels: Vec<[Option<Gitignore>; 2]>,
    found: Vec<FileEntry>,
    errors: Vec<WalkError>,
    /// Ignore rules read so far.
    ignore_bytes: u64,
}

/// A folder being listed: held open (unless let go, see [`HELD_LEVELS`]),
/// its entries sorted by name, and how far the walk is through them.
struct Frame {
    dir: Option<Dir>,
    /// From the workspace, `/`-separated (empty at its root).
    rel: String,
    children: std::vec::IntoIter<(OsString, FileType)>,
}

impl Walk<'_> {
    /// Lists everything from `top` (the workspace folder) down, depth first
    /// in name order, one frame per level: no recursion, so no tree is too
    /// deep for the stack.
    fn run(&mut self, top: Dir, stop: &dyn Fn() -> bool) -> Result<(), WalkFailed> {
        let mut stack = vec![self.enter(top, String::new())];
        let mut handled = 0usize;
        loop {
            // Levels below the workspace folder that the current frame is at.
            let depth = stack.len().saturating_sub(1);
            if let Err((rel, e)) = reopen_last(&mut stack) {
                self.error(&rel, format!("cannot list it: {e}"));
                stack.pop();
                self.levels.pop();
                continue;
            }
            let Some(frame) = stack.last_mut() else { break };
            let Some(dir) = frame.dir.as_ref() else { break };
            handled += 1;
            if handled.is_multiple_of(STOP_EVERY) && stop() {
                return Err(WalkFailed::Stopped);
            }
            let Some((name, kind)) = frame.children.next() else {
                stack.pop();
                self.levels.pop();
                continue;
            };
            let rel = frame.rel.clone();
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
            let child_abs = self.workspace.join(&child_rel);
            // The root asked for is listed even when ignored (as a walk starting there would).
            let on_the_way = depth < self.target.len();
            if kind.is_dir() {
                if is_skipped(name)
                    || self.hidden.contains(&child_abs)
                    || (!on_the_way && self.ignored(&child_abs, true))
                {
                    continue;
                }
                // Entering a folder may compile its ignore rules: look first.
                if stop() {
                    return Err(WalkFailed::Stopped);
                }
                if depth + 1 > MAX_DEPTH {
                    let message = format!("folders nested deeper than {MAX_DEPTH} levels are not listed");
                    self.error(&child_rel, message);
                    continue;
                }
                // Opened through its parent, never through a link: a folder
                // swapped for a link meanwhile is refused, not followed.
                match dir.open_dir_nofollow(name) {
                    Ok(dir) => {
                        let child = self.enter(dir, child_rel);
                        stack.push(child);
                        if stack.len() > HELD_LEVELS + 1 {
                            let far = stack.len() - HELD_LEVELS - 1;
                            if far > 0 {
                                stack[far].dir = None;
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => self.error(&child_rel, format!("cannot list it: {e}")),
                }
            // A worktree's `.git` is a file (a pointer to the main repository): never content either.
            } else if kind.is_file()
                && !is_skipped(name)
                && !is_agent_config(&child_rel)
                && (on_the_way || !self.ignored(&child_abs, false))
            {
                if self.secrets.keeps_out(&child_abs) {
                    // Left out quietly, as ignored files are, unless it was asked for by name.
                    if on_the_way {
                        self.error(&child_rel, SECRET_LEFT_OUT.into());
                    }
                    continue;
                }
                match dir.symlink_metadata(name) {
                    Ok(meta) if meta.is_file() => self.found.push(entry(child_rel, &meta)),
                    Ok(_) => {}
                    // Gone since the folder was listed: not there.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => self.error(&child_rel, format!("cannot read its metadata: {e}")),
                }
            }
        }
        Ok(())
    }

    /// The frame of the folder `dir` (`rel` from the workspace), its ignore
    /// rules pushed; none of its entries when an ignore file of it could not
    /// be read (its rules might exclude any of them).
    fn enter(&mut self, dir: Dir, rel: String) -> Frame {
        let mut unread = false;
        let rules = IGNORE_FILES.map(|name| {
            self.ignore_file(&dir, &rel, name).unwrap_or_else(|()| {
                unread = true;
                None
            })
        });
        self.levels.push(rules);
        let mut children = Vec::new();
        match dir.entries() {
            _ if unread => {}
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
        Frame { dir: Some(dir), rel, children: children.into_iter() }
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

    /// The rules of `name` in `dir` (`rel` from the workspace): none when
    /// there is no such file; `Err` (said) when there is one whose rules
    /// cannot be read: not a regular file, too large, or unreadable.
    fn ignore_file(&mut self, dir: &Dir, rel: &str, name: &str) -> Result<Option<Gitignore>, ()> {
        let shown = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
        let folder = if rel.is_empty() { "the workspace" } else { "its folder" };
        let closed = format!("so nothing in {folder} is indexed (its rules might exclude any of it)");
        let Ok(meta) = dir.symlink_metadata(name) else { return Ok(None) };
        if !meta.is_file() {
            self.error(&shown, format!("not a regular file: its rules are not read, {closed}; make it a plain file"));
            return Err(());
        }
        if meta.len() > MAX_IGNORE_FILE_BYTES {
            let message = format!(
                "over {} KiB: its rules are not read, {closed}; make it smaller (rules can move to the ignore \
                 files of the folders they are about)",
                MAX_IGNORE_FILE_BYTES >> 10
            );
            self.error(&shown, message);
            return Err(());
        }
        if self.ignore_bytes + meta.len() > MAX_IGNORE_BYTES_PER_WALK {
            let message = format!(
                "its rules are not read (the ignore files read before it already hold {} MiB of rules), {closed}",
                MAX_IGNORE_BYTES_PER_WALK >> 20
            );
            self.error(&shown, message);
            return Err(());
        }
        // No link followed, nothing that can block: what was checked is what is opened.
        let opened = dir.open_with(name, platform::no_follow_no_block(OpenOptions::new().read(true)));
        let mut text = String::new();
        let read = opened.and_then(|f| {
            if !f.metadata()?.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            f.take(MAX_IGNORE_FILE_BYTES).read_to_string(&mut text)
        });
        if let Err(e) = read {
            self.error(&shown, format!("cannot read its rules ({e}), {closed}"));
            return Err(());
        }
        self.ignore_bytes += text.len() as u64;
        let folder = self.workspace.join(rel);
        let mut builder = GitignoreBuilder::new(&folder);
        let from = folder.join(name);
        for line in text.lines() {
            // A bad pattern is skipped, as git does.
            let _ = builder.add_line(Some(from.clone()), line);
        }
        Ok(builder.build().ok())
    }

    fn error(&mut self, rel: &str, message: String) {
        let path = if rel.is_empty() { ".".to_string() } else { rel.to_string() };
        self.errors.push(WalkError { path: Some(path), message });
    }
}

/// Opens the last frame's folder again when it was let go: from the nearest
/// held ancestor down, one name at a time, never through a link. On failure,
/// the folder's path and why.
fn reopen_last(stack: &mut [Frame]) -> Result<(), (String, std::io::Error)> {
    let Some(last) = stack.len().checked_sub(1) else { return Ok(()) };
    if stack[last].dir.is_some() {
        return Ok(());
    }
    let rel = stack[last].rel.clone();
    // The workspace's own frame is never let go.
    let Some(held) = (0..last).rev().find(|&k| stack[k].dir.is_some()) else {
        return Err((rel, std::io::Error::other("no folder above it is open")));
    };
    let mut dir: Option<Dir> = None;
    for k in held + 1..=last {
        let name = stack[k].rel.rsplit('/').next().unwrap_or_default();
        let parent = match &dir {
            Some(d) => d,
            None => stack[held].dir.as_ref().ok_or_else(|| (rel.clone(), std::io::Error::other("let go")))?,
        };
        dir = Some(parent.open_dir_nofollow(name).map_err(|e| (rel.clone(), e))?);
    }
    stack[last].dir = dir;
    Ok(())
}

/// The entry for a regular file at `rel` with metadata `meta`.
fn entry(rel: String, meta: &cap_std::fs::Metadata) -> FileEntry {
    let mtime = meta.modified().ok().and_then(|t| t.into_std().duration_since(std::time::UNIX_EPOCH).ok());
    FileEntry {
        path: rel,
        size: meta.len(),
        mtime: mtime.map_or(0, |d| d.as_secs() as i64),
        linked: platform::links(meta) > 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(found: &[FileEntry]) -> Vec<&str> {
        found.iter().map(|e| e.path.as_str()).collect()
    }

    fn write(ws: &Path, rel: &str, text: &str) {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[cfg(unix)]
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
        // A git worktree's (or submodule's) `.git` is a file.
        write(ws, "worktree/.git", "gitdir: /elsewhere/.git/worktrees/w");
        write(ws, "worktree/a.md", "a worktree's file");
        // On a case-insensitive filesystem these are the same folders.
        write(ws, "upper/.GIT/HEAD", "ref");
        write(ws, "upper/.Ragbox/store.redb", "data");
        write(ws, "upper/.Git", "gitdir: /elsewhere");
        std::os::unix::fs::symlink(ws.join("notes/a.md"), ws.join("link.md")).unwrap();
        std::os::unix::fs::symlink(ws.join("notes"), ws.join("linked-dir")).unwrap();

        let (found, errors) = files(ws, ".", &[], &SecretsLetIn::none(), &|| false).unwrap();
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
                "notes/sub/c.log",
                "worktree/a.md"
            ]
        );
        assert_eq!(found[3].size, 1);
        assert!(found[3].mtime > 0);

        let (found, _) = files(ws, "notes/sub", &[], &SecretsLetIn::none(), &|| false).unwrap();
        assert_eq!(paths(&found), ["notes/sub/.gitignore", "notes/sub/c.log"]);
        let (found, _) = files(ws, "./notes/a.md", &[], &SecretsLetIn::none(), &|| false).unwrap();
        assert_eq!(paths(&found), ["notes/a.md"]);
        // Asked for by name, an ignored file is listed (as a walk from it would).
        assert_eq!(
            paths(&files(ws, "build/out.md", &[], &SecretsLetIn::none(), &|| false).unwrap().0),
            ["build/out.md"]
        );
        assert!(files(ws, ".ragbox", &[], &SecretsLetIn::none(), &|| false).unwrap().0.is_empty());
        let (found, errors) = files(ws, "nowhere", &[], &SecretsLetIn::none(), &|| false).unwrap();
        assert!(found.is_empty() && errors.len() == 1, "{errors:?}");
        assert!(files(ws, "../x", &[], &SecretsLetIn::none(), &|| false).is_err());
        assert!(files(ws, "/etc", &[], &SecretsLetIn::none(), &|| false).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn hostile_ignore_files_and_names_are_reported_not_followed() {
        use std::os::unix::ffi::OsStrExt as _;
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

        // Rules that cannot be read might exclude anything in their folder: nothing of it is listed.
        let (found, errors) = files(ws, "c", &[], &SecretsLetIn::none(), &|| false).unwrap();
        assert_eq!(paths(&found), [] as [&str; 0]);
        assert_eq!(errors.len(), 1, "only what lies on the way or under it: {errors:?}");
        let (found, errors) = files(ws, ".", &[], &SecretsLetIn::none(), &|| false).unwrap();
        assert_eq!(paths(&found), [] as [&str; 0]);
        let said: Vec<String> =
            errors.iter().map(|e| format!("{}: {}", e.path.as_deref().unwrap(), e.message)).collect();
        assert_eq!(said.len(), 4, "{said:?}");
        assert!(said.iter().any(|s| s.starts_with(".: \"m-\\xFF.md\": a name that is not valid UTF-8")), "{said:?}");
        assert!(said.iter().any(|s| s.starts_with("a/.gitignore: not a regular file")), "{said:?}");
        assert!(said.iter().any(|s| s.starts_with("b/.gitignore: not a regular file")), "{said:?}");
        assert!(said.iter().any(|s| s.starts_with("c/.ignore: over 64 KiB")), "{said:?}");
        assert!(said.iter().all(|s| s.contains("nothing in its folder is indexed") || s.contains("UTF-8")), "{said:?}");
    }

    #[test]
    fn files_named_as_secrets_are_left_out_unless_the_user_lets_them_in() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for (rel, text) in [
            (".env", "KEY=1"),
            ("deploy/.env.production", "KEY=2"),
            ("certs/server.pem", "x"),
            ("notes/a.md", "a"),
            (".gitignore", "!.env\n"),
        ] {
            write(ws, rel, text);
        }
        // Whatever the ignore files say.
        let (found, _) = files(ws, ".", &[], &SecretsLetIn::none(), &|| false).unwrap();
        assert_eq!(paths(&found), [".gitignore", "notes/a.md"]);
        // Asked for by name, too.
        assert!(files(ws, ".env", &[], &SecretsLetIn::none(), &|| false).unwrap().0.is_empty());
        let mine = SecretsLetIn::new(ws, &["/.env".to_string(), "*.pem".to_string()]);
        let (found, _) = files(ws, ".", &[], &mine, &|| false).unwrap();
        assert_eq!(paths(&found), [".env", ".gitignore", "certs/server.pem", "notes/a.md"]);
    }

    #[test]
    fn deep_trees_hidden_folders_and_stopping() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        // Deeper than the walk lists: reported, not a crash (a clone can be 1,700 deep).
        let mut deep = ws.to_path_buf();
        for _ in 0..MAX_DEPTH + 20 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("bottom.md"), "x").unwrap();
        write(ws, "d/top.md", "x");
        write(ws, "config/ragbox/owner.key", "secret");
        let hidden = [ws.join("config/ragbox")];
        let (found, errors) = files(ws, ".", &hidden, &SecretsLetIn::none(), &|| false).unwrap();
        assert_eq!(paths(&found), ["d/top.md"]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].message.contains("deeper than 1024"), "{errors:?}");

        // Folders let go on the way down are opened again on the way up: a
        // file after each level's subfolder (in name order) is still listed.
        let chain = dir.path().join("chain");
        let mut at = chain.clone();
        let mut expected = Vec::new();
        let mut rel = String::new();
        for _ in 0..(HELD_LEVELS * 3) {
            write(&at, "f.md", "x");
            expected.push(format!("{rel}f.md"));
            at.push("e");
            rel.push_str("e/");
        }
        let (found, errors) = files(&chain, ".", &[], &SecretsLetIn::none(), &|| false).unwrap();
        expected.sort();
        assert_eq!(paths(&found), expected);
        assert!(errors.is_empty(), "{errors:?}");

        let asked = std::cell::Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            true
        };
        assert!(matches!(files(ws, ".", &[], &SecretsLetIn::none(), &stop), Err(WalkFailed::Stopped)));
        assert_eq!(asked.get(), 1);
    }

    #[test]
    fn hard_linked_files_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        write(&ws, "plain.md", "x");
        write(dir.path(), "outside.md", "y");
        std::fs::hard_link(dir.path().join("outside.md"), ws.join("linked.md")).unwrap();
        let (found, _) = files(&ws, ".", &[], &SecretsLetIn::none(), &|| false).unwrap();
        let linked: Vec<_> = found.iter().map(|f| (f.path.as_str(), f.linked)).collect();
        assert_eq!(linked, [("linked.md", true), ("plain.md", false)]);
    }
}
