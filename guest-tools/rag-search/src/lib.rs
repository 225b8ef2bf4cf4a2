//! The RAG MCP Server's `search`: semantic, hybrid (vectors and
//! BM25 fused by normalised score, see `ragbox_sdk::search::hybrid`) or fulltext
//! search, filtered by file type and metadata, with relevance scores in 0..1.
//! One result per file, holding its best-matching chunks (`ragbox_sdk::search::group`).

use ragbox_sdk::conventions::rag_server::{self, Mode, file_source_ref, metadata_map, round};
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::protocol::{SearchResult, SearchResults};
use ragbox_sdk::search::group::{self, FileHit, Run};
use ragbox_sdk::search::{hybrid, semantic};
use ragbox_sdk::tool::args::optional_count;
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::tool::{args, budget};
use ragbox_sdk::{Annotations, CallError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

const DEFAULT_LIMIT: u64 = 5;
const MAX_LIMIT: u64 = 50;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Search query text
    // Optional here so that its absence gets its own error type.
    #[schemars(required)]
    query: Option<String>,
    #[schemars(extend("enum" = ["semantic", "hybrid", "fulltext"], "default" = "semantic"))]
    search_type: Option<String>,
    /// Max results
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 1, max = MAX_LIMIT), extend("default" = DEFAULT_LIMIT))]
    limit: Option<u64>,
    /// Filter by file types: extensions ("md", "txt") or MIME types ("text/markdown")
    sources: Option<Vec<String>>,
    /// Key-value metadata filters: frontmatter fields must match exactly; type, date (YYYY-MM or YYYY-MM-DD) and path (folder prefix) are understood too
    #[schemars(extend("additionalProperties" = { "type": ["string", "number", "boolean"] }))]
    metadata_filters: Option<Map<String, Value>>,
    /// Stop adding results once their content would pass this many tokens (estimated at 4 bytes each); the best result always comes, and search_info says what was left out
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 500, max = 200000), extend("default" = budget::DEFAULT_MAX_TOKENS))]
    max_tokens: Option<u64>,
}

/// A validated request.
struct Request {
    query: String,
    mode: Mode,
    limit: u64,
    max_tokens: u64,
    filter: ragbox_sdk::corpus::Filter,
}

fn run(r: &Request) -> Result<SearchResults, String> {
    let query = hybrid::Query::new(&r.query);
    let ranked = rag_server::search(&query, r.mode, group::depth(r.limit as u32), &r.filter)?;
    let mut lines = ragbox_sdk::search::lines::Lines::default();
    let mut answers: Vec<(FileHit, Vec<Run>)> = group::by_file(ranked, r.limit as usize)
        .into_iter()
        .map(|file| {
            let runs = file.runs(lines.bytes(file.document()));
            (file, runs)
        })
        .collect();
    let texts: Vec<String> = answers.iter().map(|(_, runs)| group::joined(runs)).collect();
    let fit = budget::fitting(texts.iter().map(String::as_str), r.max_tokens);
    let left_out = answers.len() - fit;
    answers.truncate(fit);
    let results: Vec<SearchResult> = answers
        .iter()
        .zip(texts)
        .enumerate()
        .map(|(i, ((file, runs), content))| SearchResult {
            rank: i + 1,
            content,
            relevance_score: round(file.relevance),
            source: file_source_ref(file, runs, &mut lines),
            metadata: metadata_map(file.document()),
        })
        .collect();
    let mut info = json!({
        "total_results": results.len(),
        "search_method": r.mode.name(),
        "max_requested": r.limit,
    });
    if left_out > 0 {
        info["cut"] = json!({
            "results_left_out": left_out,
            "max_tokens": r.max_tokens,
            "message": format!(
                "{left_out} more files left out to stay under max_tokens {}: raise max_tokens or lower limit to see them",
                r.max_tokens
            ),
        });
    }
    if r.mode != Mode::Fulltext
        && let Some(coverage) = semantic::coverage_report()
    {
        info["coverage"] = json!(coverage);
    }
    if r.mode == Mode::Hybrid {
        info["fusion"] = json!({
            "method": "normalized_score_fusion",
            "normalization": "min_max",
            "semantic_weight": query.semantic_weight(),
        });
    }
    Ok(SearchResults {
        query: r.query.clone(),
        search_type: r.mode.name().to_string(),
        results_count: results.len(),
        results,
        search_info: info,
    })
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "search";
    const TITLE: &'static str = "Search documents";
    const DESCRIPTION: &'static str = "Search documents using semantic, hybrid, or fulltext search methods. Semantic \
        finds passages by meaning; fulltext ranks by keywords (BM25, English stemming); hybrid fuses both (each \
        list's scores normalised, then weighted equally) and is usually best. Filter by file type (sources) and \
        metadata (frontmatter fields, type, date, path). Relevance scores are in 0..1. One result per file: its best-matching passages (whole chunks: code \
        units or sections, up to 6 in the first file down to 2 from the fourth on, in file order, gaps marked ⋮) \
        with their lines as path:first-last.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::RagServer;
    type Args = Args;
    type Request = Request;
    type Output = SearchResults;

    fn check(a: Args) -> Result<Request, CallError> {
        let bad = rag_server::bad_parameter;
        let query = rag_server::required(a.query, "InvalidQuery", "query", "Give the words or question to search for")?;
        let mode = Mode::parse(a.search_type.as_deref().unwrap_or("semantic")).map_err(bad)?;
        let limit = args::count_in("limit", a.limit, DEFAULT_LIMIT, 1..=MAX_LIMIT).map_err(bad)?;
        let filter =
            rag_server::filter(&a.sources.unwrap_or_default(), &a.metadata_filters.unwrap_or_default()).map_err(bad)?;
        let max_tokens =
            args::count_in("max_tokens", a.max_tokens, budget::DEFAULT_MAX_TOKENS, budget::MAX_TOKENS).map_err(bad)?;
        Ok(Request { query: query.trim().to_string(), mode, limit, max_tokens, filter })
    }

    fn run(request: Request, _workspace: &WorkspaceInfo) -> Result<SearchResults, CallError> {
        run(&request).map_err(|e| rag_server::failed("SearchFailed", e, rag_server::CHECK_INDEXED))
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: &str) -> Result<Request, CallError> {
        tool::decode::<Tool>(json)
    }

    fn err(args: &str) -> Value {
        tool::refusal::<Tool>(args).unwrap_or_else(|| panic!("{args} should be invalid"))
    }

    #[test]
    fn errors_have_the_documented_types() {
        assert_eq!(err(r#"{}"#)["error"], "InvalidQuery");
        assert_eq!(err(r#"{"query":"  "}"#)["error"], "InvalidQuery");
        for bad in [
            r#"{"query":"x","limit":0}"#,
            r#"{"query":"x","limit":51}"#,
            r#"{"query":"x","search_type":"fuzzy"}"#,
            r#"{"query":"x","sources":"md"}"#,
            r#"{"query":"x","metadata_filters":{"date":"later"}}"#,
        ] {
            let e = err(bad);
            assert_eq!(e["error"], "InvalidParameter", "{bad}");
            assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()) && e["suggestion"].is_string());
        }
        let r = request(r#"{"query":"x","limit":50,"search_type":"hybrid"}"#).ok().unwrap();
        assert_eq!((r.limit, r.mode), (50, Mode::Hybrid));
    }
}
