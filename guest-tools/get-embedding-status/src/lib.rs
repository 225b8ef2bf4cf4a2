//! Cortext's `get_embedding_status`: what the semantic index holds, what was
//! embedded recently, and which files are waiting to be embedded (seeds 000-002).

use ragbox_sdk::cortext;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexer::{stored_documents, survey};
use ragbox_sdk::protocol::{EmbeddingStatus, FileError, NotIndexed, PathList, Pending, RecentEmbedding};
use ragbox_sdk::text::rfc3339;
use ragbox_sdk::tool::{self, Description, ToolSet};
use ragbox_sdk::{CallError, corpus};
use serde::Deserialize;
use serde_json::json;

/// Recent embeddings listed.
const RECENT: usize = 10;
/// Paths listed per pending group (counts are always complete).
const MAX_LISTED: usize = 100;

#[derive(Debug, Deserialize)]
struct Args {}

fn listed(paths: &[String]) -> PathList {
    PathList { count: paths.len(), paths: paths.iter().take(MAX_LISTED).cloned().collect() }
}

fn status() -> Result<EmbeddingStatus, String> {
    let stats = corpus::stats()?;
    let stored = stored_documents()?;
    let mut recent: Vec<_> = stored.values().collect();
    recent.sort_by(|a, b| b.embedded_at.cmp(&a.embedded_at).then_with(|| a.path.cmp(&b.path)));
    let recent: Vec<RecentEmbedding> = recent
        .iter()
        .take(RECENT)
        .map(|d| RecentEmbedding {
            path: d.path.clone(),
            embedded_at: rfc3339(d.embedded_at),
            chunks: d.chunks,
            title: d.title.clone(),
        })
        .collect();
    let s = survey(".", &stored);
    let pending = s.new.len() + s.changed.len() + s.deleted.len();
    let files = s.errors.iter().take(MAX_LISTED);
    Ok(EmbeddingStatus {
        success: true,
        total_chunks: stats.chunks,
        num_documents: stats.documents,
        db_path: stats.db_path,
        model: stats.model_id,
        recent_embeddings: recent,
        pending: Pending {
            total: pending,
            new: listed(&s.new),
            changed: listed(&s.changed),
            deleted: listed(&s.deleted),
        },
        not_indexed: NotIndexed {
            count: s.errors.len(),
            files: files.map(|(path, error)| FileError { path: path.clone(), error: error.clone() }).collect(),
        },
        up_to_date: pending == 0,
    })
}

fn parse(arguments: &str) -> Result<Args, CallError> {
    cortext::arguments(arguments)
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    type Request = Args;
    const SET: ToolSet = ToolSet::Cortext;

    fn describe() -> Description {
        Description {
            name: "get_embedding_status",
            title: "Embedding status",
            description: "Workspace embedding statistics: total chunks, number of documents, the index \
                location, recently embedded documents with timestamps, and files pending embedding \
                (new, changed, deleted since the last run), and files that cannot be indexed, with why.",
            input: json!({
                "type": "object",
                "properties": { "workspace_path": { "type": "string", "description": "Optional workspace root path" } }
            }),
            output: Some(ragbox_sdk::protocol::output_schema::<EmbeddingStatus>()),
            annotations: tool::READS,
        }
    }

    fn decode(arguments: &str) -> Result<Self::Request, CallError> {
        parse(arguments)
    }

    fn run(_request: Self::Request, _workspace: &WorkspaceInfo) -> Result<String, CallError> {
        status().map(|s| ragbox_sdk::to_json(&s)).map_err(cortext::failed)
    }
}

ragbox_sdk::export_tool!(Tool);
