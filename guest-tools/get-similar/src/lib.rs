//! Cortext's `get_similar`: the documents most similar to a given one, ranked
//! by document-level similarity (mean chunk vectors), the source left out.

use ragbox_sdk::conventions::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::{indexer, walk};
use ragbox_sdk::protocol::{Passage, SimilarDocuments};
use ragbox_sdk::search::semantic::{self, conversation_name, score};
use ragbox_sdk::tool::args::{self, optional_count};
use ragbox_sdk::tool::text::truncate;
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError, corpus, vectors};
use schemars::JsonSchema;
use serde::Deserialize;

const DEFAULT_RESULTS: u64 = 5;
const MAX_RESULTS: u64 = 50;
/// How much of a similar document's opening a result shows.
const PREVIEW_BYTES: usize = 300;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Path of the source document (workspace-relative or absolute)
    source_path: String,
    /// Number of similar documents to return
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 1, max = MAX_RESULTS), extend("type" = "number", "default" = DEFAULT_RESULTS))]
    n_results: Option<u64>,
}

/// A checked call: the source document, and how many similar ones.
#[derive(Debug, PartialEq)]
struct Request {
    source_path: String,
    n: u64,
}

fn check(a: Args) -> Result<Request, String> {
    if a.source_path.trim().is_empty() {
        return Err("source_path must not be empty".into());
    }
    let n = args::count_in("n_results", a.n_results, DEFAULT_RESULTS, 1..=MAX_RESULTS)?;
    Ok(Request { source_path: a.source_path, n })
}

fn run(source: &str, workspace_root: &str, n: u64) -> Result<SimilarDocuments, String> {
    let not_found = || format!("Document not found: {source}");
    let path = walk::in_workspace(source, workspace_root).ok_or_else(not_found)?;
    let stored = corpus::get(&path)?;
    // Stored for keyword search, its vectors not made yet: nothing to compare.
    if stored.as_ref().is_some_and(|doc| !indexer::is_embedded(doc)) {
        return Err(format!(
            "{path} is not embedded yet: it is searchable by keyword, and get_similar can compare it once embedding \
             reaches it (or run embed_document on it now)"
        ));
    }
    if stored.is_none() {
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
                location: None,
            }
        })
        .collect();
    let message = semantic::coverage().map(semantic::coverage_note);
    Ok(SimilarDocuments { success: true, source: path, num_results: similar.len(), similar, message })
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "get_similar";
    const TITLE: &'static str = "Similar documents";
    const DESCRIPTION: &'static str = "Find documents similar to a given source document (by meaning, over whole \
        documents), ranked by similarity, highest first; the source itself is left out. The source must be embedded.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    type Request = Request;
    type Output = SimilarDocuments;

    fn check(args: Args) -> Result<Request, CallError> {
        check(args).map_err(cortext::invalid)
    }

    fn run(request: Request, workspace: &WorkspaceInfo) -> Result<SimilarDocuments, CallError> {
        run(&request.source_path, &workspace.path, request.n).map_err(cortext::failed)
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_arguments() {
        let v = |json: &str| args::parse::<Args>(json).and_then(check).map(|r| r.n);
        assert!(v(r#"{"source_path":""}"#).unwrap_err().contains("must not be empty"));
        assert!(v(r#"{"source_path":"a.md","n_results":0}"#).unwrap_err().contains("between 1 and 50"));
        assert!(v(r#"{}"#).unwrap_err().contains("source_path"));
        assert_eq!(v(r#"{"source_path":"a.md"}"#), Ok(5));
    }
}
