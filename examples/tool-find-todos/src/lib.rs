//! `find_todos`: the TODO / FIXME / HACK / XXX notes left in a workspace's
//! files, with where they are. An example of a third-party ragbox tool: it
//! reads the workspace through WASI (read-only, the host's choice), reports
//! progress, stops when the client cancels, and answers JSON.

wit_bindgen::generate!({ world: "tool", path: "../../wit" });

use ragbox::tools::host;
use ragbox::tools::types::Annotations;
use serde_json::{Value, json};
use std::path::Path;

/// Tags looked for when the caller names none.
const DEFAULT_TAGS: [&str; 4] = ["TODO", "FIXME", "HACK", "XXX"];
/// Folders never worth scanning.
const SKIPPED_DIRS: [&str; 5] = [".git", ".ragbox", "node_modules", "target", ".venv"];
/// Files larger than this are skipped (generated or data files).
const MAX_FILE_BYTES: u64 = 1 << 20;
const DEFAULT_LIMIT: u64 = 100;
const MAX_LIMIT: u64 = 1000;

struct FindTodos;

/// The arguments, checked.
struct Request {
    tags: Vec<String>,
    path: String,
    limit: usize,
}

fn invalid(message: String) -> CallError {
    CallError::InvalidArguments(json!({ "error": message }).to_string())
}

fn parse(arguments: &str) -> Result<Request, CallError> {
    let args: Value = serde_json::from_str(arguments).map_err(|e| invalid(format!("arguments are not JSON: {e}")))?;
    let tags = match args.get("tags") {
        None | Some(Value::Null) => DEFAULT_TAGS.iter().map(|t| t.to_string()).collect(),
        Some(Value::Array(items)) => {
            let tags: Option<Vec<String>> =
                items.iter().map(|t| t.as_str().filter(|s| !s.trim().is_empty()).map(str::to_string)).collect();
            tags.filter(|t| !t.is_empty()).ok_or_else(|| invalid("tags must be a list of non-empty strings".into()))?
        }
        Some(other) => return Err(invalid(format!("tags must be a list of strings, not {other}"))),
    };
    let path = match args.get("path") {
        None | Some(Value::Null) => ".".to_string(),
        Some(Value::String(p)) if !p.starts_with('/') && !p.split('/').any(|c| c == "..") => p.clone(),
        Some(other) => return Err(invalid(format!("path must be a folder inside the workspace, not {other}"))),
    };
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| invalid(format!("limit must be an integer from 1 to {MAX_LIMIT}, not {v}")))?,
    };
    Ok(Request { tags, path, limit: limit as usize })
}

/// The files under `dir`, depth first, sorted, skipping [`SKIPPED_DIRS`].
fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        match entry.file_type() {
            Ok(t) if t.is_dir() && !SKIPPED_DIRS.iter().any(|s| name == *s) => files(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}

/// The first tag that appears as a word in `line`, and the note after it.
fn note<'a>(line: &'a str, tags: &[String]) -> Option<(&'a str, &'a str)> {
    for tag in tags {
        let mut from = 0;
        while let Some(i) = line[from..].find(tag.as_str()) {
            let at = from + i;
            let end = at + tag.len();
            let word_start = at == 0 || !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
            let word_end = !line[end..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
            if word_start && word_end {
                let text = line[end..].trim_start_matches([':', ')', ' ', '(', '-']).trim();
                return Some((&line[at..end], text));
            }
            from = end;
        }
    }
    None
}

fn run(r: &Request) -> Result<Value, CallError> {
    let root = Path::new(&r.path);
    if !root.is_dir() {
        return Err(CallError::Failed(json!({ "error": format!("no such folder: {}", r.path) }).to_string()));
    }
    let mut paths = Vec::new();
    files(root, &mut paths);
    let total = paths.len() as u64;
    let mut found = Vec::new();
    let (mut scanned, mut truncated, mut complete) = (0u64, false, true);
    'files: for (i, path) in paths.iter().enumerate() {
        if host::cancelled() {
            complete = false;
            break;
        }
        if i % 200 == 0 {
            host::progress(i as u64, Some(total), Some("scanning files"));
        }
        let big = std::fs::metadata(path).map(|m| m.len() > MAX_FILE_BYTES).unwrap_or(true);
        let Ok(bytes) = (if big { Err(()) } else { std::fs::read(path).map_err(|_| ()) }) else { continue };
        if bytes.contains(&0) {
            continue; // binary
        }
        scanned += 1;
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if let Some((tag, text)) = note(line, &r.tags) {
                if found.len() == r.limit {
                    truncated = true;
                    break 'files;
                }
                let shown = path.strip_prefix("./").unwrap_or(path).display().to_string();
                found.push(json!({ "path": shown, "line": n + 1, "tag": tag, "text": text }));
            }
        }
    }
    host::log(host::Level::Debug, &format!("{} notes in {scanned} files", found.len()));
    Ok(json!({
        "notes": found,
        "files_scanned": scanned,
        "truncated": truncated,
        "complete": complete,
    }))
}

impl Guest for FindTodos {
    fn describe() -> ToolInfo {
        ToolInfo {
            name: "find_todos".into(),
            title: Some("Find TODO notes".into()),
            description: "List the TODO, FIXME, HACK and XXX notes left in the workspace's files, with file and \
                line, to see what is unfinished before planning work."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "tags": { "type": "array", "items": { "type": "string" },
                              "description": "Words to look for (default TODO, FIXME, HACK, XXX)" },
                    "path": { "type": "string", "description": "A folder in the workspace (default: all of it)" },
                    "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT }
                },
                "additionalProperties": false
            })
            .to_string(),
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": {
                        "notes": { "type": "array", "items": { "type": "object", "properties": {
                            "path": { "type": "string" }, "line": { "type": "integer" },
                            "tag": { "type": "string" }, "text": { "type": "string" } } } },
                        "files_scanned": { "type": "integer" },
                        "truncated": { "type": "boolean" },
                        "complete": { "type": "boolean" }
                    },
                    "required": ["notes", "files_scanned", "truncated", "complete"]
                })
                .to_string(),
            ),
            annotations: Annotations { read_only: true, destructive: false, idempotent: true, open_world: false },
        }
    }

    fn call(arguments: String) -> Result<String, CallError> {
        let request = parse(&arguments)?;
        run(&request).map(|v| v.to_string())
    }
}

export!(FindTodos);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_whole_words() {
        let tags: Vec<String> = DEFAULT_TAGS.iter().map(|t| t.to_string()).collect();
        assert_eq!(note("// TODO: cache this", &tags), Some(("TODO", "cache this")));
        assert_eq!(note("# FIXME(ana) - off by one", &tags), Some(("FIXME", "ana) - off by one")));
        assert_eq!(note("let todos = TODOS;", &tags), None);
    }
}
