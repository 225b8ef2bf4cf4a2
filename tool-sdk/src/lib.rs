//! Write a ragbox tool component in Rust.
//!
//! A tool is a WebAssembly component of the `tool` world in
//! `ragbox:tools@0.2.2` (this crate's `wit/ragbox.wit`, the file
//! componentize-py and componentize-js read too). This crate carries that
//! contract, its bindings ([`bindings`]), and what every tool repeats:
//! parsing its arguments ([`arguments`]), errors an agent can act on
//! ([`invalid`], [`failed`]), results ([`json`]), path filters
//! ([`PathFilter`]) and paging ([`Page`]).
//!
//! ```ignore
//! use ragbox_tool::{Guest, ToolInfo, CallError};
//!
//! struct Hello;
//!
//! impl Guest for Hello {
//!     fn describe() -> ToolInfo {
//!         ragbox_tool::info("hello", "Says hello.", r#"{"type": "object", "properties": {"name": {"type": "string"}}}"#)
//!     }
//!     fn call(arguments: String) -> Result<String, CallError> {
//!         #[derive(serde::Deserialize)]
//!         struct Args { name: String }
//!         let args: Args = ragbox_tool::arguments(&arguments)?;
//!         ragbox_tool::json(&serde_json::json!({ "greeting": format!("hello, {}", args.name) }))
//!     }
//! }
//!
//! ragbox_tool::export_tool!(Hello);
//! ```
//!
//! Within one `0.MINOR` line the contract only adds: a tool built against
//! this version runs on every later ragbox of the line.

/// The bindings of the `tool` world: the host's interfaces (`host`,
/// `embedder`, `corpus`, `vectors`, `fulltext`) and the types they share.
pub mod bindings {
    wit_bindgen::generate!({
        world: "tool",
        path: "wit",
        pub_export_macro: true,
        export_macro_name: "export_tool",
        default_bindings_module: "ragbox_tool::bindings",
    });
}

pub use bindings::Guest;
/// `export_tool!(T)`: makes `T`, which implements [`Guest`], this component's tool.
pub use bindings::export_tool;
pub use bindings::ragbox::tools::types::{Annotations, CallError, ToolInfo};
pub use bindings::ragbox::tools::{corpus, documents, embedder, extract, fulltext, host, types, vectors};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The version of the contract this crate builds against.
pub const WIT_VERSION: &str = "0.2.2";

/// A tool's description: read-only, idempotent and closed-world annotations
/// (a tool that changes anything says so by changing them).
pub fn info(name: &str, description: &str, input_schema: &str) -> ToolInfo {
    ToolInfo {
        name: name.to_string(),
        title: None,
        description: description.to_string(),
        input_schema: input_schema.to_string(),
        output_schema: None,
        annotations: Annotations { read_only: true, destructive: false, idempotent: true, open_world: false },
    }
}

/// The agent's arguments (a JSON object, as text) as `T`; the error names
/// the field that does not fit, as `invalid-arguments`.
pub fn arguments<T: DeserializeOwned>(json: &str) -> Result<T, CallError> {
    serde_json::from_str(json).map_err(|e| invalid(format!("the arguments do not fit: {e}")))
}

/// Arguments the tool cannot take: `{"error": message}`, as `invalid-arguments`.
pub fn invalid(message: impl Into<String>) -> CallError {
    CallError::InvalidArguments(error_body(message.into()))
}

/// A call that ran and could not do what was asked: `{"error": message}`, as `failed`.
pub fn failed(message: impl Into<String>) -> CallError {
    CallError::Failed(error_body(message.into()))
}

/// A host function's error as the tool's own `failed` error, its message
/// kept (it says what to do, e.g. `not-indexed`: run embed_workspace).
pub fn from_host(error: types::Error) -> CallError {
    failed(error.message)
}

fn error_body(message: String) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// A result as the JSON text `call` returns.
pub fn json<T: Serialize>(value: &T) -> Result<String, CallError> {
    serde_json::to_string(value).map_err(|e| failed(format!("the result cannot be written as JSON: {e}")))
}

/// Which workspace paths a tool looks at: under a folder (or a path
/// prefix), with one of some extensions. The default takes every path.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct PathFilter {
    /// A folder (`notes` takes `notes/a.md`, not `notesy.md`) or, ending in `/`, that folder only.
    #[serde(default)]
    pub path: Option<String>,
    /// File extensions without the dot, any case; empty takes every file.
    #[serde(default)]
    pub extensions: Vec<String>,
}

impl PathFilter {
    /// Whether the workspace-relative, `/`-separated `path` passes.
    pub fn matches(&self, path: &str) -> bool {
        let under = self.path.as_deref().map(|p| p.trim_start_matches("./").trim_end_matches('/')).is_none_or(|p| {
            p.is_empty() || p == "." || path == p || path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'))
        });
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let ext_ok = self.extensions.is_empty()
            || self.extensions.iter().any(|want| want.trim_start_matches('.').eq_ignore_ascii_case(ext));
        under && ext_ok
    }
}

/// One page of a longer answer: the items from `offset`, at most `limit`
/// of them, and where the next page starts (`None`: this is the last).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Page<T> {
    /// The items on this page.
    pub items: Vec<T>,
    /// All items, on every page.
    pub total: usize,
    /// The `offset` of the next page.
    pub next_offset: Option<usize>,
}

impl<T> Page<T> {
    /// The page of `all` that starts at `offset` and holds at most `limit` (at least 1).
    pub fn of(all: Vec<T>, offset: usize, limit: usize) -> Self {
        let total = all.len();
        let limit = limit.max(1);
        let items: Vec<T> = all.into_iter().skip(offset).take(limit).collect();
        let end = offset.saturating_add(items.len());
        Page { items, total, next_offset: (end < total).then_some(end) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_what_does_not_fit() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Args {
            limit: u32,
        }
        assert_eq!(arguments::<Args>(r#"{"limit": 3}"#).map(|a| a.limit).ok(), Some(3));
        let Err(CallError::InvalidArguments(body)) = arguments::<Args>(r#"{"limit": "ten"}"#) else { panic!() };
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(body["error"].as_str().unwrap().contains("invalid type: string \"ten\""), "{body}");
        assert!(matches!(failed("gone"), CallError::Failed(b) if b == r#"{"error":"gone"}"#));
    }

    #[test]
    fn path_filters_take_folders_and_extensions() {
        let f = PathFilter { path: Some("notes".into()), extensions: vec![".MD".into()] };
        assert!(f.matches("notes/a.md") && f.matches("notes/deep/b.Md"));
        assert!(!f.matches("notesy.md") && !f.matches("notes/a.txt") && !f.matches("src/notes/a.md"));
        assert!(PathFilter::default().matches("anything/at.all"));
    }

    #[test]
    fn pages_say_where_the_next_starts() {
        let page = Page::of((0..10).collect(), 4, 3);
        assert_eq!((page.items, page.total, page.next_offset), (vec![4, 5, 6], 10, Some(7)));
        let last = Page::of((0..10).collect::<Vec<_>>(), 9, 3);
        assert_eq!((last.items, last.next_offset), (vec![9], None));
        assert_eq!(Page::of(Vec::<u8>::new(), 5, 0).next_offset, None);
    }

    #[test]
    fn carries_the_contract_of_its_version() {
        let wit = include_str!("../wit/ragbox.wit");
        assert!(wit.starts_with(&format!("package ragbox:tools@{WIT_VERSION};")));
        assert_eq!(env!("CARGO_PKG_VERSION"), WIT_VERSION, "the crate's version is the contract's");
    }
}
