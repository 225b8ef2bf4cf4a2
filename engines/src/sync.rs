//! Locks shared across threads.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`; a panic elsewhere while holding it leaves data that is still usable.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
