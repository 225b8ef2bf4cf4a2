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
//! rebuilt from the store: it is derived data. The folder is used through a
//! held handle (from [`crate::datadir`]): nothing here follows a link or
//! opens a special file, and every read has a size cap.

use super::hnsw::Graph;
use super::quantized::Codes;
use super::segment::Segment;
use crate::platform;
use crate::store::DocumentRecord;
use cap_std::fs::{Dir, OpenOptions};
use serde::{Deserialize, Serialize};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bumped when the layout changes; other versions are rebuilt.
pub(super) const VERSION: u32 = 2;
const MANIFEST: &str = "manifest";
const LOCK: &str = "lock";
/// Largest manifest read: a million chunks' documents take tens of MB.
const MAX_MANIFEST_BYTES: u64 = 1 << 30;
/// Largest segment or graph file read (a full segment's are about 100 MB).
const MAX_SEGMENT_BYTES: u64 = 4 << 30;

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
    dir: Dir,
    /// Where it is, for messages.
    path: PathBuf,
    /// Unique per process: file names never collide with an earlier writer's.
    token: u64,
    _lock: std::fs::File,
}

impl SaveDir {
    /// Takes the folder `dir` (shown as `path`) for writing; `None` when
    /// another process holds it or its lock cannot be made.
    pub(super) fn take(dir: &Dir, path: &Path) -> Option<Self> {
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true);
        platform::no_follow_no_block(platform::private_file(&mut options));
        let lock = dir.open_with(LOCK, &options).ok()?.into_std();
        if !lock.metadata().ok()?.is_file() || lock.try_lock().is_err() {
            tracing::debug!(
                "another process saves the vector index in {}; this one keeps it in memory",
                path.display()
            );
            return None;
        }
        use std::hash::BuildHasher;
        let token = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        Some(Self { dir: dir.try_clone().ok()?, path: path.to_path_buf(), token, _lock: lock })
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
        for entry in self.dir.entries().map_err(|e| e.to_string())?.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let stem = name.strip_suffix(".codes").or_else(|| name.strip_suffix(".graph"));
            if stem.is_some_and(|s| s.starts_with("segment-") && !keep.contains(s)) {
                let _ = self.dir.remove_file(name);
            }
        }
        Ok(())
    }

    /// Writes `name` through a temporary file, so a reader sees the old
    /// file or the new one.
    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        // Unique per write: the worker and the index may write at once.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = format!(".{name}-{:016x}-{n}", self.token);
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        platform::no_follow_no_block(platform::private_file(&mut options));
        let written = self.dir.open_with(&tmp, &options).and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_data()
        });
        let renamed = written.and_then(|()| self.dir.rename(&tmp, &self.dir, name));
        if renamed.is_err() {
            let _ = self.dir.remove_file(&tmp);
        }
        renamed.map_err(|e| format!("{}: {e}", self.path.join(name).display()))
    }
}

/// The regular file `name` in `dir`, at most `max` bytes; `Ok(None)` when
/// there is none. A link or special file is an error, never followed.
fn read(dir: &Dir, name: &str, max: u64) -> Result<Option<Vec<u8>>, String> {
    let file = match dir.open_with(name, platform::no_follow_no_block(OpenOptions::new().read(true))) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{name}: {e}")),
    };
    let meta = file.metadata().map_err(|e| format!("{name}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{name} is not a regular file"));
    }
    if meta.len() > max {
        return Err(format!("{name} is {} bytes, over the {max} ragbox reads", meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut bytes).map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("{name} grew past the {max} bytes ragbox reads"));
    }
    Ok(Some(bytes))
}

/// A saved index as read back: the manifest and its segments (with graphs
/// where their files were there).
pub(super) struct Loaded {
    pub(super) manifest: Manifest,
    pub(super) segments: Vec<Segment>,
}

/// Reads the index saved in `dir` (shown as `path`); `None` (with a log
/// line) when there is none or it cannot be used.
pub(super) fn load(dir: &Dir, path: &Path) -> Option<Loaded> {
    let loaded = read(dir, MANIFEST, MAX_MANIFEST_BYTES).and_then(|bytes| match bytes {
        Some(bytes) => parse(dir, &bytes).map(Some),
        None => Ok(None),
    });
    match loaded {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::warn!("ignoring the saved vector index in {}: {e}; rebuilding it", path.display());
            None
        }
    }
}

fn parse(dir: &Dir, bytes: &[u8]) -> Result<Loaded, String> {
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
    // Each segment file is read once: a manifest listing one many times
    // (or naming a file elsewhere) was not written by ragbox.
    let mut stems = std::collections::HashSet::new();
    let plain = |stem: &str| !stem.is_empty() && !stem.contains(['/', '\\']) && stem != "..";
    if !manifest.segments.iter().all(|(stem, _)| plain(stem) && stems.insert(stem.as_str())) {
        return Err("a segment listed twice, or outside its folder".into());
    }
    let mut segments = Vec::new();
    for (stem, len) in &manifest.segments {
        let codes_name = format!("{stem}.codes");
        let bytes = read(dir, &codes_name, MAX_SEGMENT_BYTES)?.ok_or_else(|| format!("{codes_name} is missing"))?;
        let file: SegmentFile = postcard::from_bytes(&bytes).map_err(|e| format!("{codes_name}: {e}"))?;
        let consistent = file.version == VERSION
            && file.chunks.len() as u64 == *len
            && file.codes.len() == file.chunks.len()
            && file.codes.is_consistent()
            && file.codes.dimension() == dimension
            && valid_chunks(&file.chunks);
        if !consistent {
            return Err(format!("{codes_name} does not match the manifest"));
        }
        let segment = Segment::new(file.id, file.chunks, file.codes);
        let graph_name = format!("{stem}.graph");
        match read(dir, &graph_name, MAX_SEGMENT_BYTES) {
            Ok(Some(bytes)) => match Graph::read(&bytes, segment.codes.clone()) {
                Ok(graph) => {
                    let _ = segment.graph.set(graph);
                }
                Err(e) => tracing::warn!("rebuilding the graph in {graph_name}: {e}"),
            },
            Ok(None) => {}
            Err(e) => tracing::warn!("rebuilding the graph in {graph_name}: {e}"),
        }
        segments.push(segment);
    }
    Ok(Loaded { manifest, segments })
}
