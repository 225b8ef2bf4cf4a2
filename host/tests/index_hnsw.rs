//! The HNSW tier: recall against exact search on clustered vectors, and
//! filters that never cost hits even when the graph answers.

use ragbox::index::{Filter, VectorIndex};
use ragbox::store::{DocumentRecord, Snapshot};

const DIM: usize = 32;

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

/// `docs` documents of 10 chunks around 40 cluster centres; every 5th is "debug".
fn snapshot(docs: usize, rng: &mut Lcg) -> (Snapshot, Vec<Vec<f32>>) {
    let centres: Vec<Vec<f32>> = (0..40).map(|_| (0..DIM).map(|_| rng.next()).collect()).collect();
    let mut documents = Vec::new();
    for d in 0..docs {
        let centre = &centres[d % centres.len()];
        let chunks = (0..10).map(|_| unit(centre.iter().map(|c| c + 0.6 * rng.next()).collect())).collect();
        let record = DocumentRecord {
            path: format!("d{d}.md"),
            conversation_type: Some(if d % 5 == 0 { "debug" } else { "plan" }.into()),
            ..Default::default()
        };
        documents.push((record, chunks));
    }
    (Snapshot { generation: 1, full: true, documents, removed: Vec::new() }, centres)
}

fn keys(hits: &[ragbox::index::Hit]) -> Vec<(String, u32)> {
    hits.iter().map(|h| (h.document.path.clone(), h.ordinal)).collect()
}

#[test]
fn graph_recall_against_exact_search() {
    let mut rng = Lcg(7);
    let (snap, centres) = snapshot(400, &mut rng);
    let exact = VectorIndex::build(snap.clone(), usize::MAX);
    let graph = VectorIndex::build(snap, 1000);
    assert!(!exact.has_graph() && graph.has_graph());
    assert_eq!(graph.len(), 4000);
    let (mut found, mut total) = (0, 0);
    for q in 0..50 {
        let query = unit(centres[q % centres.len()].iter().map(|c| c + 0.6 * rng.next()).collect());
        let want = keys(&exact.search(&query, 10, &Filter::default()));
        let got = keys(&graph.search(&query, 10, &Filter::default()));
        assert_eq!(got.len(), 10);
        found += got.iter().filter(|g| want.contains(g)).count();
        total += want.len();
    }
    let recall = found as f64 / total as f64;
    eprintln!("HNSW recall@10 on 4,000 clustered vectors: {recall:.3}");
    assert!(recall >= 0.95, "recall@10 {recall}");
}

#[test]
fn filtered_searches_through_the_graph_still_return_k() {
    let mut rng = Lcg(11);
    let (snap, centres) = snapshot(400, &mut rng);
    let index = VectorIndex::build(snap, 1000);
    assert!(index.has_graph());
    let query = unit(centres[3].clone());
    // 80 debug documents = 800 chunks: k = 100 comes back full and all debug.
    let debug = Filter { conversation_type: Some("debug".into()), ..Default::default() };
    let hits = index.search(&query, 100, &debug);
    assert_eq!(hits.len(), 100);
    assert!(hits.iter().all(|h| h.document.conversation_type.as_deref() == Some("debug")));
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // One document allowed: exactly its 10 chunks, though the graph never ranks them.
    let one = Filter { path_prefix: Some("d399.md".into()), ..Default::default() };
    assert_eq!(index.search(&query, 50, &one).len(), 10);
    // k beyond the graph's candidate count is answered exactly.
    assert_eq!(index.search(&query, 500, &Filter::default()).len(), 500);
}

/// Replaces documents 0..50, removes 50..100 and adds 30 new ones, as a delta.
fn changes(snap: &Snapshot, rng: &mut Lcg) -> (Snapshot, Snapshot) {
    let fresh_doc = |path: String, rng: &mut Lcg| {
        let chunks = (0..10).map(|_| unit((0..DIM).map(|_| rng.next()).collect())).collect();
        (DocumentRecord { path, conversation_type: Some("plan".into()), ..Default::default() }, chunks)
    };
    let mut delta = Snapshot { generation: 2, full: false, documents: Vec::new(), removed: Vec::new() };
    for d in 0..50 {
        delta.documents.push(fresh_doc(format!("d{d}.md"), rng));
    }
    delta.removed = (50..100).map(|d| format!("d{d}.md")).collect();
    for d in 0..30 {
        delta.documents.push(fresh_doc(format!("new{d}.md"), rng));
    }
    let mut after: Vec<_> = snap.documents[100..].to_vec();
    after.extend(delta.documents.iter().cloned());
    (delta, Snapshot { generation: 2, full: true, documents: after, removed: Vec::new() })
}

#[test]
fn deltas_give_the_same_answers_as_a_fresh_build() {
    let mut rng = Lcg(23);
    let (snap, centres) = snapshot(400, &mut rng);
    let (delta, after) = changes(&snap, &mut rng);
    let mut exact = VectorIndex::build(snap.clone(), usize::MAX);
    let mut graph = VectorIndex::build(snap, 1000);
    exact.apply(delta.clone());
    graph.apply(delta);
    let rebuilt = VectorIndex::build(after, usize::MAX);
    assert_eq!((exact.generation(), exact.len(), graph.len()), (2, rebuilt.len(), rebuilt.len()));
    assert!(graph.has_graph(), "800 fresh chunks stay in the buffer beside the graph");
    let (mut found, mut total) = (0, 0);
    for q in 0..30 {
        let query = unit(centres[q % centres.len()].iter().map(|c| c + 0.6 * rng.next()).collect());
        let want = keys(&rebuilt.search(&query, 10, &Filter::default()));
        assert_eq!(keys(&exact.search(&query, 10, &Filter::default())), want, "exact tier after a delta");
        let got = keys(&graph.search(&query, 10, &Filter::default()));
        assert!(got.iter().all(|(p, _)| !(50..100).any(|d| p == &format!("d{d}.md"))), "tombstoned: {got:?}");
        found += got.iter().filter(|g| want.contains(g)).count();
        total += want.len();
    }
    let recall = found as f64 / total as f64;
    assert!(recall >= 0.95, "recall@10 after a delta {recall}");
    // Similar documents: the replaced d0 is compared by its new vectors, removed ones never appear.
    let similar = exact.similar_documents("d0.md", 5, &Filter::default()).unwrap();
    assert_eq!(similar.len(), 5);
    assert!(similar.iter().all(|h| h.document.path != "d0.md" && h.document.path != "d60.md"));
    assert!(exact.similar_documents("d60.md", 5, &Filter::default()).is_none());
}

#[test]
fn a_saved_index_loads_with_its_graph_and_answers_the_same() {
    let mut rng = Lcg(31);
    let (snap, centres) = snapshot(300, &mut rng);
    let (delta, _) = changes(&snap, &mut rng);
    let mut index = VectorIndex::build(snap, 1000);
    index.apply(delta); // tombstones and a fresh buffer are saved too
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vectors.idx");
    index.save(&path).unwrap();
    let loaded = VectorIndex::load(&path, 1000).expect("loads");
    assert!(loaded.has_graph());
    assert_eq!((loaded.generation(), loaded.len()), (index.generation(), index.len()));
    for centre in centres.iter().take(10) {
        let query = unit(centre.iter().map(|c| c + 0.6 * rng.next()).collect());
        let debug = Filter { conversation_type: Some("debug".into()), ..Default::default() };
        assert_eq!(
            keys(&loaded.search(&query, 10, &Filter::default())),
            keys(&index.search(&query, 10, &Filter::default()))
        );
        assert_eq!(keys(&loaded.search(&query, 10, &debug)), keys(&index.search(&query, 10, &debug)));
    }
    // A damaged file is ignored (the caller rebuilds), never trusted.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(VectorIndex::load(&path, 1000).is_none());
    std::fs::write(&path, b"not an index").unwrap();
    assert!(VectorIndex::load(&path, 1000).is_none());
}
