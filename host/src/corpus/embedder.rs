//! The embedding model, loaded once per process on first use and shared by
//! every workspace and call. A missing model is not remembered: fetching it
//! while a server runs makes the next call work.

use crate::embed::{EmbedError, Embedder, ModelDir};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The model folder and, once loaded, the model.
pub struct SharedEmbedder {
    dir: PathBuf,
    loaded: Mutex<Option<Arc<Embedder>>>,
}

impl SharedEmbedder {
    /// The model in `dir`, not loaded yet.
    pub fn new(dir: PathBuf) -> Self {
        Self { dir, loaded: Mutex::new(None) }
    }

    /// The model folder.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The loaded model, loading it now if needed.
    pub fn get(&self) -> Result<Arc<Embedder>, EmbedError> {
        let mut slot = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(embedder) = slot.as_ref() {
            return Ok(embedder.clone());
        }
        let started = std::time::Instant::now();
        let embedder = Arc::new(Embedder::load(&ModelDir::open(&self.dir)?)?);
        tracing::info!(model = %embedder.info().id, ms = started.elapsed().as_millis() as u64, "embedding model loaded");
        *slot = Some(embedder.clone());
        Ok(embedder)
    }
}
