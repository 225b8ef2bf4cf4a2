//! Vector index benchmark on real vectors: the 100,000 chunks bench/scale.py
//! embeds with ONNX Runtime (bench/.cache/scale-100k), and a million made from
//! them (each real vector plus small noise, re-normalised); queries are SciFact
//! claims embedded by ragbox's own encoder.
//!
//! 1. Graph parameters and the graph's threshold: per segment size, the graph
//!    against the exact int8 scan (latency, recall@10, build time).
//! 2. A million chunks through `Corpus`, as a server holds them: the store
//!    written, the index built from scratch, then a fresh process (this binary
//!    again) that opens the saved index and serves: query p50/p95 and
//!    recall@10 against an exact f32 search, its RSS, and, with 10 % of the
//!    chunks replaced while it searches, the longest any search waited.
//!
//! Run with `make bench` after bench/scale.py (or `cargo bench -p
//! ragbox-tests --bench vectors`); writes `bench/results/vectors.md`.

use ragbox::corpus::{Corpus, SharedEmbedder};
use ragbox::embed::{EmbedKind, Embedder, ModelDir, cpu_features, default_model_dir};
use ragbox::index::{Filter, GRAPH, GraphParams, MemoryVectors, Tuning, VectorIndex};
use ragbox::records::{ChunkRecord, DocumentRecord, NewChunk, NewDocument, Snapshot};
use ragbox_kernels::{Isa, dot::dot_f32};
use ragbox_tests::{cpu_model, repo_root, report_head, shared_data};
use rayon::prelude::*;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DIM: usize = 384;
const QUERIES: usize = 100;
const COPIES: usize = 10;
/// Per-dimension noise of the million set's copies: cosine ~0.98 to the original.
const NOISE: f32 = 0.01;
/// Documents per transaction, as the indexer's batches.
const BATCH: usize = 256;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--serve") {
        return serve(Path::new(&args[1]), Path::new(&args[2]));
    }
    let million = !args.iter().any(|a| a == "--no-million");
    let cache = repo_root().join("bench/.cache/scale-100k");
    let (docs, vectors) = read_corpus(&cache);
    let queries = embed_queries();
    let mut report = report_head(
        "Vector index: segments, graphs and a million chunks",
        "`cargo bench -p ragbox-tests --bench vectors` (part of `make bench`, after bench/scale.py).",
    );
    writeln!(
        report,
        "Machine: {}, {} threads, CPU features: {}; kernels: {}.\n",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_features().join(" "),
        Isa::detect().name()
    )
    .unwrap();
    writeln!(
        report,
        "Vectors: bench/scale.py's {} chunks of real text ({} documents) embedded by ONNX Runtime \
         (all-MiniLM-L6-v2, 384-d); queries: {QUERIES} SciFact claims embedded by ragbox. Recall@10 is \
         against an exact f32 search over the same chunks. In-process, k = 10, one query at a time.\n",
        vectors.len() / DIM,
        docs.len()
    )
    .unwrap();
    parameters(&mut report, &docs, &vectors, &queries);
    if million {
        million_chunks(&mut report, &docs, &vectors, &queries);
    }
    print!("{report}");
    let out = repo_root().join("bench/results/vectors.md");
    std::fs::write(&out, report).expect("write bench/results/vectors.md");
    eprintln!("wrote {}", out.display());
}

/// (path, chunk count) per document, and every chunk's vector.
fn read_corpus(cache: &Path) -> (Vec<(String, usize)>, Vec<f32>) {
    let missing = format!("{} is missing: run bench/scale.py first (make bench does)", cache.display());
    let bytes = std::fs::read(cache.join("vectors.f32")).expect(&missing);
    let vectors: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let lines = std::io::BufReader::new(std::fs::File::open(cache.join("docs.jsonl")).expect(&missing));
    let docs: Vec<(String, usize)> = lines
        .lines()
        .map(|l| {
            let d: Value = serde_json::from_str(&l.expect("a line")).expect("JSON");
            (d["path"].as_str().expect("path").to_string(), d["chunks"].as_array().expect("chunks").len())
        })
        .collect();
    assert_eq!(docs.iter().map(|d| d.1).sum::<usize>() * DIM, vectors.len(), "documents and vectors disagree");
    (docs, vectors)
}

fn embed_queries() -> Vec<Vec<f32>> {
    let file = shared_data().join("scifact/queries.jsonl");
    let lines = std::io::BufReader::new(std::fs::File::open(&file).expect("SciFact queries"));
    let texts: Vec<String> = lines
        .lines()
        .take(QUERIES)
        .map(|l| serde_json::from_str::<Value>(&l.expect("a line")).expect("JSON")["text"].as_str().unwrap().into())
        .collect();
    let dir = ModelDir::open(&default_model_dir().expect("a home folder or RAGBOX_MODEL"))
        .unwrap_or_else(|e| panic!("{e} (make model fetches it)"));
    let embedder = Embedder::load(&dir).expect("load the model");
    embedder.embed(&texts, EmbedKind::Query).expect("embed the queries")
}

/// A snapshot of the first `chunks` chunks (whole documents).
fn snapshot(docs: &[(String, usize)], vectors: &[f32], chunks: usize) -> Snapshot {
    let mut documents = Vec::new();
    let mut at = 0;
    for (path, n) in docs {
        if at >= chunks {
            break;
        }
        let vs = (at..at + n).map(|c| vectors[c * DIM..(c + 1) * DIM].to_vec()).collect();
        documents.push((DocumentRecord { path: path.clone(), ..Default::default() }, vs));
        at += n;
    }
    Snapshot { generation: 1, full: true, documents, removed: Vec::new() }
}

fn percentile(samples: &mut [Duration], q: f64) -> f64 {
    samples.sort();
    samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3
}

type Key = (String, u32);

/// The exact top 10 of each query by f32 dot product over `vectors` (keys by `key`).
fn exact_top10(queries: &[Vec<f32>], vectors: &[f32], key: impl Fn(usize) -> Key + Sync) -> Vec<Vec<Key>> {
    let isa = Isa::detect();
    queries
        .par_iter()
        .map(|q| {
            let mut best: Vec<(f32, usize)> = Vec::with_capacity(64);
            for (c, v) in vectors.chunks_exact(DIM).enumerate() {
                let s = dot_f32(isa, q, v);
                if best.len() < 10 || s > best[9].0 {
                    best.push((s, c));
                    best.sort_by(|a, b| b.0.total_cmp(&a.0));
                    best.truncate(10);
                }
            }
            best.into_iter().map(|(_, c)| key(c)).collect()
        })
        .collect()
}

fn recall(got: &[Vec<Key>], want: &[Vec<Key>]) -> f64 {
    let found: usize = got.iter().zip(want).map(|(g, w)| g.iter().filter(|k| w.contains(k)).count()).sum();
    found as f64 / want.iter().map(Vec::len).sum::<usize>() as f64
}

/// Query latencies and recall of `index` over `queries`.
fn measure(index: &VectorIndex, full: &MemoryVectors, queries: &[Vec<f32>], want: &[Vec<Key>]) -> (f64, f64, f64) {
    let mut times = Vec::new();
    let mut got = Vec::new();
    for q in queries {
        let t = Instant::now();
        let hits = index.search(q, 10, &Filter::default(), full).expect("search");
        times.push(t.elapsed());
        got.push(hits.iter().map(|h| (h.document.path.clone(), h.ordinal)).collect());
    }
    (percentile(&mut times, 0.5), percentile(&mut times, 0.95), recall(&got, want))
}

/// Keys of the first `chunks` chunks in corpus order.
fn keys_of(docs: &[(String, usize)], chunks: usize) -> Vec<Key> {
    let mut keys = Vec::with_capacity(chunks);
    for (path, n) in docs {
        for o in 0..*n {
            if keys.len() == chunks {
                return keys;
            }
            keys.push((path.clone(), o as u32));
        }
    }
    keys
}

/// Per segment size: the graph against the exact scan, and the graph's parameters.
fn parameters(report: &mut String, docs: &[(String, usize)], vectors: &[f32], queries: &[Vec<f32>]) {
    writeln!(report, "## One segment: the graph against the exact scan\n").unwrap();
    writeln!(
        report,
        "Exact: the int8 scan of every chunk (threads share it out) and the f32 re-score of its best 30. \
         Graph: one HNSW graph over the segment (instant-distance, M = 32, int8 distances), the same re-score. \
         Build: the graph alone, on the build pool ({} threads, nice 10).\n",
        Tuning::standard().build_threads
    )
    .unwrap();
    writeln!(report, "| chunks | ef_construction | ef_search | build | graph p50 / p95 | graph recall@10 | exact p50 / p95 | exact recall@10 |").unwrap();
    writeln!(report, "|---|---|---|---|---|---|---|---|").unwrap();
    let total = vectors.len() / DIM;
    let mut rows: Vec<(usize, GraphParams)> =
        [10_000, 20_000, 50_000, 100_000].into_iter().filter(|&n| n <= total).map(|n| (n, GRAPH)).collect();
    for params in
        [GraphParams { ef_construction: 64, ef_search: 64 }, GraphParams { ef_construction: 200, ef_search: 200 }]
    {
        rows.push((50_000.min(total), params));
    }
    for (n, params) in rows {
        let snap = snapshot(docs, vectors, n);
        let n = snap.documents.iter().map(|(_, v)| v.len()).sum::<usize>();
        let keys = keys_of(docs, n);
        let want = exact_top10(queries, &vectors[..n * DIM], |c| keys[c].clone());
        let mut full = MemoryVectors::default();
        full.add(&snap);
        let exact = VectorIndex::build(snap.clone(), Tuning::exact());
        let tuning = Tuning { seal_at: n, segment_max: n, graph: params, ..Tuning::standard() };
        let t = Instant::now();
        let mut graph = VectorIndex::build(snap, tuning);
        graph.settle();
        let build = t.elapsed().as_secs_f64();
        assert_eq!(graph.state().in_graphs as usize, n);
        let (gp50, gp95, grecall) = measure(&graph, &full, queries, &want);
        let (ep50, ep95, erecall) = measure(&exact, &full, queries, &want);
        writeln!(
            report,
            "| {n} | {} | {} | {build:.1} s | {gp50:.2} / {gp95:.2} ms | {grecall:.3} | {ep50:.2} / {ep95:.2} ms | {erecall:.3} |",
            params.ef_construction, params.ef_search
        )
        .unwrap();
        eprintln!("{}", report.lines().last().unwrap_or_default());
    }
    writeln!(report).unwrap();
}

/// Memory of this process from /proc: (VmRSS, VmHWM) in MiB.
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A deterministic noise source.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    }
}

/// `v` plus noise, re-normalised.
fn noisy(v: &[f32], rng: &mut Lcg, out: &mut Vec<f32>) {
    let start = out.len();
    out.extend(v.iter().map(|x| x + NOISE * 2.0 * rng.next()));
    let n = out[start..].iter().map(|x| x * x).sum::<f32>().sqrt();
    out[start..].iter_mut().for_each(|x| *x /= n);
}

fn document(path: String, vectors: &[f32]) -> NewDocument {
    let chunks = vectors
        .chunks_exact(DIM)
        .map(|v| NewChunk { record: ChunkRecord { text: String::new(), start: 0, end: 0 }, vector: v.to_vec() })
        .collect();
    NewDocument { record: DocumentRecord { path, kind: "text".into(), ..Default::default() }, dimension: DIM, chunks }
}

fn million_chunks(report: &mut String, docs: &[(String, usize)], vectors: &[f32], queries: &[Vec<f32>]) {
    let workspace = repo_root().join("target/bench-vectors-1m");
    let _ = std::fs::remove_dir_all(&workspace);
    // The million: copy c of document d is `c{c}/{path}`, its vectors the originals plus noise.
    let mut rng = Lcg(42);
    let mut all = Vec::with_capacity(COPIES * vectors.len());
    let mut paths = Vec::new();
    for c in 0..COPIES {
        let mut at = 0;
        for (path, n) in docs {
            for v in vectors[at * DIM..(at + n) * DIM].chunks_exact(DIM) {
                noisy(v, &mut rng, &mut all);
            }
            paths.push((format!("c{c}/{path}"), *n));
            at += n;
        }
    }
    let chunks = all.len() / DIM;
    eprintln!("exact top 10 of {QUERIES} queries over {chunks} chunks…");
    let keys = keys_of(&paths, chunks);
    let want = exact_top10(queries, &all, |c| keys[c].clone());
    drop(keys);

    let corpus = Corpus::new(
        workspace.to_path_buf(),
        Arc::new(SharedEmbedder::new(default_model_dir().expect("a home folder or RAGBOX_MODEL"))),
    );
    let t = Instant::now();
    let (mut batch, mut at) = (Vec::with_capacity(BATCH), 0);
    for (path, n) in &paths {
        batch.push(document(path.clone(), &all[at * DIM..(at + n) * DIM]));
        at += n;
        if batch.len() == BATCH {
            corpus.put_many(std::mem::take(&mut batch)).expect("store a batch");
        }
    }
    corpus.put_many(batch).expect("store the last batch");
    let stored = t.elapsed().as_secs_f64();
    eprintln!("stored {chunks} chunks in {stored:.0} s; building the index…");
    let t = Instant::now();
    let state = corpus.settle_vectors().expect("build").expect("an index");
    let built = t.elapsed().as_secs_f64();
    let (_, build_hwm) = rss();
    eprintln!("built in {built:.0} s: {state:?}");
    drop(corpus);

    // Replacements for 10 % of the chunks: the first documents of copy 0, new noise,
    // their vectors in a raw file so the serving process reads them only when it needs them.
    let (mut replace, mut replace_vectors, mut at, mut count) = (Vec::new(), Vec::new(), 0, 0);
    for (path, n) in &paths {
        if count >= chunks / 10 {
            break;
        }
        for v in all[at * DIM..(at + n) * DIM].chunks_exact(DIM) {
            noisy(v, &mut rng, &mut replace_vectors);
        }
        replace.push(json!({"path": path, "chunks": n}));
        at += n;
        count += n;
    }
    drop(all);
    let plan = workspace.join("serve.json");
    let bytes: Vec<u8> = replace_vectors.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(workspace.join("replace.f32"), bytes).expect("write the replacements");
    let body = json!({"queries": queries, "want": want, "replace": replace});
    std::fs::write(&plan, serde_json::to_vec(&body).expect("JSON")).expect("write the serve plan");
    drop((body, replace, replace_vectors));

    let exe = std::env::current_exe().expect("this benchmark");
    let out = std::process::Command::new(exe)
        .arg("--serve")
        .arg(&workspace)
        .arg(&plan)
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run the serving process");
    assert!(out.status.success(), "the serving process failed");
    let served: Value = serde_json::from_slice(out.stdout.trim_ascii()).expect("its JSON line");
    let f = |k: &str| served[k].as_f64().unwrap_or(f64::NAN);

    writeln!(report, "## A million chunks\n").unwrap();
    writeln!(
        report,
        "{chunks} chunks in {} documents: the {} real vectors {COPIES} times, each plus uniform noise \
         (±{NOISE} per dimension) and re-normalised, so every chunk has near twins. Stored through \
         `Corpus::put_many` in transactions of {BATCH} documents, then the index built from scratch \
         (store read, codes, segments of at most {} chunks, their graphs on the build pool, all saved). \
         Then a fresh process opens the store and the saved index and serves, through `Corpus` as a server \
         does (the store held open per search, as for one tool call; each hit re-scored with the store's f32 \
         vector and given its text).\n",
        paths.len(),
        vectors.len() / DIM,
        ragbox::index::SEGMENT_MAX
    )
    .unwrap();
    writeln!(report, "| measure | value |\n|---|---|").unwrap();
    writeln!(report, "| store writes | {stored:.0} s |").unwrap();
    writeln!(report, "| index build from scratch (graphs built and saved) | {built:.0} s |").unwrap();
    writeln!(report, "| peak RSS of the building process (vectors held by the bench included) | {build_hwm:.0} MiB |")
        .unwrap();
    writeln!(report, "| segments after the build | {} ({} chunks in graphs) |", state.segments, state.in_graphs)
        .unwrap();
    writeln!(report, "| serving process: open the saved index (first search) | {:.1} s |", f("open_s")).unwrap();
    writeln!(report, "| query p50 / p95 (k = 10) | {:.2} / {:.2} ms |", f("p50_ms"), f("p95_ms")).unwrap();
    writeln!(report, "| recall@10 against exact f32 | {:.3} |", f("recall")).unwrap();
    writeln!(report, "| RSS of the serving process after the queries | {:.0} MiB |", f("rss_mib")).unwrap();
    writeln!(report, "| codes in memory | {:.0} MiB |", f("code_mib")).unwrap();
    writeln!(
        report,
        "| 10 % replaced ({} chunks, {} transactions) while searching: searches, longest wait | {:.0} searches, {:.1} ms |",
        served["replaced_chunks"], served["transactions"], f("searches"), f("longest_ms")
    )
    .unwrap();
    writeln!(report, "| ... search p50 / p99 meanwhile | {:.2} / {:.2} ms |", f("during_p50_ms"), f("during_p99_ms"))
        .unwrap();
    writeln!(report, "| ... background work after the last write, until settled | {:.0} s |", f("settle_s")).unwrap();
    writeln!(report).unwrap();
    let _ = std::fs::remove_dir_all(&workspace);
}

/// The serving process: opens the workspace's index, answers the queries,
/// then searches while a writer replaces 10 % of the chunks.
fn serve(workspace: &Path, plan: &Path) {
    let plan: Value = serde_json::from_slice(&std::fs::read(plan).expect("the plan")).expect("JSON");
    let queries: Vec<Vec<f32>> = serde_json::from_value(plan["queries"].clone()).expect("queries");
    let want: Vec<Vec<Key>> = serde_json::from_value(plan["want"].clone()).expect("want");
    let replace: Vec<(String, usize)> = plan["replace"]
        .as_array()
        .expect("replace")
        .iter()
        .map(|r| (r["path"].as_str().unwrap().to_string(), r["chunks"].as_u64().unwrap() as usize))
        .collect();
    drop(plan);
    let corpus = Arc::new(Corpus::new(
        PathBuf::from(workspace),
        Arc::new(SharedEmbedder::new(default_model_dir().expect("a home folder or RAGBOX_MODEL"))),
    ));
    // As a tool call does: the store held open for the call.
    let search = |q: &[f32]| -> Vec<Key> {
        let _held = corpus.hold().expect("the store");
        let hits = corpus.search_vectors(q, 10, &Filter::default()).expect("search");
        hits.iter().map(|h| (h.hit.document.path.clone(), h.hit.ordinal)).collect()
    };
    let t = Instant::now();
    search(&queries[0]);
    let open_s = t.elapsed().as_secs_f64();
    let mut times = Vec::new();
    let mut got = Vec::new();
    for q in &queries {
        let t = Instant::now();
        got.push(search(q));
        times.push(t.elapsed());
    }
    let (p50, p95) = (percentile(&mut times, 0.5), percentile(&mut times, 0.95));
    let (rss_mib, _) = rss();
    let code_mib = corpus.vector_state().map_or(0.0, |s| s.code_bytes as f64 / 1048576.0);

    // 10 % replaced in transactions of 50 documents, while another thread searches.
    let done = Arc::new(AtomicBool::new(false));
    let waits = Arc::new(Mutex::new(Vec::new()));
    let searcher = {
        let (corpus, done, waits, queries) = (corpus.clone(), done.clone(), waits.clone(), queries.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !done.load(Ordering::Acquire) {
                let t = Instant::now();
                let _held = corpus.hold().expect("the store");
                corpus.search_vectors(&queries[i % queries.len()], 10, &Filter::default()).expect("search");
                waits.lock().unwrap().push(t.elapsed());
                i += 1;
            }
        })
    };
    let bytes = std::fs::read(workspace.join("replace.f32")).expect("the replacements");
    let vectors: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let mut at = 0;
    let replace: Vec<(String, &[f32])> = replace
        .into_iter()
        .map(|(p, n)| {
            at += n;
            (p, &vectors[(at - n) * DIM..at * DIM])
        })
        .collect();
    let mut transactions = 0;
    let mut replaced_chunks = 0;
    for batch in replace.chunks(50) {
        let docs: Vec<NewDocument> = batch.iter().map(|(p, v)| document(p.clone(), v)).collect();
        replaced_chunks += docs.iter().map(|d| d.chunks.len()).sum::<usize>();
        corpus.put_many(docs).expect("replace a batch");
        transactions += 1;
    }
    // One more round of searches after the last write, so it is applied under search.
    std::thread::sleep(Duration::from_millis(500));
    done.store(true, Ordering::Release);
    searcher.join().expect("the searcher");
    let mut waits = std::mem::take(&mut *waits.lock().unwrap());
    let longest = waits.iter().max().copied().unwrap_or_default().as_secs_f64() * 1e3;
    let searches = waits.len();
    let (during_p50, during_p99) = (percentile(&mut waits, 0.5), percentile(&mut waits, 0.99));
    let t = Instant::now();
    corpus.settle_vectors().expect("settle");
    let settle_s = t.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"open_s": open_s, "p50_ms": p50, "p95_ms": p95, "recall": recall(&got, &want), "rss_mib": rss_mib,
               "code_mib": code_mib, "replaced_chunks": replaced_chunks, "transactions": transactions,
               "searches": searches, "longest_ms": longest, "during_p50_ms": during_p50,
               "during_p99_ms": during_p99, "settle_s": settle_s})
    );
}
