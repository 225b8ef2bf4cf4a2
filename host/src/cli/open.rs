//! Opening a workspace: its config, the allowed folders and the tool catalog.

use crate::builtins::BUILTIN_TOOLS;
use crate::config::{Config, DATA_DIR};
use crate::corpus::{Corpora, SharedEmbedder};
use crate::embed::default_model_dir;
use crate::runtime::{CallEnv, Catalog, CatalogLoader, CompileCache, Outcome, ProgressSink, new_engine};
use crate::workspace::Workspaces;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// An opened workspace, ready to serve.
pub struct Opened {
    pub workspaces: Workspaces,
    pub config: Config,
    pub catalog: Catalog,
    pub corpora: Arc<Corpora>,
    /// Loads the catalog again (when a tools folder changes).
    pub loader: CatalogLoader,
}

/// Folders searched for extra components: the workspace's, then the user's.
pub fn tool_dirs(workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![workspace.join(DATA_DIR).join("tools")];
    let user = match std::env::var_os("RAGBOX_CONFIG_DIR") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => directories::ProjectDirs::from("", "", "ragbox").map(|d| d.config_dir().to_path_buf()),
    };
    dirs.extend(user.map(|d| d.join("tools")));
    dirs
}

/// Opens `workspace` and loads every tool component.
pub fn open(workspace: &Path) -> anyhow::Result<Opened> {
    let served = Workspaces::new(workspace, &[]).context("cannot serve this workspace")?;
    let config = Config::load(served.served())?;
    let workspaces = Workspaces::new(served.served(), &config.allowed_workspaces)?;
    let engine = new_engine()?;
    let cache = CompileCache::new(&engine, CompileCache::default_dir());
    // describe() must answer fast and small.
    let mut describe_limits = config.limits_for("(describe)", false);
    describe_limits.timeout = Duration::from_secs(5);
    describe_limits.max_output_bytes = 1 << 20;
    let policy = config.clone();
    let loader = CatalogLoader {
        engine,
        cache,
        builtins: BUILTIN_TOOLS,
        dirs: tool_dirs(workspaces.served()),
        describe_limits,
        admit: Arc::new(move |tool: &str, sha256: &str| policy.admits(tool, sha256)),
    };
    let catalog = loader.load();
    let model = config.model.clone().map(|m| served.served().join(m)).unwrap_or_else(default_model_dir);
    let corpora = Arc::new(Corpora::new(Arc::new(SharedEmbedder::new(model))));
    Ok(Opened { workspaces, config, catalog, corpora, loader })
}

impl Opened {
    /// Runs the tool `name` in the served workspace, as a client's call would.
    pub fn call(
        &self,
        name: &str,
        arguments: serde_json::Value,
        progress: Option<ProgressSink>,
    ) -> anyhow::Result<Outcome> {
        let tool = self.catalog.get(name).with_context(|| {
            let why = self.catalog.rejected().iter().find(|r| r.reason.starts_with(&format!("tool '{name}' ")));
            match why {
                Some(r) => format!("the tool {name} is not loaded: {}", r.reason),
                None => format!("the built-in tool {name} is not loaded"),
            }
        })?;
        let served = self.workspaces.served().to_path_buf();
        let corpus = self.corpora.get(&served);
        let grants = self.config.grants_for(name, tool.default_grants());
        let mut env = CallEnv::in_workspace(served, corpus, grants);
        env.progress = progress;
        let limits = self.config.limits_for(name, !tool.read_only());
        Ok(tool.call(&arguments.to_string(), env, &limits))
    }

    /// Runs the tool `name` and returns its JSON result; a tool error becomes
    /// this command's error, in the tool's own words.
    pub fn call_json(&self, name: &str, arguments: serde_json::Value) -> anyhow::Result<serde_json::Value> {
        let body = match self.call(name, arguments, None)? {
            Outcome::Ok(json) => json,
            Outcome::ToolError { body, .. } => anyhow::bail!("{}", super::index::error_message(&body)),
            Outcome::Failed(failure) => anyhow::bail!("{failure}"),
        };
        Ok(serde_json::from_str(&body)?)
    }
}
