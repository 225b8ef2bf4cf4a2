//! ragbox: a local retrieval server for AI agents.
//!
//! Data flows one way: `mcp` (the MCP server) → [`runtime`] (sandboxed
//! WebAssembly components) → `capabilities` (the WIT interfaces the host lends
//! to components), which call into [`corpus`] (one workspace's index), and from
//! there into [`embed`], [`index`], [`fulltext`] and [`store`]. [`cli`] is the command-line edge.
//! Modules are public only where the binary or the tests reach them.

mod capabilities;
pub mod cli;
pub mod config;
pub mod corpus;
mod logs;
mod mcp;
mod memory;
mod resources;
pub mod runtime;
mod service;
pub mod setup;
mod walk;
mod watch;
pub mod workspace;

pub use ragbox_engines::{datadir, embed, embed_cache, fulltext, index, postgres, records, store};
use ragbox_engines::{platform, sync, text};

/// Tool and extractor components built from `guest-tools/` and embedded at build time.
pub mod builtins {
    /// One component built into the binary.
    #[derive(Debug, Clone, Copy)]
    pub struct Builtin {
        /// Its crate's name in `guest-tools/`.
        pub name: &'static str,
        /// The component.
        pub bytes: &'static [u8],
        /// The sha256 of `bytes`, hex, computed when they were embedded.
        pub sha256: &'static str,
    }

    include!(concat!(env!("OUT_DIR"), "/builtin_tools.rs"));

    /// Every built-in component: the tools, then the extractors.
    pub fn components() -> Vec<Builtin> {
        BUILTIN_TOOLS.iter().chain(BUILTIN_EXTRACTORS).copied().collect()
    }
}
