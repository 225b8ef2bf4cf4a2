//! The one way a tool call is made. MCP, the command line and the file
//! watcher hand a tool name, its arguments and how to report back to a
//! [`Runner`]; it owns what every call needs (the config in force, the
//! folders calls may name, the loaded tools, the indexes) and applies the
//! same rules to each: which workspace, which grants, which limits.

use super::catalog::{Catalog, Fingerprint};
use super::history::{CallRecord, History};
use super::sandbox::{CallEnv, Caller, ProgressSink};
use super::stages::StagesSink;
use super::tool::{Failure, LoadedTool, Outcome};
use crate::config::{Config, Grants, Limits};
use crate::corpus::Corpora;
use crate::corpus::turn::{Shared, Taken};
use crate::workspace::{WORKSPACE_ARG, Workspaces};
use serde_json::{Map, Value};
use std::sync::{Arc, RwLock};
use tokio_util::sync::CancellationToken;

/// Largest arguments object a call may send, as JSON. Every byte is copied
/// into the component and may reach the host's tokenizer or keyword query
/// parser; no tool needs more.
pub const MAX_ARGUMENTS_BYTES: usize = 1 << 20;

/// What a server serves: the config in force, the folders calls may name,
/// and the loaded tools.
pub struct Setup {
    /// The config in force.
    pub config: Config,
    /// The served workspace and the others calls may name.
    pub workspaces: Workspaces,
    /// The loaded tools.
    pub catalog: Catalog,
}

impl Setup {
    /// What `tool` may do: config's grants for it over its defaults.
    pub fn grants(&self, tool: &LoadedTool) -> Grants {
        self.config.grants_for(tool.name(), tool.default_grants())
    }

    /// Its time, memory and output limits under config.
    pub fn limits(&self, tool: &LoadedTool) -> Limits {
        self.config.limits_for(tool.name(), tool.indexing())
    }
}

/// Loads a fresh [`Setup`] when the files it comes from change.
pub trait Reload: Send + Sync {
    /// The setup as the files say now; `Err` (a bad config edit) keeps the last one.
    fn load(&self) -> Result<Setup, String>;
    /// What the files it is loaded from look like now.
    fn fingerprint(&self) -> Fingerprint;
}

/// How one call is made: who asks, what cancels it, where its progress and
/// timings go.
#[derive(Clone, Default)]
pub struct Request {
    /// Who started the call.
    pub caller: Caller,
    /// Fires when the client cancels the call.
    pub cancel: CancellationToken,
    /// Receives progress reports, when the client asked for them.
    pub progress: Option<ProgressSink>,
    /// Receives where the call's time went.
    pub timings: Option<StagesSink>,
}

/// A call for a tool that is not loaded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown tool '{name}'{why}; available: {available}")]
pub struct UnknownTool {
    /// The name asked for.
    pub name: String,
    /// Why a component offering it was refused, when one was (`: reason`).
    why: String,
    /// The loaded tools' names, comma-separated.
    available: String,
}

/// A finished call: the tool that ran (its output schema shapes the reply) and how it ended.
pub struct Called {
    /// The tool, as loaded when the call started.
    pub tool: LoadedTool,
    /// Its result, its own error, or why the host stopped it.
    pub outcome: Outcome,
    /// Taken from a run that asked the same (see `corpus::turn`), not run itself.
    pub joined: bool,
}

/// Runs tool calls for one served workspace (and the others config allows).
pub struct Runner {
    /// Replaced whole on reload; a call keeps the setup it started with.
    setup: RwLock<Arc<Setup>>,
    loader: Option<Arc<dyn Reload>>,
    corpora: Arc<Corpora>,
    /// Where each call's time is kept for `tools inspect`.
    history: History,
}

impl Runner {
    /// A runner offering `setup` on the indexes in `corpora`; with a `loader`,
    /// [`Runner::reload`] reads the files again.
    pub fn new(setup: Setup, loader: Option<Arc<dyn Reload>>, corpora: Arc<Corpora>) -> Self {
        Self { setup: RwLock::new(Arc::new(setup)), loader, corpora, history: History::new(History::default_dir()) }
    }

    /// The setup in force now.
    pub fn setup(&self) -> Arc<Setup> {
        // A poisoned lock only means a reload panicked; the last setup is still whole.
        self.setup.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The corpora its calls use.
    pub fn corpora(&self) -> &Arc<Corpora> {
        &self.corpora
    }

    /// The index of `workspace`, as calls there use it.
    pub fn corpus(&self, workspace: &std::path::Path) -> Arc<crate::corpus::Corpus> {
        self.corpora.get(workspace)
    }

    /// What reloads the setup, when the runner follows its files.
    pub fn loader(&self) -> Option<Arc<dyn Reload>> {
        self.loader.clone()
    }

    /// Loads the config and the catalog again and puts them in force; `Err`
    /// keeps the current ones.
    pub fn reload(&self) -> Result<(), String> {
        let Some(loader) = &self.loader else { return Ok(()) };
        let fresh = Arc::new(loader.load()?);
        *self.setup.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        Ok(())
    }

    /// Runs the tool `name` on `arguments` (the MCP arguments object): in the
    /// workspace its `workspace_path` names (the served one by default; a
    /// refused one reaches the tool as the reason), with the grants and limits
    /// config gives the tool; arguments that do not fit a third-party tool's
    /// `inputSchema` are refused before it runs. Blocks: call it from a blocking thread.
    pub fn call(&self, name: &str, arguments: Map<String, Value>, request: Request) -> Result<Called, UnknownTool> {
        let setup = self.setup();
        let tool = setup.catalog.get(name).ok_or_else(|| unknown_tool(&setup.catalog, name))?;
        // A non-string workspace_path is left for the tool to reject in its own words.
        let workspace = setup.workspaces.resolve(arguments.get(WORKSPACE_ARG).and_then(Value::as_str));
        let corpus = workspace.as_ref().ok().map(|dir| self.corpora.get(dir));
        let secrets = match &workspace {
            Ok(dir) => crate::walk::SecretsLetIn::new(dir, setup.config.index_secrets()),
            Err(_) => crate::walk::SecretsLetIn::none(),
        };
        let env = CallEnv {
            workspace,
            corpus,
            grants: setup.grants(tool),
            progress: request.progress,
            cancel: request.cancel,
            caller: request.caller,
            timings: request.timings,
            extractors: setup.catalog.extractors(),
            secrets: Arc::new(secrets),
        };
        let value = Value::Object(arguments);
        let arguments = value.to_string();
        if arguments.len() > MAX_ARGUMENTS_BYTES {
            let failure = Failure::ArgumentsTooLarge {
                tool: name.to_string(),
                size_kib: arguments.len().div_ceil(1024),
                limit_kib: MAX_ARGUMENTS_BYTES >> 10,
            };
            return Ok(Called { tool: tool.clone(), outcome: Outcome::Failed(failure), joined: false });
        }
        if let Err(body) = tool.check_arguments(&value) {
            let outcome = Outcome::ToolError { invalid_arguments: true, body };
            return Ok(Called { tool: tool.clone(), outcome, joined: false });
        }
        // A call that may write takes its workspace's writing turn: one at a time in this
        // process, and one that asks what the running one asks takes its result.
        let corpus = env.corpus.clone().filter(|_| env.grants.corpus_write && !tool.read_only());
        let cancel = env.cancel.clone();
        let key = format!("{name}\0{}\0{:?}\0{arguments}", tool.sha256, env.grants);
        let turn =
            match corpus.as_ref().map(|c| c.writing().take(&key, &|| c.memo().stamp(0), &|| cancel.is_cancelled())) {
                None => None,
                Some(None) => {
                    let outcome = Outcome::Failed(Failure::Cancelled { tool: name.to_string() });
                    return Ok(Called { tool: tool.clone(), outcome, joined: false });
                }
                Some(Some(Taken::Joined(shared))) => match shared.downcast_ref::<Outcome>() {
                    Some(outcome) => return Ok(Called { tool: tool.clone(), outcome: outcome.clone(), joined: true }),
                    None => None,
                },
                Some(Some(Taken::Turn(held))) => Some(held),
            };
        let started = std::time::Instant::now();
        let outcome = tool.call(&arguments, env, &setup.limits(tool));
        self.history.record(name, &CallRecord::now(&tool.sha256, started.elapsed(), outcome.label()));
        if let Some(held) = turn {
            // A cancelled run's ending is its caller's alone: who joined it runs itself.
            let shared = !matches!(outcome, Outcome::Failed(Failure::Cancelled { .. }));
            held.finish(shared.then(|| Arc::new(outcome.clone()) as Shared));
        }
        Ok(Called { tool: tool.clone(), outcome, joined: false })
    }
}

fn unknown_tool(catalog: &Catalog, name: &str) -> UnknownTool {
    let prefix = format!("tool '{name}' ");
    let why = catalog
        .rejected()
        .iter()
        .find(|r| r.reason.starts_with(&prefix))
        .map(|r| format!(": {}", r.reason))
        .unwrap_or_default();
    let available = catalog.tools().iter().map(LoadedTool::name).collect::<Vec<_>>().join(", ");
    UnknownTool { name: name.to_string(), why, available }
}
