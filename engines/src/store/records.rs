//! The workspace's redb store answers what the corpus asks of a backend, and
//! the vector index's asks for full-precision vectors.

use super::Store;
use crate::index::FullVectors;
use crate::records::{ChunkRecord, Delta, DocumentRecord, NewDocument, Records, Stats, StoreError, TextDelta};

impl Records for Store {
    fn document(&self, path: &str) -> Result<Option<DocumentRecord>, StoreError> {
        Store::document(self, path)
    }
    fn documents(&self) -> Result<Vec<DocumentRecord>, StoreError> {
        Store::documents(self)
    }
    fn documents_after(&self, after: Option<&str>, limit: usize) -> Result<Vec<DocumentRecord>, StoreError> {
        Store::documents_after(self, after, limit)
    }
    fn chunk_texts(&self, path: &str) -> Result<Vec<ChunkRecord>, StoreError> {
        Ok(Store::chunks(self, path)?.into_iter().map(|(c, _)| c).collect())
    }
    fn chunk_records(&self, keys: &[(&str, u32)]) -> Result<Vec<Option<ChunkRecord>>, StoreError> {
        Store::chunk_records(self, keys)
    }
    fn stats(&self) -> Result<Stats, StoreError> {
        Store::stats(self)
    }
    fn put_documents(&self, docs: &[NewDocument]) -> Result<u64, StoreError> {
        Store::put_documents(self, docs)
    }
    fn remove_document(&self, path: &str) -> Result<bool, StoreError> {
        Store::remove_document(self, path)
    }
    fn generation(&self) -> Result<u64, StoreError> {
        Store::generation(self)
    }
    fn document_delta(&self, since: u64) -> Result<Delta<()>, StoreError> {
        Store::document_delta(self, since)
    }
    fn text_delta(&self, since: u64) -> Result<TextDelta, StoreError> {
        Store::text_delta(self, since)
    }
}

/// The store is where the index re-scores its candidates in full precision.
impl FullVectors for Store {
    fn full_vectors(&self, keys: &[(&str, u32)]) -> Result<Vec<Option<Vec<f32>>>, StoreError> {
        self.vectors(keys)
    }
}
