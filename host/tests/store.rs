//! The redb store: one transaction per document, model and schema guards, a
//! SIGKILL mid-write, and several processes writing and reading at once.
//! Child processes are this test binary re-run with `STORE_CHILD` set.

use ragbox::records::{ChunkRecord, DocumentRecord, NewChunk, NewDocument, StoreError};
use ragbox::store::{Keep, Store};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const DIM: usize = 8;

fn doc(path: &str, chunks: usize, seed: f32) -> NewDocument {
    NewDocument {
        record: DocumentRecord {
            path: path.into(),
            content_hash: format!("hash-{path}-{seed}"),
            size: 100,
            mtime: 1_700_000_000,
            kind: "markdown".into(),
            embedded_at: 1_700_000_000_000,
            model_id: "test-model@1".into(),
            ..Default::default()
        },
        dimension: DIM,
        chunks: (0..chunks)
            .map(|i| NewChunk {
                record: ChunkRecord {
                    text: format!("{path} chunk {i}"),
                    start: i as u64 * 10,
                    end: i as u64 * 10 + 10,
                },
                vector: vec![seed + i as f32; DIM],
            })
            .collect(),
    }
}

#[test]
fn put_replace_remove_and_generations() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    assert_eq!(store.stats().unwrap().generation, 0);
    let g1 = store.put_document(&doc("a.md", 3, 1.0)).unwrap();
    let g2 = store.put_document(&doc("b.md", 2, 5.0)).unwrap();
    assert!(g2 > g1);
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.chunks, stats.model_id.as_deref()), (2, 5, Some("test-model@1")));

    // Replacing a document swaps all its chunks in one go.
    store.put_document(&doc("a.md", 1, 9.0)).unwrap();
    let chunks = store.chunks("a.md").unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].0.text, "a.md chunk 0");
    assert_eq!(chunks[0].1, vec![9.0; DIM]);
    assert_eq!(store.document("a.md").unwrap().unwrap().chunks, 1);
    assert_eq!(store.stats().unwrap().chunks, 3);

    assert!(store.remove_document("a.md").unwrap());
    assert!(!store.remove_document("a.md").unwrap());
    assert_eq!(store.document("a.md").unwrap(), None);
    assert!(store.chunks("a.md").unwrap().is_empty());
    let paths: Vec<String> = store.documents().unwrap().into_iter().map(|d| d.path).collect();
    assert_eq!(paths, ["b.md"]);

    // The fulltext index's view: chunk texts in order, at the current generation.
    let all = store.text_delta(0).unwrap();
    let (generation, texts) = (all.generation, all.documents);
    assert!(all.full);
    assert_eq!(generation, store.stats().unwrap().generation);
    let b: Vec<&str> = texts[0].1.iter().map(|c| c.text.as_str()).collect();
    assert_eq!((texts.len(), texts[0].0.path.as_str(), b), (1, "b.md", vec!["b.md chunk 0", "b.md chunk 1"]));

    // Reopening sees the same state.
    let again = open_store(dir.path()).unwrap();
    assert_eq!(again.stats().unwrap().documents, 1);
}

#[test]
fn documents_come_in_pages_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    assert!(store.documents_after(None, 10).unwrap().is_empty(), "nothing stored yet");
    for path in ["c.md", "a.md", "b/x.md", "b.md"] {
        store.put_document(&doc(path, 1, 1.0)).unwrap();
    }
    let page = |after: Option<&str>, limit| -> Vec<String> {
        store.documents_after(after, limit).unwrap().into_iter().map(|d| d.path).collect()
    };
    assert_eq!(page(None, 2), ["a.md", "b.md"]);
    assert_eq!(page(Some("b.md"), 2), ["b/x.md", "c.md"]);
    assert_eq!(page(Some("b"), 10), ["b.md", "b/x.md", "c.md"], "after a path that is not stored");
    assert!(page(Some("c.md"), 10).is_empty());
    let all: Vec<String> = store.documents().unwrap().into_iter().map(|d| d.path).collect();
    assert_eq!(page(None, 100), all);
}

#[test]
fn deltas_name_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    for (i, path) in ["a.md", "b.md", "c.md"].into_iter().enumerate() {
        store.put_document(&doc(path, 2, i as f32)).unwrap();
    }
    let at = store.generation().unwrap();
    assert_eq!(at, 3);
    assert!(store.vector_delta(at).unwrap().documents.is_empty());
    store.put_document(&doc("b.md", 3, 9.0)).unwrap();
    store.remove_document("c.md").unwrap();
    store.put_document(&doc("d.md", 1, 4.0)).unwrap();
    store.remove_document("d.md").unwrap();
    let delta = store.vector_delta(at).unwrap();
    assert!(!delta.full);
    assert_eq!(delta.generation, at + 4);
    let changed: Vec<(&str, usize)> = delta.documents.iter().map(|(d, v)| (d.path.as_str(), v.len())).collect();
    assert_eq!(changed, [("b.md", 3)]);
    assert_eq!(delta.removed, ["c.md", "d.md"]);
    // From 0, or from a generation the store never reached (it was recreated), everything comes back.
    assert!(store.vector_delta(0).unwrap().full);
    let ahead = store.text_delta(at + 100).unwrap();
    assert!(ahead.full);
    assert_eq!(ahead.documents.len(), 2);
    let chunks = store.chunk_records(&[("b.md", 2), ("b.md", 3), ("zz.md", 0)]).unwrap();
    assert_eq!(chunks.iter().map(Option::is_some).collect::<Vec<_>>(), [true, false, false]);
}

/// `doc` stored for keyword search only: its chunks without vectors, no model named.
fn keyword_only(path: &str, chunks: usize) -> NewDocument {
    let mut d = doc(path, chunks, 0.0);
    d.record.model_id = String::new();
    d.chunks.iter_mut().for_each(|c| c.vector.clear());
    d
}

#[test]
fn a_document_stored_for_keyword_search_first_is_embedded_later() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    // Before any vector: no model recorded, chunk text readable, nothing for the vector index.
    store.put_documents(&[keyword_only("a.md", 2), keyword_only("b.md", 1)]).unwrap();
    assert_eq!(store.stats().unwrap().model_id, None);
    assert_eq!((store.stats().unwrap().documents, store.stats().unwrap().chunks), (2, 3));
    assert!(!store.document("a.md").unwrap().unwrap().embedded());
    let chunks = store.chunks("a.md").unwrap();
    assert_eq!(
        chunks.iter().map(|(c, v)| (c.text.as_str(), v.len())).collect::<Vec<_>>(),
        [("a.md chunk 0", 0), ("a.md chunk 1", 0)]
    );
    assert_eq!(store.text_delta(0).unwrap().documents.iter().map(|(_, c)| c.len()).sum::<usize>(), 3);
    let vectors = store.vector_delta(0).unwrap();
    assert!(vectors.documents.iter().all(|(_, v)| v.is_empty()), "no vectors yet");
    let at = store.generation().unwrap();

    // Embedded: replaced with its vectors, the model recorded, the delta carries them.
    store.put_document(&doc("a.md", 2, 1.0)).unwrap();
    assert!(store.document("a.md").unwrap().unwrap().embedded());
    assert_eq!(store.stats().unwrap().model_id.as_deref(), Some("test-model@1"));
    let delta = store.vector_delta(at).unwrap();
    assert_eq!(delta.documents.iter().map(|(d, v)| (d.path.as_str(), v.len())).collect::<Vec<_>>(), [("a.md", 2)]);
    // And back: a file changed again before it was embedded drops its vectors.
    store.put_document(&keyword_only("a.md", 1)).unwrap();
    assert_eq!(store.chunks("a.md").unwrap().iter().map(|(_, v)| v.len()).collect::<Vec<_>>(), [0]);
    assert_eq!(store.vectors(&[("a.md", 0), ("a.md", 1)]).unwrap(), [None, None]);

    // A document with vectors for some chunks only is refused whole.
    let mut partial = doc("c.md", 2, 1.0);
    partial.chunks[1].vector.clear();
    assert!(matches!(store.put_document(&partial).unwrap_err(), StoreError::Dimension { .. }));
    // Keyword-only documents never check or set the model: another model's run may store them.
    let mut other = keyword_only("d.md", 1);
    other.record.model_id = "other-model@2".into();
    other.dimension = 0;
    store.put_document(&other).unwrap();
    assert_eq!(store.stats().unwrap().model_id.as_deref(), Some("test-model@1"));
    assert!(!store.document("d.md").unwrap().unwrap().embedded());
}

#[test]
fn refuses_mixed_models_and_wrong_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    store.put_document(&doc("a.md", 1, 1.0)).unwrap();
    let mut other = doc("b.md", 1, 1.0);
    other.record.model_id = "other-model@2".into();
    let err = store.put_document(&other).unwrap_err();
    assert!(matches!(err, StoreError::ModelMismatch { .. }), "{err}");
    assert!(err.to_string().contains("re-embed"), "{err}");
    let mut short = doc("c.md", 1, 1.0);
    short.chunks[0].vector.pop();
    assert!(matches!(store.put_document(&short).unwrap_err(), StoreError::Dimension { .. }));
    assert_eq!(store.stats().unwrap().documents, 1, "nothing of the refused writes landed");
}

#[test]
fn a_store_from_another_schema_asks_for_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    open_store(dir.path()).unwrap();
    ragbox::store::close_kept(); // as a process that finished leaves it
    {
        let db = redb::Database::create(dir.path().join(ragbox::store::STORE_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(redb::TableDefinition::<&str, u64>::new("meta")).unwrap().insert("schema_version", 99).unwrap();
        txn.commit().unwrap();
    }
    let err = open_store(dir.path()).unwrap_err();
    assert!(err.to_string().contains("schema version 99"), "{err}");
}

#[test]
fn a_damaged_store_is_reported_and_a_foreign_one_replaced() {
    // This user's store, its bytes damaged in place: reported, never a panic.
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    for i in 0..50 {
        store.put_document(&doc(&format!("d/{i}.md"), 3, i as f32)).unwrap();
    }
    drop(store);
    ragbox::store::close_kept(); // as a process that finished leaves it
    let file = dir.path().join(ragbox::store::STORE_FILE);
    let mut bytes = std::fs::read(&file).unwrap();
    for at in (4096..bytes.len()).step_by(997) {
        bytes[at] ^= 0xff;
    }
    std::io::Write::write_all(&mut std::fs::OpenOptions::new().write(true).open(&file).unwrap(), &bytes).unwrap();
    let read = open_store(dir.path()).and_then(|s| s.documents());
    let err = read.expect_err("a damaged store is an error");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("`ragbox doctor --reset` starts over"), "{err}");

    // Garbage the folder came with (no stamp of this key) is never read: it is replaced.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(ragbox::store::STORE_FILE), vec![0xAB; 4096]).unwrap();
    let store = open_store(dir.path()).unwrap();
    assert_eq!(store.stats().unwrap().documents, 0);
}

/// Re-runs this test binary as a writer child: `STORE_CHILD=<dir>:<prefix>:<count>`.
fn spawn_writer(dir: &Path, prefix: &str, count: usize) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer", "--ignored", "--nocapture", "--test-threads=1"])
        .env("STORE_CHILD", format!("{}:{prefix}:{count}", dir.display()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Not a test on its own: the body of the writer children (ignored in normal runs).
#[test]
#[ignore = "child process entry point for the multi-process store tests"]
fn child_writer() {
    let spec = std::env::var("STORE_CHILD").expect("run only as a child of the store tests");
    let mut parts = spec.rsplitn(3, ':');
    let (count, prefix, dir) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let store = open_store(Path::new(dir)).unwrap();
    for i in 0..count.parse::<usize>().unwrap() {
        // Every document of a child has i + 1 chunks: a torn write would show.
        store.put_document(&doc(&format!("{prefix}/{i}.md"), i % 7 + 1, i as f32)).unwrap();
    }
}

fn assert_consistent(store: &Store) -> usize {
    let docs = store.documents().unwrap();
    for d in &docs {
        let chunks = store.chunks(&d.path).unwrap();
        assert_eq!(chunks.len(), d.chunks as usize, "{} is half-written", d.path);
        let i: usize = d.path.rsplit('/').next().unwrap().trim_end_matches(".md").parse().unwrap();
        assert_eq!(chunks.len(), i % 7 + 1, "{} has the wrong chunks", d.path);
        assert!(chunks.iter().all(|(_, v)| v.len() == DIM));
    }
    docs.len()
}

#[test]
fn sigkill_mid_write_leaves_no_half_written_document() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_writer(dir.path(), "killed", 1_000_000);
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let store = open_store(dir.path()).unwrap();
    let written = assert_consistent(&store);
    assert!(written > 10, "the writer got somewhere before the kill ({written})");
    // The next writer carries on.
    store.put_document(&doc("after/0.md", 1, 0.0)).unwrap();
    assert_eq!(assert_consistent(&store), written + 1);
}

#[test]
fn two_writers_and_a_reader_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    let mut writers = [spawn_writer(dir.path(), "one", 150), spawn_writer(dir.path(), "two", 150)];
    // Reads never fail while the writers run.
    let started = Instant::now();
    let mut reads = 0;
    while writers.iter_mut().any(|w| w.try_wait().unwrap().is_none()) {
        store.stats().expect("a read during concurrent writes");
        reads += 1;
        assert!(started.elapsed() < Duration::from_secs(120), "writers did not finish");
    }
    for w in &mut writers {
        assert!(w.wait().unwrap().success(), "a writer failed");
    }
    assert!(reads > 0);
    assert_eq!(assert_consistent(&store), 300);
    assert_eq!(store.stats().unwrap().generation, 300);
}

#[test]
fn a_store_stays_open_between_calls_and_other_processes_write_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_at(dir.path(), test_key(), Keep::BetweenCalls).unwrap(); // as `serve` does
    store.put_document(&doc("held/0.md", 1, 0.0)).unwrap();
    let opens = store.times_opened();
    let held = store.hold().unwrap();
    for i in 1..20 {
        held.put_document(&doc(&format!("held/{i}.md"), i % 7 + 1, i as f32)).unwrap();
        // A plain handle in the same process shares the held database.
        assert_eq!(store.stats().unwrap().documents, i as u64 + 1);
    }
    drop(held);
    assert_eq!(store.stats().unwrap().documents, 20);
    assert_eq!(store.times_opened(), opens, "kept open between calls, not reopened");

    // Another process writes while this one has the store open, and this one sees its commits.
    let writer = spawn_writer(dir.path(), "after", 5);
    let held = store.hold().unwrap();
    assert!(wait_for(writer).success(), "the writer could not write beside an open store");
    assert_eq!(held.stats().unwrap().documents, 25);
    drop(held);

    // Once idle, the store is closed; the next call opens it again.
    ragbox::store::close_kept();
    assert_eq!(store.stats().unwrap().documents, 25);
    assert_eq!(store.times_opened(), opens + 1);
}

/// A child's exit status, within 60 s.
fn wait_for(mut child: std::process::Child) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the child never finished");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Not a test on its own: a child that holds a store open for a while
/// (`STORE_HOLDER=<dir>:<ms>`) the way an older ragbox did, shutting other
/// processes out (redb's exclusive mode).
#[test]
#[ignore = "child process entry point for the multi-process store tests"]
fn child_holder() {
    let spec = std::env::var("STORE_HOLDER").expect("run only as a child of the store tests");
    let (dir, ms) = spec.rsplit_once(':').unwrap();
    let held = redb::Database::open(Path::new(dir).join(ragbox::store::STORE_FILE)).unwrap();
    std::fs::write(Path::new(dir).join("holding"), b"").unwrap();
    std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
    drop(held);
}

#[test]
fn waiting_for_one_store_does_not_delay_another() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store_a, store_b) = (open_store(a.path()).unwrap(), open_store(b.path()).unwrap());
    store_b.put_document(&doc("b.md", 1, 0.0)).unwrap();
    // Closed, as a process that ran and finished would leave it.
    ragbox::store::close_kept();
    let mut holder = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_holder", "--ignored", "--nocapture", "--test-threads=1"])
        .env("STORE_HOLDER", format!("{}:1500", a.path().display()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !a.path().join("holding").exists() {
        assert!(started.elapsed() < Duration::from_secs(30), "the holder never held the store");
        std::thread::sleep(Duration::from_millis(10));
    }
    // This thread waits for store A, which the other process holds...
    let waiting = std::thread::spawn(move || {
        let t = Instant::now();
        store_a.stats().unwrap();
        t.elapsed()
    });
    std::thread::sleep(Duration::from_millis(100));
    // ...while store B answers at once.
    let t = Instant::now();
    assert_eq!(store_b.stats().unwrap().documents, 1);
    assert!(t.elapsed() < Duration::from_millis(500), "store B waited {:?} behind store A", t.elapsed());
    assert!(waiting.join().unwrap() > Duration::from_millis(500), "store A did not wait for the holder");
    assert!(holder.wait().unwrap().success());
}

/// The key these tests' stores are stamped with (one for every process of a test).
fn test_key() -> std::sync::Arc<ragbox::datadir::owner::Key> {
    std::sync::Arc::new(ragbox::datadir::owner::Key::from_bytes([7; 32]))
}

/// The store kept in the folder `dir`.
fn open_store(dir: &Path) -> Result<Store, StoreError> {
    Store::open_at(dir, test_key(), Keep::UntilDropped)
}
