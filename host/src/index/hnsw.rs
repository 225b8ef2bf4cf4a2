//! The approximate tier: an instant-distance HNSW graph over every chunk,
//! used above [`HNSW_THRESHOLD`] chunks. The exact index stays beside it and
//! answers whenever the graph's candidates cannot fill k filtered hits, so
//! filters never cost results.

use super::{ExactIndex, Filter, Hit, dot};
use crate::store::Snapshot;
use instant_distance::{Builder, HnswMap, Point, Search};
use std::sync::Arc;

/// Below this many chunks an exact scan is fast enough (a few ms) and exact.
pub const HNSW_THRESHOLD: usize = 20_000;

/// Candidates one graph search returns (instant-distance's `ef`).
pub const HNSW_EF_SEARCH: usize = 200;

/// A chunk vector as a graph point: a view into the shared vector block.
#[derive(Clone)]
struct ChunkPoint {
    block: Arc<[f32]>,
    dimension: u32,
    index: u32,
}

impl ChunkPoint {
    fn vector(&self) -> &[f32] {
        let start = self.index as usize * self.dimension as usize;
        &self.block[start..start + self.dimension as usize]
    }
}

impl Point for ChunkPoint {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot(self.vector(), other.vector())
    }
}

/// Exact search, plus an HNSW graph once the index is large.
pub struct VectorIndex {
    exact: ExactIndex,
    graph: Option<HnswMap<ChunkPoint, u32>>,
}

impl VectorIndex {
    /// Builds from a snapshot; the graph only when there are at least
    /// `threshold` chunks (see [`HNSW_THRESHOLD`]).
    pub fn build(snapshot: Snapshot, threshold: usize) -> Self {
        let exact = ExactIndex::build(snapshot);
        let graph = (exact.len() >= threshold.max(1)).then(|| {
            let dimension = exact.dimension as u32;
            let points: Vec<ChunkPoint> = (0..exact.len() as u32)
                .map(|index| ChunkPoint { block: exact.vectors.clone(), dimension, index })
                .collect();
            let values: Vec<u32> = (0..exact.len() as u32).collect();
            // A fixed seed: the same snapshot gives the same graph.
            Builder::default().ef_search(HNSW_EF_SEARCH).ef_construction(200).seed(0x5EED).build(points, values)
        });
        Self { exact, graph }
    }

    /// The store generation this index reflects.
    pub fn generation(&self) -> u64 {
        self.exact.generation()
    }

    /// Number of chunks indexed.
    pub fn len(&self) -> usize {
        self.exact.len()
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }

    /// True when searches go through the HNSW graph.
    pub fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// The `k` chunks most similar to `query` among documents passing `filter`.
    pub fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Vec<Hit> {
        let exact = &self.exact;
        if !exact.accepts(query, k) {
            return Vec::new();
        }
        let allowed = exact.allowed(filter);
        let Some(graph) = self.graph.as_ref().filter(|_| k <= HNSW_EF_SEARCH) else {
            return exact.search_allowed(query, k, &allowed);
        };
        let point = ChunkPoint { block: query.into(), dimension: exact.dimension as u32, index: 0 };
        let mut search = Search::default();
        let hits: Vec<Hit> = graph
            .search(&point, &mut search)
            .map(|item| *item.value as usize)
            .filter(|&chunk| allowed[exact.chunks[chunk].0 as usize])
            .take(k)
            .map(|chunk| {
                exact.hit(chunk, dot(query, &exact.vectors[chunk * exact.dimension..(chunk + 1) * exact.dimension]))
            })
            .collect();
        if hits.len() == k {
            return hits;
        }
        // The filter kept too few of the graph's candidates: scan exactly.
        exact.search_allowed(query, k, &allowed)
    }
}
