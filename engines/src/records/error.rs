//! What can go wrong keeping records, in either backend; each error says what to do.

use crate::datadir::DataDirError;
use std::path::PathBuf;

/// Errors from the store; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process held the database for longer than the retry window.
    #[error("the index at {0} stayed busy (another ragbox process is writing); try again")]
    Busy(PathBuf),
    /// The file is damaged or not a ragbox store.
    #[error(
        "the index at {path} cannot be opened: {message}. `ragbox doctor` checks it; `ragbox doctor --reset` starts over (embeddings are lost and must be made again)"
    )]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// redb's message.
        message: String,
    },
    /// Written by a different schema version.
    #[error(
        "the index at {path} has schema version {found}, this ragbox uses {expected}; `ragbox doctor --reset` starts over (embeddings must be made again)"
    )]
    Schema {
        /// The store file.
        path: PathBuf,
        /// Its version.
        found: u64,
        /// The version this ragbox writes.
        expected: u64,
    },
    /// The vectors in the store come from another model.
    #[error(
        "the index holds vectors from model {stored} but the current model is {current}; run `ragbox doctor --reset` then `ragbox index` to re-embed everything with the current model, or switch back to the stored one"
    )]
    ModelMismatch {
        /// Model id in the store.
        stored: String,
        /// Model id now configured.
        current: String,
    },
    /// A vector's length differs from the model's dimension.
    #[error("vector of length {got} for {path}, expected {expected}")]
    Dimension {
        /// The document.
        path: String,
        /// Its length.
        got: usize,
        /// The model's.
        expected: usize,
    },
    /// A document that cannot be stored as given.
    #[error("cannot store {path:?}: {message}")]
    Invalid {
        /// The document's path as given.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// Reading or writing the file failed (disk full, permissions, a removed folder).
    #[error("cannot read or write the index at {path}: {source}")]
    Io {
        /// The store file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The shared store's server cannot be reached (down, restarting, no network), after retries.
    #[error("cannot reach the shared store at {server}: {message}; check that PostgreSQL runs there, then try again")]
    Unreachable {
        /// `user@host:port/db`.
        server: String,
        /// Why.
        message: String,
    },
    /// The shared store is reachable but not usable as configured (login,
    /// extension, schema, a replica asked to write); the message says the fix.
    #[error("the shared store at {server}: {message}")]
    Setup {
        /// `user@host:port/db` (never a password).
        server: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// The shared store's server rolled a transaction back to let another
    /// finish (a deadlock, a serialization failure), after retries.
    #[error("the shared store at {server} stayed busy with other writers ({message}); try again")]
    Conflict {
        /// `user@host:port/db`.
        server: String,
        /// The server's message.
        message: String,
    },
    /// The shared store's server refused an operation.
    #[error("the shared store at {server} failed: {message}")]
    Database {
        /// `user@host:port/db`.
        server: String,
        /// The server's message.
        message: String,
    },
    /// The data dir holds a link or special file where the store belongs,
    /// or cannot be used.
    #[error(transparent)]
    DataDir(#[from] DataDirError),
    /// redb refused an operation for another reason (a bug in ragbox, or a
    /// store written by a newer redb).
    #[error("the index at {path} failed: {source}")]
    Redb {
        /// The store file.
        path: PathBuf,
        /// redb's error, kept whole.
        source: redb::Error,
    },
}
