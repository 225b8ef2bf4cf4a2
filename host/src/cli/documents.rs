//! The documents a plain `ragbox search` cannot read line by line (PDF,
//! Office, EPUB, … : the formats an extractor reads): searched in the index
//! (BM25) once `ragbox index` has read them, named as passed over before.

use super::calls::call_json;
use super::search::{Mode, Row, SearchArgs, counted, index_rows, index_search, max_results};
use crate::runtime::Runner;
use cap_std::fs::{Dir, OpenOptions};
use ragbox_protocol::{KeywordResults, SearchResult, SearchResults, SourceList};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::Read as _;
use std::path::Path;

/// Documents named in the note on what was passed over.
const NAMED: usize = 3;
/// Files looked into (their first bytes) for that note: a workspace of
/// thousands of PDFs is not read through to say so.
const MAX_LOOKED_AT: usize = 1000;
/// The first bytes a file is looked at for a NUL, as the line search does.
const SNIFFED_BYTES: u64 = 8192;
/// Files larger than this are passed over by the line search whatever they hold.
const MAX_LINE_SEARCHED_BYTES: u64 = 8 << 20;

/// What the index added to a keyword search.
pub(super) struct Found {
    /// Documents in the index (0: nothing is indexed yet).
    pub indexed: u64,
    /// The index search's JSON (null when it did not run).
    pub json: Value,
    /// Its results that the line search did not show already.
    results: Vec<SearchResult>,
    /// What the line search passed over that the index could read, when nothing is indexed.
    pub note: Option<String>,
}

impl Found {
    /// The documents' results as printed: where in the document, not a score.
    pub(super) fn rows(&self) -> Vec<Row> {
        index_rows(&self.results, where_in)
    }
}

/// How many documents the index holds (0 before `ragbox index`).
pub(super) fn indexed(runner: &Runner) -> anyhow::Result<u64> {
    let out = call_json(runner, "list_sources", json!({ "limit": 1 }))?;
    let list: SourceList = serde_json::from_value(out)?;
    Ok(list.total_sources as u64)
}

/// The index's documents that hold the words, beside the line search's
/// `lines`; or, with nothing indexed, a note on what that search passed over.
pub(super) fn search(runner: &Runner, a: &SearchArgs, lines: &KeywordResults) -> anyhow::Result<Found> {
    let indexed = indexed(runner)?;
    let formats = runner.setup().catalog.extractors().formats();
    let mut found = Found { indexed, json: Value::Null, results: Vec::new(), note: None };
    if indexed == 0 {
        if lines.files_skipped > 0 {
            found.note = Some(passed_over(runner.setup().workspaces.served(), lines.files_skipped, &formats));
        }
        return Ok(found);
    }
    if formats.is_empty() {
        return Ok(found);
    }
    let out =
        call_json(runner, "search", index_search(a, "fulltext", &formats, a.limit.min(max_results(Mode::Fulltext))))?;
    let results: SearchResults = serde_json::from_value(out.clone())?;
    // A format read as text (RTF, notebooks) was searched line by line too: its lines are shown.
    let shown: HashSet<&str> = lines.results.iter().map(|l| l.path.as_str()).collect();
    found.results = results.results.into_iter().filter(|r| !shown.contains(r.source.filepath.as_str())).collect();
    found.json = out;
    Ok(found)
}

/// Where in its document a result is: `p. 14`, `slide 3`, `lines 4-9`.
fn where_in(r: &SearchResult) -> String {
    let place = r.source.location.as_deref().and_then(|l| l.strip_prefix(r.source.filepath.as_str())).map(str::trim);
    match place {
        Some(lines) if lines.starts_with(':') => format!("lines {}", &lines[1..]),
        Some(part) if !part.is_empty() => part.to_string(),
        _ => "in the index".into(),
    }
}

/// "2 files were not searched …", naming the documents among them that
/// `ragbox index` would read.
fn passed_over(workspace: &Path, skipped: u64, formats: &[String]) -> String {
    let (count, named) = unread_documents(workspace, formats);
    let files = if skipped == 1 { "1 file was".to_string() } else { format!("{skipped} files were") };
    let mut note = format!("{files} not searched (not text, or over 8 MiB)");
    if count > 0 {
        let more = if count > named.len() { ", …" } else { "" };
        let it = if count == 1 { "it" } else { "them" };
        note.push_str(&format!(
            ", {} among them that `ragbox index` reads ({}{more}). Once it has, this search covers {it} too.",
            counted(count, "document"),
            named.join(", ")
        ));
    } else {
        note.push('.');
    }
    note
}

/// The workspace's files in a format an extractor reads that the line search
/// passes over (binary, or too large): how many (of the first
/// [`MAX_LOOKED_AT`]), and the first [`NAMED`] of them.
fn unread_documents(workspace: &Path, formats: &[String]) -> (usize, Vec<String>) {
    // Names that mark credentials are no format an extractor reads: none is let in.
    let secrets = crate::walk::SecretsLetIn::none();
    let Ok((files, _)) = crate::walk::files(workspace, ".", &[], &secrets, &|| false) else { return (0, Vec::new()) };
    let Ok(top) = Dir::open_ambient_dir(workspace, cap_std::ambient_authority()) else { return (0, Vec::new()) };
    let readable = |path: &str| {
        Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| formats.iter().any(|f| f.eq_ignore_ascii_case(e)))
    };
    let unread: Vec<String> = files
        .into_iter()
        .filter(|f| readable(&f.path))
        .take(MAX_LOOKED_AT)
        .filter(|f| f.size > MAX_LINE_SEARCHED_BYTES || not_text(&top, &f.path))
        .map(|f| f.path)
        .collect();
    (unread.len(), unread.into_iter().take(NAMED).collect())
}

/// Whether the file at `rel` has a NUL in its first bytes (the line search's
/// test), opened beneath the workspace without following a link or waiting on a FIFO.
fn not_text(top: &Dir, rel: &str) -> bool {
    let mut options = OpenOptions::new();
    options.read(true);
    let Ok(file) = top.open_with(rel, crate::platform::no_follow_no_block(&mut options)) else { return false };
    let mut head = Vec::new();
    file.take(SNIFFED_BYTES).read_to_end(&mut head).is_ok() && head.contains(&0)
}
