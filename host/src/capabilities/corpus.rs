//! `ragbox:tools/corpus`: reading the store, and writing it with the
//! `corpus-write` grant.

use super::convert;
use crate::runtime::bindings::ragbox::tools::corpus::{Chunk, CorpusStats, Document, Filter, Host, NewDocument};
use crate::runtime::bindings::ragbox::tools::types::Error;
use crate::runtime::{HostState, Stage};

impl Host for HostState {
    fn get(&mut self, path: String) -> Result<Option<Document>, Error> {
        self.timed(Stage::StoreRead, |this| Ok(this.corpus()?.document(&path)?.as_ref().map(convert::document)))
    }

    fn list(&mut self, filter: Filter) -> Result<Vec<Document>, Error> {
        self.timed(Stage::StoreRead, |this| {
            let docs = this.corpus()?.documents(&convert::filter(filter))?;
            Ok(docs.iter().map(convert::document).collect())
        })
    }

    fn page(&mut self, after: Option<String>, limit: u32) -> Result<Vec<Document>, Error> {
        if limit > MAX_PAGE {
            return Err(super::error::invalid(format!("a page of {limit} documents; ask for at most {MAX_PAGE}")));
        }
        self.timed(Stage::StoreRead, |this| {
            let docs = this.corpus()?.documents_after(after.as_deref(), limit as usize)?;
            Ok(docs.iter().map(convert::document).collect())
        })
    }

    fn chunks(&mut self, path: String) -> Result<Vec<Chunk>, Error> {
        self.timed(Stage::StoreRead, |this| Ok(this.corpus()?.chunks(&path)?.into_iter().map(convert::chunk).collect()))
    }

    fn stats(&mut self) -> Result<CorpusStats, Error> {
        self.timed(Stage::StoreRead, |this| {
            let corpus = this.corpus()?;
            let s = corpus.stats()?;
            Ok(CorpusStats {
                documents: s.documents,
                chunks: s.chunks,
                generation: s.generation,
                model_id: s.model_id,
                db_path: corpus.location(),
            })
        })
    }

    fn put(&mut self, document: NewDocument) -> Result<(), Error> {
        self.timed(Stage::StoreWrite, |this| {
            this.require_corpus_write()?;
            this.refuse_secrets(std::slice::from_ref(&document))?;
            let doc = convert::new_document(this.stamp(document))?;
            Ok(this.corpus()?.put(doc)?)
        })
    }

    fn put_many(&mut self, documents: Vec<NewDocument>) -> Result<(), Error> {
        self.timed(Stage::StoreWrite, |this| {
            this.require_corpus_write()?;
            this.refuse_secrets(&documents)?;
            let docs =
                documents.into_iter().map(|d| convert::new_document(this.stamp(d))).collect::<Result<Vec<_>, _>>()?;
            Ok(this.corpus()?.put_many(docs)?)
        })
    }

    fn remove(&mut self, path: String) -> Result<bool, Error> {
        self.timed(Stage::StoreWrite, |this| {
            this.require_corpus_write()?;
            Ok(this.corpus()?.remove(&path)?)
        })
    }
}

/// Most documents one `corpus.page` call returns.
const MAX_PAGE: u32 = 10_000;

/// The metadata key that says how a document came in (`list_sources`' `source_method`).
const SOURCE_METHOD_KEY: &str = "ragbox.source_method";

impl HostState {
    /// Refuses documents whose file names mark them credentials, unless the
    /// user's config lets them in: whatever a tool read, they never reach the index.
    fn refuse_secrets(&self, documents: &[NewDocument]) -> Result<(), Error> {
        let Ok(workspace) = &self.env.workspace else { return Ok(()) };
        match documents.iter().find(|d| self.env.secrets.keeps_out(&workspace.join(&d.path))) {
            Some(secret) => Err(super::denied(format!(
                "{} is not indexed: its name marks it a file of credentials, which ragbox never indexes unless \
                 your own config lets it in (index_secrets = [\"{}\"] in {})",
                secret.path,
                secret.path,
                crate::config::user_config_shown()
            ))),
            None => Ok(()),
        }
    }

    /// Records who wrote `document`: the file watcher marks its own, and a
    /// tool cannot claim that mark for itself.
    fn stamp(&self, mut document: NewDocument) -> NewDocument {
        document.metadata.retain(|(k, _)| k != SOURCE_METHOD_KEY);
        if self.env.caller == crate::runtime::Caller::FileWatcher {
            document.metadata.push((SOURCE_METHOD_KEY.to_string(), "file_watcher".to_string()));
        }
        document
    }
}
