//! Saving a large index to disk so the next process loads it instead of
//! rebuilding its HNSW graph (tens of seconds at 50,000 chunks). The file
//! records the store generation it reflects; a loaded index then catches up
//! through the store's change log like any other. A file that cannot be read
//! is ignored and the index rebuilt: it is derived data.

use super::VectorIndex;
use super::hnsw::Graph;
use crate::store::DocumentRecord;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Bumped when the layout changes; other versions are rebuilt.
const VERSION: u32 = 1;

/// Everything but the graph, which follows it in the file.
#[derive(Serialize, Deserialize)]
struct Header {
    version: u32,
    generation: u64,
    dimension: u32,
    documents: Vec<DocumentRecord>,
    live: Vec<bool>,
    spans: Vec<(u32, u32)>,
    chunks: Vec<(u32, u32)>,
    base: Vec<f32>,
    fresh: Vec<f32>,
    dead_chunks: u64,
}

impl VectorIndex {
    /// Writes the index to `path` (atomically: a temporary file renamed over it).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let header = Header {
            version: VERSION,
            generation: self.generation,
            dimension: self.dimension as u32,
            documents: self.documents.iter().map(|d| (**d).clone()).collect(),
            live: self.live.clone(),
            spans: self.spans.iter().map(|r| (r.start, r.end)).collect(),
            chunks: self.chunks.clone(),
            base: self.base.to_vec(),
            fresh: self.fresh.clone(),
            dead_chunks: self.dead_chunks as u64,
        };
        let mut bytes = postcard::to_stdvec(&header).map_err(|e| e.to_string())?;
        if let Some(graph) = &self.graph {
            bytes.extend(graph.write()?);
        }
        let dir = path.parent().ok_or("index path has no folder")?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
        tmp.write_all(&bytes).map_err(|e| e.to_string())?;
        tmp.persist(path).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Reads an index written by [`Self::save`]; `None` (with a log line)
    /// when there is none or it cannot be used.
    pub fn load(path: &Path, threshold: usize) -> Option<Self> {
        let bytes = std::fs::read(path).ok()?;
        match Self::decode(&bytes, threshold) {
            Ok(index) => Some(index),
            Err(e) => {
                tracing::warn!("ignoring saved vector index {}: {e}; rebuilding it", path.display());
                None
            }
        }
    }

    fn decode(bytes: &[u8], threshold: usize) -> Result<Self, String> {
        let (h, rest): (Header, &[u8]) = postcard::take_from_bytes(bytes).map_err(|e| e.to_string())?;
        if h.version != VERSION {
            return Err(format!("layout version {} (this ragbox writes {VERSION})", h.version));
        }
        let dimension = h.dimension as usize;
        let base_len = h.base.len().checked_div(dimension).unwrap_or(0);
        let consistent = h.documents.len() == h.live.len()
            && h.documents.len() == h.spans.len()
            && dimension > 0
            && h.base.len() % dimension == 0
            && h.fresh.len() % dimension == 0
            && h.chunks.len() == base_len + h.fresh.len() / dimension
            && h.chunks.iter().all(|(d, _)| (*d as usize) < h.documents.len())
            && h.spans.iter().all(|(s, e)| s <= e && (*e as usize) <= h.chunks.len());
        if !consistent {
            return Err("inconsistent contents".into());
        }
        let base: Arc<[f32]> = h.base.into();
        let graph = if rest.is_empty() { None } else { Some(Graph::read(rest, base.clone(), dimension)?) };
        let documents: Vec<Arc<DocumentRecord>> = h.documents.into_iter().map(Arc::new).collect();
        let by_path =
            documents.iter().enumerate().filter(|(i, _)| h.live[*i]).map(|(i, d)| (d.path.clone(), i as u32)).collect();
        Ok(Self {
            generation: h.generation,
            dimension,
            threshold,
            documents,
            live: h.live,
            spans: h.spans.into_iter().map(|(s, e)| s..e).collect(),
            by_path,
            chunks: h.chunks,
            base,
            base_len,
            fresh: h.fresh,
            dead_chunks: h.dead_chunks as usize,
            graph,
        })
    }
}
