//! The rmcp server handler: `tools/list` from the catalog, `tools/call` into
//! the runtime. While serving, the tools folders and the config files are
//! watched: a component added, changed or removed, or a config edited, reloads
//! the config and the catalog and, when the list changed, tells the clients
//! (`notifications/tools/list_changed`).

use super::progress;
use super::reply::to_result;
use crate::config::{Config, Grants};
use crate::corpus::Corpora;
use crate::runtime::{CallEnv, Caller, Catalog, Failure, Fingerprint, LoadedTool, Outcome};
use crate::workspace::{WORKSPACE_ARG, Workspaces};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the tools folders are looked at while serving.
const TOOLS_POLL: Duration = Duration::from_secs(1);

/// The ragbox MCP server for one workspace.
#[derive(Clone)]
pub struct RagboxServer {
    inner: Arc<Inner>,
}

struct Inner {
    /// Replaced whole when the tools folders or the config change; calls keep
    /// the setup they started with.
    listing: RwLock<Arc<Listing>>,
    loader: Option<Arc<dyn Reload>>,
    corpora: Arc<Corpora>,
    /// Every client that finished `initialize`, told when the tool list changes.
    peers: Mutex<Vec<Peer<RoleServer>>>,
}

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

/// Loads a fresh [`Setup`] when the files it comes from change.
pub trait Reload: Send + Sync {
    /// The setup as the files say now; `Err` (a bad config edit) keeps the last one.
    fn load(&self) -> Result<Setup, String>;
    /// What the files it is loaded from look like now.
    fn fingerprint(&self) -> Fingerprint;
}

/// A setup and its `tools/list` entries.
struct Listing {
    setup: Setup,
    tools: Vec<Tool>,
}

impl Listing {
    fn new(setup: Setup) -> Arc<Self> {
        let tools = setup.catalog.tools().iter().filter_map(mcp_tool).collect();
        Arc::new(Self { setup, tools })
    }
}

impl RagboxServer {
    /// A server offering `setup`, on the indexes in `corpora`; with a
    /// `loader`, it follows the tools folders and the config files.
    pub fn new(setup: Setup, loader: Option<Arc<dyn Reload>>, corpora: Arc<Corpora>) -> Self {
        let listing = RwLock::new(Listing::new(setup));
        let peers = Mutex::new(Vec::new());
        Self { inner: Arc::new(Inner { listing, loader, corpora, peers }) }
    }

    fn listing(&self) -> Arc<Listing> {
        // A poisoned lock only means a reload panicked; the last listing is still whole.
        self.inner.listing.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Loads the config and the catalog again; true when the tool list changed.
    fn reload(&self, loader: &dyn Reload) -> bool {
        let fresh = match loader.load() {
            Ok(setup) => Listing::new(setup),
            Err(e) => {
                tracing::error!("config or tools changed but cannot be loaded; still serving the last ones: {e}");
                return false;
            }
        };
        let mut listing = self.inner.listing.write().unwrap_or_else(|e| e.into_inner());
        let changed = listing.tools != fresh.tools;
        let names = |l: &Listing| l.setup.catalog.tools().iter().map(|t| t.name().to_string()).collect::<Vec<_>>();
        let rejected = fresh.setup.catalog.rejected().len();
        tracing::info!(tools = ?names(&fresh), rejected, changed, "config and tools reloaded");
        *listing = fresh;
        changed
    }

    /// Starts what runs beside the clients: following the tools folders and,
    /// with `watch`, the workspace. Both stop when `stop` fires.
    pub fn start_background(&self, watch: bool, stop: &CancellationToken) {
        if let Some(loader) = self.inner.loader.clone() {
            let (server, stop) = (self.clone(), stop.clone());
            tokio::spawn(async move { stop.run_until_cancelled(watch_tools(server, loader)).await });
        }
        if watch {
            tokio::spawn(super::follow::follow(self.clone(), stop.clone()));
        }
    }

    /// Tells every connected client that the tool list changed.
    async fn notify_tool_list_changed(&self) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.inner.peers.lock().unwrap_or_else(|e| e.into_inner());
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
        };
        for peer in peers {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::warn!("cannot tell a client the tool list changed: {e}");
            }
        }
    }

    /// The served workspace and the others calls may name, as configured now.
    pub(crate) fn workspaces(&self) -> Workspaces {
        self.listing().setup.workspaces.clone()
    }

    /// Runs the tool `name` in the served workspace on the server's own
    /// behalf (the file watcher), with the grants and limits config gives it.
    pub(crate) async fn call_own(
        &self,
        name: &str,
        arguments: serde_json::Value,
        caller: Caller,
        cancel: CancellationToken,
    ) -> Result<Outcome, String> {
        let listing = self.listing();
        let tool = listing.setup.catalog.get(name).cloned().ok_or_else(|| {
            format!("the tool {name} is not loaded (is it disabled under [tools.{name}] in a config.toml?)")
        })?;
        let served = listing.setup.workspaces.served().to_path_buf();
        let corpus = self.inner.corpora.get(&served);
        let mut env = CallEnv::in_workspace(served, corpus, Grants::default());
        env.cancel = cancel;
        env.caller = caller;
        let run = run(&listing.setup.config, tool, arguments.to_string(), env);
        run.await.map_err(|e| format!("tool {name} failed inside the host: {e}"))
    }
}

/// Runs `tool` in `env` on a blocking thread with the grants and limits
/// `config` gives it (whatever `env.grants` held): how every call runs, a
/// client's or the server's own.
async fn run(
    config: &Config,
    tool: LoadedTool,
    arguments: String,
    mut env: CallEnv,
) -> Result<Outcome, tokio::task::JoinError> {
    env.grants = config.grants_for(tool.name(), tool.default_grants());
    let limits = config.limits_for(tool.name(), tool.indexing());
    tokio::task::spawn_blocking(move || tool.call(&arguments, env, &limits)).await
}

/// Serves MCP over stdin/stdout until the client disconnects.
pub async fn serve_stdio(server: RagboxServer, watch: bool) -> anyhow::Result<()> {
    let stop = CancellationToken::new();
    server.start_background(watch, &stop);
    let (transport, writer) = super::stdio::framed(tokio::io::stdin(), tokio::io::stdout());
    let running = server.serve(transport).await?;
    let reason = running.waiting().await?;
    stop.cancel();
    // The last replies out before the process ends.
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    tracing::info!("client disconnected ({reason:?})");
    Ok(())
}

/// Reloads the config and the catalog whenever the tools folders or the
/// config files change, once a change has settled (a component still being
/// copied is not loaded half-written).
async fn watch_tools(server: RagboxServer, loader: Arc<dyn Reload>) {
    let fingerprint = |l: &Arc<dyn Reload>| {
        let l = l.clone();
        async move { tokio::task::spawn_blocking(move || l.fingerprint()).await.unwrap_or_default() }
    };
    let mut seen = fingerprint(&loader).await;
    loop {
        tokio::time::sleep(TOOLS_POLL).await;
        let now = fingerprint(&loader).await;
        if now == seen {
            continue;
        }
        tokio::time::sleep(TOOLS_POLL / 2).await;
        let settled = fingerprint(&loader).await;
        if settled != now {
            continue; // still changing: look again next round
        }
        seen = settled;
        let (s, l) = (server.clone(), loader.clone());
        let changed = tokio::task::spawn_blocking(move || s.reload(&*l)).await.unwrap_or(false);
        if changed {
            server.notify_tool_list_changed().await;
        }
    }
}

/// The MCP description of a loaded tool.
fn mcp_tool(tool: &LoadedTool) -> Option<Tool> {
    let info = &tool.info;
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).ok();
    let a = &info.annotations;
    let mut value = json!({
        "name": info.name,
        "description": info.description,
        "inputSchema": parse(&info.input_schema)?,
        "annotations": {
            "readOnlyHint": a.read_only,
            "destructiveHint": a.destructive,
            "idempotentHint": a.idempotent,
            "openWorldHint": a.open_world,
        },
    });
    if let Some(title) = &info.title {
        value["title"] = json!(title);
        value["annotations"]["title"] = json!(title);
    }
    if let Some(out) = info.output_schema.as_deref().and_then(parse) {
        value["outputSchema"] = out;
    }
    serde_json::from_value(value)
        .inspect_err(|e| tracing::warn!(tool = tool.name(), "cannot describe tool to MCP: {e}"))
        .ok()
}

impl ServerHandler for RagboxServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("ragbox", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "ragbox serves the workspace {}: search it by keyword and meaning, and see what is indexed. \
                 Every tool runs in a sandbox that sees this workspace read-only.",
                self.listing().setup.workspaces.served().display()
            ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut peers = self.inner.peers.lock().unwrap_or_else(|e| e.into_inner());
        // HTTP clients come and go: forget the ones that left.
        peers.retain(|p| !p.is_transport_closed());
        peers.push(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.listing().tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listing().tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let listing = self.listing();
        let Some(tool) = listing.setup.catalog.get(&request.name).cloned() else {
            let names: Vec<&str> = listing.setup.catalog.tools().iter().map(LoadedTool::name).collect();
            return Err(McpError::invalid_params(
                format!("unknown tool '{}'; available: {}", request.name, names.join(", ")),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        // A non-string workspace_path is left for the tool to reject in its own words.
        let workspace = listing.setup.workspaces.resolve(arguments.get(WORKSPACE_ARG).and_then(|v| v.as_str()));
        let arguments = serde_json::Value::Object(arguments).to_string();
        let (progress, forwarding) = match context.meta.get_progress_token() {
            Some(token) => {
                let (sink, task) = progress::forwarder(context.peer.clone(), token, context.ct.clone());
                (Some(sink), Some(task))
            }
            None => (None, None),
        };
        let corpus = workspace.as_ref().ok().map(|dir| self.inner.corpora.get(dir));
        let grants = Grants::default();
        let cancel = context.ct.clone();
        let env = CallEnv { workspace, corpus, grants, progress, cancel, caller: Caller::Client, timings: None };
        let started = std::time::Instant::now();
        let outcome = run(&listing.setup.config, tool.clone(), arguments, env).await;
        // The call is over and its sink dropped: let the last reports go out first.
        if let Some(task) = forwarding {
            let _ = task.await;
        }
        let elapsed_ms = started.elapsed().as_millis() as u64;
        tracing::debug!(tool = tool.name(), elapsed_ms, "call finished");
        // A tool that heeds `cancelled()` returns normally; say so, as the host
        // does when it has to interrupt one (no response goes out either way).
        if context.ct.is_cancelled() && !matches!(outcome, Ok(Outcome::Failed(Failure::Cancelled { .. }))) {
            tracing::info!(
                tool = tool.name(),
                elapsed_ms,
                "tool '{}' was cancelled by the client and stopped",
                tool.name()
            );
        }
        let result = match outcome {
            Ok(outcome) => to_result(&tool, outcome),
            Err(e) => rmcp::model::CallToolResult::error(vec![ContentBlock::text(format!(
                "tool '{}' failed inside the host: {e}",
                tool.name()
            ))]),
        };
        Ok(result.into())
    }
}
