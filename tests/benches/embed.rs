//! Embedding throughput of ragbox's encoder on a JSON list of texts:
//! `cargo bench -p ragbox-tests --bench embed -- TEXTS.json [ROUNDS] [--queries]`.
//! Prints one JSON line for bench/embed_peers.py, which runs the peers on the
//! same texts and writes the table: texts/s and tokens/s of one call with all
//! the texts, or with `--queries` the p50 and p90 latency of embedding each
//! text alone as a query (batch 1), as a search call does.

use ragbox::embed::{EmbedKind, Embedder, ModelDir, cpu_features, default_model_dir};
use std::time::Instant;

// The same allocator as the ragbox binary, so the figures match what it does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let queries = args.iter().any(|a| a == "--queries");
    let args: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let file = args.get(1).expect("usage: embed TEXTS.json [ROUNDS] [--queries]");
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let texts: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read texts")).expect("JSON list");
    let dir =
        ModelDir::open(&default_model_dir().expect("a home folder or RAGBOX_MODEL")).unwrap_or_else(|e| panic!("{e}"));
    let embedder = Embedder::load(&dir).expect("load model");
    let about = serde_json::json!({
        "kernels": embedder.isa().name(),
        "cpu_features": cpu_features().join(" "),
        "threads": rayon::current_num_threads(),
    });
    embedder.embed(&texts[..texts.len().min(16)], EmbedKind::Passage).expect("warm-up");
    // Tokens the model runs per round, from its own count.
    let counted = embedder.tokens_embedded();
    let tokens_per_round = || (embedder.tokens_embedded() - counted) / rounds as u64;
    if queries {
        let mut ms: Vec<f64> = Vec::with_capacity(texts.len() * rounds);
        for _ in 0..rounds {
            for text in &texts {
                let started = Instant::now();
                embedder.embed(std::slice::from_ref(text), EmbedKind::Query).expect("embed");
                ms.push(started.elapsed().as_secs_f64() * 1e3);
            }
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        let mean_tokens = tokens_per_round() as f64 / texts.len() as f64;
        println!(
            "{}",
            serde_json::json!({"queries": ms.len(), "mean_tokens": mean_tokens, "p50_ms": at(0.5), "p90_ms": at(0.9),
                               "about": about})
        );
        return;
    }
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let started = Instant::now();
        let vectors = embedder.embed(&texts, EmbedKind::Passage).expect("embed");
        assert_eq!(vectors.len(), texts.len());
        best = best.min(started.elapsed().as_secs_f64());
    }
    let tokens = tokens_per_round();
    println!(
        "{}",
        serde_json::json!({"texts": texts.len(), "tokens": tokens, "seconds": best,
                           "texts_per_s": texts.len() as f64 / best, "tokens_per_s": tokens as f64 / best,
                           "about": about})
    );
}
