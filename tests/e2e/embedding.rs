//! The embedding tools on the real model: seed 000's scenarios, re-runs that
//! embed only what changed, progress and cancellation, a `ragbox index`
//! killed mid-run, and several processes on one workspace at once.

use ragbox_tests::{Client, Fixture, Raw, call, is_error, ok, text};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Ten conversations in the Cortext layout: (folder, text).
const CONVERSATIONS: [(&str, &str); 10] = [
    ("brainstorm/2025-11-17/001-new-idea", "# New idea\n\nA command palette for the notes app, searchable by meaning."),
    (
        "brainstorm/2025-11-18/002-auth-patterns",
        "# Auth patterns\n\nJWT access tokens with short expiry and rotating refresh tokens.",
    ),
    (
        "debug/2025-11-03/003-websocket-drops",
        "# WebSocket drops\n\nConnections dropped after 60 s behind the load balancer idle timeout.",
    ),
    (
        "debug/2025-10-21/004-memory-leak",
        "# Memory leak\n\nThe image cache never evicted entries; RSS grew until the OOM killer fired.",
    ),
    (
        "plan/2025-11-20/005-api-v2",
        "# API v2\n\nVersion the public API under /v2 and deprecate the old endpoints in March.",
    ),
    (
        "plan/2025-09-02/006-search-rollout",
        "# Search rollout\n\nShip semantic search to 10% of users first, then everyone.",
    ),
    (
        "learn/2025-11-05/007-kubernetes",
        "# Kubernetes\n\nPods, deployments and services; liveness probes restart stuck containers.",
    ),
    (
        "meeting/2025-11-12/008-weekly-sync",
        "# Weekly sync\n\nDecided to freeze features for the release; QA owns the checklist.",
    ),
    (
        "review/2025-10-30/009-pr-review",
        "# PR review\n\nThe retry loop needs jitter; otherwise clients stampede the server.",
    ),
    (
        "learn/2025-11-19/010-rust-async",
        "# Rust async\n\nFutures are lazy; tokio drives them; never block inside an async task.",
    ),
];

fn conversations() -> Fixture {
    let f = Fixture::empty();
    for (folder, text) in CONVERSATIONS {
        f.write(&format!("{folder}/conversation.md"), text);
    }
    f
}

/// `ragbox status --json` on the fixture.
fn status(f: &Fixture) -> Value {
    let out = f.command(&["status", "--json"]).output().expect("run ragbox status");
    assert!(out.status.success(), "ragbox status failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("status JSON")
}

/// `ragbox index --json` on the fixture.
fn index(f: &Fixture) -> Value {
    let out = f.command(&["index", "--json"]).output().expect("run ragbox index");
    assert!(out.status.success(), "ragbox index failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("index JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn seed_000_scenarios_and_incremental_runs() {
    let f = conversations();
    let client = f.connect().await;

    // Agent embeds single conversations: {"success": true, "embedded": 1, "skipped": 0, "total_files": 1}.
    for (folder, _) in &CONVERSATIONS[..5] {
        let r = ok(&client, "embed_document", json!({ "path": folder })).await;
        assert_eq!(
            (&r["success"], &r["embedded"], &r["skipped"], &r["total_files"], &r["errors"]),
            (&json!(true), &json!(1), &json!(0), &json!(1), &Value::Null),
            "{r}"
        );
    }
    // A workspace with 10 conversations, 5 already embedded.
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!((&r["success"], &r["embedded"], &r["skipped"]), (&json!(true), &json!(5), &json!(5)), "{r}");
    // Unchanged: nothing embedded.
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!((&r["embedded"], &r["skipped"]), (&json!(0), &json!(10)), "{r}");

    // Embedding a non-existent path.
    let result = call(&client, "embed_document", json!({ "path": "nonexistent/path" })).await;
    assert!(is_error(&result));
    let body: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(body, json!({"success": false, "error": "Path not found: nonexistent/path"}));
    let outside = call(&client, "embed_document", json!({ "path": "/etc/passwd" })).await;
    assert!(is_error(&outside));
    // An absolute path inside the workspace works.
    let abs = f.workspace.canonicalize().unwrap().join(CONVERSATIONS[0].0);
    let r = ok(&client, "embed_document", json!({ "path": abs.display().to_string() })).await;
    assert_eq!((&r["embedded"], &r["skipped"]), (&json!(0), &json!(1)), "{r}");

    // Editing one file re-embeds only it; status shows it pending first.
    let edited = format!("{}/conversation.md", CONVERSATIONS[3].0);
    f.write(&edited, "# Memory leak\n\nFixed: the cache now evicts by size (LRU, 256 MiB cap).");
    let s = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(s["pending"]["changed"], json!({"count": 1, "paths": [edited]}), "{s}");
    assert_eq!(s["up_to_date"], false);
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!((&r["embedded"], &r["skipped"]), (&json!(1), &json!(9)), "{r}");

    // A deleted file leaves the index; a new one enters it.
    let deleted = format!("{}/conversation.md", CONVERSATIONS[9].0);
    std::fs::remove_file(f.workspace.join(&deleted)).unwrap();
    f.write("notes/todo.md", "Renew the TLS certificate before December.");
    let s = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(s["pending"]["deleted"]["paths"], json!([deleted]), "{s}");
    assert_eq!(s["pending"]["new"]["paths"], json!(["notes/todo.md"]), "{s}");
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!((&r["embedded"], &r["skipped"], &r["removed"]), (&json!(1), &json!(9), &json!(1)), "{r}");

    // Status: counts, where the index is, recent embeddings with timestamps.
    let s = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!((&s["success"], &s["num_documents"], &s["up_to_date"]), (&json!(true), &json!(10), &json!(true)), "{s}");
    assert!(s["total_chunks"].as_u64().unwrap() >= 10, "{s}");
    assert!(s["db_path"].as_str().unwrap().ends_with(".ragbox/store.redb"), "{s}");
    let recent = s["recent_embeddings"].as_array().unwrap();
    assert_eq!(recent[0]["path"], "notes/todo.md", "most recent first: {s}");
    let stamp = recent[0]["embedded_at"].as_str().unwrap();
    assert!(stamp.len() >= 20 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T', "{stamp}");

    // Cortext metadata reached the store: type and date from the path, title from the heading.
    let store = f.store();
    let doc = store.document(&format!("{}/conversation.md", CONVERSATIONS[6].0)).unwrap().unwrap();
    assert_eq!(
        (doc.conversation_type.as_deref(), doc.date.as_deref(), doc.title.as_deref(), doc.kind.as_str()),
        (Some("learn"), Some("2025-11-05"), Some("Kubernetes"), "markdown")
    );
    assert_eq!(doc.metadata.get("conversation"), Some("007-kubernetes"));
    client.cancel().await.unwrap();
}

/// Sets `rel`'s modification time in `f`'s workspace.
fn set_mtime(f: &Fixture, rel: &str, to: std::time::SystemTime) {
    let file = std::fs::File::options().write(true).open(f.workspace.join(rel)).unwrap();
    file.set_modified(to).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_whose_size_and_mtime_are_as_indexed_is_not_read_again() {
    let f = Fixture::empty();
    let old = std::time::SystemTime::now() - Duration::from_secs(120);
    for name in ["a", "b", "c"] {
        f.write(&format!("notes/{name}.md"), &format!("# {name}\n\nThe first version of note {name}."));
        set_mtime(&f, &format!("notes/{name}.md"), old);
    }
    assert_eq!(index(&f)["embedded"], 3);
    // Same size, same mtime: taken as unchanged without reading it, as git does.
    f.write("notes/a.md", "# a\n\nThe other version of note a.");
    set_mtime(&f, "notes/a.md", old);
    // Same size, a new mtime: read, and the hash tells it changed.
    f.write("notes/b.md", "# b\n\nThe other version of note b.");
    let s = status(&f);
    assert_eq!(s["pending"]["changed"], json!({"count": 1, "paths": ["notes/b.md"]}), "{s}");
    assert_eq!(s["pending"]["total"], 1, "{s}");
    // Touched but the same content: read, found unchanged.
    set_mtime(&f, "notes/c.md", std::time::SystemTime::now());
    let r = index(&f);
    assert_eq!((&r["embedded"], &r["skipped"]), (&json!(1), &json!(2)), "{r}");
    // The paths a watcher names are always read: the hidden edit to a.md is found.
    let client = f.connect().await;
    let r = ok(&client, "embed_workspace", json!({"paths": ["notes/a.md"]})).await;
    assert_eq!((&r["embedded"], &r["skipped"]), (&json!(1), &json!(0)), "{r}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_status_follows_every_file_and_index_change() {
    let f = conversations();
    let client = f.connect().await;
    ok(&client, "embed_workspace", json!({})).await;
    let first = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(first["up_to_date"], true, "{first}");
    assert_eq!(ok(&client, "get_embedding_status", json!({})).await, first, "nothing changed");
    // The server keeps the status while its watch sees no change: each change is seen as soon as
    // the watch delivers it (a call that lands within the event's delivery, a fraction of a
    // millisecond, can still answer from before it).
    for round in 0..5 {
        let path = format!("notes/new-{round}.md");
        f.write(&path, "A note written while the server ran.");
        let s = status_once(&client, |s| s["pending"]["new"]["count"] == round + 1).await;
        assert_eq!(s["pending"]["new"]["count"], round + 1, "{s}");
        assert!(s["pending"]["new"]["paths"].as_array().unwrap().contains(&json!(path)), "{s}");
    }
    let edited = format!("{}/conversation.md", CONVERSATIONS[2].0);
    f.write(&edited, "# WebSocket drops\n\nFixed by sending pings every 30 s.");
    let s = status_once(&client, |s| s["pending"]["changed"]["count"] == 1).await;
    assert_eq!(s["pending"]["changed"]["paths"], json!([edited]), "{s}");
    // Another process indexes: the index's generation moved, so the status follows.
    assert_eq!(index(&f)["embedded"], 6);
    let s = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!((&s["up_to_date"], &s["num_documents"]), (&json!(true), &json!(15)), "{s}");
    client.cancel().await.unwrap();
}

/// The status once `seen` holds of it (asked again every 10 ms for at most 2 s), else the last one.
async fn status_once(client: &Client, seen: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let s = ok(client, "get_embedding_status", json!({})).await;
        if seen(&s) || Instant::now() > deadline {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn status_before_anything_is_embedded_creates_nothing() {
    let f = conversations();
    let client = f.connect().await;
    let s = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!((&s["num_documents"], &s["total_chunks"]), (&json!(0), &json!(0)), "{s}");
    assert_eq!(s["pending"]["new"]["count"], 10);
    assert!(!f.workspace.join(".ragbox/store.redb").exists(), "a read must not create the store");
    // A workspace that is not allowed gets the Cortext error shape.
    let r = call(&client, "embed_workspace", json!({ "workspace_path": "/" })).await;
    assert!(is_error(&r));
    let body: Value = serde_json::from_str(&text(&r)).unwrap();
    assert!(body["error"].as_str().unwrap().starts_with("Workspace not allowed"), "{body}");
    client.cancel().await.unwrap();
}

/// The progress messages of one call on `raw` until `stop` holds for one (which is returned).
fn progress_until(raw: &mut Raw, id: u64, total: f64, stop: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let msg = raw.recv();
        assert_ne!(msg["id"], id, "finished before it could be cancelled: {msg}");
        assert_eq!(msg["method"], "notifications/progress", "{msg}");
        assert_eq!(msg["params"]["total"], total, "{msg}");
        if stop(&msg) {
            return msg;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "no such progress in 120 s");
    }
}

#[test]
fn a_large_change_is_searchable_by_keyword_first_and_cancel_keeps_finished_documents() {
    let f = Fixture::tldr(300);
    let mut raw = Raw::start(&f);
    raw.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"embed_workspace","arguments":{},"_meta":{"progressToken":"emb"}}}"#);
    // First every file is stored for keyword search, then embedded: cancel once some are embedded.
    // (Reports are throttled to the newest: the first pass's may all be passed over.)
    let message = |m: &Value| m["params"]["message"].as_str().unwrap_or_default().to_string();
    progress_until(&mut raw, 7, 300.0, |m| {
        message(m).starts_with("embedded") && m["params"]["progress"].as_f64().unwrap() > 0.0
    });
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}"#);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !raw.stderr.lock().unwrap().contains("was cancelled by the client") {
        assert!(Instant::now() < deadline, "embed_workspace did not stop after cancellation");
        std::thread::sleep(Duration::from_millis(50));
    }
    raw.ping(8);
    drop(raw);

    // Every file is stored and found by keyword; those not embedded yet are pending, and
    // a semantic search says how much of the store it covered.
    let s = status(&f);
    assert_eq!(s["num_documents"], 300, "{s}");
    let waiting = s["pending"]["new"]["count"].as_u64().unwrap();
    assert!((1..300).contains(&waiting), "{waiting} files waiting after cancelling: {s}");
    assert_eq!(s["pending"]["changed"]["count"], 0, "{s}");
    let last = s["pending"]["new"]["paths"].as_array().unwrap().last().unwrap().as_str().unwrap().to_string();
    let name = last.trim_start_matches("pages/").trim_end_matches(".md");
    let found = search(&f, &["--fulltext", "-n", "50", name]);
    assert!(found.contains(&last), "a file not embedded yet is not found by keyword {name:?}: {found}");
    let semantic = search(&f, &["--semantic", name]);
    assert!(semantic.contains("still being embedded"), "{semantic}");
    assert!(!semantic.contains(&format!("\"source_path\":\"{last}\"")), "{semantic}");
    let hybrid: Value = serde_json::from_str(&search(&f, &["--hybrid", name])).unwrap();
    let coverage = &hybrid["search_info"]["coverage"];
    assert!(coverage["embedded_chunks"].as_u64().unwrap() < coverage["stored_chunks"].as_u64().unwrap(), "{hybrid}");
    let context = tool_output(&f, "get_context", json!({ "topic": name }));
    assert!(context.contains("still being embedded"), "{context}");
    // Every other tool that searches by meaning says so too.
    let question: Value =
        serde_json::from_str(&tool_output(&f, "search_by_question", json!({ "question": name }))).unwrap();
    let coverage = &question["search_info"]["coverage"];
    assert!(coverage["embedded_chunks"].as_u64().unwrap() < coverage["stored_chunks"].as_u64().unwrap(), "{question}");
    let similar: Value =
        serde_json::from_str(&tool_output(&f, "search_similar", json!({ "reference_text": name }))).unwrap();
    assert!(
        similar["search_info"]["coverage"]["message"].as_str().unwrap().contains("still being embedded"),
        "{similar}"
    );
    let skills = tool_output(&f, "search_skills", json!({ "query": name }));
    assert!(skills.contains("still being embedded"), "{skills}");
    // A semantic hit's document has its vectors.
    let by_meaning: Value = serde_json::from_str(&semantic).unwrap();
    let embedded = by_meaning["results"][0]["source_path"].as_str().expect("a semantic hit").to_string();
    let similar = tool_output(&f, "get_similar", json!({ "source_path": embedded }));
    assert!(similar.contains("still being embedded"), "{similar}");
    let not_yet = tool_output(&f, "get_similar", json!({ "source_path": last }));
    assert!(not_yet.contains("is not embedded yet"), "{not_yet}");

    // The next run embeds only the rest, and the semantic search then covers everything.
    let kept = 300 - waiting;
    let r = index(&f);
    assert_eq!((r["skipped"].as_u64(), r["embedded"].as_u64()), (Some(kept), Some(waiting)), "{r}");
    assert_eq!(status(&f)["up_to_date"], true);
    let semantic = search(&f, &["--semantic", name]);
    assert!(!semantic.contains("still being embedded"), "{semantic}");
}

/// `ragbox tools call NAME ARGS` on the fixture: its result, or all it printed when it failed.
fn tool_output(f: &Fixture, name: &str, args: Value) -> String {
    let out = f.command(&["tools", "call", name, &args.to_string()]).output().expect("run ragbox tools call");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() { stdout.into_owned() } else { format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)) }
}

/// `ragbox search --json ARGS` on the fixture: its output.
fn search(f: &Fixture, args: &[&str]) -> String {
    let mut all = vec!["search", "--json"];
    all.extend_from_slice(args);
    let out = f.command(&all).output().expect("run ragbox search");
    assert!(out.status.success(), "ragbox search failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn sigkill_during_ragbox_index_loses_nothing_committed() {
    // Enough pages that the kill lands mid-run (it comes within a poll of the first commit).
    const PAGES: usize = 150;
    let f = Fixture::tldr(PAGES);
    let mut child = f.command(&["index", "--json"]).stderr(std::process::Stdio::null()).spawn().unwrap();
    // Watch from another process until some documents are committed, then kill -9.
    let started = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        // Past the keyword-first pass: some documents have their vectors.
        if f.workspace.join(".ragbox/store.redb").exists()
            && !status(&f)["recent_embeddings"].as_array().unwrap().is_empty()
        {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "ragbox index ended before it could be killed");
        assert!(started.elapsed() < Duration::from_secs(180), "nothing committed in 180 s");
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    // The store opens, and every document in it is whole: embedded (a vector per chunk) or
    // stored for keyword search only (none).
    let store = f.store();
    let docs = store.documents().unwrap();
    let embedded = docs.iter().filter(|d| d.embedded()).count();
    assert!((1..PAGES).contains(&embedded), "{} documents ({embedded} embedded) after the kill", docs.len());
    for doc in &docs {
        let chunks = store.chunks(&doc.path).unwrap();
        assert_eq!(chunks.len(), doc.chunks as usize, "{} is half-written", doc.path);
        let dimension = if doc.embedded() { 384 } else { 0 };
        assert!(chunks.iter().all(|(_, v)| v.len() == dimension), "{} is half-embedded", doc.path);
    }
    // The next run finishes the job and embeds nothing twice.
    let r = index(&f);
    assert_eq!(r["skipped"].as_u64(), Some(embedded as u64), "{r}");
    assert_eq!(r["embedded"].as_u64(), Some((PAGES - embedded) as u64), "{r}");
    assert_eq!(r["errors"], Value::Null);
    assert_eq!(status(&f)["up_to_date"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_and_a_cli_index_on_one_workspace() {
    let f = Fixture::tldr(120);
    let a = f.connect().await;
    let b = f.connect().await;
    let cli = f
        .command(&["index", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // A embeds the workspace while B reads status and embeds a file of its own.
    let embed_all = ok(&a, "embed_workspace", json!({}));
    let reads_and_writes = async {
        let mut reads = 0;
        for i in 0..5 {
            let s = ok(&b, "get_embedding_status", json!({})).await;
            assert_eq!(s["success"], true);
            reads += 1;
            f.write(&format!("mine/note{i}.md"), &format!("Note {i} written while others index."));
            let r = ok(&b, "embed_document", json!({ "path": format!("mine/note{i}.md") })).await;
            assert_eq!(r["embedded"].as_u64().unwrap() + r["skipped"].as_u64().unwrap(), 1, "{r}");
        }
        reads
    };
    let (r, reads) = tokio::join!(embed_all, reads_and_writes);
    assert_eq!(reads, 5);
    assert_eq!(r["errors"], Value::Null, "{r}");
    let out = tokio::task::spawn_blocking(move || cli.wait_with_output()).await.unwrap().unwrap();
    assert!(out.status.success());
    let cli_report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cli_report["errors"], Value::Null, "{cli_report}");

    // Nothing lost: every page and every note is indexed exactly once, and a
    // new run has nothing to do.
    let s = ok(&b, "get_embedding_status", json!({})).await;
    assert_eq!((&s["num_documents"], &s["up_to_date"]), (&json!(125), &json!(true)), "{s}");
    let again = ok(&a, "embed_workspace", json!({})).await;
    assert_eq!((&again["embedded"], &again["skipped"]), (&json!(0), &json!(125)), "{again}");
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_model_says_how_to_get_it() {
    let f = conversations();
    let mut cmd = tokio::process::Command::from(f.command(&["serve"]));
    cmd.env("RAGBOX_MODEL", f.dir.path().join("no-model-here"));
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn ragbox serve")
        .0;
    let client: Client = rmcp::ServiceExt::serve((), transport).await.expect("initialize");
    let r = call(&client, "embed_workspace", json!({})).await;
    assert!(is_error(&r));
    let body: Value = serde_json::from_str(&text(&r)).unwrap();
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("no embedding model at") && error.contains("ragbox model fetch"), "{error}");
    // Nothing half-done: status still works and shows everything pending.
    let s = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!((&s["num_documents"], &s["pending"]["new"]["count"]), (&json!(0), &json!(10)), "{s}");
    client.cancel().await.unwrap();
}
