//! Semantic search as the Cortext tools answer it: the query embedded, the
//! nearest chunks from the index, each result in Cortext's shape
//! (`conversation`, `score`, `text`, `source_path`, plus type and date).

use crate::bindings::ragbox::tools::corpus::{self, Document, Filter};
use crate::bindings::ragbox::tools::embedder::EmbedKind;
use crate::bindings::ragbox::tools::vectors::{self, Hit};
use crate::indexing::layout::{DateRange, Layout};
use crate::search::lines::Lines;
use crate::tool::text::truncate;
use crate::{Error, ErrorCode};
use ragbox_protocol::{Coverage, Passage};

/// Longest chunk text a result carries: prose chunks and whole code units fit
/// (see [`crate::indexing::code::MAX_UNIT_BYTES`]); only a very long SKILL.md is cut
/// (`search_skills` returns skills whole), and the path leads to the rest.
pub const MAX_TEXT_BYTES: usize = crate::indexing::code::MAX_UNIT_BYTES;

/// A filter on conversation type and date, nothing else.
pub fn filter(conversation_type: Option<&str>, date_range: Option<&DateRange>) -> Filter {
    Filter {
        conversation_type: conversation_type.map(str::to_string),
        date_range: date_range.map(|d| d.as_str().to_string()),
        path_prefix: None,
        extensions: Vec::new(),
        metadata: Vec::new(),
    }
}

/// The conversation type argument, checked against the workspace's types:
/// `None` for absent, empty or "all".
pub fn conversation_type(arg: Option<&str>) -> Result<Option<String>, String> {
    let Some(name) = arg.map(str::trim).filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("all")) else {
        return Ok(None);
    };
    let layout = Layout::current();
    match layout.find_type(name) {
        Some(kind) => Ok(Some(kind.to_string())),
        None => Err(format!("Unknown conversation type {name:?}; this workspace has: {}", layout.types().join(", "))),
    }
}

/// True when nothing is embedded yet (reading never creates the store).
pub fn index_is_empty() -> Result<bool, Error> {
    Ok(corpus::stats()?.documents == 0)
}

/// The `k` chunks nearest `query` among documents passing `filter`, best
/// first; `None` when nothing is embedded yet. The host embeds the query and
/// refuses an index built with another model.
pub fn search(query: &str, k: u32, filter: &Filter) -> Result<Option<Vec<Hit>>, Error> {
    match vectors::search_text(query, EmbedKind::Query, k, filter) {
        Ok(hits) => Ok(Some(hits)),
        Err(e) if e.code == ErrorCode::NotIndexed => Ok(None),
        Err(e) => Err(e),
    }
}

/// How much of the store the vector index held for the search just made,
/// when not all of it: `(chunks with vectors, chunks stored)`. Chunks stored
/// for keyword search only are still being embedded (`None` when nothing is
/// missing, or the index is not this process's to count).
pub fn coverage() -> Option<(u64, u64)> {
    let state = vectors::state().ok()??;
    let stored = corpus::stats().ok()?.chunks;
    let embedded = state.in_graphs + state.exact;
    (embedded < stored).then_some((embedded, stored))
}

/// [`coverage`] for a response: `None` when the vector index holds every stored chunk.
pub fn coverage_report() -> Option<Coverage> {
    coverage().map(|(embedded, stored)| Coverage {
        embedded_chunks: embedded,
        stored_chunks: stored,
        message: coverage_note((embedded, stored)),
    })
}

/// What an answer from part of the store says about it.
pub fn coverage_note((embedded, stored): (u64, u64)) -> String {
    let share = embedded as f64 * 100.0 / stored.max(1) as f64;
    format!(
        "Searched by meaning over {embedded} of {stored} stored chunks ({share:.0}%): the rest are still being \
         embedded. Keyword (fulltext) search already covers them all."
    )
}

/// The name a result shows: the conversation folder, else the file name.
pub fn conversation_name(doc: &Document) -> String {
    if let Some(c) = Layout::current().parse(&doc.path) {
        return c.conversation;
    }
    doc.path.rsplit('/').next().unwrap_or(&doc.path).to_string()
}

/// A score for JSON: four decimals are all a reader can use.
pub fn score(value: f32) -> f64 {
    (f64::from(value) * 10_000.0).round() / 10_000.0
}

/// One search result in Cortext's shape, with its `path:first-last` lines.
pub fn passage(hit: &Hit, lines: &mut Lines) -> Passage {
    let doc = &hit.document;
    Passage {
        conversation: conversation_name(doc),
        score: score(hit.score),
        text: truncate(hit.chunk.text.trim_end(), MAX_TEXT_BYTES).to_string(),
        source_path: doc.path.clone(),
        conversation_type: doc.conversation_type.clone(),
        date: doc.date.clone(),
        title: doc.title.clone(),
        chunk_index: Some(hit.ordinal),
        location: lines.location(doc, hit.chunk.start, hit.chunk.end),
    }
}
