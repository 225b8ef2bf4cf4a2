//! The rmcp server handler: `tools/list` from the catalog, `tools/call` into
//! the runtime. While serving, the tools folders and the config files are
//! watched: a component added, changed or removed, or a config edited, reloads
//! the config and the catalog and, when the list changed, tells the clients
//! (`notifications/tools/list_changed`).

use super::profile::{Offer, Profile};
use super::progress;
use super::reply::{failed, to_result};
use super::stdio::Flow;
use crate::logs;
use crate::memory::{self, Idle};
use crate::resources::skills::Skills;
use crate::resources::{Body, ResourceError, Resources};
use crate::runtime::{
    Called, Caller, Failure, LoadedTool, Outcome, Reload, Request, Runner, Setup, Source, UnknownTool,
};
use crate::workspace::Workspaces;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode, GetSkillRequestParams,
    GetSkillResult, Implementation, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, RequestId, Resource, ResourceContents,
    ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the tools folders are looked at while serving.
const TOOLS_POLL: Duration = Duration::from_secs(1);

/// The ragbox MCP server for one workspace.
#[derive(Clone)]
pub struct RagboxServer {
    inner: Arc<Inner>,
}

/// Resource requests served at once (the rest wait their turn).
const RESOURCE_SLOTS: usize = 4;

/// Longest a session whose client left waits for its work (cancelled calls,
/// the warm-up) to end before it ends anyway.
const FINISH_WAIT: Duration = Duration::from_secs(60);

/// What a session has running (calls, resource reads, the warm-up, the
/// watch and the tools poll), counted so that it can wait for all of it
/// once its client is gone: a session that ended leaves nothing running.
#[derive(Default)]
struct Running(tokio::sync::watch::Sender<usize>);

/// One piece of a session's work, counted until dropped.
struct Held(Arc<Running>);

impl Running {
    fn hold(self: &Arc<Self>) -> Held {
        self.0.send_modify(|n| *n += 1);
        Held(self.clone())
    }

    /// Returns once nothing is running (false when `within` passed first).
    async fn finished(&self, within: Duration) -> bool {
        let mut count = self.0.subscribe();
        tokio::time::timeout(within, count.wait_for(|n| *n == 0)).await.is_ok()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.0.send_modify(|n| *n -= 1);
    }
}

struct Inner {
    runner: Arc<Runner>,
    /// What `tools/list` offers (`--tools`, `--output-schemas`).
    offer: Offer,
    /// Resource reads and lists at once: each may hold a file of up to
    /// `MAX_READ_BYTES` (and its JSON) in memory, until its answer is
    /// written (over stdio: see `stdio::Flow`).
    resource_slots: Arc<tokio::sync::Semaphore>,
    /// The stdio session's requests in flight (none over HTTP).
    flow: std::sync::OnceLock<Arc<Flow>>,
    /// Every client that finished `initialize`, told when the tool list changes.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// The `tools/list` entries, made once per setup: HTTP asks for a tool's
    /// entry on every request.
    listing: Mutex<Listing>,
    /// Calls, resource reads and the warm-up in flight: freed memory goes
    /// back to the OS once they have all been over a while.
    idle: Arc<Idle>,
    /// Where the session's log lines also go (a per-user service's session: its relay).
    log: Option<logs::Sink>,
    /// The session's work in flight.
    running: Arc<Running>,
}

/// The `tools/list` entries and the setup they were made from.
#[derive(Default)]
struct Listing {
    setup: Option<Arc<Setup>>,
    tools: Arc<Vec<Tool>>,
}

/// The `tools/list` entries of a setup, as `offer` says.
fn tools_of(setup: &Setup, offer: &Offer) -> Vec<Tool> {
    let listed = setup.catalog.tools().iter().filter(|t| offered(&offer.tools, t));
    listed.filter_map(|t| mcp_tool(t, offer.output_schemas)).collect()
}

/// Whether `profile` offers `tool`.
fn offered(profile: &Profile, tool: &LoadedTool) -> bool {
    profile.offers(tool.name(), matches!(tool.source, Source::BuiltIn(_)))
}

impl RagboxServer {
    /// A server whose calls `runner` makes, listing what `offer` says.
    pub fn new(runner: Arc<Runner>, offer: Offer) -> Self {
        Self::sharing(runner, offer, Arc::default(), None)
    }

    /// The same, one of several in this process: freed memory goes back to
    /// the OS only once all that share `idle` have been idle a while (the
    /// release drops caches a call of another may be using); what its work
    /// logs also goes to `log`.
    pub fn sharing(runner: Arc<Runner>, offer: Offer, idle: Arc<Idle>, log: Option<logs::Sink>) -> Self {
        Self {
            inner: Arc::new(Inner {
                runner,
                offer,
                resource_slots: Arc::new(tokio::sync::Semaphore::new(RESOURCE_SLOTS)),
                flow: std::sync::OnceLock::new(),
                peers: Mutex::new(Vec::new()),
                listing: Mutex::default(),
                idle,
                log,
                running: Arc::default(),
            }),
        }
    }

    /// The `tools/list` entries of the setup in force.
    fn tools(&self) -> Arc<Vec<Tool>> {
        let setup = self.inner.runner.setup();
        let mut listing = self.inner.listing.lock().unwrap_or_else(|e| e.into_inner());
        if !listing.setup.as_ref().is_some_and(|made_from| Arc::ptr_eq(made_from, &setup)) {
            *listing = Listing { tools: Arc::new(tools_of(&setup, &self.inner.offer)), setup: Some(setup) };
        }
        listing.tools.clone()
    }

    /// Loads the config and the catalog again; true when the tool list changed.
    fn reload(&self) -> bool {
        let runner = &self.inner.runner;
        let before = self.tools();
        if let Err(e) = runner.reload() {
            tracing::error!("config or tools changed but cannot be loaded; still serving the last ones: {e}");
            return false;
        }
        let changed = before != self.tools();
        let fresh = runner.setup();
        let names: Vec<&str> = fresh.catalog.tools().iter().map(LoadedTool::name).collect();
        let rejected = fresh.catalog.rejected().len();
        tracing::info!(tools = ?names, rejected, changed, "config and tools reloaded");
        changed
    }

    /// Starts warming up the served workspace's model and indexes and the
    /// tool most sessions call first, and following the tools folders (until
    /// `stop` fires); returns the served workspace's corpus, for its watch
    /// (see `session::start_background`).
    pub(super) fn start_warm_up(&self, stop: &CancellationToken) -> Arc<crate::corpus::Corpus> {
        let corpus = self.inner.runner.corpus(self.workspaces().served());
        // The served workspace's model and indexes, loaded before the first question needs them.
        let warming = corpus.clone();
        let setup = self.inner.runner.setup();
        let busy = self.inner.idle.busy();
        drop(self.blocking(move || {
            let _busy = busy;
            let started = std::time::Instant::now();
            // The tool most sessions call first, linked ahead; a failure is left to its first call.
            if let Err(e) = setup.catalog.link_first_called() {
                tracing::debug!("first-called tool not linked ahead: {e}");
            }
            match warming.warm() {
                Ok(()) => tracing::debug!(ms = started.elapsed().as_millis() as u64, "warmed up"),
                // The first call that needs it says what is wrong, with the fix.
                Err(e) => tracing::debug!("not warmed up: {e}"),
            }
        }));
        if let Some(loader) = self.inner.runner.loader() {
            let (server, stop) = (self.clone(), stop.clone());
            self.spawn(async move { stop.run_until_cancelled(watch_tools(server, loader)).await });
        }
        corpus
    }

    /// Runs `work` on a blocking thread, what it logs the session's (see `logs.rs`).
    pub(crate) fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        let (log, held) = (self.inner.log.clone(), self.inner.running.hold());
        tokio::task::spawn_blocking(move || {
            let _held = held;
            logs::with(log.as_ref(), work)
        })
    }

    /// Runs `task` beside the clients, what it logs the session's.
    pub(super) fn spawn<F: Future<Output: Send + 'static> + Send + 'static>(&self, task: F) {
        let held = self.inner.running.hold();
        tokio::spawn(logs::tagged(self.inner.log.clone(), async move {
            let _held = held;
            task.await
        }));
    }

    /// The stdio session's requests in flight, told to the framing.
    pub(super) fn set_flow(&self, flow: Arc<Flow>) {
        let _ = self.inner.flow.set(flow);
    }

    /// Returns once the session's work has ended (its calls were cancelled
    /// with its client's leaving, its background stopped), or [`FINISH_WAIT`]
    /// has passed.
    pub(super) async fn finish(&self) {
        if !self.inner.running.finished(FINISH_WAIT).await {
            tracing::warn!("work of a session whose client left was still running after {} s", FINISH_WAIT.as_secs());
        }
    }

    /// The clients still connected.
    fn live_peers(&self) -> Vec<Peer<RoleServer>> {
        let mut peers = self.inner.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers.retain(|p| !p.is_transport_closed());
        peers.clone()
    }

    /// Tells every connected client that the tool list changed.
    async fn notify_tool_list_changed(&self) {
        for peer in self.live_peers() {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::warn!("cannot tell a client the tool list changed: {e}");
            }
        }
    }

    /// Tells every connected client that the resource list (the indexed
    /// documents, the skills' files) may have changed.
    pub(crate) async fn notify_resource_list_changed(&self) {
        for peer in self.live_peers() {
            if let Err(e) = peer.notify_resource_list_changed().await {
                tracing::debug!("cannot tell a client the resource list changed: {e}");
            }
        }
    }

    /// The served workspace and the others calls may name, as configured now.
    pub(crate) fn workspaces(&self) -> Workspaces {
        self.inner.runner.setup().workspaces.clone()
    }

    /// Runs `work` on the served workspace's resources, as [`Self::with_workspace`].
    async fn with_resources<T: Send + 'static>(
        &self,
        id: &RequestId,
        work: impl FnOnce(&Resources<'_>) -> Result<T, ResourceError> + Send + 'static,
    ) -> Result<T, McpError> {
        self.with_workspace(id, move |served, corpus| work(&Resources::new(served, corpus))).await
    }

    /// Runs `work` on the served workspace's skills, as [`Self::with_workspace`].
    async fn with_skills<T: Send + 'static>(
        &self,
        id: &RequestId,
        work: impl FnOnce(&Skills<'_>) -> Result<T, ResourceError> + Send + 'static,
    ) -> Result<T, McpError> {
        self.with_workspace(id, move |served, corpus| work(&Skills::new(served, corpus)?)).await
    }

    /// Runs `work` on the served workspace and its index on a blocking
    /// thread (the index is read from disk), one of [`RESOURCE_SLOTS`] at a
    /// time, its error made MCP's. Over stdio its slot is kept until the
    /// answer to request `id` is written: a client that reads nothing stops
    /// being served after a few.
    async fn with_workspace<T: Send + 'static>(
        &self,
        id: &RequestId,
        work: impl FnOnce(&std::path::Path, &crate::corpus::Corpus) -> Result<T, ResourceError> + Send + 'static,
    ) -> Result<T, McpError> {
        let _held = self.inner.running.hold();
        let slot = self
            .inner
            .resource_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| McpError::internal_error(format!("resource slots closed: {e}"), None))?;
        let runner = self.inner.runner.clone();
        let _busy = self.inner.idle.busy();
        let done = self
            .blocking(move || {
                let served = runner.setup().workspaces.served().to_path_buf();
                let corpus = runner.corpus(&served);
                let done = work(&served, &corpus);
                memory::release_thread();
                done
            })
            .await
            .map_err(|e| McpError::internal_error(format!("resource task failed: {e}"), None))?;
        if let Some(flow) = self.inner.flow.get() {
            flow.hold_until_answered(id, slot);
        }
        done.map_err(|e| match e {
            ResourceError::Invalid(m) => McpError::invalid_params(m, None),
            ResourceError::NotFound(m) => McpError::resource_not_found(m, None),
            other => McpError::internal_error(other.to_string(), None),
        })
    }

    /// Returns once the server has run nothing (warm-up, calls) for `quiet`.
    pub(crate) async fn quiet(&self, quiet: Duration) {
        self.inner.idle.quiet(quiet).await
    }

    /// Runs the tool `name` on a blocking thread: a client's call or the
    /// server's own (the file watcher).
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        request: Request,
    ) -> Result<Result<Called, UnknownTool>, Failure> {
        let (runner, owned) = (self.inner.runner.clone(), name.to_string());
        let _busy = self.inner.idle.busy();
        let (called, changed) = self
            .blocking(move || {
                // A tool that may write (embed_workspace, the watcher's runs, a
                // granted third party): did the served index's generation move?
                let setup = runner.setup();
                let writes = setup.catalog.get(&owned).is_some_and(|t| !t.read_only());
                let corpus = writes.then(|| runner.corpus(setup.workspaces.served()));
                let generation = || corpus.as_ref().and_then(|c| c.stats().ok()).map(|s| s.generation);
                let before = generation();
                let called = runner.call(&owned, arguments, request);
                memory::release_thread();
                (called, writes && generation() != before)
            })
            .await
            .map_err(|e| Failure::Setup {
                tool: name.to_string(),
                reason: format!("the call failed inside the host: {e}"),
            })?;
        if changed {
            self.notify_resource_list_changed().await;
        }
        Ok(called)
    }
    /// A client's `tools/call`, its log lines the session's (see `call_tool`).
    async fn tool_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (progress, forwarding) = match context.meta.get_progress_token() {
            Some(token) => {
                let (sink, task) = progress::forwarder(context.peer.clone(), token, context.ct.clone());
                (Some(sink), Some(task))
            }
            None => (None, None),
        };
        let setup = self.inner.runner.setup();
        if let Some(tool) = setup.catalog.get(&request.name).filter(|t| !offered(&self.inner.offer.tools, t)) {
            let message = format!(
                "tool '{}' is not offered by this server (--tools {}): start it with --tools all, or name the tool in --tools",
                tool.name(),
                self.inner.offer.tools.shown()
            );
            return Err(McpError::invalid_params(message, None));
        }
        let arguments = request.arguments.unwrap_or_default();
        let call = Request { caller: Caller::Client, cancel: context.ct.clone(), progress, timings: None };
        let started = std::time::Instant::now();
        let called = self.call(&request.name, arguments, call).await;
        // The call is over and its sink dropped: let the last reports go out first.
        if let Some(task) = forwarding {
            let _ = task.await;
        }
        let Called { tool, outcome, .. } = match called {
            Ok(Ok(called)) => called,
            Ok(Err(unknown)) => return Err(McpError::invalid_params(unknown.to_string(), None)),
            Err(failure) => {
                tracing::warn!("{failure}");
                return Ok(failed(failure).into());
            }
        };
        let elapsed_ms = started.elapsed().as_millis() as u64;
        tracing::debug!(tool = tool.name(), elapsed_ms, "call finished");
        // A tool that heeds `cancelled()` returns normally; say so, as the host
        // does when it has to interrupt one (no response goes out either way).
        if context.ct.is_cancelled() && !matches!(outcome, Outcome::Failed(Failure::Cancelled { .. })) {
            tracing::info!(
                tool = tool.name(),
                elapsed_ms,
                "tool '{}' was cancelled by the client and stopped",
                tool.name()
            );
        }
        Ok(to_result(&tool, outcome).into())
    }
}

/// Reloads the config and the catalog whenever the tools folders or the
/// config files change, once a change has settled (a component still being
/// copied is not loaded half-written).
async fn watch_tools(server: RagboxServer, loader: Arc<dyn Reload>) {
    let fingerprint = |l: &Arc<dyn Reload>| {
        let l = l.clone();
        let looked = server.blocking(move || l.fingerprint());
        async move { looked.await.unwrap_or_default() }
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
        let s = server.clone();
        let changed = server.blocking(move || s.reload()).await.unwrap_or(false);
        if changed {
            server.notify_tool_list_changed().await;
        }
    }
}

/// The MCP description of a loaded tool, with its output schema when asked.
fn mcp_tool(tool: &LoadedTool, output_schema: bool) -> Option<Tool> {
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
    if let Some(out) = info.output_schema.as_deref().filter(|_| output_schema).and_then(parse) {
        value["outputSchema"] = lean(out);
    }
    serde_json::from_value(value)
        .inspect_err(|e| tracing::warn!(tool = tool.name(), "cannot describe tool to MCP: {e}"))
        .ok()
}

/// An output schema without its prose (`description`, `title`,
/// `examples`): clients validate results against it, and a model reads the
/// result itself. A third of `tools/list`'s bytes were those descriptions.
fn lean(schema: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match schema {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(key, _)| !matches!(key.as_str(), "description" | "title" | "examples"))
                .map(|(key, value)| {
                    let value = match (key.as_str(), value) {
                        // Maps from names to schemas: the names are data, kept as they are.
                        ("properties" | "patternProperties" | "$defs" | "definitions", Value::Object(named)) => {
                            Value::Object(named.into_iter().map(|(name, s)| (name, lean(s))).collect())
                        }
                        // Values, not schemas.
                        ("enum" | "const" | "default" | "required", v) => v,
                        (_, v) => lean(v),
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(lean).collect()),
        other => other,
    }
}

impl ServerHandler for RagboxServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_skills_with_directory_read()
                .build(),
        )
        .with_server_info(Implementation::new("ragbox", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "ragbox serves the workspace {}: search it by keyword and meaning, and see what is indexed. \
                 Every tool runs in a sandbox that sees this workspace read-only.",
            self.inner.runner.setup().workspaces.served().display()
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
        Ok(ListToolsResult::with_all_items(self.tools().to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let _held = self.inner.running.hold();
        // rmcp runs this on a task of its own: what it logs is the session's.
        logs::tagged(self.inner.log.clone(), self.tool_call(request, context)).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        let page = self.with_resources(&context.id, move |r| r.list(cursor.as_deref())).await?;
        let resources = page
            .entries
            .into_iter()
            .map(|e| {
                let mut resource = Resource::new(e.uri, e.name).with_mime_type(e.mime).with_size(e.size);
                if let Some(title) = e.title {
                    resource = resource.with_title(title);
                }
                if let Some(description) = e.description {
                    resource = resource.with_description(description);
                }
                resource
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = page.next;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let served = self.inner.runner.setup().workspaces.served().to_path_buf();
        let root = url::Url::from_directory_path(&served).map(|u| u.to_string()).unwrap_or_default();
        let templates = vec![
            ResourceTemplate::new(format!("{root}{{+path}}"), "file")
                .with_description("A file of the served workspace, by its path in it (links are not followed)"),
            ResourceTemplate::new("skill://{+path}", "skill").with_description(
                "A file of a skill (MCP's Skills extension: skills/list names them), by its skill path and its path \
                 in the skill: skill://<skill-path>/SKILL.md and the files beside it",
            ),
        ];
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let contents = self.with_resources(&context.id, move |r| r.read(&uri)).await?;
        let item = match contents.body {
            Body::Text(text) => ResourceContents::text(text, contents.uri),
            Body::Binary(bytes) => {
                use base64::Engine as _;
                ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), contents.uri)
            }
        }
        .with_mime_type(contents.mime);
        Ok(ReadResourceResult::new(vec![item]).into())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(super::skills::unread_params(&request.method)
            .unwrap_or_else(|| McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)))
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        let page = self.with_skills(&context.id, move |s| s.list(cursor.as_deref())).await?;
        super::skills::list_result(page, &context)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let entry = self.with_skills(&context.id, move |s| s.get(&request.uri)).await?;
        super::skills::get_result(entry, &context)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        let ReadResourceDirectoryRequestParams { uri, cursor, .. } = request;
        let page = self.with_skills(&context.id, move |s| s.directory(&uri, cursor.as_deref())).await?;
        Ok(super::skills::directory_result(page))
    }
}
