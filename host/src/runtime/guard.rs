//! Per-call limits enforced inside the store: memory growth, and the deadline
//! and cancellation checked on every epoch tick. Each records why it stopped
//! the guest, so the host can say what happened instead of "wasm trap".

use std::time::Instant;
use tokio_util::sync::CancellationToken;
use wasmtime::ResourceLimiter;

/// Why the host stopped a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// The wall-clock deadline passed.
    Deadline,
    /// The client cancelled the call.
    Cancelled,
}

/// Limits and stop reasons for one call.
#[derive(Debug)]
pub struct Guard {
    memory_limit: usize,
    /// The size a denied `memory.grow` asked for, if one was denied.
    pub memory_denied: Option<usize>,
    deadline: Instant,
    /// When `should_stop` starts saying yes: a cooperative tool then has the
    /// last tenth of its time to return what it has before the hard stop.
    soft_deadline: Instant,
    cancel: CancellationToken,
    /// Set when the epoch callback interrupted the guest.
    pub interrupted: Option<Interrupt>,
    /// Keeps the epoch advancing while the store lives.
    _ticking: super::engine::Ticking,
}

impl Guard {
    /// A guard allowing `memory_limit` bytes until `deadline`, or until `cancel` fires.
    pub fn new(memory_limit: usize, timeout: std::time::Duration, cancel: CancellationToken) -> Self {
        let now = Instant::now();
        Self {
            memory_limit,
            memory_denied: None,
            deadline: now + timeout,
            soft_deadline: now + timeout.mul_f64(0.9),
            cancel,
            interrupted: None,
            _ticking: super::engine::Ticking::start(),
        }
    }

    /// Checked on every epoch tick: `Some` means stop the guest now.
    pub fn check(&mut self) -> Option<Interrupt> {
        let reason = if self.cancel.is_cancelled() {
            Some(Interrupt::Cancelled)
        } else if Instant::now() >= self.deadline {
            Some(Interrupt::Deadline)
        } else {
            None
        };
        self.interrupted = self.interrupted.or(reason);
        reason
    }

    /// True once the call is over for good: cancelled, or past its deadline.
    /// Long host work checks this, since the epoch cannot interrupt native code.
    pub fn must_stop(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }

    /// The time left before the call should wind down (90% of its time).
    pub fn soft_remaining(&self) -> std::time::Duration {
        self.soft_deadline.saturating_duration_since(Instant::now())
    }

    /// True once the call should wind down: cancelled, or 90% of its time used.
    pub fn should_stop(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.soft_deadline
    }
}

impl ResourceLimiter for Guard {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory_limit {
            self.memory_denied = Some(desired);
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        // Tables hold function references; a million is far beyond any real tool.
        Ok(desired <= 1_000_000)
    }
}
