//! Shared guest library for ragbox tool components.
//!
//! A tool crate implements [`tool::Tool`] and calls [`export_tool!`]; this crate
//! gives it the generated bindings and, by concern:
//! - [`tool`]: the scaffolding every tool is built on (arguments, logs, budgets);
//! - [`indexing`]: reading the workspace into the index (walk, chunk, embed);
//! - [`search`]: searching the index (by meaning, by keyword, fused, per file);
//! - [`conventions`]: how each documented tool set answers (its error shape,
//!   its source objects and filters).

// One way down: tool ← indexing ← search ← conventions (a folder uses only
// the ones before it, and the bindings at the root).
pub mod conventions;
pub mod indexing;
pub mod search;
pub mod tool;

/// What the modules' unit tests share.
#[cfg(test)]
mod fixtures {
    use crate::corpus::Document;

    /// A stored document at `path`: one markdown chunk, nothing else known.
    pub fn document(path: &str) -> Document {
        Document {
            path: path.into(),
            content_hash: "h".into(),
            size: 1,
            mtime: 0,
            kind: "markdown".into(),
            title: None,
            conversation_type: None,
            date: None,
            metadata: Vec::new(),
            embedded_at: 0,
            model_id: "m".into(),
            chunks: 1,
        }
    }
}

/// Bindings generated from `wit/` for the `tool` world.
#[allow(missing_docs, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "tool",
        path: "../../wit",
        pub_export_macro: true,
        default_bindings_module: "ragbox_sdk::bindings",
    });
}

pub use bindings::ragbox::tools::types::{Annotations, CallError, Error, ErrorCode, ToolInfo};
pub use bindings::ragbox::tools::{corpus, documents, embedder, extract, fulltext, host, vectors};
pub use bindings::{Guest, export};
/// The result and error shapes the host reads back.
pub use ragbox_protocol as protocol;

/// Tools that answer in text keep the host's message (it says what to do).
impl From<Error> for String {
    fn from(e: Error) -> Self {
        e.message
    }
}

/// A result as the JSON text a tool returns. (Its types hold strings,
/// numbers and maps with string keys, which always serialize.)
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| unreachable!("a result did not serialize: {e}"))
}

/// The host's message, for the tools' own error shapes.
impl AsRef<str> for Error {
    fn as_ref(&self) -> &str {
        &self.message
    }
}
