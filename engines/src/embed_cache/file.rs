//! The cache file, opened beneath its folder without following a link or
//! waiting on a FIFO, and used only when it is a regular file of this user's.

use super::{CACHE_FILE, CacheError};
use crate::platform::{self, FileId};
use cap_std::fs::{Dir, OpenOptions};
use std::path::{Path, PathBuf};

/// The cache's folder, held open; made (private to its owner) when missing.
/// The folder's own path is the user's (their cache dir, or the variable
/// they set): a link on it is theirs, and followed.
pub(super) fn folder(dir: &Path) -> Result<Dir, CacheError> {
    let io = |source| CacheError::Io { path: dir.to_path_buf(), source };
    if let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) {
        std::fs::create_dir_all(parent).map_err(io)?;
        let parent = Dir::open_ambient_dir(parent, cap_std::ambient_authority()).map_err(io)?;
        match parent.create_dir_with(name, &platform::private_dir()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
    }
    Dir::open_ambient_dir(dir, cap_std::ambient_authority()).map_err(io)
}

/// How the cache file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// For reading only (`ragbox cache`, `ragbox doctor`): never made nor changed.
    Read,
    /// For reading and writing, when it exists.
    Write,
    /// For reading and writing, made when missing.
    Create,
}

/// The cache file in `dir` (shown as `shown`), opened as `access` says with
/// its identity; `None` when missing and not to be made. A link, a special
/// file or another user's file is refused, never opened through.
pub(super) fn open(dir: &Dir, shown: &Path, access: Access) -> Result<Option<(std::fs::File, FileId)>, CacheError> {
    let io = |source| CacheError::Io { path: shown.to_path_buf(), source };
    let mut options = OpenOptions::new();
    options.read(true).write(access != Access::Read).create(access == Access::Create);
    platform::no_follow_no_block(platform::private_file(&mut options));
    let file = match dir.open_with(CACHE_FILE, &options) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && access != Access::Create => return Ok(None),
        // A link is refused by the open itself: say what is there.
        Err(e) => return Err(refused(dir, shown).unwrap_or_else(|| io(e))),
    };
    let meta = file.metadata().map_err(io)?;
    if let Some(kind) = platform::special_kind(&meta.file_type()) {
        return Err(CacheError::NotPlain { path: shown.to_path_buf(), kind });
    }
    if meta.is_dir() {
        return Err(CacheError::NotPlain { path: shown.to_path_buf(), kind: "a folder" });
    }
    if !platform::owned_by_this_user(&meta) {
        return Err(CacheError::Foreign { path: shown.to_path_buf() });
    }
    if access != Access::Read && platform::open_to_others(&meta) {
        file.set_permissions(platform::private_permissions(&meta, false)).map_err(io)?;
    }
    Ok(Some((file.into_std(), platform::file_id(&meta))))
}

/// What is at the cache file's name when it is not a file to open.
fn refused(dir: &Dir, shown: &Path) -> Option<CacheError> {
    let meta = dir.symlink_metadata(CACHE_FILE).ok()?;
    let kind = platform::special_kind(&meta.file_type()).or_else(|| meta.is_dir().then_some("a folder"))?;
    Some(CacheError::NotPlain { path: shown.to_path_buf(), kind })
}

/// The identity of the file at the cache file's name now (`None`: none, or
/// not one to open), to tell whether it was removed or replaced since it was
/// opened.
pub(super) fn current(dir: &Dir, shown: &Path) -> Option<FileId> {
    open(dir, shown, Access::Read).ok().flatten().map(|(_, id)| id)
}

/// Removes the cache file (a link or special file there too: only the name).
pub(super) fn remove(dir: &Dir, shown: &Path) -> Result<bool, CacheError> {
    match dir.remove_file(CACHE_FILE) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(CacheError::Io { path: shown.to_path_buf(), source: e }),
    }
}

/// The cache file's path in `dir`.
pub(super) fn path_in(dir: &Path) -> PathBuf {
    dir.join(CACHE_FILE)
}
