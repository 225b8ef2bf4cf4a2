//! Folders and files beneath the served workspace, reached as a tool's paths
//! are: one name at a time through held folder handles, never through a
//! link, never into a data dir, a version-control folder, the user's config
//! dir or a process's folder in `/proc`; a read takes only a regular file of
//! at most [`MAX_READ_BYTES`], and never waits on a FIFO.

use super::ResourceError;
use crate::platform;
use cap_fs_ext::DirExt as _;
use cap_std::fs::{Dir, OpenOptions};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The largest file a read returns; larger ones are refused with the reason.
pub const MAX_READ_BYTES: u64 = 8 << 20;

/// The served workspace, as reads and listings reach into it.
pub struct Beneath<'a> {
    /// The served workspace, canonical.
    workspace: &'a Path,
    /// The user's config dir (its key, the HTTP token) and its identity.
    config: Option<(PathBuf, platform::FileId)>,
}

/// A folder opened beneath the workspace.
pub struct Folder {
    dir: Dir,
    /// Its path, as opened (no link on it).
    real: PathBuf,
    /// Its workspace-relative path, `/`-separated ("" for the workspace).
    rel: String,
}

/// What a folder holds under one name that a client may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Child {
    /// A regular file and its size.
    File(String, u64),
    /// A folder.
    Folder(String),
}

/// What [`Folder::children`] found.
#[derive(Debug, Default)]
pub struct Listing {
    /// The files and folders a client may reach, by name.
    pub children: Vec<Child>,
    /// Entries of any kind looked at.
    pub seen: usize,
    /// Whether it holds more entries than were looked at.
    pub cut: bool,
}

impl Child {
    /// The name it has in its folder.
    pub fn name(&self) -> &str {
        match self {
            Child::File(name, _) | Child::Folder(name) => name,
        }
    }
}

impl<'a> Beneath<'a> {
    /// `workspace` (canonical), unless it lies in the user's config dir.
    pub fn new(workspace: &'a Path) -> Result<Self, ResourceError> {
        let config = hidden_dir();
        if config.as_ref().is_some_and(|(path, _)| workspace.starts_with(path)) {
            return Err(ResourceError::NotFound("ragbox's config folder is not a resource".into()));
        }
        Ok(Self { workspace, config })
    }

    /// The folder at `rel` (`/`-separated plain names; "" for the workspace).
    pub fn folder(&self, rel: &str) -> Result<Folder, ResourceError> {
        let mut folder = Folder {
            dir: Dir::open_ambient_dir(self.workspace, cap_std::ambient_authority())
                .map_err(|source| ResourceError::Io { path: rel.to_string(), source })?,
            real: self.workspace.to_path_buf(),
            rel: String::new(),
        };
        if rel.is_empty() {
            return Ok(folder);
        }
        let names = plain_names(rel)?;
        if platform::in_process_folder(&self.workspace.join(rel)) {
            return Err(ResourceError::NotFound(format!("{rel}: a process's folder in /proc is not a resource")));
        }
        for name in names {
            folder = folder.child(self, name)?;
        }
        Ok(folder)
    }

    /// The bytes of the regular file at `rel`.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>, ResourceError> {
        plain_names(rel)?;
        let (parent, last) = rel.rsplit_once('/').unwrap_or(("", rel));
        if platform::in_process_folder(&self.workspace.join(rel)) {
            return Err(ResourceError::NotFound(format!("{rel}: a process's folder in /proc is not a resource")));
        }
        self.folder(parent)?.read(last)
    }
}

impl Folder {
    /// The path of `name` in it, workspace-relative.
    pub fn rel_of(&self, name: &str) -> String {
        if self.rel.is_empty() { name.to_string() } else { format!("{}/{name}", self.rel) }
    }

    /// The folder `name` in it: a plain name, not a link, not a data dir
    /// (under any name for it), a version-control folder or the config dir.
    pub fn child(&self, beneath: &Beneath, name: &str) -> Result<Folder, ResourceError> {
        let rel = self.rel_of(name);
        if is_closed_dir(name) {
            return Err(ResourceError::NotFound(format!(
                "{rel}: ragbox's data and version-control folders are not resources"
            )));
        }
        let dir = self.dir.open_dir_nofollow(name).map_err(|e| not_followed(&rel, e))?;
        let id = dir.dir_metadata().map(|m| platform::file_id(&m)).unwrap_or(platform::FileId::NONE);
        // The data dir under another name for it (a Windows short name, an
        // HFS+ spelling): known by its identity, as the sandbox's guard knows it.
        if id != platform::FileId::NONE && platform::dir_identity(&self.dir, crate::datadir::DATA_DIR) == Some(id) {
            return Err(ResourceError::NotFound(format!("{rel}: ragbox's data folder is not a resource")));
        }
        let real = self.real.join(name);
        if beneath.config.as_ref().is_some_and(|(path, config_id)| real.starts_with(path) || id == *config_id) {
            return Err(ResourceError::NotFound(format!("{rel}: ragbox's config folder is not a resource")));
        }
        Ok(Folder { dir, real, rel })
    }

    /// Whether it holds a regular file called `name` (not a link to one).
    pub fn holds_file(&self, name: &str) -> bool {
        self.dir.symlink_metadata(name).is_ok_and(|m| m.is_file())
    }

    /// What it holds that a client may reach (regular files, and folders
    /// [`Folder::child`] opens, with plain names), sorted by name, from its
    /// first `most` entries of any kind.
    pub fn children(&self, beneath: &Beneath, most: usize) -> Result<Listing, ResourceError> {
        let io = |source| ResourceError::Io { path: self.rel.clone(), source };
        let mut listing = Listing::default();
        for entry in self.dir.entries().map_err(io)? {
            if listing.seen == most {
                listing.cut = true;
                break;
            }
            listing.seen += 1;
            let entry = entry.map_err(io)?;
            let Ok(name) = entry.file_name().into_string() else { continue };
            if !platform::is_plain_name(&name) {
                continue;
            }
            // The entry's own type: a link is a link, not what it points at.
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if self.child(beneath, &name).is_ok() {
                    listing.children.push(Child::Folder(name));
                }
            } else if kind.is_file() {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                listing.children.push(Child::File(name, size));
            }
        }
        listing.children.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(listing)
    }

    /// The bytes of the regular file `name` in it.
    pub fn read(&self, name: &str) -> Result<Vec<u8>, ResourceError> {
        let rel = self.rel_of(name);
        let io = |source| ResourceError::Io { path: rel.clone(), source };
        if is_closed_dir(name) {
            return Err(ResourceError::NotFound(format!(
                "{rel}: ragbox's data and version-control folders are not resources"
            )));
        }
        let kind = self.dir.symlink_metadata(name).map_err(|e| not_followed(&rel, e))?.file_type();
        if kind.is_symlink() {
            return Err(ResourceError::NotFound(format!("{rel} is a link: links are not followed")));
        }
        if !kind.is_file() {
            return Err(ResourceError::NotFound(format!("{rel} is not a regular file")));
        }
        let mut options = OpenOptions::new();
        options.read(true);
        let file =
            self.dir.open_with(name, platform::no_follow_no_block(&mut options)).map_err(|e| not_followed(&rel, e))?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(ResourceError::NotFound(format!("{rel} is not a regular file")));
        }
        if meta.len() > MAX_READ_BYTES {
            return Err(ResourceError::Invalid(format!(
                "{rel} has {} bytes, more than a resource read returns ({} MiB): search it with get_context instead",
                meta.len(),
                MAX_READ_BYTES >> 20
            )));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        // The file may grow after its size was read: take no more than the cap.
        file.into_std().take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > MAX_READ_BYTES {
            return Err(ResourceError::Invalid(format!(
                "{rel} grew past {} MiB while it was read",
                MAX_READ_BYTES >> 20
            )));
        }
        Ok(bytes)
    }
}

/// The names of `rel`, each one plain name, or why it is not such a path.
fn plain_names(rel: &str) -> Result<Vec<&str>, ResourceError> {
    let names: Vec<&str> = rel.split('/').collect();
    // Stored paths (a skill's) come this way too: each must be one plain name.
    if names.iter().any(|n| n.is_empty() || *n == "." || *n == ".." || !platform::is_plain_name(n)) {
        return Err(ResourceError::Invalid(format!("{rel:?} is not a path of plain names inside the workspace")));
    }
    if names.iter().any(|n| is_closed_dir(n)) {
        return Err(ResourceError::NotFound(format!(
            "{rel}: ragbox's data and version-control folders are not resources"
        )));
    }
    Ok(names)
}

/// Whether a folder name is one no resource lies in: a data dir, a version
/// control folder (without regard to case, for case-insensitive filesystems).
fn is_closed_dir(name: &str) -> bool {
    ragbox_protocol::walk::is_skipped(name)
}

/// The user's config dir (its key, the HTTP token) and its identity, never a resource.
fn hidden_dir() -> Option<(PathBuf, platform::FileId)> {
    let path = platform::canonical(&crate::config::user_config_dir()?).ok()?;
    let dir = Dir::open_ambient_dir(&path, cap_std::ambient_authority()).ok()?;
    let id = platform::file_id(&dir.dir_metadata().ok()?);
    Some((path, id))
}

/// An open that failed on the way to `rel`: a link met, or nothing there.
fn not_followed(rel: &str, e: std::io::Error) -> ResourceError {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            ResourceError::NotFound(format!("{rel}: no such file in the workspace (it may have been removed)"))
        }
        _ => ResourceError::NotFound(format!("{rel} cannot be opened without following a link ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of `rel` beneath `ws`, as a read takes them.
    fn read_beneath(ws: &Path, rel: &str) -> Result<Vec<u8>, ResourceError> {
        Beneath::new(ws)?.read(rel)
    }

    #[test]
    fn reads_stay_beneath_the_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = platform::canonical(tmp.path()).unwrap();
        std::fs::create_dir_all(ws.join("notes")).unwrap();
        std::fs::create_dir_all(ws.join(".ragbox")).unwrap();
        std::fs::write(ws.join("notes/a.md"), "# A\n").unwrap();
        std::fs::write(ws.join(".ragbox/key"), "secret").unwrap();
        std::fs::write(ws.join("bin.dat"), [0xff, 0xfe, 0]).unwrap();
        assert_eq!(read_beneath(&ws, "notes/a.md").unwrap(), b"# A\n");
        assert!(matches!(read_beneath(&ws, ".ragbox/key"), Err(ResourceError::NotFound(_))));
        assert!(matches!(read_beneath(&ws, ".RAGBOX/key"), Err(ResourceError::NotFound(_))));
        assert!(matches!(read_beneath(&ws, "notes/missing.md"), Err(ResourceError::NotFound(_))));
        assert!(matches!(read_beneath(&ws, "notes"), Err(ResourceError::NotFound(_))));
        assert_eq!(read_beneath(&ws, "bin.dat").unwrap(), vec![0xff, 0xfe, 0]);
        for odd in ["notes/../notes/a.md", "notes//a.md", "./notes/a.md", ""] {
            assert!(matches!(read_beneath(&ws, odd), Err(ResourceError::Invalid(_))), "{odd:?}");
        }
        let in_proc = |p: &str| platform::in_process_folder(Path::new(p));
        assert!(in_proc("/proc/self/environ") && in_proc("/proc/1/mem"));
        assert!(!in_proc("/proc/cpuinfo") && !in_proc("/work/proc/1"));
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("secret.md"), "outside").unwrap();
            std::os::unix::fs::symlink(outside.path(), ws.join("linked")).unwrap();
            std::os::unix::fs::symlink(outside.path().join("secret.md"), ws.join("file-link.md")).unwrap();
            assert!(read_beneath(&ws, "linked/secret.md").is_err(), "a linked folder is not followed");
            assert!(read_beneath(&ws, "file-link.md").is_err(), "a linked file is not followed");
            // What a clone can ship: a link to a device, a FIFO (whose open
            // would wait for a writer), a data dir that is a link out.
            std::os::unix::fs::symlink("/dev/zero", ws.join("zero.md")).unwrap();
            assert!(read_beneath(&ws, "zero.md").is_err(), "a link to /dev/zero is not followed");
            let fifo = std::ffi::CString::new(ws.join("pipe.md").into_os_string().into_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
            let started = std::time::Instant::now();
            assert!(
                matches!(read_beneath(&ws, "pipe.md"), Err(ResourceError::NotFound(m)) if m.contains("not a regular file"))
            );
            assert!(started.elapsed() < std::time::Duration::from_secs(1), "a FIFO is not waited on");
            let shipped = tempfile::tempdir().unwrap();
            let elsewhere = platform::canonical(shipped.path()).unwrap();
            std::fs::create_dir_all(elsewhere.join("sub/.ragbox")).unwrap();
            std::fs::write(elsewhere.join("sub/.ragbox/owner"), "made elsewhere").unwrap();
            std::os::unix::fs::symlink(elsewhere.join("sub/.ragbox"), ws.join("notes/.ragbox")).unwrap();
            assert!(read_beneath(&ws, "notes/.ragbox/owner").is_err(), "a data dir that links out");
            // A file made elsewhere and hard-linked in is the workspace's file, as it is to tools.
            std::fs::write(elsewhere.join("made.md"), "made elsewhere").unwrap();
            if std::fs::hard_link(elsewhere.join("made.md"), ws.join("notes/made.md")).is_ok() {
                assert_eq!(read_beneath(&ws, "notes/made.md").unwrap(), b"made elsewhere");
            }
        }
    }
}
