//! The store: redb, the source of truth for documents, chunks and vectors.
//!
//! Several processes share one workspace (two agents' servers and a CLI):
//! each opens the file in redb's multi-writer mode, so all of them read and
//! write it side by side (one write transaction at a time, the others'
//! commits seen by the next read). Within a process every handle shares one
//! open database, which a server keeps open between calls
//! ([`Keep::BetweenCalls`]; [`close_kept`] closes it once the process is
//! idle, or ending: the registry of open files is the process's, as redb
//! opens a file once per process): redb's open and close write and sync the file five times, most of a
//! keyword search's time. A process that shuts others out
//! (an older ragbox) is waited for. After a SIGKILL mid-write the next open
//! repairs in about 0.1 s with every committed transaction intact. Each document is written in one
//! transaction (record, chunks and vectors together), so a crash leaves
//! either its old or its new version.
//!
//! Every change bumps the store's generation and logs which path it touched,
//! so the derived indexes (vectors, fulltext) catch up by reading only what
//! changed since the generation they reflect (see [`Store::delta`]).
//!
//! What it keeps (records, counts, deltas) and its errors are the types both
//! backends share, in [`crate::records`].

mod records;

use crate::records::{
    ChunkRecord, Delta, DocumentRecord, NewDocument, Snapshot, Stats, StoreError, TextDelta, check_document,
    decode_vector, encode_vector, same_model,
};

use crate::datadir::DataDir;
pub use crate::datadir::STORE_FILE;
use crate::platform::FileId;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How many times this process has opened a store file so far.
pub fn opens() -> u64 {
    let open = crate::sync::lock(&OPEN);
    open.as_ref().map_or(0, |o| o.values().map(|e| e.count).sum())
}

/// Whether a store file stays open once no handle uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keep {
    /// Closed when its last handle is dropped, as a clean shutdown (a short
    /// command's; a store left open at exit is repaired by the next open).
    #[default]
    UntilDropped,
    /// Kept open between calls until [`close_kept`] (a long-lived server's):
    /// redb's open and close write and sync the file five times.
    BetweenCalls,
}

/// Closes the stores this process keeps open between calls (once idle:
/// their caches go; the next call opens the file again).
pub fn close_kept() {
    let kept: Vec<Arc<Database>> = {
        let mut open = crate::sync::lock(&OPEN);
        open.iter_mut().flat_map(|o| o.values_mut()).filter_map(|e| e.kept.take().map(|(db, _)| db)).collect()
    };
    // Closing writes redb's clean-shutdown state: outside the registry's lock.
    drop(kept);
}

/// Bumped when the tables change shape; an older store asks for a rebuild.
pub const SCHEMA_VERSION: u64 = 2;

/// redb's page cache per open store. Its default (1 GiB) keeps every page a
/// full read touches: reading 100,000 vectors for an index build held 300 MB
/// more than the vectors. The index keeps what it needs in its own form, and
/// a search reads a few pages, so a small cache costs no speed here.
const CACHE_BYTES: usize = 32 << 20;

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const MODEL: TableDefinition<&str, &str> = TableDefinition::new("model");
const DOC_IDS: TableDefinition<&str, u64> = TableDefinition::new("doc_ids");
const DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("documents");
const CHUNKS: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("chunks");
const VECTORS: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("vectors");
/// generation → the path that change touched.
const CHANGES: TableDefinition<u64, &str> = TableDefinition::new("changes");

/// A handle on the store file; cheap to clone. A plain handle holds no lock
/// between operations; a held one ([`Store::hold`]) keeps the file open.
#[derive(Clone)]
pub struct Store {
    path: PathBuf,
    data: Arc<DataDir>,
    wait: Duration,
    held: Option<Arc<Database>>,
    keep: Keep,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).field("held", &self.held.is_some()).finish()
    }
}

/// The databases this process has open, by file, and how often each file was
/// opened: every handle in the process shares one, as redb opens a file once
/// per process (so this is the process's by nature, not a switch). A process
/// serves few workspaces: entries stay.
static OPEN: Mutex<Option<HashMap<PathBuf, Opened>>> = Mutex::new(None);

/// One store file's database in this process.
#[derive(Default)]
struct Opened {
    /// The database while any handle uses it.
    using: Weak<Database>,
    /// The database kept open between calls, and the file it was opened on.
    /// Opening and closing a redb file writes and syncs it five times
    /// (measured: most of a keyword search's time), and with every process in
    /// redb's multi-writer mode, keeping it open shuts no other process out.
    kept: Option<(Arc<Database>, FileId)>,
    /// Opens so far.
    count: u64,
}

impl Store {
    /// Opens (creating if needed) the store in `data`, checking its schema;
    /// the file stays open as `keep` says.
    pub fn open(data: &Arc<DataDir>, keep: Keep) -> Result<Self, StoreError> {
        let path = data.path().join(STORE_FILE);
        let store = Self { path, data: data.clone(), wait: Duration::from_secs(30), held: None, keep };
        // Read first: a write transaction commits (and syncs the file) even when
        // it changes nothing, and every tool call opens the store.
        let found = store.read(|txn| get(txn, META, "schema_version", &store))?;
        match found {
            Some(v) if v == SCHEMA_VERSION => return Ok(store),
            Some(v) => return Err(StoreError::Schema { path: store.path.clone(), found: v, expected: SCHEMA_VERSION }),
            None => {}
        }
        store.write(|txn| {
            let mut meta = txn.open_table(META).map_err(|e| store.err(e))?;
            let found = meta.get("schema_version").map_err(|e| store.err(e))?.map(|v| v.value());
            match found {
                None => {
                    meta.insert("schema_version", SCHEMA_VERSION).map_err(|e| store.err(e))?;
                }
                Some(v) if v != SCHEMA_VERSION => {
                    return Err(StoreError::Schema { path: store.path.clone(), found: v, expected: SCHEMA_VERSION });
                }
                Some(_) => {}
            }
            Ok(())
        })?;
        Ok(store)
    }

    /// The store in the folder `dir` (made when missing), its stamps made and
    /// checked with `key`: for tools and tests that keep an index outside
    /// any workspace.
    pub fn open_at(
        dir: &std::path::Path,
        key: Arc<crate::datadir::owner::Key>,
        keep: Keep,
    ) -> Result<Self, StoreError> {
        Self::open(&Arc::new(DataDir::at(dir, key)?), keep)
    }

    /// Opens the store in `data` if one was ever created there (and is this
    /// user's); `None` otherwise (reading tools then see an empty index
    /// without creating files).
    pub fn open_existing(data: &Arc<DataDir>, keep: Keep) -> Result<Option<Self>, StoreError> {
        if data.store_file_id()?.is_none() {
            return Ok(None);
        }
        Self::open(data, keep).map(Some)
    }

    /// How many times this process has opened this store's file.
    pub fn times_opened(&self) -> u64 {
        let open = crate::sync::lock(&OPEN);
        open.as_ref().and_then(|o| o.get(&self.path)).map_or(0, |e| e.count)
    }

    /// This store kept open: operations on the returned handle (and on every
    /// other handle in this process) use one open database until it is
    /// dropped, even a file replaced meanwhile (a call sees one store).
    pub fn hold(&self) -> Result<Self, StoreError> {
        Ok(Self { held: Some(self.database()?), ..self.clone() })
    }

    /// Writes `doc` with its chunks and vectors in one transaction, replacing
    /// any earlier version; returns the new generation.
    pub fn put_document(&self, doc: &NewDocument) -> Result<u64, StoreError> {
        self.put_documents(std::slice::from_ref(doc))
    }

    /// Writes every one of `docs` in one transaction (all or none), each
    /// replacing any earlier version; returns the new generation. One commit
    /// for many small documents instead of one each.
    pub fn put_documents(&self, docs: &[NewDocument]) -> Result<u64, StoreError> {
        for doc in docs {
            check_document(doc)?;
        }
        if docs.is_empty() {
            return self.generation();
        }
        // Documents stored for keyword search only carry no vectors to check.
        let model = docs.iter().rev().find(|d| !d.keyword_only()).map(|d| d.record.model_id.as_str());
        self.write(|txn| {
            if let Some(model) = model {
                self.check_model(txn, model)?;
            }
            let mut generation = 0;
            for doc in docs {
                generation = self.put_in(txn, doc)?;
            }
            Ok(generation)
        })
    }

    fn put_in(&self, txn: &redb::WriteTransaction, doc: &NewDocument) -> Result<u64, StoreError> {
        let mut ids = txn.open_table(DOC_IDS).map_err(|e| self.err(e))?;
        let existing = ids.get(doc.record.path.as_str()).map_err(|e| self.err(e))?.map(|v| v.value());
        let id = match existing {
            Some(id) => {
                remove_chunks(txn, id, self)?;
                id
            }
            None => {
                let id = bump(txn, "next_doc_id", self)?;
                ids.insert(doc.record.path.as_str(), id).map_err(|e| self.err(e))?;
                id
            }
        };
        let mut record = doc.record.clone();
        record.chunks = doc.chunks.len() as u32;
        if doc.keyword_only() {
            // No vectors, so no model made them: this is what marks it not embedded yet.
            record.model_id.clear();
        }
        txn.open_table(DOCS)
            .map_err(|e| self.err(e))?
            .insert(id, record.encode().as_slice())
            .map_err(|e| self.err(e))?;
        let mut chunks = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
        let mut vectors = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
        for (ordinal, chunk) in doc.chunks.iter().enumerate() {
            let key = (id, ordinal as u32);
            chunks.insert(key, chunk.record.encode().as_slice()).map_err(|e| self.err(e))?;
            if !chunk.vector.is_empty() {
                vectors.insert(key, encode_vector(&chunk.vector).as_slice()).map_err(|e| self.err(e))?;
            }
        }
        log_change(txn, &doc.record.path, self)
    }

    /// Removes the document at `path` and its chunks; false when it was not stored.
    pub fn remove_document(&self, path: &str) -> Result<bool, StoreError> {
        self.write(|txn| {
            let mut ids = txn.open_table(DOC_IDS).map_err(|e| self.err(e))?;
            let Some(id) = ids.remove(path).map_err(|e| self.err(e))?.map(|v| v.value()) else {
                return Ok(false);
            };
            txn.open_table(DOCS).map_err(|e| self.err(e))?.remove(id).map_err(|e| self.err(e))?;
            remove_chunks(txn, id, self)?;
            log_change(txn, path, self)?;
            Ok(true)
        })
    }

    /// The record of the document at `path`.
    pub fn document(&self, path: &str) -> Result<Option<DocumentRecord>, StoreError> {
        self.read(|txn| {
            let Some(id) = get(txn, DOC_IDS, path, self)? else { return Ok(None) };
            let bytes = get_bytes(txn, DOCS, id, self)?;
            bytes.map(|b| DocumentRecord::decode(&b).map_err(|m| self.corrupt(m))).transpose()
        })
    }

    /// Up to `limit` document records in path order, after the path `after`
    /// (from the first when `None`).
    pub fn documents_after(&self, after: Option<&str>, limit: usize) -> Result<Vec<DocumentRecord>, StoreError> {
        self.read(|txn| {
            let (Some(ids), Some(docs)) = (open_read(txn, DOC_IDS, self)?, open_read(txn, DOCS, self)?) else {
                return Ok(Vec::new());
            };
            let range = match after {
                Some(after) => ids.range::<&str>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded)),
                None => ids.range::<&str>(..),
            };
            let mut out = Vec::new();
            for item in range.map_err(|e| self.err(e))?.take(limit) {
                let (_, id) = item.map_err(|e| self.err(e))?;
                let Some(bytes) = docs.get(id.value()).map_err(|e| self.err(e))? else { continue };
                out.push(DocumentRecord::decode(bytes.value()).map_err(|m| self.corrupt(m))?);
            }
            Ok(out)
        })
    }

    /// Every document record, in path order.
    pub fn documents(&self) -> Result<Vec<DocumentRecord>, StoreError> {
        self.read(|txn| {
            let Some(docs) = open_read(txn, DOCS, self)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for item in docs.iter().map_err(|e| self.err(e))? {
                let (_, bytes) = item.map_err(|e| self.err(e))?;
                out.push(DocumentRecord::decode(bytes.value()).map_err(|m| self.corrupt(m))?);
            }
            out.sort_by(|a, b| a.path.cmp(&b.path));
            Ok(out)
        })
    }

    /// The chunks of the document at `path`, in order, with their vectors
    /// (empty for a document stored for keyword search only).
    pub fn chunks(&self, path: &str) -> Result<Vec<(ChunkRecord, Vec<f32>)>, StoreError> {
        self.read(|txn| {
            let Some(id) = get(txn, DOC_IDS, path, self)? else { return Ok(Vec::new()) };
            let Some(chunks) = open_read(txn, CHUNKS, self)? else { return Ok(Vec::new()) };
            let embedded = match get_bytes(txn, DOCS, id, self)? {
                Some(bytes) => DocumentRecord::decode(&bytes).map_err(|m| self.corrupt(m))?.embedded(),
                None => true,
            };
            let vectors = open_read(txn, VECTORS, self)?;
            let mut out = Vec::new();
            for item in chunks.range((id, 0)..=(id, u32::MAX)).map_err(|e| self.err(e))? {
                let (key, bytes) = item.map_err(|e| self.err(e))?;
                let record = ChunkRecord::decode(bytes.value()).map_err(|m| self.corrupt(m))?;
                let vector = match &vectors {
                    Some(vectors) => {
                        vectors.get(key.value()).map_err(|e| self.err(e))?.map(|v| decode_vector(v.value()))
                    }
                    None => None,
                };
                let vector = match vector {
                    Some(vector) => vector,
                    None if !embedded => Vec::new(),
                    None => return Err(self.corrupt(format!("chunk {:?} has no vector", key.value()))),
                };
                out.push((record, vector));
            }
            Ok(out)
        })
    }

    /// Every document with its chunk vectors, at one generation.
    pub fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.vector_delta(0)
    }

    /// What the vector index needs to go from generation `since` to now.
    pub fn vector_delta(&self, since: u64) -> Result<Snapshot, StoreError> {
        self.delta(since, Some(VECTORS), |bytes| Ok(decode_vector(bytes)))
    }

    /// What the fulltext index needs to go from generation `since` to now.
    pub fn text_delta(&self, since: u64) -> Result<TextDelta, StoreError> {
        self.delta(since, Some(CHUNKS), |bytes| ChunkRecord::decode(bytes).map_err(|m| self.corrupt(m)))
    }

    /// The document records changed since generation `since`, without their chunks.
    pub fn document_delta(&self, since: u64) -> Result<Delta<()>, StoreError> {
        self.delta(since, None, |_| Ok(()))
    }

    /// The store generation: bumped by every committed change.
    pub fn generation(&self) -> Result<u64, StoreError> {
        self.read(|txn| Ok(get(txn, META, "generation", self)?.unwrap_or(0)))
    }

    /// The chunks at `keys` (path, ordinal), in one transaction; `None` where gone.
    pub fn chunk_records(&self, keys: &[(&str, u32)]) -> Result<Vec<Option<ChunkRecord>>, StoreError> {
        self.read(|txn| {
            let (Some(ids), Some(chunks)) = (open_read(txn, DOC_IDS, self)?, open_read(txn, CHUNKS, self)?) else {
                return Ok(vec![None; keys.len()]);
            };
            let mut out = Vec::with_capacity(keys.len());
            for (path, ordinal) in keys {
                let Some(id) = ids.get(*path).map_err(|e| self.err(e))?.map(|v| v.value()) else {
                    out.push(None);
                    continue;
                };
                let row = chunks.get((id, *ordinal)).map_err(|e| self.err(e))?;
                out.push(row.map(|b| ChunkRecord::decode(b.value()).map_err(|m| self.corrupt(m))).transpose()?);
            }
            Ok(out)
        })
    }

    /// The vectors of the chunks at `keys` (path, ordinal), in one transaction; `None` where gone.
    pub fn vectors(&self, keys: &[(&str, u32)]) -> Result<Vec<Option<Vec<f32>>>, StoreError> {
        self.read(|txn| {
            let (Some(ids), Some(vectors)) = (open_read(txn, DOC_IDS, self)?, open_read(txn, VECTORS, self)?) else {
                return Ok(vec![None; keys.len()]);
            };
            let mut out = Vec::with_capacity(keys.len());
            let mut last: Option<(&str, Option<u64>)> = None;
            for (path, ordinal) in keys {
                // Keys often repeat a path (a document's chunks): look it up once.
                let id = match last {
                    Some((p, id)) if p == *path => id,
                    _ => ids.get(*path).map_err(|e| self.err(e))?.map(|v| v.value()),
                };
                last = Some((path, id));
                let Some(id) = id else {
                    out.push(None);
                    continue;
                };
                let row = vectors.get((id, *ordinal)).map_err(|e| self.err(e))?;
                out.push(row.map(|b| decode_vector(b.value())));
            }
            Ok(out)
        })
    }

    /// Reads what changed after generation `since` (everything when `since`
    /// is 0, ahead of the store, or older than the change log reaches).
    fn delta<V>(
        &self,
        since: u64,
        table: Option<TableDefinition<(u64, u32), &[u8]>>,
        decode: impl Fn(&[u8]) -> Result<V, StoreError>,
    ) -> Result<Delta<V>, StoreError> {
        self.read(|txn| {
            let generation = get(txn, META, "generation", self)?.unwrap_or(0);
            let mut delta = Delta { generation, full: false, documents: Vec::new(), removed: Vec::new() };
            if since == generation {
                return Ok(delta);
            }
            let changed = match (since, open_read(txn, CHANGES, self)?) {
                (1.., Some(log)) if since < generation => {
                    let first = log.first().map_err(|e| self.err(e))?.map(|(k, _)| k.value());
                    if first.is_some_and(|f| f <= since + 1) {
                        let mut paths = std::collections::BTreeSet::new();
                        for item in log.range(since + 1..).map_err(|e| self.err(e))? {
                            paths.insert(item.map_err(|e| self.err(e))?.1.value().to_string());
                        }
                        Some(paths)
                    } else {
                        None
                    }
                }
                _ => None,
            };
            let Some(changed) = changed else {
                delta.full = true;
                delta.documents = self.per_document(txn, table, None, &decode)?;
                return Ok(delta);
            };
            let ids = open_read(txn, DOC_IDS, self)?;
            let mut present = Vec::new();
            for path in changed {
                let id = match &ids {
                    Some(ids) => ids.get(path.as_str()).map_err(|e| self.err(e))?.map(|v| v.value()),
                    None => None,
                };
                match id {
                    Some(id) => present.push(id),
                    None => delta.removed.push(path),
                }
            }
            delta.documents = self.per_document(txn, table, Some(&present), &decode)?;
            Ok(delta)
        })
    }

    /// Documents (all, or those with the given ids) with one decoded row per
    /// chunk from `table` (none without one), in chunk order.
    fn per_document<V>(
        &self,
        txn: &redb::ReadTransaction,
        table: Option<TableDefinition<(u64, u32), &[u8]>>,
        only: Option<&[u64]>,
        decode: &impl Fn(&[u8]) -> Result<V, StoreError>,
    ) -> Result<Vec<(DocumentRecord, Vec<V>)>, StoreError> {
        let Some(docs) = open_read(txn, DOCS, self)? else { return Ok(Vec::new()) };
        let rows = match table {
            Some(table) => match open_read(txn, table, self)? {
                Some(rows) => Some(rows),
                None => return Ok(Vec::new()),
            },
            None => None,
        };
        let read_one = |id: u64, bytes: &[u8]| -> Result<(DocumentRecord, Vec<V>), StoreError> {
            let record = DocumentRecord::decode(bytes).map_err(|m| self.corrupt(m))?;
            let mut values = Vec::new();
            if let Some(rows) = &rows {
                values.reserve(record.chunks as usize);
                for row in rows.range((id, 0)..=(id, u32::MAX)).map_err(|e| self.err(e))? {
                    values.push(decode(row.map_err(|e| self.err(e))?.1.value())?);
                }
            }
            Ok((record, values))
        };
        let mut out = Vec::new();
        match only {
            Some(ids) => {
                for &id in ids {
                    if let Some(bytes) = docs.get(id).map_err(|e| self.err(e))? {
                        out.push(read_one(id, bytes.value())?);
                    }
                }
            }
            None => {
                for item in docs.iter().map_err(|e| self.err(e))? {
                    let (id, bytes) = item.map_err(|e| self.err(e))?;
                    out.push(read_one(id.value(), bytes.value())?);
                }
            }
        }
        Ok(out)
    }

    /// Counts, generation and model id.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        self.read(|txn| {
            let documents = table_len(txn, DOCS, self)?;
            let chunks = table_len(txn, CHUNKS, self)?;
            let generation = get(txn, META, "generation", self)?.unwrap_or(0);
            let model_id = match open_read(txn, MODEL, self)? {
                Some(t) => t.get("id").map_err(|e| self.err(e))?.map(|v| v.value().to_string()),
                None => None,
            };
            Ok(Stats { documents, chunks, generation, model_id })
        })
    }

    /// Runs `f` in a write transaction and commits it.
    fn write<T>(&self, f: impl FnOnce(&redb::WriteTransaction) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let db = self.database()?;
        self.guarded(|| {
            let txn = db.begin_write().map_err(|e| self.err(e))?;
            let value = f(&txn)?;
            txn.commit().map_err(|e| self.err(e))?;
            Ok(value)
        })
    }

    /// Runs `f` in a read transaction.
    fn read<T>(&self, f: impl FnOnce(&redb::ReadTransaction) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let db = self.database()?;
        self.guarded(|| {
            let txn = db.begin_read().map_err(|e| self.err(e))?;
            f(&txn)
        })
    }

    /// Runs `f`, reporting a panic inside redb (a page it cannot make sense
    /// of) as a damaged store instead of taking the process down.
    fn guarded<T>(&self, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        quiet_panics(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)))
            .unwrap_or_else(|panic| Err(self.corrupt(panic_message(&panic))))
    }

    /// The open database: this handle's, another handle's in this process, or
    /// a fresh open (closed again when the last handle using it lets go).
    fn database(&self) -> Result<Arc<Database>, StoreError> {
        if let Some(db) = &self.held {
            return Ok(db.clone());
        }
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            {
                // One attempt at a time under the registry's lock, so the process opens the file
                // once; the waits for another process happen outside it.
                let mut open = crate::sync::lock(&OPEN);
                let entry = open.get_or_insert_with(HashMap::new).entry(self.path.clone()).or_default();
                if let Some(db) = entry.using.upgrade() {
                    return Ok(db);
                }
                if let Some((db, opened_on)) = entry.kept.take() {
                    // Only while the file there is still the one it was opened on (and
                    // ours): a store deleted or replaced since is opened anew.
                    if self.data.store_file_id()? == Some(opened_on) {
                        entry.using = Arc::downgrade(&db);
                        entry.kept = Some((db.clone(), opened_on));
                        return Ok(db);
                    }
                }
                if let Some((db, opened_on)) = self.try_connect()? {
                    let db = Arc::new(db);
                    entry.using = Arc::downgrade(&db);
                    if self.keep == Keep::BetweenCalls {
                        entry.kept = Some((db.clone(), opened_on));
                    }
                    entry.count += 1;
                    return Ok(db);
                }
            }
            if started.elapsed() >= self.wait {
                return Err(StoreError::Busy(self.path.clone()));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Opens the database, with the identity of its file; `None` while a
    /// process that shuts others out (an older ragbox) holds it.
    fn try_connect(&self) -> Result<Option<(Database, FileId)>, StoreError> {
        let vanished = || StoreError::Io { path: self.path.clone(), source: std::io::ErrorKind::NotFound.into() };
        let (file, id) = self.data.store_file(true)?.ok_or_else(vanished)?;
        // A damaged file must not take the process down: redb is not
        // written to survive every byte a disk (or a person) can leave there.
        let opened = quiet_panics(|| {
            std::panic::catch_unwind(move || {
                let backend = redb::backends::FileBackend::new(file)?;
                redb::Builder::new()
                    .set_cache_size(CACHE_BYTES)
                    .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
                    .create_with_backend(backend)
            })
        });
        let opened = opened.map_err(|panic| self.corrupt(panic_message(&panic)))?;
        match opened {
            Ok(db) => Ok(Some((db, id))),
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => Ok(None),
            // redb reports a file that is not a redb database as InvalidData.
            Err(redb::DatabaseError::Storage(redb::StorageError::Io(e)))
                if e.kind() != std::io::ErrorKind::InvalidData =>
            {
                Err(StoreError::Io { path: self.path.clone(), source: e })
            }
            Err(e) => Err(self.corrupt(e.to_string())),
        }
    }

    /// Records the model on first write; refuses vectors from another one.
    fn check_model(&self, txn: &redb::WriteTransaction, model_id: &str) -> Result<(), StoreError> {
        let mut model = txn.open_table(MODEL).map_err(|e| self.err(e))?;
        let stored = model.get("id").map_err(|e| self.err(e))?.map(|v| v.value().to_string());
        match stored {
            Some(stored) if !same_model(&stored, model_id) => {
                Err(StoreError::ModelMismatch { stored, current: model_id.to_string() })
            }
            Some(_) => Ok(()),
            None => {
                model.insert("id", model_id).map_err(|e| self.err(e))?;
                Ok(())
            }
        }
    }

    /// Sorts a redb error into what a caller can act on.
    fn err(&self, e: impl Into<redb::Error>) -> StoreError {
        let path = self.path.clone();
        match e.into() {
            redb::Error::Io(source) => StoreError::Io { path, source },
            redb::Error::Corrupted(message) => StoreError::Corrupt { path, message },
            redb::Error::DatabaseAlreadyOpen => StoreError::Busy(path),
            source => StoreError::Redb { path, source },
        }
    }

    fn corrupt(&self, message: String) -> StoreError {
        StoreError::Corrupt { path: self.path.clone(), message }
    }
}

thread_local! {
    /// Set while this thread runs redb under a catch: its panics are reported, not printed.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the panics it catches kept off stderr (logged at debug):
/// the caller turns them into a clear error instead of a backtrace.
pub(crate) fn quiet_panics<T>(f: impl FnOnce() -> T) -> T {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let printing = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(std::cell::Cell::get) {
                tracing::debug!("caught inside the store: {info}");
            } else {
                printing(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let out = f();
    QUIET.with(|q| q.set(was));
    out
}

/// What a caught panic said.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let said = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned());
    format!("the file is damaged ({})", said.unwrap_or_else(|| "redb stopped reading it".into()))
}

/// Bumps the generation and logs that `path` changed in it.
fn log_change(txn: &redb::WriteTransaction, path: &str, store: &Store) -> Result<u64, StoreError> {
    let generation = bump(txn, "generation", store)?;
    txn.open_table(CHANGES).map_err(|e| store.err(e))?.insert(generation, path).map_err(|e| store.err(e))?;
    Ok(generation)
}

/// Increments the counter `key` in the meta table and returns its new value.
fn bump(txn: &redb::WriteTransaction, key: &str, store: &Store) -> Result<u64, StoreError> {
    let mut meta = txn.open_table(META).map_err(|e| store.err(e))?;
    let next = meta.get(key).map_err(|e| store.err(e))?.map(|v| v.value()).unwrap_or(0) + 1;
    meta.insert(key, next).map_err(|e| store.err(e))?;
    Ok(next)
}

fn remove_chunks(txn: &redb::WriteTransaction, id: u64, store: &Store) -> Result<(), StoreError> {
    for def in [CHUNKS, VECTORS] {
        let mut table = txn.open_table(def).map_err(|e| store.err(e))?;
        table.retain_in((id, 0)..=(id, u32::MAX), |_, _| false).map_err(|e| store.err(e))?;
    }
    Ok(())
}

/// Opens a table for reading; `None` when nothing was ever written to it.
fn open_read<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    def: TableDefinition<K, V>,
    store: &Store,
) -> Result<Option<redb::ReadOnlyTable<K, V>>, StoreError> {
    match txn.open_table(def) {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(store.err(e)),
    }
}

/// Rows in a table; 0 when nothing was ever written to it.
fn table_len<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    def: TableDefinition<K, V>,
    store: &Store,
) -> Result<u64, StoreError> {
    match open_read(txn, def, store)? {
        Some(table) => table.len().map_err(|e| store.err(e)),
        None => Ok(0),
    }
}

fn get<'k, K: redb::Key + 'static>(
    txn: &redb::ReadTransaction,
    def: TableDefinition<K, u64>,
    key: impl std::borrow::Borrow<K::SelfType<'k>>,
    store: &Store,
) -> Result<Option<u64>, StoreError> {
    match open_read(txn, def, store)? {
        Some(table) => Ok(table.get(key).map_err(|e| store.err(e))?.map(|v| v.value())),
        None => Ok(None),
    }
}

fn get_bytes(
    txn: &redb::ReadTransaction,
    def: TableDefinition<u64, &[u8]>,
    key: u64,
    store: &Store,
) -> Result<Option<Vec<u8>>, StoreError> {
    match open_read(txn, def, store)? {
        Some(table) => Ok(table.get(key).map_err(|e| store.err(e))?.map(|v| v.value().to_vec())),
        None => Ok(None),
    }
}
