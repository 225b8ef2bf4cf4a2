//! The RAG MCP Server's `search_by_question`: retrieves context for
//! a natural-language question, says what kind of question it is, pulls out
//! the sentences that bear on it (not whole chunks), offers definition
//! candidates for what/define questions, and a confidence from the scores.

use ragbox_sdk::conventions::rag_server::{self, Mode, round, source_ref};
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::protocol::{ContextChunk, ExtractedInformation, QuestionContext, QuestionSearchInfo};
use ragbox_sdk::search::hybrid::{self, Scored};
use ragbox_sdk::search::keywords::keywords;
use ragbox_sdk::search::semantic;
use ragbox_sdk::tool::args;
use ragbox_sdk::tool::args::optional_count;
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

const DEFAULT_CONTEXT: u64 = 5;
const MAX_CONTEXT: u64 = 20;
/// Sentences returned as relevant excerpts, at most.
const EXCERPTS: usize = 6;
const DEFINITIONS: usize = 3;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Question or information request
    // Optional here so that its absence gets its own error type.
    #[schemars(required)]
    question: Option<String>,
    /// Max context chunks to analyze
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 1, max = MAX_CONTEXT), extend("default" = DEFAULT_CONTEXT))]
    context_limit: Option<u64>,
    /// Filter by file types: extensions or MIME types
    sources: Option<Vec<String>>,
    #[schemars(extend("enum" = ["semantic", "hybrid"], "default" = "semantic"))]
    search_method: Option<String>,
}

struct Request {
    question: String,
    limit: u64,
    sources: Vec<String>,
    mode: Mode,
    filter: ragbox_sdk::corpus::Filter,
}

/// What a question asks for, from its opening words.
fn classify(question: &str) -> &'static str {
    let q = question.trim().to_lowercase();
    let words: Vec<&str> = q.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let first = words.iter().copied().find(|w| !matches!(*w, "so" | "and" | "but" | "please" | "ok" | "then"));
    let second = words.iter().skip_while(|w| Some(**w) != first).nth(1).copied();
    match (first, second) {
        (Some("when"), _) | (Some("what"), Some("year" | "date" | "time" | "day" | "month")) => "temporal",
        (Some("where"), _) => "location",
        (Some("who" | "whom" | "whose"), _) => "person_or_entity",
        (Some("why"), _) => "explanation_or_reason",
        (Some("explain"), _) => "explanation_or_reason",
        (Some("how"), Some("many" | "much" | "long" | "old" | "big" | "often")) => "definition_or_fact",
        (Some("how"), _) => "process_or_method",
        (Some("what" | "which" | "define" | "definition" | "meaning" | "describe"), _) => "definition_or_fact",
        (Some("is" | "are" | "does" | "do" | "can"), _) => "definition_or_fact",
        _ => "general_inquiry",
    }
}

/// The term a what/define question asks about: "What is machine learning?" → "machine learning".
fn defined_term(question: &str) -> Option<String> {
    let q = question.trim().trim_end_matches(['?', '.', '!']).trim().to_lowercase();
    let prefixes = [
        "what is the meaning of ",
        "what is meant by ",
        "what is an ",
        "what is a ",
        "what is the ",
        "what is ",
        "what are the ",
        "what are ",
        "what's a ",
        "what's an ",
        "what's ",
        "define ",
        "definition of ",
        "meaning of ",
    ];
    let rest = prefixes.iter().find_map(|p| q.strip_prefix(p))?;
    let term = rest.trim().trim_start_matches("a ").trim_start_matches("an ").trim();
    (!term.is_empty() && term.split_whitespace().count() <= 6).then(|| term.to_string())
}

/// The sentences of a chunk: split after `.`, `!` or `?` before a space, and at
/// line breaks; Markdown markers (headings, bullets, code ticks) trimmed.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches(['#', '-', '*', '>', ' ']).trim();
        let line = line.trim_matches('`').trim();
        if line.is_empty() {
            continue;
        }
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            let ends = matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(|c| c.is_ascii_whitespace());
            if ends && !(b == b'.' && abbreviation(&line[start..i])) {
                out.push(line[start..=i].trim().to_string());
                start = i + 1;
            }
        }
        if start < line.len() {
            out.push(line[start..].trim().to_string());
        }
    }
    out.retain(|s| s.chars().filter(|c| c.is_alphanumeric()).count() >= 3);
    out
}

/// True when `before` (the text up to a period) ends in an abbreviation such
/// as "e.g", "etc" or "Dr", whose period does not end a sentence.
fn abbreviation(before: &str) -> bool {
    let word = before.rsplit(char::is_whitespace).next().unwrap_or("").to_lowercase();
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    word.contains('.')
        || (letters == 1 && word.len() == 1)
        || ["etc", "vs", "approx", "fig", "dr", "mr", "mrs", "ms", "al", "no"].contains(&word.as_str())
}

/// Words that mark a sentence as answering a kind of question.
fn cue_bonus(kind: &str, sentence: &str) -> f64 {
    let s = sentence.to_lowercase();
    let has = |cues: &[&str]| cues.iter().any(|c| s.contains(c));
    let hit = match kind {
        "temporal" => {
            s.split(|c: char| !c.is_ascii_digit()).any(|d| d.len() == 4 && (d.starts_with("19") || d.starts_with("20")))
                || has(&[
                    "january",
                    "february",
                    "march",
                    "april",
                    "may ",
                    "june",
                    "july",
                    "august",
                    "september",
                    "october",
                    "november",
                    "december",
                    "century",
                    "year",
                    "ago",
                ])
        }
        "location" => has(&[" in ", " at ", " near ", "located", "region", "country", "city"]),
        "person_or_entity" => {
            sentence.split_whitespace().skip(1).any(|w| w.chars().next().is_some_and(char::is_uppercase))
        }
        "explanation_or_reason" => {
            has(&["because", "since", "due to", "so that", "therefore", "reason", "causes", "leads to"])
        }
        "process_or_method" => has(&["step", "first", "then", "by ", "using", "use ", "run ", "to "]),
        "definition_or_fact" => has(&[" is ", " are ", " refers to", " means", " defined"]),
        _ => false,
    };
    if hit { 0.15 } else { 0.0 }
}

/// The words of `text` for matching: lowercased, with the brackets and
/// backticks that mark up commands (`E[x]tract`, `` `tar` ``) removed.
fn words_of(text: &str) -> Vec<String> {
    let plain: String = text.chars().filter(|c| !matches!(c, '[' | ']' | '{' | '}' | '`')).collect();
    plain.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// True when `word` is `keyword` or a simple inflection of it (extract → extracts, extracting).
fn word_match(word: &str, keyword: &str) -> bool {
    word.strip_prefix(keyword)
        .is_some_and(|rest| matches!(rest, "" | "s" | "es" | "ed" | "d" | "ing" | "er" | "ers" | "ion" | "ions"))
}

/// How many of `keywords` occur in `sentence`.
fn matched(sentence: &str, keywords: &[String]) -> usize {
    let words = words_of(sentence);
    keywords.iter().filter(|k| words.iter().any(|w| word_match(w, k))).count()
}

/// A sentence and why it was picked.
struct Excerpt {
    text: String,
    score: f64,
}

/// The sentences that bear on the question, best first.
fn extract(found: &[Scored], words: &[String], kind: &str) -> Vec<Excerpt> {
    let mut picked: Vec<Excerpt> = Vec::new();
    for s in found {
        for sentence in sentences(&s.hit.chunk.text) {
            let hits = matched(&sentence, words);
            if hits == 0 {
                continue;
            }
            let coverage = hits as f64 / words.len().max(1) as f64;
            let score = 0.6 * coverage + 0.4 * s.relevance + cue_bonus(kind, &sentence);
            if !picked.iter().any(|p| p.text == sentence) {
                picked.push(Excerpt { text: sentence, score });
            }
        }
    }
    picked.sort_by(|a, b| b.score.total_cmp(&a.score));
    picked.truncate(EXCERPTS);
    picked
}

/// Sentences that define `term`: "<term> is …", "<term> refers to …", ….
fn definitions(found: &[Scored], term: &str) -> Vec<String> {
    let mut out = Vec::new();
    for s in found {
        for sentence in sentences(&s.hit.chunk.text) {
            let lower = sentence.to_lowercase();
            let Some(at) = lower.find(term) else { continue };
            let after = lower[at + term.len()..].trim_start();
            let after = after.strip_prefix(['s', ')', ',']).map_or(after, str::trim_start);
            let defines = ["is ", "are ", "was ", "were ", "refers to", "means", "describes", "is defined", "("]
                .iter()
                .any(|v| after.starts_with(v));
            if defines && at < 40 && !out.contains(&sentence) {
                out.push(sentence);
            }
        }
    }
    out.truncate(DEFINITIONS);
    out
}

/// 0-100 from the retrieval scores: the best chunk's relevance, the mean of the
/// top three, and how much of the question the extracted sentences cover.
fn confidence(found: &[Scored], excerpts: &[Excerpt], words: &[String]) -> u64 {
    let Some(best) = found.first() else { return 0 };
    let top3 = found.iter().take(3).map(|s| s.relevance).sum::<f64>() / found.len().min(3) as f64;
    let text: String = excerpts.iter().map(|e| e.text.as_str()).collect::<Vec<_>>().join(" ");
    let covered = matched(&text, words) as f64 / words.len().max(1) as f64;
    let value = 0.5 * best.relevance + 0.2 * top3 + 0.3 * covered;
    (value.clamp(0.0, 1.0) * 100.0).round() as u64
}

fn run(r: &Request) -> Result<QuestionContext, String> {
    let found = rag_server::search(&hybrid::Query::new(&r.question), r.mode, r.limit as u32, &r.filter)?;
    let kind = classify(&r.question);
    let words = keywords(&r.question);
    let excerpts = extract(&found, &words, kind);
    let candidates = match (kind, defined_term(&r.question)) {
        ("definition_or_fact", Some(term)) => definitions(&found, &term),
        _ => Vec::new(),
    };
    let mut lines = ragbox_sdk::search::lines::Lines::default();
    let chunks: Vec<ContextChunk> = found
        .iter()
        .enumerate()
        .map(|(i, s)| ContextChunk {
            rank: i + 1,
            content: s.hit.chunk.text.clone(),
            relevance_score: round(s.relevance),
            source: source_ref(&s.hit, &mut lines),
        })
        .collect();
    let raw_context = found.iter().map(|s| s.hit.chunk.text.trim()).collect::<Vec<_>>().join("\n\n---\n\n");
    let sources_searched = if r.sources.is_empty() { json!("all") } else { json!(r.sources) };
    Ok(QuestionContext {
        question: r.question.clone(),
        confidence: confidence(&found, &excerpts, &words),
        extracted_information: ExtractedInformation {
            kind: kind.to_string(),
            relevant_excerpts: excerpts.into_iter().map(|e| e.text).collect(),
            definition_candidates: candidates,
        },
        context_chunks: chunks,
        search_info: QuestionSearchInfo {
            total_context_chunks: found.len(),
            search_method: r.mode.name().to_string(),
            sources_searched,
            context_limit: r.limit,
            coverage: semantic::coverage_report(),
        },
        context_found: !found.is_empty(),
        raw_context,
    })
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "search_by_question";
    const TITLE: &'static str = "Answer context for a question";
    const DESCRIPTION: &'static str = "Search for information using a natural language question: retrieves the most \
        relevant passages, classifies the question (definition, process, time, place, person, reason, general), \
        extracts the sentences that bear on it, offers definition candidates for what/define questions, and gives a \
        confidence (0-100) from the retrieval scores. Compose the answer from the excerpts.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::RagServer;
    type Args = Args;
    type Request = Request;
    type Output = QuestionContext;

    fn check(a: Args) -> Result<Request, CallError> {
        let bad = rag_server::bad_parameter;
        let question = rag_server::required(
            a.question,
            "InvalidQuestion",
            "question",
            "Ask a question in plain words, e.g. \"How do I extract a tar archive?\"",
        )?
        .trim()
        .to_string();
        let limit = args::count_in("context_limit", a.context_limit, DEFAULT_CONTEXT, 1..=MAX_CONTEXT).map_err(bad)?;
        let mode = match a.search_method.as_deref().unwrap_or("semantic") {
            "semantic" => Mode::Semantic,
            "hybrid" => Mode::Hybrid,
            other => return Err(bad(format!("unknown search_method {other:?}: use \"semantic\" or \"hybrid\""))),
        };
        let sources = a.sources.unwrap_or_default();
        let filter = rag_server::filter(&sources, &Default::default()).map_err(bad)?;
        Ok(Request { question, limit, sources, mode, filter })
    }

    fn run(request: Request, _workspace: &WorkspaceInfo) -> Result<QuestionContext, CallError> {
        run(&request).map_err(|e| rag_server::failed("QuestionSearchFailed", e, rag_server::CHECK_INDEXED))
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_classified_by_their_opening() {
        for (q, kind) in [
            ("What is machine learning?", "definition_or_fact"),
            ("define entropy", "definition_or_fact"),
            ("How many users signed up?", "definition_or_fact"),
            ("How do I extract a tar archive?", "process_or_method"),
            ("When was the release?", "temporal"),
            ("What year did it ship?", "temporal"),
            ("Where is the config file?", "location"),
            ("Who maintains the parser?", "person_or_entity"),
            ("Why does the build fail?", "explanation_or_reason"),
            ("So why is it slow?", "explanation_or_reason"),
            ("tar flags for gzip", "general_inquiry"),
        ] {
            assert_eq!(classify(q), kind, "{q}");
        }
    }

    #[test]
    fn the_term_of_a_definition_question() {
        assert_eq!(defined_term("What is machine learning?").as_deref(), Some("machine learning"));
        assert_eq!(defined_term("what is a tarball").as_deref(), Some("tarball"));
        assert_eq!(defined_term("Define: homocysteine").as_deref(), None);
        assert_eq!(defined_term("define homocysteine").as_deref(), Some("homocysteine"));
        assert_eq!(defined_term("How does it work?"), None);
    }

    #[test]
    fn sentences_split_on_ends_and_lines() {
        let s = sentences("# Tar\n\n- Create an archive: `tar cf a.tar dir`. Then list it!\nDone? Yes.\n");
        assert_eq!(s, ["Tar", "Create an archive: `tar cf a.tar dir`.", "Then list it!", "Done?", "Yes."]);
        assert_eq!(sentences("e.g. version 1.2 is out"), ["e.g. version 1.2 is out"]);
    }

    #[test]
    fn words_match_through_markup_and_inflection() {
        let kw = keywords("How do I extract a tar archive?");
        assert_eq!(kw, ["extract", "tar", "archive"]);
        assert_eq!(matched("E[x]tract a (compressed) archive into the target directory", &kw), 2);
        assert_eq!(matched("`tar xf source.tar` extracts archives", &kw), 3);
    }

    #[test]
    fn validates_arguments() {
        let request = tool::decode::<Tool>;
        let err = |a: &str| tool::refusal::<Tool>(a).unwrap_or_else(|| panic!("{a} should be invalid"));
        assert_eq!(err("{}")["error"], "InvalidQuestion");
        assert_eq!(err(r#"{"question":"x","context_limit":21}"#)["error"], "InvalidParameter");
        assert_eq!(err(r#"{"question":"x","context_limit":0}"#)["error"], "InvalidParameter");
        assert_eq!(err(r#"{"question":"x","search_method":"fulltext"}"#)["error"], "InvalidParameter");
        let r = request(r#"{"question":"x"}"#).ok().unwrap();
        assert_eq!((r.limit, r.mode), (5, Mode::Semantic));
    }
}
