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
//! Only processes that index follow (`serve`, `ragbox index`, the service:
//! [`super::Options::follow_keywords`]): a reading command leaves the work to
//! the search that needs it.

use super::{Corpus, CorpusError};
use crate::sync::lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Shortest time from one step's start to the next unless a search hurries
/// it: writes meanwhile are indexed together (a large change's steps take
/// longer anyway).
const STEP_EVERY: Duration = Duration::from_secs(2);

/// One corpus's follower: at most one thread, woken again by writes made
/// while it works.
#[derive(Default)]
pub(super) struct Follower {
    /// Whether this process follows its writes here ([`super::Options`]).
    enabled: bool,
    state: Mutex<State>,
    /// Signalled when its thread goes idle.
    idle: Condvar,
    /// Signalled to end its pause: it must stop, or a search wants the
    /// keyword index up to date.
    wake: Condvar,
    /// Its corpus was closed: no step starts, and one under way gives up.
    closed: AtomicBool,
}

#[derive(Default)]
struct State {
    /// A thread is catching up.
    running: bool,
    /// A write landed since that thread last looked.
    again: bool,
    /// A search asked for the next step now (taken by the next pause).
    hurry: bool,
}

impl Follower {
    /// A follower that follows writes only when `enabled`.
    pub(super) fn new(enabled: bool) -> Self {
        Self { enabled, ..Self::default() }
    }

    /// Whether its thread is bringing the keyword index up to date.
    pub(super) fn running(&self) -> bool {
        lock(&self.state).running
    }

    /// Marks the follower idle (under its lock) and wakes those waiting for it.
    fn stop(&self, state: &mut State) {
        state.running = false;
        self.idle.notify_all();
    }

    /// Whether its steps must stop: its corpus was closed, or this process
    /// does not follow its writes.
    pub(super) fn stopping(&self) -> bool {
        self.closed.load(Ordering::Relaxed) || !self.enabled
    }

    /// A search is waiting for the keyword index: the next step starts
    /// without pausing.
    pub(super) fn hurry(&self) {
        lock(&self.state).hurry = true;
        self.wake.notify_all();
    }

    /// Follows no more writes: a step under way gives up before it commits,
    /// and this returns once its thread has ended, or at `deadline`.
    pub(super) fn close(&self, deadline: Option<Instant>) {
        self.closed.store(true, Ordering::Relaxed);
        // Under the lock a pause checks `stopping` with: it cannot miss the wake-up.
        let mut state = lock(&self.state);
        self.wake.notify_all();
        while state.running {
            state = match deadline {
                None => self.idle.wait(state).unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
                    self.idle.wait_timeout(state, left).unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    /// Waits `time` between two steps, or until a search hurries it on or it
    /// must stop.
    fn pause(&self, time: Duration) {
        let mut state: MutexGuard<'_, State> = lock(&self.state);
        // Checked under the lock `close` and `hurry` notify under: no signal is missed.
        if !self.stopping() && !std::mem::take(&mut state.hurry) {
            state = self.wake.wait_timeout(state, time).unwrap_or_else(|p| p.into_inner()).0;
        }
        state.hurry = false;
    }
}

/// Marks the follower idle if its thread panics, so the next write starts
/// another.
struct Running<'a>(Option<&'a Follower>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Some(follower) = self.0 {
            follower.stop(&mut lock(&follower.state));
        }
    }
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
                follower.pause(STEP_EVERY.saturating_sub(started.elapsed()));
            }
        });
        if let Err(e) = spawned {
            self.follower.stop(&mut lock(&self.follower.state));
            tracing::warn!("keyword index left to the next search: no thread ({e})");
        }
    }

    /// Waits for the follower, then brings the keyword index up to the store
    /// (`ragbox index` before it exits, so the next search finds it ready).
    pub fn settle_keywords(&self) -> Result<(), CorpusError> {
        // The writing is over: the follower's last step need not wait out its pause.
        self.follower.hurry();
        let mut state = lock(&self.follower.state);
        while state.running {
            state = self.follower.idle.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        drop(state);
        drop(self.current_keyword()?);
        Ok(())
    }
}
