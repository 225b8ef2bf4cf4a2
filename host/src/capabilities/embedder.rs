//! `ragbox:tools/embedder`: the model, run natively.

use super::error::invalid;
use crate::embed::EmbedKind as Kind;
use crate::runtime::bindings::ragbox::tools::embedder::{EmbedKind, Host, ModelInfo};
use crate::runtime::bindings::ragbox::tools::types::Error;
use crate::runtime::{HostState, Stage};

/// Texts one call may send: enough for any batch, small enough to bound memory.
const MAX_TEXTS: usize = 4096;

/// Text past which embedding or tokenizing takes long enough (tens of
/// milliseconds and up) that the call lets go of the store first, so other
/// processes need not wait; a query's few milliseconds keep it.
const LONG_TEXT_BYTES: usize = 4096;

impl Host for HostState {
    fn model(&mut self) -> Result<ModelInfo, Error> {
        // The first use loads the model: its time belongs to the embed stage.
        self.timed(Stage::Embed, |this| {
            let embedder = this.embedder()?;
            let info = embedder.info();
            Ok(ModelInfo { id: info.id.clone(), dimension: info.dimension as u32, max_tokens: info.max_tokens as u32 })
        })
    }

    fn embed(&mut self, texts: Vec<String>, kind: EmbedKind) -> Result<Vec<Vec<f32>>, Error> {
        self.timed(Stage::Embed, |this| this.embed_texts(&texts, super::convert::embed_kind(kind)))
    }

    fn token_offsets(&mut self, text: String) -> Result<Vec<u32>, Error> {
        self.timed(Stage::Tokenize, |this| {
            if text.len() > LONG_TEXT_BYTES {
                this.release_store();
            }
            let embedder = this.embedder()?;
            let guard = &this.guard;
            Ok(embedder.token_offsets_until(&text, || guard.must_stop())?)
        })
    }
}

impl HostState {
    /// One vector per text, stopping when the call must; counts the tokens.
    pub(super) fn embed_texts(&mut self, texts: &[String], kind: Kind) -> Result<Vec<Vec<f32>>, Error> {
        if texts.len() > MAX_TEXTS {
            return Err(invalid(format!("{} texts in one call; send at most {MAX_TEXTS}", texts.len())));
        }
        if texts.iter().map(String::len).sum::<usize>() > LONG_TEXT_BYTES {
            self.release_store();
        }
        let embedder = self.embedder()?;
        let guard = &self.guard;
        let before = embedder.tokens_embedded();
        // Only an index's passages go through the embedding cache: a tool that may not write
        // the index (search_similar's reference text, any client-supplied text) is embedded as
        // it comes, so that nothing a client sends is kept or sent to the team's table; and a
        // query is never kept (nor does a search wait on a cache write).
        let cached = match kind {
            Kind::Passage if self.env.grants.corpus_write => self.corpus_of_call().ok(),
            _ => None,
        };
        let (vectors, from) = match cached {
            Some(corpus) => match corpus.embed_passages(texts, || guard.must_stop()) {
                Ok((vectors, from)) => (Ok(vectors), from),
                Err(e) => (Err(Error::from(e)), Default::default()),
            },
            None => (embedder.embed_until(texts, kind, || guard.must_stop()).map_err(Error::from), Default::default()),
        };
        self.stages.passages += from;
        // Other calls may share the model: the count is only exact for one call at a time.
        self.stages.tokens_embedded += embedder.tokens_embedded().saturating_sub(before);
        vectors
    }
}
