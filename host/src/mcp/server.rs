//! The rmcp server handler: `tools/list` from the catalog, `tools/call` into
//! the runtime. While serving, the tools folders are watched: a component
//! added, changed or removed reloads the catalog and, when the list changed,
//! tells the client (`notifications/tools/list_changed`).

use super::progress;
use super::reply::to_result;
use crate::config::Config;
use crate::corpus::Corpora;
use crate::runtime::{CallEnv, Catalog, CatalogLoader, Failure, LoadedTool, Outcome};
use crate::workspace::{WORKSPACE_ARG, Workspaces};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How often the tools folders are looked at while serving.
const TOOLS_POLL: Duration = Duration::from_secs(1);

/// The ragbox MCP server for one workspace.
#[derive(Clone)]
pub struct RagboxServer {
    inner: Arc<Inner>,
}

struct Inner {
    /// Replaced whole when the tools folders change; calls keep the tool they started with.
    listing: RwLock<Arc<Listing>>,
    loader: Option<CatalogLoader>,
    workspaces: Workspaces,
    config: Config,
    corpora: Arc<Corpora>,
}

/// The loaded tools and their `tools/list` entries.
struct Listing {
    catalog: Catalog,
    tools: Vec<Tool>,
}

impl Listing {
    fn new(catalog: Catalog) -> Arc<Self> {
        let tools = catalog.tools().iter().filter_map(mcp_tool).collect();
        Arc::new(Self { catalog, tools })
    }
}

impl RagboxServer {
    /// A server offering the tools in `catalog` for `workspaces`, on their
    /// indexes in `corpora`; with a `loader`, it follows the tools folders.
    pub fn new(
        catalog: Catalog,
        loader: Option<CatalogLoader>,
        workspaces: Workspaces,
        config: Config,
        corpora: Arc<Corpora>,
    ) -> Self {
        let listing = RwLock::new(Listing::new(catalog));
        Self { inner: Arc::new(Inner { listing, loader, workspaces, config, corpora }) }
    }

    fn listing(&self) -> Arc<Listing> {
        // A poisoned lock only means a reload panicked; the last listing is still whole.
        self.inner.listing.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Loads the catalog again; true when the tool list changed.
    fn reload(&self, loader: &CatalogLoader) -> bool {
        let fresh = Listing::new(loader.load());
        let mut listing = self.inner.listing.write().unwrap_or_else(|e| e.into_inner());
        let changed = listing.tools != fresh.tools;
        let names = |l: &Listing| l.catalog.tools().iter().map(|t| t.name().to_string()).collect::<Vec<_>>();
        tracing::info!(tools = ?names(&fresh), rejected = fresh.catalog.rejected().len(), changed, "tools reloaded");
        *listing = fresh;
        changed
    }
}

/// Serves MCP over stdin/stdout until the client disconnects.
pub async fn serve_stdio(server: RagboxServer) -> anyhow::Result<()> {
    let watched = server.clone();
    let running = server.serve(rmcp::transport::stdio()).await?;
    let watcher = watched.inner.loader.clone().map(|loader| {
        let peer = running.peer().clone();
        tokio::spawn(watch_tools(watched, loader, peer))
    });
    let reason = running.waiting().await?;
    if let Some(w) = watcher {
        w.abort();
    }
    tracing::info!("client disconnected ({reason:?})");
    Ok(())
}

/// Reloads the catalog whenever the tools folders change, once a change has
/// settled (a component still being copied is not loaded half-written).
async fn watch_tools(server: RagboxServer, loader: CatalogLoader, peer: rmcp::Peer<RoleServer>) {
    let fingerprint = |l: &CatalogLoader| {
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
        let changed = tokio::task::spawn_blocking(move || s.reload(&l)).await.unwrap_or(false);
        if changed && let Err(e) = peer.notify_tool_list_changed().await {
            tracing::warn!("cannot tell the client the tool list changed: {e}");
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
                self.inner.workspaces.served().display()
            ))
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
        let Some(tool) = listing.catalog.get(&request.name).cloned() else {
            let names: Vec<&str> = listing.catalog.tools().iter().map(LoadedTool::name).collect();
            return Err(McpError::invalid_params(
                format!("unknown tool '{}'; available: {}", request.name, names.join(", ")),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        // A non-string workspace_path is left for the tool to reject in its own words.
        let workspace = self.inner.workspaces.resolve(arguments.get(WORKSPACE_ARG).and_then(|v| v.as_str()));
        let arguments = serde_json::Value::Object(arguments).to_string();
        let (progress, forwarding) = match context.meta.get_progress_token() {
            Some(token) => {
                let (sink, task) = progress::forwarder(context.peer.clone(), token);
                (Some(sink), Some(task))
            }
            None => (None, None),
        };
        let corpus = workspace.as_ref().ok().map(|dir| self.inner.corpora.get(dir));
        let grants = self.inner.config.grants_for(tool.name(), tool.default_grants());
        let env = CallEnv { workspace, corpus, grants, progress, cancel: context.ct.clone() };
        let limits = self.inner.config.limits_for(tool.name(), !tool.read_only());
        let runner = tool.clone();
        let started = std::time::Instant::now();
        let outcome = tokio::task::spawn_blocking(move || runner.call(&arguments, env, &limits)).await;
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
