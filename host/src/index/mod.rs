//! Vector search over the store's chunks.
//!
//! Every chunk's vector sits in memory; a search scores chunks by dot product
//! (vectors are unit length, so this is cosine similarity). Filters apply
//! before ranking, so when k chunks match the filter, k come back. Above
//! [`HNSW_THRESHOLD`] chunks an HNSW graph (see `hnsw`) answers first and the
//! exact scan is the fallback whenever the graph cannot fill k filtered hits.
//!
//! The index follows the store through [`VectorIndex::apply`]: removed and
//! replaced documents become tombstones, new chunks go to an exact "fresh"
//! buffer beside the graph, and the whole index is rebuilt from its own live
//! data once the buffer or the tombstones grow large.

mod filter;
mod hnsw;
mod saved;

pub use filter::Filter;
pub use hnsw::{HNSW_EF_SEARCH, HNSW_THRESHOLD};

use crate::store::{DocumentRecord, Snapshot};
use hnsw::Graph;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::ops::Range;
use std::sync::Arc;

/// Fresh chunks beside a graph before it is rebuilt: this many, or a tenth of the graph.
const FRESH_LIMIT: usize = 2048;

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

/// A document and its similarity to another.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentHit {
    /// The document.
    pub document: Arc<DocumentRecord>,
    /// Cosine similarity of the two documents' mean chunk vectors.
    pub score: f32,
}

/// The chunk vectors of the store at one generation.
pub struct VectorIndex {
    generation: u64,
    dimension: usize,
    threshold: usize,
    documents: Vec<Arc<DocumentRecord>>,
    /// Per document: false once removed or replaced (a tombstone).
    live: Vec<bool>,
    /// Per document: its chunks' numbers (contiguous).
    spans: Vec<Range<u32>>,
    by_path: HashMap<String, u32>,
    /// Per chunk: (document, ordinal).
    chunks: Vec<(u32, u32)>,
    /// Vectors of chunks `0..base_len`, which the graph (if any) covers.
    base: Arc<[f32]>,
    base_len: usize,
    /// Vectors of chunks `base_len..`, added since the last build.
    fresh: Vec<f32>,
    dead_chunks: usize,
    graph: Option<Graph>,
}

impl VectorIndex {
    /// Builds from a snapshot; with an HNSW graph when there are at least
    /// `threshold` chunks (see [`HNSW_THRESHOLD`]; `usize::MAX` keeps it exact).
    pub fn build(snapshot: Snapshot, threshold: usize) -> Self {
        let dimension = snapshot.documents.iter().flat_map(|(_, v)| v.first()).map(Vec::len).next().unwrap_or(0);
        let mut index = Self::empty(snapshot.generation, dimension, threshold);
        for (record, vectors) in snapshot.documents {
            index.push(record, vectors);
        }
        index.seal();
        index
    }

    fn empty(generation: u64, dimension: usize, threshold: usize) -> Self {
        Self {
            generation,
            dimension,
            threshold,
            documents: Vec::new(),
            live: Vec::new(),
            spans: Vec::new(),
            by_path: HashMap::new(),
            chunks: Vec::new(),
            base: Arc::from(Vec::new()),
            base_len: 0,
            fresh: Vec::new(),
            dead_chunks: 0,
            graph: None,
        }
    }

    /// Appends a document to the fresh buffer, tombstoning an older version.
    fn push(&mut self, record: DocumentRecord, vectors: Vec<Vec<f32>>) {
        self.tombstone(&record.path);
        if self.dimension == 0 {
            self.dimension = vectors.first().map_or(0, Vec::len);
        }
        let doc = self.documents.len() as u32;
        let start = self.chunks.len() as u32;
        for (ordinal, vector) in vectors.into_iter().enumerate() {
            // The store refuses wrong lengths; skip rather than misalign if one slipped in.
            if vector.len() == self.dimension {
                self.chunks.push((doc, ordinal as u32));
                self.fresh.extend_from_slice(&vector);
            }
        }
        self.by_path.insert(record.path.clone(), doc);
        self.documents.push(Arc::new(record));
        self.live.push(true);
        self.spans.push(start..self.chunks.len() as u32);
    }

    fn tombstone(&mut self, path: &str) {
        if let Some(doc) = self.by_path.remove(path) {
            self.live[doc as usize] = false;
            self.dead_chunks += self.spans[doc as usize].len();
        }
    }

    /// Moves the fresh buffer into the base block and builds the graph when large enough.
    fn seal(&mut self) {
        let mut block = Vec::with_capacity(self.base_len * self.dimension + self.fresh.len());
        block.extend_from_slice(&self.base);
        block.append(&mut self.fresh);
        self.base = block.into();
        self.base_len = self.chunks.len();
        self.graph = (self.live_chunks() >= self.threshold.max(1) && self.dimension > 0)
            .then(|| Graph::build(self.base.clone(), self.dimension, self.base_len));
    }

    /// Brings the index to the store generation in `delta` (from
    /// [`crate::store::Store::vector_delta`] at [`Self::generation`]); true
    /// when that rebuilt it (worth saving again).
    pub fn apply(&mut self, delta: Snapshot) -> bool {
        if delta.full {
            *self = Self::build(delta, self.threshold);
            return true;
        }
        for path in &delta.removed {
            self.tombstone(path);
        }
        for (record, vectors) in delta.documents {
            self.push(record, vectors);
        }
        self.generation = delta.generation;
        let fresh_len = self.chunks.len() - self.base_len;
        let graph_due = self.live_chunks() >= self.threshold
            && (self.graph.is_none() || fresh_len > FRESH_LIMIT.max(self.base_len / 10));
        let due = graph_due || self.dead_chunks > self.live_chunks().max(FRESH_LIMIT);
        if due {
            self.compact();
        }
        due
    }

    /// Rebuilds from the live documents only, dropping tombstones.
    fn compact(&mut self) {
        let mut fresh = Self::empty(self.generation, self.dimension, self.threshold);
        for doc in 0..self.documents.len() {
            if self.live[doc] {
                let vectors = self.spans[doc].clone().map(|c| self.vector(c as usize).to_vec()).collect();
                fresh.push((*self.documents[doc]).clone(), vectors);
            }
        }
        fresh.seal();
        *self = fresh;
    }

    /// The store generation this index reflects.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Number of chunks searchable.
    pub fn len(&self) -> usize {
        self.live_chunks()
    }

    fn live_chunks(&self) -> usize {
        self.chunks.len() - self.dead_chunks
    }

    /// True when nothing is searchable.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when searches go through an HNSW graph.
    pub fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    fn vector(&self, chunk: usize) -> &[f32] {
        let d = self.dimension;
        if chunk < self.base_len {
            &self.base[chunk * d..(chunk + 1) * d]
        } else {
            let i = chunk - self.base_len;
            &self.fresh[i * d..(i + 1) * d]
        }
    }

    /// Per document: live and passing `filter`.
    fn allowed(&self, filter: &Filter) -> Vec<bool> {
        self.documents.iter().zip(&self.live).map(|(d, &live)| live && filter.matches(d)).collect()
    }

    fn hit(&self, chunk: usize, score: f32) -> Hit {
        let (doc, ordinal) = self.chunks[chunk];
        Hit { document: self.documents[doc as usize].clone(), ordinal, score }
    }

    /// The `k` chunks most similar to `query` among documents passing `filter`, best first.
    pub fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Vec<Hit> {
        if k == 0 || self.dimension == 0 || query.len() != self.dimension {
            return Vec::new();
        }
        let allowed = self.allowed(filter);
        if let Some(graph) = self.graph.as_ref().filter(|_| k <= HNSW_EF_SEARCH) {
            let from_graph: Vec<Scored> = graph
                .candidates(query)
                .filter(|&chunk| allowed[self.chunks[chunk].0 as usize])
                .take(k)
                .map(|chunk| Scored { score: dot(query, self.vector(chunk)), chunk })
                .collect();
            // Fewer than k means the filter kept too few of the graph's
            // candidates: only the exact scan below is sure to find k.
            if from_graph.len() == k {
                let mut merged = self.scan(query, k, &allowed, self.base_len..self.chunks.len());
                merged.extend(from_graph);
                return self.best(merged, k);
            }
        }
        let all = self.scan(query, k, &allowed, 0..self.chunks.len());
        self.best(all, k)
    }

    /// Exact top-k among allowed chunks in `range`.
    fn scan(&self, query: &[f32], k: usize, allowed: &[bool], range: Range<usize>) -> Vec<Scored> {
        // A min-heap of the best k so far.
        let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(k + 1);
        for chunk in range {
            if !allowed[self.chunks[chunk].0 as usize] {
                continue;
            }
            let score = dot(query, self.vector(chunk));
            if best.len() < k {
                best.push(Scored { score, chunk });
            } else if best.peek().is_some_and(|worst| score > worst.score) {
                best.pop();
                best.push(Scored { score, chunk });
            }
        }
        best.into_vec()
    }

    fn best(&self, mut scored: Vec<Scored>, k: usize) -> Vec<Hit> {
        scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
        scored.dedup_by_key(|s| s.chunk);
        scored.into_iter().take(k).map(|s| self.hit(s.chunk, s.score)).collect()
    }

    /// The `k` documents most like the one at `path` (itself excluded) among
    /// those passing `filter`, by the cosine of their mean chunk vectors;
    /// `None` when `path` is not indexed.
    pub fn similar_documents(&self, path: &str, k: usize, filter: &Filter) -> Option<Vec<DocumentHit>> {
        let source = *self.by_path.get(path)?;
        let Some(centre) = self.centroid(source) else { return Some(Vec::new()) };
        let allowed = self.allowed(filter);
        let mut hits: Vec<DocumentHit> = (0..self.documents.len())
            .filter(|&d| allowed[d] && d != source as usize)
            .filter_map(|d| {
                let score = dot(&centre, &self.centroid(d as u32)?);
                Some(DocumentHit { document: self.documents[d].clone(), score })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.document.path.cmp(&b.document.path)));
        hits.truncate(k);
        Some(hits)
    }

    /// A document's mean chunk vector, unit length; `None` without chunks.
    fn centroid(&self, doc: u32) -> Option<Vec<f32>> {
        let span = self.spans[doc as usize].clone();
        if span.is_empty() {
            return None;
        }
        let mut sum = vec![0.0f32; self.dimension];
        for chunk in span {
            for (s, x) in sum.iter_mut().zip(self.vector(chunk as usize)) {
                *s += x;
            }
        }
        let norm = dot(&sum, &sum).sqrt().max(1e-12);
        Some(sum.into_iter().map(|x| x / norm).collect())
    }
}

/// Dot product; written so the compiler vectorises it.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
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
