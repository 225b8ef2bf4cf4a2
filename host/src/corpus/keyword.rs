//! The keyword side of a corpus: the tantivy index and the document records
//! its hits are reported with, both kept at the store's generation without
//! touching the vector index (a keyword query never loads vectors or waits
//! for a graph build).

use super::CorpusError;
use crate::fulltext::{Fulltext, FulltextError};
use crate::index::{Filter, Hit};
use crate::records::DocumentRecord;
use crate::records::Records;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

/// The keyword index and the records of the documents it holds.
pub(super) struct Keyword {
    fulltext: Arc<Fulltext>,
    documents: HashMap<String, Arc<DocumentRecord>>,
    /// The store generation `documents` reflects (0: not read yet).
    generation: u64,
    /// The store generation the keyword index's readers are known to show
    /// (0: not checked yet); while it equals `generation`, a search reads
    /// neither the index's metadata nor reloads it.
    indexed: u64,
    /// A [`Step`] is applying changes outside the lock (the follower's):
    /// searches meanwhile read what is committed instead of writing too.
    applying: bool,
}

/// Changes to apply to the keyword index, taken out of the corpus's lock to
/// run: tantivy writes for seconds on a large change, and searches go on.
pub(super) struct Step {
    fulltext: Arc<Fulltext>,
    /// The store generation the index reflects now.
    behind: u64,
}

impl Step {
    /// Applies what changed in `store` since the index's generation; the
    /// store generation the index then reflects.
    /// Given up before it commits once `stop` says so.
    pub(super) fn run(&self, store: &dyn Records, stop: &dyn Fn() -> bool) -> Result<u64, CorpusError> {
        let delta = store.text_delta(self.behind)?;
        self.fulltext.apply_until(&delta, stop)?;
        Ok(delta.generation)
    }
}

impl Keyword {
    /// The keyword index kept in the folder `dir` (held open; shown as
    /// `shown`); the records are read on first search.
    pub(super) fn open(dir: &cap_std::fs::Dir, shown: &Path) -> Result<Self, CorpusError> {
        let fulltext = Arc::new(Fulltext::open_in(dir, shown)?);
        Ok(Self { fulltext, documents: HashMap::new(), generation: 0, indexed: 0, applying: false })
    }

    /// Brings the records and the index up to `store`'s generation, reading
    /// only what changed since each last caught up. While a [`Step`] applies
    /// changes elsewhere, the index is searched as last committed.
    pub(super) fn catch_up(&mut self, store: &dyn Records) -> Result<(), CorpusError> {
        self.catch_up_records(store)?;
        if self.indexed == self.generation {
            return Ok(());
        }
        if self.applying {
            self.fulltext.refresh()?;
            return Ok(());
        }
        if self.caught_up_elsewhere()? {
            return Ok(());
        }
        match self.fulltext.apply(&store.text_delta(self.fulltext.generation()?)?) {
            Ok(()) => self.indexed = self.generation,
            // Another process is updating it: search what is there, and look again next time.
            Err(FulltextError::Busy(dir)) => {
                tracing::warn!("keyword index {} busy; searching it as it is", dir.display());
                self.fulltext.refresh()?;
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// The changes to apply, for a thread to run outside the lock; `None`
    /// when the index is up to date or a step is under way.
    pub(super) fn step(&mut self, store: &dyn Records) -> Result<Option<Step>, CorpusError> {
        self.catch_up_records(store)?;
        if self.indexed == self.generation || self.applying || self.caught_up_elsewhere()? {
            return Ok(None);
        }
        let behind = self.fulltext.generation()?;
        // Set only once nothing here can fail: only `finish` clears it.
        self.applying = true;
        Ok(Some(Step { fulltext: self.fulltext.clone(), behind }))
    }

    /// Takes back a step: what it applied is searched from now on. A step
    /// of an index since replaced changes nothing here.
    pub(super) fn finish(&mut self, step: &Step, outcome: Result<u64, CorpusError>) -> Result<(), CorpusError> {
        if !Arc::ptr_eq(&self.fulltext, &step.fulltext) {
            return Ok(());
        }
        self.applying = false;
        match outcome {
            // Records are read before the index, so they are never behind what it holds.
            Ok(applied) => {
                self.indexed = applied.min(self.generation);
                Ok(())
            }
            Err(CorpusError::Fulltext(FulltextError::Busy(_) | FulltextError::Stopped)) => {
                Ok(self.fulltext.refresh()?)
            }
            Err(e) => Err(e),
        }
    }

    /// Brings the records up to `store` and tells whether they hold changes
    /// the index still lacks.
    pub(super) fn behind(&mut self, store: &dyn Records) -> Result<bool, CorpusError> {
        self.catch_up_records(store)?;
        Ok(self.indexed != self.generation && !self.caught_up_elsewhere()?)
    }

    /// Whether a step is applying changes outside the lock.
    pub(super) fn applying(&self) -> bool {
        self.applying
    }

    /// Makes searches see what the index has committed (when it is behind
    /// and another thread brings it up).
    pub(super) fn show_committed(&self) -> Result<(), CorpusError> {
        Ok(self.fulltext.refresh()?)
    }

    /// Whether another process brought the index up to the records'
    /// generation (then its commit is seen from now on).
    fn caught_up_elsewhere(&mut self) -> Result<bool, CorpusError> {
        if self.fulltext.generation()? != self.generation {
            return Ok(false);
        }
        self.fulltext.refresh()?;
        self.indexed = self.generation;
        Ok(true)
    }

    /// Brings the document records up to `store`'s generation.
    fn catch_up_records(&mut self, store: &dyn Records) -> Result<(), CorpusError> {
        let generation = store.generation()?;
        if self.generation != generation {
            let delta = store.document_delta(self.generation)?;
            if delta.full {
                self.documents.clear();
            }
            for path in &delta.removed {
                self.documents.remove(path);
            }
            for (record, _) in delta.documents {
                self.documents.insert(record.path.clone(), Arc::new(record));
            }
            self.generation = delta.generation;
        }
        Ok(())
    }

    /// Takes the store's records at `generation` as the vector index holds
    /// them, when this side has read none yet (false otherwise): decoding
    /// every row of the store again was half of a server's warm-up (5,183
    /// abstracts: ~15 ms). Later changes come from the store as usual.
    pub(super) fn seed<'a>(&mut self, generation: u64, records: impl Iterator<Item = &'a Arc<DocumentRecord>>) -> bool {
        if self.generation != 0 || generation == 0 {
            return false;
        }
        self.documents = records.map(|r| (r.path.clone(), r.clone())).collect();
        self.generation = generation;
        true
    }

    /// The record of the document at `path`, as this side holds it.
    pub(super) fn record(&self, path: &str) -> Option<Arc<DocumentRecord>> {
        self.documents.get(path).cloned()
    }

    /// The `k` best chunks for `query` among documents passing `filter`.
    pub(super) fn search(&self, query: &str, k: usize, filter: &Filter) -> Result<Vec<Hit>, CorpusError> {
        let allowed: Option<BTreeSet<String>> = (*filter != Filter::default())
            .then(|| self.documents.iter().filter(|(_, d)| filter.matches(d)).map(|(path, _)| path.clone()).collect());
        let found = self.fulltext.search(query, k, allowed.as_ref())?;
        Ok(found
            .into_iter()
            .filter_map(|f| {
                // A hit the index still holds for a document since removed is dropped.
                let document = self.documents.get(&f.path)?.clone();
                Some(Hit { document, ordinal: f.ordinal, score: f.score })
            })
            .collect())
    }
}
