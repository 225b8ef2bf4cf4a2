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

pub mod owner;

use crate::platform::{self, FileId};
use crate::sync::lock;
use cap_fs_ext::DirExt as _;
use cap_std::ambient_authority;
use cap_std::fs::{Dir, Metadata, OpenOptions};
use owner::{Key, KeyError};
use std::io::{Read as _, Seek as _, Write as _};
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

/// Largest config file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Largest component file read.
pub const MAX_COMPONENT_BYTES: u64 = 64 << 20;
/// Largest stamp file read.
const MAX_STAMP_BYTES: u64 = 4096;
/// Largest file of the keyword index that tantivy reads whole (`meta.json`,
/// `.managed.json`); its segment files are mapped, not read.
const MAX_KEYWORD_META_BYTES: u64 = 16 << 20;
/// tantivy's list of the files it manages (and may delete).
const MANAGED_FILE: &str = ".managed.json";
/// Folders deeper than this inside an index folder are not ragbox's.
const MAX_INDEX_DEPTH: usize = 3;

/// Components read from a workspace's `tools/`, at most.
pub const MAX_TOOL_FILES: usize = 64;

/// A component file of a workspace's `tools/`.
pub enum ToolFile {
    /// Its bytes: their sha256 is trusted.
    Trusted(Vec<u8>),
    /// Its sha256 only: nobody trusted these bytes, so they were not kept.
    Untrusted(String),
}

/// The components of a workspace's `tools/`: each file's path, and what was read or why not.
pub type ToolFiles = Vec<(PathBuf, Result<ToolFile, String>)>;

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
    fn held(parent: &Dir, name: &str, path: PathBuf) -> Result<Self, DataDirError> {
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

    /// This data dir, its stamps checked with `key` instead of the user's.
    pub fn with_key(self, key: Arc<Key>) -> Self {
        let _ = self.key.set(key);
        self
    }

    /// Where it is (for messages; nothing is opened by this path).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn key(&self) -> Result<Arc<Key>, DataDirError> {
        if let Some(key) = self.key.get() {
            return Ok(key.clone());
        }
        let key = Key::user()?;
        Ok(self.key.get_or_init(|| key).clone())
    }

    fn io(&self, name: impl AsRef<Path>) -> impl Fn(std::io::Error) -> DataDirError {
        let path = self.path.join(name);
        move |source| DataDirError::Io { path: path.clone(), source }
    }

    /// What `name` is here; an error for a link or special file.
    fn kind(&self, name: &str) -> Result<Kind, DataDirError> {
        kind_of(&self.dir, Path::new(name), &self.path.join(name))
    }

    // ---- the workspace's own voice: config and components ----

    /// The workspace's `config.toml`, when there is one.
    pub fn read_config(&self) -> Result<Option<String>, DataDirError> {
        let fix = "a config holds a few settings; make it smaller";
        let shown = Path::new(CONFIG_FILE);
        let Some(bytes) = self.read_file(&self.dir, CONFIG_FILE, shown, MAX_CONFIG_BYTES, fix)? else {
            return Ok(None);
        };
        String::from_utf8(bytes).map(Some).map_err(|_| DataDirError::Io {
            path: self.path.join(CONFIG_FILE),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
        })
    }

    /// The `*.wasm` files in the workspace's `tools/` (at most
    /// [`MAX_TOOL_FILES`]), in name order, each with its bytes when
    /// `trusted` says yes to their sha256, else only that sha256: bytes
    /// nobody trusted are hashed as they stream past, never held.
    pub fn tool_components(&self, trusted: &dyn Fn(&str) -> bool) -> Result<ToolFiles, DataDirError> {
        if self.kind(TOOLS_DIR)? != Kind::Folder {
            return Ok(Vec::new());
        }
        let tools = self.dir.open_dir_nofollow(TOOLS_DIR).map_err(self.io(TOOLS_DIR))?;
        let mut names = Vec::new();
        for entry in tools.entries().map_err(self.io(TOOLS_DIR))? {
            let name = entry.map_err(self.io(TOOLS_DIR))?.file_name();
            if let Some(name) = name.to_str().filter(|n| n.ends_with(".wasm")) {
                names.push(name.to_string());
            }
        }
        names.sort();
        let mut out = Vec::new();
        for (i, name) in names.into_iter().enumerate() {
            let shown = Path::new(TOOLS_DIR).join(&name);
            let read = if i < MAX_TOOL_FILES {
                self.tool_file(&tools, &name, &shown, trusted)
            } else {
                Err(format!(
                    "a workspace's tools folder is read up to {MAX_TOOL_FILES} components; this one is past them"
                ))
            };
            out.push((self.path.join(shown), read));
        }
        Ok(out)
    }

    /// One component of `tools/` (see [`Self::tool_components`]).
    fn tool_file(
        &self,
        dir: &Dir,
        name: &str,
        shown: &Path,
        trusted: &dyn Fn(&str) -> bool,
    ) -> Result<ToolFile, String> {
        use sha2::Digest as _;
        let (mut file, _) = self.open_plain(dir, name, shown).map_err(|e| match e {
            DataDirError::NotPlain { kind, .. } => {
                format!("it is {kind}; a workspace's components are plain files, never followed links")
            }
            other => other.to_string(),
        })?;
        let too_large = || format!("over the {} MiB a component may have", MAX_COMPONENT_BYTES >> 20);
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if total > MAX_COMPONENT_BYTES {
                return Err(too_large());
            }
            hasher.update(&buf[..n]);
        }
        let sha256 = hex::encode(hasher.finalize());
        if !trusted(&sha256) {
            return Ok(ToolFile::Untrusted(sha256));
        }
        // Trusted bytes: read them again, and make sure they are still those.
        file.seek(std::io::SeekFrom::Start(0)).map_err(|e| e.to_string())?;
        let mut bytes = Vec::with_capacity(total as usize);
        file.take(MAX_COMPONENT_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        if hex::encode(sha2::Sha256::digest(&bytes)) != sha256 {
            return Err("it changed while being read; try again".into());
        }
        Ok(ToolFile::Trusted(bytes))
    }

    /// The regular file `name` in `dir` (`shown` from the data dir), opened
    /// without following a link or blocking, with its metadata; what was
    /// opened, not what was looked at, decides.
    fn open_plain(&self, dir: &Dir, name: &str, shown: &Path) -> Result<(cap_std::fs::File, Metadata), DataDirError> {
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
    fn read_file(
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

    // ---- the index: believed only under this user's stamp ----

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

    /// Whether the index here is this user's with the store file `store_id`
    /// (0: none): true when stamped so; else the index came from elsewhere,
    /// is removed (under the lock, after looking again), and false.
    fn ours(&self, store_id: FileId) -> Result<bool, DataDirError> {
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
    fn vouch(&self) -> Result<(), DataDirError> {
        for _ in 0..4 {
            if self.ours(self.store_id()?)? {
                return Ok(());
            }
        }
        Err(self.io(STORE_FILE)(std::io::Error::other("it keeps being replaced by another process")))
    }

    /// The store file's identity, 0 when there is none.
    fn store_id(&self) -> Result<FileId, DataDirError> {
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
    fn write_stamp(&self, store_id: FileId) -> Result<(), DataDirError> {
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

    /// The folder `rel` (`keyword`, `shared/<name>`) checked and made, for a
    /// tantivy index: every entry in it a plain file or folder, the files
    /// tantivy reads whole within their cap. Returns it held open, and its path
    /// (for messages: the index is reached through the handle alone).
    pub fn index_dir(&self, rel: &str) -> Result<(Dir, PathBuf), DataDirError> {
        self.vouch()?;
        let mut dir = self.dir.try_clone().map_err(self.io(""))?;
        let mut shown = PathBuf::new();
        for part in rel.split('/') {
            shown.push(part);
            let path = self.path.join(&shown);
            if kind_of(&dir, Path::new(part), &path)? == Kind::Missing {
                match dir.create_dir_with(part, &platform::private_dir()) {
                    Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                        return Err(DataDirError::Io { path, source: e });
                    }
                    _ => {}
                }
            }
            dir = dir.open_dir_nofollow(part).map_err(|source| DataDirError::Io { path, source })?;
        }
        self.check_tree(&dir, &shown, 0)?;
        Ok((dir, self.path.join(shown)))
    }

    /// Refuses a link or special file anywhere in `dir` (`shown` from the
    /// data dir), a folder nested deeper than ragbox makes them, and a
    /// tantivy metadata file over its cap.
    fn check_tree(&self, dir: &Dir, shown: &Path, depth: usize) -> Result<(), DataDirError> {
        for entry in dir.entries().map_err(self.io(shown))? {
            let entry = entry.map_err(self.io(shown))?;
            let name = entry.file_name();
            let path = self.path.join(shown).join(&name);
            let kind = entry.file_type().map_err(|source| DataDirError::Io { path: path.clone(), source })?;
            if let Some(kind) = platform::special_kind(&kind) {
                return Err(DataDirError::NotPlain { path, kind });
            }
            if kind.is_dir() {
                if depth + 1 >= MAX_INDEX_DEPTH {
                    let deep = std::io::Error::other("folders nested deeper than ragbox makes them");
                    return Err(DataDirError::Io { path, source: deep });
                }
                let sub = dir.open_dir_nofollow(&name).map_err(|source| DataDirError::Io { path, source })?;
                self.check_tree(&sub, &shown.join(&name), depth + 1)?;
            } else if name.to_str().is_some_and(|n| n.ends_with(".json")) {
                let len = entry.metadata().map_err(|source| DataDirError::Io { path: path.clone(), source })?.len();
                let fix = "the keyword index is damaged; run `ragbox doctor --reset`";
                if len > MAX_KEYWORD_META_BYTES {
                    return Err(DataDirError::TooLarge { path, size: len, max: MAX_KEYWORD_META_BYTES, fix });
                }
                if name == MANAGED_FILE {
                    self.check_managed(dir, &shown.join(&name))?;
                }
            }
        }
        Ok(())
    }

    /// Refuses a tantivy `.managed.json` (the files tantivy may delete) that
    /// names anything but plain files in its own folder: tantivy joins each
    /// name to the folder, so `/home/you/x` or `../x` would be deleted.
    fn check_managed(&self, dir: &Dir, shown: &Path) -> Result<(), DataDirError> {
        let path = self.path.join(shown);
        let bytes = self
            .read_file(dir, MANAGED_FILE, shown, MAX_KEYWORD_META_BYTES, "the keyword index is damaged")?
            .unwrap_or_default();
        let names: Vec<String> = match serde_json::from_slice(&bytes) {
            Ok(names) => names,
            Err(_) if bytes.is_empty() => Vec::new(),
            Err(_) => {
                let why = std::io::Error::other("not a list of file names; run `ragbox doctor --reset`");
                return Err(DataDirError::Io { path, source: why });
            }
        };
        let plain = |n: &str| {
            let mut parts = Path::new(n).components();
            matches!((parts.next(), parts.next()), (Some(std::path::Component::Normal(_)), None))
                && !n.contains(['/', '\\'])
        };
        if let Some(bad) = names.iter().find(|n| !plain(n)) {
            let why = format!(
                "names {:?}, which is not a file in its folder: it was not written by ragbox; run `ragbox doctor --reset`",
                crate::text::for_terminal(bad)
            );
            return Err(DataDirError::Io { path, source: std::io::Error::other(why) });
        }
        Ok(())
    }

    /// Removes `rel` (a derived index that is rebuilt, e.g. `shared` or
    /// `shared/<name>`) and what is in it, when it is there; a link there goes
    /// itself, never its target.
    pub fn remove_index_dir(&self, rel: &str) -> Result<(), DataDirError> {
        match rel.rsplit_once('/') {
            None => self.unlink_anything(rel),
            Some((parent, name)) => {
                if self.kind(parent.split('/').next().unwrap_or(parent))? != Kind::Folder {
                    return Ok(());
                }
                let dir = self.dir.open_dir_nofollow(parent).map_err(self.io(parent))?;
                self.remove_in(&dir, parent, name)
            }
        }
    }

    /// The entries of the folder `rel` (e.g. `shared`), when it is there.
    pub fn index_entries(&self, rel: &str) -> Result<Vec<String>, DataDirError> {
        self.vouch()?;
        if self.kind(rel)? != Kind::Folder {
            return Ok(Vec::new());
        }
        let dir = self.dir.open_dir_nofollow(rel).map_err(self.io(rel))?;
        let mut names = Vec::new();
        for entry in dir.entries().map_err(self.io(rel))? {
            if let Some(name) = entry.map_err(self.io(rel))?.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    /// The plain files in the folder `rel` with their sizes (for `doctor`);
    /// nothing is opened but the folder.
    pub fn file_sizes(&self, rel: &str) -> Result<Vec<(String, u64)>, DataDirError> {
        if self.kind(rel)? != Kind::Folder {
            return Ok(Vec::new());
        }
        let dir = self.dir.open_dir_nofollow(rel).map_err(self.io(rel))?;
        let mut files = Vec::new();
        for entry in dir.entries().map_err(self.io(rel))? {
            let entry = entry.map_err(self.io(rel))?;
            let meta = entry.metadata().map_err(self.io(rel))?;
            if let (true, Some(name)) = (meta.is_file(), entry.file_name().to_str()) {
                files.push((name.to_string(), meta.len()));
            }
        }
        Ok(files)
    }

    /// The folder of the saved vector index, made when missing.
    pub fn vectors_dir(&self) -> Result<Dir, DataDirError> {
        self.vouch()?;
        match self.kind(VECTORS_DIR)? {
            Kind::Folder => {}
            Kind::File => return Err(self.io(VECTORS_DIR)(std::io::Error::other("a file where a folder belongs"))),
            Kind::Missing => match self.dir.create_dir_with(VECTORS_DIR, &platform::private_dir()) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(self.io(VECTORS_DIR)(e)),
                _ => {}
            },
        }
        self.dir.open_dir_nofollow(VECTORS_DIR).map_err(self.io(VECTORS_DIR))
    }

    // ---- starting over ----

    /// What [`reset`] would remove here, by name.
    pub fn index_names(&self) -> Vec<String> {
        let mut names: Vec<String> = INDEX_ENTRIES
            .iter()
            .chain(OLD_ENTRIES)
            .filter(|name| **name != OWNER_FILE && self.dir.symlink_metadata(name).is_ok())
            .map(|n| n.to_string())
            .collect();
        // Kept when plain; a link or special file goes.
        for name in [OWNER_FILE, LOCK_FILE, CONFIG_FILE, TOOLS_DIR] {
            if self.kind(name).is_err() {
                names.push(name.to_string());
            }
        }
        names
    }

    /// Removes the index, links and special files where ragbox keeps
    /// something, and anything half-removed before; keeps a plain
    /// `config.toml` and `tools/`.
    fn clear(&self) -> Result<(), DataDirError> {
        for name in INDEX_ENTRIES.iter().chain(OLD_ENTRIES).chain(&[LOCK_FILE]) {
            self.unlink_anything(name)?;
        }
        for name in [CONFIG_FILE, TOOLS_DIR] {
            if self.kind(name).is_err() {
                self.unlink_anything(name)?;
            }
        }
        Ok(())
    }

    /// Removes `name` whatever it is (a link itself, never its target).
    fn unlink_anything(&self, name: &str) -> Result<(), DataDirError> {
        match self.dir.symlink_metadata(name) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io(name)(e)),
            Ok(meta) if meta.is_dir() => self.remove_in(&self.dir, "", name),
            Ok(_) => self.dir.remove_file_or_symlink(name).map_err(self.io(name)),
        }
    }

    /// Removes the index entry `name` when present: a file or a folder
    /// and all in it; a link or special file is an error (it is for the
    /// user to look at, or for `doctor --reset`).
    fn remove_entry(&self, name: &str) -> Result<(), DataDirError> {
        match self.kind(name)? {
            Kind::Missing => Ok(()),
            Kind::File => self.dir.remove_file(name).map_err(self.io(name)),
            Kind::Folder => self.remove_in(&self.dir, "", name),
        }
    }

    /// Removes `name` in `parent` (`shown` from the data dir), a folder with
    /// everything in it, never following a link (a link goes itself). Each
    /// sub-folder is first moved up next to the data dir's own entries, so
    /// however deep a tree a clone ships, no more than two folders are open
    /// at a time and nothing recurses.
    fn remove_in(&self, parent: &Dir, shown: &str, name: &str) -> Result<(), DataDirError> {
        let path = self.path.join(shown).join(name);
        let io = |source| DataDirError::Io { path: path.clone(), source };
        let first = format!("{DISCARD_PREFIX}{:016x}", platform::random_u64());
        match parent.rename(name, &self.dir, &first) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(e)),
        }
        let mut queue = vec![first];
        while let Some(doomed) = queue.pop() {
            if !self.dir.symlink_metadata(&doomed).map_err(io)?.is_dir() {
                self.dir.remove_file_or_symlink(&doomed).map_err(io)?;
                continue;
            }
            let dir = self.dir.open_dir_nofollow(&doomed).map_err(io)?;
            for entry in dir.entries().map_err(io)? {
                let entry = entry.map_err(io)?;
                if entry.file_type().map_err(io)?.is_dir() {
                    let moved = format!("{DISCARD_PREFIX}{:016x}", platform::random_u64());
                    dir.rename(entry.file_name(), &self.dir, &moved).map_err(io)?;
                    queue.push(moved);
                } else {
                    dir.remove_file_or_symlink(entry.file_name()).map_err(io)?;
                }
            }
            drop(dir);
            self.dir.remove_dir(&doomed).map_err(io)?;
        }
        Ok(())
    }

    /// Removes what an interrupted removal left behind.
    fn sweep_discards(&self) -> Result<(), DataDirError> {
        let mut leftovers = Vec::new();
        for entry in self.dir.entries().map_err(self.io(""))? {
            let name = entry.map_err(self.io(""))?.file_name();
            if let Some(name) = name.to_str().filter(|n| n.starts_with(DISCARD_PREFIX)) {
                leftovers.push(name.to_string());
            }
        }
        for name in leftovers {
            self.unlink_anything(&name)?;
        }
        Ok(())
    }

    // ---- plumbing ----

    /// Runs `f` holding the data dir's lock (against other ragbox processes).
    fn locked<T>(&self, f: impl FnOnce() -> Result<T, DataDirError>) -> Result<T, DataDirError> {
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

    /// Writes `name` in `dir` through a temporary file, so a reader sees the
    /// old content or the new.
    fn write_atomically(&self, dir: &Dir, name: &str, bytes: &[u8]) -> Result<(), DataDirError> {
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

/// Removes the index of `workspace` (store, keyword and vector indexes,
/// caches of shared collections), and every link or special file where
/// ragbox keeps something, the data dir itself when it is one; keeps a
/// plain `config.toml` and `tools/`. Returns what it removed, for the user.
pub fn reset(workspace: &Path) -> Result<Vec<PathBuf>, DataDirError> {
    let ws = open_workspace(workspace)?;
    let path = workspace.join(DATA_DIR);
    match ws.symlink_metadata(DATA_DIR) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(DataDirError::Io { path, source }),
        Ok(meta) if !meta.is_dir() => {
            ws.remove_file_or_symlink(DATA_DIR).map_err(|source| DataDirError::Io { path: path.clone(), source })?;
            return Ok(vec![path]);
        }
        Ok(_) => {}
    }
    let data = DataDir::held(&ws, DATA_DIR, path)?;
    let removed = data.index_names().iter().map(|n| data.path.join(n)).collect();
    data.sweep_discards()?;
    data.clear()?;
    Ok(removed)
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

fn open_workspace(workspace: &Path) -> Result<Dir, DataDirError> {
    Dir::open_ambient_dir(workspace, ambient_authority())
        .map_err(|source| DataDirError::Io { path: workspace.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Arc<Key> {
        Arc::new(Key::from_bytes([7; 32]))
    }

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
    fn the_workspaces_config_is_read_within_its_cap_and_as_text() {
        let ws = tempfile::tempdir().unwrap();
        let data = DataDir::create_with(ws.path(), Some(key())).unwrap();
        assert_eq!(data.read_config().unwrap(), None);
        std::fs::write(data.path().join(CONFIG_FILE), "[limits]\ntimeout_secs = 5\n").unwrap();
        assert_eq!(data.read_config().unwrap().as_deref(), Some("[limits]\ntimeout_secs = 5\n"));
        std::fs::write(data.path().join(CONFIG_FILE), vec![b'#'; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        assert!(matches!(data.read_config(), Err(DataDirError::TooLarge { .. })));
        std::fs::write(data.path().join(CONFIG_FILE), b"\xff\xfe").unwrap();
        assert!(data.read_config().unwrap_err().to_string().contains("not UTF-8"));
    }

    #[test]
    #[cfg(unix)]
    fn a_fifo_or_link_for_the_config_is_never_opened() {
        let ws = tempfile::tempdir().unwrap();
        let data = DataDir::create_with(ws.path(), Some(key())).unwrap();
        let config = data.path().join(CONFIG_FILE);
        let c = std::ffi::CString::new(config.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // A FIFO would block the read for ever: refused without opening it.
        assert!(matches!(data.read_config(), Err(DataDirError::NotPlain { .. })));
        std::fs::remove_file(&config).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &config).unwrap();
        assert!(matches!(data.read_config(), Err(DataDirError::NotPlain { .. })));
    }
}
