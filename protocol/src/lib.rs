//! The JSON that passes between ragbox's tools and its host besides MCP's
//! own: what an indexing run reports, the error bodies of the documented tool
//! sets, and every JSON tool's result. Tools produce these types and the host
//! reads them, so both sides share one definition and no code reads them by
//! string keys. Also what both sides skip when they list a workspace (`walk`),
//! where a file's frontmatter is (`frontmatter`), how a skill is named over
//! MCP (`skill`), and how both tell a letter's script (`script`) and a text's
//! Latin-script language (`language`).

pub mod frontmatter;
pub mod language;
mod results;
pub mod script;
pub mod skill;
pub mod walk;

pub use results::{
    Context, ContextChunk, Coverage, Decision, DecisionHistory, EmbeddingStatus, ExtractedInformation, IndexedSource,
    KeywordResults, LineMatch, NotIndexed, Passage, PathList, Pending, QuestionContext, QuestionSearchInfo,
    RecentEmbedding, RelevantConversation, SearchResult, SearchResults, SemanticResults, SimilarDocument,
    SimilarDocuments, SimilarSearchInfo, SimilarToText, SourceGroup, SourceList, SourceRef, SourceStatistics,
    VectorIndexState,
};
use schemars::JsonSchema;
use schemars::transform::Transform as _;
use serde::{Deserialize, Serialize};

/// What an indexing run did: the result of `embed_workspace` and
/// `embed_document` (seeds 000-001, plus `removed`, `chunks`, `complete`),
/// which `ragbox index` and the file watcher read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IndexReport {
    /// Always true in a result (failures are errors).
    pub success: bool,
    /// Files embedded (new or changed).
    pub embedded: u64,
    /// Files unchanged since they were embedded.
    pub skipped: u64,
    /// Indexable (text) files in scope.
    pub total_files: u64,
    /// Indexed files that no longer exist, removed from the index.
    #[serde(default)]
    pub removed: u64,
    /// Chunks embedded.
    #[serde(default)]
    pub chunks: u64,
    /// Files that could not be indexed; `null` when none (as the seeds give it).
    pub errors: Option<Vec<FileError>>,
    /// False when the run stopped early (cancelled or out of time): run again to continue.
    #[serde(default = "complete_by_default")]
    pub complete: bool,
    /// Why the run stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

fn complete_by_default() -> bool {
    true
}

impl IndexReport {
    /// The files that could not be indexed (none when `errors` is null).
    pub fn errors(&self) -> &[FileError] {
        self.errors.as_deref().unwrap_or_default()
    }
}

/// A file an indexing run could not index, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileError {
    /// Workspace-relative path.
    pub path: String,
    /// The reason, for a person.
    pub error: String,
}

/// A tool's error body, in either documented shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolError {
    /// The RAG MCP Server's (seed 003): a type an agent can branch on, what
    /// went wrong and what to do.
    Typed {
        /// The error's type, e.g. `InvalidParameter`.
        error: String,
        /// What went wrong.
        message: String,
        /// What to do about it.
        suggestion: String,
    },
    /// Cortext's (seeds 000-002): `{"success": false, "error": message}`.
    Cortext {
        /// Always false.
        success: bool,
        /// What went wrong, and what to do.
        error: String,
    },
}

impl ToolError {
    /// A seed-003 error.
    pub fn typed(error: &str, message: impl Into<String>, suggestion: &str) -> Self {
        Self::Typed { error: error.to_string(), message: message.into(), suggestion: suggestion.to_string() }
    }

    /// A Cortext error.
    pub fn cortext(message: impl Into<String>) -> Self {
        Self::Cortext { success: false, error: message.into() }
    }

    /// The body as the client receives it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| unreachable!("plain string fields always serialize"))
    }

    /// What a person should read: the message and what to do about it.
    pub fn describe(&self) -> String {
        match self {
            Self::Typed { error, message, suggestion } => format!("{message} ({error}). {suggestion}"),
            Self::Cortext { error, .. } => error.clone(),
        }
    }
}

/// The JSON Schema of `T` as a tool's `outputSchema`: subschemas inline, no
/// meta-schema, titles or number formats (clients validate against it; an
/// agent reads its descriptions, which are the types' doc comments).
pub fn output_schema<T: JsonSchema>() -> serde_json::Value {
    plain_schema::<T>(|_| {})
}

/// The JSON Schema of a tool's arguments `T` as its `inputSchema`: as
/// [`output_schema`], and an optional argument is typed without `null`
/// (it is left out instead; some clients refuse a list of types).
pub fn input_schema<T: JsonSchema>() -> serde_json::Value {
    plain_schema::<T>(|schema| {
        if let Some(types) = schema.get_mut("type").and_then(serde_json::Value::as_array_mut) {
            types.retain(|t| t != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                schema.insert("type".into(), only);
            }
        }
    })
}

fn plain_schema<T: JsonSchema>(also: impl Fn(&mut schemars::Schema)) -> serde_json::Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings.into_generator().into_root_schema_for::<T>();
    schemars::transform::RecursiveTransform(|schema: &mut schemars::Schema| {
        schema.remove("title");
        // An unsigned integer's `format: uint64` and `minimum: 0` say what `type: integer` and the docs say.
        let unsigned = schema.remove("format").is_some_and(|f| f.as_str().is_some_and(|f| f.starts_with("uint")));
        if unsigned && schema.get("minimum").and_then(serde_json::Value::as_u64) == Some(0) {
            schema.remove("minimum");
        }
        also(schema);
    })
    .transform(&mut schema);
    schema.to_value()
}

/// The text of a tool's error body for a person: its message when the body
/// is one of the documented shapes, else the body as it is.
pub fn describe_error(body: &str) -> String {
    match serde_json::from_str::<ToolError>(body) {
        Ok(e) => e.describe(),
        Err(_) => body.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_back_in_either_shape() {
        let typed = ToolError::typed("InvalidParameter", "limit must be between 1 and 50, got 0", "Check the limit");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&typed.to_json()).unwrap(),
            serde_json::json!({"error": "InvalidParameter", "message": "limit must be between 1 and 50, got 0",
                               "suggestion": "Check the limit"})
        );
        assert_eq!(
            describe_error(&typed.to_json()),
            "limit must be between 1 and 50, got 0 (InvalidParameter). Check the limit"
        );
        let cortext = ToolError::cortext("Path not found: x.md");
        assert_eq!(cortext.to_json(), r#"{"success":false,"error":"Path not found: x.md"}"#);
        assert_eq!(describe_error(&cortext.to_json()), "Path not found: x.md");
        assert_eq!(describe_error("plain text"), "plain text");
    }

    #[test]
    fn reports_keep_the_seed_shape() {
        let report = IndexReport {
            success: true,
            embedded: 2,
            skipped: 1,
            total_files: 3,
            removed: 0,
            chunks: 5,
            errors: None,
            complete: true,
            message: None,
        };
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["errors"], serde_json::Value::Null, "null when none, as the seeds give it");
        assert!(json.get("message").is_none());
        // What the seeds' own servers send (no removed, chunks or complete) reads too.
        let seed: IndexReport =
            serde_json::from_str(r#"{"success":true,"embedded":1,"skipped":0,"total_files":1,"errors":null}"#).unwrap();
        assert!(seed.complete && seed.errors().is_empty());
    }
}

#[cfg(test)]
mod schema_tests {
    use super::*;

    #[test]
    fn output_schemas_are_inline_and_plain() {
        let schema = output_schema::<SemanticResults>();
        let text = schema.to_string();
        for absent in ["$schema", "$defs", "$ref", "format"] {
            assert!(!text.contains(absent), "{absent} in {text}");
        }
        assert_eq!(schema["type"], "object");
        let required = schema["required"].as_array().unwrap();
        assert!(required.contains(&"results".into()) && !required.contains(&"message".into()), "{schema}");
        let passage = &schema["properties"]["results"]["items"];
        assert!(schema.get("title").is_none() && passage.get("title").is_none(), "{schema}");
        assert_eq!(passage["properties"]["score"]["description"], "Cosine similarity, higher is closer.");
        assert_eq!(passage["properties"]["type"]["type"], serde_json::json!(["string", "null"]));
    }

    const MAX: u64 = 50;

    #[derive(JsonSchema)]
    #[allow(dead_code)] // only its schema is read
    struct Args {
        /// What to find.
        query: String,
        /// How many.
        #[schemars(range(min = 1, max = MAX), extend("default" = 5))]
        limit: Option<u64>,
        /// Sent as a number.
        #[schemars(extend("type" = "number"))]
        n: Option<u64>,
    }

    #[test]
    fn input_schemas_leave_optional_arguments_out_rather_than_null() {
        let schema = input_schema::<Args>();
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": "What to find." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 50, "default": 5, "description": "How many." },
                    "n": { "type": "number", "description": "Sent as a number." },
                },
                "required": ["query"],
            })
        );
    }
}
