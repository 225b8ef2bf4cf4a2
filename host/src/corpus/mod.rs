//! One workspace's index as the tools see it: the store (source of truth),
//! the vector and keyword indexes derived from it, and the shared embedder.
//!
//! Derived indexes catch up with the store before each search by reading only
//! what changed since the generation they reflect, so a document written by
//! another process (a second server, `ragbox index`) is found by the next
//! search here.
//!
//! The store is redb in the workspace's `.ragbox/` (the default), or a
//! collection in a shared PostgreSQL ([`crate::postgres`]), which then also
//! answers vector searches; the keyword index stays local either way, kept
//! in step with whichever store through the same generations.

mod embedder;
pub mod follow;
mod keyword;
pub mod memo;
pub mod turn;

pub use embedder::{Passages, SharedEmbedder};
use keyword::Keyword;

use crate::datadir::{DATA_DIR, DataDir, DataDirError, KEYWORD_DIR, SHARED_DIR};
use crate::embed::{EmbedError, EmbedKind};
use crate::fulltext::FulltextError;
use crate::index::{DocumentHit, Filter, Hit, IndexState, Tuning, VectorIndex};
use crate::postgres::Collection;
use crate::records::{ChunkRecord, DocumentRecord, NewDocument, Records, Stats, StoreError};
use crate::store::{Keep, Store};
use crate::sync::lock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// Errors a tool sees from the index; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The keyword index failed.
    #[error(transparent)]
    Fulltext(#[from] FulltextError),
    /// The model is missing or failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl From<DataDirError> for CorpusError {
    fn from(e: DataDirError) -> Self {
        Self::Store(e.into())
    }
}

/// A chunk hit with its text.
#[derive(Debug, Clone)]
pub struct ChunkHit {
    /// The document, position and score.
    pub hit: Hit,
    /// The chunk's text and byte range.
    pub chunk: ChunkRecord,
}

/// How a process's corpora behave: set when it sets up (by its command, or
/// the service), the same for every corpus it opens, never switched later.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// How each store file stays open: between calls in a server.
    pub keep: Keep,
    /// Writes are indexed for keyword search as they land, on a thread of
    /// their own ([`follow`]): a process that indexes (`serve`, `ragbox index`).
    pub follow_keywords: bool,
}

impl Options {
    /// A long-lived server's: stores kept open, writes followed.
    pub const SERVER: Self = Self { keep: Keep::BetweenCalls, follow_keywords: true };
}

/// The keyword index, locked, with its folder in the data dir.
type KeywordSlot<'a> = MutexGuard<'a, Option<(String, Keyword)>>;

/// The store the keyword index follows, and the index locked.
type OpenKeyword<'a> = (Arc<dyn Records>, KeywordSlot<'a>);

/// The index of one workspace, shared by every call in this process.
pub struct Corpus {
    /// `<workspace>/.ragbox`, for messages; opened through `data`.
    data_dir: PathBuf,
    workspace: PathBuf,
    /// The data dir, once it has been opened.
    data: Mutex<Option<Arc<DataDir>>>,
    /// A call found `data` replaced at its path (see [`Corpus::in_place`]).
    replaced: AtomicBool,
    /// The key its stamps are checked with, when not the user's (tests, tools).
    key: Option<Arc<crate::datadir::owner::Key>>,
    /// The shared store, when configured; else the local one below.
    shared: Option<Arc<Collection>>,
    store: Mutex<Option<Store>>,
    /// How its store stays open.
    keep: Keep,
    vectors: Mutex<Option<VectorIndex>>,
    /// The keyword index and its folder in the data dir.
    keyword: Mutex<Option<(String, Keyword)>>,
    /// Signalled when a step applying changes to the keyword index ends.
    keyword_step_done: Condvar,
    embedder: Arc<SharedEmbedder>,
    memo: memo::Memo,
    /// Keeps the keyword index in step with this process's writes.
    follower: follow::Follower,
    /// This corpus, for the follower's thread; empty until [`Corpus::into_shared`].
    me: Weak<Corpus>,
    /// Taken by each call that writes here: one at a time in this process
    /// (the per-user service's sessions, a watch's runs, an agent's calls).
    writing: turn::Turn,
}

impl Corpus {
    /// The index of `workspace`, kept in its data dir, embedding with
    /// `embedder`, its store closed between calls and its writes not followed
    /// (a command's; see [`Corpus::with_options`]).
    pub fn new(workspace: PathBuf, embedder: Arc<SharedEmbedder>) -> Self {
        Self {
            data_dir: workspace.join(DATA_DIR),
            workspace,
            data: Mutex::new(None),
            replaced: AtomicBool::new(false),
            key: None,
            shared: None,
            store: Mutex::new(None),
            keep: Keep::UntilDropped,
            vectors: Mutex::new(None),
            keyword: Mutex::new(None),
            keyword_step_done: Condvar::new(),
            embedder,
            memo: memo::Memo::default(),
            follower: follow::Follower::default(),
            me: Weak::new(),
            writing: turn::Turn::default(),
        }
    }

    /// This corpus behaving as `options` say.
    pub fn with_options(self, options: Options) -> Self {
        Self { keep: options.keep, follower: follow::Follower::new(options.follow_keywords), ..self }
    }

    /// This corpus shared, as a process's calls hold it: its writes are then
    /// followed by the keyword index where the process follows them.
    pub fn into_shared(self) -> Arc<Self> {
        Arc::new_cyclic(|me| Self { me: me.clone(), ..self })
    }

    /// The index of `workspace` kept in the shared `collection` (its keyword
    /// index in the data dir), embedding with `embedder`.
    pub fn shared(workspace: PathBuf, collection: Arc<Collection>, embedder: Arc<SharedEmbedder>) -> Self {
        Self { shared: Some(collection), ..Self::new(workspace, embedder) }
    }

    /// This corpus, its data dir's stamps made and checked with `key`
    /// instead of the user's (for tests and tools that keep no user config).
    pub fn with_key(self, key: Arc<crate::datadir::owner::Key>) -> Self {
        Self { key: Some(key), ..self }
    }

    /// The shared collection, when this index lives in one.
    pub fn collection(&self) -> Option<&Arc<Collection>> {
        self.shared.as_ref()
    }

    /// The turn each call that writes here takes (see [`turn`]).
    pub fn writing(&self) -> &turn::Turn {
        &self.writing
    }

    /// What tools keep between calls on this workspace.
    pub fn memo(&self) -> &memo::Memo {
        &self.memo
    }

    /// The embedding model.
    pub fn embedder(&self) -> &SharedEmbedder {
        &self.embedder
    }

    /// One vector per passage in `texts`, in order, from the embedding cache
    /// (this user's, then a shared store's table unless turned off) or the
    /// model; and where they came from.
    pub fn embed_passages(
        &self,
        texts: &[String],
        stop: impl Fn() -> bool,
    ) -> Result<(Vec<Vec<f32>>, Passages), CorpusError> {
        let team = self.shared.as_deref().filter(|c| c.shares_vectors());
        Ok(self.embedder.embed_passages(texts, team, stop)?)
    }

    /// The workspace's data folder (`.ragbox/`), for messages.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The store file (which may not exist yet).
    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join(crate::store::STORE_FILE)
    }

    /// The data dir held open: `None` when there is none and `create` is false.
    fn data(&self, create: bool) -> Result<Option<Arc<DataDir>>, CorpusError> {
        let mut slot = lock(&self.data);
        if slot.is_none() {
            *slot = match create {
                true => Some(Arc::new(DataDir::create_with(&self.workspace, self.key.clone())?)),
                false => DataDir::open(&self.workspace)?
                    .map(|d| match &self.key {
                        Some(key) => d.with_key(key.clone()),
                        None => d,
                    })
                    .map(Arc::new),
            };
        }
        Ok(slot.clone())
    }

    /// `Err` once the data dir held open is no longer the one at its path
    /// (see [`DataDir::in_place`]): asked before writes and at each call's
    /// start, and remembered, so that [`Corpora::get`] opens it anew.
    fn in_place(&self) -> Result<(), CorpusError> {
        let held = lock(&self.data).clone();
        match held {
            Some(data) => {
                data.in_place().inspect_err(|_| self.replaced.store(true, Ordering::Relaxed)).map_err(Into::into)
            }
            None => Ok(()),
        }
    }

    /// Whether a call found the data dir held open replaced at its path: the
    /// process then opens the workspace's corpus anew for the next call.
    pub fn replaced(&self) -> bool {
        self.replaced.load(Ordering::Relaxed)
    }

    /// Where the store is: the redb file, or the shared collection as
    /// `postgres://user@host:port/db#collection` (never a password).
    pub fn location(&self) -> String {
        match &self.shared {
            Some(c) => format!("postgres://{}#{}", c.target().shown(), c.name()),
            None => self.db_path().display().to_string(),
        }
    }

    /// The local store if one exists; reading never creates files.
    fn existing_store(&self) -> Result<Option<Store>, CorpusError> {
        let mut slot = lock(&self.store);
        if slot.is_none() {
            let Some(data) = self.data(false)? else { return Ok(None) };
            *slot = Store::open_existing(&data, self.keep)?;
        }
        Ok(slot.clone())
    }

    /// The store, created when missing.
    fn store(&self) -> Result<Store, CorpusError> {
        let mut slot = lock(&self.store);
        if let Some(store) = slot.as_ref() {
            return Ok(store.clone());
        }
        let data = self.data(true)?.ok_or_else(|| DataDirError::Io {
            path: self.data_dir.clone(),
            source: std::io::ErrorKind::NotFound.into(),
        })?;
        let store = Store::open(&data, self.keep)?;
        *slot = Some(store.clone());
        Ok(store)
    }

    /// The store to read: the shared collection, or the local store if one
    /// exists (reading never creates files).
    fn reader(&self) -> Result<Option<Arc<dyn Records>>, CorpusError> {
        if let Some(shared) = &self.shared {
            return Ok(Some(shared.clone()));
        }
        Ok(self.existing_store()?.map(|store| Arc::new(store) as Arc<dyn Records>))
    }

    /// The store to write: the shared collection, or the local store (created when missing).
    fn writer(&self) -> Result<Arc<dyn Records>, CorpusError> {
        match &self.shared {
            Some(shared) => Ok(shared.clone()),
            None => Ok(Arc::new(self.store()?)),
        }
    }

    /// The store, if one exists, held open until the returned handle is
    /// dropped: one call's operations then share one open of the file.
    /// (A shared store needs no holding: `None`.)
    pub fn hold(&self) -> Result<Option<Store>, CorpusError> {
        self.in_place()?;
        if self.shared.is_some() {
            return Ok(None);
        }
        Ok(self.existing_store()?.map(|store| store.hold()).transpose()?)
    }

    /// The stored document at `path`.
    pub fn document(&self, path: &str) -> Result<Option<DocumentRecord>, CorpusError> {
        let Some(store) = self.reader()? else { return Ok(None) };
        Ok(store.document(path)?)
    }

    /// Every stored document passing `filter`, in path order.
    pub fn documents(&self, filter: &Filter) -> Result<Vec<DocumentRecord>, CorpusError> {
        let Some(store) = self.reader()? else { return Ok(Vec::new()) };
        Ok(store.documents()?.into_iter().filter(|d| filter.matches(d)).collect())
    }

    /// Up to `limit` stored documents in path order, after the path `after`.
    pub fn documents_after(&self, after: Option<&str>, limit: usize) -> Result<Vec<DocumentRecord>, CorpusError> {
        let Some(store) = self.reader()? else { return Ok(Vec::new()) };
        Ok(store.documents_after(after, limit)?)
    }

    /// The chunks of the document at `path`, in order.
    pub fn chunks(&self, path: &str) -> Result<Vec<ChunkRecord>, CorpusError> {
        let Some(store) = self.reader()? else { return Ok(Vec::new()) };
        Ok(store.chunk_texts(path)?)
    }

    /// Counts, generation and model id (zeros before anything is stored).
    pub fn stats(&self) -> Result<Stats, CorpusError> {
        Ok(match self.reader()? {
            Some(store) => store.stats()?,
            None => Stats { documents: 0, chunks: 0, generation: 0, model_id: None },
        })
    }

    /// Stores `doc` in one transaction, stamped with the current model and time.
    pub fn put(&self, doc: NewDocument) -> Result<(), CorpusError> {
        self.put_many(vec![doc])
    }

    /// Stores every one of `docs` in one transaction, stamped with the current
    /// model; a document stored for keyword search only names none (and
    /// storing only such documents does not load the model).
    pub fn put_many(&self, mut docs: Vec<NewDocument>) -> Result<(), CorpusError> {
        if docs.is_empty() {
            return Ok(());
        }
        let model = match docs.iter().all(NewDocument::keyword_only) {
            true => None,
            false => Some(self.embedder.get()?.info().clone()),
        };
        self.in_place()?;
        let now = now_millis();
        for doc in &mut docs {
            doc.record.embedded_at = now;
            match &model {
                Some(info) if !doc.keyword_only() => {
                    doc.record.model_id = info.id.clone();
                    doc.dimension = info.dimension;
                }
                _ => doc.record.model_id = String::new(),
            }
        }
        self.writer()?.put_documents(&docs)?;
        self.follow_keywords();
        Ok(())
    }

    /// Removes the document at `path`; false when it was not stored.
    pub fn remove(&self, path: &str) -> Result<bool, CorpusError> {
        self.in_place()?;
        let Some(store) = self.reader()? else { return Ok(false) };
        let removed = store.remove_document(path)?;
        if removed {
            self.follow_keywords();
        }
        Ok(removed)
    }

    /// The vector index brought up to the store's generation (opened from
    /// its saved form first, or built from the store when there is none).
    fn current_vectors(&self) -> Result<(MutexGuard<'_, Option<VectorIndex>>, Option<Store>), CorpusError> {
        let mut slot = lock(&self.vectors);
        let Some(store) = self.existing_store()? else {
            *slot = None;
            return Ok((slot, None));
        };
        let opened = slot.is_none();
        if opened {
            let data = self.data(false)?.ok_or_else(|| DataDirError::Io {
                path: self.data_dir.clone(),
                source: std::io::ErrorKind::NotFound.into(),
            })?;
            let shown = self.data_dir.join(crate::datadir::VECTORS_DIR);
            *slot = Some(VectorIndex::open_in(data.vectors_dir()?, &shown, Tuning::standard()));
        }
        let index = slot.as_mut().expect("just set");
        index.refresh();
        if store.generation()? != index.generation() {
            index.apply(store.vector_delta(index.generation())?);
        }
        if opened {
            // One copy of each record for both sides (4 MB of a server's memory on
            // 5,000 abstracts): the keyword side takes this index's, or this index
            // takes those the keyword side read first. Only this order of the two
            // locks is ever taken.
            if let Some((_, keyword)) = lock(&self.keyword).as_mut()
                && !keyword.seed(index.generation(), index.records())
            {
                index.share_records(|path| keyword.record(path));
            }
        }
        Ok((slot, Some(store)))
    }

    /// What the vector index holds and builds, once this process has loaded it.
    pub fn vector_state(&self) -> Option<IndexState> {
        lock(&self.vectors).as_ref().map(VectorIndex::state)
    }

    /// Brings the vector index up to date and waits for its background
    /// builds (for `ragbox index` and benchmarks: a server never waits).
    pub fn settle_vectors(&self) -> Result<Option<IndexState>, CorpusError> {
        let (mut slot, _) = self.current_vectors()?;
        Ok(slot.as_mut().map(|index| {
            index.settle();
            index.state()
        }))
    }

    /// Brings the vector index up to the store and waits until it is saved
    /// (not for its graph builds): `ragbox index` does, so the servers that
    /// start next load it instead of each reading every vector from the store.
    pub fn save_vectors(&self) -> Result<(), CorpusError> {
        if self.shared.is_some() {
            return Ok(());
        }
        let (slot, _) = self.current_vectors()?;
        if let Some(index) = slot.as_ref() {
            index.wait_saved();
        }
        Ok(())
    }

    /// The `k` chunks nearest `vector` among documents passing `filter`, with their text.
    pub fn search_vectors(&self, vector: &[f32], k: usize, filter: &Filter) -> Result<Vec<ChunkHit>, CorpusError> {
        if let Some(shared) = &self.shared {
            let found = shared.search(vector, k, filter)?;
            return Ok(found.into_iter().map(|(hit, chunk)| ChunkHit { hit, chunk }).collect());
        }
        let hits = match self.current_vectors()? {
            (slot, Some(store)) => match slot.as_ref() {
                Some(index) => index.search(vector, k, filter, &store)?,
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        self.with_text(hits)
    }

    /// The `k` documents most like the one at `path`; `None` when it is not indexed.
    pub fn similar_documents(
        &self,
        path: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Option<Vec<DocumentHit>>, CorpusError> {
        if let Some(shared) = &self.shared {
            return Ok(shared.similar_documents(path, k, filter)?);
        }
        match self.current_vectors()? {
            (slot, Some(store)) => match slot.as_ref() {
                Some(index) => Ok(index.similar_documents(path, k, filter, &store)?),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// The keyword index, opened on first use (again when its folder
    /// changes), brought up to the store's generation; `None` before there
    /// is a store. While the follower is bringing it up, the search hurries
    /// it on and waits up to [`KEYWORD_STEP_WAIT`] (a search sees what was
    /// written before it once the writing has stopped), then answers from
    /// what is committed: a large change being indexed is never taken on by
    /// a search of the process that writes it.
    fn current_keyword(&self) -> Result<Option<KeywordSlot<'_>>, CorpusError> {
        let Some((store, mut slot)) = self.open_keyword()? else { return Ok(None) };
        let deadline = Instant::now() + KEYWORD_STEP_WAIT;
        while let Some((_, keyword)) = slot.as_mut() {
            if !keyword.behind(store.as_ref())? {
                break;
            }
            if !self.follower.running() && !keyword.applying() {
                keyword.catch_up(store.as_ref())?;
                break;
            }
            self.follower.hurry();
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                keyword.show_committed()?;
                break;
            };
            slot = self.keyword_step_done.wait_timeout(slot, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        Ok(Some(slot))
    }

    /// One step of the follower: the changes the keyword index lacks,
    /// applied without holding its lock (searches go on meanwhile).
    fn follow_step(&self) -> Result<(), CorpusError> {
        self.in_place()?;
        let Some((store, mut slot)) = self.open_keyword()? else { return Ok(()) };
        let Some(step) = slot.as_mut().map(|(_, keyword)| keyword.step(store.as_ref())).transpose()?.flatten() else {
            // Up to date: a search waiting for it looks again.
            self.keyword_step_done.notify_all();
            return Ok(());
        };
        drop(slot);
        let stop = || self.follower.stopping();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step.run(store.as_ref(), &stop)))
            .unwrap_or_else(|_| Err(FulltextError::Panicked.into()));
        let mut slot = lock(&self.keyword);
        let finished = match slot.as_mut() {
            Some((_, keyword)) => keyword.finish(&step, outcome),
            None => Ok(()),
        };
        self.keyword_step_done.notify_all();
        finished
    }

    /// The keyword index opened (not brought up to date) with the store it follows.
    fn open_keyword(&self) -> Result<Option<OpenKeyword<'_>>, CorpusError> {
        let Some(store) = self.reader()? else { return Ok(None) };
        let rel = match &self.shared {
            Some(shared) => {
                let Some(row) = shared.row()? else { return Ok(None) };
                format!("{SHARED_DIR}/{}", shared_keyword_name(&row, shared))
            }
            None => KEYWORD_DIR.to_string(),
        };
        let mut slot = lock(&self.keyword);
        if slot.as_ref().is_none_or(|(open, _)| *open != rel) {
            *slot = None;
            let data = self.data(true)?.ok_or_else(|| DataDirError::Io {
                path: self.data_dir.clone(),
                source: std::io::ErrorKind::NotFound.into(),
            })?;
            if self.shared.is_some() {
                // One collection's index per workspace: the others' go.
                let keep = rel.trim_start_matches(&format!("{SHARED_DIR}/")).to_string();
                for name in data.index_entries(SHARED_DIR)?.into_iter().filter(|n| *n != keep) {
                    data.remove_index_dir(&format!("{SHARED_DIR}/{name}"))?;
                }
            }
            let (dir, shown) = data.index_dir(&rel)?;
            let keyword = Keyword::open(&dir, &shown)?;
            *slot = Some((rel, keyword));
        }
        Ok(Some((store, slot)))
    }

    /// The `k` best BM25 chunks for `query` among documents passing `filter`, with their text.
    pub fn search_fulltext(&self, query: &str, k: usize, filter: &Filter) -> Result<Vec<ChunkHit>, CorpusError> {
        let hits = match self.current_keyword()?.as_deref() {
            Some(Some((_, keyword))) => keyword.search(query, k, filter)?,
            _ => Vec::new(),
        };
        self.with_text(hits)
    }

    /// Stops all this corpus does in the background and waits until it
    /// writes nothing more to the data dir: the keyword follower (a step
    /// under way gives up uncommitted), and the vector index (its pending
    /// saves get up to [`CLOSE_SAVES`]); the indexes and the store are let
    /// go. For a workspace no session serves any more, which may be deleted
    /// the moment its agent's server has exited. A call that still holds the
    /// corpus may use it again: what it opens then is its own.
    pub fn close(&self) {
        self.close_by(None);
    }

    /// [`Corpus::close`], waiting for the keyword follower's step only until `deadline`.
    fn close_by(&self, deadline: Option<Instant>) {
        self.follower.close(deadline);
        let vectors = lock(&self.vectors).take();
        if let Some(index) = vectors {
            index.close(CLOSE_SAVES);
        }
        drop(lock(&self.keyword).take());
        drop(lock(&self.store).take());
        drop(lock(&self.data).take());
    }

    /// Loads now what a first search would wait for: the model, the keyword
    /// index and the vector index, when anything is embedded. Run in the
    /// background at start-up; a call meanwhile waits only for the piece it
    /// needs, which it would have loaded itself.
    pub fn warm(&self) -> Result<(), CorpusError> {
        if self.stats()?.documents == 0 {
            return Ok(());
        }
        let embedder = self.embedder.get()?;
        if self.shared.is_none() {
            // The keyword side opened without its records, so that the vector
            // index, loaded next, hands it the ones it decoded.
            drop(self.open_keyword()?);
            drop(self.current_vectors()?);
        }
        drop(self.current_keyword()?);
        if self.shared.is_none() {
            // One search's work, so that the first real one finds the weights, the
            // codes and the store's pages mapped and the encoder's buffers made.
            let query = embedder.embed(&["warm-up".to_string()], EmbedKind::Query)?;
            if let Some(query) = query.first() {
                drop(self.search_vectors(query, 1, &Filter::default())?);
            }
        }
        Ok(())
    }

    /// Adds each hit's chunk text; hits whose chunk vanished meanwhile are dropped.
    fn with_text(&self, hits: Vec<Hit>) -> Result<Vec<ChunkHit>, CorpusError> {
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let Some(store) = self.reader()? else { return Ok(Vec::new()) };
        let keys: Vec<(&str, u32)> = hits.iter().map(|h| (h.document.path.as_str(), h.ordinal)).collect();
        let chunks = store.chunk_records(&keys)?;
        Ok(hits.into_iter().zip(chunks).filter_map(|(hit, chunk)| Some(ChunkHit { hit, chunk: chunk? })).collect())
    }
}

/// Longest a closing corpus waits for its vector index's queued saves: a
/// save takes milliseconds, unless it waits behind a graph build.
const CLOSE_SAVES: Duration = Duration::from_secs(1);

/// Longest a process that is ending waits for its keyword followers' steps.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// Longest a search waits for the follower before it searches what the
/// keyword index has committed: the step after a few writes takes
/// milliseconds, one of a first index's seconds.
const KEYWORD_STEP_WAIT: Duration = Duration::from_secs(1);

/// The corpora of every workspace this process serves, opened on first use.
pub struct Corpora {
    embedder: Arc<SharedEmbedder>,
    options: Options,
    open: Mutex<Open>,
    /// Signalled when corpora being closed are closed.
    closed: Condvar,
    /// The workspace whose index is a shared collection, and the collection.
    shared: Option<(PathBuf, Arc<Collection>)>,
}

/// The corpora open, and the workspaces whose corpus is being closed.
#[derive(Default)]
struct Open {
    corpora: HashMap<PathBuf, Arc<Corpus>>,
    closing: std::collections::HashSet<PathBuf>,
}

impl Corpora {
    /// Corpora that embed with `embedder`, each in its workspace's
    /// `.ragbox/`, behaving as `options` say.
    pub fn new(embedder: Arc<SharedEmbedder>, options: Options) -> Self {
        Self { embedder, options, open: Mutex::new(Open::default()), closed: Condvar::new(), shared: None }
    }

    /// The same, but `served`'s index lives in the shared `collection`
    /// (other workspaces a call names keep their own).
    pub fn with_shared(self, served: PathBuf, collection: Arc<Collection>) -> Self {
        Self { shared: Some((served, collection)), ..self }
    }

    /// The model every corpus here embeds with.
    pub fn embedder(&self) -> &Arc<SharedEmbedder> {
        &self.embedder
    }

    /// Lets go of the corpora of the workspaces not in `served()` and closes
    /// them ([`Corpus::close`]); the next call there opens its corpus anew,
    /// once the old one is closed. `served` is asked while no corpus can be
    /// opened, so a session that began meanwhile keeps its own.
    pub fn retain(&self, served: impl FnOnce() -> Vec<PathBuf>) {
        let gone: Vec<(PathBuf, Arc<Corpus>)> = {
            let mut open = lock(&self.open);
            let served = served();
            let gone: Vec<PathBuf> = open.corpora.keys().filter(|w| !served.contains(w)).cloned().collect();
            gone.into_iter()
                .filter_map(|workspace| {
                    let corpus = open.corpora.remove(&workspace)?;
                    open.closing.insert(workspace.clone());
                    Some((workspace, corpus))
                })
                .collect()
        };
        for (workspace, corpus) in gone {
            corpus.close();
            lock(&self.open).closing.remove(&workspace);
            self.closed.notify_all();
        }
    }

    /// The process is ending: every corpus is closed ([`Corpus::close`], its
    /// keyword follower's step waited for up to [`STOP_WAIT`] in all), then
    /// the stores kept open, so the next open need not repair them.
    pub fn stop(&self) {
        let corpora: Vec<Arc<Corpus>> = lock(&self.open).corpora.values().cloned().collect();
        let deadline = Instant::now() + STOP_WAIT;
        for corpus in corpora {
            corpus.close_by(Some(deadline));
        }
        crate::store::close_kept();
    }

    /// The corpus of `workspace` (data in `<workspace>/.ragbox/`); waits
    /// while its previous corpus is being closed, so two never write there.
    /// One a call found with its data dir replaced at its path is closed and
    /// opened anew: the next call meets what is there now (a link is
    /// refused, naming it; a folder put back serves again, with no restart).
    pub fn get(&self, workspace: &Path) -> Arc<Corpus> {
        let mut open = lock(&self.open);
        loop {
            while open.closing.contains(workspace) {
                open = self.closed.wait(open).unwrap_or_else(|e| e.into_inner());
            }
            let Some(corpus) = open.corpora.get(workspace).filter(|c| c.replaced()).cloned() else { break };
            open.corpora.remove(workspace);
            open.closing.insert(workspace.to_path_buf());
            drop(open);
            corpus.close();
            open = lock(&self.open);
            open.closing.remove(workspace);
            self.closed.notify_all();
        }
        open.corpora
            .entry(workspace.to_path_buf())
            .or_insert_with(|| {
                let workspace = workspace.to_path_buf();
                match &self.shared {
                    Some((served, collection)) if *served == workspace => {
                        Corpus::shared(workspace, collection.clone(), self.embedder.clone())
                    }
                    _ => Corpus::new(workspace, self.embedder.clone()),
                }
                .with_options(self.options)
                .into_shared()
            })
            .clone()
    }
}

/// The folder name of a shared collection's local keyword index: one per
/// collection identity (a collection dropped and made again starts a new one).
fn shared_keyword_name(row: &crate::postgres::Row, shared: &Collection) -> String {
    use sha2::Digest as _;
    let identity = format!("{}\0{}\0{}\0{}", shared.target().shown(), shared.name(), row.id, row.created);
    hex::encode(&sha2::Sha256::digest(identity.as_bytes())[..8])
}

fn now_millis() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
