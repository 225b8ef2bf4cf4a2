//! Cortext's `get_decision_history`: past decisions on a topic, from the
//! workspace's decisions log (`.workspace/memory/decisions.md`) and from the
//! decision sections of conversations, each with its surrounding section.

use ragbox_sdk::cortext::{self, Layout};
use ragbox_sdk::document::kind_of;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::text::{keyword_score, keywords, looks_binary, truncate};
use ragbox_sdk::tool::{self, Description, ToolSet};
use ragbox_sdk::{CallError, host, log, walk};
use serde::Deserialize;
use serde_json::{Value, json};

/// The decisions log Cortext keeps.
const DECISIONS_LOG: &str = ".workspace/memory/decisions.md";
/// Decisions returned at most; the result says when there were more.
const MAX_RESULTS: usize = 20;
const SECTION_BYTES: usize = 1500;

#[derive(Debug, Deserialize)]
struct Args {
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
    fn to_json(&self) -> Value {
        let conv = Layout::current().parse(&self.path);
        json!({
            "source": self.source,
            "source_path": self.path,
            "conversation": conv.as_ref().map(|c| c.conversation.clone()),
            "type": conv.as_ref().map(|c| c.kind.clone()),
            "date": conv.map(|c| c.date),
            "heading": self.heading,
            "line": self.line,
            "score": self.score,
            "text": self.text,
        })
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

fn run(topic: &str) -> Value {
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
    let mut out = json!({
        "success": true,
        "topic": topic,
        "num_results": decisions.len(),
        "more_results": more,
        "decisions": decisions.iter().map(Decision::to_json).collect::<Vec<_>>(),
        "decisions_log": log_text.is_some().then_some(DECISIONS_LOG),
    });
    let mut notes = Vec::new();
    if log_text.is_none() {
        notes.push(format!("No decisions log found. Create one at {DECISIONS_LOG}."));
    }
    if decisions.is_empty() {
        notes.push(format!("No decisions found related to: {topic}."));
    }
    if !notes.is_empty() {
        out["message"] = notes.join(" ").into();
    }
    out
}

fn parse(arguments: &str) -> Result<Args, CallError> {
    let a: Args = cortext::arguments(arguments)?;
    if a.topic.trim().is_empty() {
        return Err(cortext::invalid("topic must not be empty"));
    }
    Ok(a)
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    type Request = Args;
    const SET: ToolSet = ToolSet::Cortext;

    fn describe() -> Description {
        Description {
            name: "get_decision_history",
            title: "Decision history",
            description: "Retrieve past decisions on a topic: matching entries of the decisions log \
                (.workspace/memory/decisions.md) and the decision sections of conversations, each with its \
                whole section as context, best matches first.",
            input: json!({
                "type": "object",
                "properties": {
                    "topic": { "type": "string", "description": "Topic or decision area to search for" },
                },
                "required": ["topic"]
            }),
            output: Some(json!({
                "type": "object",
                "properties": {
                    "success": { "type": "boolean" },
                    "topic": { "type": "string" },
                    "num_results": { "type": "integer" },
                    "more_results": { "type": "boolean" },
                    "decisions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "source": { "type": "string", "enum": ["decisions_log", "conversation"] },
                                "source_path": { "type": "string" },
                                "conversation": { "type": ["string", "null"] },
                                "type": { "type": ["string", "null"] },
                                "date": { "type": ["string", "null"] },
                                "heading": { "type": "string" },
                                "line": { "type": "integer" },
                                "score": { "type": "number", "description": "Keyword hits of the topic in the section" },
                                "text": { "type": "string", "description": "The whole section (cut at 1,500 bytes)" }
                            },
                            "required": ["source", "source_path", "heading", "line", "text"]
                        }
                    },
                    "decisions_log": { "type": ["string", "null"] },
                    "message": { "type": "string" }
                },
                "required": ["success", "topic", "num_results", "decisions"]
            })),
            annotations: tool::READS,
        }
    }

    fn decode(arguments: &str) -> Result<Self::Request, CallError> {
        parse(arguments)
    }

    fn run(request: Self::Request, _workspace: &WorkspaceInfo) -> Result<String, CallError> {
        let a = request;
        Ok(run(a.topic.trim()).to_string())
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
