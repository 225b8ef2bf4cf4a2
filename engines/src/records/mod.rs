//! What a workspace's index keeps, whichever backend keeps it: the records
//! of documents and chunks, the counts, the changes since a generation, the
//! errors, and [`Records`], what the corpus asks of a backend. The
//! workspace's redb store (`crate::store`) and a shared PostgreSQL collection
//! (`crate::postgres`) both answer it; the derived indexes read these types.

mod document;
mod error;
mod metadata;

pub use document::{ChunkRecord, DocumentRecord, NewChunk, NewDocument};
pub use error::StoreError;
pub use metadata::Metadata;

/// Documents, chunks and changes, whichever backend keeps them: the corpus
/// picks the backend once and every read, write and catch-up goes through this.
pub trait Records: Send + Sync {
    /// The record of the document at `path`.
    fn document(&self, path: &str) -> Result<Option<DocumentRecord>, StoreError>;
    /// Every document record, in path order.
    fn documents(&self) -> Result<Vec<DocumentRecord>, StoreError>;
    /// Up to `limit` document records in path order, after the path `after`.
    fn documents_after(&self, after: Option<&str>, limit: usize) -> Result<Vec<DocumentRecord>, StoreError>;
    /// The chunks of the document at `path`, in order.
    fn chunk_texts(&self, path: &str) -> Result<Vec<ChunkRecord>, StoreError>;
    /// The chunks at `keys` (path, ordinal); `None` where gone.
    fn chunk_records(&self, keys: &[(&str, u32)]) -> Result<Vec<Option<ChunkRecord>>, StoreError>;
    /// Counts, generation and model id.
    fn stats(&self) -> Result<Stats, StoreError>;
    /// Writes `docs` in one transaction, each replacing its earlier version.
    fn put_documents(&self, docs: &[NewDocument]) -> Result<u64, StoreError>;
    /// Removes the document at `path`; false when it was not stored.
    fn remove_document(&self, path: &str) -> Result<bool, StoreError>;
    /// The generation: bumped by every committed change.
    fn generation(&self) -> Result<u64, StoreError>;
    /// The document records changed since generation `since`.
    fn document_delta(&self, since: u64) -> Result<Delta<()>, StoreError>;
    /// The documents changed since `since` with their chunks' text, and those removed.
    fn text_delta(&self, since: u64) -> Result<TextDelta, StoreError>;
}

/// Counts and identity of what is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Documents stored.
    pub documents: u64,
    /// Chunks stored.
    pub chunks: u64,
    /// Bumped by every committed change; derived indexes compare it.
    pub generation: u64,
    /// The model the vectors come from, once any are stored.
    pub model_id: Option<String>,
}

/// Whether two model ids name the same model: ids are `name@weights-hash`,
/// and only the weights count, so a renamed model folder keeps its index.
pub fn same_model(a: &str, b: &str) -> bool {
    fn weights(id: &str) -> &str {
        id.rsplit_once('@').map_or(id, |(_, hash)| hash)
    }
    weights(a) == weights(b)
}

impl Stats {
    /// Fails when the stored vectors come from another model than `current`
    /// (a model id): comparing them with its vectors would mean nothing.
    pub fn check_model(&self, current: &str) -> Result<(), StoreError> {
        match &self.model_id {
            Some(stored) if !same_model(stored, current) => {
                Err(StoreError::ModelMismatch { stored: stored.clone(), current: current.to_string() })
            }
            _ => Ok(()),
        }
    }
}

/// What changed since a generation, read in one transaction so it is consistent.
#[derive(Debug, Clone, Default)]
pub struct Delta<V> {
    /// The store generation it brings a reader to.
    pub generation: u64,
    /// True when this is everything (not a difference): the reader starts over.
    pub full: bool,
    /// Documents added or replaced, with one row per chunk in chunk order.
    pub documents: Vec<(DocumentRecord, Vec<V>)>,
    /// Paths removed.
    pub removed: Vec<String>,
}

/// Everything the vector index is built from: documents with their chunk vectors.
pub type Snapshot = Delta<Vec<f32>>;

/// Every document with its chunks' text, for the fulltext index.
pub type TextDelta = Delta<ChunkRecord>;

/// Refuses a document no backend may store: a path of another spelling, a
/// vector that is not finite or not of the model's length.
pub(crate) fn check_document(doc: &NewDocument) -> Result<(), StoreError> {
    check_path(&doc.record.path)
        .map_err(|why| StoreError::Invalid { path: doc.record.path.clone(), message: why.into() })?;
    if doc.keyword_only() {
        return Ok(());
    }
    for (ordinal, chunk) in doc.chunks.iter().enumerate() {
        if let Some(bad) = chunk.vector.iter().find(|v| !v.is_finite()) {
            let message = format!("chunk {ordinal}'s vector holds {bad}: vectors must be finite");
            return Err(StoreError::Invalid { path: doc.record.path.clone(), message });
        }
        if chunk.vector.len() != doc.dimension {
            return Err(StoreError::Dimension {
                path: doc.record.path.clone(),
                got: chunk.vector.len(),
                expected: doc.dimension,
            });
        }
    }
    Ok(())
}

/// Why `path` is not a workspace-relative path as every tool writes it
/// (`a/b.md`: `/`-separated, no empty, `.` or `..` parts, no NUL), if it is not.
/// One file has one spelling, so it is stored once.
fn check_path(path: &str) -> Result<(), &'static str> {
    if path.trim().is_empty() {
        return Err("the path is blank");
    }
    if path.contains('\0') {
        return Err("the path holds a NUL character");
    }
    if path.starts_with('/') {
        return Err("the path must be relative to the workspace");
    }
    if path.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
        return Err("the path has an empty, `.` or `..` part; write it as `dir/file.md`");
    }
    Ok(())
}

/// Vectors are stored as little-endian f32s.
pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A vector from its stored bytes (see [`encode_vector`]).
pub(crate) fn decode_vector(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

#[cfg(test)]
mod tests {
    use super::{check_path, same_model};

    #[test]
    fn a_model_is_its_weights_not_its_folder_name() {
        assert!(same_model("all-MiniLM-L6-v2@0123abcd", "renamed@0123abcd"));
        assert!(!same_model("all-MiniLM-L6-v2@0123abcd", "all-MiniLM-L6-v2@0123abce"));
        assert!(same_model("a", "a") && !same_model("a", "b"));
    }

    #[test]
    fn paths_have_one_spelling() {
        for ok in ["a.md", "dir/b.md", "odd\\name.md", " spaced .md", ".hidden/x"] {
            assert_eq!(check_path(ok), Ok(()), "{ok}");
        }
        for bad in ["", "  ", "./x.md", "a//b.md", "a/./b", "a/../b", "/abs.md", "dir/", "nul\0.md"] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }
}
