//! The data dir, `<workspace>/.ragbox/`: the one module that opens, reads,
//! writes and removes what is in it.
//!
//! A workspace may be a clone of someone else's repository, and its
//! `.ragbox/` then holds whatever that someone put there. So everything here
//! is opened relative to one held handle of the folder, never through a link
//! (a link or a special file where ragbox keeps something is an error that
//! names it and says what to do), every read has a size cap, and nothing
//! outside the folder is ever created, changed or removed.
//!
//! What ragbox keeps here is believed only while the folder carries this
//! user's stamp for its present store file ([`owner`]). Without one, the
//! index in it (store, keyword and vector indexes) came from elsewhere: it is
//! removed and rebuilt from the workspace's files, never read. The folder's
//! `config.toml` and `tools/` are the workspace's own voice and stay: the
//! config may only narrow what the user's config allows, and a component
//! there loads only once the user trusts its bytes.
//!
//! Each file below guards one thing, and uses only this file and those
//! listed before it: `plain.rs` the files in the folder, `remove.rs` taking
//! them away, `stamp.rs` whether the index is this user's, `held.rs` the
//! folder itself (opened, made owner-only, still in place), `store_file.rs`
//! and `indexes.rs` the index, `config.rs` and `tools.rs` the workspace's own
//! voice, `reset.rs` starting over. This file holds what they share (the
//! names, the error, the handle) and uses none of them, only re-exports.

mod config;
mod held;
mod indexes;
pub mod owner;
mod plain;
mod remove;
mod reset;
mod stamp;
mod store_file;
mod tools;

pub use reset::reset;
pub use tools::{MAX_COMPONENT_BYTES, MAX_TOOL_FILES, ToolFile, ToolFiles};

use crate::platform::{self, FileId};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use owner::{Key, KeyError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The data dir's name, in the workspace.
pub const DATA_DIR: &str = ".ragbox";
/// The workspace's config file, in the data dir (the user's has the same name).
pub const CONFIG_FILE: &str = "config.toml";
/// The workspace's own tool components, in the data dir.
pub const TOOLS_DIR: &str = "tools";
/// The store (redb).
pub const STORE_FILE: &str = "store.redb";
/// The keyword index (tantivy).
pub const KEYWORD_DIR: &str = "keyword";
/// The saved vector index.
pub const VECTORS_DIR: &str = "vectors";
/// Local keyword indexes of shared-store collections, one folder each.
pub const SHARED_DIR: &str = "shared";
/// This user's stamp on the folder.
const OWNER_FILE: &str = "owner";
/// Held while deciding whether the folder's index is this user's.
const LOCK_FILE: &str = "lock";
/// Folders on their way out (see [`DataDir::remove_entry`]).
const DISCARD_PREFIX: &str = ".discard-";
/// What earlier ragbox versions kept here: removed with the index.
const OLD_ENTRIES: &[&str] = &["fulltext", "vectors.idx", "http-token"];
/// The index: what a reset, or a folder that came from elsewhere, loses.
const INDEX_ENTRIES: &[&str] = &[STORE_FILE, KEYWORD_DIR, VECTORS_DIR, SHARED_DIR, OWNER_FILE];

/// What goes wrong with the data dir; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// A link or special file where ragbox keeps something.
    #[error(
        "{path} is {kind}: ragbox keeps only plain files and folders in its data dir and never follows a \
         link or opens a special file there. Remove it, or run `ragbox doctor --reset` (which keeps \
         config.toml and tools/), then run again"
    )]
    NotPlain {
        /// The entry.
        path: PathBuf,
        /// What it is, in words.
        kind: &'static str,
    },
    /// A file larger than ragbox reads there.
    #[error("{path} is {size} bytes, more than the {max} bytes ragbox reads there: {fix}")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The cap.
        max: u64,
        /// What to do.
        fix: &'static str,
    },
    /// The operating system refused.
    #[error("{path}: {source}")]
    Io {
        /// What was being opened, read or written.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The user's key cannot be had.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The folder was replaced (by a link, or another folder) since it was opened.
    #[error(
        "{path} was replaced since this ragbox opened it (by a link or another folder): nothing more is \
         read or written there through the folder it opened; the next call opens what is there now (a link \
         is refused)"
    )]
    Replaced {
        /// The data dir.
        path: PathBuf,
    },
}

/// A workspace's data dir, held open.
pub struct DataDir {
    path: PathBuf,
    dir: Dir,
    /// The folder's identity when it was opened (see [`DataDir::in_place`]).
    identity: FileId,
    /// The key stamps are checked with; the user's unless a test gave one.
    key: OnceLock<Arc<Key>>,
    /// The store file's identity (0: no store) this process has found
    /// stamped, once it has looked.
    vouched: Mutex<Option<FileId>>,
}

impl std::fmt::Debug for DataDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataDir").field("path", &self.path).finish()
    }
}

/// What an entry of the data dir is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Missing,
    File,
    Folder,
}

impl DataDir {
    /// Where it is (for messages; nothing is opened by this path).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes an OS error about `name` (from the data dir) one that names it.
    fn io(&self, name: impl AsRef<Path>) -> impl Fn(std::io::Error) -> DataDirError {
        let path = self.path.join(name);
        move |source| DataDirError::Io { path: path.clone(), source }
    }

    /// What `name` is here; an error for a link or special file.
    fn kind(&self, name: &str) -> Result<Kind, DataDirError> {
        kind_of(&self.dir, Path::new(name), &self.path.join(name))
    }
}

/// What is at `name` in `dir` (shown as `path`): missing, a file or a
/// folder; a link or special file is an error.
fn kind_of(dir: &Dir, name: &Path, path: &Path) -> Result<Kind, DataDirError> {
    match dir.symlink_metadata(name) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Kind::Missing),
        Err(source) => Err(DataDirError::Io { path: path.to_path_buf(), source }),
        Ok(meta) => match platform::special_kind(&meta.file_type()) {
            Some(kind) => Err(DataDirError::NotPlain { path: path.to_path_buf(), kind }),
            None if meta.is_dir() => Ok(Kind::Folder),
            None => Ok(Kind::File),
        },
    }
}

/// The folder `workspace` (or a data dir's parent), opened by its path.
fn open_workspace(workspace: &Path) -> Result<Dir, DataDirError> {
    Dir::open_ambient_dir(workspace, ambient_authority())
        .map_err(|source| DataDirError::Io { path: workspace.to_path_buf(), source })
}

/// What the data dir's unit tests share.
#[cfg(test)]
mod testing {
    use super::DataDir;
    use super::owner::Key;
    use std::path::Path;
    use std::sync::Arc;

    /// A key of the tests' own: no test reads or makes the user's.
    pub fn key() -> Arc<Key> {
        Arc::new(Key::from_bytes([7; 32]))
    }

    /// A data dir made (with [`key`]) in a fresh workspace, which goes when dropped.
    pub fn made() -> (tempfile::TempDir, DataDir) {
        let ws = tempfile::tempdir().unwrap();
        let data = DataDir::create_with(ws.path(), Some(key())).unwrap();
        (ws, data)
    }

    /// The names in the folder `dir`, sorted.
    pub fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    /// A FIFO at `path`: a read of it would block for ever.
    #[cfg(unix)]
    pub fn fifo(path: &Path) {
        rustix::fs::mkfifoat(rustix::fs::CWD, path, rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR).unwrap();
    }

    /// A folder `outside` in the workspace `ws`, beside the data dir, for a link there to lead to.
    #[cfg(unix)]
    pub fn outside(ws: &Path) -> std::path::PathBuf {
        let outside = ws.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "mine").unwrap();
        outside
    }

    /// Panics unless the folder [`outside`] made is as it was.
    #[cfg(unix)]
    pub fn untouched(outside: &Path) {
        assert_eq!(names(outside), ["keep"]);
        assert_eq!(std::fs::read_to_string(outside.join("keep")).unwrap(), "mine");
    }

    /// The permission bits of `path` itself (a link is not followed).
    #[cfg(unix)]
    pub fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }
}
