//! The embedding cache's value format on SciFact (issue 72): its 5,183
//! abstracts embedded through the cache from nothing, then again (every one
//! found), and the same vectors rounded to bf16; SciFact's test claims ranked
//! against each set by exact cosine. Prints one JSON line (for
//! `bench/cache.py`, which writes bench/results/cache.md): nDCG@10 of each,
//! the least cosine of bf16 to f32, the encoder's and the cache's time per
//! chunk, and the bytes a cache file takes per entry in each format.
//!
//!     cargo test -p ragbox-tests --bench embedding_cache [-- DOCS]
//!
//! (`cargo test` runs a bench's `main` once, in the dev profile, whose
//! encoder kernels are optimised as in a release build.)

use ragbox::corpus::SharedEmbedder;
use ragbox::embed::{EmbedKind, default_model_dir};
use ragbox::embed_cache::{Cache, Settings};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// bf16 as a cache would keep it: the f32's top half, rounded to nearest even.
fn bf16(x: f32) -> f32 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) & 0xffff_0000;
    f32::from_bits(rounded)
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let norm = |v: &[f32]| v.iter().map(|x| *x as f64 * *x as f64).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

/// Mean nDCG@10 of `queries` ranked by cosine against `docs` (`ids` in order).
fn ndcg10(queries: &[(Vec<f32>, HashSet<String>)], docs: &[Vec<f32>], ids: &[String]) -> f64 {
    let mut total = 0.0;
    for (query, relevant) in queries {
        let mut scored: Vec<(f64, usize)> = docs.iter().enumerate().map(|(i, d)| (cosine(query, d), i)).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let dcg: f64 = scored
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, (_, i))| relevant.contains(&ids[*i]))
            .map(|(rank, _)| 1.0 / (rank as f64 + 2.0).log2())
            .sum();
        let ideal: f64 = (0..relevant.len().min(10)).map(|rank| 1.0 / (rank as f64 + 2.0).log2()).sum();
        total += dcg / ideal;
    }
    total / queries.len() as f64
}

/// Bytes per entry of a cache file holding `vectors` rounded by `round` (a
/// file of the cache's own layout, written through its own code for f32).
fn bytes_per_entry(vectors: &[Vec<f32>], round: fn(f32) -> f32, bytes_per_value: usize) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = Cache::new(Some(dir.path().to_path_buf()), Settings { enabled: true, max_bytes: u64::MAX });
    // A bf16 file's values are half as long: stored here as the first half of each f32 vector's bytes.
    let values: Vec<Vec<f32>> = vectors
        .iter()
        .map(|v| {
            let rounded: Vec<f32> = v.iter().map(|x| round(*x)).collect();
            rounded[..rounded.len() * bytes_per_value / 4].to_vec()
        })
        .collect();
    let keys: Vec<[u8; 32]> = (0..values.len())
        .map(|i| {
            use sha2::Digest as _;
            sha2::Sha256::digest((i as u64).to_le_bytes()).into()
        })
        .collect();
    for (keys, values) in keys.chunks(64).zip(values.chunks(64)) {
        let batch: Vec<([u8; 32], &[f32])> = keys.iter().copied().zip(values.iter().map(Vec::as_slice)).collect();
        cache.put(&batch);
    }
    let stats = cache.stats().expect("stats");
    assert_eq!(stats.entries, vectors.len() as u64);
    stats.file_bytes as f64 / stats.entries as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let limit: usize = args.first().and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
    let data = ragbox_tests::shared_data();
    let read = |rel: &str| std::fs::read_to_string(data.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let mut relevant: HashMap<String, HashSet<String>> = HashMap::new();
    for line in read("scifact/qrels/test.tsv").lines().skip(1) {
        let parts: Vec<&str> = line.split('\t').collect();
        if parts.len() == 3 && parts[2].trim() != "0" {
            relevant.entry(parts[0].to_string()).or_default().insert(parts[1].to_string());
        }
    }
    let (mut ids, mut texts) = (Vec::new(), Vec::new());
    for line in read("scifact/corpus.jsonl").lines().take(limit) {
        let doc: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let field = |name: &str| doc[name].as_str().unwrap_or("").to_string();
        ids.push(field("_id"));
        texts.push(format!("# {}\n\n{}\n", field("title"), field("text")));
    }
    let mut claims = Vec::new();
    for line in read("scifact/queries.jsonl").lines() {
        let q: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if let Some(rel) = q["_id"].as_str().and_then(|id| relevant.get(id)) {
            claims.push((q["text"].as_str().unwrap_or("").to_string(), rel.clone()));
        }
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let cache = Cache::new(Some(dir.path().to_path_buf()), Settings { enabled: true, max_bytes: u64::MAX });
    let embedder = SharedEmbedder::with_cache(default_model_dir().expect("a model folder"), cache);
    let model = embedder.get().expect("load the model");
    model.embed(&texts[..8.min(texts.len())], EmbedKind::Passage).expect("warm-up");
    let started = Instant::now();
    let (cold, made) = embedder.embed_passages(&texts, None, || false).expect("embed");
    let encoder_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let (warm, found) = embedder.embed_passages(&texts, None, || false).expect("look up");
    let lookup_s = started.elapsed().as_secs_f64();
    assert_eq!(found.cached, texts.len() as u64, "every abstract is found the second time: {found:?}");
    let identical = cold.iter().zip(&warm).all(|(a, b)| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()));
    let rounded: Vec<Vec<f32>> = cold.iter().map(|v| v.iter().map(|x| bf16(*x)).collect()).collect();
    let worst_bf16 = cold.iter().zip(&rounded).map(|(a, b)| cosine(a, b)).fold(1.0f64, f64::min);
    let claim_texts: Vec<String> = claims.iter().map(|(t, _)| t.clone()).collect();
    let claim_vectors = model.embed(&claim_texts, EmbedKind::Query).expect("embed the claims");
    let queries: Vec<(Vec<f32>, HashSet<String>)> =
        claim_vectors.into_iter().zip(claims.into_iter().map(|(_, r)| r)).collect();
    let result = serde_json::json!({
        "docs": texts.len(),
        "claims": queries.len(),
        "embedded": made.embedded,
        "identical_through_cache": identical,
        "ndcg10": {
            "f32": ndcg10(&queries, &cold, &ids),
            "through_cache": ndcg10(&queries, &warm, &ids),
            "bf16": ndcg10(&queries, &rounded, &ids),
        },
        "worst_cosine_bf16": worst_bf16,
        "encoder_ms_per_chunk": encoder_s * 1e3 / made.embedded.max(1) as f64,
        "lookup_ms_per_chunk": lookup_s * 1e3 / texts.len() as f64,
        "bytes_per_entry": {
            "f32": bytes_per_entry(&cold, |x| x, 4),
            "bf16": bytes_per_entry(&cold, bf16, 2),
        },
        "isa": model.isa().name(),
    });
    println!("{result}");
}
