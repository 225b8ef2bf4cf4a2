//! The index on disk, so the next process loads it instead of rebuilding
//! graphs (a minute per 100,000 chunks). In `.ragbox/vectors/`:
//!
//! - `segment-<id>-<token>.codes` and `.graph`: one segment's codes and its
//!   graph, written once by the worker and never changed;
//! - `fresh-<token>-<n>.codes`: the fresh buffer's codes at one save;
//! - `manifest`: the store generation it reflects, the documents, which
//!   codes files make the index; replaced atomically.
//!
//! A codes file is laid out to be mapped, not read: every process serving
//! the workspace shares its pages (a million chunks' codes are 390 MB).
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
use crate::records::DocumentRecord;
use cap_std::fs::{Dir, OpenOptions};
use ragbox_kernels::buf::Buf;
use serde::{Deserialize, Serialize};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bumped when the layout changes; other versions are rebuilt.
pub(super) const VERSION: u32 = 3;
/// A codes file's first bytes.
const CODES_MAGIC: &[u8; 8] = b"RBXCODES";
/// A codes file's header: magic, version (u32), dimension (u32), segment id
/// (u64), chunk count (u64). Then, little-endian: per chunk its (document,
/// ordinal) as two u32, per chunk its f32 scale, per chunk `dimension` i8
/// codes. Every part starts at a multiple of 4 bytes, as mapping needs.
const CODES_HEADER: usize = 32;
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
    /// The fresh buffer's codes file, by stem, with its chunk count (set when written).
    pub(super) fresh: Option<(String, u64)>,
}

/// A manifest to write, with the fresh buffer it names.
pub(super) struct Saving {
    pub(super) manifest: Manifest,
    pub(super) fresh_chunks: Vec<(u32, u32)>,
    pub(super) fresh_codes: Codes,
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
        let bytes = codes_file(segment.id, &segment.chunks, &segment.codes);
        self.write(&format!("{}.codes", self.stem(segment.id)), &bytes)
    }

    /// Writes a segment's graph.
    pub(super) fn write_graph(&self, id: u64, graph: &Graph) -> Result<(), String> {
        self.write(&format!("{}.graph", self.stem(id)), &graph.write()?)
    }

    /// Writes the fresh buffer's codes under a new name (processes may have
    /// the last one mapped), then the manifest naming it, then removes the
    /// codes files the manifest no longer names.
    pub(super) fn write_manifest(&self, saving: &mut Saving) -> Result<(), String> {
        let manifest = &mut saving.manifest;
        manifest.fresh = None;
        if !saving.fresh_chunks.is_empty() {
            static FRESH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = FRESH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let stem = format!("fresh-{:016x}-{n}", self.token);
            self.write(&format!("{stem}.codes"), &codes_file(0, &saving.fresh_chunks, &saving.fresh_codes))?;
            manifest.fresh = Some((stem, saving.fresh_chunks.len() as u64));
        }
        let bytes = postcard::to_stdvec(&*manifest).map_err(|e| e.to_string())?;
        self.write(MANIFEST, &bytes)?;
        let mut keep: std::collections::HashSet<&str> = manifest.segments.iter().map(|(s, _)| s.as_str()).collect();
        keep.extend(manifest.fresh.as_ref().map(|(s, _)| s.as_str()));
        for entry in self.dir.entries().map_err(|e| e.to_string())?.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let stem = name.strip_suffix(".codes").or_else(|| name.strip_suffix(".graph"));
            let ours = |s: &str| s.starts_with("segment-") || s.starts_with("fresh-");
            if stem.is_some_and(|s| ours(s) && !keep.contains(s)) {
                // Fails on Windows while another process maps it: removed at a later save.
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
    let Some(file) = open_regular(dir, name, max)? else { return Ok(None) };
    let mut bytes = Vec::with_capacity(file.metadata().map_or(0, |m| m.len() as usize));
    (&file).take(max + 1).read_to_end(&mut bytes).map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("{name} grew past the {max} bytes ragbox reads"));
    }
    Ok(Some(bytes))
}

/// The codes file for chunks `chunks` with codes `codes` (see [`CODES_HEADER`]).
fn codes_file(id: u64, chunks: &[(u32, u32)], codes: &Codes) -> Vec<u8> {
    let (values, scales) = codes.parts();
    let mut bytes = Vec::with_capacity(CODES_HEADER + chunks.len() * 12 + values.len());
    bytes.extend_from_slice(CODES_MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&(codes.dimension() as u32).to_le_bytes());
    bytes.extend_from_slice(&id.to_le_bytes());
    bytes.extend_from_slice(&(chunks.len() as u64).to_le_bytes());
    for (doc, ordinal) in chunks {
        bytes.extend_from_slice(&doc.to_le_bytes());
        bytes.extend_from_slice(&ordinal.to_le_bytes());
    }
    scales.iter().for_each(|s| bytes.extend_from_slice(&s.to_le_bytes()));
    bytes.extend(values.iter().map(|&c| c as u8));
    bytes
}

/// A codes file as read back: its segment id, chunks and (mapped) codes.
struct CodesFile {
    id: u64,
    chunks: Vec<(u32, u32)>,
    codes: Codes,
}

/// Maps the codes file `name` (at most `max` bytes) and checks its layout;
/// `Ok(None)` when there is none. A link or special file is an error.
fn read_codes(dir: &Dir, name: &str, max: u64) -> Result<Option<CodesFile>, String> {
    let Some(file) = open_regular(dir, name, max)? else { return Ok(None) };
    // The scales and codes are read as they lie in memory.
    if cfg!(target_endian = "big") {
        return Err("saved codes are kept on little-endian machines only".into());
    }
    let mapped = crate::mapped::map(&file).map_err(|e| format!("{name}: {e}"))?;
    let bytes = ragbox_kernels::buf::Backing::bytes(&*mapped);
    let bad = |what: &str| format!("{name}: {what}");
    let head = bytes.get(..CODES_HEADER).ok_or_else(|| bad("too short"))?;
    let u32_at = |at: usize| u32::from_le_bytes(head[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    if &head[..8] != CODES_MAGIC || u32_at(8) != VERSION {
        return Err(bad("not a codes file of this version"));
    }
    let (dimension, id, count) = (u32_at(12) as usize, u64_at(16), u64_at(24));
    let count = usize::try_from(count).map_err(|_| bad("too many chunks"))?;
    let scales_at = count.checked_mul(8).and_then(|c| c.checked_add(CODES_HEADER)).ok_or_else(|| bad("too long"))?;
    let codes_at = count.checked_mul(4).and_then(|c| c.checked_add(scales_at)).ok_or_else(|| bad("too long"))?;
    let end = count.checked_mul(dimension).and_then(|c| c.checked_add(codes_at)).ok_or_else(|| bad("too long"))?;
    if end != bytes.len() {
        return Err(bad("its size does not match its header"));
    }
    let chunks = bytes[CODES_HEADER..scales_at]
        .chunks_exact(8)
        .map(|p| {
            let word = |at: usize| u32::from_le_bytes(p[at..at + 4].try_into().expect("4 bytes"));
            (word(0), word(4))
        })
        .collect();
    let scales = Buf::mapped(mapped.clone(), scales_at, count).ok_or_else(|| bad("misaligned"))?;
    let values = Buf::mapped(mapped, codes_at, count * dimension).ok_or_else(|| bad("misaligned"))?;
    let codes = Codes::from_parts(dimension, values, scales).ok_or_else(|| bad("no dimension"))?;
    Ok(Some(CodesFile { id, chunks, codes }))
}

/// The regular file `name` in `dir`, opened for reading, when it is at most
/// `max` bytes; `Ok(None)` when there is none. A link or special file is an
/// error, never followed or opened blocking.
fn open_regular(dir: &Dir, name: &str, max: u64) -> Result<Option<std::fs::File>, String> {
    let file = match dir.open_with(name, platform::no_follow_no_block(OpenOptions::new().read(true))) {
        Ok(file) => file.into_std(),
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
    Ok(Some(file))
}

/// A saved index as read back: the manifest, the fresh buffer and the
/// segments (with graphs where their files were there).
pub(super) struct Loaded {
    pub(super) manifest: Manifest,
    pub(super) fresh_chunks: Vec<(u32, u32)>,
    pub(super) fresh_codes: Codes,
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
    // Each codes file is read once: a manifest listing one many times
    // (or naming a file elsewhere) was not written by ragbox.
    let mut stems = std::collections::HashSet::new();
    let plain = |stem: &str| !stem.is_empty() && !stem.contains(['/', '\\']) && stem != "..";
    if !manifest.segments.iter().chain(&manifest.fresh).all(|(stem, _)| plain(stem) && stems.insert(stem.as_str())) {
        return Err("a codes file listed twice, or outside its folder".into());
    }
    let codes = |stem: &str, len: u64| -> Result<CodesFile, String> {
        let name = format!("{stem}.codes");
        let file = read_codes(dir, &name, MAX_SEGMENT_BYTES)?.ok_or_else(|| format!("{name} is missing"))?;
        let consistent = file.chunks.len() as u64 == len
            && file.codes.len() == file.chunks.len()
            && file.codes.dimension() == dimension
            && valid_chunks(&file.chunks);
        if !consistent {
            return Err(format!("{name} does not match the manifest"));
        }
        Ok(file)
    };
    let (fresh_chunks, fresh_codes) = match &manifest.fresh {
        Some((stem, len)) => {
            let file = codes(stem, *len)?;
            (file.chunks, file.codes)
        }
        None => (Vec::new(), Codes::new(dimension)),
    };
    let mut segments = Vec::new();
    for (stem, len) in &manifest.segments {
        let file = codes(stem, *len)?;
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
    Ok(Loaded { manifest, fresh_chunks, fresh_codes, segments })
}
