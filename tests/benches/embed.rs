//! Embedding throughput of ragbox's Candle embedder on a JSON list of texts:
//! `cargo bench -p ragbox-tests --bench embed -- TEXTS.json [ROUNDS]`. Prints
//! one JSON line (texts/s, tokens/s) for bench/embed_peers.py, which runs the
//! peers on the same texts and writes the table.

use ragbox::embed::{EmbedKind, Embedder, ModelDir, default_model_dir};
use std::time::Instant;

// The same allocator as the ragbox binary, so the figures match what it does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let file = args.get(1).expect("usage: embed TEXTS.json [ROUNDS]");
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let texts: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read texts")).expect("JSON list");
    let dir = ModelDir::open(&default_model_dir()).unwrap_or_else(|e| panic!("{e}"));
    let embedder = Embedder::load(&dir).expect("load model");
    embedder.embed(&texts[..texts.len().min(16)], EmbedKind::Passage).expect("warm-up");
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let started = Instant::now();
        let vectors = embedder.embed(&texts, EmbedKind::Passage).expect("embed");
        assert_eq!(vectors.len(), texts.len());
        best = best.min(started.elapsed().as_secs_f64());
    }
    let tokens = embedder.count_tokens(&texts).expect("tokenize");
    println!(
        "{}",
        serde_json::json!({"texts": texts.len(), "tokens": tokens, "seconds": best,
                           "texts_per_s": texts.len() as f64 / best, "tokens_per_s": tokens as f64 / best})
    );
}
