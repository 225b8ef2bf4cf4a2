//! Conversions between WIT records and the store's and index's types.

use super::error::invalid;
use crate::corpus::ChunkHit;
use crate::index::{DocumentHit, Filter};
use crate::records::{ChunkRecord, DocumentRecord, NewChunk, NewDocument};
use crate::runtime::bindings::ragbox::tools::embedder::EmbedKind;
use crate::runtime::bindings::ragbox::tools::types::Error;
use crate::runtime::bindings::ragbox::tools::{corpus as wit, vectors};

pub fn embed_kind(kind: EmbedKind) -> crate::embed::EmbedKind {
    match kind {
        EmbedKind::Query => crate::embed::EmbedKind::Query,
        EmbedKind::Passage => crate::embed::EmbedKind::Passage,
    }
}

pub fn filter(f: wit::Filter) -> Filter {
    Filter {
        conversation_type: f.conversation_type.filter(|s| !s.is_empty()),
        date_range: f.date_range.filter(|s| !s.is_empty()),
        path_prefix: f.path_prefix.filter(|s| !s.is_empty()),
        extensions: f.extensions,
        metadata: f.metadata,
    }
}

pub fn document(d: &DocumentRecord) -> wit::Document {
    wit::Document {
        path: d.path.clone(),
        content_hash: d.content_hash.clone(),
        size: d.size,
        mtime: d.mtime,
        kind: d.kind.clone(),
        title: d.title.clone(),
        conversation_type: d.conversation_type.clone(),
        date: d.date.clone(),
        metadata: d.metadata.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        embedded_at: d.embedded_at,
        model_id: d.model_id.clone(),
        chunks: d.chunks,
    }
}

pub fn chunk(c: ChunkRecord) -> wit::Chunk {
    wit::Chunk { text: c.text, start: c.start, end: c.end }
}

/// A tool's document as the store keeps it; the host fills in model and time.
/// Chunks without any vectors are stored for keyword search only.
pub fn new_document(d: wit::NewDocument) -> Result<NewDocument, Error> {
    if d.chunks.len() != d.vectors.len() && !d.vectors.is_empty() {
        return Err(invalid(format!(
            "{} chunks but {} vectors for {}: give one vector per chunk (or none, to store it for keyword search only)",
            d.chunks.len(),
            d.vectors.len(),
            d.path
        )));
    }
    let dimension = d.vectors.first().map_or(0, Vec::len);
    let record = DocumentRecord {
        path: d.path,
        content_hash: d.content_hash,
        size: d.size,
        mtime: d.mtime,
        kind: d.kind,
        title: d.title,
        conversation_type: d.conversation_type,
        date: d.date,
        metadata: d.metadata.into_iter().collect(),
        ..Default::default()
    };
    let mut vectors = d.vectors.into_iter();
    let chunks = d
        .chunks
        .into_iter()
        .map(|c| NewChunk {
            record: ChunkRecord { text: c.text, start: c.start, end: c.end },
            vector: vectors.next().unwrap_or_default(),
        })
        .collect();
    Ok(NewDocument { record, dimension, chunks })
}

pub fn hit(h: ChunkHit) -> vectors::Hit {
    vectors::Hit {
        document: document(&h.hit.document),
        ordinal: h.hit.ordinal,
        chunk: chunk(h.chunk),
        score: h.hit.score,
    }
}

pub fn document_hit(h: DocumentHit) -> vectors::DocumentHit {
    vectors::DocumentHit { document: document(&h.document), score: h.score }
}
