//! The per-user service: one process per user, build of ragbox and
//! environment holds the model, the compiled tools and each workspace's index
//! once for every agent's `ragbox serve`. Each `serve` on stdio hands its
//! client to it (`relay.rs`): it sends which workspace and options it serves,
//! then copies bytes both ways, and the service (`host.rs`) runs that session
//! as `serve` would in a process of its own. The socket is in a folder only the
//! user may enter (`place.rs`), and the service serves only the user's own
//! processes. Where the service cannot serve a session (another model, a
//! shared store, no such folder), `serve` serves in its own process.

#[cfg(unix)]
mod host;
#[cfg(unix)]
mod place;
#[cfg(unix)]
mod pump;
#[cfg(unix)]
mod relay;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a relay asks for: one line of JSON, before the client's first byte.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    /// The relay's version: the service serves only its own.
    pub ragbox: String,
    /// The workspace to serve, absolute.
    pub workspace: PathBuf,
    /// `--watch`.
    pub watch: bool,
    /// `--tools`, as written.
    pub tools: String,
    /// `--output-schemas`.
    pub output_schemas: bool,
}

/// The service's answer to a [`Hello`]: one line of JSON.
#[cfg(unix)]
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The hello was read; the session is being opened (sent at once).
    Opening,
    /// The session is open: the client's bytes may follow.
    Serving {
        /// The service's process id, for the relay's log.
        pid: u32,
    },
    /// The relay should serve in its own process, and why.
    Standalone {
        /// Why, in words.
        why: String,
    },
}

#[cfg(unix)]
pub use host::run;
#[cfg(unix)]
pub use relay::{Session, connect};

/// Where this user's service for this environment is, for `ragbox doctor`:
/// running (its socket and log), not running, or why every `serve` here
/// serves alone.
#[cfg(unix)]
pub fn status() -> Status {
    let place = match place::Place::find() {
        Ok(place) => place,
        Err(why) => return Status::Alone(why),
    };
    let socket = place.socket();
    let log = place::log_file(&socket);
    match std::os::unix::net::UnixStream::connect(&socket) {
        Ok(stream) if crate::platform::peer_is_this_user(&stream) => Status::Running { socket, log },
        _ => Status::Stopped { socket },
    }
}

/// Without Unix sockets every `serve` serves alone.
#[cfg(not(unix))]
pub fn status() -> Status {
    Status::Alone("the per-user service needs Unix sockets".into())
}

/// What [`status`] found.
#[derive(Debug)]
#[cfg_attr(not(unix), allow(dead_code))]
pub enum Status {
    /// A service listens at `socket`.
    Running {
        /// Its socket.
        socket: PathBuf,
        /// Its log.
        log: PathBuf,
    },
    /// None listens; the next stdio `serve` starts one at `socket`.
    Stopped {
        /// Where it will listen.
        socket: PathBuf,
    },
    /// Every stdio `serve` serves alone, and why.
    Alone(String),
}

/// No session is ever handed over without Unix sockets.
#[cfg(not(unix))]
#[derive(Debug)]
pub enum Session {}

#[cfg(not(unix))]
impl Session {
    /// Never called: there is no session to relay.
    pub fn relay(self, _hello: &Hello) -> anyhow::Result<()> {
        match self {}
    }
}

/// Without Unix sockets every `serve` runs in its own process.
#[cfg(not(unix))]
pub fn connect(_hello: &Hello) -> Result<Session, String> {
    Err("the per-user service needs Unix sockets".into())
}

/// Without Unix sockets there is no service to run.
#[cfg(not(unix))]
pub fn run(_socket: &std::path::Path) -> anyhow::Result<()> {
    anyhow::bail!("the per-user service runs on Unix only")
}
