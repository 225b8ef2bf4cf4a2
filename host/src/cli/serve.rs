//! `ragbox serve`: MCP over stdio, or Streamable HTTP with `--http`.

use crate::corpus::Options;
use crate::mcp::http::{HttpOptions, TOKEN_FILE, load_or_create_token, serve_http};
use crate::mcp::{Offer, Profile, RagboxServer, serve_stdio};
use crate::setup::{StoreArgs, open};
use anyhow::Context;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// How `serve` was asked to run (its command line, but the workspace).
#[derive(Debug, Default, clap::Args)]
pub struct ServeArgs {
    /// Keep the index in line with the workspace: files created, changed,
    /// deleted or renamed are indexed within seconds (and what changed
    /// while no server watched, at start).
    #[arg(long)]
    pub watch: bool,
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio,
    /// for several agents at once (e.g. 127.0.0.1:8765). Needs the bearer token.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// The bearer token file for --http (default: http-token in your
    /// config folder, created with a fresh token on first start).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// Let --http bind an address other machines can reach.
    #[arg(long, requires = "http")]
    pub allow_public: bool,
    /// Another Host name clients may use with --http (repeatable), e.g. this machine's name.
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// Which tools to offer: all, core (search, search_skills, get_context,
    /// search_similar, embed_workspace, get_embedding_status, and your own
    /// tools), or tool names separated by commas.
    #[arg(long, value_name = "PROFILE", default_value = "all", env = "RAGBOX_TOOLS")]
    pub tools: Profile,
    /// List each tool's output schema too, for clients that validate or
    /// type results (a model reads the result itself; it doubles the list).
    #[arg(long)]
    pub output_schemas: bool,
    /// Serve in this process, not through this user's ragbox service (which
    /// every stdio `serve` shares by default on Linux and macOS: one model,
    /// one copy of each index, for every agent).
    #[arg(long, env = "RAGBOX_STANDALONE", value_parser = clap::builder::BoolishValueParser::new())]
    pub standalone: bool,
}

/// Loads the tools, then serves until the client hangs up (stdio) or the
/// process is stopped (HTTP).
pub fn run(workspace: &Path, args: ServeArgs, store: &StoreArgs) -> anyhow::Result<()> {
    // A folder that cannot be served is this command's error, before anything is logged.
    crate::workspace::Workspaces::new(workspace, &[]).context("cannot open this workspace")?;
    if args.http.is_none() && !args.standalone {
        match relay_to_service(workspace, &args, store) {
            Ok((session, hello)) => return session.relay(&hello),
            Err(why) => tracing::info!("serving in this process: {why}"),
        }
    }
    let started = std::time::Instant::now();
    // Between calls the store stays open (an idle server closes it); what the
    // server's own calls write is indexed for keywords as it lands.
    let runner = std::sync::Arc::new(open(workspace, store, Options::SERVER)?);
    let corpora = runner.corpora().clone();
    let setup = runner.setup();
    let served = setup.workspaces.served();
    tracing::info!(
        workspace = %served.display(),
        tools = setup.catalog.tools().len(),
        rejected = setup.catalog.rejected().len(),
        load_ms = started.elapsed().as_millis() as u64,
        watch = args.watch,
        "serving MCP on {}",
        if args.http.is_some() { "HTTP" } else { "stdio" }
    );
    if let Profile::Named(names) = &args.tools {
        for name in names.iter().filter(|n| setup.catalog.get(n).is_none()) {
            tracing::warn!("--tools names '{name}', which no loaded tool has (yet)");
        }
    }
    let offer = Offer { tools: args.tools, output_schemas: args.output_schemas };
    let server = RagboxServer::new(runner, offer);
    // Calls run on blocking threads; one idle for half a second ends, and the
    // allocator takes back the pages it held, which the idle release then
    // gives to the OS (`memory.rs`). A new thread costs microseconds. The
    // runtime's own threads only move messages: one serves a stdio client
    // (each thread keeps its own allocator pages), two serve HTTP's many.
    let keep_alive = std::time::Duration::from_millis(500);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(if args.http.is_some() { 2 } else { 1 })
        .enable_all()
        .thread_keep_alive(keep_alive)
        .on_thread_park(crate::memory::release_thread)
        .build()?;
    let Some(addr) = args.http else {
        let served = runtime.block_on(serve_stdio(server, args.watch));
        // Closed cleanly once the client hangs up, so the next open need not repair it.
        corpora.stop();
        return served;
    };
    // The user's, never the workspace's: a repository could ship a token it knows.
    let token_file = match args.token_file {
        Some(file) => file,
        None => crate::config::user_config_dir()
            .map(|dir| dir.join(TOKEN_FILE))
            .context("no config dir is known for this user (HOME is unset): pass --token-file FILE")?,
    };
    let (token, fresh) = load_or_create_token(&token_file)?;
    if fresh {
        // Shown this once; afterwards it is only in the file.
        eprintln!("ragbox: new HTTP bearer token (kept in {}):\n{token}", token_file.display());
    } else {
        eprintln!("ragbox: HTTP bearer token in {}", token_file.display());
    }
    let options = HttpOptions { addr, allow_public: args.allow_public, allowed_hosts: args.allowed_hosts };
    let served = runtime.block_on(async move {
        let stop = CancellationToken::new();
        crate::mcp::start_background(&server, args.watch, &stop);
        let served = serve_http(server, options, token, stop.clone()).await;
        stop.cancel();
        served
    });
    corpora.stop();
    Ok(served?)
}

/// This stdio session handed to the user's service, which serves every
/// agent's sessions over one model and one copy of each index; `Err` says
/// why this process serves it itself.
fn relay_to_service(
    workspace: &Path,
    args: &ServeArgs,
    store: &StoreArgs,
) -> Result<(crate::service::Session, crate::service::Hello), String> {
    if store.url.is_some() || store.collection.is_some() {
        return Err("--store names a shared store".into());
    }
    let workspace = crate::platform::canonical(workspace).map_err(|e| format!("{}: {e}", workspace.display()))?;
    let hello = crate::service::Hello {
        ragbox: env!("CARGO_PKG_VERSION").to_string(),
        workspace,
        watch: args.watch,
        tools: args.tools.to_string(),
        output_schemas: args.output_schemas,
    };
    Ok((crate::service::connect(&hello)?, hello))
}
