//! The RAG MCP Server's `search_similar`: the documents whose
//! content is closest in meaning to a reference text, one entry per document
//! (its best chunk), above a similarity threshold.

use ragbox_sdk::conventions::rag_server::{self, document_id, metadata_map, round, source_ref};
use ragbox_sdk::embedder::EmbedKind;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::protocol::{SimilarDocument, SimilarSearchInfo, SimilarToText};
use ragbox_sdk::search::semantic;
use ragbox_sdk::tool::args;
use ragbox_sdk::tool::args::optional_count;
use ragbox_sdk::tool::text::truncate;
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError, ErrorCode, vectors};
use schemars::JsonSchema;
use serde::Deserialize;

const DEFAULT_LIMIT: u64 = 3;
const MAX_LIMIT: u64 = 10;
const DEFAULT_THRESHOLD: f64 = 0.1;
const PREVIEW_BYTES: usize = 200;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Text to find similar content for
    // Optional here so that its absence gets its own error type.
    #[schemars(required)]
    reference_text: Option<String>,
    /// Max similar documents
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 1, max = MAX_LIMIT), extend("default" = DEFAULT_LIMIT))]
    limit: Option<u64>,
    /// Exclude a file by name, path or id
    exclude_source: Option<String>,
    /// Min similarity score
    #[schemars(range(min = 0, max = 1), extend("default" = DEFAULT_THRESHOLD))]
    similarity_threshold: Option<f64>,
}

struct Request {
    text: String,
    limit: u64,
    exclude: Option<String>,
    threshold: f64,
}

/// True when `path` is the excluded source, named by file name, path or id.
fn excluded(path: &str, exclude: Option<&str>) -> bool {
    exclude.is_some_and(|x| path == x || path.rsplit('/').next() == Some(x) || document_id(path) == x)
}

fn run(r: &Request) -> Result<SimilarToText, String> {
    let mut similar = Vec::new();
    let mut total_found = 0;
    // Enough chunks to find `limit` distinct documents in most corpora.
    let depth = (r.limit * 10).max(50) as u32;
    let all = rag_server::filter(&[], &Default::default())?;
    let found = match vectors::search_text(&r.text, EmbedKind::Passage, depth, &all) {
        Ok(hits) => Some(hits),
        Err(e) if e.code == ErrorCode::NotIndexed => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(hits) = found {
        let mut lines = ragbox_sdk::search::lines::Lines::default();
        let mut seen = std::collections::HashSet::new();
        for hit in hits {
            let score = f64::from(hit.score);
            if score < r.threshold {
                break; // best first: the rest are below too
            }
            if excluded(&hit.document.path, r.exclude.as_deref()) || !seen.insert(hit.document.path.clone()) {
                continue;
            }
            total_found += 1;
            if similar.len() as u64 == r.limit {
                continue;
            }
            similar.push(SimilarDocument {
                rank: similar.len() + 1,
                similarity_score: round(score),
                content_preview: truncate(hit.chunk.text.trim(), PREVIEW_BYTES),
                source: source_ref(&hit, &mut lines),
                metadata: metadata_map(&hit.document),
                full_content: hit.chunk.text,
            });
        }
    }
    Ok(SimilarToText {
        reference_text: r.text.clone(),
        similar_documents: similar,
        total_found,
        search_info: SimilarSearchInfo {
            similarity_threshold: r.threshold,
            excluded_source: r.exclude.clone(),
            search_method: "semantic_similarity".to_string(),
            coverage: semantic::coverage_report(),
        },
    })
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "search_similar";
    const TITLE: &'static str = "Find similar documents";
    const DESCRIPTION: &'static str = "Find documents similar to provided reference text using semantic similarity: \
        one entry per document (its closest passage), above similarity_threshold, best first. exclude_source leaves \
        out a file by name, path or id.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::RagServer;
    type Args = Args;
    type Request = Request;
    type Output = SimilarToText;

    fn check(a: Args) -> Result<Request, CallError> {
        let bad = rag_server::bad_parameter;
        let text = rag_server::required(
            a.reference_text,
            "InvalidReferenceText",
            "reference_text",
            "Give the text to find similar documents for",
        )?;
        let limit = args::count_in("limit", a.limit, DEFAULT_LIMIT, 1..=MAX_LIMIT).map_err(bad)?;
        let threshold = a.similarity_threshold.unwrap_or(DEFAULT_THRESHOLD);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(bad(format!("similarity_threshold must be between 0.0 and 1.0, got {threshold}")));
        }
        let exclude = a.exclude_source.map(|s| s.trim().trim_start_matches("./").to_string()).filter(|s| !s.is_empty());
        Ok(Request { text, limit, exclude, threshold })
    }

    fn run(request: Request, _workspace: &WorkspaceInfo) -> Result<SimilarToText, CallError> {
        run(&request).map_err(|e| rag_server::failed("SimilaritySearchFailed", e, rag_server::CHECK_INDEXED))
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: &str) -> Result<Request, CallError> {
        tool::decode::<Tool>(json)
    }

    fn err(args: &str) -> serde_json::Value {
        tool::refusal::<Tool>(args).unwrap_or_else(|| panic!("{args} should be invalid"))
    }

    #[test]
    fn validates_arguments() {
        assert_eq!(err("{}")["error"], "InvalidReferenceText");
        assert_eq!(err(r#"{"reference_text":"x","limit":11}"#)["error"], "InvalidParameter");
        assert_eq!(err(r#"{"reference_text":"x","similarity_threshold":1.5}"#)["error"], "InvalidParameter");
        assert_eq!(err(r#"{"reference_text":"x","similarity_threshold":-0.1}"#)["error"], "InvalidParameter");
        let r = request(r#"{"reference_text":"x","exclude_source":"./docs/a.md"}"#).ok().unwrap();
        assert_eq!((r.limit, r.threshold, r.exclude.as_deref()), (3, 0.1, Some("docs/a.md")));
    }

    #[test]
    fn exclusion_by_name_path_or_id() {
        assert!(excluded("docs/a.md", Some("a.md")));
        assert!(excluded("docs/a.md", Some("docs/a.md")));
        assert!(excluded("docs/a.md", Some(&document_id("docs/a.md"))));
        assert!(!excluded("docs/a.md", Some("b.md")));
        assert!(!excluded("docs/a.md", None));
    }
}
