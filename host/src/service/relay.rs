//! The stdio side of a session: `ragbox serve` reaches the user's service
//! (starting it if none runs) and says what it serves; once the service has
//! taken the session, `pump.rs` (which uses this module, never the other way)
//! carries the client's bytes to it and its replies back. Nothing of the
//! client's is read before the service has taken the session, so a relay the
//! service turns away serves in its own process.

use super::place::{Place, lock_file, log_file, max_log};
use super::{Hello, Reply};
use crate::platform;
use std::io::{self, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a service just started may take to listen.
const START_WAIT: Duration = Duration::from_secs(20);

/// How long a service may take to say it read the hello: one that does not
/// is stopped or stuck, and this process serves instead.
const ACK_WAIT: Duration = Duration::from_secs(5);

/// How long the service may take to open a session: the first one loads
/// the tools, compiling them where the compile cache is cold.
const REPLY_WAIT: Duration = Duration::from_secs(300);

/// Largest reply read.
const MAX_REPLY: usize = 64 << 10;

/// A session the service took.
#[derive(Debug)]
pub struct Session {
    /// The connection, past the replies.
    pub(super) stream: UnixStream,
    /// The service's process id.
    pub(super) pid: u32,
    /// The service's log.
    pub(super) log: std::path::PathBuf,
}

/// Hands `hello`'s session to the user's service; `Err` says why this
/// process should serve it itself.
pub fn connect(hello: &Hello) -> Result<Session, String> {
    let place = Place::find()?;
    let socket = place.socket();
    let stream =
        reach(&place).map_err(|e| format!("cannot reach or start the service at {}: {e}", socket.display()))?;
    // The folder is checked, but what listens must be this user's too.
    if !platform::peer_is_this_user(&stream) {
        return Err(format!("{} is another user's socket", socket.display()));
    }
    let reply = ask(&stream, hello).map_err(|e| format!("the service at {} did not answer: {e}", socket.display()))?;
    match reply {
        Reply::Serving { pid } => Ok(Session { stream, pid, log: log_file(&socket) }),
        Reply::Standalone { why } => Err(why),
        Reply::Opening => Err("the service answered out of turn".into()),
    }
}

/// A connection to the service at `place`, which is started first if none
/// listens. One relay at a time starts it, holding the place's lock.
fn reach(place: &Place) -> io::Result<UnixStream> {
    let socket = place.socket();
    if let Ok(stream) = UnixStream::connect(&socket) {
        return Ok(stream);
    }
    let lock = platform::private_std_file(std::fs::OpenOptions::new().create(true).truncate(false).write(true))
        .open(lock_file(&socket))?;
    // Not forever: a relay stopped while it held the lock must not stop every other.
    let deadline = Instant::now() + START_WAIT;
    loop {
        match lock.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(io::Error::other("another relay has held the service's lock for 20 s"));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
    if let Ok(stream) = UnixStream::connect(&socket) {
        return Ok(stream);
    }
    // Nothing listens: a socket file left is a dead service's.
    match std::fs::remove_file(&socket) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut child = start(place, &socket)?;
    let deadline = Instant::now() + START_WAIT;
    loop {
        match UnixStream::connect(&socket) {
            Ok(stream) => {
                // Reaped when it ends, not left a zombie while this relay runs.
                std::thread::spawn(move || child.wait());
                return Ok(stream);
            }
            Err(e) => {
                if let Some(status) = child.try_wait()? {
                    let log = log_file(&socket);
                    return Err(io::Error::other(format!("it exited ({status}); its log is {}", log.display())));
                }
                if Instant::now() > deadline {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// Starts the service for `socket`: this program, in a process group of its
/// own (a signal to the agent's group is not one to the service), its
/// output in its log.
fn start(place: &Place, socket: &Path) -> io::Result<Child> {
    let log =
        platform::private_std_file(std::fs::OpenOptions::new().create(true).append(true)).open(log_file(socket))?;
    if log.metadata()?.len() > max_log() {
        // The last one kept beside it, as the service does while it runs.
        drop(log);
        std::fs::rename(log_file(socket), log_file(socket).with_extension("log.1"))?;
        return start(place, socket);
    }
    Command::new(std::env::current_exe()?)
        .arg("service")
        .arg("--socket")
        .arg(socket)
        .current_dir(place.cwd())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn()
}

/// Sends `hello` and reads the service's replies: `opening` within
/// [`ACK_WAIT`], then the answer.
fn ask(stream: &UnixStream, hello: &Hello) -> io::Result<Reply> {
    let mut line = serde_json::to_vec(hello)?;
    line.push(b'\n');
    stream.set_write_timeout(Some(ACK_WAIT))?;
    (&mut &*stream).write_all(&line)?;
    stream.set_write_timeout(None)?;
    stream.set_read_timeout(Some(ACK_WAIT))?;
    let reply = match read_reply(stream) {
        Ok(Reply::Opening) => {
            stream.set_read_timeout(Some(REPLY_WAIT))?;
            read_reply(stream)
        }
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            Err(io::Error::other(format!("nothing within {} s: is it stopped?", ACK_WAIT.as_secs())))
        }
        other => other,
    };
    stream.set_read_timeout(None)?;
    reply
}

/// One reply line, read a byte at a time: what follows is the client's session.
fn read_reply(stream: &UnixStream) -> io::Result<Reply> {
    let mut reply = Vec::new();
    let mut byte = [0u8];
    loop {
        match (&mut &*stream).read(&mut byte)? {
            0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "it closed the connection")),
            _ if byte[0] == b'\n' => break,
            _ if reply.len() >= MAX_REPLY => return Err(io::Error::other("its reply is too long")),
            _ => reply.push(byte[0]),
        }
    }
    Ok(serde_json::from_slice(&reply)?)
}
