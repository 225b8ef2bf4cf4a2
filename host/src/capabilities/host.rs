//! `ragbox:tools/host`: logging, progress, cancellation and the call's workspace.

use crate::runtime::bindings::ragbox::tools::{host, types};
use crate::runtime::{HostState, Level, Progress, Stage};

/// Longest log line or progress message kept from a guest.
const MAX_MESSAGE_BYTES: usize = 4096;

impl types::Host for HostState {}

impl host::Host for HostState {
    fn log(&mut self, level: Level, message: String) {
        let tool = &*self.tool;
        // One message, one log line, whatever it holds.
        let message = crate::text::for_log(clip(&message));
        match level {
            Level::Trace => tracing::trace!(tool, "{message}"),
            Level::Debug => tracing::debug!(tool, "{message}"),
            Level::Info => tracing::info!(tool, "{message}"),
            Level::Warn => tracing::warn!(tool, "{message}"),
            Level::Error => tracing::error!(tool, "{message}"),
        }
    }

    fn progress(&mut self, done: u64, total: Option<u64>, message: Option<String>) {
        if let Some(sink) = &self.env.progress {
            sink(Progress { done, total, message: message.map(|m| clip(&m).to_string()) });
        }
    }

    fn cancelled(&mut self) -> bool {
        self.guard.should_stop()
    }

    fn workspace(&mut self) -> Result<host::WorkspaceInfo, types::Error> {
        match &self.env.workspace {
            Ok(path) => Ok(host::WorkspaceInfo { path: path.display().to_string() }),
            Err(reason) => Err(super::denied(reason.clone())),
        }
    }

    fn memo_get(&mut self, key: String) -> Option<String> {
        let stamp = self.memo_stamp()?;
        self.corpus_of_call().ok()?.memo().get(&self.tool, &key, stamp)
    }

    fn memo_put(&mut self, key: String, value: String) {
        if let (Some(stamp), Ok(corpus)) = (self.memo_stamp(), self.corpus_of_call()) {
            corpus.memo().put(&self.tool, &key, value, stamp);
        }
    }

    fn files(&mut self, root: String) -> Result<(Vec<host::FileEntry>, Vec<host::WalkError>), types::Error> {
        let workspace = match &self.env.workspace {
            Ok(path) => path.clone(),
            Err(reason) => return Err(super::denied(reason.clone())),
        };
        // The user's config dir (the key, the HTTP token) is never listed, wherever it is.
        let hidden: Vec<_> =
            crate::config::user_config_dir().and_then(|d| crate::platform::canonical(&d).ok()).into_iter().collect();
        self.timed(Stage::Walk, |this| {
            let guard = &this.guard;
            let (found, errors) =
                crate::walk::files(&workspace, &root, &hidden, &this.env.secrets, &|| guard.must_stop()).map_err(
                    |e| match e {
                        crate::walk::WalkFailed::Stopped => {
                            super::error::error(types::ErrorCode::Cancelled, e.to_string())
                        }
                        other => super::error::invalid(other.to_string()),
                    },
                )?;
            if let Ok(corpus) = this.corpus_of_call() {
                corpus.memo().track_linked(found.iter().filter(|f| f.linked).map(|f| workspace.join(&f.path)));
            }
            let found = found.into_iter().map(|f| host::FileEntry { path: f.path, size: f.size, mtime: f.mtime });
            let errors = errors.into_iter().map(|e| host::WalkError { path: e.path, message: e.message });
            Ok((found.collect(), errors.collect()))
        })
    }
}

impl HostState {
    /// The state the call's first memo call saw: the store's generation and
    /// the watch's count of changes. `None` when nothing watches the workspace.
    fn memo_stamp(&mut self) -> Option<crate::corpus::memo::Stamp> {
        if let Some(stamp) = self.memo_stamp {
            return stamp;
        }
        let stamp = self.timed(Stage::StoreRead, |this| {
            let corpus = this.corpus_of_call().ok()?.clone();
            let generation = corpus.stats().ok()?.generation;
            corpus.memo().stamp(generation)
        });
        self.memo_stamp = Some(stamp);
        stamp
    }
}

fn clip(s: &str) -> &str {
    crate::text::head(s, MAX_MESSAGE_BYTES)
}
