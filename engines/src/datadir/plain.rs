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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datadir::testing::{made, names};

    #[test]
    fn a_file_is_read_within_its_cap_and_a_folder_where_it_belongs_refused() {
        let (_ws, data) = made();
        let read = |name: &str, max| data.read_file(&data.dir, name, Path::new(name), max, "fix it");
        assert!(read("absent", 8).unwrap().is_none());
        std::fs::write(data.path().join("file"), b"12345678").unwrap();
        assert_eq!(read("file", 8).unwrap().as_deref(), Some(&b"12345678"[..]));
        // Told by its size, before any of it is read.
        let too_large = read("file", 5).unwrap_err();
        assert!(matches!(too_large, DataDirError::TooLarge { size: 8, max: 5, fix: "fix it", .. }), "{too_large}");
        std::fs::create_dir(data.path().join("folder")).unwrap();
        let folder = read("folder", 8).unwrap_err();
        assert!(folder.to_string().contains("a folder where a file belongs"), "{folder}");
    }

    #[test]
    fn a_write_replaces_the_file_whole_owner_only_and_leaves_no_temporary() {
        let (_ws, data) = made();
        let mut expected = names(data.path());
        expected.push("written".into());
        data.write_atomically(&data.dir, "written", b"first, and longer").unwrap();
        data.write_atomically(&data.dir, "written", b"second").unwrap();
        assert_eq!(std::fs::read(data.path().join("written")).unwrap(), b"second");
        assert_eq!(names(data.path()), expected, "no temporary file left beside it");
        #[cfg(unix)]
        assert_eq!(crate::datadir::testing::mode(&data.path().join("written")), 0o600);
    }

    #[test]
    #[cfg(unix)]
    fn a_write_over_a_link_replaces_the_link_and_leaves_its_target() {
        let (ws, data) = made();
        let outside = ws.path().join("outside");
        std::fs::write(&outside, "theirs").unwrap();
        std::os::unix::fs::symlink(&outside, data.path().join("written")).unwrap();
        data.write_atomically(&data.dir, "written", b"ours").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "theirs");
        assert!(std::fs::symlink_metadata(data.path().join("written")).unwrap().is_file());
    }
}
