//! Cortext's `get_similar`: the documents most similar to a given one, ranked
//! by document-level similarity (mean chunk vectors), the source left out.

use ragbox_sdk::args::{self, optional_count};
use ragbox_sdk::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::protocol::{Passage, SimilarDocuments};
use ragbox_sdk::semantic::{self, conversation_name, score};
use ragbox_sdk::text::truncate;
use ragbox_sdk::tool::{self, Description, ToolSet};
use ragbox_sdk::{CallError, corpus, vectors, walk};
use serde::Deserialize;
use serde_json::json;

const DEFAULT_RESULTS: u64 = 5;
const MAX_RESULTS: u64 = 50;
/// How much of a similar document's opening a result shows.
const PREVIEW_BYTES: usize = 300;

#[derive(Debug, Deserialize)]
struct Args {
    source_path: String,
    #[serde(default, deserialize_with = "optional_count")]
    n_results: Option<u64>,
}

fn validate(a: &Args) -> Result<u64, String> {
    if a.source_path.trim().is_empty() {
        return Err("source_path must not be empty".into());
    }
    args::count_in("n_results", a.n_results, DEFAULT_RESULTS, 1..=MAX_RESULTS)
}

fn run(source: &str, workspace_root: &str, n: u64) -> Result<SimilarDocuments, String> {
    let not_found = || format!("Document not found: {source}");
    let path = walk::in_workspace(source, workspace_root).ok_or_else(not_found)?;
    if corpus::get(&path)?.is_none() {
        let hint = if semantic::index_is_empty()? {
            " (nothing is embedded yet: run embed_workspace first)"
        } else if std::fs::metadata(&path).is_ok() {
            " (the file exists but is not embedded: run embed_document on it)"
        } else {
            ""
        };
        return Err(format!("{}{hint}", not_found()));
    }
    let all = semantic::filter(None, None);
    let hits = vectors::similar_documents(&path, n as u32, &all)?;
    let similar: Vec<Passage> = hits
        .iter()
        .map(|h| {
            let doc = &h.document;
            let preview = corpus::chunks(&doc.path)
                .ok()
                .and_then(|c| c.into_iter().next())
                .map(|c| truncate(c.text.trim(), PREVIEW_BYTES))
                .unwrap_or_default();
            Passage {
                conversation: conversation_name(doc),
                score: score(h.score),
                text: preview.to_string(),
                source_path: doc.path.clone(),
                conversation_type: doc.conversation_type.clone(),
                date: doc.date.clone(),
                title: doc.title.clone(),
                chunk_index: None,
            }
        })
        .collect();
    Ok(SimilarDocuments { success: true, source: path, num_results: similar.len(), similar })
}

fn parse(arguments: &str) -> Result<(Args, u64), CallError> {
    cortext::checked_arguments(arguments, validate)
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    type Request = (Args, u64);
    const SET: ToolSet = ToolSet::Cortext;

    fn describe() -> Description {
        Description {
            name: "get_similar",
            title: "Similar documents",
            description: "Find documents similar to a given source document (by meaning, over whole documents), \
                ranked by similarity, highest first; the source itself is left out. The source must be embedded.",
            input: json!({
                "type": "object",
                "properties": {
                    "source_path": { "type": "string", "description": "Path of the source document (workspace-relative or absolute)" },
                    "n_results": { "type": "number", "default": DEFAULT_RESULTS, "minimum": 1, "maximum": MAX_RESULTS, "description": "Number of similar documents to return" }
                },
                "required": ["source_path"]
            }),
            output: Some(ragbox_sdk::protocol::output_schema::<SimilarDocuments>()),
            annotations: tool::READS,
        }
    }

    fn decode(arguments: &str) -> Result<Self::Request, CallError> {
        parse(arguments)
    }

    fn run(request: Self::Request, workspace: &WorkspaceInfo) -> Result<String, CallError> {
        let (a, n) = request;
        Ok(ragbox_sdk::to_json(&run(&a.source_path, &workspace.path, n).map_err(cortext::failed)?))
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_arguments() {
        let v = |json: &str| args::parse::<Args>(json).and_then(|a| validate(&a));
        assert!(v(r#"{"source_path":""}"#).unwrap_err().contains("must not be empty"));
        assert!(v(r#"{"source_path":"a.md","n_results":0}"#).unwrap_err().contains("between 1 and 50"));
        assert!(v(r#"{}"#).unwrap_err().contains("source_path"));
        assert_eq!(v(r#"{"source_path":"a.md"}"#), Ok(5));
    }
}
