//! Exact vector search over a real store (its codes re-scored with the
//! store's f32 vectors): agrees with a naive full sort,
//! filters never cost hits, and with the real model a query finds the chunk
//! that means the same thing.

use ragbox::embed::{EmbedKind, Embedder, ModelDir, default_model_dir};
use ragbox::index::{Filter, Tuning, VectorIndex};
use ragbox::records::{ChunkRecord, DocumentRecord, NewChunk, NewDocument};
use ragbox::store::Store;

const DIM: usize = 16;

/// Deterministic pseudo-random unit vectors (no RNG dependency needed).
fn vector(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let v: Vec<f32> = (0..DIM)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) as f32 / u32::MAX as f32) - 0.25
        })
        .collect();
    let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    v.into_iter().map(|a| a / n).collect()
}

fn record(path: &str, kind: Option<&str>, date: Option<&str>, model: &str) -> DocumentRecord {
    DocumentRecord {
        path: path.into(),
        kind: "markdown".into(),
        conversation_type: kind.map(Into::into),
        date: date.map(Into::into),
        model_id: model.into(),
        ..Default::default()
    }
}

fn fill(store: &Store) {
    for d in 0..60u64 {
        let kind = ["plan", "debug", "brainstorm"][d as usize % 3];
        let path = format!("{kind}/2025-1{}-0{}/00{d}-x/conversation.md", d % 2, d % 9 + 1);
        let chunks = (0..10u64)
            .map(|c| NewChunk {
                record: ChunkRecord { text: format!("{d}/{c}"), start: 0, end: 1 },
                vector: vector(d * 100 + c),
            })
            .collect();
        let date = format!("2025-1{}-0{}", d % 2, d % 9 + 1);
        store
            .put_document(&NewDocument { record: record(&path, Some(kind), Some(&date), "m"), dimension: DIM, chunks })
            .unwrap();
    }
}

#[test]
fn agrees_with_a_full_sort() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    fill(&store);
    let snapshot = store.snapshot().unwrap();
    let all: Vec<(String, u32, Vec<f32>)> = snapshot
        .documents
        .iter()
        .flat_map(|(d, vs)| vs.iter().enumerate().map(|(i, v)| (d.path.clone(), i as u32, v.clone())))
        .collect();
    let index = VectorIndex::build(snapshot, Tuning::exact());
    assert_eq!(index.len(), 600);
    assert_eq!(index.generation(), store.stats().unwrap().generation);
    for q in 0..20u64 {
        let query = vector(1_000_000 + q);
        let mut naive: Vec<(f32, String, u32)> =
            all.iter().map(|(p, o, v)| (v.iter().zip(&query).map(|(a, b)| a * b).sum(), p.clone(), *o)).collect();
        naive.sort_by(|a, b| b.0.total_cmp(&a.0));
        let hits = index.search(&query, 10, &Filter::default(), &store).unwrap();
        let got: Vec<(String, u32)> = hits.iter().map(|h| (h.document.path.clone(), h.ordinal)).collect();
        let want: Vec<(String, u32)> = naive[..10].iter().map(|(_, p, o)| (p.clone(), *o)).collect();
        assert_eq!(got, want, "query {q}");
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!((hits[0].score - naive[0].0).abs() < 1e-5);
    }
}

#[test]
fn filters_never_cost_hits() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    fill(&store);
    let index = VectorIndex::build(store.snapshot().unwrap(), Tuning::exact());
    let query = vector(42);
    // 20 debug documents × 10 chunks: k = 50 comes back full, all debug.
    let debug = Filter { conversation_type: Some("debug".into()), ..Default::default() };
    let hits = index.search(&query, 50, &debug, &store).unwrap();
    assert_eq!(hits.len(), 50);
    assert!(hits.iter().all(|h| h.document.conversation_type.as_deref() == Some("debug")));
    // A narrow filter: every matching chunk, no more.
    let narrow =
        Filter { conversation_type: Some("plan".into()), date_range: Some("2025-10-01".into()), ..Default::default() };
    let expected =
        store.documents().unwrap().iter().filter(|d| narrow.matches(d)).map(|d| d.chunks as usize).sum::<usize>();
    assert!(expected > 0 && expected < 50);
    assert_eq!(index.search(&query, 50, &narrow, &store).unwrap().len(), expected);
    assert!(
        index
            .search(&query, 5, &Filter { path_prefix: Some("nowhere".into()), ..Default::default() }, &store)
            .unwrap()
            .is_empty()
    );
    assert!(index.search(&vector(1)[..8], 5, &Filter::default(), &store).unwrap().is_empty(), "wrong dimension");
}

#[test]
fn real_model_finds_the_chunk_that_means_the_same() {
    let dir =
        ModelDir::open(&default_model_dir().expect("a home folder or RAGBOX_MODEL")).unwrap_or_else(|e| panic!("{e}"));
    let embedder = Embedder::load(&dir).unwrap();
    let texts = [
        ("auth.md", "We sign users in with short-lived JWT access tokens and rotating refresh tokens."),
        (
            "ws.md",
            "The WebSocket connection drops after sixty seconds because the load balancer times out idle sockets.",
        ),
        ("db.md", "Nightly backups of the Postgres database are copied to cold storage."),
        ("ui.md", "The settings page gets a dark mode toggle next to the language picker."),
    ];
    let passages: Vec<String> = texts.iter().map(|(_, t)| t.to_string()).collect();
    let vectors = embedder.embed(&passages, EmbedKind::Passage).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = open_store(tmp.path()).unwrap();
    for ((path, text), vector) in texts.iter().zip(vectors) {
        let chunk =
            NewChunk { record: ChunkRecord { text: text.to_string(), start: 0, end: text.len() as u64 }, vector };
        let doc = NewDocument {
            record: record(path, None, None, &embedder.info().id),
            dimension: embedder.info().dimension,
            chunks: vec![chunk],
        };
        store.put_document(&doc).unwrap();
    }
    let index = VectorIndex::build(store.snapshot().unwrap(), Tuning::exact());
    for (query, want) in [
        ("how do users log in?", "auth.md"),
        ("realtime updates stop after a minute", "ws.md"),
        ("where are database backups kept", "db.md"),
        ("night theme for the preferences screen", "ui.md"),
    ] {
        let q = embedder.embed(&[query.to_string()], EmbedKind::Query).unwrap().remove(0);
        let hits = index.search(&q, 4, &Filter::default(), &store).unwrap();
        assert_eq!(
            hits[0].document.path,
            want,
            "{query}: {:?}",
            hits.iter().map(|h| (&h.document.path, h.score)).collect::<Vec<_>>()
        );
    }
}

/// The key these tests' stores are stamped with (one for every process of a test).
fn test_key() -> std::sync::Arc<ragbox::datadir::owner::Key> {
    std::sync::Arc::new(ragbox::datadir::owner::Key::from_bytes([7; 32]))
}

/// The store kept in the folder `dir`.
fn open_store(dir: &std::path::Path) -> Result<Store, ragbox::records::StoreError> {
    Store::open_at(dir, test_key(), ragbox::store::Keep::UntilDropped)
}
