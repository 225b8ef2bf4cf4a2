//! The MCP server: tools come from the loaded components; each call runs in
//! its own sandbox on a blocking thread.

mod follow;
pub mod http;
mod profile;
mod progress;
mod reply;
mod server;
mod session;
mod skills;
mod stdio;

pub use profile::{Offer, Profile};
pub use server::RagboxServer;
pub use session::{serve_stdio, start_background};
// The per-user service's (Unix only).
#[cfg(unix)]
pub use session::serve_lines;
#[cfg(unix)]
pub use stdio::{LOG_LINE, id_in, is_answer, same_id};
