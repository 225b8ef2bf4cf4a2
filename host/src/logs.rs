//! Where a log line goes: the process's stderr and, while a thread does the
//! work of one of the per-user service's sessions, that session's relay too,
//! which writes it to its own stderr: the agent's log of its server shows
//! what its session did, as a server in a process of its own would.
//!
//! A process that serves every agent must not let one fill its log: lines
//! from one place in the code, for one session, past [`LINES_PER_WINDOW`] in
//! [`WINDOW`] are held back and counted, and told in one line ([`Throttle`]);
//! and the per-user service's log is started again when it passes its size,
//! the last one kept beside it ([`rotate_at`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
#[cfg(unix)]
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Mutex;
#[cfg(unix)]
use std::sync::OnceLock;
#[cfg(unix)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context as LayerContext, Layer};

/// A session's log lines, each one line without its newline.
#[derive(Clone, Debug)]
pub struct Sink {
    lines: mpsc::Sender<Vec<u8>>,
    /// Tells sessions apart for [`Throttle`].
    session: u64,
}

/// What a session's sink holds: past it (its relay has stopped reading),
/// lines are dropped rather than kept in the service every session shares.
#[cfg(unix)]
pub const SINK_LINES: usize = 4096;

/// A session's sink and the end its writer reads (the per-user service's: Unix only).
#[cfg(unix)]
pub fn sink() -> (Sink, mpsc::Receiver<Vec<u8>>) {
    static SESSIONS: AtomicU64 = AtomicU64::new(1);
    let (lines, receiver) = mpsc::channel(SINK_LINES);
    (Sink { lines, session: SESSIONS.fetch_add(1, Ordering::Relaxed) }, receiver)
}

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// The sink of the session whose work this thread is doing, if any.
pub fn current() -> Option<Sink> {
    SINK.with(|s| s.borrow().clone())
}

/// Runs `f` with this thread's log lines also sent to `sink`.
pub fn with<T>(sink: Option<&Sink>, f: impl FnOnce() -> T) -> T {
    let Some(sink) = sink else { return f() };
    /// Puts the thread's previous sink back, however `f` ends.
    struct Restore(Option<Sink>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SINK.with(|s| *s.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(SINK.with(|s| s.replace(Some(sink.clone()))));
    f()
}

/// `future`, whose log lines also go to `sink` whenever it runs.
pub fn tagged<F: Future>(sink: Option<Sink>, future: F) -> Tagged<F> {
    Tagged { sink, future: Box::pin(future) }
}

/// A future whose log lines also go to a session's sink (see [`tagged`]).
pub struct Tagged<F> {
    sink: Option<Sink>,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for Tagged<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        with(this.sink.as_ref(), || this.future.as_mut().poll(cx))
    }
}

/// What every process logs through: stderr, and the session's sink where
/// the thread has one.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stderr;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = Stderr;

    fn make_writer(&'a self) -> Stderr {
        Stderr
    }
}

impl io::Write for Stderr {
    /// One call per event: the formatter writes each whole.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::Write::write_all(&mut io::stderr(), buf)?;
        #[cfg(unix)]
        if let Some(rotation) = ROTATION.get() {
            rotation.wrote(buf.len() as u64);
        }
        SINK.with(|s| {
            if let Some(sink) = s.borrow().as_ref() {
                let _ = sink.lines.try_send(one_line(buf));
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::Write::flush(&mut io::stderr())
    }
}

/// Lines one place in the code may log for one session in [`WINDOW`]; the
/// rest of the window's are held back and counted.
pub const LINES_PER_WINDOW: u32 = 20;
/// See [`LINES_PER_WINDOW`].
pub const WINDOW: Duration = Duration::from_secs(10);
/// Places tracked at once; past it, the oldest windows are forgotten.
const MAX_SITES: usize = 4096;

/// Holds back a storm of lines from one place (a rename storm beside a
/// watched workspace made the file-watch library log 142,545 lines in 8 s):
/// past [`LINES_PER_WINDOW`] a window, a place's lines for one session are
/// counted, and the count is told once the next window begins.
#[derive(Default)]
pub struct Throttle {
    sites: Mutex<HashMap<(String, u32, u64), Site>>,
}

struct Site {
    since: Instant,
    lines: u32,
    held: u64,
}

impl Throttle {
    /// Whether a line from `key` passes at `now`, and how many of its lines
    /// were held back in the window that just ended, to tell.
    fn admit(&self, key: (String, u32, u64), now: Instant) -> (bool, Option<u64>) {
        let mut sites = self.sites.lock().unwrap_or_else(|e| e.into_inner());
        if sites.len() >= MAX_SITES && !sites.contains_key(&key) {
            sites.retain(|_, site| now.duration_since(site.since) < WINDOW);
            // Every place still in its window: this one goes untracked (and unheld).
            if sites.len() >= MAX_SITES {
                return (true, None);
            }
        }
        let site = sites.entry(key).or_insert(Site { since: now, lines: 0, held: 0 });
        let mut told = None;
        if now.duration_since(site.since) >= WINDOW {
            told = (site.held > 0).then_some(site.held);
            *site = Site { since: now, lines: 0, held: 0 };
        }
        site.lines += 1;
        let allowed = site.lines <= LINES_PER_WINDOW;
        if !allowed {
            site.held += 1;
        }
        (allowed, told)
    }
}

impl<S: Subscriber> Layer<S> for Throttle {
    fn event_enabled(&self, event: &Event<'_>, _ctx: LayerContext<'_, S>) -> bool {
        use tracing_log::NormalizeEvent as _;
        // A `log` record (the file-watch library's) by where it was written, not its one shared callsite.
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        let session = SINK.with(|s| s.borrow().as_ref().map_or(0, |sink| sink.session));
        let key = (meta.target().to_string(), meta.line().unwrap_or(0), session);
        let (allowed, told) = self.admit(key, Instant::now());
        // Outside the lock: this line passes through here too.
        if let Some(held) = told {
            tracing::warn!(
                "{held} more lines like the next one (from {}) were held back in {} s",
                meta.target(),
                WINDOW.as_secs()
            );
        }
        allowed
    }
}

/// The per-user service's log, started again past its size (the service is Unix's).
#[cfg(unix)]
struct Rotation {
    path: PathBuf,
    max: u64,
    written: AtomicU64,
    /// Held while the log is moved aside.
    moving: Mutex<()>,
}

#[cfg(unix)]
static ROTATION: OnceLock<Rotation> = OnceLock::new();

/// From now on, this process's stderr (which is the file at `path`) is
/// started again whenever it passes `max` bytes: the file so far becomes
/// `path.1` (replacing an older one) and a new one takes stderr's place.
#[cfg(unix)]
pub fn rotate_at(path: PathBuf, max: u64) {
    let written = std::fs::metadata(&path).map_or(0, |m| m.len());
    let _ = ROTATION.set(Rotation { path, max, written: AtomicU64::new(written), moving: Mutex::new(()) });
}

/// Starts the service's log again now if it is past its size (written by
/// other hands too, or before the count began): at each session's opening.
#[cfg(unix)]
pub fn rotate_if_full() {
    if let Some(rotation) = ROTATION.get() {
        let size = std::fs::metadata(&rotation.path).map_or(0, |m| m.len());
        rotation.written.store(size, Ordering::Relaxed);
        rotation.wrote(0);
    }
}

#[cfg(unix)]
impl Rotation {
    /// Counts `bytes` written, and starts the log again past the size.
    fn wrote(&self, bytes: u64) {
        if self.written.fetch_add(bytes, Ordering::Relaxed) + bytes <= self.max {
            return;
        }
        let Ok(_moving) = self.moving.try_lock() else { return };
        if self.written.load(Ordering::Relaxed) <= self.max {
            return; // another thread just did
        }
        let old = self.path.with_extension("log.1");
        let fresh = std::fs::rename(&self.path, &old).and_then(|()| {
            crate::platform::private_std_file(std::fs::OpenOptions::new().create(true).append(true)).open(&self.path)
        });
        match fresh.and_then(|file| crate::platform::redirect_stderr(&file)) {
            Ok(()) => self.written.store(0, Ordering::Relaxed),
            // Not again at every line: once more after another `max`.
            Err(e) => {
                self.written.store(0, Ordering::Relaxed);
                let said = format!("ragbox: cannot start the log {} again: {e}\n", self.path.display());
                let _ = io::Write::write_all(&mut io::stderr(), said.as_bytes());
            }
        }
    }
}

/// `record` as one line without its newline: a line break inside it (which
/// the formatter does not write, but nothing else may split the relay's lines)
/// is written `\n`.
fn one_line(record: &[u8]) -> Vec<u8> {
    let record = record.strip_suffix(b"\n").unwrap_or(record);
    let mut line = Vec::with_capacity(record.len());
    for &b in record {
        match b {
            b'\n' => line.extend_from_slice(b"\\n"),
            b'\r' => line.extend_from_slice(b"\\r"),
            b => line.push(b),
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn a_record_is_one_line_and_only_its_sessions() {
        use std::io::Write as _;
        assert_eq!(one_line(b"a\nb\r\n"), b"a\\nb\\r");
        let (tx, mut rx) = sink();
        with(Some(&tx), || {
            assert!(current().is_some());
            Stderr.write_all(b"in the session\n").unwrap();
        });
        assert!(current().is_none());
        Stderr.write_all(b"outside\n").unwrap();
        assert_eq!(rx.try_recv().unwrap(), b"in the session");
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn a_storm_is_held_back_and_the_places_tracked_stay_bounded() {
        let throttle = Throttle::default();
        let start = Instant::now();
        let site = |line: u32, session: u64| ("notify".to_string(), line, session);
        let passed = (0..LINES_PER_WINDOW + 5).filter(|_| throttle.admit(site(1, 1), start).0).count();
        assert_eq!(passed, LINES_PER_WINDOW as usize);
        assert_eq!(throttle.admit(site(1, 1), start + WINDOW), (true, Some(5)), "the count is told once");
        // Ten times as many places as it tracks, all within one window: the map stays bounded.
        for n in 0..MAX_SITES as u64 * 10 {
            throttle.admit(site(2, n), start + WINDOW);
        }
        assert!(throttle.sites.lock().unwrap().len() <= MAX_SITES);
    }
}
