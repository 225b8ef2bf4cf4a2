//! The segmented vector index: recall against an exact f32 search across
//! segments, merges and deltas; filters that never cost hits; searches that
//! answer while a graph builds; a saved index, and one whose build was killed.

use ragbox::index::{Filter, GraphParams, MemoryVectors, Tuning, VectorIndex};
use ragbox::records::{DocumentRecord, Snapshot};
use std::path::Path;

const DIM: usize = 32;

/// Small segments and graphs, so that a few thousand chunks make several.
fn tuning() -> Tuning {
    Tuning {
        seal_at: 1000,
        segment_max: 2500,
        graph: GraphParams { ef_construction: 64, ef_search: 100 },
        build_threads: 2,
    }
}

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

/// `docs` documents of 10 chunks of `dim` around 40 cluster centres; every 5th is "debug".
fn snapshot_of(docs: usize, dim: usize, noise: f32, rng: &mut Lcg) -> (Snapshot, Vec<Vec<f32>>) {
    let centres: Vec<Vec<f32>> = (0..40).map(|_| (0..dim).map(|_| rng.next()).collect()).collect();
    let mut documents = Vec::new();
    for d in 0..docs {
        let centre = &centres[d % centres.len()];
        let chunks = (0..10).map(|_| unit(centre.iter().map(|c| c + noise * rng.next()).collect())).collect();
        let record = DocumentRecord {
            path: format!("d{d}.md"),
            conversation_type: Some(if d % 5 == 0 { "debug" } else { "plan" }.into()),
            ..Default::default()
        };
        documents.push((record, chunks));
    }
    (Snapshot { generation: 1, full: true, documents, removed: Vec::new() }, centres)
}

fn snapshot(docs: usize, rng: &mut Lcg) -> (Snapshot, Vec<Vec<f32>>) {
    snapshot_of(docs, DIM, 0.6, rng)
}

type Key = (String, u32);

fn keys(hits: &[ragbox::index::Hit]) -> Vec<Key> {
    hits.iter().map(|h| (h.document.path.clone(), h.ordinal)).collect()
}

/// The true top k by f32 dot product over every vector, independent of the index.
fn brute_force(vectors: &MemoryVectors, query: &[f32], k: usize, keep: impl Fn(&str) -> bool) -> Vec<Key> {
    let mut all: Vec<(f32, &Key)> = vectors
        .0
        .iter()
        .filter(|(key, _)| keep(&key.0))
        .map(|(key, v)| (v.iter().zip(query).map(|(a, b)| a * b).sum(), key))
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    all.into_iter().take(k).map(|(_, key)| key.clone()).collect()
}

fn built(snap: Snapshot, tuning: Tuning) -> (VectorIndex, MemoryVectors) {
    let mut full = MemoryVectors::default();
    full.add(&snap);
    let mut index = VectorIndex::build(snap, tuning);
    index.settle();
    (index, full)
}

fn recall(index: &VectorIndex, full: &MemoryVectors, queries: &[Vec<f32>]) -> f64 {
    let (mut found, mut total) = (0, 0);
    for query in queries {
        let want = brute_force(full, query, 10, |_| true);
        let got = keys(&index.search(query, 10, &Filter::default(), full).unwrap());
        assert_eq!(got.len(), 10);
        found += got.iter().filter(|g| want.contains(g)).count();
        total += want.len();
    }
    found as f64 / total as f64
}

fn queries(centres: &[Vec<f32>], n: usize, rng: &mut Lcg) -> Vec<Vec<f32>> {
    (0..n).map(|q| unit(centres[q % centres.len()].iter().map(|c| c + 0.6 * rng.next()).collect())).collect()
}

#[test]
fn graphs_over_segments_recall_what_an_exact_search_finds() {
    let mut rng = Lcg(7);
    let (snap, centres) = snapshot(600, &mut rng);
    let (index, full) = built(snap, tuning());
    let state = index.state();
    assert!(state.segments >= 3, "6,000 chunks cut at 2,500 make segments: {state:?}");
    assert_eq!((state.in_graphs, state.exact, state.queued), (6000, 0, 0), "{state:?}");
    let recall = recall(&index, &full, &queries(&centres, 50, &mut rng));
    eprintln!("recall@10 over segments: {recall:.3}");
    assert!(recall >= 0.95, "recall@10 {recall}");
}

#[test]
fn codes_and_rescoring_give_the_exact_top_ten() {
    // 384 dimensions like the model, tight clusters: many near ties for the codes to get wrong.
    let mut rng = Lcg(5);
    let (snap, centres) = snapshot_of(300, 384, 0.3, &mut rng);
    let (index, full) = built(snap, Tuning::exact());
    assert!(!index.has_graph());
    for query in queries(&centres, 40, &mut rng) {
        let hits = index.search(&query, 10, &Filter::default(), &full).unwrap();
        assert_eq!(keys(&hits), brute_force(&full, &query, 10, |_| true));
        let exact = full.0[&(hits[0].document.path.clone(), hits[0].ordinal)].iter().zip(&query).map(|(a, b)| a * b);
        assert!((hits[0].score - exact.sum::<f32>()).abs() < 1e-5, "scores are the f32 ones");
    }
}

#[test]
fn filtered_searches_through_the_graphs_still_return_k() {
    let mut rng = Lcg(11);
    let (snap, centres) = snapshot(400, &mut rng);
    let (index, full) = built(snap, tuning());
    assert!(index.has_graph());
    let query = unit(centres[3].clone());
    // 80 debug documents = 800 chunks: k = 100 comes back full and all debug.
    let debug = Filter { conversation_type: Some("debug".into()), ..Default::default() };
    let hits = index.search(&query, 100, &debug, &full).unwrap();
    assert_eq!(hits.len(), 100);
    assert!(hits.iter().all(|h| h.document.conversation_type.as_deref() == Some("debug")));
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // One document allowed: exactly its 10 chunks, though no graph ranks them.
    let one = Filter { path_prefix: Some("d399.md".into()), ..Default::default() };
    let hits = index.search(&query, 50, &one, &full).unwrap();
    assert_eq!(keys(&hits), brute_force(&full, &query, 50, |p| p == "d399.md"));
    // k beyond the graphs' candidate count is answered exactly.
    assert_eq!(index.search(&query, 500, &Filter::default(), &full).unwrap().len(), 500);
}

/// Replaces documents 0..50, removes 50..100 and adds `added` new ones, as a delta.
fn changes(rng: &mut Lcg, generation: u64, added: usize) -> Snapshot {
    let fresh_doc = |path: String, rng: &mut Lcg| {
        let chunks = (0..10).map(|_| unit((0..DIM).map(|_| rng.next()).collect())).collect();
        (DocumentRecord { path, conversation_type: Some("plan".into()), ..Default::default() }, chunks)
    };
    let mut delta = Snapshot { generation, full: false, documents: Vec::new(), removed: Vec::new() };
    for d in 0..50 {
        delta.documents.push(fresh_doc(format!("d{d}.md"), rng));
    }
    delta.removed = (50..100).map(|d| format!("d{d}.md")).collect();
    for d in 0..added {
        delta.documents.push(fresh_doc(format!("new{generation}-{d}.md"), rng));
    }
    delta
}

#[test]
fn deltas_and_background_merges_keep_the_answers_exact() {
    let mut rng = Lcg(23);
    let (snap, centres) = snapshot(400, &mut rng);
    let (mut index, mut full) = built(snap, tuning());
    let queries = queries(&centres, 30, &mut rng);
    // Enough new chunks to seal segments, which merge with the small ones.
    for generation in 2..6 {
        let delta = changes(&mut rng, generation, 70);
        full.add(&delta);
        index.apply(delta);
        // Searches between deltas see every change at once, built or not.
        for query in &queries[..5] {
            let got = keys(&index.search(query, 10, &Filter::default(), &full).unwrap());
            assert!(got.iter().all(|(p, _)| !(50..100).any(|d| p == &format!("d{d}.md"))), "tombstoned: {got:?}");
        }
    }
    index.settle();
    let state = index.state();
    assert_eq!(state.in_graphs + state.exact, index.len() as u64);
    assert_eq!(index.len(), full.0.len(), "{state:?}");
    assert!(state.tombstones < 2000, "merges drop dead chunks: {state:?}");
    let recall = recall(&index, &full, &queries);
    assert!(recall >= 0.95, "recall@10 after deltas and merges {recall}");
    // Similar documents: d0 is compared by its new vectors, removed ones never appear.
    let similar = index.similar_documents("d0.md", 5, &Filter::default(), &full).unwrap().unwrap();
    assert_eq!(similar.len(), 5);
    assert!(similar.iter().all(|h| h.document.path != "d0.md" && h.document.path != "d60.md"));
    assert!(index.similar_documents("d60.md", 5, &Filter::default(), &full).unwrap().is_none());
}

#[test]
fn similar_documents_rank_by_exact_centroids() {
    let mut rng = Lcg(41);
    let (snap, _) = snapshot(200, &mut rng);
    let (index, full) = built(snap.clone(), tuning());
    let centroid = |path: &str| {
        let (_, vectors) = snap.documents.iter().find(|(r, _)| r.path == path).unwrap();
        let sum: Vec<f32> = (0..DIM).map(|i| vectors.iter().map(|v| v[i]).sum()).collect();
        unit(sum)
    };
    let source = centroid("d7.md");
    let mut want: Vec<(f32, String)> = snap
        .documents
        .iter()
        .filter(|(r, _)| r.path != "d7.md")
        .map(|(r, _)| (centroid(&r.path).iter().zip(&source).map(|(a, b)| a * b).sum(), r.path.clone()))
        .collect();
    want.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let got = index.similar_documents("d7.md", 8, &Filter::default(), &full).unwrap().unwrap();
    let got: Vec<&str> = got.iter().map(|h| h.document.path.as_str()).collect();
    let want: Vec<&str> = want.iter().take(8).map(|(_, p)| p.as_str()).collect();
    assert_eq!(got, want);
}

#[test]
fn a_search_during_a_build_answers_from_what_is_there() {
    let mut rng = Lcg(3);
    // One segment of 8,000 chunks: its graph takes seconds to build, a search milliseconds.
    let big = Tuning { seal_at: 8000, segment_max: 8000, ..tuning() };
    let (snap, centres) = snapshot(800, &mut rng);
    let mut full = MemoryVectors::default();
    full.add(&snap);
    let mut index = VectorIndex::build(snap, big);
    let query = queries(&centres, 1, &mut rng).remove(0);
    let hits = index.search(&query, 10, &Filter::default(), &full).unwrap();
    let state = index.state();
    assert!(state.queued > 0 && state.in_graphs == 0, "the build still runs: {state:?}");
    assert_eq!(keys(&hits), brute_force(&full, &query, 10, |_| true), "answered by the exact scan meanwhile");
    index.settle();
    assert_eq!(index.state().in_graphs, 8000);
}

fn open(dir: &Path) -> VectorIndex {
    VectorIndex::open(dir, tuning()).expect("open the index folder")
}

#[test]
fn a_saved_index_loads_with_its_graphs_and_answers_the_same() {
    let mut rng = Lcg(31);
    let (snap, centres) = snapshot(300, &mut rng);
    let delta = changes(&mut rng, 2, 30);
    let mut full = MemoryVectors::default();
    full.add(&snap);
    full.add(&delta);
    let dir = tempfile::tempdir().unwrap();
    let mut index = open(dir.path());
    index.apply(snap);
    index.apply(delta); // tombstones and a fresh buffer are saved too
    index.settle();
    let loaded = open(dir.path());
    assert!(loaded.has_graph());
    assert_eq!(loaded.state().mapped_code_bytes, loaded.state().code_bytes, "segments' codes mapped too");
    assert_eq!((loaded.generation(), loaded.len()), (index.generation(), index.len()));
    let debug = Filter { conversation_type: Some("debug".into()), ..Default::default() };
    for query in queries(&centres, 10, &mut rng) {
        let search = |i: &VectorIndex, f: &Filter| keys(&i.search(&query, 10, f, &full).unwrap());
        assert_eq!(search(&loaded, &Filter::default()), search(&index, &Filter::default()));
        assert_eq!(search(&loaded, &debug), search(&index, &debug));
    }
    drop((index, loaded));
    // A damaged manifest is ignored (the caller rebuilds from the store), never trusted.
    let manifest = dir.path().join("manifest");
    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(open(dir.path()).generation(), 0);
    std::fs::write(&manifest, b"not an index").unwrap();
    assert_eq!(open(dir.path()).generation(), 0);
}

#[test]
fn an_index_too_small_to_seal_is_saved_for_the_next_process() {
    let mut rng = Lcg(33);
    let (snap, centres) = snapshot(50, &mut rng); // 500 chunks: under seal_at, never a segment
    let mut full = MemoryVectors::default();
    full.add(&snap);
    let dir = tempfile::tempdir().unwrap();
    let mut index = open(dir.path());
    index.apply(snap);
    index.settle();
    assert_eq!(index.state().segments, 0);
    // The next process starts where this one is: nothing to read from the store.
    let loaded = open(dir.path());
    assert_eq!((loaded.generation(), loaded.len()), (index.generation(), index.len()));
    let state = loaded.state();
    assert!(state.code_bytes > 0 && state.mapped_code_bytes == state.code_bytes, "codes mapped, not read: {state:?}");
    for query in queries(&centres, 5, &mut rng) {
        let search = |i: &VectorIndex| keys(&i.search(&query, 10, &Filter::default(), &full).unwrap());
        assert_eq!(search(&loaded), search(&index));
    }
    drop((index, loaded));
    // A codes file cut short, or one that is a link, is ignored (rebuilt from the store).
    let codes = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "codes"))
        .expect("the fresh buffer's codes file");
    let bytes = std::fs::read(&codes).unwrap();
    std::fs::write(&codes, &bytes[..bytes.len() - 1]).unwrap();
    assert_eq!(open(dir.path()).generation(), 0);
    #[cfg(unix)]
    {
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, &bytes).unwrap();
        std::fs::remove_file(&codes).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &codes).unwrap();
        assert_eq!(open(dir.path()).generation(), 0);
        std::fs::remove_file(&codes).unwrap();
        std::fs::write(&codes, &bytes).unwrap();
        assert_eq!(open(dir.path()).generation(), 1, "the same bytes as a plain file load");
    }
}

#[test]
fn only_one_process_writes_the_saved_index() {
    let mut rng = Lcg(37);
    let (snap, _) = snapshot(300, &mut rng);
    let dir = tempfile::tempdir().unwrap();
    let mut first = open(dir.path());
    let mut second = open(dir.path()); // the lock is taken: this one keeps to memory
    second.apply(snap.clone());
    second.settle();
    assert!(!dir.path().join("manifest").exists());
    first.apply(snap);
    first.settle();
    assert!(dir.path().join("manifest").exists());
}

/// The child of `a_build_killed_midway_resumes`: builds a large segment in
/// `RAGBOX_TEST_BUILD_DIR`, says so once its manifest is saved, and waits to be killed.
#[test]
fn child_that_builds_until_killed() {
    let Ok(dir) = std::env::var("RAGBOX_TEST_BUILD_DIR") else { return };
    let mut rng = Lcg(43);
    let (snap, _) = snapshot(1000, &mut rng);
    let mut index = VectorIndex::open(Path::new(&dir), Tuning { seal_at: 10_000, segment_max: 10_000, ..tuning() })
        .expect("open the index folder");
    index.apply(snap);
    while !Path::new(&dir).join("manifest").exists() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    println!("BUILDING");
    std::thread::sleep(std::time::Duration::from_secs(120));
}

#[test]
fn a_build_killed_midway_resumes() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["child_that_builds_until_killed", "--exact", "--nocapture", "--test-threads=1"])
        .env("RAGBOX_TEST_BUILD_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    assert!(stdout.lines().map_while(Result::ok).any(|l| l.contains("BUILDING")), "the child never started its build");
    child.kill().unwrap(); // SIGKILL mid-build
    child.wait().unwrap();
    let graphs = |dir: &Path| {
        std::fs::read_dir(dir).unwrap().flatten().filter(|e| e.path().extension().is_some_and(|x| x == "graph")).count()
    };
    assert_eq!(graphs(dir.path()), 0, "killed before its graph was written");

    let mut rng = Lcg(43);
    let (snap, centres) = snapshot(1000, &mut rng);
    let mut full = MemoryVectors::default();
    full.add(&snap);
    let mut index = VectorIndex::open(dir.path(), Tuning { seal_at: 10_000, segment_max: 10_000, ..tuning() })
        .expect("open the index folder");
    assert_eq!((index.generation(), index.len()), (1, 10_000), "the saved segment is there");
    let query = queries(&centres, 1, &mut rng).remove(0);
    let before = keys(&index.search(&query, 10, &Filter::default(), &full).unwrap());
    index.settle(); // the build resumes
    assert!(index.has_graph() && graphs(dir.path()) == 1);
    assert_eq!(keys(&index.search(&query, 10, &Filter::default(), &full).unwrap()), before);
    assert_eq!(before, brute_force(&full, &query, 10, |_| true));
}

#[test]
fn a_file_saved_again_and_again_does_not_fill_the_index() {
    let mut rng = Lcg(47);
    let (snap, centres) = snapshot(30, &mut rng);
    let mut full = MemoryVectors::default();
    full.add(&snap);
    let mut index = VectorIndex::build(snap, tuning());
    for generation in 2..6 {
        // The same 30 documents again: 300 new chunks, 300 dead ones.
        let (mut again, _) = snapshot(30, &mut rng);
        again.generation = generation;
        again.full = false;
        full.add(&again);
        index.apply(again);
    }
    index.settle();
    let state = index.state();
    assert_eq!((state.segments, index.len()), (0, 300), "dead versions dropped, not sealed: {state:?}");
    assert!(state.tombstones < 1000, "{state:?}");
    let query = queries(&centres, 1, &mut rng).remove(0);
    let got = keys(&index.search(&query, 10, &Filter::default(), &full).unwrap());
    assert_eq!(got, brute_force(&full, &query, 10, |_| true));
}
