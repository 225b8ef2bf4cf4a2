//! What the store keeps per document and per chunk (JSON-encoded in redb, so a
//! field added later reads old rows with its default).

use super::Metadata;
use serde::{Deserialize, Serialize};

/// One indexed document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DocumentRecord {
    /// Workspace-relative path, `/`-separated: the document's key.
    pub path: String,
    /// sha256 of the content, hex: unchanged hash → nothing to re-embed.
    pub content_hash: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: i64,
    /// What the file is: `markdown`, `text`, `code`, `skill`, …
    pub kind: String,
    /// Its title (first heading or frontmatter), if any.
    #[serde(default)]
    pub title: Option<String>,
    /// Cortext conversation type from the path.
    #[serde(default)]
    pub conversation_type: Option<String>,
    /// Cortext date folder from the path.
    #[serde(default)]
    pub date: Option<String>,
    /// Frontmatter and path metadata, flattened to strings.
    #[serde(default)]
    pub metadata: Metadata,
    /// When it was embedded, milliseconds since the Unix epoch.
    pub embedded_at: i64,
    /// The model that made its vectors.
    pub model_id: String,
    /// Number of chunks (set by the store).
    #[serde(default)]
    pub chunks: u32,
}

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ChunkRecord {
    /// The text that was embedded.
    pub text: String,
    /// Byte range in the document.
    pub start: u64,
    /// End of the byte range (exclusive).
    pub end: u64,
}

/// A chunk with its vector, to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    /// The chunk.
    pub record: ChunkRecord,
    /// Its embedding; empty in a document stored for keyword search only.
    pub vector: Vec<f32>,
}

/// A document with its chunks, written in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDocument {
    /// The document.
    pub record: DocumentRecord,
    /// The model's vector length; every vector must have it.
    pub dimension: usize,
    /// Its chunks in order.
    pub chunks: Vec<NewChunk>,
}

impl NewDocument {
    /// Stored for keyword search before its vectors are made: chunks, none
    /// with a vector. The indexer embeds it in a later write.
    pub fn keyword_only(&self) -> bool {
        !self.chunks.is_empty() && self.chunks.iter().all(|c| c.vector.is_empty())
    }
}

impl DocumentRecord {
    /// Whether its chunks have vectors: false for a document stored for
    /// keyword search only (no model named), true for one without chunks.
    pub fn embedded(&self) -> bool {
        self.chunks == 0 || !self.model_id.is_empty()
    }
}

macro_rules! json_codec {
    ($t:ty) => {
        impl $t {
            /// Serialises for the store.
            pub(crate) fn encode(&self) -> Vec<u8> {
                // Strings, numbers and string maps always serialise.
                serde_json::to_vec(self).expect("store records serialise to JSON")
            }
            /// Reads a stored row.
            pub(crate) fn decode(bytes: &[u8]) -> Result<Self, String> {
                serde_json::from_slice(bytes).map_err(|e| format!("bad {} row: {e}", stringify!($t)))
            }
        }
    };
}

json_codec!(DocumentRecord);
json_codec!(ChunkRecord);
