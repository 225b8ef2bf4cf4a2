//! The wasmtime engine shared by all components, with its epoch ticker.

use super::RuntimeError;
use crate::sync::lock;
use std::sync::{Condvar, Mutex};
use std::time::Duration;
use wasmtime::{Config, Engine};

/// How often the epoch advances; deadlines and cancellation are checked at this
/// granularity.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Stores alive now, and the ticker's wake-up: the epoch advances only while
/// some store runs (an idle server would otherwise wake 100 times a second).
static ALIVE: Mutex<usize> = Mutex::new(0);
static WAKE: Condvar = Condvar::new();

/// How often a sleeping ticker looks whether its engine is gone.
const ENGINE_CHECK: Duration = Duration::from_secs(5);

/// Held by every store (in its guard) for as long as it lives: the epoch
/// advances meanwhile, so its deadline and cancellation are checked.
#[derive(Debug)]
pub struct Ticking(());

impl Ticking {
    /// Starts the ticker if it sleeps.
    pub fn start() -> Self {
        *lock(&ALIVE) += 1;
        WAKE.notify_all();
        Ticking(())
    }
}

impl Drop for Ticking {
    fn drop(&mut self) {
        let mut alive = lock(&ALIVE);
        *alive = alive.saturating_sub(1);
    }
}

/// Builds the engine (component model, epoch interruption) and starts the
/// thread that advances its epoch while a store is alive; the thread ends
/// when the engine is dropped.
pub fn new_engine() -> Result<Engine, RuntimeError> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    let engine = Engine::new(&config).map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("ragbox-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
                let mut alive = lock(&ALIVE);
                while *alive == 0 {
                    alive = WAKE.wait_timeout(alive, ENGINE_CHECK).unwrap_or_else(|p| p.into_inner()).0;
                    if weak.upgrade().is_none() {
                        return;
                    }
                }
            }
        })
        .map_err(|e| RuntimeError::Engine(format!("cannot start the epoch thread: {e}")))?;
    Ok(engine)
}
