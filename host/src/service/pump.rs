//! A relayed session's bytes: the client's lines to the service, the
//! service's to the client (its log lines to stderr). When the service ends
//! before the client does (a crash, or the terminal that started it closed
//! with everything in it), the session is opened again on a new service: the
//! client's `initialize` and `initialized` are sent again (the answer kept
//! from a client that has one), and each request the old service had not
//! answered gets an error. The agent keeps its server; only those calls fail.

use super::Hello;
use super::relay::{Session, connect};
use crate::mcp::{LOG_LINE, id_in, is_answer, same_id};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{self, BufRead as _, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

impl Session {
    /// Relays the client's session until it ends, opening it again on a new
    /// service if this one ends first.
    pub fn relay(self, hello: &Hello) -> anyhow::Result<()> {
        run(self, hello)
    }
}

/// A session is opened again at most this often within [`RESUME_WINDOW`]:
/// a service that keeps dying (on some request the client keeps retrying)
/// then ends the relay instead.
const MAX_RESUMES: usize = 3;
const RESUME_WINDOW: Duration = Duration::from_secs(60);

/// How often a resume tries to reach a new service.
const CONNECT_TRIES: usize = 10;

/// How long a new service may take to answer the replayed `initialize`.
const REPLAY_WAIT: Duration = Duration::from_secs(60);

/// The connection in use; `generation` counts the services the session was on.
struct Link {
    generation: u64,
    stream: UnixStream,
}

/// The client's `initialize` line and id, and its `initialized` line.
#[derive(Clone, Default)]
struct Handshake {
    initialize: Option<(Vec<u8>, Value)>,
    initialized: Option<Vec<u8>>,
}

/// What both directions share.
struct Shared {
    link: Mutex<Link>,
    /// Signalled when the session is on a new service, or the relay ends.
    relinked: Condvar,
    /// Requests sent and not answered yet: the id, and the link's generation it went on.
    pending: Mutex<Vec<(Value, u64)>>,
    /// The client's handshake, replayed to a new service.
    handshake: Mutex<Handshake>,
    /// The client's input ended.
    client_done: AtomicBool,
    /// The relay is ending: a line waiting for a new service is dropped.
    over: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Relays `session` until the client's input ends (or its output fails).
fn run(session: Session, hello: &Hello) -> anyhow::Result<()> {
    tracing::info!(pid = session.pid, log = %session.log.display(), "served by this user's ragbox service");
    let shared = std::sync::Arc::new(Shared {
        link: Mutex::new(Link { generation: 0, stream: session.stream.try_clone()? }),
        relinked: Condvar::new(),
        pending: Mutex::default(),
        handshake: Mutex::default(),
        client_done: AtomicBool::new(false),
        over: AtomicBool::new(false),
    });
    let client = shared.clone();
    std::thread::spawn(move || from_client(&client));
    let (mut stream, mut pid, mut log) = (session.stream, session.pid, session.log);
    let mut resumed: VecDeque<Instant> = VecDeque::new();
    let ended = loop {
        let ended = forward(&stream, &shared);
        if shared.client_done.load(Ordering::SeqCst) || matches!(ended, Err(Broken::Client)) {
            // The client is gone: how the service's end went is nobody's concern.
            break Ok(());
        }
        resumed.retain(|t| t.elapsed() < RESUME_WINDOW);
        if resumed.len() >= MAX_RESUMES {
            break Err(Broken::Service(format!(
                "this user's ragbox service ended {MAX_RESUMES} times within {} s (the last, pid {pid}, logged to {})",
                RESUME_WINDOW.as_secs(),
                log.display()
            )));
        }
        resumed.push_back(Instant::now());
        tracing::warn!(pid, log = %log.display(), "this user's ragbox service ended before the session did; opening it on a new one");
        match resume(&shared, hello) {
            Ok(next) => (stream, pid, log) = (next.stream, next.pid, next.log),
            Err(why) => break Err(Broken::Service(format!("the session could not be opened again: {why}"))),
        }
    };
    {
        // Under the lock a waiting writer checks it with: it cannot miss the wake-up.
        let _link = lock(&shared.link);
        shared.over.store(true, Ordering::SeqCst);
        shared.relinked.notify_all();
    }
    match ended {
        Ok(()) | Err(Broken::Client) => Ok(()),
        Err(Broken::Service(why)) => anyhow::bail!("{why}"),
    }
}

/// Why a direction stopped.
enum Broken {
    /// The client's stdout could not be written: it is gone.
    Client,
    /// The service's connection failed or ended.
    Service(String),
}

/// Copies the service's lines to stdout (its log lines to stderr) until the
/// service's connection ends (`Ok`) or a side fails.
fn forward(from: &UnixStream, shared: &Shared) -> Result<(), Broken> {
    let mut from = io::BufReader::with_capacity(64 << 10, from);
    let mut line = Vec::new();
    let mut out = io::stdout().lock();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line) {
            Ok(0) => return Ok(()),
            // A line cut off by the service's end is no answer: a resume answers its request.
            Ok(_) if !line.ends_with(b"\n") => return Ok(()),
            Ok(_) => {}
            Err(e) => return Err(Broken::Service(e.to_string())),
        }
        if let Some(record) = line.strip_prefix(&[LOG_LINE]) {
            // A log line that cannot be written is the relay's loss, not the session's.
            let _ = io::stderr().write_all(record);
            continue;
        }
        answered(shared, &line);
        out.write_all(&line).and_then(|()| out.flush()).map_err(|_| Broken::Client)?;
    }
}

/// Notes the answer `line` may be to one of the client's requests.
fn answered(shared: &Shared, line: &[u8]) {
    if is_answer(line) {
        let id = same_id(&id_in(line));
        if !id.is_null() {
            lock(&shared.pending).retain(|(pending, _)| *pending != id);
        }
    }
}

/// What the client sent, as far as resuming needs to know.
enum Sent {
    /// `initialize`, with its id.
    Initialize(Value),
    /// `notifications/initialized`.
    Initialized,
    /// Another request, with its id.
    Request(Value),
    /// A cancellation of the request with this id (which may get no answer).
    Cancelled(Value),
    /// A notification, an answer, or what does not parse (the service answers that).
    Other,
}

impl Sent {
    fn of(line: &[u8]) -> Self {
        let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else { return Sent::Other };
        let id = message.get("id").filter(|id| id.is_string() || id.is_number()).map(same_id);
        match (message.get("method").and_then(Value::as_str), id) {
            (Some("initialize"), Some(id)) => Sent::Initialize(id),
            (Some("notifications/initialized"), None) => Sent::Initialized,
            (Some("notifications/cancelled"), None) => {
                let cancelled = message.get("params").and_then(|p| p.get("requestId")).map(same_id);
                cancelled.map_or(Sent::Other, Sent::Cancelled)
            }
            (Some(_), Some(id)) => Sent::Request(id),
            _ => Sent::Other,
        }
    }
}

/// Copies stdin's lines to the service in use, until stdin ends.
fn from_client(shared: &Shared) {
    let mut input = io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let sent = Sent::of(&line);
        if let Sent::Cancelled(id) = &sent {
            lock(&shared.pending).retain(|(pending, _)| pending != id);
        }
        if !send(shared, &line, &sent) {
            break;
        }
    }
    // The service's session ends with the client's input; under the link's lock, so
    // that a resume under way shuts its new link too.
    let link = lock(&shared.link);
    shared.client_done.store(true, Ordering::SeqCst);
    let _ = link.stream.shutdown(std::net::Shutdown::Write);
}

/// Sends one client line on the link in use, and again on the next one if
/// that fails, unless the line is one a resume replays or answers itself.
/// False when the relay is over.
fn send(shared: &Shared, line: &[u8], sent: &Sent) -> bool {
    let id = match sent {
        Sent::Request(id) | Sent::Initialize(id) => Some(id),
        _ => None,
    };
    loop {
        let (generation, stream) = {
            // The handshake is kept under the link's lock, with the link it goes on: a resume
            // (which holds that lock from its copy of the handshake to the swap) either
            // replays it, or comes before it and this sends it on the new link, never both.
            let link = lock(&shared.link);
            match sent {
                Sent::Initialize(id) => lock(&shared.handshake).initialize = Some((line.to_vec(), id.clone())),
                Sent::Initialized => lock(&shared.handshake).initialized = Some(line.to_vec()),
                _ => {}
            }
            // Unanswered from here, as the resume sees it.
            if let Some(id) = id {
                lock(&shared.pending).push((id.clone(), link.generation));
            }
            (link.generation, link.stream.try_clone())
        };
        if stream.and_then(|mut s| s.write_all(line)).is_ok() {
            return true;
        }
        if matches!(sent, Sent::Initialize(_) | Sent::Initialized) {
            return true; // replayed by the resume
        }
        if let Some(id) = id {
            let mut pending = lock(&shared.pending);
            match pending.iter().position(|(p, g)| p == id && *g == generation) {
                Some(at) => drop(pending.swap_remove(at)),
                None => return true, // the resume answered it with an error
            }
        }
        let mut link = lock(&shared.link);
        while link.generation == generation && !shared.over.load(Ordering::SeqCst) {
            link = shared.relinked.wait(link).unwrap_or_else(|e| e.into_inner());
        }
        if shared.over.load(Ordering::SeqCst) {
            return false;
        }
    }
}

/// Opens the session on a new service: the handshake replayed, the old
/// service's unanswered requests answered with an error, then the link swapped.
fn resume(shared: &Shared, hello: &Hello) -> Result<Session, String> {
    // The old service's listener may outlive its sessions' connections by a moment
    // (a connection then taken is reset): a few tries, a little apart.
    let mut tries = 0;
    let next = loop {
        match connect(hello) {
            Ok(next) => break next,
            Err(why) if tries >= CONNECT_TRIES => return Err(why),
            Err(why) => tracing::debug!("the new service is not reached yet: {why}"),
        }
        tries += 1;
        std::thread::sleep(Duration::from_millis(200));
    };
    // Held from the handshake's copy to the swap (see `from_client`).
    let mut link = lock(&shared.link);
    let Handshake { initialize, initialized } = lock(&shared.handshake).clone();
    if let Some((line, id)) = initialize {
        let answered = !lock(&shared.pending).iter().any(|(p, _)| *p == id);
        let replayed =
            replay(&next.stream, &line, &id).map_err(|e| format!("the new service did not answer initialize: {e}"))?;
        if !answered {
            lock(&shared.pending).retain(|(p, _)| *p != id);
            let mut out = io::stdout().lock();
            let _ = out.write_all(&replayed).and_then(|()| out.flush());
        }
    }
    if let Some(line) = initialized {
        (&next.stream).write_all(&line).map_err(|e| e.to_string())?;
    }
    let stream = next.stream.try_clone().map_err(|e| e.to_string())?;
    let old = link.generation;
    {
        let mut pending = lock(&shared.pending);
        let mut out = io::stdout().lock();
        for (id, _) in pending.iter().filter(|(_, g)| *g == old) {
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
                "message": "this user's ragbox service ended during the request and was started again: send it again"}});
            let _ = writeln!(out, "{error}").and_then(|()| out.flush());
        }
        pending.retain(|(_, g)| *g != old);
    }
    *link = Link { generation: old + 1, stream };
    if shared.client_done.load(Ordering::SeqCst) {
        let _ = link.stream.shutdown(std::net::Shutdown::Write);
    }
    drop(link);
    shared.relinked.notify_all();
    tracing::info!(pid = next.pid, "the session goes on with a new ragbox service");
    Ok(next)
}

/// Sends `line` (an `initialize` with `id`) and returns the answer, log lines passed to stderr.
/// Read a byte at a time: what follows the answer (the session's first log lines) stays unread.
fn replay(stream: &UnixStream, line: &[u8], id: &Value) -> io::Result<Vec<u8>> {
    let mut conn = stream;
    conn.write_all(line)?;
    stream.set_read_timeout(Some(REPLAY_WAIT))?;
    let mut answer = Vec::new();
    let mut byte = [0u8];
    let found = loop {
        match conn.read(&mut byte) {
            Ok(0) => break Err(io::Error::new(io::ErrorKind::UnexpectedEof, "it closed the connection")),
            Ok(_) => answer.push(byte[0]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(e),
        }
        if byte[0] != b'\n' {
            continue;
        }
        if let Some(record) = answer.strip_prefix(&[LOG_LINE]) {
            let _ = io::stderr().write_all(record);
        } else if same_id(&id_in(&answer)) == *id {
            break Ok(std::mem::take(&mut answer));
        }
        answer.clear();
    };
    stream.set_read_timeout(None)?;
    found
}
