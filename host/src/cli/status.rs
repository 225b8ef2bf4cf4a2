//! `ragbox status`: what is indexed and what waits to be, via the
//! `get_embedding_status` tool.

use super::calls::call_or_print;
use crate::setup::StoreArgs;
use ragbox_protocol::EmbeddingStatus;
use serde_json::json;
use std::path::Path;

/// Prints the index's status for `workspace`.
pub fn run(workspace: &Path, as_json: bool, store: &StoreArgs) -> anyhow::Result<()> {
    let Some(out) = call_or_print(workspace, store, "get_embedding_status", json!({}), as_json)? else {
        return Ok(());
    };
    let s: EmbeddingStatus = serde_json::from_value(out)?;
    say!("index:     {}", s.db_path);
    say!("model:     {}", s.model.as_deref().unwrap_or("(nothing embedded yet)"));
    say!("documents: {}", s.num_documents);
    say!("chunks:    {}", s.total_chunks);
    if let Some(v) = &s.vector_index {
        say!(
            "vectors:   {} chunks in graphs ({} segments), {} scanned exactly, {} tombstones",
            v.in_graphs,
            v.segments,
            v.exact,
            v.tombstones
        );
        if let Some(building) = &v.building {
            say!("           building: {building} ({} jobs queued)", v.queued);
        }
    }
    if !s.recent_embeddings.is_empty() {
        say!("recently embedded:");
        for r in &s.recent_embeddings {
            say!("  {}  {}", r.embedded_at, r.path);
        }
    }
    if s.not_indexed.count > 0 {
        say!("not indexed: {}", s.not_indexed.count);
        for f in &s.not_indexed.files {
            say!("  {}: {}", f.path, f.error);
        }
        if s.not_indexed.count > s.not_indexed.files.len() {
            say!("  … and {} more", s.not_indexed.count - s.not_indexed.files.len());
        }
    }
    let pending = &s.pending;
    if pending.total == 0 {
        say!("up to date: nothing pending");
        return Ok(());
    }
    for (group, list) in [("new", &pending.new), ("changed", &pending.changed), ("deleted", &pending.deleted)] {
        if list.count == 0 {
            continue;
        }
        say!("{group}: {}", list.count);
        for p in list.paths.iter().take(10) {
            say!("  {p}");
        }
        if list.count > 10 {
            say!("  … and {} more", list.count - 10);
        }
    }
    say!("run `ragbox index` to embed what is pending");
    Ok(())
}
