//! Whether the index here is this user's: the stamp ([`super::owner`]) on
//! the folder for its present store file, checked and written under the
//! folder's lock. An index without one came from elsewhere (a clone, a copy,
//! a ragbox before stamps): it is removed and rebuilt, never read.

use super::owner::Key;
use super::{DataDir, DataDirError, INDEX_ENTRIES, Kind, LOCK_FILE, OLD_ENTRIES, OWNER_FILE, STORE_FILE};
use crate::platform::{self, FileId};
use crate::sync::lock;
use cap_std::fs::OpenOptions;
use std::path::Path;
use std::sync::Arc;

/// Largest stamp file read.
const MAX_STAMP_BYTES: u64 = 4096;

impl DataDir {
    /// This data dir, its stamps checked with `key` instead of the user's.
    pub fn with_key(self, key: Arc<Key>) -> Self {
        let _ = self.key.set(key);
        self
    }

    pub(super) fn key(&self) -> Result<Arc<Key>, DataDirError> {
        if let Some(key) = self.key.get() {
            return Ok(key.clone());
        }
        let key = Key::user()?;
        Ok(self.key.get_or_init(|| key).clone())
    }

    /// Whether the index here is this user's with the store file `store_id`
    /// (0: none): true when stamped so; else the index came from elsewhere,
    /// is removed (under the lock, after looking again), and false.
    pub(super) fn ours(&self, store_id: FileId) -> Result<bool, DataDirError> {
        if *lock(&self.vouched) == Some(store_id) || self.stamped(store_id)? {
            *lock(&self.vouched) = Some(store_id);
            return Ok(true);
        }
        self.locked(|| {
            // Another process may have made or replaced the store meanwhile.
            let now = self.store_id()?;
            if now == store_id && self.stamped(store_id)? {
                return Ok(());
            }
            if now != store_id {
                return Ok(()); // look again from the top
            }
            tracing::warn!(
                "{} was not made by ragbox for you on this machine (it came with the folder, from a copy, or \
                 from a ragbox before this one): its index is removed and built again from the workspace's files",
                self.path.display()
            );
            for name in INDEX_ENTRIES.iter().chain(OLD_ENTRIES) {
                self.remove_entry(name)?;
            }
            self.write_stamp(FileId::NONE)
        })?;
        Ok(false)
    }

    /// Makes sure the index folders here are this user's (see [`Self::store_file`]).
    pub(super) fn vouch(&self) -> Result<(), DataDirError> {
        for _ in 0..4 {
            if self.ours(self.store_id()?)? {
                return Ok(());
            }
        }
        Err(self.io(STORE_FILE)(std::io::Error::other("it keeps being replaced by another process")))
    }

    /// The store file's identity, 0 when there is none.
    pub(super) fn store_id(&self) -> Result<FileId, DataDirError> {
        match self.kind(STORE_FILE)? {
            Kind::Missing => Ok(FileId::NONE),
            Kind::Folder => Err(self.io(STORE_FILE)(std::io::Error::other("a folder where a file belongs"))),
            Kind::File => {
                // Through a handle: Windows gives a path's metadata without its file index.
                let mut options = OpenOptions::new();
                options.read(true);
                let file = self
                    .dir
                    .open_with(STORE_FILE, platform::no_follow_no_block(&mut options))
                    .map_err(self.io(STORE_FILE))?;
                Ok(platform::file_id(&file.metadata().map_err(self.io(STORE_FILE))?))
            }
        }
    }

    /// Whether the folder carries this user's stamp for the store `store_id`.
    fn stamped(&self, store_id: FileId) -> Result<bool, DataDirError> {
        let fix = "it is not ragbox's";
        let stamp = match self.read_file(&self.dir, OWNER_FILE, Path::new(OWNER_FILE), MAX_STAMP_BYTES, fix) {
            Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(None) | Err(DataDirError::TooLarge { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        let dir_id = platform::file_id(&self.dir.dir_metadata().map_err(self.io(""))?);
        Ok(self.key()?.verifies(&stamp, dir_id, store_id))
    }

    /// Stamps the folder as this user's, with the store file `store_id`.
    pub(super) fn write_stamp(&self, store_id: FileId) -> Result<(), DataDirError> {
        let dir_id = platform::file_id(&self.dir.dir_metadata().map_err(self.io(""))?);
        let stamp = self.key()?.stamp(dir_id, store_id);
        self.write_atomically(&self.dir, OWNER_FILE, stamp.as_bytes())?;
        *lock(&self.vouched) = Some(store_id);
        Ok(())
    }

    /// Whether the index here is this user's as it stands (what `doctor`
    /// reports; nothing is removed).
    pub fn is_vouched(&self) -> Result<bool, DataDirError> {
        self.stamped(self.store_id()?)
    }

    /// Runs `f` holding the data dir's lock (against other ragbox processes).
    pub(super) fn locked<T>(&self, f: impl FnOnce() -> Result<T, DataDirError>) -> Result<T, DataDirError> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true);
        platform::no_follow_no_block(platform::private_file(&mut options));
        let file = match self.dir.open_with(LOCK_FILE, &options) {
            Ok(file) => file.into_std(),
            Err(e) => {
                self.kind(LOCK_FILE)?;
                return Err(self.io(LOCK_FILE)(e));
            }
        };
        let meta = file.metadata().map_err(self.io(LOCK_FILE))?;
        if !meta.is_file() {
            let kind = if meta.is_dir() { "a folder" } else { "a special file" };
            return Err(DataDirError::NotPlain { path: self.path.join(LOCK_FILE), kind });
        }
        file.lock().map_err(self.io(LOCK_FILE))?;
        let out = f();
        let _ = file.unlock();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datadir::testing::{made, names};
    use crate::datadir::{CONFIG_FILE, KEYWORD_DIR, TOOLS_DIR};

    #[test]
    fn an_index_stamped_by_another_key_is_removed_and_the_workspaces_own_files_kept() {
        let (ws, data) = made();
        data.store_file(true).unwrap().unwrap();
        for dir in [KEYWORD_DIR, TOOLS_DIR] {
            std::fs::create_dir(data.path().join(dir)).unwrap();
        }
        for file in ["keyword/meta.json", "tools/a.wasm", CONFIG_FILE, "fulltext"] {
            std::fs::write(data.path().join(file), "x").unwrap();
        }
        let all = names(data.path());
        let other = DataDir::open(ws.path()).unwrap().unwrap().with_key(Arc::new(Key::from_bytes([9; 32])));
        assert!(!other.is_vouched().unwrap());
        assert_eq!(names(data.path()), all, "asking removes nothing");
        assert!(other.store_file(false).unwrap().is_none(), "a store stamped by another key is never opened");
        assert_eq!(names(data.path()), [CONFIG_FILE, LOCK_FILE, OWNER_FILE, TOOLS_DIR]);
        assert_eq!(names(&data.path().join(TOOLS_DIR)), ["a.wasm"]);
        assert!(other.is_vouched().unwrap(), "stamped anew, for no store");
    }

    #[test]
    fn a_stamp_holds_only_for_the_store_file_it_was_made_for() {
        let (ws, data) = made();
        data.store_file(true).unwrap().unwrap();
        assert!(data.is_vouched().unwrap());
        // What a copy or a `git pull` puts there is another file, whatever its bytes.
        let store = data.path().join(STORE_FILE);
        std::fs::copy(&store, ws.path().join("copy")).unwrap();
        std::fs::rename(ws.path().join("copy"), &store).unwrap();
        assert!(!data.is_vouched().unwrap());
        assert!(data.store_file_id().unwrap().is_none(), "removed, never read");
        assert!(!store.exists());
    }

    #[test]
    #[cfg(unix)]
    fn a_fifo_or_link_for_the_lock_is_refused_and_nothing_runs_under_it() {
        let (ws, data) = made();
        let lock = data.path().join(LOCK_FILE);
        let ran = std::cell::Cell::new(false);
        let run = || {
            ran.set(true);
            Ok(())
        };
        std::fs::remove_file(&lock).unwrap();
        crate::datadir::testing::fifo(&lock);
        let refused = data.locked(run).unwrap_err();
        assert!(matches!(refused, DataDirError::NotPlain { kind: "a special file", .. }), "{refused}");
        std::fs::remove_file(&lock).unwrap();
        let target = ws.path().join("made-through-the-link");
        std::os::unix::fs::symlink(&target, &lock).unwrap();
        let refused = data.locked(run).unwrap_err();
        assert!(matches!(refused, DataDirError::NotPlain { .. }), "{refused}");
        assert!(!ran.get());
        assert!(!target.exists(), "a dangling link is not followed to make what it names");
    }
}
