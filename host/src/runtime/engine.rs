//! The wasmtime engine shared by all components, with its epoch ticker.

use super::RuntimeError;
use std::time::Duration;
use wasmtime::{Config, Engine};

/// How often the epoch advances; deadlines and cancellation are checked at this
/// granularity.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Builds the engine (component model, epoch interruption) and starts the
/// thread that advances its epoch; the thread ends when the engine is dropped.
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
            }
        })
        .map_err(|e| RuntimeError::Engine(format!("cannot start the epoch thread: {e}")))?;
    Ok(engine)
}
