//! Cortext's `embed_document`: embed one file, or every file under a folder,
//! for semantic search (seeds 000-001).

use ragbox_sdk::args;
use ragbox_sdk::cortext::error_body;
use ragbox_sdk::indexer::{self, Report};
use ragbox_sdk::{Annotations, CallError, ToolInfo, host};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize)]
struct Args {
    path: String,
    /// Resolved by the host (see `host::workspace`); accepted here so it is not unknown.
    #[serde(default)]
    #[allow(dead_code)]
    workspace_path: Option<String>,
}

/// The workspace-relative form of `path` (relative, or absolute inside the
/// workspace at `root`); `None` when it points outside the workspace.
fn relative(path: &str, root: &str) -> Option<String> {
    let path = path.trim();
    let rel = if path.starts_with('/') {
        let root = root.trim_end_matches('/');
        let rest = path.strip_prefix(root)?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest.trim_start_matches('/')
    } else {
        path
    };
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") {
        return None;
    }
    Some(if parts.is_empty() { ".".to_string() } else { parts.join("/") })
}

struct Tool;

impl ragbox_sdk::Guest for Tool {
    fn describe() -> ToolInfo {
        ToolInfo {
            name: "embed_document".into(),
            title: Some("Embed a document or folder".into()),
            description: "Embed a specific document or conversation for semantic search: one file, or every \
                text file under a folder (e.g. a Cortext conversation folder). Unchanged files are skipped; \
                changed ones are re-embedded."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Path to file or directory (relative or absolute)" },
                    "workspace_path": { "type": "string", "description": "Optional workspace root path" }
                },
                "required": ["path"]
            })
            .to_string(),
            output_schema: Some(Report::output_schema().to_string()),
            annotations: Annotations { read_only: false, destructive: false, idempotent: true, open_world: false },
        }
    }

    fn call(arguments: String) -> Result<String, CallError> {
        let workspace = host::workspace().map_err(|e| CallError::Failed(error_body(&e)))?;
        let a: Args = args::parse(&arguments).map_err(|e| CallError::InvalidArguments(error_body(&e)))?;
        if a.path.trim().is_empty() {
            return Err(CallError::InvalidArguments(error_body("path must not be empty")));
        }
        let not_found = || CallError::Failed(error_body(&format!("Path not found: {}", a.path)));
        let rel = relative(&a.path, &workspace.path).ok_or_else(not_found)?;
        if std::fs::symlink_metadata(&rel).is_err() {
            return Err(not_found());
        }
        let report = indexer::run(&rel).map_err(|e| CallError::Failed(error_body(&e)))?;
        Ok(report.to_json().to_string())
    }
}

ragbox_sdk::export!(Tool);

#[cfg(test)]
mod tests {
    use super::relative;

    #[test]
    fn paths_inside_the_workspace_only() {
        let root = "/home/u/ws";
        assert_eq!(relative("brainstorm/2025-11-17/001-x", root).as_deref(), Some("brainstorm/2025-11-17/001-x"));
        assert_eq!(relative("./notes/", root).as_deref(), Some("notes"));
        assert_eq!(relative("/home/u/ws/notes/a.md", root).as_deref(), Some("notes/a.md"));
        assert_eq!(relative("/home/u/ws", root).as_deref(), Some("."));
        assert_eq!(relative("/home/u/wsx/a.md", root), None);
        assert_eq!(relative("/etc/passwd", root), None);
        assert_eq!(relative("notes/../../x", root), None);
    }
}
