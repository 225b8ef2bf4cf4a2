//! `serve --watch`: files created, edited, deleted and renamed while serving
//! reach the index; ignored paths do not; a burst of 10,000 changes is taken
//! whole; a server killed mid-burst is caught up by the next one.
//!
//! Waits are generous deadlines, not speed checks: the latencies seen are
//! printed, and `make bench` measures them.

use ragbox_tests::{Client, Fixture, Raw, ok};
use serde_json::json;
use std::future::Future;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// Polls `probe` until it holds; how long that took. Panics after [`DEADLINE`].
async fn until<F: Future<Output = bool>>(what: &str, mut probe: impl FnMut() -> F) -> Duration {
    let started = Instant::now();
    while started.elapsed() < DEADLINE {
        if probe().await {
            let took = started.elapsed();
            eprintln!("watch: {what}: {} ms", took.as_millis());
            return took;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("watch: {what}: not seen within {DEADLINE:?}");
}

/// The indexed paths, sorted.
async fn sources(client: &Client) -> Vec<String> {
    let r = ok(client, "list_sources", json!({ "limit": 1000 })).await;
    let mut paths: Vec<String> =
        r["sources"].as_array().unwrap().iter().map(|s| s["path"].as_str().unwrap().to_string()).collect();
    paths.sort();
    paths
}

async fn total(client: &Client) -> u64 {
    ok(client, "list_sources", json!({ "limit": 1 })).await["total_sources"].as_u64().unwrap()
}

/// The files a fulltext search for `word` finds.
async fn found(client: &Client, word: &str) -> Vec<String> {
    let r = ok(client, "search", json!({ "query": word, "search_type": "fulltext", "limit": 10 })).await;
    r["results"].as_array().unwrap().iter().map(|x| x["source"]["filepath"].as_str().unwrap().to_string()).collect()
}

fn paths(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn creates_edits_deletes_and_renames_reach_the_index() {
    let f = Fixture::empty();
    f.write("notes/alpha.md", "# Alpha\n\nThe zebra migration plan, step by step.\n");
    f.write(".gitignore", "scratch/\n");
    f.write("scratch/draft.md", "An ignored draft about the zebra.\n");
    let client = f.connect_with(&["serve", "--watch"]).await;

    // What was there before the server started is indexed by the watcher itself.
    // (.gitignore is a text file like any other.)
    until("catch-up at start", || async { sources(&client).await == paths(&[".gitignore", "notes/alpha.md"]) }).await;
    let r = ok(&client, "list_sources", json!({ "include_stats": true })).await;
    assert_eq!(r["sources"][1]["source_method"], "file_watcher", "{r}");
    assert_eq!(r["statistics"]["source_methods"], json!({ "file_watcher": 2 }), "{r}");

    f.write("notes/beta.md", "# Beta\n\nThe quokka census results.\n");
    until("create", || async { found(&client, "quokka").await == paths(&["notes/beta.md"]) }).await;

    f.write("notes/alpha.md", "# Alpha\n\nThe narwhal migration plan, step by step.\n");
    until("edit", || async {
        found(&client, "narwhal").await == paths(&["notes/alpha.md"]) && found(&client, "zebra").await.is_empty()
    })
    .await;

    std::fs::rename(f.workspace.join("notes/beta.md"), f.workspace.join("notes/gamma.md")).unwrap();
    until("rename a file", || async {
        sources(&client).await == paths(&[".gitignore", "notes/alpha.md", "notes/gamma.md"])
    })
    .await;
    assert_eq!(found(&client, "quokka").await, paths(&["notes/gamma.md"]));

    std::fs::rename(f.workspace.join("notes"), f.workspace.join("archive")).unwrap();
    until("rename a folder", || async {
        sources(&client).await == paths(&[".gitignore", "archive/alpha.md", "archive/gamma.md"])
    })
    .await;

    std::fs::remove_file(f.workspace.join("archive/gamma.md")).unwrap();
    until("delete", || async { sources(&client).await == paths(&[".gitignore", "archive/alpha.md"]) }).await;

    // Ignored and ragbox's own paths never reach the index: written first, then
    // a visible file whose arrival shows the watcher has looked at them all.
    f.write("scratch/new.md", "Another ignored draft: the okapi.\n");
    f.write(".ragbox/own.md", "ragbox's data dir: the okapi.\n");
    f.write("archive/delta.md", "The okapi count, for real.\n");
    until("after ignored writes", || async { found(&client, "okapi").await == paths(&["archive/delta.md"]) }).await;
    assert_eq!(sources(&client).await, paths(&[".gitignore", "archive/alpha.md", "archive/delta.md"]));

    // An agent's own embed_workspace run finds nothing left to do.
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!((&r["embedded"], &r["removed"], &r["skipped"]), (&json!(0), &json!(0), &json!(3)), "{r}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_ten_thousand_changes_and_a_kill_lose_nothing() {
    let f = Fixture::empty();
    let write_burst = |range: std::ops::Range<usize>| {
        for i in range {
            // Mostly empty files, like a checkout's many small ones; every
            // thousandth carries a word to search for.
            let text =
                if i % 1000 == 999 { format!("Burst file {i}: the pangolin{i} census.\n") } else { String::new() };
            f.write(&format!("burst/{:02}/{i:05}.md", i / 500), &text);
        }
    };

    let client = f.connect_with(&["serve", "--watch"]).await;
    until("server up", || async { total(&client).await == 0 }).await;
    let started = Instant::now();
    write_burst(0..10_000);
    eprintln!("watch: wrote 10,000 files in {} ms", started.elapsed().as_millis());
    until("10,000 files indexed", || async { total(&client).await == 10_000 }).await;
    assert_eq!(found(&client, "pangolin9999").await, paths(&["burst/19/09999.md"]));
    client.cancel().await.unwrap();

    // Killed (SIGKILL) while a second burst is written and being indexed.
    let raw = Raw::start_with(&f, &["serve", "--watch"]);
    write_burst(10_000..12_000);
    for i in 0..1000 {
        std::fs::remove_file(f.workspace.join(format!("burst/{:02}/{i:05}.md", i / 500))).unwrap();
    }
    std::thread::sleep(Duration::from_millis(700));
    drop(raw);
    f.write("late/after-kill.md", "Written while no server ran: the axolotl.\n");

    // The next server catches up with everything, and its index is whole.
    let client = f.connect_with(&["serve", "--watch"]).await;
    // (Its 2,001 new files are searchable by keyword before they are embedded: wait for both.)
    until("catch-up after the kill", || async {
        total(&client).await == 11_001
            && ok(&client, "get_embedding_status", json!({})).await["up_to_date"] == json!(true)
    })
    .await;
    assert_eq!(found(&client, "axolotl").await, paths(&["late/after-kill.md"]));
    assert_eq!(found(&client, "pangolin11999").await, paths(&["burst/23/11999.md"]));
    assert!(found(&client, "pangolin999").await.is_empty(), "a deleted file is still indexed");
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(status["up_to_date"], json!(true), "{status}");
    client.cancel().await.unwrap();
}

/// A git worktree or submodule made inside a watched workspace has a `.git`
/// file (a pointer to the repository), which is never content: the folder's
/// files reach the index, its `.git` does not.
#[tokio::test(flavor = "multi_thread")]
async fn a_git_file_arriving_with_a_folder_is_never_indexed() {
    let f = Fixture::empty();
    f.write("notes/alpha.md", "# Alpha\n\nThe zebra migration plan.\n");
    let client = f.connect_with(&["serve", "--watch"]).await;
    until("catch-up at start", || async { sources(&client).await == paths(&["notes/alpha.md"]) }).await;
    // Made beside the workspace, then moved in whole: one event for the folder.
    let made = f.dir.path().join("checkout");
    std::fs::create_dir_all(&made).unwrap();
    std::fs::write(made.join(".git"), "gitdir: /elsewhere/.git/worktrees/checkout\n").unwrap();
    std::fs::write(made.join("beta.md"), "# Beta\n\nThe quokka census.\n").unwrap();
    std::fs::rename(&made, f.workspace.join("checkout")).unwrap();
    until("the folder's file", || async { sources(&client).await.contains(&"checkout/beta.md".to_string()) }).await;
    assert_eq!(sources(&client).await, paths(&["checkout/beta.md", "notes/alpha.md"]));
}
