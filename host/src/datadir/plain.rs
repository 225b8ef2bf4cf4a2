//! The files ragbox reads and writes in the data dir: each opened relative
//! to a held folder, never through a link and never blocking on a special
//! file (what was opened, not what was looked at, decides), read within a
//! cap, and written whole through a temporary file.

use super::{DataDir, DataDirError, Kind, kind_of};
use crate::platform;
use cap_std::fs::{Dir, Metadata, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::Path;

impl DataDir {
    /// The regular file `name` in `dir` (`shown` from the data dir), opened
    /// without following a link or blocking, with its metadata; what was
    /// opened, not what was looked at, decides.
    pub(super) fn open_plain(
        &self,
        dir: &Dir,
        name: &str,
        shown: &Path,
    ) -> Result<(cap_std::fs::File, Metadata), DataDirError> {
        let path = self.path.join(shown);
        let io = |source| DataDirError::Io { path: path.clone(), source };
        if kind_of(dir, Path::new(name), &path)? == Kind::Folder {
            return Err(io(std::io::Error::other("a folder where a file belongs")));
        }
        let file = dir.open_with(name, platform::no_follow_no_block(OpenOptions::new().read(true))).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if let Some(kind) = platform::special_kind(&meta.file_type()) {
            return Err(DataDirError::NotPlain { path, kind });
        }
        if meta.is_dir() {
            return Err(io(std::io::Error::other("a folder where a file belongs")));
        }
        Ok((file, meta))
    }

    /// The regular file `name` in `dir` (`shown` from the data dir), at most
    /// `max` bytes; `None` when absent.
    pub(super) fn read_file(
        &self,
        dir: &Dir,
        name: &str,
        shown: &Path,
        max: u64,
        fix: &'static str,
    ) -> Result<Option<Vec<u8>>, DataDirError> {
        let (file, meta) = match self.open_plain(dir, name, shown) {
            Ok(opened) => opened,
            Err(DataDirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let path = self.path.join(shown);
        let io = |source| DataDirError::Io { path: path.clone(), source };
        if meta.len() > max {
            return Err(DataDirError::TooLarge { path, size: meta.len(), max, fix });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(max + 1).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > max {
            return Err(DataDirError::TooLarge { path, size: bytes.len() as u64, max, fix });
        }
        Ok(Some(bytes))
    }

    /// Writes `name` in `dir` through a temporary file, so a reader sees the
    /// old content or the new.
    pub(super) fn write_atomically(&self, dir: &Dir, name: &str, bytes: &[u8]) -> Result<(), DataDirError> {
        let tmp = format!(".{name}-{:016x}", platform::random_u64());
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        platform::no_follow_no_block(platform::private_file(&mut options));
        let written = dir.open_with(&tmp, &options).and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        });
        let renamed = written.and_then(|()| dir.rename(&tmp, dir, name));
        if renamed.is_err() {
            let _ = dir.remove_file(&tmp);
        }
        renamed.map_err(self.io(name))
    }
}
