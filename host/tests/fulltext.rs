//! The BM25 keyword index: stemming, path filters, updates, generations, and
//! two writers contending for tantivy's writer lock.

use ragbox::fulltext::Fulltext;
use ragbox::records::{ChunkRecord, DocumentRecord, TextDelta};
use std::collections::BTreeSet;

fn paths(hits: &[ragbox::fulltext::FulltextHit]) -> Vec<(String, u32)> {
    hits.iter().map(|h| (h.path.clone(), h.ordinal)).collect()
}

/// A change from the store as the corpus hands it over: these documents
/// (path, chunk texts) replaced, those paths removed, at `generation`.
fn delta(generation: u64, full: bool, documents: &[(&str, &[&str])], removed: &[&str]) -> TextDelta {
    let documents = documents
        .iter()
        .map(|(path, chunks)| {
            let record = DocumentRecord { path: path.to_string(), chunks: chunks.len() as u32, ..Default::default() };
            let chunks = chunks.iter().map(|t| ChunkRecord { text: t.to_string(), start: 0, end: t.len() as u64 });
            (record, chunks.collect())
        })
        .collect();
    TextDelta { generation, full, documents, removed: removed.iter().map(|p| p.to_string()).collect() }
}

fn corpus(ft: &Fulltext) {
    let documents: [(&str, &[&str]); 3] = [
        ("auth.md", &["We rotate refresh tokens daily.", "JWT access tokens expire in 15 minutes."]),
        ("ws.md", &["WebSocket connections dropped behind the load balancer."]),
        ("notes/todo.md", &["Buy milk.", "Connecting the printer keeps failing."]),
    ];
    ft.apply(&delta(7, true, &documents, &[])).unwrap();
}

#[test]
fn stems_ranks_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    let ft = Fulltext::open(dir.path()).unwrap();
    assert_eq!(ft.generation().unwrap(), 0);
    corpus(&ft);
    assert_eq!(ft.generation().unwrap(), 7);
    // "connection" stems to "connect": matches "connections" and "Connecting".
    let hits = ft.search("connection", 10, None).unwrap();
    let mut got = paths(&hits);
    got.sort();
    assert_eq!(got, [("notes/todo.md".to_string(), 1), ("ws.md".to_string(), 0)]);
    assert!(hits.iter().all(|h| h.score > 0.0));
    // Rarer, repeated terms rank higher.
    let hits = ft.search("tokens jwt", 10, None).unwrap();
    assert_eq!(paths(&hits)[0], ("auth.md".to_string(), 1));
    // Only allowed paths come back; an empty allow-list gives nothing.
    let allowed: BTreeSet<String> = ["notes/todo.md".to_string()].into();
    assert_eq!(paths(&ft.search("connection", 10, Some(&allowed)).unwrap()), [("notes/todo.md".to_string(), 1)]);
    assert!(ft.search("connection", 10, Some(&BTreeSet::new())).unwrap().is_empty());
    // Broken query syntax is forgiven, not an error.
    assert!(!ft.search("tokens AND (", 10, None).unwrap().is_empty());
    assert!(ft.search("", 10, None).unwrap().is_empty());
}

#[test]
fn updates_replace_a_document_and_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let ft = Fulltext::open(dir.path()).unwrap();
        corpus(&ft);
        ft.apply(&delta(8, false, &[("ws.md", &["Server-sent events replaced the sockets."])], &[])).unwrap();
        ft.apply(&delta(9, false, &[], &["auth.md"])).unwrap();
    }
    let ft = Fulltext::open(dir.path()).unwrap();
    assert_eq!(ft.generation().unwrap(), 9);
    assert!(ft.search("websocket", 10, None).unwrap().is_empty());
    assert_eq!(paths(&ft.search("events", 10, None).unwrap()), [("ws.md".to_string(), 0)]);
    assert!(ft.search("tokens", 10, None).unwrap().is_empty(), "removed document still found");
}

#[test]
fn concurrent_writers_wait_for_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    Fulltext::open(dir.path()).unwrap();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let dir = dir.path().to_path_buf();
            std::thread::spawn(move || {
                // Separate handles, as separate processes would have.
                let ft = Fulltext::open(&dir).unwrap();
                for i in 0..15 {
                    let path = format!("w{w}/{i}.md");
                    ft.apply(&delta(1, false, &[(&path, &["shared keyword"])], &[])).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let ft = Fulltext::open(dir.path()).unwrap();
    assert_eq!(ft.search("keyword", 100, None).unwrap().len(), 30);
}

#[test]
fn stop_words_are_not_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let ft = Fulltext::open(dir.path()).unwrap();
    corpus(&ft);
    assert!(ft.search("the", 10, None).unwrap().is_empty(), "a stop word matches nothing");
    // A query's stop words do not dilute it.
    assert_eq!(paths(&ft.search("the printer", 10, None).unwrap()), [("notes/todo.md".to_string(), 1)]);
}

#[test]
fn an_index_in_an_older_format_is_started_over() {
    let dir = tempfile::tempdir().unwrap();
    // An index whose text field used tantivy's plain English analyzer, as ragbox once did.
    let mut schema = tantivy::schema::Schema::builder();
    schema.add_text_field("path", tantivy::schema::STRING | tantivy::schema::STORED);
    schema.add_text_field("text", tantivy::schema::TEXT);
    tantivy::Index::create_in_dir(dir.path(), schema.build()).unwrap();
    let ft = Fulltext::open(dir.path()).expect("an old index is replaced, not an error");
    assert_eq!(ft.generation().unwrap(), 0, "empty, so the store fills it again");
    corpus(&ft);
    assert_eq!(ft.search("printer", 10, None).unwrap().len(), 1);
}
