//! The keyword side of a corpus: the tantivy index and the document records
//! its hits are reported with, both kept at the store's generation without
//! touching the vector index (a keyword query never loads vectors or waits
//! for a graph build).

use super::CorpusError;
use super::records::Records;
use crate::fulltext::{Fulltext, FulltextError};
use crate::index::{Filter, Hit};
use crate::store::DocumentRecord;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

/// The keyword index and the records of the documents it holds.
pub(super) struct Keyword {
    fulltext: Fulltext,
    documents: HashMap<String, Arc<DocumentRecord>>,
    /// The store generation `documents` reflects (0: not read yet).
    generation: u64,
    /// The store generation the keyword index's readers are known to show
    /// (0: not checked yet); while it equals `generation`, a search reads
    /// neither the index's metadata nor reloads it.
    indexed: u64,
}

impl Keyword {
    /// The keyword index kept in `dir`; the records are read on first search.
    pub(super) fn open(dir: &Path) -> Result<Self, CorpusError> {
        Ok(Self { fulltext: Fulltext::open(dir)?, documents: HashMap::new(), generation: 0, indexed: 0 })
    }

    /// Brings the records and the index up to `store`'s generation, reading
    /// only what changed since each last caught up.
    pub(super) fn catch_up(&mut self, store: &dyn Records) -> Result<(), CorpusError> {
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
        if self.indexed == self.generation {
            return Ok(());
        }
        let behind = self.fulltext.generation()?;
        if behind == self.generation {
            // Brought up to date by another process: see its commit.
            self.fulltext.refresh()?;
            self.indexed = self.generation;
            return Ok(());
        }
        match self.fulltext.apply(&store.text_delta(behind)?) {
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
