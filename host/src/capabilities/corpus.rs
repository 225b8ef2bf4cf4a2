//! `ragbox:tools/corpus`: reading the store, and writing it with the
//! `corpus-write` grant.

use super::convert;
use crate::runtime::bindings::ragbox::tools::corpus::{Chunk, CorpusStats, Document, Filter, Host, NewDocument};
use crate::runtime::{Caller, HostState, Stage};

impl Host for HostState {
    fn get(&mut self, path: String) -> Result<Option<Document>, String> {
        self.timed(Stage::StoreRead, |this| {
            let doc = this.corpus()?.document(&path).map_err(|e| e.to_string())?;
            Ok(doc.as_ref().map(convert::document))
        })
    }

    fn list(&mut self, filter: Filter) -> Result<Vec<Document>, String> {
        self.timed(Stage::StoreRead, |this| {
            let docs = this.corpus()?.documents(&convert::filter(filter)).map_err(|e| e.to_string())?;
            Ok(docs.iter().map(convert::document).collect())
        })
    }

    fn chunks(&mut self, path: String) -> Result<Vec<Chunk>, String> {
        self.timed(Stage::StoreRead, |this| {
            let chunks = this.corpus()?.chunks(&path).map_err(|e| e.to_string())?;
            Ok(chunks.into_iter().map(convert::chunk).collect())
        })
    }

    fn stats(&mut self) -> Result<CorpusStats, String> {
        self.timed(Stage::StoreRead, |this| {
            let corpus = this.corpus()?;
            let s = corpus.stats().map_err(|e| e.to_string())?;
            Ok(CorpusStats {
                documents: s.documents,
                chunks: s.chunks,
                generation: s.generation,
                model_id: s.model_id,
                db_path: corpus.db_path().display().to_string(),
            })
        })
    }

    fn put(&mut self, document: NewDocument) -> Result<(), String> {
        self.timed(Stage::StoreWrite, |this| {
            this.require_corpus_write()?;
            let doc = convert::new_document(this.stamp(document))?;
            this.corpus()?.put(doc).map_err(|e| e.to_string())
        })
    }

    fn put_many(&mut self, documents: Vec<NewDocument>) -> Result<(), String> {
        self.timed(Stage::StoreWrite, |this| {
            this.require_corpus_write()?;
            let docs =
                documents.into_iter().map(|d| convert::new_document(this.stamp(d))).collect::<Result<Vec<_>, _>>()?;
            this.corpus()?.put_many(docs).map_err(|e| e.to_string())
        })
    }

    fn remove(&mut self, path: String) -> Result<bool, String> {
        self.timed(Stage::StoreWrite, |this| {
            this.require_corpus_write()?;
            this.corpus()?.remove(&path).map_err(|e| e.to_string())
        })
    }
}

/// The metadata key that says how a document came in (`list_sources`' `source_method`).
const SOURCE_METHOD_KEY: &str = "ragbox.source_method";

impl HostState {
    /// Records who wrote `document`: the file watcher marks its own, and a
    /// tool cannot claim that mark for itself.
    fn stamp(&self, mut document: NewDocument) -> NewDocument {
        document.metadata.retain(|(k, _)| k != SOURCE_METHOD_KEY);
        if self.env.caller == Caller::FileWatcher {
            document.metadata.push((SOURCE_METHOD_KEY.to_string(), "file_watcher".to_string()));
        }
        document
    }
}
