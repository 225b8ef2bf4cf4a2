//! The encoder's packed arrays in one file per model and kernel layout, which
//! every ragbox process maps read-only: five servers on one machine hold one
//! copy of the weights in the page cache, and a server that starts after the
//! first loads its model in milliseconds instead of reading and packing the
//! safetensors again. A BERT WordPiece tokenizer's words and lookup tables
//! are arrays of the same file, its other settings in the header, both for
//! the `tokenizer.json` whose sha256 the header names: a server then holds no
//! vocabulary of its own (0.9 MB) and parses no JSON (5 ms of its start).
//!
//! The file is written once, whole (a temporary file renamed into place), by
//! whichever process first needs it, and never changed after: a process that
//! has it mapped keeps reading the same bytes. It is checked on every open
//! (magic, format, model identity, layout, each array's type, length and
//! bounds); anything else is packed again from the model folder. Where the
//! cache cannot be written, the arrays stay in the process's own memory.

use super::EmbedError;
use super::bert::{Array, Arrays, Bert, BertConfig};
use super::tokenizer::TextTokenizer;
use super::wordpiece::{Settings, WordPiece, Words};
use ragbox_kernels::Isa;
use ragbox_kernels::buf::{Backing, Buf, Plain};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file's first bytes.
const MAGIC: &[u8; 8] = b"RBXPACK\x01";

/// Raised whenever `bert.rs` or the kernels change what an array holds (the
/// query scale folded into Q, a panel width, the int8 weights smoothed, the
/// tokenizer's arrays added, attention's input product in int8 and both
/// smoothed by calibrated ranges): older files are then packed again, and removed
/// once a file of this format is written.
const FORMAT: u32 = 5;

/// Arrays start at multiples of this (a cache line; every element type divides it).
const ALIGN: usize = 64;

/// Where the arrays start: the first page boundary after the magic, the
/// header's length and the header (`header_len` bytes of JSON).
fn data_start(header_len: usize) -> usize {
    (MAGIC.len() + 4 + header_len).next_multiple_of(4096)
}

/// Where packed models are kept: `$RAGBOX_PACKED_CACHE`, else the user cache
/// dir (`~/.cache/ragbox/packed`); `RAGBOX_PACKED_CACHE=off` keeps every
/// model in the process's own memory.
pub fn default_dir() -> Option<PathBuf> {
    crate::platform::user_cache_dir("RAGBOX_PACKED_CACHE", "packed")
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Header {
    format: u32,
    model: String,
    layout: String,
    /// The first 16 hex digits of the sha256 of the `tokenizer.json` packed beside the weights.
    tokenizer_source: String,
    /// A WordPiece tokenizer's settings (its words are arrays); none for a
    /// tokenizer the `tokenizers` crate reads from the JSON.
    tokenizer: Option<Settings>,
    arrays: Vec<Entry>,
}

#[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
struct Entry {
    name: String,
    /// `f32` or `u32`.
    kind: String,
    /// Byte offset from the data's start ([`data_start`]).
    offset: usize,
    /// Values.
    len: usize,
}

/// How the weights are packed for `isa`: f32 panels, bf16 pairs, and int8 quads for the first feed-forward product.
fn layout(isa: Isa) -> String {
    if isa.has_int8() {
        format!("bf16x{}-int8x{}", ragbox_kernels::bf16::NR, ragbox_kernels::int8::NR)
    } else if isa.has_bf16() {
        format!("bf16x{}", ragbox_kernels::bf16::NR)
    } else {
        format!("f32x{}", ragbox_kernels::gemm::NR)
    }
}

/// The file for model `id` on `isa`, its name made of safe characters only.
pub fn file_for(dir: &Path, id: &str, isa: Isa) -> PathBuf {
    let safe: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    dir.join(format!("{safe}-{}-v{FORMAT}.bin", layout(isa)))
}

/// The model at `weights` for `config` on `isa` and the tokenizer of
/// `tokenizer_json`: mapped from their packed file in `cache` (written first
/// when missing, unusable or packed from another `tokenizer.json`), else
/// packed and read in memory.
pub(super) fn load(
    cache: Option<&Path>,
    id: &str,
    weights: &Path,
    config: &BertConfig,
    isa: Isa,
    tokenizer_json: &[u8],
) -> Result<(Bert, TextTokenizer), EmbedError> {
    let own = || {
        let tokenizer = TextTokenizer::from_json(tokenizer_json)?;
        let calibration = super::calibration::ids(&tokenizer, config.max_position_embeddings)?;
        Ok((Bert::load(weights, config, isa, &calibration)?, tokenizer))
    };
    let Some(cache) = cache else { return own() };
    let source = source_of(tokenizer_json);
    let file = file_for(cache, id, isa);
    match open(&file, id, config, isa, &source) {
        Ok((bert, Some(words))) => return Ok((bert, TextTokenizer::Native(Box::new(words)))),
        Ok((bert, None)) => return Ok((bert, TextTokenizer::from_json(tokenizer_json)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("packed model {} is unusable ({e}); packing it again", file.display()),
    }
    let (bert, tokenizer) = own()?;
    // A tokenizer.json naming ids past the weights' table stays out of the file (its
    // embeds say what is wrong), so that a file holding such ids is damaged and repacked.
    let words = tokenizer.native().filter(|w| w.ids_below(bert.vocab()));
    let written = write(&file, id, isa, &bert, &source, words);
    match written.and_then(|()| open(&file, id, config, isa, &source)) {
        // The owned arrays are dropped: the mapping is what this process (and the next) reads.
        Ok((mapped, Some(words))) => Ok((mapped, TextTokenizer::Native(Box::new(words)))),
        Ok((mapped, None)) => Ok((mapped, tokenizer)),
        Err(e) => {
            tracing::debug!(
                "cannot keep the packed model at {}: {e}; it stays in this process's memory",
                file.display()
            );
            Ok((bert, tokenizer))
        }
    }
}

/// What names a `tokenizer.json` in the header: the layout its arrays are
/// in, and the first 16 hex digits of its sha256.
fn source_of(tokenizer_json: &[u8]) -> String {
    use sha2::Digest as _;
    format!("w{}-{}", super::wordpiece::LAYOUT, hex::encode(&sha2::Sha256::digest(tokenizer_json)[..8]))
}

/// Writes `bert`'s arrays, and `tokenizer`'s when it is read natively, to
/// `file` whole: a temporary file, then a rename.
fn write(
    file: &Path,
    id: &str,
    isa: Isa,
    bert: &Bert,
    source: &str,
    tokenizer: Option<&WordPiece>,
) -> std::io::Result<()> {
    let mut arrays = bert.arrays();
    let (words, settings) = tokenizer.map(WordPiece::parts).unzip();
    arrays.extend(words.iter().flat_map(|w| w.arrays()).map(|(name, array)| (name.to_string(), Array::U32(array))));
    let mut entries = Vec::with_capacity(arrays.len());
    let mut offset = 0usize;
    for (name, array) in &arrays {
        let (kind, len) = match array {
            Array::F32(b) => ("f32", b.len()),
            Array::U32(b) => ("u32", b.len()),
        };
        offset = offset.next_multiple_of(ALIGN);
        entries.push(Entry { name: name.clone(), kind: kind.into(), offset, len });
        offset += len * 4;
    }
    let header = Header {
        format: FORMAT,
        model: id.into(),
        layout: layout(isa),
        tokenizer_source: source.into(),
        tokenizer: settings.cloned(),
        arrays: entries,
    };
    let json = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
    // Threads of one process may pack at once: each writes a file of its own.
    crate::platform::write_whole(file, |file| {
        let mut out = std::io::BufWriter::new(file);
        out.write_all(MAGIC)?;
        out.write_all(&(json.len() as u32).to_le_bytes())?;
        out.write_all(&json)?;
        let data = data_start(json.len());
        let mut at = MAGIC.len() + 4 + json.len();
        for ((_, array), entry) in arrays.iter().zip(&header.arrays) {
            out.write_all(&vec![0u8; data + entry.offset - at])?;
            let bytes = match array {
                Array::F32(b) => b.as_bytes(),
                Array::U32(b) => b.as_bytes(),
            };
            out.write_all(bytes)?;
            at = data + entry.offset + bytes.len();
        }
        out.flush()
    })?;
    if let Some(dir) = file.parent() {
        remove_other_formats(dir);
    }
    Ok(())
}

/// Removes the packed files an older or newer ragbox wrote in `dir` (another
/// `-vN.bin`): each holds a whole model, and only this format is read here.
/// A process that still maps one keeps reading it.
fn remove_other_formats(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(version) = name.to_str().and_then(|n| n.strip_suffix(".bin")).and_then(|n| n.rsplit_once("-v")) else {
            continue;
        };
        if version.1.parse::<u32>().is_ok_and(|v| v != FORMAT) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The arrays of one mapped file, by name.
struct Table {
    backing: Arc<dyn Backing>,
    entries: HashMap<String, Entry>,
}

impl Table {
    fn get<T: Plain>(&self, name: &str, kind: &str) -> Option<Buf<T>> {
        let e = self.entries.get(name).filter(|e| e.kind == kind)?;
        Buf::mapped(self.backing.clone(), e.offset, e.len)
    }
}

impl Arrays for Table {
    fn f32(&self, name: &str) -> Option<Buf<f32>> {
        self.get(name, "f32")
    }

    fn u32(&self, name: &str) -> Option<Buf<u32>> {
        self.get(name, "u32")
    }
}

/// Maps `file` and checks it is model `id` packed for `isa` and `config`, with
/// the tokenizer of `source`; the tokenizer is there when it is read natively.
fn open(
    file: &Path,
    id: &str,
    config: &BertConfig,
    isa: Isa,
    source: &str,
) -> std::io::Result<(Bert, Option<WordPiece>)> {
    let invalid = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let handle = std::fs::File::open(file)?;
    // Little-endian values are written and read as they lie in memory.
    if cfg!(target_endian = "big") {
        return Err(invalid("packed models are kept on little-endian machines only".into()));
    }
    let mapped = crate::mapped::map(&handle)?;
    let map = mapped.bytes();
    let head = map.get(..MAGIC.len() + 4).ok_or_else(|| invalid("too short".into()))?;
    if &head[..MAGIC.len()] != MAGIC {
        return Err(invalid("not a packed model".into()));
    }
    let json_len = u32::from_le_bytes(head[MAGIC.len()..].try_into().expect("4 bytes")) as usize;
    let json = map.get(head.len()..head.len().saturating_add(json_len)).ok_or_else(|| invalid("header cut".into()))?;
    let header: Header = serde_json::from_slice(json).map_err(|e| invalid(format!("header: {e}")))?;
    if header.format != FORMAT || header.model != id || header.layout != layout(isa) {
        return Err(invalid(format!(
            "it holds {} packed as {} (format {}), not {id} as {} (format {FORMAT})",
            header.model,
            header.layout,
            header.format,
            layout(isa)
        )));
    }
    if header.tokenizer_source != source {
        return Err(invalid(
            "it was packed from another tokenizer.json, or by a ragbox that lays tokenizers out otherwise".into(),
        ));
    }
    let data = data_start(json_len);
    let entries = header
        .arrays
        .into_iter()
        .map(|e| (e.name.clone(), Entry { offset: e.offset.saturating_add(data), ..e }))
        .collect();
    let table = Table { backing: mapped, entries };
    let bert = Bert::from_arrays(&table, config, isa).map_err(invalid)?;
    let tokenizer = match header.tokenizer {
        Some(settings) => {
            let words = Words::from_arrays(|name| table.get(name, "u32")).map_err(invalid)?;
            let tokenizer = WordPiece::from_parts(words, settings).map_err(invalid)?;
            if !tokenizer.ids_below(bert.vocab()) {
                return Err(invalid("its tokenizer names ids past the weights' vocabulary".into()));
            }
            Some(tokenizer)
        }
        None => None,
    };
    Ok((bert, tokenizer))
}
