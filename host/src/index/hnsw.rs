//! The approximate tier: an instant-distance HNSW graph over the index's base
//! block of chunk vectors, used above [`HNSW_THRESHOLD`] chunks.

use super::dot;
use instant_distance::{Builder, HnswMap, Point, Search};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::sync::Arc;

/// Below this many chunks an exact scan is fast and exact. Measured here
/// (bench/results/vectors.md): at 50,000 384-d chunks the scan answers in
/// 2.8 ms p50 and the graph (ef 200) in 4.2 ms, after a 140 s build; the
/// graph only pays off on larger stores.
pub const HNSW_THRESHOLD: usize = 100_000;

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

thread_local! {
    /// The vector block points being deserialized refer to (see [`Graph::read`]).
    static LOADING: RefCell<Option<(Arc<[f32]>, u32)>> = const { RefCell::new(None) };
}

/// A point is saved as its chunk number: the vectors are saved once, as the block.
impl Serialize for ChunkPoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.index.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ChunkPoint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let index = u32::deserialize(d)?;
        let (block, dimension) = LOADING
            .with(|l| l.borrow().clone())
            .ok_or_else(|| serde::de::Error::custom("graph points read without their vectors"))?;
        if (index as usize + 1) * dimension as usize > block.len() {
            return Err(serde::de::Error::custom(format!("graph point {index} is past the saved vectors")));
        }
        Ok(Self { block, dimension, index })
    }
}

/// An HNSW graph whose values are chunk numbers.
pub(super) struct Graph {
    map: HnswMap<ChunkPoint, u32>,
    dimension: u32,
}

impl Graph {
    /// Builds over the first `len` vectors of `block`.
    pub(super) fn build(block: Arc<[f32]>, dimension: usize, len: usize) -> Self {
        let dimension = dimension as u32;
        let points: Vec<ChunkPoint> =
            (0..len as u32).map(|index| ChunkPoint { block: block.clone(), dimension, index }).collect();
        let values: Vec<u32> = (0..len as u32).collect();
        // A fixed seed: the same vectors give the same graph.
        let map = Builder::default().ef_search(HNSW_EF_SEARCH).ef_construction(200).seed(0x5EED).build(points, values);
        Self { map, dimension }
    }

    /// The graph as bytes (its points as chunk numbers).
    pub(super) fn write(&self) -> Result<Vec<u8>, String> {
        postcard::to_stdvec(&self.map).map_err(|e| e.to_string())
    }

    /// Reads a graph written by [`Self::write`] over the vectors in `block`.
    pub(super) fn read(bytes: &[u8], block: Arc<[f32]>, dimension: usize) -> Result<Self, String> {
        LOADING.with(|l| *l.borrow_mut() = Some((block, dimension as u32)));
        let map = postcard::from_bytes(bytes).map_err(|e| e.to_string());
        LOADING.with(|l| *l.borrow_mut() = None);
        Ok(Self { map: map?, dimension: dimension as u32 })
    }

    /// Chunk numbers nearest `query`, nearest first (up to [`HNSW_EF_SEARCH`]).
    pub(super) fn candidates(&self, query: &[f32]) -> impl Iterator<Item = usize> {
        let point = ChunkPoint { block: query.into(), dimension: self.dimension, index: 0 };
        let mut search = Search::default();
        let found: Vec<usize> = self.map.search(&point, &mut search).map(|item| *item.value as usize).collect();
        found.into_iter()
    }
}
