//! Cortext's `embed_workspace`: bring the semantic index in line with every
//! indexable file of the workspace. Unchanged files are
//! skipped, deleted ones removed; progress is reported while it runs, and a
//! cancelled or timed-out run keeps every document it finished.

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
    // `ragbox index --skills` sets it.
    /// Index only SKILL.md files (a skills library on its own)
    #[serde(default)]
    #[schemars(extend("default" = false))]
    only_skills: bool,
    // What changed, from `ragbox serve --watch`.
    /// Only these workspace-relative files or folders, e.g. the ones that changed: each is embedded, re-embedded, or removed from the index when gone (default: the whole workspace)
    paths: Option<Vec<String>>,
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "embed_workspace";
    const TITLE: &'static str = "Embed the whole workspace";
    const DESCRIPTION: &'static str = "Embed all workspace content for semantic search: every text file (notes, \
        conversations, docs, code; .gitignore respected). Files unchanged since they were embedded are skipped, \
        deleted files are removed from the index. Reports progress; safe to cancel and run again, it resumes where it \
        stopped.";
    const ANNOTATIONS: Annotations = tool::INDEXES;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    type Request = Args;
    type Output = IndexReport;

    /// Each path made workspace-relative, or refused.
    fn check(mut a: Args) -> Result<Args, CallError> {
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

    fn run(a: Args, _workspace: &WorkspaceInfo) -> Result<IndexReport, CallError> {
        let only = if a.only_skills { indexer::Only::Skills } else { indexer::Only::All };
        let scope = match &a.paths {
            Some(paths) => indexer::Scope::Paths(paths),
            None => indexer::Scope::Under("."),
        };
        Ok(indexer::run_scoped(scope, only).map_err(cortext::failed)?.result())
    }
}

ragbox_sdk::export_tool!(Tool);
