//! Cortext's `search_semantic`: the chunks closest in meaning to a query,
//! filtered by conversation type and date.

use ragbox_sdk::conventions::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::layout::DateRange;
use ragbox_sdk::protocol::{Passage, SemanticResults};
use ragbox_sdk::search::semantic;
use ragbox_sdk::tool::args::{self, optional_count};
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError};
use schemars::JsonSchema;
use serde::Deserialize;

const DEFAULT_RESULTS: u64 = 10;
const MAX_RESULTS: u64 = 100;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Search query
    query: String,
    /// Maximum number of results
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 1, max = MAX_RESULTS), extend("type" = "number", "default" = DEFAULT_RESULTS))]
    n_results: Option<u64>,
    /// Filter by type (brainstorm, debug, learn, meeting, plan, review, or a type from .workspace/registry.json)
    conversation_type: Option<String>,
    /// YYYY-MM or YYYY-MM-DD
    date_range: Option<String>,
}

/// A validated request.
#[derive(Debug)]
struct Request {
    query: String,
    n: u64,
    conversation_type: Option<String>,
    date_range: Option<DateRange>,
}

impl Request {
    fn from_args(a: Args) -> Result<Self, String> {
        if a.query.trim().is_empty() {
            return Err("query must not be empty".into());
        }
        let n = args::count_in("n_results", a.n_results, DEFAULT_RESULTS, 1..=MAX_RESULTS)?;
        let date_range =
            a.date_range.filter(|d| !d.trim().is_empty()).map(|d| DateRange::parse(d.trim())).transpose()?;
        let conversation_type = semantic::conversation_type(a.conversation_type.as_deref())?;
        Ok(Self { query: a.query, n, conversation_type, date_range })
    }
}

fn run(r: &Request) -> Result<SemanticResults, String> {
    let filter = semantic::filter(r.conversation_type.as_deref(), r.date_range.as_ref());
    // One more than asked says whether more exist.
    let Some(mut hits) = semantic::search(&r.query, (r.n + 1) as u32, &filter)? else {
        let message = "Nothing is embedded yet: run embed_workspace (or `ragbox index`) first, \
                       or use search_workspace for keyword search.";
        return Ok(SemanticResults {
            success: true,
            query: r.query.clone(),
            num_results: 0,
            results: Vec::new(),
            more_results: false,
            message: Some(message.to_string()),
        });
    };
    let more = hits.len() as u64 > r.n;
    hits.truncate(r.n as usize);
    let results: Vec<Passage> = {
        let mut lines = ragbox_sdk::search::lines::Lines::default();
        hits.iter().map(|h| semantic::passage(h, &mut lines)).collect()
    };
    let more_note = more.then(|| {
        format!(
            "More results exist than the {} returned: raise n_results, or narrow the search with \
             conversation_type or date_range.",
            r.n
        )
    });
    let partial = semantic::coverage().map(semantic::coverage_note);
    let message = match (partial, more_note) {
        (Some(partial), Some(more)) => Some(format!("{partial} {more}")),
        (partial, more) => partial.or(more),
    };
    Ok(SemanticResults {
        success: true,
        query: r.query.clone(),
        num_results: results.len(),
        results,
        more_results: more,
        message,
    })
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "search_semantic";
    const TITLE: &'static str = "Semantic search";
    const DESCRIPTION: &'static str = "Semantic search across workspace using embeddings: finds the passages \
        closest in meaning to the query, even without shared words. Results are sorted by score, highest first. \
        Filter by conversation type and by date (YYYY-MM or YYYY-MM-DD). Needs embed_workspace to have run.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    type Request = Request;
    type Output = SemanticResults;

    fn check(args: Args) -> Result<Request, CallError> {
        Request::from_args(args).map_err(cortext::invalid)
    }

    fn run(request: Request, _workspace: &WorkspaceInfo) -> Result<SemanticResults, CallError> {
        run(&request).map_err(cortext::failed)
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: &str) -> Result<Request, String> {
        Request::from_args(args::parse(json)?)
    }

    #[test]
    fn validates_arguments() {
        assert!(req(r#"{"query":" "}"#).unwrap_err().contains("must not be empty"));
        assert!(req(r#"{"query":"x","n_results":0}"#).unwrap_err().contains("between 1 and 100"));
        assert!(req(r#"{"query":"x","n_results":101}"#).unwrap_err().contains("between 1 and 100"));
        assert!(req(r#"{"query":"x","n_results":"3"}"#).unwrap_err().contains("'n_results'"));
        assert!(req(r#"{"query":"x","date_range":"November"}"#).unwrap_err().contains("YYYY-MM"));
        let r = req(r#"{"query":"x","n_results":3.0,"date_range":"2025-11"}"#).unwrap();
        assert_eq!((r.n, r.date_range.unwrap().as_str()), (3, "2025-11"));
        assert_eq!(req(r#"{"query":"x"}"#).unwrap().n, 10);
    }
}
