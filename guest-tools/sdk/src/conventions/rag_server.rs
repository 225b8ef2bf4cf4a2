//! Conventions of the "RAG MCP Server" tool set: its error shape
//! (`{"error": Type, "message", "suggestion"}`), file types as MIME types,
//! source objects, the filters `sources` and `metadata_filters`, and the
//! search modes (hybrid is [`crate::search::hybrid`]'s fusion).

use crate::bindings::ragbox::tools::corpus::{Document, Filter};
use crate::bindings::ragbox::tools::fulltext;
use crate::bindings::ragbox::tools::vectors::Hit;
use crate::indexing::document::extension;
use crate::indexing::layout::DateRange;
use crate::search::group::{FileHit, Run};
use crate::search::hybrid::{self, Scored};
use crate::search::lines::Lines;
use crate::tool::ToolSet;
use crate::{CallError, Error};
use ragbox_protocol::SourceRef;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// An error body in the RAG MCP Server's shape: `{error, message, suggestion}`.
pub fn error(kind: &str, message: impl AsRef<str>, suggestion: &str) -> String {
    ragbox_protocol::ToolError::typed(kind, message.as_ref(), suggestion).to_json()
}

/// Invalid arguments, in the RAG MCP Server's error shape.
pub fn invalid(kind: &str, message: impl AsRef<str>, suggestion: &str) -> CallError {
    CallError::InvalidArguments(error(kind, message, suggestion))
}

/// A required text argument (`name`): absent, empty or blank is an error of
/// type `kind` in the RAG MCP Server's error shape, with `suggestion`.
pub fn required(value: Option<String>, kind: &str, name: &str, suggestion: &str) -> Result<String, CallError> {
    match value {
        Some(text) if !text.trim().is_empty() => Ok(text),
        _ => Err(invalid(kind, format!("{name} is required and must not be empty"), suggestion)),
    }
}

/// What a failed search suggests: the usual cause is an empty index.
pub const CHECK_INDEXED: &str = "Check that the workspace is indexed (embed_workspace or `ragbox index`)";

/// An argument that does not fit the input schema, in the RAG MCP Server's error shape.
pub fn bad_parameter(message: String) -> CallError {
    ToolSet::RagServer.bad_argument(&message)
}

/// A failed operation, in the RAG MCP Server's error shape.
pub fn failed(kind: &str, message: impl AsRef<str>, suggestion: &str) -> CallError {
    CallError::Failed(error(kind, message, suggestion))
}

/// File extension → MIME type, for the file types ragbox indexes.
const MIME: &[(&str, &str)] = &[
    ("md", "text/markdown"),
    ("markdown", "text/markdown"),
    ("mdx", "text/markdown"),
    ("txt", "text/plain"),
    ("text", "text/plain"),
    ("rst", "text/x-rst"),
    ("json", "application/json"),
    ("jsonl", "application/x-ndjson"),
    ("csv", "text/csv"),
    ("tsv", "text/tab-separated-values"),
    ("html", "text/html"),
    ("htm", "text/html"),
    ("xml", "application/xml"),
    ("yaml", "application/yaml"),
    ("yml", "application/yaml"),
    ("toml", "application/toml"),
    ("pdf", "application/pdf"),
    ("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ("pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    ("xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    ("odt", "application/vnd.oasis.opendocument.text"),
    ("ods", "application/vnd.oasis.opendocument.spreadsheet"),
    ("odp", "application/vnd.oasis.opendocument.presentation"),
    ("epub", "application/epub+zip"),
    ("rtf", "application/rtf"),
    ("ipynb", "application/x-ipynb+json"),
    ("rs", "text/x-rust"),
    ("py", "text/x-python"),
    ("js", "text/javascript"),
    ("mjs", "text/javascript"),
    ("ts", "text/x-typescript"),
    ("tsx", "text/x-typescript"),
    ("go", "text/x-go"),
    ("java", "text/x-java"),
    ("c", "text/x-c"),
    ("h", "text/x-c"),
    ("cpp", "text/x-c++"),
    ("cc", "text/x-c++"),
    ("hpp", "text/x-c++"),
    ("rb", "text/x-ruby"),
    ("sh", "application/x-sh"),
    ("sql", "application/sql"),
    ("css", "text/css"),
];

/// The MIME type of a file, from its extension (`text/plain` for other text).
pub fn mime_of(path: &str) -> &'static str {
    let ext = extension(path);
    MIME.iter().find(|(e, _)| *e == ext).map_or("text/plain", |(_, m)| m)
}

/// The extensions a `sources` entry names: an extension (`md`, `.md`) or a
/// MIME type (`text/markdown`). `None` for an unknown MIME type.
pub fn extensions_for(source: &str) -> Option<Vec<String>> {
    let s = source.trim().trim_start_matches('.').to_ascii_lowercase();
    if s.is_empty() {
        return None; // "" or "." names no file type (found by cargo fuzz)
    }
    if s.contains('/') {
        let exts: Vec<String> = MIME.iter().filter(|(_, m)| *m == s).map(|(e, _)| e.to_string()).collect();
        return (!exts.is_empty()).then_some(exts);
    }
    Some(vec![s])
}

/// A stable id for a document: derived from its path, so it survives edits.
pub fn document_id(path: &str) -> String {
    let digest = Sha256::digest(path.as_bytes());
    format!("doc_{}", digest.iter().take(6).map(|b| format!("{b:02x}")).collect::<String>())
}

/// The `source` object of a chunk result, with its `path:first-last` lines.
pub fn source_ref(hit: &Hit, lines: &mut Lines) -> SourceRef {
    let doc = &hit.document;
    source_of(doc, hit.ordinal, lines.location(doc, hit.chunk.start, hit.chunk.end))
}

/// The `source` object of a file's answer ([`crate::search::group`]): its best
/// chunk's index and the lines of its runs (`path:a-b,c-d`).
pub fn file_source_ref(file: &FileHit, runs: &[Run], lines: &mut Lines) -> SourceRef {
    let doc = file.document();
    source_of(doc, file.lead, lines.locations(doc, &runs.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>()))
}

/// The `source` object of `doc`, naming its chunk `chunk_index` and where the answer is.
fn source_of(doc: &Document, chunk_index: u32, location: Option<String>) -> SourceRef {
    SourceRef {
        filename: doc.path.rsplit('/').next().unwrap_or(&doc.path).to_string(),
        filepath: doc.path.clone(),
        file_type: mime_of(&doc.path).to_string(),
        file_id: document_id(&doc.path),
        chunk_index: Some(chunk_index),
        location,
    }
}

/// A document's metadata: frontmatter fields, plus title, conversation type
/// and date when known.
pub fn metadata_map(doc: &Document) -> BTreeMap<String, String> {
    // `ragbox.*` keys are the indexer's bookkeeping, not the document's.
    let own = doc.metadata.iter().filter(|(k, _)| !k.starts_with("ragbox."));
    let mut m: BTreeMap<String, String> = own.cloned().collect();
    for (key, value) in [("title", &doc.title), ("type", &doc.conversation_type), ("date", &doc.date)] {
        if let Some(v) = value {
            m.entry(key.to_string()).or_insert_with(|| v.clone());
        }
    }
    m
}

/// Builds the index filter from `sources` and `metadata_filters`. Keys `type`
/// (or `conversation_type`), `date` (YYYY-MM or YYYY-MM-DD), `path` (a folder
/// or path prefix) and `file_type` (as in `sources`) are understood; any other
/// key must match a metadata field exactly.
pub fn filter(sources: &[String], metadata_filters: &Map<String, Value>) -> Result<Filter, String> {
    let mut f = Filter {
        conversation_type: None,
        date_range: None,
        path_prefix: None,
        extensions: Vec::new(),
        metadata: Vec::new(),
    };
    let add_sources = |f: &mut Filter, s: &str| -> Result<(), String> {
        let exts = extensions_for(s).ok_or_else(|| {
            format!(
                "unknown file type {s:?}: give an extension (md, txt, json, …) or a MIME type such as text/markdown"
            )
        })?;
        f.extensions.extend(exts);
        Ok(())
    };
    for s in sources {
        add_sources(&mut f, s)?;
    }
    for (key, value) in metadata_filters {
        let value = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => return Err(format!("metadata_filters.{key} must be a string, number or boolean, got {other}")),
        };
        match key.as_str() {
            "type" | "conversation_type" => f.conversation_type = Some(value),
            "date" | "date_range" => f.date_range = Some(DateRange::parse(&value)?.as_str().to_string()),
            "path" | "path_prefix" => f.path_prefix = Some(value.trim_start_matches("./").to_string()),
            "file_type" | "source" => add_sources(&mut f, &value)?,
            _ => f.metadata.push((key.clone(), value)),
        }
    }
    Ok(f)
}

/// How to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nearest vectors.
    Semantic,
    /// BM25 keywords.
    Fulltext,
    /// Both, fused ([`crate::search::hybrid`]).
    Hybrid,
}

impl Mode {
    /// Parses `semantic`, `hybrid` or `fulltext`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "semantic" => Ok(Self::Semantic),
            "fulltext" => Ok(Self::Fulltext),
            "hybrid" => Ok(Self::Hybrid),
            other => Err(format!("unknown search type {other:?}: use \"semantic\", \"hybrid\" or \"fulltext\"")),
        }
    }

    /// The name used in responses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Semantic => "semantic",
            Self::Fulltext => "fulltext",
            Self::Hybrid => "hybrid",
        }
    }
}

/// The `k` best chunks for `query` in `mode` among documents passing
/// `filter`; none while nothing is indexed. Relevance: semantic, the cosine
/// similarity (negative counts as 0); fulltext, BM25 relative to the best
/// hit; hybrid, the fused relevance. In every mode a query that is an
/// identifier, a path or a quoted string puts the files holding it as
/// written first ([`crate::search::exact`]).
pub fn search(query: &hybrid::Query, mode: Mode, k: u32, filter: &Filter) -> Result<Vec<Scored>, Error> {
    let ranked = match mode {
        Mode::Semantic => {
            let Some(hits) = crate::search::semantic::search(query.text, k, filter)? else { return Ok(Vec::new()) };
            hits.into_iter()
                .map(|hit| {
                    let relevance = f64::from(hit.score).clamp(0.0, 1.0);
                    Scored { hit, relevance, own: relevance }
                })
                .collect()
        }
        Mode::Fulltext => {
            let hits = fulltext::search(query.text, k, filter)?;
            let best = hits.first().map_or(1.0, |h| f64::from(h.score)).max(f64::MIN_POSITIVE);
            hits.into_iter()
                .map(|hit| {
                    let relevance = (f64::from(hit.score) / best).clamp(0.0, 1.0);
                    Scored { hit, relevance, own: relevance }
                })
                .collect()
        }
        // hybrid::search looks up exact matches itself.
        Mode::Hybrid => return Ok(hybrid::search(query, k, filter, f32::NEG_INFINITY)?.unwrap_or_default()),
    };
    crate::search::exact::first(query.text, ranked, k as usize, filter)
}

/// A score rounded for JSON.
pub fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_types_and_sources() {
        assert_eq!(mime_of("docs/a.MD"), "text/markdown");
        assert_eq!(mime_of("notes/todo"), "text/plain");
        assert_eq!(mime_of(".bashrc"), "text/plain");
        assert_eq!(extensions_for(".md"), Some(vec!["md".to_string()]));
        assert_eq!(extensions_for("text/markdown"), Some(vec!["md".into(), "markdown".into(), "mdx".into()]));
        assert_eq!(extensions_for("application/x-unknown"), None);
        assert_eq!((extensions_for(""), extensions_for(" . ")), (None, None));
    }

    #[test]
    fn metadata_filters_map_to_the_index_filter() {
        let m: Map<String, Value> =
            serde_json::from_str(r#"{"type":"plan","date":"2025-11","path":"./docs","author":"john","draft":true}"#)
                .unwrap();
        let f = filter(&["txt".into(), "text/markdown".into()], &m).unwrap();
        assert_eq!(f.conversation_type.as_deref(), Some("plan"));
        assert_eq!(f.date_range.as_deref(), Some("2025-11"));
        assert_eq!(f.path_prefix.as_deref(), Some("docs"));
        assert_eq!(f.extensions, ["txt", "md", "markdown", "mdx"]);
        assert_eq!(f.metadata, [("author".to_string(), "john".to_string()), ("draft".into(), "true".into())]);
        let bad: Map<String, Value> = serde_json::from_str(r#"{"date":"soon"}"#).unwrap();
        assert!(filter(&[], &bad).is_err());
        let nested: Map<String, Value> = serde_json::from_str(r#"{"a":{"b":1}}"#).unwrap();
        assert!(filter(&[], &nested).unwrap_err().contains("metadata_filters.a"));
        assert!(filter(&["image/x-nope".into()], &Map::new()).is_err());
    }

    #[test]
    fn ids_are_stable_and_short() {
        assert_eq!(document_id("a.md"), document_id("a.md"));
        assert_ne!(document_id("a.md"), document_id("b.md"));
        assert_eq!(document_id("a.md").len(), 16);
    }
}
