//! `ragbox search` and `ragbox similar`: the search tools from the command
//! line, printed for people (or as the tools' JSON with `--json`).

use super::calls::{call_json, call_or_print};
use super::documents;
use crate::corpus::Options;
use crate::setup::{StoreArgs, open};
use ragbox_protocol::{
    IndexedSource, KeywordResults, SearchResult, SearchResults, SemanticResults, SimilarDocuments, SourceList,
};
use serde_json::json;
use std::io::IsTerminal;
use std::path::Path;

/// Longest passage printed per result.
const SHOWN_TEXT: usize = 220;

/// Results `ragbox search` shows unless `-n` says otherwise, in every mode.
pub const DEFAULT_RESULTS: u64 = 10;

/// How `ragbox search` searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Lines containing the words (search_workspace), and the index's
    /// documents that are not text files (search, fulltext).
    Keyword,
    /// By meaning (search_semantic).
    Semantic,
    /// Meaning and BM25 fused (search, hybrid).
    Hybrid,
    /// BM25 (search, fulltext).
    Fulltext,
}

/// What `ragbox search` was asked.
#[derive(Debug)]
pub struct SearchArgs<'a> {
    /// The query.
    pub query: &'a str,
    /// How to search.
    pub mode: Mode,
    /// File types (extensions or MIME types), for the index modes.
    pub sources: &'a [String],
    /// Conversation type filter.
    pub kind: Option<&'a str>,
    /// Date filter, YYYY-MM or YYYY-MM-DD.
    pub date: Option<&'a str>,
    /// Results wanted.
    pub limit: u64,
    /// Print the tool's JSON.
    pub json: bool,
}

/// One result as printed.
pub(super) struct Row {
    pub(super) name: String,
    pub(super) measure: String,
    pub(super) place: String,
    pub(super) text: String,
    pub(super) path: String,
}

/// The `search` tool's arguments (every mode, file types and metadata filters).
pub(super) fn index_search(a: &SearchArgs, mode: &str, sources: &[String], limit: u64) -> serde_json::Value {
    let mut args = json!({ "query": a.query, "search_type": mode, "limit": limit });
    if !sources.is_empty() {
        args["sources"] = json!(sources);
    }
    let mut filters = serde_json::Map::new();
    if let Some(kind) = a.kind {
        filters.insert("type".into(), kind.into());
    }
    if let Some(date) = a.date {
        filters.insert("date".into(), date.into());
    }
    if !filters.is_empty() {
        args["metadata_filters"] = filters.into();
    }
    args
}

/// The tool and arguments for a search.
fn tool_call(a: &SearchArgs) -> anyhow::Result<(&'static str, serde_json::Value)> {
    let by_index = a.mode != Mode::Keyword && (a.mode != Mode::Semantic || !a.sources.is_empty());
    if by_index {
        let mode = match a.mode {
            Mode::Hybrid => "hybrid",
            Mode::Fulltext => "fulltext",
            _ => "semantic",
        };
        return Ok(("search", index_search(a, mode, a.sources, a.limit)));
    }
    if !a.sources.is_empty() {
        anyhow::bail!("--source filters the index: use it with --semantic, --hybrid or --fulltext");
    }
    let (tool, limit_key, type_key) = match a.mode {
        Mode::Semantic => ("search_semantic", "n_results", "conversation_type"),
        _ => ("search_workspace", "limit", "type"),
    };
    let mut args = json!({ "query": a.query, limit_key: a.limit });
    if let Some(kind) = a.kind {
        args[type_key] = kind.into();
    }
    if let Some(date) = a.date {
        args["date_range"] = date.into();
    }
    Ok((tool, args))
}

/// What a search answered, as the tool that answered it typed it.
enum Found {
    Search(SearchResults),
    Semantic(SemanticResults),
    Keyword(KeywordResults),
}

impl Found {
    fn read(tool: &str, out: &serde_json::Value) -> anyhow::Result<Self> {
        let out = out.clone();
        Ok(match tool {
            "search" => Self::Search(serde_json::from_value(out)?),
            "search_semantic" => Self::Semantic(serde_json::from_value(out)?),
            _ => Self::Keyword(serde_json::from_value(out)?),
        })
    }

    fn rows(&self) -> Vec<Row> {
        match self {
            Self::Search(found) => index_rows(&found.results, |r| format!("{:.1}%", r.relevance_score * 100.0)),
            Self::Semantic(found) => found
                .results
                .iter()
                .map(|r| Row {
                    name: r.conversation.clone(),
                    measure: format!("{:.1}%", r.score * 100.0),
                    place: place(r.conversation_type.as_ref(), r.date.as_ref()),
                    text: r.text.clone(),
                    path: r.source_path.clone(),
                })
                .collect(),
            Self::Keyword(found) => found
                .results
                .iter()
                .map(|r| Row {
                    name: r.conversation.clone().unwrap_or_else(|| r.file.clone()),
                    measure: format!("line {}", r.line),
                    place: place(r.conversation_type.as_ref(), r.date.as_ref()),
                    text: r.text.clone(),
                    path: r.path.clone(),
                })
                .collect(),
        }
    }

    /// What the tool had to say besides its results (nothing embedded yet, say).
    fn message(&self) -> Option<&str> {
        match self {
            Self::Semantic(found) => found.message.as_deref(),
            _ => None,
        }
    }

    fn more_results(&self) -> bool {
        match self {
            Self::Semantic(found) => found.more_results,
            Self::Keyword(found) => found.more_results,
            Self::Search(_) => false,
        }
    }
}

/// The rows of a `search` answer, each measured by `measure`.
pub(super) fn index_rows(results: &[SearchResult], measure: impl Fn(&SearchResult) -> String) -> Vec<Row> {
    results
        .iter()
        .map(|r| Row {
            name: r.metadata.get("conversation").unwrap_or(&r.source.filename).clone(),
            measure: measure(r),
            place: place(r.metadata.get("type"), r.metadata.get("date")),
            text: r.content.clone(),
            path: r.source.filepath.clone(),
        })
        .collect()
}

/// "plan · 2025-11-20" for a conversation's type and date.
fn place(kind: Option<&String>, date: Option<&String>) -> String {
    [kind, date].into_iter().flatten().map(String::as_str).collect::<Vec<_>>().join(" · ")
}

/// The most results `-n` may ask of `mode` (the tools' own bounds).
pub(super) fn max_results(mode: Mode) -> u64 {
    match mode {
        Mode::Keyword => 1000,
        Mode::Semantic => 100,
        Mode::Hybrid | Mode::Fulltext => 50,
    }
}

/// How a mode is named in a sentence.
fn mode_words(mode: Mode) -> &'static str {
    match mode {
        Mode::Keyword => "by keyword",
        Mode::Semantic => "by meaning",
        Mode::Hybrid => "by meaning and keywords",
        Mode::Fulltext => "by BM25",
    }
}

/// "1 result", "3 results".
pub(super) fn counted(n: usize, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

/// Searches `workspace` and prints the results.
pub fn search(workspace: &Path, a: &SearchArgs, store: &StoreArgs) -> anyhow::Result<()> {
    let max = max_results(a.mode);
    if !(1..=max).contains(&a.limit) {
        anyhow::bail!("-n {}: a search {} returns 1 to {max} results", a.limit, mode_words(a.mode));
    }
    let (tool, args) = tool_call(a)?;
    let runner = open(workspace, store, Options::default())?;
    let out = call_json(&runner, tool, args)?;
    let found = Found::read(tool, &out)?;
    // The default search also reads the index's documents that are not text files.
    let documents = match &found {
        Found::Keyword(lines) if a.mode == Mode::Keyword => Some(documents::search(&runner, a, lines)?),
        _ => None,
    };
    if a.json {
        let shown = match &documents {
            Some(d) => json!({ "lines": out, "documents": d.json }),
            None => out,
        };
        return super::print_json(&shown);
    }
    let mut rows = found.rows();
    if let Some(d) = &documents {
        rows.extend(d.rows());
    }
    let style = Style::detect();
    if rows.is_empty() {
        nothing_found(&runner, a, &found, documents.as_ref())?;
    } else {
        say!("{} {} for \"{}\"{}:\n", counted(rows.len(), "result"), mode_words(a.mode), a.query, filters(a));
        for (i, r) in rows.iter().enumerate() {
            let place = if r.place.is_empty() { String::new() } else { format!("  {}", r.place) };
            let place = crate::text::for_terminal(&place);
            println!("{:>3}. {}  ({}){place}", i + 1, style.bold(&r.name), r.measure);
            say!("     {}", one_line(&r.text, SHOWN_TEXT));
            // A file at the workspace's top is named once.
            if r.path != r.name {
                println!("     {}", style.dim(&r.path));
            }
        }
        if found.more_results() {
            let dated = rows.iter().any(|r| !r.place.is_empty());
            let narrow = if dated { ", or narrow with --type or --date" } else { "" };
            say!("\nMore results exist: raise -n (up to {max}){narrow}.");
        }
    }
    if let Some(note) = documents.and_then(|d| d.note) {
        say!("\n{note}");
    }
    Ok(())
}

/// What a search that found nothing says: that nothing is indexed yet, when
/// it searched the index, else other words to try.
fn nothing_found(
    runner: &crate::runtime::Runner,
    a: &SearchArgs,
    found: &Found,
    documents: Option<&documents::Found>,
) -> anyhow::Result<()> {
    let indexed = match documents {
        Some(d) => d.indexed,
        None => documents::indexed(runner)?,
    };
    if a.mode != Mode::Keyword && indexed == 0 {
        say!("Nothing is indexed yet, so a search {} finds nothing: run `ragbox index` first.", mode_words(a.mode));
        say!("A keyword search reads the text files now: ragbox search {:?}", a.query);
        return Ok(());
    }
    if let Some(message) = found.message() {
        say!("{}", super::calls::for_cli(message));
    }
    say!("No results for \"{}\"{}.", a.query, filters(a));
    let narrowed = a.kind.is_some() || a.date.is_some() || !a.sources.is_empty();
    say!("Try different or fewer words{}.", if narrowed { ", or drop the filters" } else { "" });
    match a.mode {
        Mode::Keyword if indexed == 0 => {
            say!("Search by meaning once `ragbox index` has read the workspace: ragbox search {:?} --semantic", a.query)
        }
        Mode::Keyword => say!("Search by meaning instead: ragbox search {:?} --semantic", a.query),
        _ => say!("Keyword search finds exact words: ragbox search {:?}", a.query),
    }
    Ok(())
}

/// Prints the indexed documents (the list_sources tool).
pub fn sources(
    workspace: &Path,
    stats: bool,
    group_by: Option<&str>,
    limit: Option<u64>,
    as_json: bool,
    store: &StoreArgs,
) -> anyhow::Result<()> {
    let mut args = json!({ "include_stats": stats });
    if let Some(g) = group_by {
        args["group_by"] = g.into();
    }
    if let Some(n) = limit {
        args["limit"] = n.into();
    }
    let Some(out) = call_or_print(workspace, store, "list_sources", args, as_json)? else { return Ok(()) };
    let list: SourceList = serde_json::from_value(out)?;
    if list.total_sources == 0 {
        say!("Nothing is indexed yet: run `ragbox index`.");
        return Ok(());
    }
    let shown: Vec<&IndexedSource> = match &list.grouped_sources {
        Some(groups) => groups.iter().flat_map(|g| &g.sources).collect(),
        None => list.sources.iter().collect(),
    };
    // As wide as the longest type shown, so a long MIME type moves no column.
    let width = shown.iter().map(|s| s.file_type.chars().count()).max().unwrap_or(0);
    let print = |s: &IndexedSource| {
        say!("  {:<width$}  {:>9}  {}  {}", s.file_type, human_size(s.size), s.indexed_at, s.path);
    };
    match &list.grouped_sources {
        Some(groups) => {
            for g in groups {
                say!("{} ({}):", g.group, g.count);
                g.sources.iter().for_each(print);
            }
        }
        None => list.sources.iter().for_each(print),
    }
    say!("{} of {} sources", list.returned_sources, list.total_sources);
    if let Some(st) = &list.statistics {
        say!("{} documents, {} chunks, {:.2} MB", st.total_documents, st.total_chunks, st.total_size_mb);
        let types: Vec<String> = st.file_types.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if !types.is_empty() {
            say!("file types: {}", types.join(", "));
        }
    }
    Ok(())
}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / 1_048_576.0),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// Prints the documents most similar to `path`.
pub fn similar(
    workspace: &Path,
    path: &str,
    limit: Option<u64>,
    as_json: bool,
    store: &StoreArgs,
) -> anyhow::Result<()> {
    let mut args = json!({ "source_path": path });
    if let Some(n) = limit {
        args["n_results"] = n.into();
    }
    let Some(out) = call_or_print(workspace, store, "get_similar", args, as_json)? else { return Ok(()) };
    let found: SimilarDocuments = serde_json::from_value(out)?;
    let source = &found.source;
    if found.similar.is_empty() {
        say!("Nothing else is embedded to compare {source} with: run `ragbox index` first.");
        return Ok(());
    }
    let style = Style::detect();
    say!("Documents similar to {source}:\n");
    for (i, r) in found.similar.iter().enumerate() {
        println!("{:>3}. {}  ({:.1}%)", i + 1, style.bold(&r.conversation), r.score * 100.0);
        println!("     {}", style.dim(&r.source_path));
    }
    Ok(())
}

/// " (type plan, date 2025-11)" for the filters in use.
fn filters(a: &SearchArgs) -> String {
    let types = (!a.sources.is_empty()).then(|| format!("files {}", a.sources.join(", ")));
    let parts: Vec<String> = [a.kind.map(|k| format!("type {k}")), a.date.map(|d| format!("date {d}")), types]
        .into_iter()
        .flatten()
        .collect();
    if parts.is_empty() { String::new() } else { format!(" ({})", parts.join(", ")) }
}

/// `text` on one line, whitespace collapsed, cut at `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &flat[..end]),
        None => flat,
    }
}

/// Bold and dim on a terminal, plain text otherwise (pipes, files, tests).
struct Style {
    ansi: bool,
}

impl Style {
    fn detect() -> Self {
        Self { ansi: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() }
    }

    /// `s` (escaped: it is file data) in bold on a terminal.
    fn bold(&self, s: &str) -> String {
        let s = crate::text::for_terminal(s);
        if self.ansi { format!("\x1b[1m{s}\x1b[0m") } else { s.to_string() }
    }

    /// `s` (escaped: it is file data) dimmed on a terminal.
    fn dim(&self, s: &str) -> String {
        let s = crate::text::for_terminal(s);
        if self.ansi { format!("\x1b[2m{s}\x1b[0m") } else { s.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn one_line_collapses_and_cuts_on_characters() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("héllo wörld", 4), "héll…");
    }
}
