//! Cortext's `embed_workspace`: bring the semantic index in line with every
//! indexable file of the workspace (seeds 000-001). Unchanged files are
//! skipped, deleted ones removed; progress is reported while it runs, and a
//! cancelled or timed-out run keeps every document it finished.

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
    /// Index only SKILL.md files (a skills library on its own); `ragbox index --skills`.
    #[serde(default)]
    only_skills: bool,
    /// Only these workspace-relative files or folders (what changed); `ragbox serve --watch`.
    #[serde(default)]
    paths: Option<Vec<String>>,
    /// Resolved by the host (see `host::workspace`); accepted here so it is not unknown.
    #[serde(default)]
    #[allow(dead_code)]
    workspace_path: Option<String>,
}

fn parse(arguments: &str) -> Result<Args, CallError> {
    let mut a: Args = cortext::arguments(arguments)?;
    if let Some(paths) = &mut a.paths {
        for p in paths.iter_mut() {
            let bad = || cortext::invalid(format!("paths: {p:?} is not a workspace-relative path"));
            if p.trim_start().starts_with('/') {
                return Err(bad());
            }
            *p = walk::in_workspace(p, ".").ok_or_else(bad)?;
        }
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
            name: "embed_workspace".into(),
            title: Some("Embed the whole workspace".into()),
            description: "Embed all workspace content for semantic search: every text file (notes, \
                conversations, docs, code; .gitignore respected). Files unchanged since they were embedded \
                are skipped, deleted files are removed from the index. Reports progress; safe to cancel and \
                run again, it resumes where it stopped."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "workspace_path": { "type": "string", "description": "Optional workspace root path" },
                    "only_skills": { "type": "boolean", "default": false, "description": "Index only SKILL.md files (a skills library on its own)" },
                    "paths": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "Only these workspace-relative files or folders, e.g. the ones that changed: each is embedded, re-embedded, or removed from the index when gone (default: the whole workspace)"
                    }
                }
            })
            .to_string(),
            output_schema: Some(Report::output_schema().to_string()),
            annotations: Annotations { read_only: false, destructive: false, idempotent: true, open_world: false },
        }
    }

    fn call(arguments: String) -> Result<String, CallError> {
        cortext::workspace()?;
        let a = parse(&arguments)?;
        let only = if a.only_skills { indexer::Only::Skills } else { indexer::Only::All };
        let scope = match &a.paths {
            Some(paths) => indexer::Scope::Paths(paths),
            None => indexer::Scope::Under("."),
        };
        let report = indexer::run_scoped(scope, only).map_err(cortext::failed)?;
        Ok(report.to_json().to_string())
    }
}

// Exported only in the component: natively the crate is a library (tests, fuzzing).
#[cfg(target_arch = "wasm32")]
ragbox_sdk::export!(Tool);
