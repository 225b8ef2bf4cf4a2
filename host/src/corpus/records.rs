//! What the corpus asks of a store, answered alike by the workspace's redb
//! [`Store`] and by a shared PostgreSQL [`Collection`]: the corpus picks the
//! store once and every read, write and catch-up goes through this.

use crate::postgres::Collection;
use crate::store::{ChunkRecord, Delta, DocumentRecord, NewDocument, Stats, Store, StoreError, TextDelta};

/// Documents, chunks and changes, whichever backend keeps them.
pub(super) trait Records: Send + Sync {
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
