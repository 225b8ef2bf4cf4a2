//! Finding, making and holding the data dir itself.
//!
//! The folder is opened once, relative to its parent, never through a link,
//! and made owner-only through the handle held (the store holds the text of
//! files that may be private). Every later open, read, write and removal
//! goes through that handle; [`DataDir::in_place`] tells when the name now
//! leads elsewhere. A folder ragbox makes is stamped at once, as holding
//! nothing from elsewhere.

use super::owner::Key;
use super::{DATA_DIR, DataDir, DataDirError, Kind, kind_of, open_workspace};
use crate::platform::{self, FileId};
use cap_fs_ext::DirExt as _;
use cap_std::fs::Dir;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

impl DataDir {
    /// The data dir of `workspace` when there is one; nothing is created.
    pub fn open(workspace: &Path) -> Result<Option<Self>, DataDirError> {
        let ws = open_workspace(workspace)?;
        Self::open_in(&ws, DATA_DIR, workspace.join(DATA_DIR))
    }

    /// The data dir of `workspace`, made (owner-only, stamped) when missing.
    pub fn create(workspace: &Path) -> Result<Self, DataDirError> {
        Self::create_with(workspace, None)
    }

    /// [`Self::create`], its stamps made and checked with `key` (else the user's).
    pub fn create_with(workspace: &Path, key: Option<Arc<Key>>) -> Result<Self, DataDirError> {
        let ws = open_workspace(workspace)?;
        Self::create_in(&ws, DATA_DIR, workspace.join(DATA_DIR), key)
    }

    /// The folder `dir` itself as a data dir, made when missing, its stamps
    /// made and checked with `key`: for tools and tests that keep an index
    /// outside any workspace.
    pub fn at(dir: &Path, key: Arc<Key>) -> Result<Self, DataDirError> {
        let io = |source| DataDirError::Io { path: dir.to_path_buf(), source };
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name().and_then(|n| n.to_str())) else {
            return Err(io(std::io::Error::other("not a folder's path")));
        };
        let parent = open_workspace(if parent.as_os_str().is_empty() { Path::new(".") } else { parent })?;
        Self::create_in(&parent, name, dir.to_path_buf(), Some(key))
    }

    /// The folder `name` in `parent` (shown as `path`), when it exists.
    fn open_in(parent: &Dir, name: &str, path: PathBuf) -> Result<Option<Self>, DataDirError> {
        match kind_of(parent, Path::new(name), &path)? {
            Kind::Missing => Ok(None),
            Kind::File => Err(DataDirError::Io { path, source: std::io::Error::other("not a folder") }),
            Kind::Folder => Self::held(parent, name, path).map(Some),
        }
    }

    /// The folder `name` in `parent` (shown as `path`), made (owner-only,
    /// stamped with `key` or the user's) when missing.
    fn create_in(parent: &Dir, name: &str, path: PathBuf, key: Option<Arc<Key>>) -> Result<Self, DataDirError> {
        let with_key = |data: Self| match &key {
            Some(key) => data.with_key(key.clone()),
            None => data,
        };
        if kind_of(parent, Path::new(name), &path)? == Kind::Missing {
            match parent.create_dir_with(name, &platform::private_dir()) {
                Ok(()) => {
                    let made = with_key(Self::held(parent, name, path)?);
                    // A folder ragbox just made holds nothing from elsewhere.
                    made.locked(|| made.write_stamp(FileId::NONE))?;
                    return Ok(made);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => return Err(DataDirError::Io { path, source }),
            }
        }
        match Self::open_in(parent, name, path.clone())? {
            Some(data) => Ok(with_key(data)),
            None => Err(DataDirError::Io { path, source: std::io::ErrorKind::NotFound.into() }),
        }
    }

    /// The folder `name` in `parent` opened without following a link, made owner-only.
    pub(super) fn held(parent: &Dir, name: &str, path: PathBuf) -> Result<Self, DataDirError> {
        let io = |source| DataDirError::Io { path: path.clone(), source };
        let dir = parent.open_dir_nofollow(name).map_err(io)?;
        let meta = dir.dir_metadata().map_err(io)?;
        if platform::open_to_others(&meta) {
            // The store holds the text of files that may have been private.
            // Through the handle held, never by name: the name may be a link by now.
            platform::make_dir_private(&dir).map_err(io)?;
        }
        Ok(Self { path, dir, identity: platform::file_id(&meta), key: OnceLock::new(), vouched: Mutex::new(None) })
    }

    /// `Err` once the folder at its path is no longer the one held (it was
    /// swapped for a link, or another folder, as a `git pull` that tracks a
    /// link there does): a server then stops using it, so that nothing of its
    /// workspace's goes into another's data dir, and says so. Costs a few
    /// system calls; asked before each write and each call's first read.
    pub fn in_place(&self) -> Result<(), DataDirError> {
        let here = self.path.parent().zip(self.path.file_name().and_then(|n| n.to_str()));
        let now = here.and_then(|(parent, name)| platform::dir_identity(&open_workspace(parent).ok()?, name));
        match now {
            Some(now) if now == self.identity => Ok(()),
            _ => Err(DataDirError::Replaced { path: self.path.clone() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use crate::datadir::testing::{fifo, mode};
    use crate::datadir::testing::{key, made, names};
    use crate::datadir::{LOCK_FILE, OWNER_FILE};

    #[test]
    fn a_data_dir_is_made_private_found_again_and_never_made_by_open() {
        let ws = tempfile::tempdir().unwrap();
        assert!(DataDir::open(ws.path()).unwrap().is_none(), "open makes nothing");
        assert!(!ws.path().join(DATA_DIR).exists());
        let made = DataDir::create_with(ws.path(), Some(key())).unwrap();
        assert_eq!(made.path(), ws.path().join(DATA_DIR));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(made.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "it holds the text of files that may be private");
        }
        assert!(DataDir::open(ws.path()).unwrap().is_some());
        made.in_place().unwrap();
    }

    #[test]
    #[cfg(unix)]
    fn a_link_where_the_data_dir_belongs_is_refused_and_a_swap_is_told() {
        let (ws, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::os::unix::fs::symlink(elsewhere.path(), ws.path().join(DATA_DIR)).unwrap();
        let Err(refused) = DataDir::open(ws.path()) else { panic!("a link is refused") };
        assert!(matches!(refused, DataDirError::NotPlain { .. }), "{refused}");
        std::fs::remove_file(ws.path().join(DATA_DIR)).unwrap();

        let held = DataDir::create_with(ws.path(), Some(key())).unwrap();
        // What a `git pull` that tracks a link there does: the folder goes, another comes.
        std::fs::rename(ws.path().join(DATA_DIR), ws.path().join("moved")).unwrap();
        std::fs::create_dir(ws.path().join(DATA_DIR)).unwrap();
        let swapped = held.in_place().unwrap_err();
        assert!(matches!(swapped, DataDirError::Replaced { .. }), "{swapped}");
        assert!(swapped.to_string().contains(&ws.path().join(DATA_DIR).display().to_string()));
    }

    #[test]
    fn a_fresh_data_dir_holds_only_its_stamp_and_lock_owner_only_and_vouched_for() {
        let (_ws, data) = made();
        assert_eq!(names(data.path()), [LOCK_FILE, OWNER_FILE], "nothing else is made until it is needed");
        #[cfg(unix)]
        for name in [LOCK_FILE, OWNER_FILE] {
            assert_eq!(mode(&data.path().join(name)), 0o600, "{name}");
        }
        assert!(data.is_vouched().unwrap(), "a folder ragbox made holds nothing from elsewhere");

        // The same, for a folder outside any workspace; found again, not remade.
        let elsewhere = tempfile::tempdir().unwrap();
        let dir = elsewhere.path().join("index");
        let at = DataDir::at(&dir, key()).unwrap();
        assert_eq!(at.path(), dir);
        assert_eq!(names(&dir), [LOCK_FILE, OWNER_FILE]);
        let stamp = std::fs::read(dir.join(OWNER_FILE)).unwrap();
        DataDir::at(&dir, key()).unwrap();
        assert_eq!(std::fs::read(dir.join(OWNER_FILE)).unwrap(), stamp, "an existing folder is not stamped anew");
    }

    #[test]
    fn a_file_where_the_data_dir_belongs_is_refused_by_open_and_create() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join(DATA_DIR), "a file").unwrap();
        for refused in
            [DataDir::open(ws.path()).unwrap_err(), DataDir::create_with(ws.path(), Some(key())).unwrap_err()]
        {
            assert!(refused.to_string().contains("not a folder"), "{refused}");
        }
        assert_eq!(std::fs::read(ws.path().join(DATA_DIR)).unwrap(), b"a file", "left as it was");
    }

    #[test]
    #[cfg(unix)]
    fn a_data_dir_open_to_others_is_made_owner_only_and_a_fifo_there_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let ws = tempfile::tempdir().unwrap();
        let path = ws.path().join(DATA_DIR);
        std::fs::create_dir(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        DataDir::open(ws.path()).unwrap().unwrap();
        assert_eq!(mode(&path), 0o700, "a clone's data dir is made owner-only on open");

        std::fs::remove_dir(&path).unwrap();
        fifo(&path);
        let refused = DataDir::create_with(ws.path(), Some(key())).unwrap_err();
        assert!(matches!(refused, DataDirError::NotPlain { .. }), "{refused}");
    }
}
