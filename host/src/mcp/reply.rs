//! Turning a call's outcome into the MCP result the client sees.

use crate::runtime::{Failure, LoadedTool, Outcome};
use rmcp::model::{CallToolResult, ContentBlock};

/// Success → `structuredContent` plus the same JSON as text when the tool
/// declares an output schema; any error → `isError: true` with a message.
pub fn to_result(tool: &LoadedTool, outcome: Outcome) -> CallToolResult {
    match outcome {
        Outcome::Ok(json) => {
            if tool.info.output_schema.is_none() {
                return CallToolResult::success(vec![ContentBlock::text(json)]);
            }
            match serde_json::from_str::<serde_json::Value>(&json) {
                Ok(value @ serde_json::Value::Object(_)) => CallToolResult::structured(value),
                Ok(_) => failed(Failure::BadResult {
                    tool: tool.name().to_string(),
                    reason: "its output schema promises a JSON object".into(),
                }),
                Err(e) => {
                    failed(Failure::BadResult { tool: tool.name().to_string(), reason: format!("not JSON: {e}") })
                }
            }
        }
        Outcome::ToolError { invalid_arguments, body } => {
            tracing::debug!(tool = tool.name(), invalid_arguments, "tool error: {body}");
            CallToolResult::error(vec![ContentBlock::text(body)])
        }
        Outcome::Failed(failure) => failed(failure),
    }
}

/// A call the host could not make or finish.
pub fn failed(failure: Failure) -> CallToolResult {
    tracing::warn!("{failure}");
    CallToolResult::error(vec![ContentBlock::text(failure.to_string())])
}
