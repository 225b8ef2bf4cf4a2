//! `ragbox:tools/vectors` and `ragbox:tools/fulltext`: searching the index.
//! The host checks what every tool relies on: vectors compared only with
//! vectors of the same model, and no model loaded for an empty index.

use super::convert;
use super::error::{error, invalid};
use crate::corpus::Corpus;
use crate::runtime::bindings::ragbox::tools::corpus::Filter;
use crate::runtime::bindings::ragbox::tools::types::{Error, ErrorCode};
use crate::runtime::bindings::ragbox::tools::{fulltext, vectors};
use crate::runtime::{HostState, Stage};
use std::time::Instant;

/// Most hits one search returns.
const MAX_K: u32 = 10_000;

/// Bytes of a keyword query read: every word becomes a term of one query,
/// so a megabyte "query" would cost the host gigabytes and seconds. Far more
/// than any question holds; the rest is left out.
const MAX_KEYWORD_QUERY_BYTES: usize = 16 << 10;

/// The first [`MAX_KEYWORD_QUERY_BYTES`] of `query`, cut after a word.
fn keyword_query(query: &str) -> &str {
    query[..crate::text::word_end(query, 0, MAX_KEYWORD_QUERY_BYTES)].trim_end()
}

fn check_k(k: u32) -> Result<usize, Error> {
    if k > MAX_K {
        return Err(invalid(format!("k = {k} is over the limit of {MAX_K} hits per search")));
    }
    Ok(k as usize)
}

impl HostState {
    /// The nearest chunks to `vector`, made by the model the host runs now.
    fn nearest(&mut self, vector: &[f32], k: usize, filter: Filter) -> Result<Vec<vectors::Hit>, Error> {
        let model = self.embedder()?.info().clone();
        if vector.len() != model.dimension {
            let got = vector.len();
            return Err(invalid(format!("a vector of length {got}; model {} makes {}", model.id, model.dimension)));
        }
        let corpus = self.corpus()?;
        corpus.stats()?.check_model(&model.id)?;
        search(&corpus, vector, k, filter)
    }
}

/// The `k` chunks nearest `vector` in `corpus`, as WIT hits.
fn search(corpus: &Corpus, vector: &[f32], k: usize, filter: Filter) -> Result<Vec<vectors::Hit>, Error> {
    let hits = corpus.search_vectors(vector, k, &convert::filter(filter))?;
    Ok(hits.into_iter().map(convert::hit).collect())
}

impl vectors::Host for HostState {
    fn state(&mut self) -> Result<Option<vectors::IndexState>, Error> {
        Ok(self.corpus()?.vector_state().map(|s| vectors::IndexState {
            in_graphs: s.in_graphs,
            exact: s.exact,
            tombstones: s.tombstones,
            segments: s.segments,
            building: s.building,
            queued: s.queued,
        }))
    }

    fn search(&mut self, vector: Vec<f32>, k: u32, filter: Filter) -> Result<Vec<vectors::Hit>, Error> {
        self.timed(Stage::VectorSearch, |this| this.nearest(&vector, check_k(k)?, filter))
    }

    fn search_text(
        &mut self,
        text: String,
        kind: vectors::EmbedKind,
        k: u32,
        filter: Filter,
    ) -> Result<Vec<vectors::Hit>, Error> {
        let started = Instant::now();
        let mut embedding = std::time::Duration::ZERO;
        let hits = (|| {
            let k = check_k(k)?;
            let corpus = self.corpus()?;
            let stats = corpus.stats()?;
            if stats.documents == 0 {
                let hint = "nothing is embedded yet: run embed_workspace (or `ragbox index`) first";
                return Err(error(ErrorCode::NotIndexed, hint));
            }
            let embed_started = Instant::now();
            let vector = self.embed_texts(&[text], convert::embed_kind(kind)).map(|mut v| v.pop());
            embedding = embed_started.elapsed();
            let vector = vector?.ok_or_else(|| error(ErrorCode::Internal, "the model gave no vector for the text"))?;
            // The model is loaded now; its own vector needs no length check.
            stats.check_model(&self.embedder()?.info().id)?;
            // Embedding a long text lets the store go: hold it again for the search's reads.
            self.corpus()?;
            search(&corpus, &vector, k, filter)
        })();
        // One call, its time split between the model and the search.
        self.stages.record(Stage::Embed, embedding, 0);
        self.stages.record(Stage::VectorSearch, started.elapsed().saturating_sub(embedding), 1);
        hits
    }

    fn similar_documents(&mut self, path: String, k: u32, filter: Filter) -> Result<Vec<vectors::DocumentHit>, Error> {
        self.timed(Stage::VectorSearch, |this| {
            let k = check_k(k)?;
            match this.corpus()?.similar_documents(&path, k, &convert::filter(filter))? {
                Some(hits) => Ok(hits.into_iter().map(convert::document_hit).collect()),
                None => Err(error(ErrorCode::NotIndexed, format!("document not indexed: {path}"))),
            }
        })
    }
}

impl fulltext::Host for HostState {
    fn search(&mut self, query: String, k: u32, filter: Filter) -> Result<Vec<vectors::Hit>, Error> {
        self.timed(Stage::KeywordSearch, |this| {
            let k = check_k(k)?;
            let hits = this.corpus()?.search_fulltext(keyword_query(&query), k, &convert::filter(filter))?;
            Ok(hits.into_iter().map(convert::hit).collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_queries_are_cut_after_a_word() {
        assert_eq!(keyword_query("two words"), "two words");
        let long = "pelican ".repeat(10_000);
        let cut = keyword_query(&long);
        assert!(cut.len() <= MAX_KEYWORD_QUERY_BYTES && cut.ends_with("pelican"), "{}", cut.len());
        let unbroken = "é".repeat(MAX_KEYWORD_QUERY_BYTES);
        assert!(keyword_query(&unbroken).len() <= MAX_KEYWORD_QUERY_BYTES);
    }
}
