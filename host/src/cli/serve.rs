//! `ragbox serve`: MCP over stdio.

use super::open::open;
use crate::mcp::{RagboxServer, serve_stdio};
use std::path::Path;

/// Loads the tools, then serves until the client hangs up.
pub fn run(workspace: &Path) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let opened = open(workspace)?;
    tracing::info!(
        workspace = %opened.workspaces.served().display(),
        tools = opened.catalog.tools().len(),
        rejected = opened.catalog.rejected().len(),
        load_ms = started.elapsed().as_millis() as u64,
        "serving MCP on stdio"
    );
    let server =
        RagboxServer::new(opened.catalog, Some(opened.loader), opened.workspaces, opened.config, opened.corpora);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(serve_stdio(server))
}
