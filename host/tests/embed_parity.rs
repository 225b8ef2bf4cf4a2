//! The Candle embedder against sentence-transformers: 60 varied texts (short,
//! long past the token limit, code, non-English, emoji, empty) embedded once by
//! sentence-transformers (scripts/make_embed_fixture.py) must come out the same,
//! cosine >= 0.999 each. Needs the model: `make setup` fetches it.

use ragbox::embed::{EmbedKind, Embedder, ModelDir, default_model_dir};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    texts: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

fn embedder() -> Embedder {
    let dir = ModelDir::open(&default_model_dir()).unwrap_or_else(|e| panic!("{e}"));
    Embedder::load(&dir).expect("load the model")
}

#[test]
fn matches_sentence_transformers() {
    let fixture: Fixture = serde_json::from_str(include_str!("fixtures/minilm_parity.json")).expect("fixture parses");
    assert!(fixture.texts.len() >= 50);
    let embedder = embedder();
    assert_eq!(embedder.info().dimension, 384);
    assert_eq!(embedder.info().max_tokens, 256);
    let vectors = embedder.embed(&fixture.texts, EmbedKind::Passage).expect("embed");
    assert_eq!(vectors.len(), fixture.texts.len());
    let mut worst = (1.0f32, 0usize);
    for (i, (got, want)) in vectors.iter().zip(&fixture.vectors).enumerate() {
        assert_eq!(got.len(), 384);
        let c = cosine(got, want);
        if c < worst.0 {
            worst = (c, i);
        }
    }
    let text = &fixture.texts[worst.1];
    eprintln!("worst cosine over {} texts: {:.7} (text {})", fixture.texts.len(), worst.0, worst.1);
    assert!(worst.0 >= 0.999, "text {} ({:?}…) has cosine {}", worst.1, &text[..text.len().min(60)], worst.0);
}

#[test]
fn order_and_batching_do_not_change_vectors() {
    let embedder = embedder();
    let texts: Vec<String> =
        ["short", "a somewhat longer sentence about tokens and padding", "", "mid length text here"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let together = embedder.embed(&texts, EmbedKind::Passage).unwrap();
    for (i, text) in texts.iter().enumerate() {
        let alone = embedder.embed(std::slice::from_ref(text), EmbedKind::Passage).unwrap();
        assert!(cosine(&alone[0], &together[i]) > 0.99999, "text {i} differs when batched");
    }
    assert!(embedder.embed(&[], EmbedKind::Query).unwrap().is_empty());
}

#[test]
fn a_stop_request_ends_embedding_between_batches() {
    let embedder = embedder();
    let texts: Vec<String> = (0..40).map(|i| format!("sentence number {i} about stopping early")).collect();
    let asked = std::cell::Cell::new(0);
    // Say yes on the third question: two batches run, then the call stops.
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() > 2
    };
    let err = embedder.embed_until(&texts, EmbedKind::Passage, stop).unwrap_err();
    assert!(matches!(err, ragbox::embed::EmbedError::Stopped), "{err}");
    assert_eq!(asked.get(), 3, "asked before every batch, and no more after yes");
    let all = embedder.embed_until(&texts, EmbedKind::Passage, || false).unwrap();
    assert_eq!(all.len(), 40);
}
