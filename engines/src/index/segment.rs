//! A segment: an immutable run of chunks with their codes and, once the
//! background worker has built it, their HNSW graph.

use super::hnsw::{Graph, GraphParams};
use super::quantized::{Codes, Query};
use std::sync::{Arc, OnceLock};

/// Chunks sealed together; only its graph is filled in later, once.
pub(super) struct Segment {
    /// Unique among the index's segments, past and present.
    pub(super) id: u64,
    /// Per chunk: (document number, ordinal in the document).
    pub(super) chunks: Vec<(u32, u32)>,
    /// Per chunk: its code.
    pub(super) codes: Arc<Codes>,
    /// Set by the worker when the graph is built or read.
    pub(super) graph: OnceLock<Graph>,
}

impl Segment {
    /// A segment without a graph yet.
    pub(super) fn new(id: u64, mut chunks: Vec<(u32, u32)>, mut codes: Codes) -> Self {
        // Immutable from here: no room to grow is needed.
        chunks.shrink_to_fit();
        codes.shrink();
        Self { id, chunks, codes: Arc::new(codes), graph: OnceLock::new() }
    }

    /// Chunks held (live or not).
    pub(super) fn len(&self) -> usize {
        self.chunks.len()
    }

    /// Builds the graph unless it is there already.
    pub(super) fn build_graph(&self, params: GraphParams) -> &Graph {
        self.graph.get_or_init(|| Graph::build(&self.codes, params))
    }
}

/// A chunk found in one part of the index, by its approximate score.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    /// Approximate similarity (from the codes).
    pub(super) score: f32,
    /// Its document.
    pub(super) doc: u32,
    /// Its ordinal in the document.
    pub(super) ordinal: u32,
}

/// The best `depth` chunks of `chunks[range]` by code, among allowed documents.
pub(super) fn scan(
    query: &Query,
    chunks: &[(u32, u32)],
    codes: &Codes,
    range: std::ops::Range<usize>,
    allowed: &[bool],
    depth: usize,
) -> Vec<Candidate> {
    let mut scores = Vec::new();
    codes.scores(query, range.clone(), &mut scores);
    // A block holds at most its range's chunks (2,048 or more; `depth` may be 12,500).
    let mut best: Vec<Candidate> = Vec::with_capacity((depth * 2).min(range.len()));
    let mut floor = f32::NEG_INFINITY;
    for (&(doc, ordinal), &score) in chunks[range].iter().zip(&scores) {
        if score < floor || !allowed.get(doc as usize).copied().unwrap_or(false) {
            continue;
        }
        best.push(Candidate { score, doc, ordinal });
        // Keep twice the depth, then cut back to it: a cheap bounded top-k.
        if best.len() == depth * 2 {
            best.select_nth_unstable_by(depth - 1, |a, b| b.score.total_cmp(&a.score));
            best.truncate(depth);
            floor = best.iter().map(|c| c.score).fold(f32::INFINITY, f32::min);
        }
    }
    best
}
