//! A tool run from the command line: its result, or its error in the
//! command line's words (flags, not parameter names).

use crate::corpus::Options;
use crate::runtime::{Outcome, Request, Runner};
use crate::setup::{StoreArgs, open};
use std::path::Path;

/// Runs the tool `name` as a client's call would; a tool that is not loaded is this command's error.
pub fn call(runner: &Runner, name: &str, arguments: serde_json::Value, request: Request) -> anyhow::Result<Outcome> {
    let serde_json::Value::Object(arguments) = arguments else { anyhow::bail!("arguments must be a JSON object") };
    Ok(runner.call(name, arguments, request)?.outcome)
}

/// Runs the tool `name` and returns its JSON result; a tool error becomes
/// this command's error, in the tool's own words.
pub fn call_json(runner: &Runner, name: &str, arguments: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    let body = match call(runner, name, arguments, Request::default())? {
        Outcome::Ok(json) => json,
        Outcome::ToolError { body, .. } => anyhow::bail!("{}", tool_error_for_cli(&body)),
        Outcome::Failed(failure) => anyhow::bail!("{failure}"),
    };
    Ok(serde_json::from_str(&body)?)
}

/// Runs the tool `name` in `workspace` for a command that prints its
/// result: with `as_json` the result is printed as it is (and `None`
/// returned), otherwise it is returned for the command to print.
pub fn call_or_print(
    workspace: &Path,
    store: &StoreArgs,
    name: &str,
    arguments: serde_json::Value,
    as_json: bool,
) -> anyhow::Result<Option<serde_json::Value>> {
    let runner = open(workspace, store, Options::default())?;
    let out = call_json(&runner, name, arguments)?;
    if as_json {
        super::print_json(&out)?;
        return Ok(None);
    }
    Ok(Some(out))
}

/// A tool's error as a command-line user reads it: a bad argument is
/// named by the flag that set it, without the advice meant for MCP clients.
pub fn tool_error_for_cli(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let invalid = parsed.as_ref().filter(|e| e["error"] == "InvalidParameter").and_then(|e| e["message"].as_str());
    for_cli(&invalid.map_or_else(|| ragbox_protocol::describe_error(body), str::to_string))
}

/// `text` from a tool with its parameter and tool names put as the command
/// line says them (`-n`, not `n_results`; `ragbox index`, not `embed_workspace`).
pub fn for_cli(text: &str) -> String {
    const NAMES: [(&str, &str); 8] = [
        ("n_results", "-n"),
        ("limit", "-n"),
        ("date_range", "--date"),
        ("conversation_type", "--type"),
        ("source_types", "--source"),
        ("embed_workspace (or `ragbox index`)", "`ragbox index`"),
        ("embed_workspace", "`ragbox index`"),
        ("search_workspace for keyword search", "keyword search (without --semantic)"),
    ];
    let mut out = text.to_string();
    for (tool, cli) in NAMES {
        out = replace_words(&out, tool, cli);
    }
    out
}

/// `text` with each `word` that stands alone (not inside a longer name) replaced by `with`.
fn replace_words(text: &str, word: &str, with: &str) -> String {
    let part_of_name = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let (before, after) = (&rest[..at], &rest[at + word.len()..]);
        out.push_str(before);
        let alone = !part_of_name(before.chars().next_back()) && !part_of_name(after.chars().next());
        out.push_str(if alone { with } else { word });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_errors_name_the_command_lines_flags() {
        let body = r#"{"error":"InvalidParameter","message":"limit must be between 1 and 50, got 0","suggestion":"Check the parameter against the tool's input schema"}"#;
        assert_eq!(tool_error_for_cli(body), "-n must be between 1 and 50, got 0");
        assert_eq!(
            tool_error_for_cli("n_results must be between 1 and 100, got 0"),
            "-n must be between 1 and 100, got 0"
        );
        assert_eq!(
            for_cli("Document not found: a.md (nothing is embedded yet: run embed_workspace first)"),
            "Document not found: a.md (nothing is embedded yet: run `ragbox index` first)"
        );
        assert_eq!(for_cli("rate_limit and limits stay"), "rate_limit and limits stay");
    }
}
