//! Freed memory given back to the OS once a server falls idle.
//!
//! mimalloc keeps freed pages for reuse and gives them back only after a delay
//! (1 s), and only when some thread allocates again: a server that answers a
//! few searches and then waits for its agent keeps ~10 MiB it no longer uses,
//! per agent. Giving it back after every call costs the next call its page
//! faults (~2 ms a search, measured); giving it back once nothing has run for
//! a while costs only the first call after the pause. The stores kept open
//! between calls are closed then too (their page caches go).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// How long a server must have run nothing before its freed memory goes back.
const IDLE_AFTER: Duration = Duration::from_secs(2);

/// Counts the work in flight, and gives freed memory back when the last of a
/// burst has been over for [`IDLE_AFTER`].
#[derive(Default)]
pub struct Idle {
    /// Work running now.
    busy: AtomicUsize,
    /// Bumped when work ends: a release scheduled by an earlier end is stale.
    ended: AtomicU64,
}

/// Work in flight; when dropped inside a tokio runtime, schedules the release.
pub struct Busy(Arc<Idle>);

impl Idle {
    /// Marks work as running until the guard is dropped.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Busy(self.clone())
    }

    /// Returns once nothing has run for `quiet`: for work that can wait, so
    /// that it never takes a core from the warm-up or a call.
    pub async fn quiet(&self, quiet: Duration) {
        loop {
            let ended = self.ended.load(Ordering::SeqCst);
            let idle = self.busy.load(Ordering::SeqCst) == 0;
            tokio::time::sleep(quiet).await;
            if idle && self.busy.load(Ordering::SeqCst) == 0 && self.ended.load(Ordering::SeqCst) == ended {
                return;
            }
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let idle = self.0.clone();
        let ended = idle.ended.fetch_add(1, Ordering::SeqCst) + 1;
        idle.busy.fetch_sub(1, Ordering::SeqCst);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            tokio::time::sleep(IDLE_AFTER).await;
            // Nothing running, and nothing ended since this did: the burst is over.
            if idle.busy.load(Ordering::SeqCst) == 0 && idle.ended.load(Ordering::SeqCst) == ended {
                // The rayon broadcast waits for the pool's threads: not on a runtime thread.
                let _ = tokio::task::spawn_blocking(release_all).await;
            }
        });
    }
}

/// Hands the calling thread's emptied pages to the allocator's shared arenas,
/// where [`release_all`] finds them (no system call: cheap after every call).
pub fn release_thread() {
    // SAFETY: mimalloc's collection entry point, safe from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(false) }
}

/// Gives every freed page back to the OS: the rayon pool's threads', this
/// thread's, and what any thread handed to the arenas, with the buffers the
/// encoder keeps between forward passes.
pub fn release_all() {
    crate::store::close_kept();
    ragbox_kernels::scratch::release();
    rayon::broadcast(|_| {
        ragbox_kernels::attention::release_thread();
        // SAFETY: as in `release_thread`; `force` also purges the arenas at once.
        unsafe { libmimalloc_sys::mi_collect(true) }
    });
    // SAFETY: as above.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn quiet_waits_for_work_in_flight_and_a_pause_after_it() {
        let idle = Arc::new(Idle::default());
        let quiet = Duration::from_millis(50);
        // Nothing runs: one pause.
        let started = Instant::now();
        idle.quiet(quiet).await;
        assert!(started.elapsed() >= quiet);

        // Work in flight for 300 ms, then ending: quiet returns only a pause after it ends.
        let busy = idle.busy();
        let ends = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            drop(busy);
            Instant::now()
        });
        idle.quiet(quiet).await;
        let returned = Instant::now();
        let ended = ends.await.expect("the task ran");
        assert!(returned >= ended + quiet, "returned {:?} after the work ended", returned - ended);
    }
}
