//! `ragbox search` and `ragbox similar`: the search tools from the command
//! line, printed for people (or as the tools' JSON with `--json`).

use super::open::open;
use serde_json::json;
use std::io::IsTerminal;
use std::path::Path;

/// Longest passage printed per result.
const SHOWN_TEXT: usize = 220;

/// What `ragbox search` was asked.
#[derive(Debug)]
pub struct SearchArgs<'a> {
    /// The query.
    pub query: &'a str,
    /// By meaning (search_semantic) instead of keywords (search_workspace).
    pub semantic: bool,
    /// Conversation type filter.
    pub kind: Option<&'a str>,
    /// Date filter, YYYY-MM or YYYY-MM-DD.
    pub date: Option<&'a str>,
    /// Results wanted.
    pub limit: Option<u64>,
    /// Print the tool's JSON.
    pub json: bool,
}

/// Searches `workspace` and prints the results.
pub fn search(workspace: &Path, a: &SearchArgs) -> anyhow::Result<()> {
    let opened = open(workspace)?;
    let mut args = json!({ "query": a.query });
    let (tool, limit_key, type_key) = if a.semantic {
        ("search_semantic", "n_results", "conversation_type")
    } else {
        ("search_workspace", "limit", "type")
    };
    if let Some(kind) = a.kind {
        args[type_key] = kind.into();
    }
    if let Some(date) = a.date {
        args["date_range"] = date.into();
    }
    if let Some(n) = a.limit {
        args[limit_key] = n.into();
    }
    let out = opened.call_json(tool, args)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let results = out["results"].as_array().cloned().unwrap_or_default();
    let style = Style::detect();
    if results.is_empty() {
        if let Some(message) = out["message"].as_str().filter(|_| a.semantic) {
            println!("{message}");
        }
        println!("No results for \"{}\"{}.", a.query, filters(a));
        println!(
            "Try different or fewer words{}.",
            if a.kind.is_some() || a.date.is_some() { ", or drop the filters" } else { "" }
        );
        if a.semantic {
            println!("Keyword search finds exact words: ragbox search {:?}", a.query);
        } else {
            println!("Search by meaning instead: ragbox search {:?} --semantic", a.query);
        }
        return Ok(());
    }
    let how = if a.semantic { "by meaning" } else { "by keyword" };
    println!("{} results {how} for \"{}\"{}:\n", results.len(), a.query, filters(a));
    for (i, r) in results.iter().enumerate() {
        let name = r["conversation"].as_str().unwrap_or_else(|| r["file"].as_str().unwrap_or("?"));
        let place = [r["type"].as_str(), r["date"].as_str()].into_iter().flatten().collect::<Vec<_>>().join(" · ");
        let measure = if a.semantic {
            format!("{:.1}%", r["score"].as_f64().unwrap_or(0.0) * 100.0)
        } else {
            format!("line {}", r["line"])
        };
        println!(
            "{:>3}. {}  ({measure}){}",
            i + 1,
            style.bold(name),
            if place.is_empty() { String::new() } else { format!("  {place}") }
        );
        println!("     {}", one_line(r["text"].as_str().unwrap_or(""), SHOWN_TEXT));
        let path = r["source_path"].as_str().or_else(|| r["path"].as_str()).unwrap_or("?");
        println!("     {}", style.dim(path));
    }
    if out["more_results"] == true {
        let limit = if a.semantic { "-n" } else { "-n (--limit)" };
        println!("\nMore results exist: raise {limit}, or narrow with --type or --date.");
    }
    Ok(())
}

/// Prints the documents most similar to `path`.
pub fn similar(workspace: &Path, path: &str, limit: Option<u64>, as_json: bool) -> anyhow::Result<()> {
    let opened = open(workspace)?;
    let mut args = json!({ "source_path": path });
    if let Some(n) = limit {
        args["n_results"] = n.into();
    }
    let out = opened.call_json("get_similar", args)?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let similar = out["similar"].as_array().cloned().unwrap_or_default();
    let source = out["source"].as_str().unwrap_or(path);
    if similar.is_empty() {
        println!("Nothing else is embedded to compare {source} with: run `ragbox index` first.");
        return Ok(());
    }
    let style = Style::detect();
    println!("Documents similar to {source}:\n");
    for (i, r) in similar.iter().enumerate() {
        let name = r["conversation"].as_str().unwrap_or("?");
        let pct = r["score"].as_f64().unwrap_or(0.0) * 100.0;
        println!("{:>3}. {}  ({pct:.1}%)", i + 1, style.bold(name));
        println!("     {}", style.dim(r["source_path"].as_str().unwrap_or("?")));
    }
    Ok(())
}

/// " (type plan, date 2025-11)" for the filters in use.
fn filters(a: &SearchArgs) -> String {
    let parts: Vec<String> =
        [a.kind.map(|k| format!("type {k}")), a.date.map(|d| format!("date {d}"))].into_iter().flatten().collect();
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

    fn bold(&self, s: &str) -> String {
        if self.ansi { format!("\x1b[1m{s}\x1b[0m") } else { s.to_string() }
    }

    fn dim(&self, s: &str) -> String {
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
