//! The scaffolding every tool shares: a tool says what it is, how its
//! arguments decode and what a call does; [`export_tool!`] makes the
//! component's `describe` and `call` from that. The call checks the
//! workspace the host granted first and answers in the tool set's error shape.

use crate::bindings::ragbox::tools::host::{self, WorkspaceInfo};
use crate::{Annotations, CallError, ToolInfo};
use serde_json::{Value, json};

/// The argument every tool takes: which workspace (the host resolves it).
const WORKSPACE_PATH: &str = "workspace_path";

/// The documented tool set a tool belongs to: it decides the error shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSet {
    /// Cortext (seeds 000-002): `{"success": false, "error": message}`.
    Cortext,
    /// The RAG MCP Server (seed 003): `{"error": Type, "message", "suggestion"}`.
    RagServer,
}

/// A tool that reads and changes nothing (every search and listing).
pub const READS: Annotations = Annotations { read_only: true, destructive: false, idempotent: true, open_world: false };

/// A tool that writes ragbox's own index, idempotently (the indexers).
pub const INDEXES: Annotations =
    Annotations { read_only: false, destructive: false, idempotent: true, open_world: false };

/// What a tool tells `tools/list`.
pub struct Description {
    /// MCP tool name.
    pub name: &'static str,
    /// Short title.
    pub title: &'static str,
    /// What it does, for an agent choosing among tools.
    pub description: &'static str,
    /// JSON Schema of the arguments; `workspace_path` is added when it does not name it.
    pub input: Value,
    /// JSON Schema of a successful result.
    pub output: Option<Value>,
    /// MCP hints.
    pub annotations: Annotations,
}

/// One tool.
pub trait Tool {
    /// A decoded, checked call.
    type Request;
    /// Its tool set.
    const SET: ToolSet;
    /// Its `tools/list` entry.
    fn describe() -> Description;
    /// Decodes and checks the arguments, touching neither the host nor the
    /// workspace (what the argument fuzz target drives natively).
    fn decode(arguments: &str) -> Result<Self::Request, CallError>;
    /// Runs a checked call in the granted `workspace`; the result as JSON text.
    fn run(request: Self::Request, workspace: &WorkspaceInfo) -> Result<String, CallError>;
}

/// The component's `describe`: the tool's entry with `workspace_path` added.
pub fn describe<T: Tool>() -> ToolInfo {
    let d = T::describe();
    let mut input = d.input;
    if let Some(properties) = input.get_mut("properties").and_then(Value::as_object_mut) {
        let schema = json!({ "type": "string", "description": "Optional workspace root path" });
        properties.entry(WORKSPACE_PATH).or_insert(schema);
    }
    ToolInfo {
        name: d.name.into(),
        title: Some(d.title.into()),
        description: d.description.into(),
        input_schema: input.to_string(),
        output_schema: d.output.map(|o| o.to_string()),
        annotations: d.annotations,
    }
}

/// Decodes `arguments` for `T`: the argument every tool shares, then its own.
pub fn decode<T: Tool>(arguments: &str) -> Result<T::Request, CallError> {
    check_workspace_path(arguments).map_err(|message| match T::SET {
        ToolSet::Cortext => crate::cortext::invalid(message),
        ToolSet::RagServer => crate::rag_server::invalid(
            "InvalidParameter",
            message,
            "Check the parameter against the tool's input schema",
        ),
    })?;
    T::decode(arguments)
}

/// `workspace_path`, when given, must be a string. (The host reads only a
/// string and leaves anything else for the tool to refuse in its own words.)
fn check_workspace_path(arguments: &str) -> Result<(), String> {
    // Arguments that are not an object are the tool's own decoding to refuse.
    let Ok(Value::Object(arguments)) = serde_json::from_str::<Value>(arguments) else { return Ok(()) };
    match arguments.get(WORKSPACE_PATH) {
        None | Some(Value::Null | Value::String(_)) => Ok(()),
        Some(other) => Err(format!(
            "argument '{WORKSPACE_PATH}': invalid type: {}, expected a string",
            crate::args::describe(other)
        )),
    }
}

/// The component's `call`: the granted workspace, then the decoded arguments, then the run.
pub fn call<T: Tool>(arguments: &str) -> Result<String, CallError> {
    let workspace = host::workspace().map_err(|e| match T::SET {
        ToolSet::Cortext => crate::cortext::failed(e.message),
        ToolSet::RagServer => crate::rag_server::failed(
            "WorkspaceNotAllowed",
            e.message,
            "Omit workspace_path to use the served workspace",
        ),
    })?;
    T::run(decode::<T>(arguments)?, &workspace)
}

/// Exports `$tool` (a [`Tool`]) as the component, and `decode` for the fuzz
/// target; natively the crate stays a library (tests, fuzzing).
#[macro_export]
macro_rules! export_tool {
    ($tool:ty) => {
        /// Decodes and checks `arguments` exactly as `call` does, touching neither the host nor the workspace.
        pub fn decode(arguments: &str) -> Result<(), $crate::CallError> {
            $crate::tool::decode::<$tool>(arguments).map(drop)
        }

        #[cfg(target_arch = "wasm32")]
        struct Component;

        #[cfg(target_arch = "wasm32")]
        impl $crate::Guest for Component {
            fn describe() -> $crate::ToolInfo {
                $crate::tool::describe::<$tool>()
            }

            fn call(arguments: String) -> Result<String, $crate::CallError> {
                $crate::tool::call::<$tool>(&arguments)
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::export!(Component);
    };
}

#[cfg(test)]
mod tests {
    use super::check_workspace_path;

    #[test]
    fn workspace_path_must_be_a_string_when_given() {
        for ok in [r#"{}"#, r#"{"workspace_path":"notes"}"#, r#"{"workspace_path":null}"#, "[1]", "not json"] {
            assert_eq!(check_workspace_path(ok), Ok(()), "{ok}");
        }
        let e = check_workspace_path(r#"{"query":"x","workspace_path":7}"#).unwrap_err();
        assert_eq!(e, "argument 'workspace_path': invalid type: 7, expected a string");
        let e = check_workspace_path(r#"{"workspace_path":["a"]}"#).unwrap_err();
        assert!(e.contains("array"), "{e}");
    }
}
