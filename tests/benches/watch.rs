//! `serve --watch` latency: from a write to the index answering with it, for
//! creates, edits and deletes in a workspace of 1,000 real tldr pages; and a
//! 10,000-file burst (a checkout) from its last write to the last file indexed.
//! Driven through MCP stdio by rmcp's client, polling `search` (fulltext)
//! and `list_sources` every 20 ms, so times are within ~20 ms plus one call.
//!
//! Run with `make bench` (or `RAGBOX_BIN=target/release/ragbox cargo bench -p
//! ragbox-tests --bench watch`); writes `bench/results/watch.md`.

use ragbox_tests::{Client, Fixture, cpu_model, ok, repo_root, report_head};
use serde_json::json;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

const ROUNDS: usize = 20;

/// Polls `probe` until it holds; the time since `since`.
async fn seen<F: Future<Output = bool>>(since: Instant, mut probe: impl FnMut() -> F) -> Duration {
    while since.elapsed() < Duration::from_secs(120) {
        if probe().await {
            return since.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("not indexed within 120 s");
}

async fn found(client: &Client, word: &str) -> Vec<String> {
    let r = ok(client, "search", json!({ "query": word, "search_type": "fulltext", "limit": 5 })).await;
    r["results"].as_array().unwrap().iter().map(|x| x["source"]["filepath"].as_str().unwrap().to_string()).collect()
}

async fn total(client: &Client) -> u64 {
    ok(client, "list_sources", json!({ "limit": 1 })).await["total_sources"].as_u64().unwrap()
}

/// Median, p95 and max in ms.
fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let p = |q: f64| ms(samples[((samples.len() - 1) as f64 * q).round() as usize]);
    format!("{:.0} | {:.0} | {:.0} | {}", p(0.5), p(0.95), ms(samples[samples.len() - 1]), samples.len())
}

#[tokio::main]
async fn main() {
    let f = Fixture::tldr(1000);
    let started = Instant::now();
    let client = f.connect_with(&["serve", "--watch"]).await;
    let catch_up = seen(started, || async { total(&client).await == 1000 }).await;

    let (mut creates, mut edits, mut deletes) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        let path = format!("notes/bench-{i}.md");
        let word = format!("zqxcreate{i}");
        let t = Instant::now();
        f.write(&path, &format!("# Note {i}\n\nA new note about {word} and its plans.\n"));
        creates.push(seen(t, || async { found(&client, &word).await == [path.clone()] }).await);

        let edited = format!("zqxedit{i}");
        let t = Instant::now();
        f.write(&path, &format!("# Note {i}\n\nThe note now says {edited} instead.\n"));
        edits.push(seen(t, || async { found(&client, &edited).await == [path.clone()] }).await);

        let t = Instant::now();
        std::fs::remove_file(f.workspace.join(&path)).unwrap();
        deletes.push(seen(t, || async { found(&client, &edited).await.is_empty() }).await);
    }

    let t = Instant::now();
    for i in 0..10_000 {
        f.write(&format!("checkout/{:02}/{i:05}.txt", i / 500), &format!("file {i}\n"));
    }
    let written = t.elapsed();
    let last_write = Instant::now();
    let burst = seen(last_write, || async { total(&client).await == 11_000 }).await;
    client.cancel().await.unwrap();

    let mut report = report_head(
        "`serve --watch`: from a write to the index",
        "`RAGBOX_BIN=target/release/ragbox cargo bench -p ragbox-tests --bench watch` (part of `make bench`).",
    );
    writeln!(
        report,
        "Machine: {}, {} threads available. Release binary; model all-MiniLM-L6-v2 on the CPU; \
         workspace: 1,000 tldr pages. Target: a change is searchable within 2 s of the last write.\n",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    )
    .unwrap();
    writeln!(report, "Times in ms from the write (polling every 20 ms through MCP).\n").unwrap();
    writeln!(report, "| change | median | p95 | max | n |\n|---|---|---|---|---|").unwrap();
    writeln!(report, "| create a note, found by a new word | {} |", summary(creates)).unwrap();
    writeln!(report, "| edit it, found by its new word | {} |", summary(edits)).unwrap();
    writeln!(report, "| delete it, gone from search | {} |", summary(deletes)).unwrap();
    writeln!(report).unwrap();
    writeln!(report, "| burst | time |\n|---|---|").unwrap();
    writeln!(report, "| start → 1,000 pages indexed by the catch-up run | {:.1} s |", catch_up.as_secs_f64()).unwrap();
    writeln!(report, "| writing 10,000 one-line files | {:.1} s |", written.as_secs_f64()).unwrap();
    writeln!(report, "| last write → all 10,000 indexed (embedded) | {:.1} s |", burst.as_secs_f64()).unwrap();
    print!("{report}");
    let out = repo_root().join("bench/results/watch.md");
    std::fs::write(&out, report).expect("write bench/results/watch.md");
    eprintln!("wrote {}", out.display());
}
