//! The sandbox a call runs in: a fresh store whose WASI context has the
//! workspace preopened read-only as its only filesystem, no environment, no
//! arguments, no sockets, stdout discarded and stderr captured.

use super::extract::Extractors;
use super::fs_guard::{FsGuard, GuardedFs};
use super::guard::{Guard, Interrupt};
use super::stages::{Stages, StagesSink};
use super::stderr::StderrCapture;
use crate::config::{Grants, Limits};
use crate::corpus::Corpus;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// One progress report from a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Units done so far.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
    /// What is happening now.
    pub message: Option<String>,
}

/// Where a call's progress reports go (the MCP layer forwards them to the client).
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// What the host knows about the call being made: who, where, and how to
/// report back. Built by the caller (the MCP layer or the CLI).
#[derive(Clone)]
pub struct CallEnv {
    /// The folder the call runs in, or why the requested one was refused.
    pub workspace: Result<PathBuf, String>,
    /// That workspace's index; `None` when the workspace was refused.
    pub corpus: Option<Arc<Corpus>>,
    /// What the tool may do beyond reading.
    pub grants: Grants,
    /// Receives progress reports, when the client asked for them.
    pub progress: Option<ProgressSink>,
    /// Fires when the client cancels the call.
    pub cancel: CancellationToken,
    /// Who started the call; recorded with the documents it writes.
    pub caller: Caller,
    /// Receives where the call's time went, when the caller asked (`ragbox index --timings`).
    pub timings: Option<StagesSink>,
    /// What reads documents that are not text (PDF, Word, …) for the call.
    pub extractors: Arc<Extractors>,
    /// The files named like credentials the user lets be indexed there.
    pub secrets: Arc<crate::walk::SecretsLetIn>,
}

/// Who started a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Caller {
    /// A client's `tools/call`, or the command line.
    #[default]
    Client,
    /// `serve --watch`, after files changed: the documents it writes are
    /// listed with `source_method: file_watcher`.
    FileWatcher,
}

impl CallEnv {
    /// A call refused a workspace (`reason`): the tool sees no files and no index.
    pub fn refused(reason: String) -> Self {
        Self {
            workspace: Err(reason),
            corpus: None,
            grants: Grants::default(),
            progress: None,
            cancel: CancellationToken::new(),
            caller: Caller::Client,
            timings: None,
            extractors: Arc::default(),
            secrets: Arc::new(crate::walk::SecretsLetIn::none()),
        }
    }
}

/// The data of one call's store; the WIT host interfaces are implemented on it
/// (see `capabilities`).
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    fs: FsGuard,
    pub(crate) guard: Guard,
    pub(crate) stderr: StderrCapture,
    /// The tool's name, for log lines.
    pub(crate) tool: Arc<str>,
    pub(crate) env: CallEnv,
    /// Where the call's time goes, by capability.
    pub(crate) stages: Stages,
    /// The store, held open from the call's first use of it until the guest
    /// computes for a while (see [`STORE_IDLE`]) or the host starts long work.
    pub(crate) held: Option<crate::store::Store>,
    /// When the held store was last used.
    pub(crate) store_used: Instant,
    /// The state the call's first memo call saw (`None` before it, or
    /// `Some(None)` when nothing watches the workspace).
    pub(crate) memo_stamp: Option<Option<crate::corpus::memo::Stamp>>,
}

/// How long the guest may compute with the store held before it is closed
/// again: other processes wait for it meanwhile.
const STORE_IDLE: Duration = Duration::from_millis(5);

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl HostState {
    /// Runs `f`, adding its time to `stage` of this call's [`Stages`].
    pub(crate) fn timed<T>(&mut self, stage: super::Stage, f: impl FnOnce(&mut Self) -> T) -> T {
        let started = Instant::now();
        let out = f(self);
        self.stages.add(stage, started);
        out
    }

    /// The guarded filesystem the guest's `wasi:filesystem/types` calls reach.
    pub(super) fn guarded_fs(&mut self) -> GuardedFs<'_> {
        GuardedFs {
            view: WasiFilesystemCtxView { ctx: self.wasi.filesystem(), table: &mut self.table },
            guard: &mut self.fs,
        }
    }

    /// Closes the held store if the guest has computed for a while since it
    /// last used it. Called on every epoch tick.
    fn release_idle_store(&mut self) {
        if self.held.is_some() && self.store_used.elapsed() >= STORE_IDLE {
            self.held = None;
        }
    }
}

/// Builds the store for one call of `tool` under `limits`.
pub fn new_store(engine: &Engine, tool: Arc<str>, env: CallEnv, limits: &Limits) -> Result<Store<HostState>, String> {
    let stderr = StderrCapture::default();
    let mut wasi = WasiCtxBuilder::new();
    // Each folder the guest sees, whose data dir it must not.
    let mut preopened = Vec::new();
    // Must precede preopened_dir: each preopen captures the flag. Calls already
    // run on a blocking thread, so filesystem work may block it directly.
    wasi.allow_blocking_current_thread(true);
    if let Ok(dir) = &env.workspace {
        wasi.preopened_dir(dir, ".", FsPerms::ReadOnly)
            .map_err(|e| format!("cannot open workspace {}: {e:#}", dir.display()))?;
        preopened.push(dir.clone());
        // Folders granted in config, read-only, each where it is on the host.
        for extra in &env.grants.read_dirs {
            let granted = |e: &dyn std::fmt::Display| {
                format!(
                    "cannot open {} (read_dirs of [tools.{tool}] in {}): {e}",
                    extra.display(),
                    crate::config::user_config_shown()
                )
            };
            let dir = crate::platform::canonical(extra).map_err(|e| granted(&e))?;
            let guest = dir.to_str().ok_or_else(|| granted(&"the path is not UTF-8"))?;
            wasi.preopened_dir(&dir, guest, FsPerms::ReadOnly).map_err(|e| granted(&format!("{e:#}")))?;
            preopened.push(dir);
        }
    }
    wasi.stderr(stderr.clone()).allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    let guard = Guard::new(limits.memory_bytes, limits.timeout, env.cancel.clone());
    // The user's config dir holds the key that vouches for indexes and the HTTP token.
    let fs = FsGuard::new(&preopened, crate::config::user_config_dir());
    let state = HostState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        fs,
        guard,
        stderr,
        tool,
        env,
        stages: Stages::default(),
        held: None,
        store_used: Instant::now(),
        memo_stamp: None,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.guard);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut ctx| {
        ctx.data_mut().release_idle_store();
        match ctx.data_mut().guard.check() {
            None => Ok(UpdateDeadline::Continue(1)),
            Some(Interrupt::Deadline) => Err(wasmtime::format_err!("deadline exceeded")),
            Some(Interrupt::Cancelled) => Err(wasmtime::format_err!("cancelled by the client")),
        }
    });
    Ok(store)
}
