//! Cortext's `get_context`: the conversations most relevant to a topic, with
//! the passages that make them relevant. Uses the index (meaning and BM25
//! fused, as hybrid search does) when there is one, keyword search over the
//! files when there is not.

use ragbox_sdk::conventions::cortext;
use ragbox_sdk::conventions::rag_server::round;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::layout::Layout;
use ragbox_sdk::indexing::walk;
use ragbox_sdk::protocol::{Context, RelevantConversation};
use ragbox_sdk::search::hybrid;
use ragbox_sdk::search::keywords::{keyword_score, keywords};
use ragbox_sdk::search::semantic;
use ragbox_sdk::tool::args::{self, optional_count};
use ragbox_sdk::tool::log;
use ragbox_sdk::tool::text::{looks_binary, truncate};
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError, host};
use schemars::JsonSchema;
use serde::Deserialize;

const DEFAULT_RESULTS: u64 = 5;
const MAX_RESULTS: u64 = 50;
/// Passages shown per conversation.
const EXCERPTS: usize = 2;
const EXCERPT_BYTES: usize = 600;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Topic to search for
    topic: String,
    /// Maximum number of relevant conversations to return
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 1, max = MAX_RESULTS), extend("type" = "number", "default" = DEFAULT_RESULTS))]
    max_results: Option<u64>,
}

/// A checked call: the topic, and how many conversations.
#[derive(Debug)]
struct Request {
    topic: String,
    n: usize,
}

fn check(a: Args) -> Result<Request, String> {
    if a.topic.trim().is_empty() {
        return Err("topic must not be empty".into());
    }
    let n = args::count_in("max_results", a.max_results, DEFAULT_RESULTS, 1..=MAX_RESULTS)? as usize;
    Ok(Request { topic: a.topic.trim().to_string(), n })
}

/// One conversation (or a file outside conversations) and why it is relevant.
#[derive(Debug)]
struct Found {
    /// Conversation folder, or the file's path outside conversations.
    key: String,
    conversation: String,
    kind: Option<String>,
    date: Option<String>,
    source_path: String,
    score: f64,
    excerpts: Vec<String>,
}

impl Found {
    fn new(path: &str, score: f64) -> Self {
        let conv = Layout::current().parse(path);
        let name = path.rsplit('/').next().unwrap_or(path).to_string();
        Self {
            key: conv.as_ref().map_or_else(|| path.to_string(), |c| c.folder.clone()),
            conversation: conv.as_ref().map_or(name, |c| c.conversation.clone()),
            kind: conv.as_ref().map(|c| c.kind.clone()),
            date: conv.map(|c| c.date),
            source_path: path.to_string(),
            score,
            excerpts: Vec::new(),
        }
    }

    fn into_result(self) -> RelevantConversation {
        RelevantConversation {
            conversation: self.conversation,
            conversation_type: self.kind,
            date: self.date,
            path: self.key,
            source_path: self.source_path,
            score: self.score,
            excerpts: self.excerpts,
        }
    }
}

/// Adds `found` to `groups` or, when its conversation is there already, its excerpt.
fn merge(groups: &mut Vec<Found>, found: Found) {
    match groups.iter_mut().find(|g| g.key == found.key) {
        Some(g) => {
            if g.excerpts.len() < EXCERPTS {
                g.excerpts.extend(found.excerpts);
            }
        }
        None => groups.push(found),
    }
}

/// From the index: the best chunks by meaning and keywords, grouped by
/// conversation, best first; `None` while nothing is embedded.
fn indexed_context(topic: &str, n: usize) -> Result<Option<Vec<Found>>, String> {
    let k = (n * 8).clamp(20, 400) as u32;
    let all = semantic::filter(None, None);
    let Some(hits) = hybrid::search(&hybrid::Query::new(topic), k, &all, f32::NEG_INFINITY)? else { return Ok(None) };
    let mut groups = Vec::new();
    for scored in hits {
        let hit = scored.hit;
        let mut found = Found::new(&hit.document.path, round(scored.relevance));
        found.excerpts.push(truncate(hit.chunk.text.trim(), EXCERPT_BYTES));
        merge(&mut groups, found);
    }
    groups.truncate(n);
    Ok(Some(groups))
}

/// By keywords: files ranked by how often the topic's words occur.
fn keyword_context(topic: &str, n: usize) -> Vec<Found> {
    let words = keywords(topic);
    let phrase = topic.trim().to_lowercase();
    let mut scored = Vec::new();
    for entry in walk::files(".", |_, e| log::debug(&format!("walk: {e}"))) {
        if entry.size > walk::DEFAULT_MAX_FILE_BYTES {
            continue;
        }
        let Ok(bytes) = std::fs::read(&entry.path) else { continue };
        if looks_binary(&bytes) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let lower = text.to_lowercase();
        let s = keyword_score(&lower, &words, &phrase);
        if s == 0.0 {
            continue;
        }
        let mut found = Found::new(&entry.path, s);
        found.excerpts = text
            .lines()
            .filter(|l| {
                let l = l.to_lowercase();
                words.iter().any(|w| l.contains(w.as_str()))
            })
            .take(EXCERPTS)
            .map(|l| truncate(l.trim(), EXCERPT_BYTES))
            .collect();
        scored.push(found);
        if host::cancelled() {
            break;
        }
    }
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.source_path.cmp(&b.source_path)));
    let mut groups = Vec::new();
    for found in scored {
        merge(&mut groups, found);
    }
    groups.truncate(n);
    groups
}

fn run(topic: &str, n: usize) -> Context {
    let (method, found, message) = match indexed_context(topic, n) {
        // Hybrid over a store still being embedded: say how much of it was searched by meaning.
        Ok(Some(found)) => ("hybrid", found, semantic::coverage().map(semantic::coverage_note)),
        Ok(None) => {
            let note =
                "No semantic index yet, so these are keyword matches: run embed_workspace to find context by meaning.";
            ("keyword", keyword_context(topic, n), Some(note.to_string()))
        }
        Err(e) => {
            log::warn(&format!("index search failed, falling back to keywords: {e}"));
            let note = format!("Searching the index failed ({e}), so these are keyword matches over the files.");
            ("keyword", keyword_context(topic, n), Some(note))
        }
    };
    let message = if found.is_empty() {
        Some(format!("No context found for: {topic}. Try other words, or search_workspace."))
    } else {
        message
    };
    Context {
        success: true,
        topic: topic.to_string(),
        method: method.to_string(),
        num_results: found.len(),
        results: found.into_iter().map(Found::into_result).collect(),
        message,
    }
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "get_context";
    const TITLE: &'static str = "Context for a topic";
    const DESCRIPTION: &'static str = "Get relevant context for a topic from past conversations: the most relevant \
        conversations (and other documents), each with the passages that make it relevant. Searches by meaning and \
        keywords together when the workspace is embedded, by keywords alone when it is not (the result says which).";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    type Request = Request;
    type Output = Context;

    fn check(args: Args) -> Result<Request, CallError> {
        check(args).map_err(cortext::invalid)
    }

    fn run(request: Request, _workspace: &WorkspaceInfo) -> Result<Context, CallError> {
        Ok(run(&request.topic, request.n))
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_arguments() {
        let v = |json: &str| args::parse::<Args>(json).and_then(check);
        assert!(v(r#"{"topic":""}"#).unwrap_err().contains("must not be empty"));
        assert!(v(r#"{"topic":"x","max_results":51}"#).unwrap_err().contains("between 1 and 50"));
        assert_eq!(v(r#"{"topic":" x "}"#).unwrap().n, 5);
    }
}
