//! `ragbox status`: what is indexed and what waits to be, via the
//! `get_embedding_status` tool.

use super::open::{call_json, open};
use serde_json::json;
use std::path::Path;

/// Prints the index's status for `workspace`.
pub fn run(workspace: &Path, as_json: bool) -> anyhow::Result<()> {
    let runner = open(workspace)?;
    let s = call_json(&runner, "get_embedding_status", json!({}))?;
    if as_json {
        println!("{}", crate::text::for_json(&serde_json::to_string_pretty(&s)?));
        return Ok(());
    }
    say!("index:     {}", s["db_path"].as_str().unwrap_or("?"));
    say!("model:     {}", s["model"].as_str().unwrap_or("(nothing embedded yet)"));
    say!("documents: {}", s["num_documents"]);
    say!("chunks:    {}", s["total_chunks"]);
    if let Some(recent) = s["recent_embeddings"].as_array().filter(|r| !r.is_empty()) {
        say!("recently embedded:");
        for r in recent {
            say!("  {}  {}", r["embedded_at"].as_str().unwrap_or("?"), r["path"].as_str().unwrap_or("?"));
        }
    }
    let pending = &s["pending"];
    if pending["total"].as_u64().unwrap_or(0) == 0 {
        say!("up to date: nothing pending");
        return Ok(());
    }
    for group in ["new", "changed", "deleted"] {
        let count = pending[group]["count"].as_u64().unwrap_or(0);
        if count == 0 {
            continue;
        }
        say!("{group}: {count}");
        for p in pending[group]["paths"].as_array().into_iter().flatten().take(10) {
            say!("  {}", p.as_str().unwrap_or("?"));
        }
        if count > 10 {
            say!("  … and {} more", count - 10);
        }
    }
    say!("run `ragbox index` to embed what is pending");
    Ok(())
}
