//! The service side: one process serving every session its relays hand it,
//! each as `serve` would serve it in a process of its own (its workspace, its
//! config and tools, its file watch), over one engine, one model and one
//! corpus per workspace. It leaves once no session has been open for a while.

use super::place::{lock_file, log_file, max_log};
use super::{Hello, Reply};
use crate::logs;
use crate::mcp::{Offer, Profile, RagboxServer, serve_lines};
use crate::memory::Idle;
use crate::platform;
use crate::setup::Hub;
use anyhow::Context as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio::sync::watch;

/// How long the service stays once its last session ended, warm for the
/// next agent (`RAGBOX_SERVICE_LINGER`, in seconds, over it).
const LINGER: Duration = Duration::from_secs(120);

/// The longest linger `RAGBOX_SERVICE_LINGER` may ask for.
const MAX_LINGER: Duration = Duration::from_secs(24 * 3600);

/// How long a relay may take to say what it serves.
const HELLO_WAIT: Duration = Duration::from_secs(10);

/// Largest hello read.
const MAX_HELLO: u64 = 64 << 10;

/// The sessions open now: each one's served workspace.
struct Sessions {
    served: Mutex<Vec<PathBuf>>,
    count: watch::Sender<usize>,
}

impl Sessions {
    /// The workspaces the open sessions serve.
    fn served(&self) -> Vec<PathBuf> {
        self.served.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Serves the sessions relays bring to `socket` until none has been open
/// for the linger time.
pub fn run(socket: &Path) -> anyhow::Result<()> {
    let listener = std::os::unix::net::UnixListener::bind(socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    let bound = std::fs::symlink_metadata(socket)?.ino();
    listener.set_nonblocking(true)?;
    let linger = std::env::var("RAGBOX_SERVICE_LINGER")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
        .and_then(|secs| Duration::try_from_secs_f64(secs.min(MAX_LINGER.as_secs_f64())).ok())
        .unwrap_or(LINGER);
    let open_files = platform::raise_open_file_limit()
        .inspect_err(|e| tracing::warn!("cannot raise the limit on open files: {e}"))
        .unwrap_or(0);
    tracing::info!(socket = %socket.display(), pid = std::process::id(), linger_s = linger.as_secs_f64(), open_files, "ragbox service started");
    // Its stderr is its log (the relay that started it made it so): kept to a size while it runs.
    logs::rotate_at(log_file(socket), max_log());
    if let Some(dir) = socket.parent() {
        tidy(dir);
    }
    let hub = Arc::new(Hub::new()?);
    // As `serve --http`: calls on blocking threads, two runtime threads move messages.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_keep_alive(Duration::from_millis(500))
        .on_thread_park(crate::memory::release_thread)
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::UnixListener::from_std(listener)?;
        accept(listener, hub.clone(), linger).await;
        // Gone from the folder before the listener closes, under the lock a
        // starting relay holds: the next relay starts a new service.
        let lock = platform::private_std_file(std::fs::OpenOptions::new().create(true).truncate(false).write(true))
            .open(lock_file(socket))?;
        lock.lock()?;
        if std::fs::symlink_metadata(socket).is_ok_and(|m| m.ino() == bound) {
            std::fs::remove_file(socket)?;
        }
        anyhow::Ok(())
    })?;
    hub.stop();
    tracing::info!("no session for {:.0} s: ragbox service stopped", linger.as_secs_f64());
    Ok(())
}

/// Takes connections until no session has been open for `linger`.
async fn accept(listener: tokio::net::UnixListener, hub: Arc<Hub>, linger: Duration) {
    let (count, mut changed) = watch::channel(0usize);
    let sessions = Arc::new(Sessions { served: Mutex::new(Vec::new()), count });
    let idle = Arc::new(Idle::default());
    loop {
        let none_open = *changed.borrow_and_update() == 0;
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Counted from here, not once opened: the service does not leave under a session
                    // still opening (the first one's tools may take long to compile).
                    let counted = Counted::new(sessions.clone());
                    tokio::spawn(session(stream, hub.clone(), sessions.clone(), idle.clone(), counted));
                }
                Err(e) => {
                    tracing::warn!("cannot take a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = changed.changed() => {}
            // A call a closed session left running (it is being cancelled) ends first.
            () = async {
                tokio::time::sleep(linger).await;
                idle.quiet(Duration::from_millis(100)).await;
            }, if none_open => return,
        }
    }
}

/// Serves one relay's session: its hello, the reply, then MCP until the relay's input ends.
async fn session(stream: UnixStream, hub: Arc<Hub>, sessions: Arc<Sessions>, idle: Arc<Idle>, _counted: Counted) {
    if !platform::peer_is_this_user(&stream) {
        return tracing::warn!("refused a connection from another user's process");
    }
    // The relay's connection stays open through this second handle until the
    // session's work has ended and its corpora no session serves are closed:
    // the relay exits (and its agent may delete the workspace) only then.
    // (The halves are tokio's generic split: dropping one shuts nothing down.)
    let Ok((stream, held_open)) = hold_open(stream) else {
        return tracing::warn!("cannot take a connection: its socket could not be duplicated");
    };
    let (read, mut write) = tokio::io::split(stream);
    let mut read = BufReader::new(read);
    let hello = match tokio::time::timeout(HELLO_WAIT, read_hello(&mut read)).await {
        Ok(Ok(Some(hello))) => hello,
        Ok(Ok(None)) => return tracing::debug!("a connection closed without a hello"),
        Ok(Err(e)) => return tracing::warn!("refused a relay: {e}"),
        Err(_) => return tracing::warn!("refused a relay that said nothing for {} s", HELLO_WAIT.as_secs()),
    };
    // At once, so that a relay can tell a service that answers from one that is stuck.
    if let Err(e) = send(&mut write, &Reply::Opening).await {
        return tracing::warn!("the relay left before its session began: {e}");
    }
    let opened = match hello.tools.parse::<Profile>() {
        _ if hello.ragbox != env!("CARGO_PKG_VERSION") => {
            Err(format!("the service is ragbox {}, the relay {}", env!("CARGO_PKG_VERSION"), hello.ragbox))
        }
        Err(e) => Err(format!("--tools {}: {e}", hello.tools)),
        Ok(tools) => {
            let (hub, workspace) = (hub.clone(), hello.workspace.clone());
            let opened = tokio::task::spawn_blocking(move || hub.open(&workspace)).await;
            opened
                .map_err(|e| format!("opening the workspace failed inside the service: {e}"))
                .and_then(|opened| opened)
                .map(|runner| (runner, tools))
        }
    };
    let (runner, tools) = match opened {
        Ok(opened) => opened,
        Err(why) => {
            tracing::info!(workspace = %hello.workspace.display(), "left to the relay's own process: {why}");
            let _ = send(&mut write, &Reply::Standalone { why }).await;
            return;
        }
    };
    let served = runner.setup().workspaces.served().to_path_buf();
    if let Err(e) = send(&mut write, &Reply::Serving { pid: std::process::id() }).await {
        return tracing::warn!("the relay left before its session began: {e}");
    }
    logs::rotate_if_full();
    tracing::info!(workspace = %served.display(), watch = hello.watch, "session opened");
    let open = Open::new(sessions, hub, served.clone());
    let offer = Offer { tools, output_schemas: hello.output_schemas };
    // What the session's work logs goes to its relay's stderr too.
    let (log, logs) = logs::sink();
    let server = RagboxServer::sharing(Arc::new(runner), offer, idle, Some(log.clone()));
    let serving = logs::tagged(Some(log), serve_lines(server, hello.watch, read, write, Some(logs)));
    if let Err(e) = serving.await {
        tracing::warn!(workspace = %served.display(), "session ended: {e:#}");
    }
    // Its work is over (`serve_lines` waits for it); what no session serves now is closed.
    if tokio::task::spawn_blocking(move || open.close()).await.is_err() {
        tracing::warn!(workspace = %served.display(), "closing the session's indexes failed");
    }
    drop(held_open);
}

/// `stream` and a second handle to its socket, which keeps the connection
/// open after the first (and the halves made of it) are dropped.
fn hold_open(stream: UnixStream) -> std::io::Result<(UnixStream, std::os::unix::net::UnixStream)> {
    let stream = stream.into_std()?;
    let second = stream.try_clone()?;
    Ok((UnixStream::from_std(stream)?, second))
}

/// One open session's workspace among those served, until it is dropped
/// (however its task ends): then the corpora no session serves are let go.
struct Open {
    sessions: Arc<Sessions>,
    hub: Arc<Hub>,
    served: PathBuf,
    /// [`Open::close`] ran.
    closed: bool,
}

impl Open {
    fn new(sessions: Arc<Sessions>, hub: Arc<Hub>, served: PathBuf) -> Self {
        sessions.served.lock().unwrap_or_else(|e| e.into_inner()).push(served.clone());
        Self { sessions, hub, served, closed: false }
    }

    /// Takes the session out of those served and closes the corpora no open
    /// session serves, waiting until they write nothing more. Blocks.
    fn close(mut self) {
        self.closed = true;
        self.leave();
        let sessions = self.sessions.clone();
        self.hub.keep_only(move || sessions.served());
    }

    /// Takes the session out of those served.
    fn leave(&self) {
        let open = {
            let mut open = self.sessions.served.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(at) = open.iter().position(|w| *w == self.served) {
                open.swap_remove(at);
            }
            open.len()
        };
        tracing::info!(workspace = %self.served.display(), open, "session closed");
    }
}

impl Drop for Open {
    /// A session task that ended without [`Open::close`] (it panicked): the
    /// same, in the background.
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        self.leave();
        let (hub, sessions) = (self.hub.clone(), self.sessions.clone());
        drop(tokio::task::spawn_blocking(move || hub.keep_only(move || sessions.served())));
    }
}

/// One connection counted among the open sessions until it is dropped.
struct Counted(Arc<Sessions>);

impl Counted {
    fn new(sessions: Arc<Sessions>) -> Self {
        sessions.count.send_modify(|n| *n += 1);
        Self(sessions)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.count.send_modify(|n| *n -= 1);
    }
}

/// Removes the locks and logs of services gone a week (another build of
/// ragbox, another environment): each key leaves a few small files. Only
/// files named as a service names them; a lock only when no relay holds it.
fn tidy(dir: &Path) {
    const STALE: Duration = Duration::from_secs(7 * 24 * 3600);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match super::place::service_key(&path) {
            Some(key) if !dir.join(format!("{key}.sock")).exists() => {}
            _ => continue,
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        let stale = meta.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age > STALE);
        if !stale || !meta.is_file() {
            continue;
        }
        if path.extension().is_some_and(|x| x == "lock") {
            let held = std::fs::File::open(&path).map(|f| f.try_lock().is_err()).unwrap_or(true);
            if held {
                continue;
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}

async fn read_hello(read: &mut BufReader<tokio::io::ReadHalf<UnixStream>>) -> anyhow::Result<Option<Hello>> {
    let mut line = Vec::new();
    (&mut *read).take(MAX_HELLO).read_until(b'\n', &mut line).await?;
    if line.is_empty() {
        return Ok(None); // a look whether the service runs (`ragbox doctor`)
    }
    if line.last() != Some(&b'\n') {
        anyhow::bail!("its hello ended early or is over {MAX_HELLO} bytes");
    }
    Ok(Some(serde_json::from_slice(&line)?))
}

async fn send(write: &mut tokio::io::WriteHalf<UnixStream>, reply: &Reply) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(reply)?;
    line.push(b'\n');
    write.write_all(&line).await?;
    write.flush().await
}
