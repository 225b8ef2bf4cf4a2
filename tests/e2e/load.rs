//! Load: 50 `tools/call` requests in flight at once on one server — searches
//! of every kind mixed with embedding calls that write the index — are all
//! answered, none lost, nothing deadlocks, and the index ends up whole.

use ragbox_tests::{Fixture, call, is_error, ok, text};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

const CALLS: usize = 50;

#[tokio::test(flavor = "multi_thread")]
async fn fifty_mixed_calls_in_flight_are_all_answered() {
    let f = Fixture::tldr(20);
    let pages: Vec<String> = {
        let mut p: Vec<String> = std::fs::read_dir(f.workspace.join("pages"))
            .unwrap()
            .map(|e| format!("pages/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        p.sort();
        p
    };
    let client = Arc::new(f.connect().await);
    // Half the pages are indexed before the storm, half by embed_document calls during it.
    for page in &pages[..10] {
        ok(&client, "embed_document", json!({ "path": page })).await;
    }

    let started = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..CALLS {
        let client = client.clone();
        // Ten embed_document calls (one per remaining page), forty searches and status reads.
        let (tool, args) = match i % 5 {
            0 => ("embed_document", json!({ "path": pages[10 + i / 5] })),
            1 => ("search_semantic", json!({ "query": "compress a folder into an archive", "n_results": 5 })),
            2 => ("search", json!({ "query": "list files", "search_type": "hybrid", "limit": 5 })),
            3 if i % 2 == 0 => ("search_workspace", json!({ "query": "tar" })),
            3 => ("search", json!({ "query": "network", "search_type": "fulltext" })),
            _ => ("get_embedding_status", json!({})),
        };
        calls.spawn(async move {
            let r = call(&client, tool, args).await;
            (tool, is_error(&r), text(&r))
        });
    }
    let answers = calls.join_all().await;
    let elapsed = started.elapsed();
    eprintln!("{CALLS} concurrent calls answered in {:.2} s", elapsed.as_secs_f64());
    assert_eq!(answers.len(), CALLS);
    let failed: Vec<_> = answers.iter().filter(|(_, err, _)| *err).collect();
    assert!(failed.is_empty(), "calls failed under load: {failed:#?}");

    // Every page embedded during the storm is in the index, each once.
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(status["num_documents"], 20, "{status}");
    assert_eq!(status["pending"]["total"], 0, "{status}");
    // The server still answers promptly after the storm.
    let r = ok(&client, "search_workspace", json!({ "query": "tar" })).await;
    assert_eq!(r["success"], true);
}
