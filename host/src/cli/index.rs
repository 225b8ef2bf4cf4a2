//! `ragbox index [PATH]`: embed the workspace (or one file or folder) from
//! the command line, with a progress bar. It runs the same sandboxed
//! components an agent's `embed_workspace` / `embed_document` call runs.

use super::calls::call;
use crate::corpus::Options;
use crate::runtime::{Outcome, Progress, Request, Stages, StagesSink};
use crate::setup::{StoreArgs, open};
use anyhow::bail;
use indicatif::{ProgressBar, ProgressStyle};
use ragbox_protocol::IndexReport;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// What `ragbox index` indexes.
pub enum Scope<'a> {
    /// The whole workspace.
    All,
    /// One file or folder in it.
    Path(&'a str),
    /// Only its SKILL.md files (`--skills DIR`).
    Skills,
}

/// Indexes `scope` of `workspace` and prints what was done; with `timings`,
/// also where the time went, by stage, on stderr.
pub fn run(workspace: &Path, scope: Scope, as_json: bool, timings: bool, store: &StoreArgs) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    // The keyword index is built beside the writing, and ready when this ends.
    let runner = open(workspace, store, Options { follow_keywords: true, ..Options::default() })?;
    let (tool, arguments) = match scope {
        Scope::Path(p) => ("embed_document", json!({ "path": p })),
        Scope::All => ("embed_workspace", json!({})),
        Scope::Skills => ("embed_workspace", json!({ "only_skills": true })),
    };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} files ({eta} left) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    if as_json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let sink_bar = bar.clone();
    let sink = Arc::new(move |p: Progress| {
        if let Some(total) = p.total {
            sink_bar.set_length(total);
        }
        // A large run stores every file for keyword search, then embeds them: two passes.
        if p.done < sink_bar.position() {
            sink_bar.reset_eta();
        }
        sink_bar.set_position(p.done);
        if let Some(message) = p.message {
            sink_bar.set_message(message);
        }
    });
    // Kept whether or not they are printed: the summary says what the embedding cache gave.
    let stages: StagesSink = Arc::new(std::sync::Mutex::new(Stages::default()));
    let request = Request { progress: Some(sink), timings: Some(stages.clone()), ..Request::default() };
    let outcome = call(&runner, tool, arguments, request)?;
    bar.finish_and_clear();
    let stages = stages.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if timings {
        // Opening the workspace and loading components come before the call.
        let setup = started.elapsed().saturating_sub(stages.total);
        if as_json {
            let mut json = stages.to_json();
            json["setup"] = json!({ "seconds": setup.as_secs_f64() });
            eprintln!("{json}");
        } else {
            eprintln!("time by stage: setup {:.3} s, {}", setup.as_secs_f64(), stages.summary());
        }
    }
    if matches!(outcome, Outcome::Ok(_)) {
        // Saved for the servers that start next (a running one may save it instead).
        let served = runner.setup().workspaces.served().to_path_buf();
        let corpus = runner.corpus(&served);
        if let Err(e) = corpus.save_vectors() {
            tracing::warn!("the vector index was not saved ({e}); the next server builds it from the store");
        }
        if let Err(e) = corpus.settle_keywords() {
            tracing::warn!("the keyword index was not brought up to date ({e}); the next keyword search does it");
        }
    }
    let body = match outcome {
        Outcome::Ok(json) => json,
        Outcome::ToolError { body, .. } => bail!("{}", super::calls::tool_error_for_cli(&body)),
        Outcome::Failed(failure) => bail!("{failure}"),
    };
    if as_json {
        say!("{body}");
        return Ok(());
    }
    let report: IndexReport = serde_json::from_str(&body)?;
    let found = stages.passages.cached + stages.passages.team;
    say!(
        "embedded {} files ({} chunks{}), {} unchanged, {} removed; {} indexable files",
        report.embedded,
        report.chunks,
        if found > 0 { format!(", {found} of them from the embedding cache") } else { String::new() },
        report.skipped,
        report.removed,
        report.total_files
    );
    if !report.errors().is_empty() {
        say!("{} files could not be indexed:", report.errors().len());
        for e in report.errors() {
            say!("  {}: {}", e.path, e.error);
        }
    }
    if !report.complete {
        say!("stopped early: run `ragbox index` again to finish");
    }
    Ok(())
}
