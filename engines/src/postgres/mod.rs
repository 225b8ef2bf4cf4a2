//! The shared backend: one collection in PostgreSQL + pgvector, standing in
//! for a workspace's redb store and vector index when `[store] url` is set.
//!
//! Every write is one transaction that takes the collection's row lock, so
//! writers from many processes and machines commit one at a time, each
//! bumping the collection's generation and logging the paths it touched:
//! readers (the local keyword index, the tools' kept values) catch up from
//! the generation they saw, as they do with redb. Vector search is SQL on a
//! per-collection HNSW index, filtered in SQL; a query that returns fewer
//! than k rows when more may match is asked again as an exact scan.

mod connect;
mod embeddings;
mod filter;
mod records;
mod schema;

use connect::Pool;
pub use connect::{Target, TargetSpec};
pub use embeddings::{Cached, TEAM_KEEP_DAYS, TeamStats};
pub use schema::{SCHEMA_VERSION, Server};

use crate::index::{DocumentHit, Filter, Hit};
use crate::records::{ChunkRecord, Delta, DocumentRecord, NewDocument, Stats, StoreError, TextDelta};
use filter::{Conditions, FilterColumns};
use pgvector::Vector;
use std::sync::{Arc, Mutex};

/// The HNSW candidate list per search: as the local graphs use.
const EF_SEARCH: usize = 100;

/// One collection in a shared database; cheap to share between threads.
pub struct Collection {
    pool: Pool,
    name: String,
    /// What the server offers, once read.
    server: Mutex<Option<Server>>,
    /// The workspace using it, when bound to one.
    binding: Option<Binding>,
    /// Whether the database's embedding cache table is used.
    team: Mutex<embeddings::TeamState>,
}

/// Whom a collection serves: the one workspace that made it, unless the
/// user's config shares it between several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The workspace's identity (only its user's key gives a folder this one).
    pub id: String,
    /// Where it is, for messages.
    pub shown: String,
    /// The user's config lists the collection as shared by several workspaces.
    pub shared: bool,
    /// The user's config file, for the message that says how to share it.
    pub config_file: String,
}

/// The collection's row as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its id (recreated collections get new ones).
    pub id: i64,
    /// When it was created, microseconds since the epoch: with `id`, its identity.
    pub created: i64,
    /// The model of its vectors, once any are stored.
    pub model_id: Option<String>,
    /// Their length.
    pub dimension: Option<i32>,
    /// Bumped by every committed change.
    pub generation: i64,
    /// Documents stored.
    pub documents: i64,
    /// Chunks stored.
    pub chunks: i64,
    /// The identity of the workspace it belongs to (none: not bound yet, or shared).
    pub workspace: Option<String>,
    /// That workspace's path, for messages.
    pub workspace_path: Option<String>,
}

/// A chunk found by a search, with its document and text.
pub type Found = (Hit, ChunkRecord);

impl Collection {
    /// The collection `name` on the server at `target` (nothing is read or
    /// created until the first operation).
    pub fn new(target: Target, name: &str) -> Self {
        Self {
            pool: Pool::new(target),
            name: name.to_string(),
            server: Mutex::new(None),
            binding: None,
            team: Mutex::default(),
        }
    }

    /// This collection as used by the workspace `binding` names: refused
    /// when it belongs to another one (unless shared), claimed on first write.
    pub fn bound_to(self, binding: Binding) -> Self {
        Self { binding: Some(binding), ..self }
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server, as messages name it.
    pub fn target(&self) -> &Target {
        self.pool.target()
    }

    /// Connects and reads what the server offers (pgvector, the schema
    /// version), creating nothing: `ragbox doctor` and every read start here.
    pub fn inspect(&self) -> Result<Server, StoreError> {
        self.server_from(schema::inspect)
    }

    /// Creates or upgrades the schema when needed (before a first write).
    fn ensure_schema(&self) -> Result<Server, StoreError> {
        self.server_from(schema::ensure)
    }

    /// What the server offers, as last read once the schema was current;
    /// else read now with `read` (and kept).
    fn server_from(
        &self,
        read: fn(&mut postgres::Client, &str) -> Result<Server, StoreError>,
    ) -> Result<Server, StoreError> {
        let known = self.server.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(server) = known.filter(|s| s.schema == SCHEMA_VERSION) {
            return Ok(server);
        }
        let shown = self.target().shown().to_string();
        let server = self.pool.run(|c| read(c, &shown))?;
        *self.server.lock().unwrap_or_else(|p| p.into_inner()) = Some(server.clone());
        Ok(server)
    }

    /// The collection's row; `None` before anything was written to it. A
    /// collection of another workspace is refused (see [`Binding`]).
    pub fn row(&self) -> Result<Option<Row>, StoreError> {
        let server = self.inspect()?;
        if server.schema == 0 {
            return Ok(None);
        }
        if server.schema < SCHEMA_VERSION {
            self.ensure_schema()?;
        }
        let row = self.pool.run(|c| read_row(c, &self.name).map_err(|e| self.err(e)))?;
        if let Some(row) = &row {
            self.check_binding(row)?;
        }
        Ok(row)
    }

    /// Refuses a collection that belongs to another workspace than this
    /// one, unless the user shares it.
    fn check_binding(&self, row: &Row) -> Result<(), StoreError> {
        let Some(binding) = &self.binding else { return Ok(()) };
        match &row.workspace {
            Some(owner) if *owner != binding.id && !binding.shared => Err(StoreError::Setup {
                server: self.target().shown().to_string(),
                message: format!(
                    "collection {:?} belongs to another workspace ({}), not to {}: a collection serves one \
                     workspace, so a folder of the same name (a clone, a copy) never reads or replaces another's \
                     documents. If these folders are meant to share one index, list it in your config ({}): \
                     shared_collections = [{:?}] under [store]; otherwise give this one its own with \
                     --collection NAME",
                    self.name,
                    row.workspace_path.as_deref().unwrap_or("unknown"),
                    binding.shown,
                    binding.config_file,
                    self.name,
                ),
            }),
            _ => Ok(()),
        }
    }

    /// In a write transaction holding the row's lock: refuses another
    /// workspace's collection, and binds an unbound one to this workspace
    /// (unless the user shares it).
    fn claim(&self, txn: &mut postgres::Transaction<'_>, row: &mut Row) -> Result<(), StoreError> {
        self.check_binding(row)?;
        let Some(binding) = self.binding.as_ref().filter(|b| !b.shared) else { return Ok(()) };
        if row.workspace.is_none() {
            txn.execute(
                "UPDATE ragbox_collections SET workspace = $2, workspace_path = $3 WHERE id = $1",
                &[&row.id, &binding.id, &binding.shown],
            )
            .map_err(|e| self.err(e))?;
            row.workspace = Some(binding.id.clone());
            row.workspace_path = Some(binding.shown.clone());
        }
        Ok(())
    }

    /// Counts, generation and model id (zeros before anything is stored).
    pub fn stats(&self) -> Result<Stats, StoreError> {
        Ok(match self.row()? {
            Some(row) => Stats {
                documents: row.documents as u64,
                chunks: row.chunks as u64,
                generation: row.generation as u64,
                model_id: row.model_id,
            },
            None => Stats { documents: 0, chunks: 0, generation: 0, model_id: None },
        })
    }

    /// The generation: bumped by every committed change.
    pub fn generation(&self) -> Result<u64, StoreError> {
        Ok(self.row()?.map_or(0, |r| r.generation as u64))
    }

    /// The record of the document at `path`.
    pub fn document(&self, path: &str) -> Result<Option<DocumentRecord>, StoreError> {
        let Some(row) = self.row()? else { return Ok(None) };
        let found = self.pool.run(|c| {
            c.query_opt("SELECT record FROM ragbox_documents WHERE collection = $1 AND path = $2", &[&row.id, &path])
                .map_err(|e| self.err(e))
        })?;
        found.map(|r| decode_record(r.get(0))).transpose()
    }

    /// Up to `limit` document records in path order (bytewise), after `after`.
    pub fn documents_after(&self, after: Option<&str>, limit: usize) -> Result<Vec<DocumentRecord>, StoreError> {
        let Some(row) = self.row()? else { return Ok(Vec::new()) };
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = self.pool.run(|c| {
            let result = match after {
                Some(after) => c.query(
                    "SELECT record FROM ragbox_documents WHERE collection = $1 AND path > $2 ORDER BY path LIMIT $3",
                    &[&row.id, &after, &limit],
                ),
                None => c.query(
                    "SELECT record FROM ragbox_documents WHERE collection = $1 ORDER BY path LIMIT $2",
                    &[&row.id, &limit],
                ),
            };
            result.map_err(|e| self.err(e))
        })?;
        rows.into_iter().map(|r| decode_record(r.get(0))).collect()
    }

    /// Every document record, in path order.
    pub fn documents(&self) -> Result<Vec<DocumentRecord>, StoreError> {
        self.documents_after(None, usize::MAX)
    }

    /// The chunks of the document at `path`, in order.
    pub fn chunks(&self, path: &str) -> Result<Vec<ChunkRecord>, StoreError> {
        let Some(row) = self.row()? else { return Ok(Vec::new()) };
        let rows = self.pool.run(|c| {
            c.query(
                "SELECT k.text, k.start_byte, k.end_byte FROM ragbox_chunks k
                 JOIN ragbox_documents d ON d.id = k.document
                 WHERE d.collection = $1 AND d.path = $2 ORDER BY k.ordinal",
                &[&row.id, &path],
            )
            .map_err(|e| self.err(e))
        })?;
        Ok(rows.iter().map(chunk_of).collect())
    }

    /// The chunks at `keys` (path, ordinal); `None` where gone.
    pub fn chunk_records(&self, keys: &[(&str, u32)]) -> Result<Vec<Option<ChunkRecord>>, StoreError> {
        let Some(row) = self.row()? else { return Ok(vec![None; keys.len()]) };
        let paths: Vec<&str> = keys.iter().map(|(p, _)| *p).collect();
        let ordinals: Vec<i32> = keys.iter().map(|(_, o)| *o as i32).collect();
        let rows = self.pool.run(|c| {
            c.query(
                "SELECT d.path, k.ordinal, k.text, k.start_byte, k.end_byte
                 FROM unnest($2::text[], $3::int4[]) AS w(path, ordinal)
                 JOIN ragbox_documents d ON d.collection = $1 AND d.path = w.path
                 JOIN ragbox_chunks k ON k.document = d.id AND k.ordinal = w.ordinal",
                &[&row.id, &paths, &ordinals],
            )
            .map_err(|e| self.err(e))
        })?;
        let mut found: std::collections::HashMap<(String, u32), ChunkRecord> = std::collections::HashMap::new();
        for r in &rows {
            let key = (r.get::<_, String>(0), r.get::<_, i32>(1) as u32);
            found.insert(
                key,
                ChunkRecord { text: r.get(2), start: r.get::<_, i64>(3) as u64, end: r.get::<_, i64>(4) as u64 },
            );
        }
        Ok(keys.iter().map(|(p, o)| found.get(&(p.to_string(), *o)).cloned()).collect())
    }

    /// Writes every one of `docs` in one transaction (all or none), each
    /// replacing any earlier version; returns the new generation.
    pub fn put_documents(&self, docs: &[NewDocument]) -> Result<u64, StoreError> {
        for doc in docs {
            crate::records::check_document(doc)?;
            // The collection keeps every chunk with its vector (pgvector answers its searches).
            if doc.keyword_only() {
                let message = "a shared collection stores a document with its vectors, not for keyword search first";
                return Err(StoreError::Invalid { path: doc.record.path.clone(), message: message.into() });
            }
        }
        let Some(last) = docs.last() else { return self.generation() };
        self.ensure_schema()?;
        let model_id = last.record.model_id.as_str();
        let dimension = i32::try_from(last.dimension).unwrap_or(i32::MAX);
        let prepared: Vec<Prepared> = docs.iter().map(Prepared::of).collect();
        self.pool.run(|c| {
            let mut txn = c.transaction().map_err(|e| self.err(e))?;
            let mut row = lock_row(&mut txn, &self.name).map_err(|e| self.err(e))?;
            self.claim(&mut txn, &mut row)?;
            if row.model_id.is_none() {
                // The collection's first write: its model and HNSW index are set
                // up in a transaction of their own. CREATE INDEX holds a SHARE
                // lock on the chunks table to the end of its transaction, and two
                // first writes inserting chunks while holding it deadlock.
                txn.rollback().map_err(|e| self.err(e))?;
                self.set_up(c, model_id, dimension)?;
                txn = c.transaction().map_err(|e| self.err(e))?;
                row = lock_row(&mut txn, &self.name).map_err(|e| self.err(e))?;
                self.claim(&mut txn, &mut row)?;
            }
            match (&row.model_id, row.dimension) {
                (Some(stored), _) if !crate::records::same_model(stored, model_id) => {
                    return Err(StoreError::ModelMismatch { stored: stored.clone(), current: model_id.to_string() });
                }
                (Some(_), Some(stored)) if stored != dimension => {
                    return Err(StoreError::Dimension {
                        path: last.record.path.clone(),
                        got: last.dimension,
                        expected: stored as usize,
                    });
                }
                (Some(_), _) => {}
                (None, _) => {
                    return Err(StoreError::Conflict {
                        server: self.target().shown().to_string(),
                        message: "the collection was reset while this write began".into(),
                    });
                }
            }
            let generation = row.generation + 1;
            let (mut documents, mut chunks) = (0i64, 0i64);
            for doc in &prepared {
                let (d, c) = put_one(&mut txn, row.id, generation, doc).map_err(|e| self.err(e))?;
                documents += d;
                chunks += c;
            }
            txn.execute(
                "UPDATE ragbox_collections SET generation = $2, documents = documents + $3, chunks = chunks + $4
                 WHERE id = $1",
                &[&row.id, &generation, &documents, &chunks],
            )
            .map_err(|e| self.err(e))?;
            txn.commit().map_err(|e| self.err(e))?;
            Ok(generation as u64)
        })
    }

    /// Records the collection's model and makes its HNSW index, unless
    /// another writer did first; in a transaction of its own.
    fn set_up(&self, c: &mut postgres::Client, model_id: &str, dimension: i32) -> Result<(), StoreError> {
        let mut txn = c.transaction().map_err(|e| self.err(e))?;
        let mut row = lock_row(&mut txn, &self.name).map_err(|e| self.err(e))?;
        self.claim(&mut txn, &mut row)?;
        if row.model_id.is_none() {
            txn.execute(
                "UPDATE ragbox_collections SET model_id = $2, dimension = $3 WHERE id = $1",
                &[&row.id, &model_id, &dimension],
            )
            .map_err(|e| self.err(e))?;
            schema::create_vector_index(&mut txn, row.id, dimension).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))
    }

    /// Removes the document at `path`; false when it was not stored.
    pub fn remove_document(&self, path: &str) -> Result<bool, StoreError> {
        if self.row()?.is_none() {
            return Ok(false);
        }
        self.pool.run(|c| {
            let mut txn = c.transaction().map_err(|e| self.err(e))?;
            let mut row = lock_row(&mut txn, &self.name).map_err(|e| self.err(e))?;
            self.claim(&mut txn, &mut row)?;
            let removed = txn
                .query_opt(
                    "DELETE FROM ragbox_documents WHERE collection = $1 AND path = $2 RETURNING chunk_count",
                    &[&row.id, &path],
                )
                .map_err(|e| self.err(e))?;
            let Some(removed) = removed else { return Ok(false) };
            let chunks: i32 = removed.get(0);
            let generation = row.generation + 1;
            txn.execute(
                "INSERT INTO ragbox_changes (collection, generation, path) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&row.id, &generation, &path],
            )
            .map_err(|e| self.err(e))?;
            txn.execute(
                "UPDATE ragbox_collections SET generation = $2, documents = documents - 1, chunks = chunks - $3
                 WHERE id = $1",
                &[&row.id, &generation, &(chunks as i64)],
            )
            .map_err(|e| self.err(e))?;
            txn.commit().map_err(|e| self.err(e))?;
            Ok(true)
        })
    }

    /// The document records changed since generation `since`.
    pub fn document_delta(&self, since: u64) -> Result<Delta<()>, StoreError> {
        self.delta(since, |_, _| Ok(Vec::new()), |docs| docs.into_iter().map(|(r, _)| (r, Vec::new())).collect())
    }

    /// What the keyword index needs to go from generation `since` to now.
    pub fn text_delta(&self, since: u64) -> Result<TextDelta, StoreError> {
        self.delta(
            since,
            |txn, ids| {
                txn.query(
                    "SELECT document, text, start_byte, end_byte FROM ragbox_chunks
                     WHERE document = ANY($1) ORDER BY document, ordinal",
                    &[&ids],
                )
            },
            |docs| docs,
        )
    }

    /// Reads, in one snapshot, the documents changed after `since` (all when
    /// `since` is 0 or ahead), their chunk rows from `chunk_rows`, and the
    /// paths removed.
    fn delta<V>(
        &self,
        since: u64,
        chunk_rows: impl Fn(&mut postgres::Transaction<'_>, &[i64]) -> Result<Vec<postgres::Row>, postgres::Error>,
        shape: impl Fn(Vec<(DocumentRecord, Vec<ChunkRecord>)>) -> Vec<(DocumentRecord, Vec<V>)>,
    ) -> Result<Delta<V>, StoreError> {
        if self.inspect()?.schema == 0 {
            return Ok(Delta { generation: 0, full: since != 0, documents: Vec::new(), removed: Vec::new() });
        }
        let since = i64::try_from(since).unwrap_or(i64::MAX);
        self.pool.run(|c| {
            let mut txn = c
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(|e| self.err(e))?;
            let Some(row) = read_row(&mut txn, &self.name).map_err(|e| self.err(e))? else {
                return Ok(Delta { generation: 0, full: since != 0, documents: Vec::new(), removed: Vec::new() });
            };
            let mut delta =
                Delta { generation: row.generation as u64, full: false, documents: Vec::new(), removed: Vec::new() };
            if since == row.generation {
                return Ok(delta);
            }
            delta.full = since == 0 || since > row.generation;
            let after = if delta.full { -1 } else { since };
            let docs = txn
                .query(
                    "SELECT id, record FROM ragbox_documents WHERE collection = $1 AND generation > $2 ORDER BY path",
                    &[&row.id, &after],
                )
                .map_err(|e| self.err(e))?;
            let ids: Vec<i64> = docs.iter().map(|r| r.get(0)).collect();
            let mut chunks: std::collections::HashMap<i64, Vec<ChunkRecord>> = std::collections::HashMap::new();
            for r in chunk_rows(&mut txn, &ids).map_err(|e| self.err(e))? {
                let id: i64 = r.get(0);
                chunks.entry(id).or_default().push(ChunkRecord {
                    text: r.get(1),
                    start: r.get::<_, i64>(2) as u64,
                    end: r.get::<_, i64>(3) as u64,
                });
            }
            let mut documents = Vec::with_capacity(docs.len());
            for r in &docs {
                let record = decode_record(r.get(1))?;
                documents.push((record, chunks.remove(&r.get::<_, i64>(0)).unwrap_or_default()));
            }
            delta.documents = shape(documents);
            if !delta.full {
                let removed = txn
                    .query(
                        "SELECT DISTINCT g.path FROM ragbox_changes g WHERE g.collection = $1 AND g.generation > $2
                         AND NOT EXISTS (SELECT 1 FROM ragbox_documents d WHERE d.collection = $1 AND d.path = g.path)",
                        &[&row.id, &since],
                    )
                    .map_err(|e| self.err(e))?;
                delta.removed = removed.iter().map(|r| r.get(0)).collect();
            }
            txn.commit().map_err(|e| self.err(e))?;
            Ok(delta)
        })
    }

    /// The `k` chunks nearest `vector` among documents passing `filter`, with
    /// their text; k of them whenever k chunks pass.
    pub fn search(&self, vector: &[f32], k: usize, filter: &Filter) -> Result<Vec<Found>, StoreError> {
        let Some(row) = self.row()? else { return Ok(Vec::new()) };
        let (Some(dimension), true) = (row.dimension, k > 0) else { return Ok(Vec::new()) };
        if vector.len() != dimension as usize {
            return Err(StoreError::Dimension {
                path: "(query)".into(),
                got: vector.len(),
                expected: dimension as usize,
            });
        }
        let iterative = self.inspect()?.iterative();
        let query = Vector::from(vector.to_vec());
        let conditions = Conditions::of(filter, 2);
        let limit = k.min(100_000) as i64;
        let run = |exact: bool| -> Result<Vec<Found>, StoreError> {
            // The index is on the cast expression: ordering by it uses the
            // index, ordering by the bare column scans exactly.
            let order = if exact {
                "k.embedding <=> $1".to_string()
            } else {
                format!("k.embedding::vector({dimension}) <=> $1")
            };
            let sql = format!(
                "SELECT d.record, k.ordinal, k.text, k.start_byte, k.end_byte, ({order}) AS distance
                 FROM ragbox_chunks k JOIN ragbox_documents d ON d.id = k.document
                 WHERE k.collection = {id}{filter}
                 ORDER BY {order} LIMIT {limit}",
                id = row.id,
                filter = conditions.sql,
            );
            let params = conditions.with(&[&query]);
            let rows = self.pool.run(|c| {
                let mut txn = c.transaction().map_err(|e| self.err(e))?;
                let mut settings = format!("SET LOCAL hnsw.ef_search = {};", EF_SEARCH.max(k).min(1000));
                if iterative {
                    settings.push_str("SET LOCAL hnsw.iterative_scan = relaxed_order;");
                }
                txn.batch_execute(&settings).map_err(|e| self.err(e))?;
                let rows = txn.query(&sql, &params).map_err(|e| self.err(e))?;
                txn.commit().map_err(|e| self.err(e))?;
                Ok(rows)
            })?;
            let mut found = Vec::with_capacity(rows.len());
            for r in &rows {
                let document = Arc::new(decode_record(r.get(0))?);
                let ordinal: i32 = r.get(1);
                let distance: f64 = r.get(5);
                let hit = Hit { document, ordinal: ordinal as u32, score: (1.0 - distance) as f32 };
                let chunk =
                    ChunkRecord { text: r.get(2), start: r.get::<_, i64>(3) as u64, end: r.get::<_, i64>(4) as u64 };
                found.push((hit, chunk));
            }
            // relaxed_order may hand rows back slightly out of order.
            found.sort_by(|(a, _), (b, _)| {
                b.score
                    .total_cmp(&a.score)
                    .then_with(|| a.document.path.cmp(&b.document.path))
                    .then(a.ordinal.cmp(&b.ordinal))
            });
            Ok(found)
        };
        let found = run(false)?;
        if found.len() as i64 >= limit || (found.len() as i64) >= row.chunks {
            return Ok(found);
        }
        // The graph ran out before k rows passed the filter: ask exactly.
        run(true)
    }

    /// The `k` documents most like the one at `path` (cosine of their mean
    /// chunk vectors); `None` when it is not stored.
    pub fn similar_documents(
        &self,
        path: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Option<Vec<DocumentHit>>, StoreError> {
        let Some(row) = self.row()? else { return Ok(None) };
        let source = self.pool.run(|c| {
            c.query_opt(
                "SELECT id, centroid FROM ragbox_documents WHERE collection = $1 AND path = $2",
                &[&row.id, &path],
            )
            .map_err(|e| self.err(e))
        })?;
        let Some(source) = source else { return Ok(None) };
        let (source_id, centre): (i64, Option<Vector>) = (source.get(0), source.get(1));
        let Some(centre) = centre else { return Ok(Some(Vec::new())) };
        let conditions = Conditions::of(filter, 3);
        let limit = k.min(100_000) as i64;
        let sql = format!(
            "SELECT d.record, (d.centroid <=> $1) AS distance FROM ragbox_documents d
             WHERE d.collection = {id} AND d.id <> $2 AND d.centroid IS NOT NULL{filter}
             ORDER BY distance, d.path LIMIT {limit}",
            id = row.id,
            filter = conditions.sql,
        );
        let params = conditions.with(&[&centre, &source_id]);
        let rows = self.pool.run(|c| c.query(&sql, &params).map_err(|e| self.err(e)))?;
        let mut hits = Vec::with_capacity(rows.len());
        for r in &rows {
            let distance: f64 = r.get(1);
            hits.push(DocumentHit { document: Arc::new(decode_record(r.get(0))?), score: (1.0 - distance) as f32 });
        }
        Ok(Some(hits))
    }

    /// Drops the collection and everything in it (`ragbox doctor --reset`);
    /// false when there was none.
    pub fn drop_collection(&self) -> Result<bool, StoreError> {
        let Some(row) = self.row()? else { return Ok(false) };
        self.pool.run(|c| {
            let mut txn = c.transaction().map_err(|e| self.err(e))?;
            txn.batch_execute(&format!("DROP INDEX IF EXISTS ragbox_chunks_hnsw_{}", row.id))
                .map_err(|e| self.err(e))?;
            // Chunks go with their documents, documents with the collection.
            let gone =
                txn.execute("DELETE FROM ragbox_collections WHERE id = $1", &[&row.id]).map_err(|e| self.err(e))?;
            txn.commit().map_err(|e| self.err(e))?;
            Ok(gone > 0)
        })
    }

    /// Whether the collection's HNSW index exists (for `ragbox doctor`).
    pub fn has_vector_index(&self) -> Result<Option<bool>, StoreError> {
        let Some(row) = self.row()? else { return Ok(None) };
        if row.dimension.is_none() {
            return Ok(None);
        }
        let name = format!("ragbox_chunks_hnsw_{}", row.id);
        self.pool.run(|c| {
            let r = c.query_one("SELECT to_regclass($1) IS NOT NULL", &[&name]).map_err(|e| self.err(e))?;
            Ok(Some(r.get(0)))
        })
    }

    fn err(&self, e: postgres::Error) -> StoreError {
        self.target().classify(e)
    }
}

/// A document made ready for its rows: NUL characters, which PostgreSQL's
/// text and jsonb cannot hold, become spaces (byte offsets stay right).
struct Prepared {
    record: DocumentRecord,
    columns: FilterColumns,
    metadata: serde_json::Value,
    centroid: Option<Vector>,
    texts: Vec<String>,
    starts: Vec<i64>,
    ends: Vec<i64>,
    vectors: Vec<Vector>,
}

impl Prepared {
    fn of(doc: &NewDocument) -> Self {
        let mut record = doc.record.clone();
        record.chunks = doc.chunks.len() as u32;
        for field in [&mut record.title, &mut record.conversation_type, &mut record.date].into_iter().flatten() {
            *field = no_nul(field);
        }
        record.kind = no_nul(&record.kind);
        record.metadata = record.metadata.iter().map(|(k, v)| (no_nul(k), no_nul(v))).collect();
        let metadata = serde_json::to_value(&record.metadata).unwrap_or_default();
        let dimension = doc.dimension;
        let mut sum = vec![0.0f32; dimension];
        for chunk in &doc.chunks {
            sum.iter_mut().zip(&chunk.vector).for_each(|(s, x)| *s += x);
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        let centroid = (!doc.chunks.is_empty() && norm > 0.0)
            .then(|| Vector::from(sum.iter().map(|x| x / norm).collect::<Vec<f32>>()));
        Self {
            columns: FilterColumns::of(&record),
            record,
            metadata,
            centroid,
            texts: doc.chunks.iter().map(|c| no_nul(&c.record.text)).collect(),
            starts: doc.chunks.iter().map(|c| c.record.start as i64).collect(),
            ends: doc.chunks.iter().map(|c| c.record.end as i64).collect(),
            vectors: doc.chunks.iter().map(|c| Vector::from(c.vector.clone())).collect(),
        }
    }
}

/// Writes one document (replacing the stored version) at `generation`;
/// returns the change in (documents, chunks).
fn put_one(
    txn: &mut postgres::Transaction<'_>,
    collection: i64,
    generation: i64,
    doc: &Prepared,
) -> Result<(i64, i64), postgres::Error> {
    let path = doc.record.path.as_str();
    let old = txn.query_opt(
        "DELETE FROM ragbox_documents WHERE collection = $1 AND path = $2 RETURNING chunk_count",
        &[&collection, &path],
    )?;
    let (old_docs, old_chunks) = old.map_or((0, 0), |r| (1i64, r.get::<_, i32>(0) as i64));
    let record = serde_json::to_value(&doc.record).unwrap_or_default();
    let chunk_count = doc.texts.len() as i32;
    let id: i64 = txn
        .query_one(
            "INSERT INTO ragbox_documents
               (collection, path, record, conversation_type, date, extension, metadata, centroid, chunk_count, generation)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
            &[
                &collection,
                &path,
                &record,
                &doc.columns.conversation_type,
                &doc.record.date,
                &doc.columns.extension,
                &doc.metadata,
                &doc.centroid,
                &chunk_count,
                &generation,
            ],
        )?
        .get(0);
    if chunk_count > 0 {
        let ordinals: Vec<i32> = (0..chunk_count).collect();
        txn.execute(
            "INSERT INTO ragbox_chunks (document, ordinal, collection, text, start_byte, end_byte, embedding)
             SELECT $1, o, $2, t, s, e, v
             FROM unnest($3::int4[], $4::text[], $5::int8[], $6::int8[], $7::vector[]) AS u(o, t, s, e, v)",
            &[&id, &collection, &ordinals, &doc.texts, &doc.starts, &doc.ends, &doc.vectors],
        )?;
    }
    txn.execute(
        "INSERT INTO ragbox_changes (collection, generation, path) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        &[&collection, &generation, &path],
    )?;
    Ok((1 - old_docs, chunk_count as i64 - old_chunks))
}

/// The collection's row, created if missing, locked until the transaction
/// ends: writers to one collection take turns.
fn lock_row(txn: &mut postgres::Transaction<'_>, name: &str) -> Result<Row, postgres::Error> {
    let select = format!("{ROW_SELECT} WHERE name = $1 FOR UPDATE");
    if let Some(r) = txn.query_opt(&select, &[&name])? {
        return Ok(row_of(&r));
    }
    // Two first writers may race here: the second waits, then finds the first's row.
    txn.execute("INSERT INTO ragbox_collections (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", &[&name])?;
    Ok(row_of(&txn.query_one(&select, &[&name])?))
}

const ROW_SELECT: &str = "SELECT id, (extract(epoch FROM created_at) * 1000000)::int8, model_id, dimension, generation,
                                 documents, chunks, workspace, workspace_path FROM ragbox_collections";

fn read_row(c: &mut impl postgres::GenericClient, name: &str) -> Result<Option<Row>, postgres::Error> {
    Ok(c.query_opt(&format!("{ROW_SELECT} WHERE name = $1"), &[&name])?.as_ref().map(row_of))
}

fn row_of(r: &postgres::Row) -> Row {
    Row {
        id: r.get(0),
        created: r.get(1),
        model_id: r.get(2),
        dimension: r.get(3),
        generation: r.get(4),
        documents: r.get(5),
        chunks: r.get(6),
        workspace: r.get(7),
        workspace_path: r.get(8),
    }
}

fn chunk_of(r: &postgres::Row) -> ChunkRecord {
    ChunkRecord { text: r.get(0), start: r.get::<_, i64>(1) as u64, end: r.get::<_, i64>(2) as u64 }
}

fn decode_record(value: serde_json::Value) -> Result<DocumentRecord, StoreError> {
    serde_json::from_value(value).map_err(|e| StoreError::Database {
        server: String::new(),
        message: format!("a stored document record does not read back ({e}); `ragbox doctor --reset` starts over"),
    })
}

fn no_nul(s: &str) -> String {
    s.replace('\0', " ")
}
