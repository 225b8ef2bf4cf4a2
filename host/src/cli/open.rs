//! Opening a workspace: its config, the allowed folders and the tool catalog,
//! loaded again whenever the tools folders or the config files change.

use crate::builtins::BUILTIN_TOOLS;
use crate::config::{CONFIG_FILE, Config, DATA_DIR, Origin, user_config_dir};
use crate::corpus::{Corpora, SharedEmbedder};
use crate::embed::default_model_dir;
use crate::runtime::{
    Catalog, CompileCache, Fingerprint, Outcome, Reload, Request, Runner, Setup, fingerprint, new_engine,
};
use crate::workspace::Workspaces;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::Engine;

/// Folders searched for extra components: the workspace's (trusted only
/// where the user pinned a component's bytes), then the user's.
pub fn tool_dirs(workspace: &Path) -> Vec<(PathBuf, Origin)> {
    let mut dirs = vec![(workspace.join(DATA_DIR).join("tools"), Origin::Workspace)];
    dirs.extend(user_config_dir().map(|d| (d.join("tools"), Origin::User)));
    dirs
}

/// Loads one workspace's config and tools.
pub struct Loader {
    served: PathBuf,
    engine: Engine,
    cache: CompileCache,
}

impl Loader {
    /// The config, the folders calls may name, and the tools, as they are now.
    fn setup(&self) -> anyhow::Result<Setup> {
        let config = Config::load(&self.served)?;
        let workspaces = Workspaces::new(&self.served, config.allowed_workspaces())?;
        let policy = |tool: &str, sha256: &str, origin| config.admits(tool, sha256, origin);
        let dirs = tool_dirs(&self.served);
        let catalog =
            Catalog::load(&self.engine, &self.cache, BUILTIN_TOOLS, &dirs, &super::tools::describe_limits(), &policy);
        Ok(Setup { config, workspaces, catalog })
    }
}

impl Reload for Loader {
    fn load(&self) -> Result<Setup, String> {
        self.setup().map_err(|e| format!("{e:#}"))
    }

    fn fingerprint(&self) -> Fingerprint {
        let mut files = vec![self.served.join(DATA_DIR).join(CONFIG_FILE)];
        files.extend(user_config_dir().map(|d| d.join(CONFIG_FILE)));
        fingerprint(&tool_dirs(&self.served), &files)
    }
}

/// Opens `workspace` and loads every tool component: the runner every
/// command (and `serve`) makes its calls through.
pub fn open(workspace: &Path) -> anyhow::Result<Runner> {
    let served = Workspaces::new(workspace, &[]).context("cannot serve this workspace")?;
    let engine = new_engine()?;
    let cache = CompileCache::new(&engine, CompileCache::default_dir());
    let loader = Arc::new(Loader { served: served.served().to_path_buf(), engine, cache });
    let setup = loader.setup()?;
    let model = setup.config.model().map(|m| served.served().join(m)).unwrap_or_else(default_model_dir);
    let corpora = Arc::new(Corpora::new(Arc::new(SharedEmbedder::new(model))));
    Ok(Runner::new(setup, Some(loader), corpora))
}

/// Runs the tool `name` as a client's call would; a tool that is not loaded is this command's error.
pub fn call(runner: &Runner, name: &str, arguments: serde_json::Value, request: Request) -> anyhow::Result<Outcome> {
    let serde_json::Value::Object(arguments) = arguments else { anyhow::bail!("arguments must be a JSON object") };
    Ok(runner.call(name, arguments, request)?.outcome)
}

/// Runs the tool `name` and returns its JSON result; a tool error becomes
/// this command's error, in the tool's own words.
pub fn call_json(runner: &Runner, name: &str, arguments: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    let body = match call(runner, name, arguments, Request::default())? {
        Outcome::Ok(json) => json,
        Outcome::ToolError { body, .. } => anyhow::bail!("{}", ragbox_protocol::describe_error(&body)),
        Outcome::Failed(failure) => anyhow::bail!("{failure}"),
    };
    Ok(serde_json::from_str(&body)?)
}
