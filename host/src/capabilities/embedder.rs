//! `ragbox:tools/embedder`: the model, run natively.

use crate::embed::EmbedKind as Kind;
use crate::runtime::HostState;
use crate::runtime::bindings::ragbox::tools::embedder::{EmbedKind, Host, ModelInfo};

/// Texts one call may send: enough for any batch, small enough to bound memory.
const MAX_TEXTS: usize = 4096;

impl Host for HostState {
    fn model(&mut self) -> Result<ModelInfo, String> {
        let embedder = self.corpus()?.embedder().get().map_err(|e| e.to_string())?;
        let info = embedder.info();
        Ok(ModelInfo { id: info.id.clone(), dimension: info.dimension as u32, max_tokens: info.max_tokens as u32 })
    }

    fn embed(&mut self, texts: Vec<String>, kind: EmbedKind) -> Result<Vec<Vec<f32>>, String> {
        if texts.len() > MAX_TEXTS {
            return Err(format!("{} texts in one call; send at most {MAX_TEXTS}", texts.len()));
        }
        let embedder = self.corpus()?.embedder().get().map_err(|e| e.to_string())?;
        let kind = match kind {
            EmbedKind::Query => Kind::Query,
            EmbedKind::Passage => Kind::Passage,
        };
        let guard = &self.guard;
        embedder.embed_until(&texts, kind, || guard.must_stop()).map_err(|e| e.to_string())
    }

    fn token_offsets(&mut self, text: String) -> Result<Vec<u32>, String> {
        let embedder = self.corpus()?.embedder().get().map_err(|e| e.to_string())?;
        let guard = &self.guard;
        embedder.token_offsets_until(&text, || guard.must_stop()).map_err(|e| e.to_string())
    }
}
