//! Loads precomputed chunk vectors into a ragbox index, for bench/scale.py:
//! `cargo bench -p ragbox-tests --bench load -- DOCS.jsonl VECTORS.f32 WORKSPACE`.
//!
//! DOCS.jsonl holds one document per line (`path`, `hash`, `size`, `kind`,
//! `title`, `chunks`: `text`, `start`, `end`); VECTORS.f32 the chunks' unit vectors in
//! the same order, little-endian f32, 384 per chunk. The documents go into
//! WORKSPACE/.ragbox through the same `Corpus` the `embed_workspace` tool
//! writes through; then a vector search and a keyword search build (and
//! save) the derived indexes, as a server's first searches would, the
//! vector index's background graph builds waited for. Embedding
//! is the one step skipped: the peers get the same vectors. Prints one JSON
//! line of timings.
//!
//! With `RAGBOX_STORE` (and `RAGBOX_COLLECTION`) set, the documents go into
//! that shared PostgreSQL collection instead, as `ragbox --store` would
//! write them (its vector index is the database's; the keyword index is
//! built locally in WORKSPACE/.ragbox).

use ragbox::corpus::{Corpus, SharedEmbedder};
use ragbox::embed::default_model_dir;
use ragbox::index::Filter;
use ragbox::postgres::{Collection, Target, TargetSpec};
use ragbox::records::{ChunkRecord, DocumentRecord, NewChunk, NewDocument};
use serde_json::Value;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DIM: usize = 384;
/// Documents per transaction, as the indexer's batches.
const BATCH: usize = 256;

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_else(|| panic!("missing string {key:?} in {v}")).to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let [_, docs, vectors, workspace] = &args[..] else {
        panic!("usage: load DOCS.jsonl VECTORS.f32 WORKSPACE");
    };
    let bytes = std::fs::read(vectors).expect("read the vectors");
    assert_eq!(bytes.len() % (4 * DIM), 0, "{vectors} is not a whole number of {DIM}-float vectors");
    let mut floats = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));

    let workspace = PathBuf::from(workspace);
    let embedder = Arc::new(SharedEmbedder::new(default_model_dir().expect("a home folder or RAGBOX_MODEL")));
    let corpus = match std::env::var("RAGBOX_STORE") {
        Ok(url) => {
            let target = Target::new(&TargetSpec { url, ..Default::default() }).expect("the store URL");
            let name = std::env::var("RAGBOX_COLLECTION").unwrap_or_else(|_| "load".into());
            Corpus::shared(workspace.clone(), Arc::new(Collection::new(target, &name)), embedder)
        }
        Err(_) => Corpus::new(workspace.clone(), embedder),
    };

    let started = Instant::now();
    let (mut documents, mut chunks, mut batch) = (0usize, 0usize, Vec::with_capacity(BATCH));
    let lines = std::io::BufReader::new(std::fs::File::open(docs).expect("open the documents"));
    for line in lines.lines() {
        let doc: Value = serde_json::from_str(&line.expect("read a line")).expect("a JSON document");
        let new_chunks: Vec<NewChunk> = doc["chunks"]
            .as_array()
            .expect("chunks")
            .iter()
            .map(|c| NewChunk {
                record: ChunkRecord {
                    text: text(c, "text"),
                    start: c["start"].as_u64().expect("start"),
                    end: c["end"].as_u64().expect("end"),
                },
                vector: floats.by_ref().take(DIM).collect(),
            })
            .collect();
        assert!(new_chunks.iter().all(|c| c.vector.len() == DIM), "fewer vectors than chunks");
        chunks += new_chunks.len();
        documents += 1;
        let record = DocumentRecord {
            path: text(&doc, "path"),
            content_hash: text(&doc, "hash"),
            size: doc["size"].as_u64().expect("size"),
            kind: text(&doc, "kind"),
            title: doc["title"].as_str().map(String::from),
            ..Default::default()
        };
        batch.push(NewDocument { record, dimension: DIM, chunks: new_chunks });
        if batch.len() == BATCH {
            corpus.put_many(std::mem::take(&mut batch)).expect("store a batch");
        }
    }
    corpus.put_many(batch).expect("store the last batch");
    assert!(floats.next().is_none(), "more vectors than chunks");
    let stored = started.elapsed().as_secs_f64();
    let stored_peak = peak_mib();

    // The vector index as a server's first search starts it, then waited for:
    // its graphs build in the background and are saved.
    let t = Instant::now();
    let probe = vec![1.0 / (DIM as f32).sqrt(); DIM];
    corpus.search_vectors(&probe, 10, &Filter::default()).expect("vector search");
    corpus.settle_vectors().expect("vector index");
    let vector_index = t.elapsed().as_secs_f64();
    let vector_peak = peak_mib();
    let t = Instant::now();
    corpus.search_fulltext("index", 10, &Filter::default()).expect("keyword search");
    let keyword_index = t.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({"documents": documents, "chunks": chunks, "store_s": stored,
                           "vector_index_s": vector_index, "keyword_index_s": keyword_index,
                           "peak_mib_after_store": stored_peak, "peak_mib_after_vectors": vector_peak})
    );
}

/// This process's peak RSS so far (VmHWM), MiB.
fn peak_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kib.unwrap_or(0) / 1024
}
