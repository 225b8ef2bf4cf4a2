//! The served workspace's file watch: it tells the tools' kept values
//! (`host.memo-get`) that the files changed and, under `serve --watch`, keeps
//! the index in line with the workspace. Changed paths go to the
//! `embed_workspace` component, with the grants and limits config gives it,
//! so watching decides nothing a full run would not.

use super::server::RagboxServer;
use crate::corpus::Corpus;
use crate::runtime::{Caller, Outcome, Request};
use crate::watch::{Changes, OnChange, Watcher};
use ragbox_protocol::{IndexReport, describe_error};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The tool that indexes.
const INDEXER: &str = "embed_workspace";
/// The tool whose answer is worked out ahead (it keeps it while nothing changes).
const STATUS: &str = "get_embedding_status";
/// How long the server must have run nothing before the status is worked out ahead.
const STATUS_QUIET: Duration = Duration::from_millis(100);
/// Runs of one batch that stopped early (out of time) before giving up on it.
const MAX_RUNS: usize = 20;

/// Watches the served workspace until `stop` fires. Every change makes what
/// tools kept (`host.memo-get`) stale the moment it arrives; with `index`,
/// what changed while no server watched is indexed, then every settled batch.
/// Without `index`, a tree too big for the kernel's watch is not polled: the
/// tools then keep nothing.
pub async fn watch_workspace(server: RagboxServer, corpus: Arc<Corpus>, index: bool, stop: CancellationToken) {
    let root = server.workspaces().served().to_path_buf();
    let memo = corpus.clone();
    let on_change: OnChange = Arc::new(move || memo.memo().changed());
    let watcher = server.blocking(move || Watcher::start(&root, index, Some(on_change))).await;
    let mut watcher = match watcher {
        Ok(Ok(w)) => w,
        Ok(Err(e)) if index => {
            return tracing::error!("--watch: {e}; the index follows the workspace only when indexed");
        }
        Ok(Err(e)) => return tracing::info!("no watch of the workspace ({e}): status calls walk it each time"),
        Err(e) => return tracing::error!("the file watch failed to start: {e}"),
    };
    // A polled tree is seen a second late: too late to vouch for a kept value.
    let watching = (!watcher.polling).then(|| corpus.memo().watching());
    if index {
        tracing::info!(polling = watcher.polling, "watching the workspace for changes");
        follow(&server, &corpus, &mut watcher, &stop).await;
    } else {
        // Worked out ahead, in the background, the status is kept for the first call that
        // asks; once the warm-up and the first calls are done: on two cores its walk and
        // store reads tripled the first search's time on SciFact.
        if stop.run_until_cancelled(server.quiet(STATUS_QUIET)).await.is_some() {
            let request = Request { cancel: stop.child_token(), ..Request::default() };
            if let Err(e) = server.call(STATUS, serde_json::Map::new(), request).await {
                tracing::debug!("status not worked out ahead: {e}");
            }
        }
        // The batches are not needed; the changes were told as they came.
        while let Some(Some(_)) = stop.run_until_cancelled(watcher.next()).await {}
    }
    drop(watching);
}

/// Indexes what changed while no server watched, then every settled batch.
/// A run takes the workspace's writing turn as every call that writes does
/// (the per-user service's sessions on one workspace each watch it: the
/// first to run does the work, the others' then find it done, or join it).
async fn follow(server: &RagboxServer, corpus: &Arc<Corpus>, watcher: &mut Watcher, stop: &CancellationToken) {
    // Started before the catch-up run, so nothing written meanwhile is missed.
    let mut changes = Changes::rescan();
    loop {
        let before = generation(server, corpus).await;
        index(server, &changes, stop).await;
        // A run that wrote told the clients (`RagboxServer::call`); a skill's
        // file the index does not keep (an image, an ignored file) changes its
        // entry all the same.
        if !changes.rescan && generation(server, corpus).await == before {
            let (root, paths) = (server.workspaces().served().to_path_buf(), changes.paths.clone());
            let touched = server.blocking(move || crate::resources::skills::touches_skill(&root, &paths));
            if touched.await.unwrap_or(false) {
                server.notify_resource_list_changed().await;
            }
        }
        changes = tokio::select! {
            next = watcher.next() => match next {
                Some(c) => c,
                None => return tracing::warn!("--watch: the file watch ended"),
            },
            () = stop.cancelled() => return,
        };
    }
}

/// The served index's generation (what moves when it is written), if it can be read.
async fn generation(server: &RagboxServer, corpus: &Arc<Corpus>) -> Option<u64> {
    let corpus = corpus.clone();
    server.blocking(move || corpus.stats().ok().map(|s| s.generation)).await.ok().flatten()
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
        let (outcome, joined) = match server.call(INDEXER, arguments.clone(), request).await {
            Ok(Ok(called)) => (called.outcome, called.joined),
            Ok(Err(unknown)) => {
                return tracing::error!(
                    "--watch: {unknown} (is it disabled under [tools.{INDEXER}] in your config or the workspace's?)"
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
            joined,
            "--watch: index updated"
        );
        if report.complete || stop.is_cancelled() {
            return;
        }
    }
    tracing::warn!("--watch: indexing kept stopping early; the rest waits for the next change or `ragbox index`");
}
