//! Cortext's `search_workspace`: keyword or regex search over the workspace's
//! text files, with conversation type and date filters from Cortext paths.

use ragbox_sdk::conventions::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::layout::{ConversationPath, DateRange, Layout};
use ragbox_sdk::indexing::walk;
use ragbox_sdk::protocol::{KeywordResults, LineMatch};
use ragbox_sdk::tool::args::{self, optional_count};
use ragbox_sdk::tool::text::{looks_binary, truncate};
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError, host};
use schemars::JsonSchema;
use serde::Deserialize;

const DEFAULT_LIMIT: u64 = 10;
const MAX_LIMIT: u64 = 1000;
/// Longest line text returned per match; agents get the path and line to read more.
const MAX_TEXT_BYTES: usize = 400;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Text to find (case-insensitive), or a regular expression when regex is true
    query: String,
    /// Treat query as a regular expression (Rust regex syntax)
    #[serde(default)]
    #[schemars(extend("default" = false))]
    regex: bool,
    /// Conversation type to search (brainstorm, debug, learn, meeting, plan, review, …) or "all"
    #[serde(rename = "type")]
    #[schemars(extend("default" = "all"))]
    kind: Option<String>,
    /// Only conversations from this month or day: YYYY-MM or YYYY-MM-DD
    date_range: Option<String>,
    /// Maximum number of matching lines
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 1, max = MAX_LIMIT), extend("type" = "number", "default" = DEFAULT_LIMIT))]
    limit: Option<u64>,
}

/// A validated request.
#[derive(Debug)]
struct Search {
    pattern: regex::Regex,
    query: String,
    kind: Option<String>,
    date_range: Option<DateRange>,
    limit: usize,
}

impl Search {
    fn from_args(a: Args) -> Result<Self, String> {
        if a.query.trim().is_empty() {
            return Err("query must not be empty".into());
        }
        let source = if a.regex { a.query.clone() } else { regex::escape(&a.query) };
        let pattern = regex::RegexBuilder::new(&source)
            .case_insensitive(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("invalid regex {:?}: {e}", a.query))?;
        let kind = a.kind.filter(|k| !k.is_empty() && !k.eq_ignore_ascii_case("all"));
        let date_range = a.date_range.filter(|d| !d.is_empty()).map(|d| DateRange::parse(&d)).transpose()?;
        let limit = args::count_in("limit", a.limit, DEFAULT_LIMIT, 1..=MAX_LIMIT)?;
        Ok(Self { pattern, query: a.query, kind, date_range, limit: limit as usize })
    }

    /// True when a file at `path` passes the type and date filters.
    fn wants(&self, conv: Option<&ConversationPath>) -> bool {
        if self.kind.is_none() && self.date_range.is_none() {
            return true;
        }
        let Some(conv) = conv else { return false };
        self.kind.as_ref().is_none_or(|k| conv.kind.eq_ignore_ascii_case(k))
            && self.date_range.as_ref().is_none_or(|d| d.contains(&conv.date))
    }
}

/// Runs the search over the files the guest can see.
fn search(s: &Search) -> KeywordResults {
    let mut results = Vec::new();
    let (mut searched, mut skipped, mut more) = (0u64, 0u64, false);
    let files = walk::files(".", |_, e| ragbox_sdk::tool::log::debug(&format!("walk: {e}")));
    'files: for entry in &files {
        let conv = Layout::current().parse(&entry.path);
        if !s.wants(conv.as_ref()) {
            continue;
        }
        if entry.size > walk::DEFAULT_MAX_FILE_BYTES {
            skipped += 1;
            continue;
        }
        let Ok(bytes) = std::fs::read(&entry.path) else {
            skipped += 1;
            continue;
        };
        if looks_binary(&bytes) {
            skipped += 1;
            continue;
        }
        searched += 1;
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in text.lines().enumerate() {
            if !s.pattern.is_match(line) {
                continue;
            }
            if results.len() == s.limit {
                more = true;
                break 'files;
            }
            let file = entry.path.rsplit('/').next().unwrap_or(&entry.path);
            results.push(LineMatch {
                conversation: conv.as_ref().map(|c| c.conversation.clone()),
                conversation_type: conv.as_ref().map(|c| c.kind.clone()),
                date: conv.as_ref().map(|c| c.date.clone()),
                file: file.to_string(),
                line: i as u64 + 1,
                text: truncate(line.trim(), MAX_TEXT_BYTES).to_string(),
                path: entry.path.clone(),
            });
        }
        if host::cancelled() {
            break;
        }
    }
    KeywordResults {
        success: true,
        query: s.query.clone(),
        num_results: results.len(),
        more_results: more,
        files_searched: searched,
        files_skipped: skipped,
        results,
    }
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "search_workspace";
    const TITLE: &'static str = "Search workspace (keyword)";
    const DESCRIPTION: &'static str = "Keyword search across the workspace's text files (notes, conversations, docs, \
        code). Finds lines containing the query (case-insensitive), or matching it as a regular expression when regex \
        is true. Filter by Cortext conversation type and date. Respects .gitignore.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    type Request = Search;
    type Output = KeywordResults;

    fn check(args: Args) -> Result<Search, CallError> {
        Search::from_args(args).map_err(cortext::invalid)
    }

    fn run(request: Search, _workspace: &WorkspaceInfo) -> Result<KeywordResults, CallError> {
        Ok(search(&request))
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: &str) -> Result<Search, String> {
        Search::from_args(args::parse(json)?)
    }

    #[test]
    fn validates_arguments() {
        assert!(req(r#"{"query":"  "}"#).unwrap_err().contains("must not be empty"));
        assert!(req(r#"{"query":"x","limit":0}"#).unwrap_err().contains("between 1 and"));
        assert!(req(r#"{"query":"(","regex":true}"#).unwrap_err().contains("invalid regex"));
        assert!(req(r#"{"query":"x","date_range":"Nov"}"#).unwrap_err().contains("YYYY-MM"));
        assert!(req(r#"{"query":"x","limit":"ten"}"#).unwrap_err().contains("'limit'"));
    }

    #[test]
    fn literal_queries_are_escaped_and_case_insensitive() {
        let s = req(r#"{"query":"a.b(c"}"#).unwrap();
        assert!(s.pattern.is_match("see A.B(C here"));
        assert!(!s.pattern.is_match("axb(c"));
    }

    #[test]
    fn filters_by_type_and_date() {
        let s = req(r#"{"query":"x","type":"debug","date_range":"2025-11"}"#).unwrap();
        let yes = Layout::defaults().parse("debug/2025-11-03/001-a/c.md");
        let wrong_type = Layout::defaults().parse("plan/2025-11-03/001-a/c.md");
        let wrong_date = Layout::defaults().parse("debug/2025-10-03/001-a/c.md");
        assert!(s.wants(yes.as_ref()));
        assert!(!s.wants(wrong_type.as_ref()));
        assert!(!s.wants(wrong_date.as_ref()));
        assert!(!s.wants(None));
        let all = req(r#"{"query":"x","type":"all"}"#).unwrap();
        assert!(all.wants(None));
    }
}
