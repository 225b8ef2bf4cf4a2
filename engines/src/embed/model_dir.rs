//! A sentence-transformers model folder: which files, which pooling, what
//! token limit and prefixes, and a stable identity.

use super::{EmbedError, Pooling};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Files a model folder must hold.
const REQUIRED: &[&str] = &["config.json", "tokenizer.json", "model.safetensors"];

/// Where the default model lives: `$RAGBOX_MODEL`, else the user cache dir
/// (`~/.cache/ragbox/models/all-MiniLM-L6-v2`); `None` when neither is known
/// (never a folder relative to wherever the process runs: that may be a
/// workspace, whose files the host must not load as a model).
pub fn default_model_dir() -> Option<PathBuf> {
    match std::env::var_os("RAGBOX_MODEL") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => directories::ProjectDirs::from("", "", "ragbox")
            .map(|d| d.cache_dir().join("models").join(super::DEFAULT_MODEL_NAME)),
    }
}

/// [`default_model_dir`], or the error that says how to name one.
pub fn default_model_dir_or_err() -> Result<PathBuf, EmbedError> {
    default_model_dir().ok_or_else(|| {
        EmbedError::Missing("no home folder is known to keep the model in: set RAGBOX_MODEL to a model folder".into())
    })
}

/// A checked model folder.
#[derive(Debug, Clone)]
pub struct ModelDir {
    /// The folder.
    pub path: PathBuf,
    /// Folder name and a hash of the weights.
    pub id: String,
    /// From `1_Pooling/config.json` (mean when absent).
    pub pooling: Pooling,
    /// From `sentence_bert_config.json` (256 when absent).
    pub max_tokens: usize,
    /// Prepended to queries (e5/bge-style models), from `config_sentence_transformers.json`.
    pub query_prefix: String,
    /// Prepended to passages.
    pub passage_prefix: String,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
}

#[derive(Deserialize)]
struct SbertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize, Default)]
struct StConfig {
    #[serde(default)]
    prompts: std::collections::BTreeMap<String, String>,
}

impl ModelDir {
    /// Checks `path` holds a usable model; the error says how to get one.
    pub fn open(path: &Path) -> Result<Self, EmbedError> {
        let missing: Vec<&str> = REQUIRED.iter().copied().filter(|f| !path.join(f).is_file()).collect();
        if !missing.is_empty() {
            return Err(EmbedError::Missing(format!(
                "no embedding model at {} (missing {}). Run `ragbox model fetch` (or `make setup`) to download \
                 all-MiniLM-L6-v2, or set RAGBOX_MODEL to a sentence-transformers model folder.",
                path.display(),
                missing.join(", ")
            )));
        }
        let pooling = match optional_json::<PoolingConfig>(&path.join("1_Pooling/config.json"))? {
            Some(p) if p.pooling_mode_cls_token => Pooling::Cls,
            Some(p) if p.pooling_mode_max_tokens => Pooling::Max,
            _ => Pooling::Mean,
        };
        let max_tokens = optional_json::<SbertConfig>(&path.join("sentence_bert_config.json"))?
            .and_then(|c| c.max_seq_length)
            .unwrap_or(256);
        let prompts = optional_json::<StConfig>(&path.join("config_sentence_transformers.json"))?.unwrap_or_default();
        let prompt = |keys: &[&str]| keys.iter().find_map(|k| prompts.prompts.get(*k).cloned()).unwrap_or_default();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
        let id = format!("{name}@{}", weights_hash(&path.join("model.safetensors"))?);
        Ok(Self {
            path: path.to_path_buf(),
            id,
            pooling,
            max_tokens,
            query_prefix: prompt(&["query"]),
            passage_prefix: prompt(&["passage", "document"]),
        })
    }
}

fn optional_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, EmbedError> {
    if std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(None);
    }
    let bytes = super::read_capped(path, super::MAX_CONFIG_JSON_BYTES)?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| EmbedError::BadFile { file: path.display().to_string(), message: e.to_string() })
}

/// What [`weights_hash`] remembers of a weights file it hashed.
#[derive(serde::Serialize, Deserialize)]
struct Remembered {
    path: PathBuf,
    len: u64,
    modified_ns: u128,
    hash: String,
}

/// First 16 hex digits of the weights' sha256: the model's identity. Hashing
/// 90 MB takes most of a server's start, so the result is remembered in the
/// packed-model cache beside the file's path, size and modification time, and
/// hashed again when any of them differ.
fn weights_hash(path: &Path) -> Result<String, EmbedError> {
    weights_hash_in(path, super::packed::default_dir())
}

/// [`weights_hash`], remembered under `cache` (not at all when `None`).
fn weights_hash_in(path: &Path, cache: Option<PathBuf>) -> Result<String, EmbedError> {
    let bad = |e: std::io::Error| EmbedError::BadFile { file: path.display().to_string(), message: e.to_string() };
    let meta = std::fs::metadata(path).map_err(bad)?;
    if !meta.is_file() {
        return Err(bad(std::io::Error::other("not a regular file")));
    }
    let modified_ns = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    let key = std::fs::canonicalize(path).ok().zip(modified_ns).map(|(path, m)| Remembered {
        path,
        len: meta.len(),
        modified_ns: m.as_nanos(),
        hash: String::new(),
    });
    let memo = key.as_ref().zip(cache).map(|(key, dir)| {
        let name = hex::encode(Sha256::digest(key.path.to_string_lossy().as_bytes()));
        dir.join("ids").join(format!("{}.json", &name[..16]))
    });
    if let Some((key, memo)) = key.as_ref().zip(memo.as_ref())
        && let Ok(bytes) = super::read_capped(memo, 64 << 10)
        && let Ok(seen) = serde_json::from_slice::<Remembered>(&bytes)
        && seen.hash.len() == 16
        && (seen.path == key.path && seen.len == key.len && seen.modified_ns == key.modified_ns)
    {
        return Ok(seen.hash);
    }
    let hash = hash_file(path).map_err(bad)?;
    if let Some((key, memo)) = key.zip(memo) {
        let seen = Remembered { hash: hash.clone(), ..key };
        if let Err(e) = remember(&memo, &seen) {
            tracing::debug!("cannot remember the model's hash at {}: {e}", memo.display());
        }
    }
    Ok(hash)
}

/// Writes `seen` to `memo` whole (threads of one process may hash at once).
fn remember(memo: &Path, seen: &Remembered) -> std::io::Result<()> {
    let json = serde_json::to_vec(seen).map_err(std::io::Error::other)?;
    crate::platform::write_whole(memo, |file| std::io::Write::write_all(file, &json))
}

/// First 16 hex digits of the file's sha256.
fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize())[..16].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weights_hash_is_remembered_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (weights, cache) = (dir.path().join("model.safetensors"), dir.path().join("cache"));
        std::fs::write(&weights, b"first weights").unwrap();
        let first = weights_hash_in(&weights, Some(cache.clone())).unwrap();
        assert_eq!(first, hash_file(&weights).unwrap());
        // The remembered hash is what the next open reads (planted to show it).
        let memo = std::fs::read_dir(cache.join("ids")).unwrap().next().unwrap().unwrap().path();
        let planted = String::from_utf8(std::fs::read(&memo).unwrap()).unwrap().replace(&first, "0123456789abcdef");
        std::fs::write(&memo, planted).unwrap();
        assert_eq!(weights_hash_in(&weights, Some(cache.clone())).unwrap(), "0123456789abcdef");
        // Other bytes (another size) are hashed again, and remembered anew.
        std::fs::write(&weights, b"second, longer weights").unwrap();
        let second = weights_hash_in(&weights, Some(cache.clone())).unwrap();
        assert_eq!(second, hash_file(&weights).unwrap());
        assert_ne!(second, first);
        assert_eq!(weights_hash_in(&weights, Some(cache)).unwrap(), second);
        // Without a cache, every open hashes.
        assert_eq!(weights_hash_in(&weights, None).unwrap(), second);
    }
}
