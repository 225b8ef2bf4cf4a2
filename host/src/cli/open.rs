//! Opening a workspace: its config, the allowed folders and the tool catalog.

use crate::builtins::BUILTIN_TOOLS;
use crate::config::{Config, DATA_DIR};
use crate::runtime::{Catalog, CompileCache, new_engine};
use crate::workspace::Workspaces;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An opened workspace, ready to serve.
pub struct Opened {
    pub workspaces: Workspaces,
    pub config: Config,
    pub catalog: Catalog,
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
    let catalog = Catalog::load(&engine, &cache, BUILTIN_TOOLS, &tool_dirs(workspaces.served()), &describe_limits);
    Ok(Opened { workspaces, config, catalog })
}
