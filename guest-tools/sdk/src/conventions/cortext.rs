//! The Cortext tool set's error shape: `{"success": false, "error": message}`.

use crate::CallError;

/// A Cortext tool's error result: `{"success": false, "error": message}`.
pub fn error_body(message: &str) -> String {
    ragbox_protocol::ToolError::cortext(message).to_json()
}

/// A failed call, in Cortext's error shape.
pub fn failed(message: impl AsRef<str>) -> CallError {
    CallError::Failed(error_body(message.as_ref()))
}

/// Arguments that do not fit, in Cortext's error shape.
pub fn invalid(message: impl AsRef<str>) -> CallError {
    CallError::InvalidArguments(error_body(message.as_ref()))
}
