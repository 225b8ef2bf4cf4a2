//! Cortext's `get_decision_history`: past decisions on a topic, from the
//! workspace's decisions log (`.workspace/memory/decisions.md`) and from the
//! decision sections of conversations, each with its surrounding section.

use ragbox_sdk::conventions::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::document::kind_of;
use ragbox_sdk::indexing::layout::Layout;
use ragbox_sdk::indexing::walk;
use ragbox_sdk::protocol::{self, DecisionHistory};
use ragbox_sdk::search::keywords::{keyword_score, keywords};
use ragbox_sdk::tool::log;
use ragbox_sdk::tool::text::{looks_binary, truncate};
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError, host};
use schemars::JsonSchema;
use serde::Deserialize;

/// The decisions log Cortext keeps.
const DECISIONS_LOG: &str = ".workspace/memory/decisions.md";
/// Decisions returned at most; the result says when there were more.
const MAX_RESULTS: usize = 20;
const SECTION_BYTES: usize = 1500;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Topic or decision area to search for
    topic: String,
}

/// A Markdown section: its heading (empty before the first one) and text.
#[derive(Debug, PartialEq)]
struct Section<'a> {
    heading: &'a str,
    /// 1-based line of the heading (or of the text when there is none).
    line: usize,
    text: &'a str,
}

/// The heading level of a line (`## x` → 2), outside the question of code fences.
fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    ((1..=6).contains(&hashes) && line[hashes..].starts_with([' ', '\t'])).then_some(hashes)
}

/// Splits Markdown into sections. With `nested`, a section runs to the next
/// heading of the same or a higher level (keeping its sub-sections); without,
/// to the next heading of any level.
fn sections(text: &str, nested: bool) -> Vec<Section<'_>> {
    let mut headings = Vec::new(); // (byte offset, line, level, heading text)
    let (mut offset, mut in_fence) = (0, false);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end();
        if trimmed.trim_start().starts_with("```") || trimmed.trim_start().starts_with("~~~") {
            in_fence = !in_fence;
        } else if !in_fence && let Some(level) = heading_level(trimmed) {
            headings.push((offset, i + 1, level, trimmed[level..].trim()));
        }
        offset += line.len();
    }
    let mut out = Vec::new();
    let first = headings.first().map_or(text.len(), |h| h.0);
    if !text[..first].trim().is_empty() {
        out.push(Section { heading: "", line: 1, text: &text[..first] });
    }
    for (n, &(start, line, level, heading)) in headings.iter().enumerate() {
        let end = headings[n + 1..].iter().find(|h| !nested || h.2 <= level).map_or(text.len(), |h| h.0);
        out.push(Section { heading, line, text: &text[start..end] });
    }
    out
}

/// A decision that matches the topic.
struct Decision {
    source: &'static str,
    path: String,
    heading: String,
    line: usize,
    text: String,
    score: f64,
}

impl Decision {
    fn into_result(self) -> protocol::Decision {
        let conv = Layout::current().parse(&self.path);
        protocol::Decision {
            source: self.source.to_string(),
            conversation: conv.as_ref().map(|c| c.conversation.clone()),
            conversation_type: conv.as_ref().map(|c| c.kind.clone()),
            date: conv.map(|c| c.date),
            source_path: self.path,
            heading: self.heading,
            line: self.line,
            score: self.score,
            text: self.text,
        }
    }
}

fn matching<'a>(
    path: &str,
    source: &'static str,
    found: impl Iterator<Item = Section<'a>>,
    words: &[String],
    phrase: &str,
) -> Vec<Decision> {
    found
        .filter_map(|s| {
            let score = keyword_score(&s.text.to_lowercase(), words, phrase);
            (score > 0.0).then(|| Decision {
                source,
                path: path.to_string(),
                heading: s.heading.to_string(),
                line: s.line,
                text: truncate(s.text.trim(), SECTION_BYTES),
                score,
            })
        })
        .collect()
}

fn read_text(path: &str) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    (!looks_binary(&bytes)).then(|| String::from_utf8_lossy(&bytes).into_owned())
}

fn run(topic: &str) -> DecisionHistory {
    let words = keywords(topic);
    let phrase = topic.to_lowercase();
    let mut decisions = Vec::new();
    let log_text = read_text(DECISIONS_LOG);
    if let Some(text) = &log_text {
        decisions.extend(matching(DECISIONS_LOG, "decisions_log", sections(text, false).into_iter(), &words, &phrase));
    }
    let layout = Layout::current();
    for entry in walk::files(".", |_, e| log::debug(&format!("walk: {e}"))) {
        if entry.size > walk::DEFAULT_MAX_FILE_BYTES
            || layout.parse(&entry.path).is_none()
            || !matches!(kind_of(&entry.path), "markdown" | "text")
        {
            continue;
        }
        let Some(text) = read_text(&entry.path) else { continue };
        let decision_sections =
            sections(&text, true).into_iter().filter(|s| s.heading.to_lowercase().contains("decision"));
        decisions.extend(matching(&entry.path, "conversation", decision_sections, &words, &phrase));
        if host::cancelled() {
            break;
        }
    }
    decisions.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.path.cmp(&b.path)).then(a.line.cmp(&b.line)));
    let more = decisions.len() > MAX_RESULTS;
    decisions.truncate(MAX_RESULTS);
    let mut notes = Vec::new();
    if log_text.is_none() {
        notes.push(format!("No decisions log found. Create one at {DECISIONS_LOG}."));
    }
    if decisions.is_empty() {
        notes.push(format!("No decisions found related to: {topic}."));
    }
    DecisionHistory {
        success: true,
        topic: topic.to_string(),
        num_results: decisions.len(),
        more_results: more,
        decisions: decisions.into_iter().map(Decision::into_result).collect(),
        decisions_log: log_text.is_some().then(|| DECISIONS_LOG.to_string()),
        message: (!notes.is_empty()).then(|| notes.join(" ")),
    }
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "get_decision_history";
    const TITLE: &'static str = "Decision history";
    const DESCRIPTION: &'static str = "Retrieve past decisions on a topic: matching entries of the decisions log \
        (.workspace/memory/decisions.md) and the decision sections of conversations, each with its whole section as \
        context, best matches first.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    /// The topic, trimmed.
    type Request = String;
    type Output = DecisionHistory;

    fn check(args: Args) -> Result<String, CallError> {
        match args.topic.trim() {
            "" => Err(cortext::invalid("topic must not be empty")),
            topic => Ok(topic.to_string()),
        }
    }

    fn run(topic: String, _workspace: &WorkspaceInfo) -> Result<DecisionHistory, CallError> {
        Ok(run(&topic))
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "# Decisions\n\nIntro.\n\n## 2025-11-10: Database\nWe chose PostgreSQL over MySQL.\n\n\
        ```\n# not a heading\n```\n## 2025-11-12: Auth\nJWT with refresh tokens.\n";

    #[test]
    fn leaf_sections_split_at_every_heading_outside_fences() {
        let s = sections(LOG, false);
        let headings: Vec<&str> = s.iter().map(|s| s.heading).collect();
        assert_eq!(headings, ["Decisions", "2025-11-10: Database", "2025-11-12: Auth"]);
        assert!(s[1].text.contains("PostgreSQL") && s[1].text.contains("# not a heading"));
        assert!(!s[1].text.contains("JWT"));
        assert_eq!(s[2].line, 11);
    }

    #[test]
    fn nested_sections_keep_their_sub_sections() {
        let text = "intro\n## Decisions\n### One\nA\n### Two\nB\n## Next steps\nC\n";
        let s = sections(text, true);
        assert_eq!(s[0], Section { heading: "", line: 1, text: "intro\n" });
        assert_eq!(s[1].heading, "Decisions");
        assert_eq!(s[1].text, "## Decisions\n### One\nA\n### Two\nB\n");
        assert_eq!(heading_level("#hashtag"), None);
        assert_eq!(heading_level("### x"), Some(3));
    }
}
