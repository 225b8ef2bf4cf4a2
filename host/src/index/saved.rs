//! The index on disk, so the next process loads it instead of rebuilding
//! graphs (a minute per 100,000 chunks). In `.ragbox/vectors/`:
//!
//! - `segment-<id>-<token>.codes` and `.graph`: one segment's codes and its
//!   graph, written once by the worker and never changed;
//! - `manifest`: the store generation it reflects, the documents, which
//!   segment files make the index and the fresh buffer; replaced atomically.
//!
//! One process at a time writes there (it holds `lock`); others only read.
//! A loaded index catches up through the store's change log like one in
//! memory; a segment without its graph file is queued for a build (a process
//! killed mid-build resumes). Anything unreadable is ignored and the index
//! rebuilt from the store: it is derived data.

use super::hnsw::Graph;
use super::quantized::Codes;
use super::segment::Segment;
use crate::store::DocumentRecord;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bumped when the layout changes; other versions are rebuilt.
pub(super) const VERSION: u32 = 2;
const MANIFEST: &str = "manifest";
const LOCK: &str = "lock";

/// What the manifest holds.
#[derive(Serialize, Deserialize)]
pub(super) struct Manifest {
    pub(super) version: u32,
    pub(super) generation: u64,
    pub(super) dimension: u32,
    pub(super) next_id: u64,
    /// Per document number: the record, or `None` once removed or replaced.
    pub(super) documents: Vec<Option<Arc<DocumentRecord>>>,
    /// Per document number: |sum of its chunk vectors|.
    pub(super) norms: Vec<f32>,
    /// The segments, by file stem, with their chunk counts.
    pub(super) segments: Vec<(String, u64)>,
    pub(super) fresh_chunks: Vec<(u32, u32)>,
    pub(super) fresh_codes: Codes,
}

/// A segment file's contents.
#[derive(Serialize, Deserialize)]
struct SegmentFile {
    version: u32,
    id: u64,
    chunks: Vec<(u32, u32)>,
    codes: Codes,
}

/// The folder this process writes the index to, held by its lock.
pub(super) struct SaveDir {
    path: PathBuf,
    /// Unique per process: file names never collide with an earlier writer's.
    token: u64,
    _lock: File,
}

impl SaveDir {
    /// Takes the folder for writing; `None` when another process holds it or it cannot be made.
    pub(super) fn take(path: &Path) -> Option<Self> {
        std::fs::create_dir_all(path).ok()?;
        let lock = File::options().create(true).truncate(false).write(true).open(path.join(LOCK)).ok()?;
        if lock.try_lock().is_err() {
            tracing::debug!(
                "another process saves the vector index in {}; this one keeps it in memory",
                path.display()
            );
            return None;
        }
        use std::hash::BuildHasher;
        let token = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        Some(Self { path: path.to_path_buf(), token, _lock: lock })
    }

    /// The file stem of segment `id` written by this process.
    pub(super) fn stem(&self, id: u64) -> String {
        format!("segment-{id}-{:016x}", self.token)
    }

    /// Writes a segment's codes.
    pub(super) fn write_segment(&self, segment: &Segment) -> Result<(), String> {
        let file = SegmentFile {
            version: VERSION,
            id: segment.id,
            chunks: segment.chunks.clone(),
            codes: (*segment.codes).clone(),
        };
        let bytes = postcard::to_stdvec(&file).map_err(|e| e.to_string())?;
        self.write(&format!("{}.codes", self.stem(segment.id)), &bytes)
    }

    /// Writes a segment's graph.
    pub(super) fn write_graph(&self, id: u64, graph: &Graph) -> Result<(), String> {
        self.write(&format!("{}.graph", self.stem(id)), &graph.write()?)
    }

    /// Writes the manifest, then removes segment files it no longer names.
    pub(super) fn write_manifest(&self, manifest: &Manifest) -> Result<(), String> {
        let bytes = postcard::to_stdvec(manifest).map_err(|e| e.to_string())?;
        self.write(MANIFEST, &bytes)?;
        let keep: std::collections::HashSet<&str> = manifest.segments.iter().map(|(s, _)| s.as_str()).collect();
        for entry in std::fs::read_dir(&self.path).map_err(|e| e.to_string())?.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let stem = name.strip_suffix(".codes").or_else(|| name.strip_suffix(".graph"));
            if stem.is_some_and(|s| s.starts_with("segment-") && !keep.contains(s)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let mut tmp = tempfile::NamedTempFile::new_in(&self.path).map_err(|e| e.to_string())?;
        tmp.write_all(bytes).map_err(|e| e.to_string())?;
        tmp.persist(self.path.join(name)).map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// A saved index as read back: the manifest and its segments (with graphs
/// where their files were there).
pub(super) struct Loaded {
    pub(super) manifest: Manifest,
    pub(super) segments: Vec<Segment>,
}

/// Reads the index saved in `dir`; `None` (with a log line) when there is
/// none or it cannot be used.
pub(super) fn load(dir: &Path) -> Option<Loaded> {
    let bytes = std::fs::read(dir.join(MANIFEST)).ok()?;
    match read(dir, &bytes) {
        Ok(loaded) => Some(loaded),
        Err(e) => {
            tracing::warn!("ignoring the saved vector index in {}: {e}; rebuilding it", dir.display());
            None
        }
    }
}

fn read(dir: &Path, bytes: &[u8]) -> Result<Loaded, String> {
    let manifest: Manifest = postcard::from_bytes(bytes).map_err(|e| e.to_string())?;
    if manifest.version != VERSION {
        return Err(format!("layout version {} (this ragbox writes {VERSION})", manifest.version));
    }
    let docs = manifest.documents.len();
    if manifest.norms.len() != docs {
        return Err("inconsistent documents".into());
    }
    let valid_chunks = |chunks: &[(u32, u32)]| chunks.iter().all(|(d, _)| (*d as usize) < docs);
    let dimension = manifest.dimension as usize;
    let fresh_ok = valid_chunks(&manifest.fresh_chunks)
        && (manifest.fresh_codes.len() == manifest.fresh_chunks.len())
        && (manifest.fresh_chunks.is_empty()
            || (manifest.fresh_codes.is_consistent() && manifest.fresh_codes.dimension() == dimension));
    if !fresh_ok {
        return Err("inconsistent fresh buffer".into());
    }
    let mut segments = Vec::new();
    for (stem, len) in &manifest.segments {
        let codes_path = dir.join(format!("{stem}.codes"));
        let bytes = std::fs::read(&codes_path).map_err(|e| format!("{}: {e}", codes_path.display()))?;
        let file: SegmentFile = postcard::from_bytes(&bytes).map_err(|e| format!("{}: {e}", codes_path.display()))?;
        let consistent = file.version == VERSION
            && file.chunks.len() as u64 == *len
            && file.codes.len() == file.chunks.len()
            && file.codes.is_consistent()
            && file.codes.dimension() == dimension
            && valid_chunks(&file.chunks);
        if !consistent {
            return Err(format!("{} does not match the manifest", codes_path.display()));
        }
        let segment = Segment::new(file.id, file.chunks, file.codes);
        let graph_path = dir.join(format!("{stem}.graph"));
        if let Ok(bytes) = std::fs::read(&graph_path) {
            match Graph::read(&bytes, segment.codes.clone()) {
                Ok(graph) => {
                    let _ = segment.graph.set(graph);
                }
                Err(e) => tracing::warn!("rebuilding the graph in {}: {e}", graph_path.display()),
            }
        }
        segments.push(segment);
    }
    Ok(Loaded { manifest, segments })
}
