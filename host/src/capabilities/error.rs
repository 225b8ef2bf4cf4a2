//! The one place host errors become the WIT `error` a tool sees: a code it
//! can branch on and the message that says what to do.

use crate::corpus::CorpusError;
use crate::datadir::DataDirError;
use crate::embed::EmbedError;
use crate::fulltext::FulltextError;
use crate::records::StoreError;
use crate::runtime::bindings::ragbox::tools::types::{Error, ErrorCode};

/// An error of `code` saying `message`.
pub fn error(code: ErrorCode, message: impl Into<String>) -> Error {
    Error { code, message: message.into() }
}

/// A malformed request.
pub fn invalid(message: impl Into<String>) -> Error {
    error(ErrorCode::Invalid, message)
}

/// A missing grant or a refused workspace.
pub fn denied(message: impl Into<String>) -> Error {
    error(ErrorCode::Denied, message)
}

/// Something that should not happen.
pub fn internal(message: impl Into<String>) -> Error {
    error(ErrorCode::Internal, message)
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        let code = match &e {
            StoreError::Busy(_) | StoreError::Unreachable { .. } | StoreError::Conflict { .. } => ErrorCode::Busy,
            StoreError::Corrupt { .. }
            | StoreError::Schema { .. }
            | StoreError::DataDir(
                DataDirError::NotPlain { .. } | DataDirError::TooLarge { .. } | DataDirError::Replaced { .. },
            ) => ErrorCode::Corrupt,
            StoreError::ModelMismatch { .. } => ErrorCode::ModelMismatch,
            StoreError::Dimension { .. } | StoreError::Invalid { .. } => ErrorCode::Invalid,
            StoreError::Io { .. }
            | StoreError::DataDir(DataDirError::Io { .. } | DataDirError::Key(_))
            | StoreError::Redb { .. }
            | StoreError::Setup { .. }
            | StoreError::Database { .. } => ErrorCode::Internal,
        };
        error(code, e.to_string())
    }
}

impl From<FulltextError> for Error {
    fn from(e: FulltextError) -> Self {
        let code = match &e {
            FulltextError::Busy(_) => ErrorCode::Busy,
            FulltextError::Query { .. } => ErrorCode::Invalid,
            FulltextError::Stopped => ErrorCode::Cancelled,
            FulltextError::Index { .. } | FulltextError::Panicked => ErrorCode::Internal,
        };
        error(code, e.to_string())
    }
}

impl From<EmbedError> for Error {
    fn from(e: EmbedError) -> Self {
        let code = match &e {
            EmbedError::Missing(_) | EmbedError::BadFile { .. } => ErrorCode::ModelUnavailable,
            EmbedError::Input(_) | EmbedError::TooLarge { .. } => ErrorCode::Invalid,
            EmbedError::Stopped => ErrorCode::Cancelled,
            EmbedError::Tokenizer(_) => ErrorCode::Internal,
        };
        error(code, e.to_string())
    }
}

impl From<CorpusError> for Error {
    fn from(e: CorpusError) -> Self {
        match e {
            CorpusError::Store(e) => e.into(),
            CorpusError::Fulltext(e) => e.into(),
            CorpusError::Embed(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn codes_follow_the_cause() {
        let path = PathBuf::from("/w/.ragbox/store.redb");
        let cases: [(Error, ErrorCode); 6] = [
            (StoreError::Busy(path.clone()).into(), ErrorCode::Busy),
            (StoreError::Corrupt { path: path.clone(), message: "bad page".into() }.into(), ErrorCode::Corrupt),
            (StoreError::ModelMismatch { stored: "a".into(), current: "b".into() }.into(), ErrorCode::ModelMismatch),
            (
                CorpusError::Embed(EmbedError::Missing("run `ragbox model fetch`".into())).into(),
                ErrorCode::ModelUnavailable,
            ),
            (EmbedError::Stopped.into(), ErrorCode::Cancelled),
            (FulltextError::Busy(path).into(), ErrorCode::Busy),
        ];
        for (error, code) in cases {
            assert_eq!(error.code, code, "{}", error.message);
            assert!(!error.message.is_empty());
        }
    }
}
