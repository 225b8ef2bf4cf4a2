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
//! transaction, so a kill loses at most that batch. The cache is optional,
//! so no call waits on it for long: an operation runs on a thread of its own
//! and the call goes on without it after [`OP_WAIT`] (a process stopped in a
//! transaction must not freeze every other's embedding), and a write that
//! cannot take the file within [`LOCK_WAIT`] is dropped. The cache is
//! bounded: past its cap (`[cache] max_mib`), each write evicts the entries
//! used longest ago, taken in order from a (stamp, key) table, the stamp
//! being a per-write counter. It is never fatal: a damaged file is started
//! afresh, a file of a newer ragbox is left alone (never removed), and one
//! that cannot be used (a read-only folder, a full disk, a link or another
//! user's file where it belongs) is left alone with one warning, the chunks
//! then embedded as without a cache.

mod file;

use crate::platform::FileId;
use crate::sync::lock;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
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
/// key → its last-used stamp (the number of the write that last kept or used it).
const USED: TableDefinition<&Key, u64> = TableDefinition::new("used");
/// (last-used stamp, key), oldest first: eviction pops from its front, without a scan.
const ORDER: TableDefinition<(u64, &Key), ()> = TableDefinition::new("order");
/// The format, the write counter, the vectors' bytes, and the lookups and hits so far.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// Bumped when the tables change shape: a file of an older format is started
/// afresh; one of a newer format belongs to a newer ragbox and is left alone.
const FORMAT: u64 = 2;

/// What an entry takes in the file besides its vector's bytes: its key in
/// the tables, its stamp, and its share of the B-trees' pages (a
/// 384-dimension vector's 1,536 bytes leave most 4 KiB leaves one or two
/// entries, as random keys split them). Measured: 32,000 entries under
/// SHA-256 keys took 2,865 bytes each of the file's allocated pages, and as
/// much of the disk (the file's length runs ahead in doubling steps, as holes).
const ENTRY_OVERHEAD: u64 = 1340;

/// redb's page cache: a lookup reads a few pages per key, once.
const PAGE_CACHE_BYTES: usize = 16 << 20;

/// `ragbox cache prune` leaves the entries at this share of the cap, so that
/// the inserts right after it do not evict at once.
const PRUNE_TO_PERCENT: u64 = 90;

/// Entries one transaction of `ragbox cache prune` removes (each write of
/// the call path evicts at most [`EVICT_PER_WRITE`], or twice what it adds).
const PRUNE_STEP: u64 = 4096;

/// Entries one write evicts at most beyond twice those it adds: the cap
/// holds, and the transaction stays short.
const EVICT_PER_WRITE: u64 = 512;

/// How long a write waits for another's (this process's or another's) to
/// end before it is dropped: the cache is optional, a call must not wait.
const LOCK_WAIT: Duration = Duration::from_millis(200);

/// How long a call waits for a cache operation as a whole (an open, a read
/// behind another process's commit, a write's sync to disk) before it goes
/// on without the cache; the operation ends on its own thread, and no other
/// starts until it has.
const OP_WAIT: Duration = Duration::from_millis(500);

/// How long `ragbox cache prune` waits for other processes' writes.
const PRUNE_LOCK_WAIT: Duration = Duration::from_secs(10);

/// How far from 1 a vector's length may be (the model's are normalised; f32 rounding stays far inside).
const UNIT_SLACK: f32 = 1e-3;

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
    /// A file a newer ragbox (or redb) wrote: left as it is, never removed.
    #[error(
        "the embedding cache at {path} was written by a newer ragbox ({what}); this one leaves it as it is and \
         embeds without it: use the newer ragbox, or set RAGBOX_EMBEDDING_CACHE to another folder for this one"
    )]
    NotOurs {
        /// The cache file's path.
        path: PathBuf,
        /// What was found.
        what: String,
    },
    /// `RAGBOX_EMBEDDING_CACHE` names a relative path, which would mean another folder in every workspace.
    #[error(
        "RAGBOX_EMBEDDING_CACHE={path} is not an absolute path: set it to an absolute folder (or to `off`), \
         so that every ragbox process finds the same cache"
    )]
    Relative {
        /// The path as set.
        path: PathBuf,
    },
    /// A write did not get the file within its wait (another process's write held it).
    #[error("the embedding cache at {path} is being written by another process")]
    Locked {
        /// The cache file's path.
        path: PathBuf,
    },
    /// redb refused for another reason (a bug).
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
    inner: Arc<Inner>,
}

/// What the cache's operations share with the threads they run on.
struct Inner {
    /// The folder, or `None` when the cache is off.
    dir: Option<PathBuf>,
    max_bytes: AtomicU64,
    slot: Mutex<Slot>,
    pending: Mutex<Pending>,
    /// Whether this process has said that the cache is not used (said once
    /// until a write succeeds again).
    warned: AtomicBool,
    /// Operations that outlived [`OP_WAIT`] and still run: none starts meanwhile.
    stuck: AtomicUsize,
}

/// The open cache, or why there is none.
enum Slot {
    Closed,
    /// One thread is opening it: the others go on without it.
    Opening,
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
            inner: Arc::new(Inner {
                dir: dir.filter(|_| settings.enabled),
                max_bytes: AtomicU64::new(settings.max_bytes),
                slot: Mutex::new(Slot::Closed),
                pending: Mutex::default(),
                warned: AtomicBool::new(false),
                stuck: AtomicUsize::new(0),
            }),
        }
    }

    /// The default folder: `$RAGBOX_EMBEDDING_CACHE`, else the user cache dir
    /// (`~/.cache/ragbox/embeddings`); `RAGBOX_EMBEDDING_CACHE=off` turns it off.
    pub fn default_dir() -> Option<PathBuf> {
        crate::platform::user_cache_dir("RAGBOX_EMBEDDING_CACHE", "embeddings")
    }

    /// The cache file's path (`None` when the cache is off).
    pub fn path(&self) -> Option<PathBuf> {
        self.inner.dir.as_deref().map(file::path_in)
    }

    /// Takes a new cap (a session's config may have changed it).
    pub fn set_max_bytes(&self, max_bytes: u64) {
        self.inner.max_bytes.store(max_bytes, Ordering::Relaxed);
    }

    /// The vectors kept under `keys`, each `None` where there is none of
    /// `dimension` values of unit length. Never fails nor waits long: a
    /// cache that cannot be read in time finds nothing (counted as misses).
    pub fn get(&self, keys: &[Key], dimension: usize) -> Vec<Option<Vec<f32>>> {
        if self.inner.dir.is_none() || keys.is_empty() {
            return vec![None; keys.len()];
        }
        let inner = self.inner.clone();
        let asked = keys.to_vec();
        let found = self
            .inner
            .bounded(move || {
                let opened = inner.opened(true)?;
                inner.run(&opened, |db| lookup(db, &asked, dimension))
            })
            .flatten()
            .unwrap_or_else(|| vec![None; keys.len()]);
        let hit: Vec<Key> = keys.iter().zip(&found).filter(|(_, v)| v.is_some()).map(|(k, _)| *k).collect();
        let flush = {
            let mut pending = lock(&self.inner.pending);
            pending.lookups = pending.lookups.saturating_add(keys.len() as u64);
            pending.hits = pending.hits.saturating_add(hit.len() as u64);
            pending.since.get_or_insert_with(Instant::now).elapsed() >= FLUSH_EVERY
        };
        if !hit.is_empty() || flush {
            self.write(Vec::new(), hit);
        }
        found
    }

    /// Keeps `entries` (key and the vector this process computed for it), in
    /// one transaction that also evicts the least recently used past the cap.
    /// Never fails nor waits long: a cache that cannot be written keeps nothing.
    pub fn put(&self, entries: &[(Key, &[f32])]) {
        if entries.is_empty() || self.inner.dir.is_none() {
            return;
        }
        self.write(entries.iter().map(|(k, v)| (*k, v.to_vec())).collect(), Vec::new());
    }

    /// Writes the lookups and hits not yet counted in the file (they are
    /// otherwise written with the next write, at most [`FLUSH_EVERY`] late).
    pub fn flush(&self) {
        if self.inner.dir.is_none() || lock(&self.inner.pending).lookups == 0 {
            return;
        }
        let inner = self.inner.clone();
        self.inner.bounded(move || {
            if let Some(opened) = inner.opened(false) {
                inner.write(&opened, &[], &[]);
            }
        });
    }

    /// What the cache holds, read without changing the file: nothing is
    /// made, repaired or removed (`ragbox cache`, `ragbox doctor`).
    pub fn stats(&self) -> Result<Stats, CacheError> {
        let max_bytes = self.inner.max_bytes.load(Ordering::Relaxed);
        let Some(dir) = &self.inner.dir else { return Ok(Stats { max_bytes, ..Stats::default() }) };
        let path = file::path_in(dir);
        let Some(mut stats) = read_stats(dir)? else {
            return Ok(Stats { path, max_bytes, ..Stats::default() });
        };
        let pending = lock(&self.inner.pending);
        stats.lookups = stats.lookups.saturating_add(pending.lookups);
        stats.hits = stats.hits.saturating_add(pending.hits);
        stats.max_bytes = max_bytes;
        Ok(stats)
    }

    /// Removes the least recently used entries past the cap, a few thousand
    /// per transaction, then gives the freed space back to the file system
    /// where no other process is in a transaction on the file (`ragbox cache prune`).
    pub fn prune(&self) -> Result<Pruned, CacheError> {
        let Some(dir) = &self.inner.dir else { return Ok(Pruned::default()) };
        *lock(&self.inner.slot) = Slot::Closed;
        let Some(mut opened) = Opened::open(dir, false)? else { return Ok(Pruned::default()) };
        let before = opened.file_bytes();
        let target = self.inner.max_bytes.load(Ordering::Relaxed) / 100 * PRUNE_TO_PERCENT;
        let path = opened.path.clone();
        let mut removed = 0;
        loop {
            let step = guarded(&path, || {
                let Some(txn) = begin_write(&opened.db, PRUNE_LOCK_WAIT).map_err(|e| redb_error(&path, e))? else {
                    return Err(CacheError::Locked { path: path.clone() });
                };
                let step = evict_in(&txn, target, PRUNE_STEP).map_err(|e| redb_error(&path, e))?;
                txn.commit().map_err(|e| redb_error(&path, e))?;
                Ok(step)
            })?;
            removed += step;
            if step < PRUNE_STEP {
                break;
            }
        }
        let compacted = guarded(&path, || match opened.db.compact() {
            Ok(_) => Ok(true),
            Err(redb::CompactionError::TransactionInProgress) => Ok(false),
            Err(e) => Err(redb_error(&path, e)),
        })?;
        Ok(Pruned { removed, file_bytes: (before, opened.file_bytes()), compacted })
    }

    /// Removes the cache file (`ragbox cache clear`); other processes start
    /// a new one at their next lookup. False when there was none.
    pub fn clear(&self) -> Result<bool, CacheError> {
        let Some(dir) = &self.inner.dir else { return Ok(false) };
        *lock(&self.inner.slot) = Slot::Closed;
        let path = file::path_in(dir);
        match file::folder(dir) {
            Ok(folder) => file::remove(&folder, &path),
            Err(CacheError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Keeps `entries` and stamps `touched` as used, on a thread of its own,
    /// waited for at most [`OP_WAIT`].
    fn write(&self, entries: Vec<(Key, Vec<f32>)>, touched: Vec<Key>) {
        let inner = self.inner.clone();
        self.inner.bounded(move || {
            if let Some(opened) = inner.opened(true) {
                inner.write(&opened, &entries, &touched);
            }
        });
    }
}

impl Drop for Cache {
    /// Writes the lookups not yet counted in the file.
    fn drop(&mut self) {
        self.flush();
    }
}

/// Where a bounded operation stands, between its thread and the caller.
const RUNNING: u8 = 0;
const DONE: u8 = 1;
const ABANDONED: u8 = 2;

impl Inner {
    /// Runs `f` on a thread of its own and waits for it at most [`OP_WAIT`]:
    /// `None` when it took longer (it ends on its own; until it has, no other
    /// operation starts and every call goes on without the cache).
    fn bounded<T: Send + 'static>(self: &Arc<Self>, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        if self.stuck.load(Ordering::Acquire) > 0 {
            return None;
        }
        let (sent, received) = mpsc::sync_channel(1);
        let state = Arc::new(AtomicU8::new(RUNNING));
        let (inner, theirs) = (self.clone(), state.clone());
        let spawned = std::thread::Builder::new().name("embedding-cache".into()).spawn(move || {
            let _ = sent.send(f());
            if theirs.swap(DONE, Ordering::AcqRel) == ABANDONED {
                inner.stuck.fetch_sub(1, Ordering::AcqRel);
            }
        });
        if let Err(e) = spawned {
            tracing::debug!("no thread for the embedding cache: {e}");
            return None;
        }
        match received.recv_timeout(OP_WAIT) {
            Ok(value) => Some(value),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Counted before it is marked, so that the thread's end cannot uncount it first.
                self.stuck.fetch_add(1, Ordering::AcqRel);
                if state.swap(ABANDONED, Ordering::AcqRel) == DONE {
                    self.stuck.fetch_sub(1, Ordering::AcqRel);
                    return received.try_recv().ok();
                }
                tracing::debug!("the embedding cache took longer than {OP_WAIT:?}: this call goes on without it");
                None
            }
        }
    }

    /// The open cache, opened (made when `create`) if needed; `None` when
    /// the cache is off, being opened by another thread, or cannot be used
    /// now (said once).
    fn opened(&self, create: bool) -> Option<Arc<Opened>> {
        let dir = self.dir.as_ref()?;
        {
            let mut slot = lock(&self.slot);
            match &*slot {
                Slot::Opening => return None,
                Slot::Failed(at) if at.elapsed() < RETRY_AFTER => return None,
                Slot::Open(opened) if file::current(&opened.folder, &opened.path) == Some(opened.id) => {
                    return Some(opened.clone());
                }
                _ => *slot = Slot::Opening,
            }
        }
        // Opened without the slot held: an open may wait on another process (its repair, its commit).
        match Opened::open(dir, create) {
            Ok(Some(opened)) => {
                let opened = Arc::new(opened);
                *lock(&self.slot) = Slot::Open(opened.clone());
                Some(opened)
            }
            Ok(None) => {
                *lock(&self.slot) = Slot::Closed;
                None
            }
            // Another process was writing a new file's first transaction: tried again at the next call.
            Err(e @ CacheError::Locked { .. }) => {
                tracing::debug!("{e}");
                *lock(&self.slot) = Slot::Closed;
                None
            }
            Err(e) => {
                *lock(&self.slot) = Slot::Failed(Instant::now());
                self.say(&e);
                None
            }
        }
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
                // Left alone for a while, not tried again at every call.
                *slot = Slot::Failed(Instant::now());
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

    /// Keeps `entries`, stamps `touched` as used and writes the pending
    /// counts, in one transaction that also evicts past the cap; dropped
    /// (the counts kept for the next) when the file is not free within [`LOCK_WAIT`].
    fn write(&self, opened: &Opened, entries: &[(Key, Vec<f32>)], touched: &[Key]) {
        let counted = std::mem::take(&mut *lock(&self.pending));
        let max_bytes = self.max_bytes.load(Ordering::Relaxed);
        let evict_at_most = EVICT_PER_WRITE.saturating_add(2 * entries.len() as u64);
        let written = self.run(opened, |db| {
            let Some(txn) = begin_write(db, LOCK_WAIT)? else { return Ok(false) };
            {
                let mut vectors = txn.open_table(VECTORS)?;
                let mut used = txn.open_table(USED)?;
                let mut order = txn.open_table(ORDER)?;
                let mut meta = txn.open_table(META)?;
                let get = |meta: &redb::Table<&str, u64>, name: &str| -> Result<u64, redb::Error> {
                    Ok(meta.get(name)?.map_or(0, |v| v.value()))
                };
                let stamp = get(&meta, "clock")?.saturating_add(1);
                let mut vector_bytes = get(&meta, "vector_bytes")?;
                for (key, vector) in entries {
                    let encoded = crate::records::encode_vector(vector);
                    if let Some(old) = vectors.insert(key, encoded.as_slice())? {
                        vector_bytes = vector_bytes.saturating_sub(old.value().len() as u64);
                    }
                    vector_bytes = vector_bytes.saturating_add(encoded.len() as u64);
                    restamp(&mut used, &mut order, key, stamp)?;
                }
                for key in touched {
                    if vectors.get(key)?.is_some() {
                        restamp(&mut used, &mut order, key, stamp)?;
                    }
                }
                let (lookups, hits) = (get(&meta, "lookups")?, get(&meta, "hits")?);
                meta.insert("clock", stamp)?;
                meta.insert("lookups", lookups.saturating_add(counted.lookups))?;
                meta.insert("hits", hits.saturating_add(counted.hits))?;
                meta.insert("vector_bytes", vector_bytes)?;
            }
            evict_in(&txn, max_bytes, evict_at_most)?;
            txn.commit()?;
            Ok(true)
        });
        if written == Some(true) {
            // Said again should it fail again: a service runs for weeks.
            self.warned.store(false, Ordering::Relaxed);
            return;
        }
        let mut pending = lock(&self.pending);
        pending.lookups = pending.lookups.saturating_add(counted.lookups);
        pending.hits = pending.hits.saturating_add(counted.hits);
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

/// The vectors kept under `keys` (each `None` where there is none usable).
fn lookup(db: &Database, keys: &[Key], dimension: usize) -> Result<Vec<Option<Vec<f32>>>, redb::Error> {
    let txn = db.begin_read()?;
    let Some(vectors) = open_read(&txn, VECTORS)? else { return Ok(vec![None; keys.len()]) };
    keys.iter().map(|key| Ok(vectors.get(key)?.and_then(|bytes| decode(bytes.value(), dimension)))).collect()
}

/// A write transaction on `db`, waiting at most `wait` for other writers;
/// `None` when they held it longer.
fn begin_write(db: &Database, wait: Duration) -> Result<Option<redb::WriteTransaction>, redb::Error> {
    let until = Instant::now() + wait;
    loop {
        match db.try_begin_write() {
            Ok(txn) => return Ok(Some(txn)),
            Err(redb::TransactionError::WouldBlock) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(redb::TransactionError::WouldBlock) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Stamps `key` as used at `stamp`, moving it in the eviction order.
fn restamp(
    used: &mut redb::Table<&Key, u64>,
    order: &mut redb::Table<(u64, &Key), ()>,
    key: &Key,
    stamp: u64,
) -> Result<(), redb::Error> {
    if let Some(old) = used.insert(key, stamp)? {
        let old = old.value();
        order.remove((old, key))?;
    }
    order.insert((stamp, key), ())?;
    Ok(())
}

/// Removes the least recently used entries, oldest stamp first, until their
/// bytes are at most `target` or `at_most` went; how many went.
fn evict_in(txn: &redb::WriteTransaction, target: u64, at_most: u64) -> Result<u64, redb::Error> {
    let mut vectors = txn.open_table(VECTORS)?;
    let mut meta = txn.open_table(META)?;
    let mut vector_bytes = meta.get("vector_bytes")?.map_or(0, |v| v.value());
    let mut entries = vectors.len()?;
    if in_use(vector_bytes, entries) <= target {
        return Ok(0);
    }
    let mut used = txn.open_table(USED)?;
    let mut order = txn.open_table(ORDER)?;
    let mut removed = 0;
    while removed < at_most && in_use(vector_bytes, entries) > target {
        let Some(key) = order.pop_first()?.map(|(k, _)| *k.value().1) else { break };
        used.remove(&key)?;
        if let Some(old) = vectors.remove(&key)? {
            vector_bytes = vector_bytes.saturating_sub(old.value().len() as u64);
            entries = entries.saturating_sub(1);
            removed += 1;
        }
    }
    meta.insert("vector_bytes", vector_bytes)?;
    Ok(removed)
}

/// What the cache file in `dir` holds, read through a read-only handle:
/// `None` when there is no file.
fn read_stats(dir: &Path) -> Result<Option<Stats>, CacheError> {
    if !dir.is_absolute() {
        return Err(CacheError::Relative { path: dir.to_path_buf() });
    }
    let folder = match cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority()) {
        Ok(folder) => folder,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(dir, e)),
    };
    let path = file::path_in(dir);
    let Some((file, _)) = file::open(&folder, &path, file::Access::Read)? else { return Ok(None) };
    let opened = guarded(&path, || {
        let backend = redb::backends::FileBackend::new(file).map_err(|e| redb_error(&path, e))?;
        Ok(redb::Builder::new()
            .set_cache_size(PAGE_CACHE_BYTES)
            .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
            .open_read_only_with_backend(backend))
    })?;
    let stats = match opened {
        Ok(db) => stats_of(&db, &path)?,
        // A process killed in a write left it for redb to repair, which only a writer's
        // handle does: redb's own recovery, as the next index's open would run it; nothing
        // is made, removed or started afresh here.
        Err(redb::DatabaseError::RepairAborted) => {
            let Some((file, _)) = file::open(&folder, &path, file::Access::Write)? else { return Ok(None) };
            stats_of(&connect(file, &path)?, &path)?
        }
        Err(e) => return Err(database_error(&path, e)),
    };
    let file_bytes = folder.symlink_metadata(CACHE_FILE).map_or(0, |m| crate::platform::disk_bytes(&m));
    Ok(Some(Stats { file_bytes, ..stats }))
}

/// What the open cache file at `path` holds (its file size left at 0).
fn stats_of(db: &impl ReadableDatabase, path: &Path) -> Result<Stats, CacheError> {
    guarded(path, || {
        let txn = db.begin_read().map_err(|e| redb_error(path, e))?;
        check_format_of(read_meta_opt(&txn, "format", path)?, path)?;
        let meta = |name: &str| read_meta(&txn, name, path);
        let entries = match open_read(&txn, VECTORS).map_err(|e| redb_error(path, e))? {
            Some(vectors) => vectors.len().map_err(|e| redb_error(path, e))?,
            None => 0,
        };
        Ok(Stats {
            path: path.to_path_buf(),
            exists: true,
            entries,
            bytes: in_use(meta("vector_bytes")?, entries),
            file_bytes: 0,
            max_bytes: 0,
            lookups: meta("lookups")?,
            hits: meta("hits")?,
        })
    })
}

/// Whether a file of `format` (`None`: not recorded yet) is one this ragbox
/// uses: an older one is damaged for it (started afresh), a newer one not its own.
fn check_format_of(format: Option<u64>, path: &Path) -> Result<(), CacheError> {
    match format {
        None | Some(FORMAT) => Ok(()),
        Some(newer) if newer > FORMAT => {
            Err(CacheError::NotOurs { path: path.to_path_buf(), what: format!("cache format {newer}") })
        }
        Some(older) => Err(CacheError::Corrupt { path: path.to_path_buf(), message: format!("format {older}") }),
    }
}

impl Opened {
    /// The cache file in `dir`, opened in redb's multi-writer mode (made when
    /// missing and `create`; `None` when missing otherwise). A damaged file
    /// or one of an older format is started afresh, once; one of a newer
    /// ragbox is left as it is.
    fn open(dir: &Path, create: bool) -> Result<Option<Self>, CacheError> {
        if !dir.is_absolute() {
            return Err(CacheError::Relative { path: dir.to_path_buf() });
        }
        let folder = match file::folder(dir) {
            Err(CacheError::Io { source, .. }) if !create && source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None);
            }
            other => other?,
        };
        let path = file::path_in(dir);
        let access = if create { file::Access::Create } else { file::Access::Write };
        for attempt in 0..2 {
            let Some((file, id)) = file::open(&folder, &path, access)? else { return Ok(None) };
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

    /// Records the format in a new file; refuses a file of another one.
    fn check_format(&self) -> Result<(), CacheError> {
        let path = &self.path;
        guarded(path, || {
            let txn = self.db.begin_read().map_err(|e| redb_error(path, e))?;
            let format = read_meta_opt(&txn, "format", path)?;
            check_format_of(format, path)?;
            if format.is_some() {
                return Ok(());
            }
            drop(txn);
            let Some(txn) = begin_write(&self.db, LOCK_WAIT).map_err(|e| redb_error(path, e))? else {
                return Err(CacheError::Locked { path: path.clone() });
            };
            {
                let mut meta = txn.open_table(META).map_err(|e| redb_error(path, e))?;
                let format = meta.get("format").map_err(|e| redb_error(path, e))?.map(|v| v.value());
                check_format_of(format, path)?;
                if format.is_none() {
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

/// Opens the database on `file` in redb's multi-writer mode.
fn connect(file: std::fs::File, path: &Path) -> Result<Database, CacheError> {
    guarded(path, || {
        let backend = redb::backends::FileBackend::new(file).map_err(|e| redb_error(path, e))?;
        redb::Builder::new()
            .set_cache_size(PAGE_CACHE_BYTES)
            .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
            .create_with_backend(backend)
            .map_err(|e| database_error(path, e))
    })
}

/// Sorts an error of opening the database into what the cache does about it.
fn database_error(path: &Path, e: redb::DatabaseError) -> CacheError {
    let not_ours = |what: String| CacheError::NotOurs { path: path.to_path_buf(), what };
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => CacheError::Busy { path: path.to_path_buf() },
        // Another redb's file or locks: its writer may still use it.
        redb::DatabaseError::UpgradeRequired(version) => not_ours(format!("redb file format {version}")),
        redb::DatabaseError::LockProtocolMismatch => not_ours("another redb locking protocol".into()),
        // redb says a file format newer than its own only in this message.
        redb::DatabaseError::Storage(redb::StorageError::Corrupted(message))
            if message.starts_with("Expected file format version") =>
        {
            not_ours(message)
        }
        // redb reports a file that is not a redb database as InvalidData.
        redb::DatabaseError::Storage(redb::StorageError::Io(e)) if e.kind() != std::io::ErrorKind::InvalidData => {
            io(path, e)
        }
        e => CacheError::Corrupt { path: path.to_path_buf(), message: e.to_string() },
    }
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
        redb::Error::UpgradeRequired(version) => {
            CacheError::NotOurs { path: path.to_path_buf(), what: format!("redb file format {version}") }
        }
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
/// one of `dimension` finite values of unit length, as the model makes them:
/// the one check for this user's cache and the team's table alike (a long
/// vector would outscore every other).
pub(crate) fn decode(bytes: &[u8], dimension: usize) -> Option<Vec<f32>> {
    if bytes.len() != dimension * 4 {
        return None;
    }
    let vector = crate::records::decode_vector(bytes);
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    (vector.iter().all(|x| x.is_finite()) && (norm - 1.0).abs() <= UNIT_SLACK).then_some(vector)
}

/// The bytes `entries` entries whose vectors take `vector_bytes` count for
/// against the cap (their keys, stamps and share of the B-trees included).
fn in_use(vector_bytes: u64, entries: u64) -> u64 {
    vector_bytes.saturating_add(entries.saturating_mul(ENTRY_OVERHEAD))
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
        let v = [0.5f32; 4];
        for n in 0..10 {
            c.put(&[(key(n), &v)]);
        }
        // Key 0 was kept first, then used: key 1 is now the one used longest ago.
        assert_eq!(c.get(&[key(0)], 4), vec![Some(v.to_vec())]);
        c.put(&[(key(10), &v)]);
        let found = c.get(&(0..=10).map(key).collect::<Vec<_>>(), 4);
        assert_eq!(found[1], None, "the least recently used went first");
        assert_eq!(found[0], Some(v.to_vec()), "a used entry stays");
        assert!(found[2..].iter().all(Option::is_some), "only one went: {found:?}");
        let stats = c.stats().unwrap();
        assert!(stats.bytes <= per * 10, "{stats:?}");
        assert_eq!(stats.entries, 10);
    }

    #[test]
    fn a_write_in_progress_elsewhere_never_holds_a_lookup_up() {
        let dir = tempfile::tempdir().unwrap();
        let c = Arc::new(cache(dir.path(), 1 << 30));
        c.put(&[(key(1), &[1.0, 0.0])]);
        // A writer that never ends (as a stopped process would be) holds the file.
        let opened = c.inner.opened(true).unwrap();
        let held = opened.db.begin_write().unwrap();
        let (done, finished) = mpsc::channel();
        let theirs = c.clone();
        std::thread::spawn(move || {
            let found = theirs.get(&[key(1)], 2);
            theirs.put(&[(key(2), &[0.0, 1.0])]);
            done.send(found).unwrap();
        });
        let found = finished.recv_timeout(Duration::from_secs(10)).expect("a lookup waited on another's write");
        assert_eq!(found, vec![Some(vec![1.0, 0.0])], "a read does not need the writer");
        drop(held);
    }

    #[test]
    fn a_file_of_a_newer_format_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path(), 1 << 30);
        c.put(&[(key(1), &[1.0, 0.0])]);
        {
            let opened = c.inner.opened(true).unwrap();
            let txn = opened.db.begin_write().unwrap();
            txn.open_table(META).unwrap().insert("format", FORMAT + 1).unwrap();
            txn.commit().unwrap();
        }
        drop(c);
        let c = cache(dir.path(), 1 << 30);
        assert_eq!(c.get(&[key(1)], 2), vec![None]);
        c.put(&[(key(2), &[1.0, 0.0])]);
        let e = c.stats().unwrap_err().to_string();
        assert!(e.contains("newer ragbox"), "{e}");
        assert!(dir.path().join(CACHE_FILE).exists(), "another version's cache is never removed");
    }

    #[test]
    fn showing_a_damaged_file_leaves_it_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = vec![0x5a; 64 << 10];
        std::fs::write(dir.path().join(CACHE_FILE), &garbage).unwrap();
        assert!(cache(dir.path(), 1 << 30).stats().is_err());
        assert_eq!(std::fs::read(dir.path().join(CACHE_FILE)).unwrap(), garbage, "stats only reads");
    }

    #[test]
    fn a_relative_folder_is_refused_with_the_fix() {
        let c = cache(Path::new("relative/cache"), 1 << 30);
        assert_eq!(c.get(&[key(1)], 2), vec![None]);
        let e = c.stats().unwrap_err().to_string();
        assert!(e.contains("not an absolute path"), "{e}");
        assert!(!Path::new("relative").exists(), "nothing made beside the process");
    }

    #[test]
    fn only_unit_vectors_of_the_length_asked_are_taken() {
        let bytes = crate::records::encode_vector;
        assert_eq!(decode(&bytes(&[0.6, 0.8]), 2), Some(vec![0.6, 0.8]));
        assert_eq!(decode(&bytes(&[0.6, 0.8]), 3), None, "another length");
        assert_eq!(decode(&bytes(&[6.0, 8.0]), 2), None, "a long vector would outscore every other");
        assert_eq!(decode(&bytes(&[f32::NAN, 1.0]), 2), None);
        assert_eq!(decode(&[1, 2, 3], 1), None);
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
        let e = Opened::open(dir.path(), true).err().unwrap().to_string();
        assert!(e.contains("is a symbolic link") && e.contains("rm "), "{e}");
        assert_eq!(c.get(&[key(1)], 1), vec![None], "a link is not read through");
    }
}
