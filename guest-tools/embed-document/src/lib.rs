//! Cortext's `embed_document`: embed one file, or every file under a folder,
//! for semantic search (seeds 000-001).

use ragbox_sdk::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexer;
use ragbox_sdk::tool::{self, Description, ToolSet};
use ragbox_sdk::{CallError, walk};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize)]
struct Args {
    path: String,
}

fn parse(arguments: &str) -> Result<Args, CallError> {
    let a: Args = cortext::arguments(arguments)?;
    if a.path.trim().is_empty() {
        return Err(cortext::invalid("path must not be empty"));
    }
    Ok(a)
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    type Request = Args;
    const SET: ToolSet = ToolSet::Cortext;

    fn describe() -> Description {
        Description {
            name: "embed_document",
            title: "Embed a document or folder",
            description: "Embed a specific document or conversation for semantic search: one file, or every \
                text file under a folder (e.g. a Cortext conversation folder). Unchanged files are skipped; \
                changed ones are re-embedded.",
            input: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Path to file or directory (relative or absolute)" },
                },
                "required": ["path"]
            }),
            output: Some(ragbox_sdk::protocol::output_schema::<ragbox_sdk::protocol::IndexReport>()),
            annotations: tool::INDEXES,
        }
    }

    fn decode(arguments: &str) -> Result<Self::Request, CallError> {
        parse(arguments)
    }

    fn run(request: Self::Request, workspace: &WorkspaceInfo) -> Result<String, CallError> {
        let a = request;
        let not_found = || cortext::failed(format!("Path not found: {}", a.path));
        let rel = walk::in_workspace(&a.path, &workspace.path).ok_or_else(not_found)?;
        if std::fs::symlink_metadata(&rel).is_err() {
            return Err(not_found());
        }
        let report = indexer::run(&rel).map_err(cortext::failed)?;
        Ok(report.to_json())
    }
}

ragbox_sdk::export_tool!(Tool);
