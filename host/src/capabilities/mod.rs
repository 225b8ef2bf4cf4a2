//! The host side of the WIT interfaces components import. Thin: each function
//! checks its inputs and grants, then calls into the corpus below. The call's
//! state (`HostState`) comes from the runtime; how capabilities reach the
//! index, the model and the grants through it is defined here.

mod convert;
mod corpus;
mod embedder;
mod error;
mod extract;
mod host;
mod search;

use crate::corpus::Corpus;
use crate::runtime::HostState;
use crate::runtime::bindings::ragbox::tools::types::Error;
use error::{denied, internal};
use std::sync::Arc;
use std::time::Instant;

/// What every capability needs from the call: its index (with the store
/// held), the model, and its grants.
impl HostState {
    /// The call's index, or why there is none (a refused workspace).
    fn corpus_of_call(&self) -> Result<&Arc<Corpus>, Error> {
        match (&self.env.corpus, &self.env.workspace) {
            (Some(corpus), _) => Ok(corpus),
            (None, Err(reason)) => Err(denied(reason.clone())),
            (None, Ok(_)) => Err(internal("no index is available to this call")),
        }
    }

    /// The call's index, its store held open for the operations that follow
    /// (one open per call rather than per operation).
    fn corpus(&mut self) -> Result<Arc<Corpus>, Error> {
        let corpus = self.corpus_of_call()?.clone();
        if self.held.is_none() {
            self.held = corpus.hold()?;
        }
        self.store_used = Instant::now();
        Ok(corpus)
    }

    /// The embedding model, loaded on first use.
    fn embedder(&mut self) -> Result<Arc<crate::embed::Embedder>, Error> {
        Ok(self.corpus_of_call()?.embedder().get()?)
    }

    /// Closes the held store now (before long work: other processes may want it).
    fn release_store(&mut self) {
        self.held = None;
    }

    /// Fails unless the tool holds the `corpus-write` grant.
    fn require_corpus_write(&self) -> Result<(), Error> {
        if self.env.grants.corpus_write {
            return Ok(());
        }
        Err(denied(format!(
            "tool '{0}' may not change the index: it lacks the corpus-write grant \
             (add grants = [\"corpus-write\"] under [tools.{0}] in your config, {1}, to allow it)",
            self.tool,
            crate::config::user_config_shown()
        )))
    }
}
