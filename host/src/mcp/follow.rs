//! `serve --watch`: keeps the index in line with the workspace while serving.
//! Changed paths go to the `embed_workspace` component, with the grants and
//! limits config gives it, so watching decides nothing a full run would not.

use super::server::RagboxServer;
use crate::runtime::{Caller, Outcome, Request};
use crate::watch::{Changes, Watcher};
use ragbox_protocol::{IndexReport, describe_error};
use serde_json::json;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// The tool that indexes.
const INDEXER: &str = "embed_workspace";
/// Runs of one batch that stopped early (out of time) before giving up on it.
const MAX_RUNS: usize = 20;

/// Indexes what changed while no server watched, then every settled batch
/// of changes, until `stop` fires.
pub async fn follow(server: RagboxServer, stop: CancellationToken) {
    let root = server.workspaces().served().to_path_buf();
    let watcher = tokio::task::spawn_blocking(move || Watcher::start(&root)).await;
    let mut watcher = match watcher {
        Ok(Ok(w)) => w,
        Ok(Err(e)) => return tracing::error!("--watch: {e}; the index follows the workspace only when indexed"),
        Err(e) => return tracing::error!("--watch: the watcher failed to start: {e}"),
    };
    tracing::info!(polling = watcher.polling, "watching the workspace for changes");
    // Started before the catch-up run, so nothing written meanwhile is missed.
    let mut changes = Changes::rescan();
    loop {
        index(&server, &changes, &stop).await;
        changes = tokio::select! {
            next = watcher.next() => match next {
                Some(c) => c,
                None => return tracing::warn!("--watch: the file watch ended"),
            },
            () = stop.cancelled() => return,
        };
    }
}

/// Runs the indexer over one batch until it has finished it.
async fn index(server: &RagboxServer, changes: &Changes, stop: &CancellationToken) {
    let started = Instant::now();
    let mut arguments = serde_json::Map::new();
    if !changes.rescan {
        arguments.insert("paths".into(), json!(changes.paths.iter().collect::<Vec<_>>()));
    }
    for _ in 0..MAX_RUNS {
        let request = Request { caller: Caller::FileWatcher, cancel: stop.child_token(), ..Request::default() };
        let outcome = match server.call(INDEXER, arguments.clone(), request).await {
            Ok(Ok(called)) => called.outcome,
            Ok(Err(unknown)) => {
                return tracing::error!(
                    "--watch: {unknown} (is it disabled under [tools.{INDEXER}] in a config.toml?)"
                );
            }
            Err(failure) => return tracing::error!("--watch: indexing failed: {failure}"),
        };
        let report = match outcome {
            Outcome::Ok(body) => match serde_json::from_str::<IndexReport>(&body) {
                Ok(report) => report,
                Err(e) => return tracing::error!("--watch: {INDEXER} answered something else than its report: {e}"),
            },
            Outcome::ToolError { body, .. } => {
                return tracing::error!("--watch: indexing failed: {}", describe_error(&body));
            }
            Outcome::Failed(failure) => return tracing::error!("--watch: indexing failed: {failure}"),
        };
        tracing::info!(
            changed = changes.paths.len(),
            full = changes.rescan,
            embedded = report.embedded,
            removed = report.removed,
            errors = report.errors().len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "--watch: index updated"
        );
        if report.complete || stop.is_cancelled() {
            return;
        }
    }
    tracing::warn!("--watch: indexing kept stopping early; the rest waits for the next change or `ragbox index`");
}
