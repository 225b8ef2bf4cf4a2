//! The approximate tier: an instant-distance HNSW graph over one segment's
//! int8 codes. Its distances are the codes' (four times less memory to read
//! than f32); the index re-scores what it returns with the store's vectors.

use super::quantized::{Codes, Query};
use instant_distance::{Builder, HnswMap, Search};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::sync::Arc;

/// How graphs are built and searched; chosen by measurement
/// (`cargo bench --bench vectors`, bench/results/vectors.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphParams {
    /// Candidates kept while inserting (instant-distance's `ef_construction`).
    pub ef_construction: usize,
    /// Candidates one search returns (its `ef_search`).
    pub ef_search: usize,
}

/// A graph point: a stored chunk's code, or the query being searched for.
#[derive(Clone)]
enum Point {
    Chunk { codes: Arc<Codes>, index: u32 },
    Query(Arc<Query>),
}

impl instant_distance::Point for Point {
    fn distance(&self, other: &Self) -> f32 {
        let similarity = match (self, other) {
            (Point::Chunk { codes: a, index: i }, Point::Chunk { codes: b, index: j }) if Arc::ptr_eq(a, b) => {
                a.dot(*i as usize, *j as usize)
            }
            (Point::Query(q), Point::Chunk { codes, index }) | (Point::Chunk { codes, index }, Point::Query(q)) => {
                q.dot(codes, *index as usize)
            }
            // Never happens: one graph's points share one block and a search has one query.
            _ => 0.0,
        };
        1.0 - similarity
    }
}

thread_local! {
    /// The codes that points being deserialized refer to (see [`Graph::read`]).
    static LOADING: RefCell<Option<Arc<Codes>>> = const { RefCell::new(None) };
}

/// A point is saved as its chunk number: the codes are saved once, with the segment.
impl Serialize for Point {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Point::Chunk { index, .. } => index.serialize(s),
            Point::Query(_) => Err(serde::ser::Error::custom("a query is not part of a graph")),
        }
    }
}

impl<'de> Deserialize<'de> for Point {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let index = u32::deserialize(d)?;
        let codes = LOADING
            .with(|l| l.borrow().clone())
            .ok_or_else(|| serde::de::Error::custom("graph points read without their codes"))?;
        if index as usize >= codes.len() {
            return Err(serde::de::Error::custom(format!("graph point {index} is past the segment's codes")));
        }
        Ok(Point::Chunk { codes, index })
    }
}

/// An HNSW graph whose values are the segment's chunk numbers.
pub(super) struct Graph {
    map: HnswMap<Point, u32>,
}

impl Graph {
    /// Builds over every vector of `codes` (on the calling thread's rayon pool).
    pub(super) fn build(codes: &Arc<Codes>, params: GraphParams) -> Self {
        let len = codes.len() as u32;
        let points: Vec<Point> = (0..len).map(|index| Point::Chunk { codes: codes.clone(), index }).collect();
        // A fixed seed: the same vectors give the same graph.
        let map = Builder::default()
            .ef_search(params.ef_search)
            .ef_construction(params.ef_construction)
            .seed(0x5EED)
            .build(points, (0..len).collect());
        Self { map }
    }

    /// The graph as bytes (its points as chunk numbers).
    pub(super) fn write(&self) -> Result<Vec<u8>, String> {
        postcard::to_stdvec(&self.map).map_err(|e| e.to_string())
    }

    /// Reads a graph written by [`Self::write`] over `codes`.
    pub(super) fn read(bytes: &[u8], codes: Arc<Codes>) -> Result<Self, String> {
        LOADING.with(|l| *l.borrow_mut() = Some(codes));
        let map = postcard::from_bytes(bytes).map_err(|e| e.to_string());
        LOADING.with(|l| *l.borrow_mut() = None);
        Ok(Self { map: map? })
    }

    /// Chunk numbers near `query` with their approximate similarity, nearest
    /// first (up to the graph's `ef_search`).
    pub(super) fn candidates(&self, query: &Arc<Query>) -> Vec<(usize, f32)> {
        let point = Point::Query(query.clone());
        let mut search = Search::default();
        self.map.search(&point, &mut search).map(|item| (*item.value as usize, 1.0 - item.distance)).collect()
    }
}
