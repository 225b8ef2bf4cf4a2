//! The scaffolding every tool shares: a tool says what it is, how its
//! arguments decode and what a call does; [`export_tool!`] makes the
//! component's `describe` and `call` from that. The call checks the
//! workspace the host granted first and answers in the tool set's error shape.
//! Below it, what every tool draws on: argument decoding ([`args`]), token
//! budgets ([`budget`]), logging ([`log`]) and small text helpers ([`text`]).

pub mod args;
pub mod budget;
pub mod log;
pub mod text;

use crate::bindings::ragbox::tools::host::{self, WorkspaceInfo};
use crate::{Annotations, CallError, ToolInfo};
use ragbox_protocol::ToolError;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The argument every tool takes: which workspace (the host resolves it).
const WORKSPACE_PATH: &str = "workspace_path";

/// The documented tool set a tool belongs to: it decides the error shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSet {
    /// The Cortext tools (its keyword and RAG tools): `{"success": false, "error": message}`.
    Cortext,
    /// The RAG MCP Server's tools: `{"error": Type, "message", "suggestion"}`.
    RagServer,
}

impl ToolSet {
    /// An error body in this set's shape (Cortext's carries the message alone).
    fn error(self, kind: &str, message: &str, suggestion: &str) -> String {
        match self {
            Self::Cortext => ToolError::cortext(message),
            Self::RagServer => ToolError::typed(kind, message, suggestion),
        }
        .to_json()
    }

    /// Arguments that do not fit the input schema, in this set's error shape.
    pub fn bad_argument(self, message: &str) -> CallError {
        let suggestion = "Check the parameter against the tool's input schema";
        CallError::InvalidArguments(self.error("InvalidParameter", message, suggestion))
    }
}

/// A tool that reads and changes nothing (every search and listing).
pub const READS: Annotations = Annotations { read_only: true, destructive: false, idempotent: true, open_world: false };

/// A tool that writes ragbox's own index, idempotently (the indexers).
pub const INDEXES: Annotations =
    Annotations { read_only: false, destructive: false, idempotent: true, open_world: false };

/// One tool: what it is, its arguments, how a call is checked and run. Its
/// input and output schemas are derived from `Args` and `Output`.
pub trait Tool {
    /// MCP tool name.
    const NAME: &'static str;
    /// Short title.
    const TITLE: &'static str;
    /// What it does, for an agent choosing among tools.
    const DESCRIPTION: &'static str;
    /// MCP hints.
    const ANNOTATIONS: Annotations;
    /// Its tool set (the shape of its errors).
    const SET: ToolSet;
    /// The arguments as sent; their doc comments describe them to agents.
    /// `workspace_path` is added by the toolkit.
    type Args: DeserializeOwned + JsonSchema;
    /// A checked call.
    type Request;
    /// A successful result.
    type Output: Answer;
    /// Checks decoded arguments, touching neither the host nor the workspace
    /// (what the argument fuzz target drives natively).
    fn check(args: Self::Args) -> Result<Self::Request, CallError>;
    /// Runs a checked call in the granted `workspace`.
    fn run(request: Self::Request, workspace: &WorkspaceInfo) -> Result<Self::Output, CallError>;
}

/// What a tool answers: JSON of a protocol type, or [`Text`].
pub trait Answer {
    /// The result's JSON Schema, when it is JSON.
    fn schema() -> Option<Value>;
    /// The result as the text the client receives.
    fn into_text(self) -> String;
}

impl<T: Serialize + JsonSchema> Answer for T {
    fn schema() -> Option<Value> {
        Some(crate::protocol::output_schema::<T>())
    }

    fn into_text(self) -> String {
        crate::to_json(&self)
    }
}

/// A result in plain text (a layout a tool set documents), with no output schema.
pub struct Text(pub String);

impl Answer for Text {
    fn schema() -> Option<Value> {
        None
    }

    fn into_text(self) -> String {
        self.0
    }
}

/// The component's `describe`: the tool's entry with `workspace_path` added.
pub fn describe<T: Tool>() -> ToolInfo {
    let mut input = crate::protocol::input_schema::<T::Args>();
    // A struct without fields has no `properties` to add to yet.
    if let Some(Value::Object(properties)) = input.as_object_mut().map(|o| o.entry("properties").or_insert(json!({}))) {
        let schema = json!({
            "type": "string",
            "description": "Optional workspace root path (the served workspace or one allowed in config)"
        });
        properties.entry(WORKSPACE_PATH).or_insert(schema);
    }
    ToolInfo {
        name: T::NAME.into(),
        title: Some(T::TITLE.into()),
        description: T::DESCRIPTION.into(),
        input_schema: input.to_string(),
        output_schema: T::Output::schema().map(|o| o.to_string()),
        annotations: T::ANNOTATIONS,
    }
}

/// Decodes `arguments` for `T`: the argument every tool shares, then its own.
pub fn decode<T: Tool>(arguments: &str) -> Result<T::Request, CallError> {
    let invalid = |message: String| T::SET.bad_argument(&message);
    check_workspace_path(arguments).map_err(invalid)?;
    T::check(args::parse(arguments).map_err(invalid)?)
}

/// The JSON error body [`decode`] refuses `arguments` for `T` with: what the
/// tools' own tests read. `None` when the arguments are accepted.
#[doc(hidden)]
pub fn refusal<T: Tool>(arguments: &str) -> Option<Value> {
    match decode::<T>(arguments) {
        Err(CallError::InvalidArguments(body)) => serde_json::from_str(&body).ok(),
        _ => None,
    }
}

/// `workspace_path`, when given, must be a string. (The host reads only a
/// string and leaves anything else for the tool to refuse in its own words.)
fn check_workspace_path(arguments: &str) -> Result<(), String> {
    // Arguments that are not an object are the tool's own decoding to refuse.
    let Ok(Value::Object(arguments)) = serde_json::from_str::<Value>(arguments) else { return Ok(()) };
    match arguments.get(WORKSPACE_PATH) {
        None | Some(Value::Null | Value::String(_)) => Ok(()),
        Some(other) => {
            Err(format!("argument '{WORKSPACE_PATH}': invalid type: {}, expected a string", args::describe(other)))
        }
    }
}

/// The component's `call`: the granted workspace, then the decoded arguments, then the run.
pub fn call<T: Tool>(arguments: &str) -> Result<String, CallError> {
    let refused = |e: crate::Error| {
        CallError::Failed(T::SET.error(
            "WorkspaceNotAllowed",
            &e.message,
            "Omit workspace_path to use the served workspace",
        ))
    };
    let workspace = host::workspace().map_err(refused)?;
    T::run(decode::<T>(arguments)?, &workspace).map(Answer::into_text)
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
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    struct NoArgs {}

    #[derive(serde::Deserialize, JsonSchema)]
    struct Args {
        /// What to find
        query: String,
    }

    /// A tool of either shape: `A` its arguments, `O` its answer.
    struct Probe<A, O>(std::marker::PhantomData<(A, O)>);

    impl<A: DeserializeOwned + JsonSchema, O: Answer> Tool for Probe<A, O> {
        const NAME: &'static str = "probe";
        const TITLE: &'static str = "Probe";
        const DESCRIPTION: &'static str = "A test tool";
        const ANNOTATIONS: Annotations = READS;
        const SET: ToolSet = ToolSet::RagServer;
        type Args = A;
        type Request = A;
        type Output = O;

        fn check(args: A) -> Result<A, CallError> {
            Ok(args)
        }

        fn run(_: A, _: &WorkspaceInfo) -> Result<O, CallError> {
            unreachable!("only described and decoded here")
        }
    }

    #[test]
    fn schemas_come_from_the_types_with_workspace_path_added() {
        let info = describe::<Probe<Args, crate::protocol::IndexReport>>();
        let input: Value = serde_json::from_str(&info.input_schema).unwrap();
        assert_eq!(input["required"], json!(["query"]));
        assert_eq!(input["properties"]["query"], json!({"type": "string", "description": "What to find"}));
        assert_eq!(input["properties"][WORKSPACE_PATH]["type"], "string");
        let output: Value = serde_json::from_str(info.output_schema.as_deref().unwrap()).unwrap();
        assert!(output["required"].as_array().unwrap().contains(&json!("total_files")), "{output}");

        let info = describe::<Probe<NoArgs, Text>>();
        let input: Value = serde_json::from_str(&info.input_schema).unwrap();
        assert_eq!(input["type"], "object");
        assert_eq!(input["properties"][WORKSPACE_PATH]["type"], "string", "{input}");
        assert!(info.output_schema.is_none(), "text has no output schema");
    }

    #[test]
    fn decoding_errors_take_the_tool_sets_shape() {
        type P = Probe<Args, Text>;
        let Err(CallError::InvalidArguments(body)) = decode::<P>(r#"{"query":3}"#) else { panic!("accepted") };
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"], "InvalidParameter");
        assert!(body["message"].as_str().unwrap().starts_with("argument 'query'"), "{body}");
        let Err(CallError::InvalidArguments(_)) = decode::<P>(r#"{"query":"x","workspace_path":1}"#) else {
            panic!("accepted a numeric workspace_path")
        };
        assert_eq!(decode::<P>(r#"{"query":"x"}"#).ok().map(|a| a.query), Some("x".to_string()));
    }

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
