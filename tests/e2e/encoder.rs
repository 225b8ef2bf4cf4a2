//! ragbox's own BERT encoder against sentence-transformers: the committed
//! fixture's vectors (bench/parity_fixture.py) on the real model, on every
//! kernel path this CPU runs.

use ragbox::embed::{EmbedKind, Embedder, Isa, ModelDir, default_model_dir};
use serde_json::Value;

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y.powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn every_kernel_path_matches_sentence_transformers() {
    let fixture: Value = serde_json::from_str(include_str!("../fixtures/embed-parity.json")).expect("fixture is JSON");
    let texts: Vec<String> = serde_json::from_value(fixture["texts"].clone()).unwrap();
    let want: Vec<Vec<f64>> = serde_json::from_value(fixture["vectors"].clone()).unwrap();
    let dir = ModelDir::open(&default_model_dir()).unwrap_or_else(|e| panic!("{e}"));
    let paths = Isa::available();
    assert!(!paths.is_empty());
    for isa in paths {
        let embedder = Embedder::load_on(&dir, isa).unwrap();
        assert_eq!(embedder.isa(), isa);
        // All at once: several texts share a forward pass, end to end.
        let together = embedder.embed(&texts, EmbedKind::Passage).unwrap();
        for (i, (got, want)) in together.iter().zip(&want).enumerate() {
            let c = cosine(got, want);
            assert!(
                c >= 0.9999,
                "{isa:?}: text {i} ({:?}…) has cosine {c}",
                &texts[i].chars().take(40).collect::<String>()
            );
        }
        // One at a time: the same vectors, so no text leaks into another's attention.
        for (i, text) in texts.iter().enumerate() {
            let alone = embedder.embed(std::slice::from_ref(text), EmbedKind::Passage).unwrap();
            let drift = alone[0].iter().zip(&together[i]).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            assert!(drift < 1e-5, "{isa:?}: text {i} differs by {drift} alone and in a batch");
        }
    }
}
