//! The embedding cache: passage vectors this user's ragbox computed, kept
//! once per user (`~/.cache/ragbox/embeddings/embeddings.redb`, or the
//! folder `RAGBOX_EMBEDDING_CACHE` names) for every workspace, so that a git
//! worktree, a clone or a re-cut chunk embeds only text the model has not
//! read before.
//!
//! An entry's key is [`crate::embed::Embedder::cache_key`]: a SHA-256 of
//! what decides the vector (model, tokenizer, config, pooling, token limit)
//! and of the exact text the encoder reads; its value is the vector as f32.
//! Only the host writes entries, with vectors it computed from that text; a
//! workspace's files never reach the file, and nothing in a workspace is
//! read as a cache.
//!
//! Every ragbox process of the user (the per-user service, `ragbox index`,
//! standalone servers) opens the file in redb's multi-writer mode, as the
//! workspace store does: one write transaction at a time, the others'
//! commits seen by the next read. Each batch's new vectors are one
//! transaction, so a kill loses at most that batch. The cache is bounded:
//! past its cap (`[cache] max_mib`), the entries used longest ago go first,
//! by a last-used stamp kept to the hour. It is never fatal: a damaged file
//! is started afresh, and one that cannot be used (a read-only folder, a full
//! disk, a link or another user's file where it belongs) is left alone with
//! one warning, the chunks then embedded as without a cache.

mod file;

use crate::platform::FileId;
use crate::sync::lock;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cache file's name in its folder.
pub const CACHE_FILE: &str = "embeddings.redb";

/// The cap when the user's config sets none: about 370,000 chunks of a
/// 384-dimension model, a dozen repositories of 5,000 files.
pub const DEFAULT_MAX_MIB: u64 = 1024;

/// An entry's key: see [`crate::embed::Embedder::cache_key`].
pub type Key = [u8; 32];

/// key → the vector, little-endian f32s.
const VECTORS: TableDefinition<&Key, &[u8]> = TableDefinition::new("vectors");
/// key → the hour (since the Unix epoch) the entry was last used.
const USED: TableDefinition<&Key, u32> = TableDefinition::new("used");
/// The format, the vectors' bytes, and the lookups and hits so far.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// Bumped when the tables change shape: a file of another format is started afresh.
const FORMAT: u64 = 1;

/// What an entry takes in the file besides its vector's bytes: its key in
/// both tables, its stamp, and its share of the B-trees' pages (a
/// 384-dimension vector's 1,536 bytes leave most 4 KiB leaves one or two
/// entries, as random keys split them). Measured: 32,000 entries under
/// SHA-256 keys took 2,865 bytes each of the file's allocated pages, and as
/// much of the disk (the file's length runs ahead in doubling steps, as holes).
const ENTRY_OVERHEAD: u64 = 1340;

/// redb's page cache: a lookup reads a few pages per key, once.
const PAGE_CACHE_BYTES: usize = 16 << 20;

/// A prune leaves the entries at this share of the cap, so that the
/// inserts right after it do not prune again.
const PRUNE_TO_PERCENT: u64 = 90;

/// How long a cache that could not be used is left alone before it is tried
/// again (a disk that was full may have room now).
const RETRY_AFTER: Duration = Duration::from_secs(60);

/// Lookup counts are written with the next write, or on their own at most this often.
const FLUSH_EVERY: Duration = Duration::from_secs(5);

/// Why the cache cannot be used; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// A link, a FIFO, a folder or another special file where the cache file belongs.
    #[error(
        "the embedding cache {path} is {kind}, which ragbox does not open: remove it (`rm {path}`) and ragbox \
         makes a new cache there"
    )]
    NotPlain {
        /// The cache file's path.
        path: PathBuf,
        /// What it is, in words.
        kind: &'static str,
    },
    /// The cache file belongs to another user.
    #[error(
        "the embedding cache {path} belongs to another user, so its vectors are not believed: remove it (`rm {path}`), \
         or set RAGBOX_EMBEDDING_CACHE to a folder of your own"
    )]
    Foreign {
        /// The cache file's path.
        path: PathBuf,
    },
    /// The folder or the file cannot be read or written (read-only, full, permissions).
    #[error(
        "cannot use the embedding cache at {path}: {source} (make room or make the folder writable; \
         [cache] enabled = false in your config turns the cache off)"
    )]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is damaged or not a cache (it is started afresh).
    #[error("the embedding cache at {path} is damaged ({message})")]
    Corrupt {
        /// The cache file's path.
        path: PathBuf,
        /// What was found.
        message: String,
    },
    /// A process that shuts others out holds the file.
    #[error("the embedding cache at {path} is held by another process that does not share it")]
    Busy {
        /// The cache file's path.
        path: PathBuf,
    },
    /// redb refused for another reason (a bug, or a file of a newer redb).
    #[error("the embedding cache at {path} failed: {source}")]
    Redb {
        /// The cache file's path.
        path: PathBuf,
        /// redb's error.
        source: redb::Error,
    },
}

/// What the user's config says of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Whether vectors are looked up and kept at all.
    pub enabled: bool,
    /// The cap on the entries' bytes.
    pub max_bytes: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self { enabled: true, max_bytes: DEFAULT_MAX_MIB << 20 }
    }
}

/// What the cache holds, for `ragbox cache` and `ragbox doctor`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// The cache file.
    pub path: PathBuf,
    /// Whether the file exists.
    pub exists: bool,
    /// Vectors kept.
    pub entries: u64,
    /// Their bytes as the cap counts them.
    pub bytes: u64,
    /// What the file takes on disk (freed space is reused, not given back until a prune compacts it).
    pub file_bytes: u64,
    /// The cap.
    pub max_bytes: u64,
    /// Vectors looked up since the file was made.
    pub lookups: u64,
    /// Of those, found.
    pub hits: u64,
}

/// What a prune did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Entries removed (least recently used first).
    pub removed: u64,
    /// The file's size before and after.
    pub file_bytes: (u64, u64),
    /// Whether the file could be compacted (not while another process is in a transaction on it).
    pub compacted: bool,
}

/// The per-user embedding cache of this process; cheap to share between threads.
pub struct Cache {
    /// The folder, or `None` when the cache is off.
    dir: Option<PathBuf>,
    max_bytes: AtomicU64,
    slot: Mutex<Slot>,
    pending: Mutex<Pending>,
    /// Whether this process has said that the cache is not used (said once).
    warned: AtomicBool,
}

/// The open cache, or why there is none.
enum Slot {
    Closed,
    Open(Arc<Opened>),
    /// Could not be used at that time: left alone for [`RETRY_AFTER`].
    Failed(Instant),
}

/// The open file.
struct Opened {
    db: Database,
    /// Its folder, held.
    folder: cap_std::fs::Dir,
    path: PathBuf,
    /// The file it was opened on: one removed or replaced since is opened anew.
    id: FileId,
}

/// Lookups and hits not yet written to the file.
#[derive(Default)]
struct Pending {
    lookups: u64,
    hits: u64,
    since: Option<Instant>,
}

impl Cache {
    /// The cache in the folder `dir` (`None`: off) with `settings`; nothing
    /// is opened until the first lookup.
    pub fn new(dir: Option<PathBuf>, settings: Settings) -> Self {
        Self {
            dir: dir.filter(|_| settings.enabled),
            max_bytes: AtomicU64::new(settings.max_bytes),
            slot: Mutex::new(Slot::Closed),
            pending: Mutex::default(),
            warned: AtomicBool::new(false),
        }
    }

    /// The default folder: `$RAGBOX_EMBEDDING_CACHE`, else the user cache dir
    /// (`~/.cache/ragbox/embeddings`); `RAGBOX_EMBEDDING_CACHE=off` turns it off.
    pub fn default_dir() -> Option<PathBuf> {
        crate::platform::user_cache_dir("RAGBOX_EMBEDDING_CACHE", "embeddings")
    }

    /// The cache file's path (`None` when the cache is off).
    pub fn path(&self) -> Option<PathBuf> {
        self.dir.as_deref().map(file::path_in)
    }

    /// Takes a new cap (a session's config may have changed it).
    pub fn set_max_bytes(&self, max_bytes: u64) {
        self.max_bytes.store(max_bytes, Ordering::Relaxed);
    }

    /// The vectors kept under `keys`, each `None` where there is none of
    /// `dimension` values. Never fails: a cache that cannot be read finds nothing.
    pub fn get(&self, keys: &[Key], dimension: usize) -> Vec<Option<Vec<f32>>> {
        let mut found: Vec<Option<Vec<f32>>> = vec![None; keys.len()];
        let Some(opened) = self.opened(true) else { return found };
        let now = hour_now();
        let stale = self.run(&opened, |db| {
            let txn = db.begin_read()?;
            let (Some(vectors), Some(used)) = (open_read(&txn, VECTORS)?, open_read(&txn, USED)?) else {
                return Ok(Vec::new());
            };
            let mut stale = Vec::new();
            for (slot, key) in found.iter_mut().zip(keys) {
                let Some(bytes) = vectors.get(key)? else { continue };
                *slot = decode(bytes.value(), dimension);
                if slot.is_some() && used.get(key)?.is_none_or(|hour| hour.value() < now) {
                    stale.push(*key);
                }
            }
            Ok(stale)
        });
        let Some(stale) = stale else {
            // Whatever was read before it failed is not believed.
            return vec![None; keys.len()];
        };
        let hits = found.iter().filter(|v| v.is_some()).count() as u64;
        let flush = {
            let mut pending = lock(&self.pending);
            pending.lookups += keys.len() as u64;
            pending.hits += hits;
            pending.since.get_or_insert_with(Instant::now).elapsed() >= FLUSH_EVERY
        };
        if !stale.is_empty() || flush {
            self.write(&opened, &[], &stale);
        }
        found
    }

    /// Keeps `entries` (key and the vector this process computed for it), in
    /// one transaction; prunes the least recently used past the cap. Never
    /// fails: a cache that cannot be written keeps nothing.
    pub fn put(&self, entries: &[(Key, &[f32])]) {
        if entries.is_empty() {
            return;
        }
        if let Some(opened) = self.opened(true) {
            self.write(&opened, entries, &[]);
        }
    }

    /// Writes the lookups and hits not yet counted in the file (they are
    /// otherwise written with the next write, at most [`FLUSH_EVERY`] late).
    pub fn flush(&self) {
        if lock(&self.pending).lookups == 0 {
            return;
        }
        if let Some(opened) = self.opened(false) {
            self.write(&opened, &[], &[]);
        }
    }

    /// What the cache holds (nothing is made when there is no file yet).
    pub fn stats(&self) -> Result<Stats, CacheError> {
        let max_bytes = self.max_bytes.load(Ordering::Relaxed);
        let Some(dir) = &self.dir else { return Ok(Stats { max_bytes, ..Stats::default() }) };
        let path = file::path_in(dir);
        let Some(opened) = self.try_open(false)? else {
            return Ok(Stats { path, max_bytes, ..Stats::default() });
        };
        let pending = lock(&self.pending);
        let mut stats = guarded(&opened.path, || {
            let txn = opened.db.begin_read().map_err(|e| redb_error(&opened.path, e))?;
            let meta = |name: &str| read_meta(&txn, name, &opened.path);
            let entries = match open_read(&txn, VECTORS).map_err(|e| redb_error(&opened.path, e))? {
                Some(vectors) => vectors.len().map_err(|e| redb_error(&opened.path, e))?,
                None => 0,
            };
            Ok(Stats {
                path: path.clone(),
                exists: true,
                entries,
                bytes: in_use(meta("vector_bytes")?, entries),
                file_bytes: 0,
                max_bytes,
                lookups: meta("lookups")? + pending.lookups,
                hits: meta("hits")? + pending.hits,
            })
        })?;
        stats.file_bytes = opened.file_bytes();
        Ok(stats)
    }

    /// Removes the least recently used entries past the cap, then gives the
    /// freed space back to the file system where no other process is in a
    /// transaction on the file (`ragbox cache prune`).
    pub fn prune(&self) -> Result<Pruned, CacheError> {
        let Some(opened) = self.try_open(false)? else { return Ok(Pruned::default()) };
        let before = opened.file_bytes();
        let removed = prune(&opened, self.max_bytes.load(Ordering::Relaxed))?;
        // Compaction needs the only handle on the database in this process.
        *lock(&self.slot) = Slot::Closed;
        let mut compacted = false;
        if let Ok(mut only) = Arc::try_unwrap(opened) {
            compacted = guarded(&only.path, || match only.db.compact() {
                Ok(_) => Ok(true),
                Err(redb::CompactionError::TransactionInProgress) => Ok(false),
                Err(e) => Err(redb_error(&only.path, e)),
            })?;
            let after = only.file_bytes();
            return Ok(Pruned { removed, file_bytes: (before, after), compacted });
        }
        Ok(Pruned { removed, file_bytes: (before, before), compacted })
    }

    /// Removes the cache file (`ragbox cache clear`); other processes start
    /// a new one at their next lookup. False when there was none.
    pub fn clear(&self) -> Result<bool, CacheError> {
        let Some(dir) = &self.dir else { return Ok(false) };
        *lock(&self.slot) = Slot::Closed;
        let path = file::path_in(dir);
        match file::folder(dir) {
            Ok(folder) => file::remove(&folder, &path),
            Err(CacheError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The open cache, opened (made when `create`) if needed; `None` when
    /// the cache is off or cannot be used now (said once).
    fn opened(&self, create: bool) -> Option<Arc<Opened>> {
        self.dir.as_ref()?;
        {
            let slot = lock(&self.slot);
            if let Slot::Failed(at) = &*slot
                && at.elapsed() < RETRY_AFTER
            {
                return None;
            }
        }
        match self.try_open(create) {
            Ok(opened) => opened,
            Err(e) => {
                *lock(&self.slot) = Slot::Failed(Instant::now());
                self.say(&e);
                None
            }
        }
    }

    /// The open cache, or the file opened now (made when `create`).
    fn try_open(&self, create: bool) -> Result<Option<Arc<Opened>>, CacheError> {
        let Some(dir) = &self.dir else { return Ok(None) };
        let mut slot = lock(&self.slot);
        if let Slot::Open(opened) = &*slot
            && file::current(&opened.folder, &opened.path) == Some(opened.id)
        {
            return Ok(Some(opened.clone()));
        }
        let opened = match Opened::open(dir, create)? {
            Some(opened) => Arc::new(opened),
            None => return Ok(None),
        };
        *slot = Slot::Open(opened.clone());
        Ok(Some(opened))
    }

    /// Runs `f` on the open file; `None` when it failed (said once; a damaged
    /// file is removed, to be started afresh by the next lookup).
    fn run<T>(&self, opened: &Opened, f: impl FnOnce(&Database) -> Result<T, redb::Error>) -> Option<T> {
        match guarded(&opened.path, || f(&opened.db).map_err(|e| redb_error(&opened.path, e))) {
            Ok(value) => Some(value),
            Err(e) => {
                self.failed(opened, e);
                None
            }
        }
    }

    /// What to do after an operation on `opened` failed with `e`.
    fn failed(&self, opened: &Opened, e: CacheError) {
        let mut slot = lock(&self.slot);
        if let CacheError::Corrupt { .. } = e {
            tracing::warn!("{e}: it is started afresh");
            // Only the file this process found damaged: another may have made a new one meanwhile.
            if file::current(&opened.folder, &opened.path) == Some(opened.id)
                && let Err(e) = file::remove(&opened.folder, &opened.path)
            {
                drop(slot);
                return self.say(&e);
            }
            *slot = Slot::Closed;
            return;
        }
        *slot = Slot::Failed(Instant::now());
        drop(slot);
        self.say(&e);
    }

    /// Keeps `entries`, stamps `touched` as used now and writes the pending
    /// counts, in one transaction; then prunes if past the cap.
    fn write(&self, opened: &Opened, entries: &[(Key, &[f32])], touched: &[Key]) {
        let now = hour_now();
        let counted = std::mem::take(&mut *lock(&self.pending));
        let max_bytes = self.max_bytes.load(Ordering::Relaxed);
        let over = self.run(opened, |db| {
            let txn = db.begin_write()?;
            let bytes = {
                let mut vectors = txn.open_table(VECTORS)?;
                let mut used = txn.open_table(USED)?;
                let mut meta = txn.open_table(META)?;
                let get = |meta: &redb::Table<&str, u64>, name: &str| -> Result<u64, redb::Error> {
                    Ok(meta.get(name)?.map_or(0, |v| v.value()))
                };
                let mut vector_bytes = get(&meta, "vector_bytes")?;
                for (key, vector) in entries {
                    let encoded = crate::store::encode_vector(vector);
                    if let Some(old) = vectors.insert(key, encoded.as_slice())? {
                        vector_bytes = vector_bytes.saturating_sub(old.value().len() as u64);
                    }
                    vector_bytes += encoded.len() as u64;
                    used.insert(key, now)?;
                }
                for key in touched {
                    if vectors.get(key)?.is_some() {
                        used.insert(key, now)?;
                    }
                }
                let (lookups, hits) = (get(&meta, "lookups")?, get(&meta, "hits")?);
                meta.insert("lookups", lookups + counted.lookups)?;
                meta.insert("hits", hits + counted.hits)?;
                meta.insert("vector_bytes", vector_bytes)?;
                in_use(vector_bytes, vectors.len()?)
            };
            txn.commit()?;
            Ok(bytes > max_bytes)
        });
        if over == Some(true)
            && let Err(e) = prune(opened, max_bytes)
        {
            self.failed(opened, e);
        }
    }

    /// Says once that the cache is not used, and why.
    fn say(&self, e: &CacheError) {
        if self.warned.swap(true, Ordering::Relaxed) {
            tracing::debug!("{e}");
        } else {
            tracing::warn!("{e}; chunks are embedded without the cache until it can be used");
        }
    }
}

impl Drop for Cache {
    /// Writes the lookups not yet counted in the file.
    fn drop(&mut self) {
        self.flush();
    }
}

impl Opened {
    /// The cache file in `dir`, opened in redb's multi-writer mode (made when
    /// missing and `create`; `None` when missing otherwise). A damaged file
    /// or one of another format is started afresh, once.
    fn open(dir: &Path, create: bool) -> Result<Option<Self>, CacheError> {
        let folder = match file::folder(dir) {
            Err(CacheError::Io { source, .. }) if !create && source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None);
            }
            other => other?,
        };
        let path = file::path_in(dir);
        for attempt in 0..2 {
            let Some((file, id)) = file::open(&folder, &path, create)? else { return Ok(None) };
            let opened = connect(file, &path).and_then(|db| {
                let opened = Self { db, folder: folder.try_clone().map_err(|e| io(&path, e))?, path: path.clone(), id };
                opened.check_format()?;
                Ok(opened)
            });
            match opened {
                Err(e @ CacheError::Corrupt { .. }) if attempt == 0 => {
                    tracing::warn!("{e}: it is started afresh");
                    file::remove(&folder, &path)?;
                }
                other => return other.map(Some),
            }
        }
        Err(CacheError::Corrupt { path, message: "it is damaged again as soon as it is made".into() })
    }

    /// Records the format in a new file; refuses a file of another one as damaged.
    fn check_format(&self) -> Result<(), CacheError> {
        let path = &self.path;
        guarded(path, || {
            let txn = self.db.begin_read().map_err(|e| redb_error(path, e))?;
            match read_meta_opt(&txn, "format", path)? {
                Some(FORMAT) => return Ok(()),
                Some(other) => {
                    return Err(CacheError::Corrupt { path: path.clone(), message: format!("format {other}") });
                }
                None => {}
            }
            drop(txn);
            let txn = self.db.begin_write().map_err(|e| redb_error(path, e))?;
            {
                let mut meta = txn.open_table(META).map_err(|e| redb_error(path, e))?;
                if meta.get("format").map_err(|e| redb_error(path, e))?.is_none() {
                    meta.insert("format", FORMAT).map_err(|e| redb_error(path, e))?;
                }
            }
            txn.commit().map_err(|e| redb_error(path, e))
        })
    }

    /// What the file takes on disk now.
    fn file_bytes(&self) -> u64 {
        self.folder.symlink_metadata(CACHE_FILE).map_or(0, |m| crate::platform::disk_bytes(&m))
    }
}

/// Removes the least recently used entries until their bytes are at
/// [`PRUNE_TO_PERCENT`] of `max_bytes`; returns how many went.
fn prune(opened: &Opened, max_bytes: u64) -> Result<u64, CacheError> {
    let path = &opened.path;
    guarded(path, || {
        let run = || -> Result<u64, redb::Error> {
            let txn = opened.db.begin_write()?;
            let removed = {
                let mut meta = txn.open_table(META)?;
                let mut vectors = txn.open_table(VECTORS)?;
                let mut vector_bytes = meta.get("vector_bytes")?.map_or(0, |v| v.value());
                let mut entries = vectors.len()?;
                if in_use(vector_bytes, entries) <= max_bytes {
                    return Ok(0);
                }
                let target = max_bytes / 100 * PRUNE_TO_PERCENT;
                let mut used = txn.open_table(USED)?;
                let mut order: Vec<(u32, Key)> = Vec::with_capacity(used.len()? as usize);
                for row in used.iter()? {
                    let (key, hour) = row?;
                    order.push((hour.value(), *key.value()));
                }
                // Oldest first; within an hour, any order.
                order.sort_unstable();
                let mut removed = 0;
                for (_, key) in &order {
                    if in_use(vector_bytes, entries) <= target {
                        break;
                    }
                    used.remove(key)?;
                    if let Some(old) = vectors.remove(key)? {
                        vector_bytes = vector_bytes.saturating_sub(old.value().len() as u64);
                        entries -= 1;
                        removed += 1;
                    }
                }
                meta.insert("vector_bytes", vector_bytes)?;
                removed
            };
            txn.commit()?;
            Ok(removed)
        };
        run().map_err(|e| redb_error(path, e))
    })
}

/// Opens the database on `file` in redb's multi-writer mode.
fn connect(file: std::fs::File, path: &Path) -> Result<Database, CacheError> {
    guarded(path, || {
        let backend = redb::backends::FileBackend::new(file).map_err(|e| redb_error(path, e))?;
        redb::Builder::new()
            .set_cache_size(PAGE_CACHE_BYTES)
            .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
            .create_with_backend(backend)
            .map_err(|e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => CacheError::Busy { path: path.to_path_buf() },
                // redb reports a file that is not a redb database as InvalidData.
                redb::DatabaseError::Storage(redb::StorageError::Io(e))
                    if e.kind() != std::io::ErrorKind::InvalidData =>
                {
                    io(path, e)
                }
                e => CacheError::Corrupt { path: path.to_path_buf(), message: e.to_string() },
            })
    })
}

/// Runs `f`, reporting a panic inside redb (a page it cannot make sense of)
/// as a damaged file instead of taking the process down.
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T, CacheError>) -> Result<T, CacheError> {
    crate::store::quiet_panics(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))).unwrap_or_else(|panic| {
        Err(CacheError::Corrupt { path: path.to_path_buf(), message: crate::store::panic_message(&panic) })
    })
}

/// Sorts a redb error into what the cache does about it.
fn redb_error(path: &Path, e: impl Into<redb::Error>) -> CacheError {
    match e.into() {
        redb::Error::Io(source) => io(path, source),
        redb::Error::Corrupted(message) => CacheError::Corrupt { path: path.to_path_buf(), message },
        redb::Error::DatabaseAlreadyOpen => CacheError::Busy { path: path.to_path_buf() },
        source => CacheError::Redb { path: path.to_path_buf(), source },
    }
}

fn io(path: &Path, source: std::io::Error) -> CacheError {
    CacheError::Io { path: path.to_path_buf(), source }
}

/// Opens a table for reading; `None` when nothing was ever written to it.
fn open_read<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    def: TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>, redb::Error> {
    match txn.open_table(def) {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A counter in the meta table (0 when never written).
fn read_meta(txn: &redb::ReadTransaction, name: &str, path: &Path) -> Result<u64, CacheError> {
    Ok(read_meta_opt(txn, name, path)?.unwrap_or(0))
}

fn read_meta_opt(txn: &redb::ReadTransaction, name: &str, path: &Path) -> Result<Option<u64>, CacheError> {
    let Some(meta) = open_read(txn, META).map_err(|e| redb_error(path, e))? else { return Ok(None) };
    Ok(meta.get(name).map_err(|e| redb_error(path, e))?.map(|v| v.value()))
}

/// A stored vector (little-endian f32s, as the store keeps them), when it is
/// one of `dimension` finite values.
pub(crate) fn decode(bytes: &[u8], dimension: usize) -> Option<Vec<f32>> {
    if bytes.len() != dimension * 4 {
        return None;
    }
    let vector = crate::store::decode_vector(bytes);
    vector.iter().all(|x| x.is_finite()).then_some(vector)
}

/// The bytes `entries` entries whose vectors take `vector_bytes` count for
/// against the cap (their keys, stamps and share of the B-trees included).
fn in_use(vector_bytes: u64, entries: u64) -> u64 {
    vector_bytes.saturating_add(entries.saturating_mul(ENTRY_OVERHEAD))
}

/// Hours since the Unix epoch: the last-used stamp's grain.
fn hour_now() -> u32 {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    u32::try_from(secs / 3600).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Key {
        [n; 32]
    }

    fn cache(dir: &Path, max_bytes: u64) -> Cache {
        Cache::new(Some(dir.to_path_buf()), Settings { enabled: true, max_bytes })
    }

    #[test]
    fn a_vector_kept_is_found_again_by_another_handle() {
        let dir = tempfile::tempdir().unwrap();
        let a = cache(dir.path(), 1 << 30);
        let v = [0.6f32, 0.8, 0.0];
        a.put(&[(key(1), &v)]);
        let b = cache(dir.path(), 1 << 30);
        assert_eq!(b.get(&[key(1), key(2)], 3), vec![Some(v.to_vec()), None]);
        assert_eq!(b.get(&[key(1)], 4), vec![None], "another model's length is not this one's vector");
        drop(b);
        let stats = a.stats().unwrap();
        assert_eq!((stats.entries, stats.lookups, stats.hits), (1, 3, 1), "{stats:?}");
        assert_eq!(stats.bytes, 12 + ENTRY_OVERHEAD);
    }

    #[test]
    fn past_the_cap_the_least_recently_used_go() {
        let dir = tempfile::tempdir().unwrap();
        let per = 16 + ENTRY_OVERHEAD;
        let c = cache(dir.path(), per * 10);
        let v = [1.0f32; 4];
        for n in 0..10 {
            c.put(&[(key(n), &v)]);
        }
        // Key 0 is older than the rest: stamp it an hour back, then use 5 now.
        let opened = c.opened(true).unwrap();
        let txn = opened.db.begin_write().unwrap();
        txn.open_table(USED).unwrap().insert(&key(0), hour_now() - 1).unwrap();
        txn.commit().unwrap();
        c.put(&[(key(10), &v)]);
        let found = c.get(&(0..=10).map(key).collect::<Vec<_>>(), 4);
        assert_eq!(found[0], None, "the least recently used went first");
        assert_eq!(found[10], Some(v.to_vec()), "the newest stays");
        let stats = c.stats().unwrap();
        assert!(stats.bytes <= per * 9, "{stats:?}");
        assert_eq!(stats.entries, found.iter().filter(|f| f.is_some()).count() as u64);
    }

    #[test]
    fn a_damaged_file_is_started_afresh() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CACHE_FILE), vec![0x5a; 64 << 10]).unwrap();
        let c = cache(dir.path(), 1 << 30);
        assert_eq!(c.get(&[key(1)], 2), vec![None]);
        c.put(&[(key(1), &[1.0, 0.0])]);
        assert_eq!(c.get(&[key(1)], 2), vec![Some(vec![1.0, 0.0])]);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_where_the_file_belongs_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere.redb");
        cache(&target.with_extension("d"), 1 << 30).put(&[(key(1), &[1.0])]);
        std::os::unix::fs::symlink(target.with_extension("d").join(CACHE_FILE), dir.path().join(CACHE_FILE)).unwrap();
        let c = cache(dir.path(), 1 << 30);
        let e = c.try_open(true).err().unwrap().to_string();
        assert!(e.contains("is a symbolic link") && e.contains("rm "), "{e}");
        assert_eq!(c.get(&[key(1)], 1), vec![None], "a link is not read through");
    }
}
