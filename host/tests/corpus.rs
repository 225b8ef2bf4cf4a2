//! One workspace's index seen from two "processes" (two `Corpus` values on one
//! data dir): what one writes, the other's vector and keyword searches find,
//! through the store's change log, without rebuilding from scratch.

use ragbox::corpus::{Corpus, SharedEmbedder};
use ragbox::embed::{EmbedKind, default_model_dir};
use ragbox::index::Filter;
use ragbox::records::{ChunkRecord, DocumentRecord, NewChunk, NewDocument};
use std::sync::Arc;

fn document(corpus: &Corpus, path: &str, kind: &str, texts: &[&str]) -> NewDocument {
    let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    let vectors = corpus.embedder().get().unwrap().embed(&texts, EmbedKind::Passage).unwrap();
    NewDocument {
        record: DocumentRecord {
            path: path.into(),
            content_hash: format!("{path}:{}", texts.join("|")),
            kind: "markdown".into(),
            conversation_type: Some(kind.into()),
            date: Some("2025-11-17".into()),
            ..Default::default()
        },
        dimension: 0, // set by Corpus::put from the model
        chunks: texts
            .into_iter()
            .zip(vectors)
            .map(|(text, vector)| NewChunk { record: ChunkRecord { text, start: 0, end: 0 }, vector })
            .collect(),
    }
}

/// A fresh data dir and the model, for the corpora a test opens on it.
fn data_dir() -> (tempfile::TempDir, Arc<SharedEmbedder>) {
    let dir = tempfile::tempdir().unwrap();
    (dir, Arc::new(SharedEmbedder::new(default_model_dir().expect("a home folder or RAGBOX_MODEL"))))
}

/// A corpus on `dir`, as one process opens it.
fn open(dir: &tempfile::TempDir, embedder: &Arc<SharedEmbedder>) -> Corpus {
    Corpus::new(dir.path().to_path_buf(), embedder.clone()).with_key(test_key())
}

fn query(corpus: &Corpus, text: &str) -> Vec<f32> {
    corpus.embedder().get().unwrap().embed(&[text.to_string()], EmbedKind::Query).unwrap().remove(0)
}

#[test]
fn a_second_reader_follows_every_change() {
    let (dir, embedder) = data_dir();
    let writer = open(&dir, &embedder);
    let reader = open(&dir, &embedder);

    // Nothing stored yet: searches are empty and create no files.
    let q = query(&reader, "jwt refresh tokens");
    assert!(reader.search_vectors(&q, 5, &Filter::default()).unwrap().is_empty());
    assert!(reader.search_fulltext("tokens", 5, &Filter::default()).unwrap().is_empty());
    assert!(!dir.path().join(".ragbox").exists());

    let auth = ["JWT access tokens expire after 15 minutes.", "Refresh tokens rotate on every use."];
    writer.put(document(&writer, "brainstorm/a.md", "brainstorm", &auth)).unwrap();
    writer.put(document(&writer, "debug/b.md", "debug", &["The websocket dropped behind the proxy."])).unwrap();
    let hits = reader.search_vectors(&q, 5, &Filter::default()).unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0].hit.document.path, "brainstorm/a.md");
    assert!(auth.contains(&hits[0].chunk.text.as_str()));
    assert!(hits[0].hit.document.model_id.starts_with("all-MiniLM-L6-v2@"), "stamped by put");
    let words = reader.search_fulltext("websockets", 5, &Filter::default()).unwrap();
    assert_eq!(words.len(), 1, "stemmed keyword match");
    assert_eq!(words[0].chunk.text, "The websocket dropped behind the proxy.");

    // A replaced document is searched by its new text only, a removed one not at all.
    writer.put(document(&writer, "debug/b.md", "debug", &["Rotating refresh tokens fixed the leak."])).unwrap();
    assert!(writer.remove("brainstorm/a.md").unwrap());
    let hits = reader.search_vectors(&q, 5, &Filter::default()).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].chunk.text, "Rotating refresh tokens fixed the leak.");
    assert!(reader.search_fulltext("websocket", 5, &Filter::default()).unwrap().is_empty());
    assert_eq!(reader.search_fulltext("refresh", 5, &Filter::default()).unwrap().len(), 1);

    // Filters apply to both searches.
    writer.put(document(&writer, "plan/c.md", "plan", &["Plan: adopt refresh token rotation."])).unwrap();
    let plan = Filter { conversation_type: Some("plan".into()), ..Default::default() };
    let hits = reader.search_vectors(&q, 5, &plan).unwrap();
    assert_eq!(hits.iter().map(|h| h.hit.document.path.as_str()).collect::<Vec<_>>(), ["plan/c.md"]);
    let words = reader.search_fulltext("refresh", 5, &plan).unwrap();
    assert_eq!(words.iter().map(|h| h.hit.document.path.as_str()).collect::<Vec<_>>(), ["plan/c.md"]);
    let similar = reader.similar_documents("plan/c.md", 5, &Filter::default()).unwrap().unwrap();
    assert_eq!(similar.iter().map(|h| h.document.path.as_str()).collect::<Vec<_>>(), ["debug/b.md"]);
    assert!(reader.similar_documents("brainstorm/a.md", 5, &Filter::default()).unwrap().is_none());
    let stats = reader.stats().unwrap();
    assert_eq!((stats.documents, stats.chunks), (2, 2));
}

#[test]
fn a_recreated_store_does_not_inherit_old_derived_indexes() {
    let (dir, embedder) = data_dir();
    let first = open(&dir, &embedder);
    first.put(document(&first, "old.md", "plan", &["Quarterly budget numbers."])).unwrap();
    assert_eq!(first.search_fulltext("budget", 5, &Filter::default()).unwrap().len(), 1);
    // The user deletes the store (not the keyword index) and embeds something else:
    // the new store reaches the same generation, 1.
    std::fs::remove_file(first.db_path()).unwrap();
    let second = open(&dir, &embedder);
    second.put(document(&second, "new.md", "plan", &["Hiking trails near the lake."])).unwrap();
    assert!(second.search_fulltext("budget", 5, &Filter::default()).unwrap().is_empty());
    assert_eq!(second.search_fulltext("hiking", 5, &Filter::default()).unwrap().len(), 1);
}

#[test]
fn a_warmed_server_holds_one_copy_of_each_record() {
    let (dir, embedder) = data_dir();
    let writer = open(&dir, &embedder);
    writer.put(document(&writer, "notes/a.md", "plan", &["Budget review moved to Friday."])).unwrap();
    // What `ragbox index` does at its end: the vector index is saved for the servers that start next.
    writer.save_vectors().unwrap();
    assert!(dir.path().join(".ragbox/vectors/manifest").is_file());
    let server = open(&dir, &embedder);
    server.warm().unwrap();
    let by_meaning = server.search_vectors(&query(&server, "budget meeting"), 1, &Filter::default()).unwrap();
    let by_words = server.search_fulltext("budget", 1, &Filter::default()).unwrap();
    assert!(
        Arc::ptr_eq(&by_meaning[0].hit.document, &by_words[0].hit.document),
        "the vector index took the keyword side's record"
    );
}

#[test]
fn a_warmed_server_takes_the_saved_vector_index_records_and_then_what_changed() {
    let (dir, embedder) = data_dir();
    let writer = open(&dir, &embedder);
    writer.put(document(&writer, "notes/a.md", "plan", &["Budget review moved to Friday."])).unwrap();
    writer.put(document(&writer, "notes/c.md", "plan", &["The budget spreadsheet is archived."])).unwrap();
    writer.save_vectors().unwrap();
    // Changed after the vector index was saved: only the store knows.
    writer.put(document(&writer, "notes/b.md", "plan", &["A budget for the offsite dinner."])).unwrap();
    assert!(writer.remove("notes/c.md").unwrap());

    let server = open(&dir, &embedder);
    server.warm().unwrap();
    let mut by_words: Vec<_> =
        server.search_fulltext("budget", 5, &Filter::default()).unwrap().into_iter().map(|h| h.hit.document).collect();
    by_words.sort_by(|a, b| a.path.cmp(&b.path));
    let paths: Vec<&str> = by_words.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["notes/a.md", "notes/b.md"], "the removed one gone, the added one found");
    let by_meaning = server.search_vectors(&query(&server, "budget"), 5, &Filter::default()).unwrap();
    assert_eq!(by_meaning.len(), 2);
    for hit in &by_meaning {
        let same = by_words.iter().find(|d| d.path == hit.hit.document.path).expect("both sides hold it");
        assert!(Arc::ptr_eq(same, &hit.hit.document), "one copy of {}", same.path);
    }
    // And later changes still reach the keyword side.
    server.put(document(&server, "notes/d.md", "plan", &["Budget approved."])).unwrap();
    assert_eq!(server.search_fulltext("approved", 5, &Filter::default()).unwrap().len(), 1);
}

#[test]
fn a_warmed_server_finds_documents_stored_for_keywords_only() {
    let (dir, embedder) = data_dir();
    let writer = open(&dir, &embedder);
    // As the indexer's first pass stores many new files: chunks, none with a vector yet.
    let docs: Vec<NewDocument> = (0..3)
        .map(|i| NewDocument {
            record: DocumentRecord { path: format!("notes/{i}.md"), kind: "markdown".into(), ..Default::default() },
            dimension: 0,
            chunks: vec![NewChunk {
                record: ChunkRecord { text: format!("Note {i}: the heron survey."), start: 0, end: 0 },
                vector: Vec::new(),
            }],
        })
        .collect();
    writer.put_many(docs).unwrap();
    let server = open(&dir, &embedder);
    server.warm().unwrap();
    assert_eq!(server.search_fulltext("heron", 5, &Filter::default()).unwrap().len(), 3);
}

#[test]
fn a_following_process_indexes_its_writes_for_keywords_on_its_own() {
    let (dir, embedder) = data_dir();
    let following = ragbox::corpus::Options { follow_keywords: true, ..Default::default() };
    let writer = open(&dir, &embedder).with_options(following).into_shared();
    // Stored for keyword search only (chunks without vectors), as the indexer's first pass stores many new files.
    let docs: Vec<NewDocument> = (0..300)
        .map(|i| NewDocument {
            record: DocumentRecord { path: format!("notes/{i:03}.md"), kind: "markdown".into(), ..Default::default() },
            dimension: 0,
            chunks: vec![NewChunk {
                record: ChunkRecord {
                    text: format!("Note {i}: the otter{i} survey, page after page."),
                    start: 0,
                    end: 0,
                },
                vector: Vec::new(),
            }],
        })
        .collect();
    for batch in docs.chunks(50) {
        writer.put_many(batch.to_vec()).unwrap();
    }
    // No search and no settling: the index on disk reaches the store's generation by the follower alone.
    let generation = writer.stats().unwrap().generation;
    let keyword = ragbox::fulltext::Fulltext::open(&dir.path().join(".ragbox/keyword")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while keyword.generation().unwrap() != generation {
        assert!(std::time::Instant::now() < deadline, "the follower did not index the writes");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    writer.settle_keywords().unwrap();
    let found = writer.search_fulltext("otter299", 3, &Filter::default()).unwrap();
    assert_eq!(found[0].hit.document.path, "notes/299.md");
    assert!(!found[0].hit.document.embedded(), "stored without vectors: not embedded yet");
    assert!(writer.search_vectors(&query(&writer, "otter survey"), 3, &Filter::default()).unwrap().is_empty());
}

/// The key these tests' data dirs are stamped with.
fn test_key() -> Arc<ragbox::datadir::owner::Key> {
    Arc::new(ragbox::datadir::owner::Key::from_bytes([7; 32]))
}
