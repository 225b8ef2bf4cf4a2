//! `ragbox:tools/vectors` and `ragbox:tools/fulltext`: searching the index.

use super::convert;
use crate::runtime::bindings::ragbox::tools::corpus::Filter;
use crate::runtime::bindings::ragbox::tools::{fulltext, vectors};
use crate::runtime::{HostState, Stage};

/// Most hits one search returns.
const MAX_K: u32 = 10_000;

fn check_k(k: u32) -> Result<usize, String> {
    if k > MAX_K {
        return Err(format!("k = {k} is over the limit of {MAX_K} hits per search"));
    }
    Ok(k as usize)
}

impl vectors::Host for HostState {
    fn search(&mut self, vector: Vec<f32>, k: u32, filter: Filter) -> Result<Vec<vectors::Hit>, String> {
        self.timed(Stage::VectorSearch, |this| {
            let k = check_k(k)?;
            let hits =
                this.corpus()?.search_vectors(&vector, k, &convert::filter(filter)).map_err(|e| e.to_string())?;
            Ok(hits.into_iter().map(convert::hit).collect())
        })
    }

    fn similar_documents(&mut self, path: String, k: u32, filter: Filter) -> Result<Vec<vectors::DocumentHit>, String> {
        self.timed(Stage::VectorSearch, |this| {
            let k = check_k(k)?;
            match this.corpus()?.similar_documents(&path, k, &convert::filter(filter)).map_err(|e| e.to_string())? {
                Some(hits) => Ok(hits.into_iter().map(convert::document_hit).collect()),
                None => Err(format!("document not indexed: {path}")),
            }
        })
    }
}

impl fulltext::Host for HostState {
    fn search(&mut self, query: String, k: u32, filter: Filter) -> Result<Vec<vectors::Hit>, String> {
        self.timed(Stage::KeywordSearch, |this| {
            let k = check_k(k)?;
            let hits =
                this.corpus()?.search_fulltext(&query, k, &convert::filter(filter)).map_err(|e| e.to_string())?;
            Ok(hits.into_iter().map(convert::hit).collect())
        })
    }
}
