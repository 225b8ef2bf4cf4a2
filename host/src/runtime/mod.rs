//! The component runtime: a wasmtime engine, an on-disk compile cache, and the
//! sandbox every tool call runs in (fresh store, read-only workspace, limits).

pub(crate) mod bindings;
mod cache;
mod catalog;
mod component;
mod engine;
mod extract;
mod fs_guard;
mod guard;
mod history;
mod linked;
mod linker;
mod runner;
mod sandbox;
mod stages;
mod stderr;
mod tool;

pub use bindings::ragbox::tools::host::Level;
pub use cache::CompileCache;
pub use catalog::{
    Admit, Catalog, Fingerprint, Found, Loaded, Rejected, describe_limits, fingerprint, load_component, read_component,
    untrusted, wasm_files,
};
pub use component::{Source, WIT_VERSION};
pub use engine::new_engine;
pub use extract::{ExtractFailure, ExtractLimits, Extractors, LoadedExtractor};
pub use history::{CallRecord, History};
use linker::capabilities_linker;
pub use runner::{Called, Reload, Request, Runner, Setup, UnknownTool};
pub use sandbox::{CallEnv, Caller, HostState, Progress, ProgressSink};
pub use stages::{Stage, Stages, StagesSink};
pub use tool::{Failure, LoadedTool, Outcome};

/// Errors loading a component.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The engine could not be configured.
    #[error("cannot start the WebAssembly engine: {0}")]
    Engine(String),
    /// The bytes are not a valid component for this world.
    #[error("cannot compile component {source_name}: {message}")]
    Compile {
        /// Where the component came from.
        source_name: String,
        /// The compiler's message.
        message: String,
    },
    /// The component does not fit the `ragbox:tools/tool` world.
    #[error("component {source_name} does not fit the ragbox tool world: {message}")]
    Link {
        /// Where the component came from.
        source_name: String,
        /// What is missing or mistyped.
        message: String,
    },
    /// `describe()` failed or returned an invalid description.
    #[error("component {source_name} gave an invalid description: {message}")]
    Describe {
        /// Where the component came from.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// Reading a component file failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
