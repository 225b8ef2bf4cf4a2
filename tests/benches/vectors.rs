//! Vector index benchmark: HNSW recall@10 against exact search on 50,000
//! 384-dimensional vectors (the model's size), with build time and query
//! latency of both tiers, and the same after a delta (tombstones + fresh buffer).
//!
//! Run with `make bench` (or `cargo bench -p ragbox-tests --bench vectors`);
//! writes `bench/results/vectors.md`.

use ragbox::index::{Filter, VectorIndex};
use ragbox::store::{DocumentRecord, Snapshot};
use ragbox_tests::{cpu_model, repo_root};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

const DIM: usize = 384;
const DOCS: usize = 10_000;
const CHUNKS_PER_DOC: usize = 5;
const QUERIES: usize = 200;
/// Noise around each cluster centre, per dimension, relative to the centre's
/// spread: 1.0 puts same-topic chunks at cosine ~0.5, like related passages
/// under MiniLM (0.35 gives ~0.9 and a graph that cannot miss).
const NOISE: f32 = 1.0;

/// A small deterministic generator (no RNG dependency needed).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    }
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

/// Clustered vectors, like real embeddings: 500 topics, documents near one each.
fn corpus(rng: &mut Lcg) -> (Snapshot, Vec<Vec<f32>>) {
    let topics: Vec<Vec<f32>> = (0..500).map(|_| (0..DIM).map(|_| rng.next()).collect()).collect();
    let documents = (0..DOCS)
        .map(|d| {
            let topic = &topics[(d * 7919) % topics.len()];
            let chunks =
                (0..CHUNKS_PER_DOC).map(|_| unit(topic.iter().map(|t| t + NOISE * rng.next()).collect())).collect();
            (DocumentRecord { path: format!("doc{d}.md"), ..Default::default() }, chunks)
        })
        .collect();
    (Snapshot { generation: 1, full: true, documents, removed: Vec::new() }, topics)
}

fn percentile(samples: &mut [Duration], q: f64) -> f64 {
    samples.sort();
    samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3
}

/// Recall@10 of `index` against `exact`, and both tiers' latencies.
fn measure(index: &VectorIndex, exact: &VectorIndex, queries: &[Vec<f32>]) -> (f64, Vec<Duration>, Vec<Duration>) {
    let (mut found, mut total) = (0, 0);
    let (mut fast, mut slow) = (Vec::new(), Vec::new());
    for q in queries {
        let t = Instant::now();
        let want = exact.search(q, 10, &Filter::default());
        slow.push(t.elapsed());
        let t = Instant::now();
        let got = index.search(q, 10, &Filter::default());
        fast.push(t.elapsed());
        let key = |h: &ragbox::index::Hit| (h.document.path.clone(), h.ordinal);
        let want: Vec<_> = want.iter().map(key).collect();
        found += got.iter().map(key).filter(|k| want.contains(k)).count();
        total += want.len();
    }
    (found as f64 / total as f64, fast, slow)
}

fn main() {
    let mut rng = Lcg(42);
    let (snapshot, topics) = corpus(&mut rng);
    let queries: Vec<Vec<f32>> = (0..QUERIES)
        .map(|i| unit(topics[(i * 31) % topics.len()].iter().map(|t| t + NOISE * rng.next()).collect()))
        .collect();
    let chunks = DOCS * CHUNKS_PER_DOC;

    let exact = VectorIndex::build(snapshot.clone(), usize::MAX);
    let t = Instant::now();
    let mut graph = VectorIndex::build(snapshot.clone(), 1);
    let build = t.elapsed();
    assert!(graph.has_graph());
    let (recall, mut fast, mut slow) = measure(&graph, &exact, &queries);

    // A delta: 1,000 documents replaced, 500 removed (fresh buffer + tombstones).
    let mut delta = Snapshot { generation: 2, full: false, documents: Vec::new(), removed: Vec::new() };
    for d in 0..1000 {
        let topic = &topics[(d * 13) % topics.len()];
        let chunks =
            (0..CHUNKS_PER_DOC).map(|_| unit(topic.iter().map(|t| t + NOISE * rng.next()).collect())).collect();
        delta.documents.push((DocumentRecord { path: format!("doc{d}.md"), ..Default::default() }, chunks));
    }
    delta.removed = (1000..1500).map(|d| format!("doc{d}.md")).collect();
    let mut exact_after = exact;
    exact_after.apply(delta.clone());
    let t = Instant::now();
    graph.apply(delta);
    let apply = t.elapsed();
    let (recall_after, mut fast_after, _) = measure(&graph, &exact_after, &queries);

    let cpu = cpu_model();
    let mut report = String::new();
    writeln!(report, "# Vector index: HNSW recall and latency\n").unwrap();
    writeln!(report, "Command: `cargo bench -p ragbox-tests --bench vectors` (part of `make bench`).").unwrap();
    writeln!(
        report,
        "Machine: {cpu}, {} threads available.\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    )
    .unwrap();
    writeln!(
        report,
        "{chunks} unit vectors of {DIM} dimensions in 500 clusters ({DOCS} documents x {CHUNKS_PER_DOC} chunks, \
         noise {NOISE} around each centre: same-cluster cosine ~0.5); \
         {QUERIES} queries near cluster centres; k = 10; instant-distance ef_construction 200, ef_search 200.\n"
    )
    .unwrap();
    writeln!(report, "| measure | value |\n|---|---|").unwrap();
    writeln!(report, "| graph build | {:.1} s |", build.as_secs_f64()).unwrap();
    writeln!(report, "| recall@10 vs exact | {recall:.4} |").unwrap();
    writeln!(
        report,
        "| HNSW query p50 / p95 | {:.3} / {:.3} ms |",
        percentile(&mut fast, 0.5),
        percentile(&mut fast, 0.95)
    )
    .unwrap();
    writeln!(
        report,
        "| exact query p50 / p95 | {:.3} / {:.3} ms |",
        percentile(&mut slow, 0.5),
        percentile(&mut slow, 0.95)
    )
    .unwrap();
    writeln!(report, "| apply delta (1,000 docs replaced, 500 removed) | {:.1} ms |", apply.as_secs_f64() * 1e3)
        .unwrap();
    writeln!(report, "| recall@10 after the delta (graph + fresh buffer + tombstones) | {recall_after:.4} |").unwrap();
    writeln!(
        report,
        "| HNSW query p50 / p95 after the delta | {:.3} / {:.3} ms |",
        percentile(&mut fast_after, 0.5),
        percentile(&mut fast_after, 0.95)
    )
    .unwrap();
    print!("{report}");
    let out = repo_root().join("bench/results/vectors.md");
    std::fs::write(&out, report).expect("write bench/results/vectors.md");
    eprintln!("wrote {}", out.display());
}
