//! `ragbox:tools/embedder`: the model, run natively.

use crate::embed::EmbedKind as Kind;
use crate::runtime::bindings::ragbox::tools::embedder::{EmbedKind, Host, ModelInfo};
use crate::runtime::{HostState, Stage};

/// Texts one call may send: enough for any batch, small enough to bound memory.
const MAX_TEXTS: usize = 4096;

impl Host for HostState {
    fn model(&mut self) -> Result<ModelInfo, String> {
        // The first use loads the model: its time belongs to the embed stage.
        self.timed(Stage::Embed, |this| {
            let embedder = this.corpus()?.embedder().get().map_err(|e| e.to_string())?;
            let info = embedder.info();
            Ok(ModelInfo { id: info.id.clone(), dimension: info.dimension as u32, max_tokens: info.max_tokens as u32 })
        })
    }

    fn embed(&mut self, texts: Vec<String>, kind: EmbedKind) -> Result<Vec<Vec<f32>>, String> {
        self.timed(Stage::Embed, |this| {
            if texts.len() > MAX_TEXTS {
                return Err(format!("{} texts in one call; send at most {MAX_TEXTS}", texts.len()));
            }
            let embedder = this.corpus()?.embedder().get().map_err(|e| e.to_string())?;
            let kind = match kind {
                EmbedKind::Query => Kind::Query,
                EmbedKind::Passage => Kind::Passage,
            };
            let guard = &this.guard;
            let before = embedder.tokens_embedded();
            let vectors = embedder.embed_until(&texts, kind, || guard.must_stop()).map_err(|e| e.to_string());
            // Other calls may share the model: the count is only exact for one call at a time.
            this.stages.tokens_embedded += embedder.tokens_embedded().saturating_sub(before);
            vectors
        })
    }

    fn token_offsets(&mut self, text: String) -> Result<Vec<u32>, String> {
        self.timed(Stage::Tokenize, |this| {
            let embedder = this.corpus()?.embedder().get().map_err(|e| e.to_string())?;
            let guard = &this.guard;
            embedder.token_offsets_until(&text, || guard.must_stop()).map_err(|e| e.to_string())
        })
    }
}
