//! Cortext's `embed_workspace`: bring the semantic index in line with every
//! indexable file of the workspace (seeds 000-001). Unchanged files are
//! skipped, deleted ones removed; progress is reported while it runs, and a
//! cancelled or timed-out run keeps every document it finished.

use ragbox_sdk::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexer;
use ragbox_sdk::tool::{self, Description, ToolSet};
use ragbox_sdk::{CallError, walk};
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

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    type Request = Args;
    const SET: ToolSet = ToolSet::Cortext;

    fn describe() -> Description {
        Description {
            name: "embed_workspace",
            title: "Embed the whole workspace",
            description: "Embed all workspace content for semantic search: every text file (notes, \
                conversations, docs, code; .gitignore respected). Files unchanged since they were embedded \
                are skipped, deleted files are removed from the index. Reports progress; safe to cancel and \
                run again, it resumes where it stopped.",
            input: json!({
                "type": "object",
                "properties": {
                    "only_skills": { "type": "boolean", "default": false, "description": "Index only SKILL.md files (a skills library on its own)" },
                    "paths": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "Only these workspace-relative files or folders, e.g. the ones that changed: each is embedded, re-embedded, or removed from the index when gone (default: the whole workspace)"
                    }
                }
            }),
            output: Some(ragbox_sdk::protocol::output_schema::<ragbox_sdk::protocol::IndexReport>()),
            annotations: tool::INDEXES,
        }
    }

    fn decode(arguments: &str) -> Result<Self::Request, CallError> {
        parse(arguments)
    }

    fn run(request: Self::Request, _workspace: &WorkspaceInfo) -> Result<String, CallError> {
        let a = request;
        let only = if a.only_skills { indexer::Only::Skills } else { indexer::Only::All };
        let scope = match &a.paths {
            Some(paths) => indexer::Scope::Paths(paths),
            None => indexer::Scope::Under("."),
        };
        let report = indexer::run_scoped(scope, only).map_err(cortext::failed)?;
        Ok(report.to_json())
    }
}

ragbox_sdk::export_tool!(Tool);
