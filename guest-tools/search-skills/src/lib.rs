//! The skills librarian's `search_skills` (seed 004): finds skills by what
//! they are for (the vector of each skill's intent) and returns each whole —
//! name, path, tags, relevance and the complete SKILL.md — in the text layout
//! of seed 004's Section 3.

use ragbox_sdk::args::optional_count;
use ragbox_sdk::corpus::Filter;
use ragbox_sdk::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::skill::MARKER;
use ragbox_sdk::tool::{self, Description, ToolSet};
use ragbox_sdk::vectors::Hit;
use ragbox_sdk::{CallError, semantic};
use serde::Deserialize;
use serde_json::json;

const DEFAULT_RESULTS: u64 = 3;
/// Seed 004 caps results at five.
const MAX_RESULTS: u64 = 5;
/// Below this cosine a skill does not match at all.
const MIN_RELEVANCE: f32 = 0.1;
const NO_MATCH: &str = "No matching skills found.";

#[derive(Debug, Deserialize)]
struct Args {
    query: String,
    #[serde(default, deserialize_with = "optional_count")]
    n_results: Option<u64>,
}

fn validate(a: &Args) -> Result<u64, String> {
    if a.query.trim().is_empty() {
        return Err("query must not be empty: describe the capability needed, e.g. 'fix redis timeout issues'".into());
    }
    match a.n_results {
        Some(0) => Err("n_results must be at least 1".into()),
        // As seed 004 does: more than five is read as five.
        n => Ok(n.unwrap_or(DEFAULT_RESULTS).min(MAX_RESULTS)),
    }
}

fn metadata<'a>(hit: &'a Hit, key: &str) -> &'a str {
    hit.document.metadata.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v.as_str())
}

/// One match, laid out as seed 004 shows it.
fn format_match(i: usize, hit: &Hit) -> String {
    let name = metadata(hit, "name");
    let tags = metadata(hit, "tags");
    let mut out = format!(
        "\n## Match {}: {} (relevance: {:.2})\n**Path**: {}\n**Tags**: {}\n",
        i + 1,
        name,
        hit.score,
        hit.document.path,
        tags
    );
    let risk = metadata(hit, "risk_level");
    let files = metadata(hit, "files");
    out.push_str(&format!("**Risk level**: {risk}\n"));
    if !files.is_empty() {
        out.push_str(&format!("**Files**: {files}\n"));
    }
    out.push_str(&format!("\n### Full Skill Content:\n{}\n---\n", hit.chunk.text));
    out
}

fn run(query: &str, n: u64) -> Result<String, String> {
    let skills = Filter {
        conversation_type: None,
        date_range: None,
        path_prefix: None,
        extensions: Vec::new(),
        metadata: vec![(MARKER.0.to_string(), MARKER.1.to_string())],
    };
    let Some(hits) = semantic::search(query, n as u32, &skills)? else { return Ok(NO_MATCH.to_string()) };
    let hits: Vec<Hit> = hits.into_iter().filter(|h| h.score >= MIN_RELEVANCE).collect();
    if hits.is_empty() {
        return Ok(NO_MATCH.to_string());
    }
    Ok(hits.iter().enumerate().map(|(i, h)| format_match(i, h)).collect::<Vec<_>>().join("\n"))
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
            name: "search_skills",
            title: "Search skills",
            description: "Search the skills library using natural language. Returns full skill definitions for the \
                most relevant matches: each skill's name, path, tags, relevance and its complete SKILL.md (never a \
                fragment), found by what the skill is for.",
            input: json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": "Natural language description of the capability needed (e.g., 'fix redis timeout issues')" },
                    "n_results": { "type": "integer", "description": "Number of results to return (default: 3, max: 5)", "default": DEFAULT_RESULTS },
                },
                "required": ["query"]
            }),
            output: None,
            annotations: tool::READS,
        }
    }

    fn decode(arguments: &str) -> Result<Self::Request, CallError> {
        parse(arguments)
    }

    fn run(request: Self::Request, _workspace: &WorkspaceInfo) -> Result<String, CallError> {
        let (a, n) = request;
        run(a.query.trim(), n).map_err(cortext::failed)
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_results_defaults_to_three_and_caps_at_five() {
        let v = |json: &str| ragbox_sdk::args::parse::<Args>(json).and_then(|a| validate(&a));
        assert_eq!(v(r#"{"query":"x"}"#), Ok(3));
        assert_eq!(v(r#"{"query":"x","n_results":9}"#), Ok(5));
        assert!(v(r#"{"query":"x","n_results":0}"#).is_err());
        assert!(v(r#"{"query":" "}"#).is_err());
    }
}
