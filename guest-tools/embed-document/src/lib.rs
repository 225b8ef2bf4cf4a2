//! Cortext's `embed_document`: embed one file, or every file under a folder,
//! for semantic search.

use ragbox_sdk::conventions::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::indexer;
use ragbox_sdk::indexing::walk;
use ragbox_sdk::protocol::IndexReport;
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Path to file or directory (relative or absolute)
    path: String,
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "embed_document";
    const TITLE: &'static str = "Embed a document or folder";
    const DESCRIPTION: &'static str = "Embed a specific document or conversation for semantic search: one file, or \
        every text file under a folder (e.g. a Cortext conversation folder). Unchanged files are skipped; changed ones \
        are re-embedded.";
    const ANNOTATIONS: Annotations = tool::INDEXES;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    /// The path as given.
    type Request = String;
    type Output = IndexReport;

    fn check(args: Args) -> Result<String, CallError> {
        match args.path.trim() {
            "" => Err(cortext::invalid("path must not be empty")),
            _ => Ok(args.path),
        }
    }

    fn run(path: String, workspace: &WorkspaceInfo) -> Result<IndexReport, CallError> {
        let not_found = || cortext::failed(format!("Path not found: {path}"));
        let rel = walk::in_workspace(&path, &workspace.path).ok_or_else(not_found)?;
        if std::fs::symlink_metadata(&rel).is_err() {
            return Err(not_found());
        }
        Ok(indexer::run(&rel).map_err(cortext::failed)?.result())
    }
}

ragbox_sdk::export_tool!(Tool);
