//! Opening a workspace: its config, the allowed folders and the tool catalog,
//! loaded again whenever the tools folders or the config files change; and
//! the per-user service's [`Hub`], which shares one engine, compile cache and
//! model among its sessions. The command line and the service both set up
//! through here.

use crate::builtins;
use crate::config::{CONFIG_FILE, Config, DATA_DIR, Origin, user_config_dir};
use crate::corpus::{Corpora, Options, SharedEmbedder};
use crate::datadir::{DataDir, TOOLS_DIR, ToolFile, owner};
use crate::embed::default_model_dir_or_err;
use crate::embed_cache::Cache;
use crate::postgres::{Binding, Collection, Target, TargetSpec};
use crate::runtime::{
    Catalog, CompileCache, Fingerprint, Found, Reload, Runner, Setup, Source, fingerprint, new_engine, read_component,
    untrusted, wasm_files,
};
use crate::workspace::Workspaces;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::Engine;

/// The shared store named on the command line (`--store`, `--collection`).
#[derive(Debug, Clone, Default)]
pub struct StoreArgs {
    /// The server's URL (over `[store] url`).
    pub url: Option<String>,
    /// The collection's name (over `[store] collection`).
    pub collection: Option<String>,
}

/// The shared collection `served`'s index lives in, when the command line
/// or the user's config names a server; `None` for the local store.
pub fn shared_collection(config: &Config, served: &Path, store: &StoreArgs) -> anyhow::Result<Option<Arc<Collection>>> {
    match store.url.clone().or_else(|| config.store().and_then(|s| s.url.clone())) {
        Some(url) => Ok(Some(shared_collection_at(config, served, &url, store.collection.clone())?)),
        None if store.collection.is_some() => {
            anyhow::bail!("--collection names a collection in a shared store: give the server with --store URL too")
        }
        None => Ok(None),
    }
}

/// `served`'s collection on the server at `url`: named by `collection`
/// (`--collection`), the user's `[store] collection`, or the workspace folder's name with a short
/// hash of its identity (so two folders of one name never meet by default);
/// bound to the workspace unless the user's config shares it; logged in with
/// the user's `[store]` password and CA settings.
pub fn shared_collection_at(
    config: &Config,
    served: &Path,
    url: &str,
    collection: Option<String>,
) -> anyhow::Result<Arc<Collection>> {
    let file = config.store().cloned().unwrap_or_default();
    let identity = owner::Key::user()?.workspace_id(served);
    let name = match collection.or(file.collection) {
        Some(name) => name,
        None => {
            let folder = served.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            format!("{folder}-{}", &identity[..8])
        }
    };
    if name.trim().is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
        anyhow::bail!(
            "{name:?} cannot name a collection: use 1 to 200 printable characters (--collection NAME or [store] collection)"
        );
    }
    let spec = TargetSpec { url: url.to_string(), password_env: file.password_env, ca_file: file.ca_file };
    let target = Target::new(&spec)?;
    if !target.tls() && !target.local() {
        tracing::warn!(
            server = target.shown(),
            "the shared store's connection is not encrypted; add ?sslmode=require to the URL"
        );
    }
    let shared = config.shared_collections().contains(&name);
    let binding = Binding {
        id: identity,
        shown: served.display().to_string(),
        shared,
        config_file: crate::config::user_config_shown(),
    };
    let collection = Collection::new(target, &name).bound_to(binding);
    Ok(Arc::new(if config.team_cache() { collection } else { collection.without_team_cache() }))
}

/// Folders searched for extra components: the workspace's (trusted only
/// where the user pinned a component's bytes), then the user's.
pub fn tool_dirs(workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![workspace.join(DATA_DIR).join(TOOLS_DIR)];
    dirs.extend(user_config_dir().map(|d| d.join("tools")));
    dirs
}

/// The extra components of `workspace`: its own (read through its data dir:
/// no link followed; bytes kept only where `trusted` knows their sha256),
/// then the user's.
pub fn components(workspace: &Path, trusted: &dyn Fn(&str) -> bool) -> Vec<Found> {
    let mut found = Vec::new();
    match DataDir::open(workspace).and_then(|d| d.map(|d| d.tool_components(trusted)).transpose()) {
        Ok(files) => found.extend(files.into_iter().flatten().map(|(path, read)| {
            let bytes = read.and_then(|file| match file {
                ToolFile::Trusted(bytes) => Ok(bytes),
                ToolFile::Untrusted(sha256) => Err(untrusted(&path.display(), &sha256)),
            });
            Found { source: Source::File(path), origin: Origin::Workspace, bytes }
        })),
        Err(e) => found.push(Found {
            source: Source::File(workspace.join(DATA_DIR).join(TOOLS_DIR)),
            origin: Origin::Workspace,
            bytes: Err(e.to_string()),
        }),
    }
    for path in user_config_dir().map(|d| wasm_files(&d.join("tools"))).unwrap_or_default() {
        let bytes = read_component(&path).map_err(|e| e.to_string());
        found.push(Found { source: Source::File(path), origin: Origin::User, bytes });
    }
    found
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
        let pinned = |sha256: &str| config.pins(sha256);
        let found = components(&self.served, &pinned);
        let limits = crate::runtime::describe_limits();
        let catalog =
            Catalog::load(&self.engine, &self.cache, &builtins::components(), found, &limits, &policy, &pinned);
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

/// The components `workspace` would load (its config and tools folders as
/// `serve` reads them), without the model or the index.
pub fn catalog(workspace: &Path) -> anyhow::Result<Catalog> {
    let served = Workspaces::new(workspace, &[]).context("cannot open this workspace")?;
    let engine = new_engine()?;
    let cache = CompileCache::new(&engine, CompileCache::default_dir());
    let loader = Loader { served: served.served().to_path_buf(), engine, cache };
    Ok(loader.setup()?.catalog)
}

/// Opens `workspace` and loads every tool component: the runner every
/// command (and `serve`) makes its calls through; its index in the shared
/// store `store` names (or the config does), its corpora behaving as
/// `options` say.
pub fn open(workspace: &Path, store: &StoreArgs, options: Options) -> anyhow::Result<Runner> {
    let engine = new_engine()?;
    let cache = CompileCache::new(&engine, CompileCache::default_dir());
    let (loader, setup, model) = load(workspace, engine, cache)?;
    let served = setup.workspaces.served().to_path_buf();
    let mut corpora = Corpora::new(Arc::new(shared_embedder(&setup.config, model)), options);
    if let Some(collection) = shared_collection(&setup.config, &served, store)? {
        corpora = corpora.with_shared(served, collection);
    }
    Ok(Runner::new(setup, Some(loader), Arc::new(corpora)))
}

/// The model in `model` behind the user's embedding cache, as `config` sets it.
fn shared_embedder(config: &Config, model: PathBuf) -> SharedEmbedder {
    SharedEmbedder::with_cache(model, Cache::new(Cache::default_dir(), config.cache()))
}

/// `workspace`'s loader, its setup as it is now, and the model its config names.
fn load(workspace: &Path, engine: Engine, cache: CompileCache) -> anyhow::Result<(Arc<Loader>, Setup, PathBuf)> {
    let served = Workspaces::new(workspace, &[]).context("cannot open this workspace")?;
    let loader = Arc::new(Loader { served: served.served().to_path_buf(), engine, cache });
    let setup = loader.setup()?;
    // Only the user picks the model: the host parses its files outside the sandbox.
    let model = setup.config.model().map(Path::to_path_buf).map_or_else(default_model_dir_or_err, Ok)?;
    Ok((loader, setup, model))
}

/// What the sessions of one per-user service share: the engine, the compile
/// cache and the corpora (one model, and one corpus per workspace however
/// many sessions serve it). The service needs Unix sockets.
#[cfg(unix)]
pub struct Hub {
    engine: Engine,
    cache: CompileCache,
    corpora: std::sync::Mutex<Option<Arc<Corpora>>>,
}

#[cfg(unix)]
impl Hub {
    /// The engine and the compile cache; the corpora come with the first session.
    pub fn new() -> anyhow::Result<Self> {
        let engine = new_engine()?;
        let cache = CompileCache::new(&engine, CompileCache::default_dir());
        Ok(Self { engine, cache, corpora: std::sync::Mutex::new(None) })
    }

    /// Opens `workspace` for one session, as [`open`] would for a process of
    /// its own; `Err` says why it needs a process of its own instead (its
    /// index is in a shared store, or its config names another model than the
    /// other sessions'), or why it cannot be opened.
    pub fn open(&self, workspace: &Path) -> Result<Runner, String> {
        let (loader, setup, model) =
            load(workspace, self.engine.clone(), self.cache.clone()).map_err(|e| format!("{e:#}"))?;
        // The service is started with no store named: only a config can name one.
        match shared_collection(&setup.config, setup.workspaces.served(), &StoreArgs::default()) {
            Ok(None) => {}
            Ok(Some(_)) => return Err("its index is in a shared store".into()),
            Err(e) => return Err(format!("{e:#}")),
        }
        let mut kept = self.corpora.lock().unwrap_or_else(|e| e.into_inner());
        let corpora = kept.get_or_insert_with(|| {
            Arc::new(Corpora::new(Arc::new(shared_embedder(&setup.config, model.clone())), Options::SERVER))
        });
        if corpora.embedder().dir() != model {
            return Err(format!(
                "its config names the model {}, the other sessions' is {}",
                model.display(),
                corpora.embedder().dir().display()
            ));
        }
        // The cap is the user's: the latest session's config has it as it is now.
        corpora.embedder().cache().set_max_bytes(setup.config.cache().max_bytes);
        Ok(Runner::new(setup, Some(loader), corpora.clone()))
    }

    /// Closes every workspace's corpus but those `served()` names (a call may
    /// have opened another the user allows) and returns once none of them
    /// writes to its workspace any more: a workspace no session serves may
    /// be deleted as soon as its agent's server exits (a removed worktree, a
    /// temporary folder). The model stays loaded for the next session; a
    /// corpus opens again in milliseconds.
    pub fn keep_only(&self, served: impl FnOnce() -> Vec<PathBuf>) {
        let corpora = self.corpora.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(corpora) = corpora {
            // A session ended: the lookups it made are counted in the cache file now.
            corpora.embedder().cache().flush();
            corpora.retain(served);
        }
    }

    /// The service is ending: every corpus closed, the stores kept open too
    /// ([`Corpora::stop`]).
    pub fn stop(&self) {
        let corpora = self.corpora.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(corpora) = corpora {
            corpora.stop();
        }
    }
}
