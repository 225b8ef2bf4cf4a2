//! Cortext's `embed_document`: embed one file, or every file under a folder,
//! for semantic search (seeds 000-001).

// Natively (tests, fuzzing) the crate is a library without the component
// export, so the call path is reachable only in wasm.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use ragbox_sdk::cortext;
use ragbox_sdk::indexer::{self, Report};
use ragbox_sdk::{Annotations, CallError, ToolInfo, walk};
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

fn parse(arguments: &str) -> Result<Args, CallError> {
    let a: Args = cortext::arguments(arguments)?;
    if a.path.trim().is_empty() {
        return Err(cortext::invalid("path must not be empty"));
    }
    Ok(a)
}

/// Decodes and checks `arguments` exactly as `call` does, touching neither the
/// host nor the workspace: what the argument fuzz target drives natively.
pub fn decode(arguments: &str) -> Result<(), CallError> {
    parse(arguments).map(drop)
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
        let workspace = cortext::workspace()?;
        let a = parse(&arguments)?;
        let not_found = || cortext::failed(format!("Path not found: {}", a.path));
        let rel = walk::in_workspace(&a.path, &workspace.path).ok_or_else(not_found)?;
        if std::fs::symlink_metadata(&rel).is_err() {
            return Err(not_found());
        }
        let report = indexer::run(&rel).map_err(cortext::failed)?;
        Ok(report.to_json().to_string())
    }
}

// Exported only in the component: natively the crate is a library (tests, fuzzing).
#[cfg(target_arch = "wasm32")]
ragbox_sdk::export!(Tool);
