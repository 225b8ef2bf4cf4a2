//! Where a log line goes: the process's stderr and, while a thread does the
//! work of one of the per-user service's sessions, that session's relay too,
//! which writes it to its own stderr: the agent's log of its server shows
//! what its session did, as a server in a process of its own would.

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// A session's log lines, each one line without its newline.
pub type Sink = mpsc::Sender<Vec<u8>>;

/// What a session's sink holds: past it (its relay has stopped reading),
/// lines are dropped rather than kept in the service every session shares.
#[cfg(unix)]
pub const SINK_LINES: usize = 4096;

/// A session's sink and the end its writer reads (the per-user service's: Unix only).
#[cfg(unix)]
pub fn sink() -> (Sink, mpsc::Receiver<Vec<u8>>) {
    mpsc::channel(SINK_LINES)
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
        io::stderr().write_all(buf)?;
        SINK.with(|s| {
            if let Some(sink) = s.borrow().as_ref() {
                let _ = sink.try_send(one_line(buf));
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
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
    use std::io::Write as _;

    #[test]
    #[cfg(unix)]
    fn a_record_is_one_line_and_only_its_sessions() {
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
}
