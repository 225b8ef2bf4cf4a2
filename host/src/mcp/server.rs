//! The rmcp server handler: `tools/list` from the catalog, `tools/call` into
//! the runtime.

use super::progress;
use super::reply::to_result;
use crate::config::Config;
use crate::corpus::Corpora;
use crate::runtime::{CallEnv, Catalog, Failure, LoadedTool, Outcome};
use crate::workspace::{WORKSPACE_ARG, Workspaces};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use std::sync::Arc;

/// The ragbox MCP server for one workspace.
#[derive(Clone)]
pub struct RagboxServer {
    inner: Arc<Inner>,
}

struct Inner {
    catalog: Catalog,
    tools: Vec<Tool>,
    workspaces: Workspaces,
    config: Config,
    corpora: Arc<Corpora>,
}

impl RagboxServer {
    /// A server offering the tools in `catalog` for `workspaces`, on their indexes in `corpora`.
    pub fn new(catalog: Catalog, workspaces: Workspaces, config: Config, corpora: Arc<Corpora>) -> Self {
        let tools = catalog.tools().iter().filter_map(mcp_tool).collect();
        Self { inner: Arc::new(Inner { catalog, tools, workspaces, config, corpora }) }
    }

    /// The tools as `tools/list` shows them.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }
}

/// Serves MCP over stdin/stdout until the client disconnects.
pub async fn serve_stdio(server: RagboxServer) -> anyhow::Result<()> {
    let running = server.serve(rmcp::transport::stdio()).await?;
    let reason = running.waiting().await?;
    tracing::info!("client disconnected ({reason:?})");
    Ok(())
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
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
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = self.inner.catalog.get(&request.name).cloned() else {
            let names: Vec<&str> = self.inner.catalog.tools().iter().map(LoadedTool::name).collect();
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
