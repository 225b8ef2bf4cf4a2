//! The RAG MCP Server's `search_similar` (seed 003): the documents whose
//! content is closest in meaning to a reference text, one entry per document
//! (its best chunk), above a similarity threshold.

use ragbox_sdk::args::optional_count;
use ragbox_sdk::embedder::EmbedKind;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::rag_server::{self, document_id, metadata, round, source};
use ragbox_sdk::text::truncate;
use ragbox_sdk::tool::{self, Description, ToolSet};
use ragbox_sdk::{CallError, ErrorCode, args, vectors};
use serde::Deserialize;
use serde_json::{Value, json};

const DEFAULT_LIMIT: u64 = 3;
const MAX_LIMIT: u64 = 10;
const DEFAULT_THRESHOLD: f64 = 0.1;
const PREVIEW_BYTES: usize = 200;

#[derive(Debug, Deserialize)]
struct Args {
    #[serde(default)]
    reference_text: Option<String>,
    #[serde(default, deserialize_with = "optional_count")]
    limit: Option<u64>,
    #[serde(default)]
    exclude_source: Option<String>,
    #[serde(default)]
    similarity_threshold: Option<f64>,
}

struct Request {
    text: String,
    limit: u64,
    exclude: Option<String>,
    threshold: f64,
}

fn request(arguments: &str) -> Result<Request, CallError> {
    let bad = rag_server::bad_parameter;
    let a: Args = args::parse(arguments).map_err(bad)?;
    let text = a.reference_text.unwrap_or_default();
    if text.trim().is_empty() {
        return Err(rag_server::invalid(
            "InvalidReferenceText",
            "reference_text is required and must not be empty",
            "Give the text to find similar documents for",
        ));
    }
    let limit = args::count_in("limit", a.limit, DEFAULT_LIMIT, 1..=MAX_LIMIT).map_err(bad)?;
    let threshold = a.similarity_threshold.unwrap_or(DEFAULT_THRESHOLD);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(bad(format!("similarity_threshold must be between 0.0 and 1.0, got {threshold}")));
    }
    let exclude = a.exclude_source.map(|s| s.trim().trim_start_matches("./").to_string()).filter(|s| !s.is_empty());
    Ok(Request { text, limit, exclude, threshold })
}

/// True when `path` is the excluded source, named by file name, path or id.
fn excluded(path: &str, exclude: Option<&str>) -> bool {
    exclude.is_some_and(|x| path == x || path.rsplit('/').next() == Some(x) || document_id(path) == x)
}

fn run(r: &Request) -> Result<Value, String> {
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
            similar.push(json!({
                "rank": similar.len() + 1,
                "similarity_score": round(score),
                "content_preview": truncate(hit.chunk.text.trim(), PREVIEW_BYTES),
                "full_content": hit.chunk.text,
                "source": source(&hit.document, Some(hit.ordinal)),
                "metadata": metadata(&hit.document),
            }));
        }
    }
    Ok(json!({
        "reference_text": r.text,
        "similar_documents": similar,
        "total_found": total_found,
        "search_info": {
            "similarity_threshold": r.threshold,
            "excluded_source": r.exclude,
            "search_method": "semantic_similarity",
        },
    }))
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    type Request = Request;
    const SET: ToolSet = ToolSet::RagServer;

    fn describe() -> Description {
        Description {
            name: "search_similar",
            title: "Find similar documents",
            description: "Find documents similar to provided reference text using semantic similarity: one entry \
                per document (its closest passage), above similarity_threshold, best first. exclude_source leaves \
                out a file by name, path or id.",
            input: json!({
                "type": "object",
                "properties": {
                    "reference_text": { "type": "string", "description": "Text to find similar content for" },
                    "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "Max similar documents" },
                    "exclude_source": { "type": "string", "description": "Exclude a file by name, path or id" },
                    "similarity_threshold": { "type": "number", "minimum": 0, "maximum": 1, "default": DEFAULT_THRESHOLD, "description": "Min similarity score" },
                },
                "required": ["reference_text"]
            }),
            output: Some(json!({
                "type": "object",
                "properties": {
                    "reference_text": { "type": "string" },
                    "similar_documents": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "rank": { "type": "integer" },
                                "similarity_score": { "type": "number" },
                                "content_preview": { "type": "string" },
                                "full_content": { "type": "string" },
                                "source": { "type": "object" },
                                "metadata": { "type": "object" }
                            },
                            "required": ["rank", "similarity_score", "content_preview", "full_content", "source"]
                        }
                    },
                    "total_found": { "type": "integer", "description": "Documents above the threshold (before limit)" },
                    "search_info": { "type": "object" }
                },
                "required": ["reference_text", "similar_documents", "total_found", "search_info"]
            })),
            annotations: tool::READS,
        }
    }

    fn decode(arguments: &str) -> Result<Self::Request, CallError> {
        request(arguments)
    }

    fn run(request: Self::Request, _workspace: &WorkspaceInfo) -> Result<String, CallError> {
        rag_server::answer(run(&request), "SimilaritySearchFailed", rag_server::CHECK_INDEXED)
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    fn err(args: &str) -> Value {
        match request(args) {
            Err(CallError::InvalidArguments(body)) => serde_json::from_str(&body).unwrap(),
            _ => panic!("{args} should be invalid"),
        }
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
