//! Vector search over the store's chunks.
//!
//! Exact search: every chunk scored by dot product (vectors are unit length,
//! so this is cosine similarity). Filters apply before ranking, so when k
//! chunks match the filter, k come back. Above a size threshold,
//! [`VectorIndex`] adds an HNSW graph and falls back to the exact scan
//! whenever the graph's candidates cannot fill k filtered hits.

mod filter;
mod hnsw;

pub use filter::Filter;
pub use hnsw::{HNSW_EF_SEARCH, HNSW_THRESHOLD, VectorIndex};

use crate::store::{DocumentRecord, Snapshot};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

/// One search hit: a chunk of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The document.
    pub document: Arc<DocumentRecord>,
    /// The chunk's position in it.
    pub ordinal: u32,
    /// Cosine similarity with the query, -1..1.
    pub score: f32,
}

/// Chunk vectors in one contiguous block, with the document each belongs to.
#[derive(Debug, Default)]
pub struct ExactIndex {
    generation: u64,
    dimension: usize,
    documents: Vec<Arc<DocumentRecord>>,
    /// Per chunk: (index into `documents`, ordinal).
    chunks: Vec<(u32, u32)>,
    vectors: Arc<[f32]>,
}

impl ExactIndex {
    /// Builds the index from a store snapshot.
    pub fn build(snapshot: Snapshot) -> Self {
        let dimension = snapshot.documents.iter().flat_map(|(_, v)| v.first()).map(Vec::len).next().unwrap_or(0);
        let mut index = Self { generation: snapshot.generation, dimension, ..Default::default() };
        let mut block = Vec::new();
        for (record, vectors) in snapshot.documents {
            let doc = index.documents.len() as u32;
            index.documents.push(Arc::new(record));
            for (ordinal, vector) in vectors.into_iter().enumerate() {
                // The store refuses wrong lengths; skip rather than misalign if one slipped in.
                if vector.len() == dimension {
                    index.chunks.push((doc, ordinal as u32));
                    block.extend_from_slice(&vector);
                }
            }
        }
        index.vectors = block.into();
        index
    }

    /// The store generation this index reflects.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Number of chunks indexed.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The `k` chunks most similar to `query` among those whose document passes
    /// `filter`, best first.
    pub fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Vec<Hit> {
        if !self.accepts(query, k) {
            return Vec::new();
        }
        self.search_allowed(query, k, &self.allowed(filter))
    }

    /// True when a query of this shape can have hits.
    fn accepts(&self, query: &[f32], k: usize) -> bool {
        k > 0 && self.dimension > 0 && query.len() == self.dimension
    }

    /// Per document: does it pass `filter`?
    fn allowed(&self, filter: &Filter) -> Vec<bool> {
        self.documents.iter().map(|d| filter.matches(d)).collect()
    }

    /// The hit for chunk number `chunk`.
    fn hit(&self, chunk: usize, score: f32) -> Hit {
        let (doc, ordinal) = self.chunks[chunk];
        Hit { document: self.documents[doc as usize].clone(), ordinal, score }
    }

    /// Exact top-k among chunks of allowed documents.
    fn search_allowed(&self, query: &[f32], k: usize, allowed: &[bool]) -> Vec<Hit> {
        // A min-heap of the best k so far.
        let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(k + 1);
        for (i, (doc, _)) in self.chunks.iter().enumerate() {
            if !allowed[*doc as usize] {
                continue;
            }
            let vector = &self.vectors[i * self.dimension..(i + 1) * self.dimension];
            let score = dot(query, vector);
            if best.len() < k {
                best.push(Scored { score, chunk: i });
            } else if best.peek().is_some_and(|worst| score > worst.score) {
                best.pop();
                best.push(Scored { score, chunk: i });
            }
        }
        let mut hits: Vec<Scored> = best.into_vec();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
        hits.into_iter().map(|s| self.hit(s.chunk, s.score)).collect()
    }
}

/// Dot product; written so the compiler vectorises it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks.remainder().iter().zip(b_chunks.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// A chunk's score, ordered so the heap's top is the worst kept.
#[derive(Debug, Clone, Copy)]
struct Scored {
    score: f32,
    chunk: usize,
}

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: lower score = "greater", so BinaryHeap pops the worst.
        other.score.total_cmp(&self.score).then(self.chunk.cmp(&other.chunk))
    }
}
