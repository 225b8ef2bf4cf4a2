//! Cortext's `get_embedding_status`: what the semantic index holds, what was
//! embedded recently, and which files are waiting to be embedded.

use ragbox_sdk::conventions::cortext;
use ragbox_sdk::corpus::Document;
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::indexer::{self, stored_documents, survey};
use ragbox_sdk::protocol::{
    EmbeddingStatus, FileError, NotIndexed, PathList, Pending, RecentEmbedding, VectorIndexState,
};
use ragbox_sdk::tool::text::rfc3339;
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError, corpus, host};
use schemars::JsonSchema;
use serde::Deserialize;

/// Recent embeddings listed.
const RECENT: usize = 10;
/// Paths listed per pending group (counts are always complete).
const MAX_LISTED: usize = 100;
/// The status as last worked out, kept by the host while nothing changed.
const MEMO_KEY: &str = "status";

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {}

fn listed(paths: &[String]) -> PathList {
    PathList { count: paths.len(), paths: paths.iter().take(MAX_LISTED).cloned().collect() }
}

fn status() -> Result<EmbeddingStatus, String> {
    let stats = corpus::stats()?;
    let stored = stored_documents()?;
    // A file no extractor could read is listed under not_indexed, and one stored for keyword
    // search only under pending (new), not as embedded.
    let embedded = |d: &&Document| indexer::is_embedded(d) && !indexer::is_unreadable(d);
    let mut recent: Vec<_> = stored.values().filter(embedded).collect();
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
        vector_index: None,
    })
}

/// The vector index's state now: background builds move it without a write, so it is never kept.
fn vector_index() -> Option<VectorIndexState> {
    let s = ragbox_sdk::vectors::state().ok()??;
    Some(VectorIndexState {
        in_graphs: s.in_graphs,
        exact: s.exact,
        tombstones: s.tombstones,
        segments: s.segments,
        building: s.building,
        queued: s.queued,
    })
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "get_embedding_status";
    const TITLE: &'static str = "Embedding status";
    const DESCRIPTION: &'static str = "Workspace embedding statistics: total chunks, number of documents, the index \
        location, recently embedded documents with timestamps, and files pending embedding (new, changed, deleted \
        since the last run), and files that cannot be indexed, with why.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::Cortext;
    type Args = Args;
    type Request = ();
    type Output = EmbeddingStatus;

    fn check(_args: Args) -> Result<(), CallError> {
        Ok(())
    }

    fn run(_request: (), _workspace: &WorkspaceInfo) -> Result<EmbeddingStatus, CallError> {
        // Kept while the host's watch sees no file change and the index no write.
        let kept = host::memo_get(MEMO_KEY).and_then(|text| serde_json::from_str::<EmbeddingStatus>(&text).ok());
        let mut status = match kept {
            Some(kept) => kept,
            None => {
                let status = status().map_err(cortext::failed)?;
                host::memo_put(MEMO_KEY, &ragbox_sdk::to_json(&status));
                status
            }
        };
        status.vector_index = vector_index();
        Ok(status)
    }
}

ragbox_sdk::export_tool!(Tool);
