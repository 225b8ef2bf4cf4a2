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
