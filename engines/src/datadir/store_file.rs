//! The store file (redb): opened never through a link, owner-only, and only
//! when the folder's stamp vouches for it; made, and the folder stamped for
//! it, under the lock.

use super::{DataDir, DataDirError, INDEX_ENTRIES, Kind, OLD_ENTRIES, STORE_FILE};
use crate::platform::{self, FileId};
use cap_std::fs::OpenOptions;

impl DataDir {
    /// The store file, opened for reading and writing, with its identity;
    /// made (and the folder stamped for it) when missing and `create`. A store the stamp does not
    /// vouch for is removed with the rest of the index first.
    pub fn store_file(&self, create: bool) -> Result<Option<(std::fs::File, FileId)>, DataDirError> {
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        platform::no_follow_no_block(&mut options);
        // A second round at most follows a discard or another process's create.
        for _ in 0..4 {
            let opened = match self.dir.open_with(STORE_FILE, &options) {
                Ok(file) => Some(file),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    self.kind(STORE_FILE)?;
                    return Err(self.io(STORE_FILE)(e));
                }
            };
            match opened {
                Some(file) => {
                    let meta = file.metadata().map_err(self.io(STORE_FILE))?;
                    if let Some(kind) = platform::special_kind(&meta.file_type()) {
                        return Err(DataDirError::NotPlain { path: self.path.join(STORE_FILE), kind });
                    }
                    if meta.is_dir() {
                        return Err(self.io(STORE_FILE)(std::io::Error::other("a folder where a file belongs")));
                    }
                    let id = platform::file_id(&meta);
                    if self.ours(id)? {
                        if platform::open_to_others(&meta) {
                            let private = platform::private_permissions(&meta, false);
                            file.set_permissions(private).map_err(self.io(STORE_FILE))?;
                        }
                        return Ok(Some((file.into_std(), id)));
                    }
                }
                None if !create => return Ok(None),
                None => {
                    if let Some(file) = self.locked(|| self.create_store())? {
                        return Ok(Some(file));
                    }
                }
            }
        }
        Err(self.io(STORE_FILE)(std::io::Error::other("it keeps being replaced by another process")))
    }

    /// The identity of the store file there, when there is one and it is
    /// this user's (as [`Self::store_file`] checks, creating nothing).
    pub fn store_file_id(&self) -> Result<Option<FileId>, DataDirError> {
        Ok(self.store_file(false)?.map(|(_, id)| id))
    }

    /// Makes the store file and stamps the folder for it, unless another
    /// process made one meanwhile (`None`: open that). Under the lock.
    fn create_store(&self) -> Result<Option<(std::fs::File, FileId)>, DataDirError> {
        if self.kind(STORE_FILE)? != Kind::Missing {
            return Ok(None);
        }
        // Indexes derived from an earlier store could claim the new store's
        // generation by coincidence; and whatever a clone put there goes too
        // (a link among them is refused, not followed).
        for name in INDEX_ENTRIES.iter().filter(|n| **n != STORE_FILE).chain(OLD_ENTRIES) {
            self.remove_entry(name)?;
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        platform::no_follow_no_block(platform::private_file(&mut options));
        let file = self.dir.open_with(STORE_FILE, &options).map_err(self.io(STORE_FILE))?;
        let id = platform::file_id(&file.metadata().map_err(self.io(STORE_FILE))?);
        self.write_stamp(id)?;
        Ok(Some((file.into_std(), id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datadir::DataDir;
    use crate::datadir::testing::{key, made, names};
    use crate::datadir::{KEYWORD_DIR, LOCK_FILE, OWNER_FILE};

    #[test]
    fn the_store_is_made_only_when_asked_owner_only_and_found_again_as_the_same_file() {
        let (ws, data) = made();
        assert!(data.store_file(false).unwrap().is_none(), "not made unless asked");
        assert!(data.store_file_id().unwrap().is_none());
        let (_, id) = data.store_file(true).unwrap().unwrap();
        #[cfg(unix)]
        assert_eq!(crate::datadir::testing::mode(&data.path().join(STORE_FILE)), 0o600);
        assert_eq!(data.store_file_id().unwrap(), Some(id));
        let again = DataDir::open(ws.path()).unwrap().unwrap().with_key(key());
        assert!(again.is_vouched().unwrap(), "the stamp is on disk, not only in the handle that made it");
        assert_eq!(again.store_file(true).unwrap().map(|(_, id)| id), Some(id), "opened, not made anew");
    }

    #[test]
    fn a_new_store_starts_with_no_index_an_earlier_one_left() {
        let (_ws, data) = made();
        std::fs::create_dir(data.path().join(KEYWORD_DIR)).unwrap();
        std::fs::write(data.path().join("keyword/meta.json"), "{}").unwrap();
        std::fs::write(data.path().join("vectors.idx"), "x").unwrap();
        data.store_file(true).unwrap().unwrap();
        assert_eq!(names(data.path()), [LOCK_FILE, OWNER_FILE, STORE_FILE]);
    }

    #[test]
    #[cfg(unix)]
    fn a_store_open_to_others_is_made_owner_only_and_a_link_or_fifo_there_refused() {
        use crate::datadir::testing::{fifo, mode};
        use std::os::unix::fs::PermissionsExt as _;
        let (ws, data) = made();
        data.store_file(true).unwrap().unwrap();
        let store = data.path().join(STORE_FILE);
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
        data.store_file(false).unwrap().unwrap();
        assert_eq!(mode(&store), 0o600);

        std::fs::remove_file(&store).unwrap();
        let outside = ws.path().join("outside");
        std::fs::write(&outside, "theirs").unwrap();
        std::os::unix::fs::symlink(&outside, &store).unwrap();
        for create in [false, true] {
            let refused = data.store_file(create).unwrap_err();
            assert!(matches!(refused, DataDirError::NotPlain { .. }), "{refused}");
        }
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "theirs");
        std::fs::remove_file(&store).unwrap();
        fifo(&store);
        let refused = data.store_file(true).unwrap_err();
        assert!(matches!(refused, DataDirError::NotPlain { .. }), "{refused}");
    }
}
