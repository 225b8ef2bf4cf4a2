//! A component's linked form (its `InstancePre`), held for good or made again
//! at its first call. A server loads every built-in at start to ask what it
//! is, then lets go of them: an agent calls two or three of the thirteen, and
//! each one held keeps its compiled code's pages and wasmtime's metadata
//! (measured: ~10 MiB of a lone server's PSS, 1.5 MiB of it private).

use crate::sync::lock;
use std::sync::{Arc, Mutex};

/// Makes a component's linked form again (from the compile cache).
pub(crate) type Relink<P> = Arc<dyn Fn() -> Result<P, String> + Send + Sync>;

/// A linked component, held, or made at its first use and held from then on.
pub(crate) struct Linked<P> {
    held: Mutex<Option<Arc<P>>>,
    relink: Option<Relink<P>>,
}

impl<P> Linked<P> {
    /// Held for good.
    pub(crate) fn held(pre: P) -> Self {
        Self { held: Mutex::new(Some(Arc::new(pre))), relink: None }
    }

    /// Not held: `relink` makes it at the first [`Self::get`].
    pub(crate) fn on_demand(relink: Relink<P>) -> Self {
        Self { held: Mutex::new(None), relink: Some(relink) }
    }

    /// The linked component, made now if it is not held. A failure is not
    /// kept: the next call tries again (a cache file may be back by then).
    pub(crate) fn get(&self) -> Result<Arc<P>, String> {
        // Held across the relink: two first calls make it once.
        let mut held = lock(&self.held);
        if let Some(pre) = held.as_ref() {
            return Ok(pre.clone());
        }
        let relink = self.relink.as_ref().ok_or("the component was let go with no way to load it again")?;
        let pre = Arc::new(relink()?);
        *held = Some(pre.clone());
        Ok(pre)
    }

    /// Whether it is held now.
    pub(crate) fn is_held(&self) -> bool {
        lock(&self.held).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn made_once_at_first_use_and_a_failure_is_tried_again() {
        let made = Arc::new(AtomicUsize::new(0));
        let counter = made.clone();
        let linked = Linked::on_demand(Arc::new(move || match counter.fetch_add(1, Ordering::SeqCst) {
            0 => Err("cache file gone".to_string()),
            n => Ok(n),
        }));
        assert!(!linked.is_held());
        assert_eq!(linked.get().unwrap_err(), "cache file gone");
        assert!(!linked.is_held());
        assert_eq!(*linked.get().unwrap(), 1);
        assert_eq!(*linked.get().unwrap(), 1, "held after the first success");
        assert_eq!(made.load(Ordering::SeqCst), 2);
        assert!(linked.is_held());
        assert_eq!(*Linked::held(7).get().unwrap(), 7);
    }
}
