//! One writing call at a time per workspace in a process: the per-user
//! service's sessions, a `--watch` run and an agent's `embed_workspace` on
//! one workspace take turns instead of reading and embedding the same files
//! at once (a watch run and an explicit run extracted the same documents side
//! by side: 152 s and 1.12 GB). A call that asks for exactly what the running
//! one asks (same tool bytes, grants and arguments) waits for it and takes its
//! result, but only while the workspace's watch has seen no change since that
//! run started: a call made after an edit must see the edit.

use super::memo::Stamp;
use crate::sync::lock;
use std::any::Any;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A finished call's result, for the calls that joined it (what it is, the
/// caller knows: this layer only hands it on).
pub type Shared = Arc<dyn Any + Send + Sync>;

/// How often a waiting call looks whether it must stop.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// The writing turn of one workspace.
#[derive(Default)]
pub struct Turn {
    running: Mutex<Option<Arc<Run>>>,
    /// Signalled when a run ends.
    ended: Condvar,
}

/// The call that has the turn: what it asked, and its result once it ends.
struct Run {
    key: String,
    /// The workspace as the watch saw it when the run started (`None`: unwatched, never joined).
    at: Option<Stamp>,
    /// `Some` once it ended: its result, or `None` when it has none to share.
    result: Mutex<Option<Option<Shared>>>,
    done: Condvar,
}

/// What [`Turn::take`] gives.
pub enum Taken<'a> {
    /// The turn: the call runs, then [`Held::finish`]es.
    Turn(Held<'a>),
    /// The result of a run that asked the same, which the call takes as its own.
    Joined(Shared),
}

/// The turn, held until finished or dropped.
pub struct Held<'a> {
    turn: &'a Turn,
    run: Arc<Run>,
    finished: bool,
}

impl Turn {
    /// The turn for a call asking `key` with the workspace at `now`, or the
    /// result of the run that asked the same at the same state; waits while
    /// another holds it. `None` when `stop` said so first.
    pub fn take(&self, key: &str, now: &dyn Fn() -> Option<Stamp>, stop: &dyn Fn() -> bool) -> Option<Taken<'_>> {
        let mut running = lock(&self.running);
        loop {
            let at = now();
            match running.as_ref() {
                None => {
                    let run =
                        Arc::new(Run { key: key.to_string(), at, result: Mutex::new(None), done: Condvar::new() });
                    *running = Some(run.clone());
                    return Some(Taken::Turn(Held { turn: self, run, finished: false }));
                }
                Some(run) if run.key == key && at.is_some() && run.at == at => {
                    let run = run.clone();
                    drop(running);
                    match run.wait(stop)? {
                        Some(shared) => return Some(Taken::Joined(shared)),
                        // It ended without a result to share (it was cancelled): the turn is next.
                        None => running = lock(&self.running),
                    }
                }
                Some(_) => {
                    if stop() {
                        return None;
                    }
                    running = self.ended.wait_timeout(running, LOOK_EVERY).unwrap_or_else(|p| p.into_inner()).0;
                }
            }
        }
    }
}

impl Run {
    /// Its result once it ends; `None` when `stop` said so first.
    fn wait(&self, stop: &dyn Fn() -> bool) -> Option<Option<Shared>> {
        let mut result = lock(&self.result);
        loop {
            if let Some(result) = result.as_ref() {
                return Some(result.clone());
            }
            if stop() {
                return None;
            }
            result = self.done.wait_timeout(result, LOOK_EVERY).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

impl Held<'_> {
    /// Ends the turn; the calls that joined take `shared` (`None`: they run themselves).
    pub fn finish(mut self, shared: Option<Shared>) {
        self.end(shared);
    }

    fn end(&mut self, shared: Option<Shared>) {
        self.finished = true;
        *lock(&self.run.result) = Some(shared);
        self.run.done.notify_all();
        *lock(&self.turn.running) = None;
        self.turn.ended.notify_all();
    }
}

impl Drop for Held<'_> {
    /// A call that ended without [`Held::finish`] (it panicked) leaves nothing to share.
    fn drop(&mut self) {
        if !self.finished {
            self.end(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::memo::Memo;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A watched workspace's memo, for its stamps.
    fn watched() -> Arc<Memo> {
        let memo = Arc::new(Memo::default());
        std::mem::forget(memo.watching());
        memo
    }

    #[test]
    fn one_call_at_a_time_and_the_same_ask_takes_the_running_ones_result() {
        let (turn, memo) = (Arc::new(Turn::default()), watched());
        let runs = Arc::new(AtomicUsize::new(0));
        let now = || memo.stamp(0);
        let Some(Taken::Turn(held)) = turn.take("index {}", &now, &|| false) else {
            panic!("the first takes the turn")
        };
        // The same ask joins; another waits for the turn.
        let joined = std::thread::spawn({
            let (turn, memo) = (turn.clone(), memo.clone());
            move || match turn.take("index {}", &|| memo.stamp(0), &|| false) {
                Some(Taken::Joined(shared)) => *shared.downcast_ref::<u32>().unwrap(),
                _ => panic!("joined"),
            }
        });
        let other = std::thread::spawn({
            let (turn, memo, runs) = (turn.clone(), memo.clone(), runs.clone());
            move || match turn.take("index {paths}", &|| memo.stamp(0), &|| false) {
                Some(Taken::Turn(held)) => {
                    runs.fetch_add(1, Ordering::SeqCst);
                    held.finish(None);
                }
                _ => panic!("its own turn"),
            }
        });
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(runs.load(Ordering::SeqCst), 0, "no second writer while the first runs");
        held.finish(Some(Arc::new(7u32)));
        assert_eq!(joined.join().unwrap(), 7);
        other.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_call_after_a_change_or_without_a_watch_runs_itself() {
        let (turn, memo) = (Arc::new(Turn::default()), watched());
        let Some(Taken::Turn(held)) = turn.take("k", &|| memo.stamp(0), &|| false) else { panic!() };
        memo.changed(); // a file edited after the run started
        let after_edit = std::thread::spawn({
            let (turn, memo) = (turn.clone(), memo.clone());
            move || matches!(turn.take("k", &|| memo.stamp(0), &|| false), Some(Taken::Turn(_)))
        });
        std::thread::sleep(Duration::from_millis(100));
        held.finish(Some(Arc::new(1u32)));
        assert!(after_edit.join().unwrap(), "a call made after an edit runs, it does not take the older result");

        let unwatched = Memo::default();
        let Some(Taken::Turn(held)) = turn.take("k", &|| unwatched.stamp(0), &|| false) else { panic!() };
        let second = std::thread::spawn({
            let turn = turn.clone();
            move || matches!(turn.take("k", &|| Memo::default().stamp(0), &|| false), Some(Taken::Turn(_)))
        });
        std::thread::sleep(Duration::from_millis(100));
        held.finish(Some(Arc::new(1u32)));
        assert!(second.join().unwrap(), "with no watch, nothing vouches the result is still true");
    }

    #[test]
    fn a_run_with_nothing_to_share_leaves_the_turn_to_who_joined_and_a_wait_stops_when_told() {
        let (turn, memo) = (Arc::new(Turn::default()), watched());
        let Some(Taken::Turn(held)) = turn.take("k", &|| memo.stamp(0), &|| false) else { panic!() };
        let stopped = turn.take("other", &|| memo.stamp(0), &|| true);
        assert!(stopped.is_none(), "told to stop while waiting");
        let joiner = std::thread::spawn({
            let (turn, memo) = (turn.clone(), memo.clone());
            move || matches!(turn.take("k", &|| memo.stamp(0), &|| false), Some(Taken::Turn(_)))
        });
        std::thread::sleep(Duration::from_millis(100));
        drop(held); // ended without a result (a panic, a cancel)
        assert!(joiner.join().unwrap(), "the joiner takes the turn and runs itself");
    }
}
