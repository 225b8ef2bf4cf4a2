//! A model's tokenizer: BERT's WordPiece read natively ([`WordPiece`]: the
//! default model's, and most sentence-transformers models'), any other shape
//! through the `tokenizers` crate.

use super::EmbedError;
use super::wordpiece::WordPiece;
use rayon::prelude::*;

/// A loaded tokenizer, without truncation or padding (the embedder cuts texts itself).
pub(super) enum TextTokenizer {
    /// Read by ragbox's own code.
    Native(Box<WordPiece>),
    /// Read by the `tokenizers` crate.
    Library(Box<tokenizers::Tokenizer>),
}

impl TextTokenizer {
    /// Reads a `tokenizer.json`.
    pub(super) fn from_json(bytes: &[u8]) -> Result<Self, EmbedError> {
        if let Some(native) = WordPiece::from_json(bytes) {
            return Ok(Self::Native(Box::new(native)));
        }
        let bad = |e: tokenizers::Error| EmbedError::BadFile { file: "tokenizer.json".into(), message: e.to_string() };
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(bytes).map_err(bad)?;
        // tokenizer.json ships truncation and fixed padding at 128: batches are
        // unpadded, and texts are cut to the model's real limit by the embedder.
        tokenizer.with_truncation(None).map_err(bad)?;
        tokenizer.with_padding(None);
        Ok(Self::Library(Box::new(tokenizer)))
    }

    /// The tokenizer when ragbox reads it itself.
    pub(super) fn native(&self) -> Option<&WordPiece> {
        match self {
            Self::Native(w) => Some(w),
            Self::Library(_) => None,
        }
    }

    /// `text`'s ids, with the special ones around them when `specials`.
    pub(super) fn ids(&self, text: &str, specials: bool) -> Result<Vec<u32>, EmbedError> {
        match self {
            Self::Native(w) => Ok(w.ids(text, specials)),
            Self::Library(t) => Ok(t.encode(text, specials).map_err(failed)?.get_ids().to_vec()),
        }
    }

    /// Each text's ids with the special ones, tokenized on the thread pool.
    pub(super) fn ids_batch(&self, texts: Vec<String>) -> Result<Vec<Vec<u32>>, EmbedError> {
        match self {
            Self::Native(w) => Ok(texts.par_iter().map(|t| w.ids(t, true)).collect()),
            Self::Library(t) => {
                Ok(t.encode_batch(texts, true).map_err(failed)?.iter().map(|e| e.get_ids().to_vec()).collect())
            }
        }
    }

    /// The byte offset in `text` where each of its tokens starts (no special
    /// ones), in order; pieces of one word each start where they do.
    pub(super) fn starts(&self, text: &str, starts: &mut Vec<u32>) -> Result<(), EmbedError> {
        match self {
            Self::Native(w) => w.tokens(text, |t| starts.push(t.start)),
            Self::Library(t) => {
                starts.extend(t.encode(text, false).map_err(failed)?.get_offsets().iter().map(|(s, _)| *s as u32))
            }
        }
        Ok(())
    }
}

fn failed(e: tokenizers::Error) -> EmbedError {
    EmbedError::Tokenizer(e.to_string())
}
