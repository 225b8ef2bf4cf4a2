//! A search hit with its relevance: what the fusion (`hybrid`), the exact
//! lookup (`exact`) and the grouping (`group`) all pass along, below each of
//! them so that none imports another for it.

use crate::bindings::ragbox::tools::vectors::Hit;

/// A hit with a relevance in 0..1 that is comparable within one response.
pub struct Scored {
    /// The chunk and its document (its `score` is the list's own: cosine or BM25).
    pub hit: Hit,
    /// How well it answers, 0..1, by the list it came from or by fusion.
    pub relevance: f64,
    /// How well the chunk itself matches, by the lists that returned it,
    /// with no share of its document's scores: orders the chunks of one
    /// file ([`crate::search::group`]). The relevance in a single list.
    pub own: f64,
}
