//! Log lines to the server's stderr through the host, tagged with the tool's name.

use crate::host::{self, Level};

/// Logs at debug level.
pub fn debug(message: &str) {
    host::log(Level::Debug, message);
}

/// Logs at info level.
pub fn info(message: &str) {
    host::log(Level::Info, message);
}

/// Logs at warn level.
pub fn warn(message: &str) {
    host::log(Level::Warn, message);
}
