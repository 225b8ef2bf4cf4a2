//! The Librarian skill's `search_skills` (from its MCP search backend): finds
//! skills by what they are for (the vector of each skill's intent, fused with
//! BM25 over the whole SKILL.md: names such as "stripe" or "helm" are
//! keywords) and returns each whole — name, path, tags, relevance and the
//! complete SKILL.md — in the Librarian's text layout (`## Match N: name
//! (relevance: …)`, then the skill's path, tags and full content).

use ragbox_sdk::conventions::cortext;
use ragbox_sdk::corpus::Filter;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::skill::MARKER;
use ragbox_sdk::protocol::skill::skill_md_uri;
use ragbox_sdk::search::hybrid::{self, Scored};
use ragbox_sdk::search::semantic;
use ragbox_sdk::tool::args::optional_count;
use ragbox_sdk::tool::budget;
use ragbox_sdk::tool::{self, Text, ToolSet};
use ragbox_sdk::{Annotations, CallError};
use schemars::JsonSchema;
use serde::Deserialize;

const DEFAULT_RESULTS: u64 = 3;
/// Seed 004 caps results at five.
const MAX_RESULTS: u64 = 5;
/// Below this cosine a skill does not match by meaning (it may still by keywords).
const MIN_COSINE: f32 = 0.1;
const NO_MATCH: &str = "No matching skills found.";

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Natural language description of the capability needed (e.g., 'fix redis timeout issues')
    query: String,
    /// Number of results to return (default: 3, max: 5)
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(extend("default" = DEFAULT_RESULTS))]
    n_results: Option<u64>,
    /// Leave out later skills once the answer would pass this many tokens (estimated at 4 bytes each); the best skill always comes whole, and the answer names the skills left out
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 500, max = 200000), extend("default" = DEFAULT_MAX_TOKENS))]
    max_tokens: Option<u64>,
}

/// Whole skills run to 30 KB: three fit this, well under the 25,000 tokens
/// some agents allow one tool result.
const DEFAULT_MAX_TOKENS: u64 = 20_000;

/// A checked call: the query, how many skills, and the token budget.
#[derive(Debug, PartialEq)]
struct Request {
    query: String,
    n: u64,
    max_tokens: u64,
}

fn check(a: Args) -> Result<Request, String> {
    if a.query.trim().is_empty() {
        return Err("query must not be empty: describe the capability needed, e.g. 'fix redis timeout issues'".into());
    }
    let n = match a.n_results {
        Some(0) => return Err("n_results must be at least 1".into()),
        // As the Librarian's backend does: more than five is read as five.
        n => n.unwrap_or(DEFAULT_RESULTS).min(MAX_RESULTS),
    };
    let max_tokens =
        ragbox_sdk::tool::args::count_in("max_tokens", a.max_tokens, DEFAULT_MAX_TOKENS, budget::MAX_TOKENS)?;
    Ok(Request { query: a.query.trim().to_string(), n, max_tokens })
}

fn metadata<'a>(found: &'a Scored, key: &str) -> &'a str {
    found.hit.document.metadata.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v.as_str())
}

/// One match, laid out as the Librarian's backend writes it (plus the URI, risk level and files).
fn format_match(i: usize, found: &Scored) -> String {
    let hit = &found.hit;
    let name = metadata(found, "name");
    let tags = metadata(found, "tags");
    // The URI MCP's Skills extension serves it at (skills/get, resources/read),
    // or why it is not served there.
    let uri = skill_md_uri(&hit.document.path, name).unwrap_or_else(|why| format!("none: {why}"));
    let mut out = format!(
        "\n## Match {}: {} (relevance: {:.2})\n**Path**: {}\n**URI**: {uri}\n**Tags**: {}\n",
        i + 1,
        name,
        found.relevance,
        hit.document.path,
        tags
    );
    let risk = metadata(found, "risk_level");
    let files = metadata(found, "files");
    out.push_str(&format!("**Risk level**: {risk}\n"));
    if !files.is_empty() {
        out.push_str(&format!("**Files**: {files}\n"));
    }
    out.push_str(&format!("\n### Full Skill Content:\n{}\n---\n", hit.chunk.text));
    out
}

fn run(query: &str, n: u64, max_tokens: u64) -> Result<String, String> {
    let skills = Filter {
        conversation_type: None,
        date_range: None,
        path_prefix: None,
        extensions: Vec::new(),
        metadata: vec![(MARKER.0.to_string(), MARKER.1.to_string())],
    };
    let Some(hits) = hybrid::search(&hybrid::Query::new(query), n as u32, &skills, MIN_COSINE)? else {
        return Ok(NO_MATCH.to_string());
    };
    // Skills still being embedded are found by their words alone: say so.
    let partial = semantic::coverage().map(|c| format!("\n{}\n", semantic::coverage_note(c)));
    if hits.is_empty() {
        return Ok(format!("{NO_MATCH}{}", partial.unwrap_or_default()));
    }
    let matches: Vec<String> = hits.iter().enumerate().map(|(i, h)| format_match(i, h)).collect();
    let fit = budget::fitting(matches.iter().map(String::as_str), max_tokens);
    let mut out = matches[..fit].join("\n");
    if fit < hits.len() {
        let rest: Vec<String> =
            hits[fit..].iter().map(|h| format!("{} ({})", metadata(h, "name"), h.hit.document.path)).collect();
        out.push_str(&format!(
            "\n{} more matching skills left out to stay under max_tokens {max_tokens}: {}. Read them at their paths, or \
             raise max_tokens.\n",
            rest.len(),
            rest.join(", ")
        ));
    }
    out.push_str(&partial.unwrap_or_default());
    Ok(out)
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "search_skills";
    const TITLE: &'static str = "Search skills";
    const DESCRIPTION: &'static str = "Search the skills library using natural language. Returns full skill \
        definitions for the most relevant matches: each skill's name, path, skill:// URI, tags, relevance and its \
        complete SKILL.md (never a fragment), found by what the skill is for and by the words it uses.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    type Request = Request;
    type Output = Text;

    fn check(args: Args) -> Result<Request, CallError> {
        check(args).map_err(cortext::invalid)
    }

    fn run(request: Request, _workspace: &WorkspaceInfo) -> Result<Text, CallError> {
        run(&request.query, request.n, request.max_tokens).map(Text).map_err(cortext::failed)
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_results_defaults_to_three_and_caps_at_five() {
        let v = |json: &str| ragbox_sdk::tool::args::parse::<Args>(json).and_then(check).map(|r| r.n);
        assert_eq!(v(r#"{"query":"x"}"#), Ok(3));
        assert_eq!(v(r#"{"query":"x","n_results":9}"#), Ok(5));
        assert!(v(r#"{"query":"x","n_results":0}"#).is_err());
        assert!(v(r#"{"query":" "}"#).is_err());
    }
}
