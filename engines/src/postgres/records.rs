//! A shared collection answers what the corpus asks of a backend.

use super::Collection;
use crate::records::{ChunkRecord, Delta, DocumentRecord, NewDocument, Records, Stats, StoreError, TextDelta};

impl Records for Collection {
    fn document(&self, path: &str) -> Result<Option<DocumentRecord>, StoreError> {
        Collection::document(self, path)
    }
    fn documents(&self) -> Result<Vec<DocumentRecord>, StoreError> {
        Collection::documents(self)
    }
    fn documents_after(&self, after: Option<&str>, limit: usize) -> Result<Vec<DocumentRecord>, StoreError> {
        Collection::documents_after(self, after, limit)
    }
    fn chunk_texts(&self, path: &str) -> Result<Vec<ChunkRecord>, StoreError> {
        Collection::chunks(self, path)
    }
    fn chunk_records(&self, keys: &[(&str, u32)]) -> Result<Vec<Option<ChunkRecord>>, StoreError> {
        Collection::chunk_records(self, keys)
    }
    fn stats(&self) -> Result<Stats, StoreError> {
        Collection::stats(self)
    }
    fn put_documents(&self, docs: &[NewDocument]) -> Result<u64, StoreError> {
        Collection::put_documents(self, docs)
    }
    fn remove_document(&self, path: &str) -> Result<bool, StoreError> {
        Collection::remove_document(self, path)
    }
    fn generation(&self) -> Result<u64, StoreError> {
        Collection::generation(self)
    }
    fn document_delta(&self, since: u64) -> Result<Delta<()>, StoreError> {
        Collection::document_delta(self, since)
    }
    fn text_delta(&self, since: u64) -> Result<TextDelta, StoreError> {
        Collection::text_delta(self, since)
    }
}
