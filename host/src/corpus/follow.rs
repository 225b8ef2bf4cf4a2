//! The keyword index kept in step with this process's own writes, on a
//! thread of its own. Without it the next keyword search caught up with
//! everything written since the last one: after a first index of a large tree
//! that was one search building the whole index (42 s for the cargo
//! registry's 835 MB, past a search's time limit). Following, the index is
//! built while the indexer writes, on the other core, outside the lock
//! searches take: a search hurries the follower on and waits at most a
//! second for it, then reads what is committed (while a large change is
//! indexed; once writing stops, the last step takes milliseconds).
//!
//! Only processes that index follow (`serve`, `ragbox index`): a reading
//! command leaves the work to the search that needs it, as before.

use super::{Corpus, CorpusError};
use crate::sync::lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Shortest time from one step's start to the next unless a search hurries
/// it: writes meanwhile are indexed together (a large change's steps take
/// longer anyway).
const STEP_EVERY: Duration = Duration::from_secs(2);

/// Whether this process's writes are followed.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Follow this process's writes from now on (`serve`, `ragbox index`).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Followers' threads running now, in every corpus.
static THREADS: Mutex<usize> = Mutex::new(0);
/// Signalled when one of them ends.
static THREAD_ENDED: Condvar = Condvar::new();

/// Longest the process waits at exit for a follower's step to end.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// Signalled to end the followers' pauses: following stops, or a search
/// wants the keyword index up to date.
static WAKE: Condvar = Condvar::new();
/// A search asked for the next step now (taken by the next pause).
static HURRY: AtomicBool = AtomicBool::new(false);

/// A search is waiting for the keyword index: the followers take their next
/// step without pausing.
pub(super) fn hurry() {
    HURRY.store(true, Ordering::Relaxed);
    let _threads = lock(&THREADS);
    WAKE.notify_all();
}

/// Stops following (the process is ending): no step starts from now on, and
/// this waits up to [`STOP_WAIT`] for those under way, so none is cut off
/// holding the store or the keyword index's writer.
pub fn stop() {
    ENABLED.store(false, Ordering::Relaxed);
    let deadline = Instant::now() + STOP_WAIT;
    let mut threads = lock(&THREADS);
    WAKE.notify_all();
    while *threads > 0 {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
        threads = THREAD_ENDED.wait_timeout(threads, left).unwrap_or_else(|p| p.into_inner()).0;
    }
}

/// One corpus's follower: at most one thread, woken again by writes made
/// while it works.
#[derive(Default)]
pub(super) struct Follower {
    state: Mutex<State>,
    idle: Condvar,
    /// Its corpus was closed: no step starts, and one under way gives up.
    closed: AtomicBool,
}

#[derive(Default)]
struct State {
    /// A thread is catching up.
    running: bool,
    /// A write landed since that thread last looked.
    again: bool,
}

impl Follower {
    /// Whether its thread is bringing the keyword index up to date.
    pub(super) fn running(&self) -> bool {
        lock(&self.state).running
    }

    /// Marks the follower idle (under its lock) and wakes those waiting for it.
    fn stop(&self, state: &mut State) {
        state.running = false;
        self.idle.notify_all();
    }

    /// Whether its steps must stop: its corpus was closed, or the process is ending.
    pub(super) fn stopping(&self) -> bool {
        self.closed.load(Ordering::Relaxed) || !ENABLED.load(Ordering::Relaxed)
    }

    /// Follows no more writes: a step under way gives up before it commits,
    /// and this returns once its thread has ended.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        {
            // Under the lock a pause checks `stopping` with: it cannot miss the wake-up.
            let _threads = lock(&THREADS);
            WAKE.notify_all();
        }
        let mut state = lock(&self.state);
        while state.running {
            state = self.idle.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Marks the follower idle if its thread panics, so the next write starts
/// another; and counts the thread out however it ends.
struct Running<'a>(Option<&'a Follower>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Some(follower) = self.0 {
            follower.stop(&mut lock(&follower.state));
        }
        *lock(&THREADS) -= 1;
        THREAD_ENDED.notify_all();
    }
}

/// Waits `time` between two steps, or until a search hurries the followers
/// on or `follower` must stop.
fn pause(time: Duration, follower: &Follower) {
    let threads = lock(&THREADS);
    // Checked under the lock `stop`, `close` and `hurry` notify under: no signal is missed.
    if !follower.stopping() && !HURRY.swap(false, Ordering::Relaxed) {
        drop(WAKE.wait_timeout(threads, time).unwrap_or_else(|p| p.into_inner()));
    }
    HURRY.store(false, Ordering::Relaxed);
}

impl Corpus {
    /// After a write: the keyword index catches up on the follower's thread,
    /// when this process follows its writes (and the corpus is shared:
    /// [`Corpus::into_shared`]).
    pub(super) fn follow_keywords(&self) {
        if self.follower.stopping() {
            return;
        }
        let Some(corpus) = self.me.upgrade() else { return };
        let mut state = lock(&self.follower.state);
        if state.running {
            state.again = true;
            return;
        }
        state.running = true;
        drop(state);
        *lock(&THREADS) += 1;
        let spawned = std::thread::Builder::new().name("ragbox-keywords".into()).spawn(move || {
            let follower = &corpus.follower;
            let mut running = Running(Some(follower));
            loop {
                if follower.stopping() {
                    // The process is ending or the corpus closed: the rest is the next one's to index.
                    follower.stop(&mut lock(&follower.state));
                    running.0 = None;
                    return;
                }
                let started = Instant::now();
                // This step reads the store as it is now: writes that landed before it
                // (during the pause) are its own, and need no step after it.
                lock(&follower.state).again = false;
                if let Err(e) = corpus.follow_step() {
                    tracing::warn!("keyword index not brought up to date: {e}");
                }
                let mut state = lock(&follower.state);
                if !std::mem::take(&mut state.again) {
                    // Idle under the same lock a write checks: none is missed.
                    follower.stop(&mut state);
                    running.0 = None;
                    return;
                }
                drop(state);
                // Writes meanwhile are taken in the next step, together: each step
                // commits, and many small commits cost merges (5 % of an embedding run's CPU).
                pause(STEP_EVERY.saturating_sub(started.elapsed()), follower);
            }
        });
        if let Err(e) = spawned {
            *lock(&THREADS) -= 1;
            self.follower.stop(&mut lock(&self.follower.state));
            tracing::warn!("keyword index left to the next search: no thread ({e})");
        }
    }

    /// Waits for the follower, then brings the keyword index up to the store
    /// (`ragbox index` before it exits, so the next search finds it ready).
    pub fn settle_keywords(&self) -> Result<(), CorpusError> {
        // The writing is over: the follower's last step need not wait out its pause.
        hurry();
        let mut state = lock(&self.follower.state);
        while state.running {
            state = self.follower.idle.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        drop(state);
        drop(self.current_keyword()?);
        Ok(())
    }
}
