//! A hostile component tries to escape, exhaust or crash the host. Each attempt
//! must fail cleanly with a clear message, write nothing, and leave the server
//! serving the next call.

use ragbox_tests::{Client, Fixture, call, is_error, text};
use serde_json::json;
use std::time::{Duration, Instant};

/// A fixture with the hostile tool, a file outside the workspace, and symlinks to it.
fn hostile_fixture() -> (Fixture, std::path::PathBuf) {
    let f = Fixture::cortext().with_hostile();
    let outside = f.dir.path().join("outside-secret.txt");
    std::fs::write(&outside, "TOP SECRET outside the workspace").unwrap();
    std::os::unix::fs::symlink(&outside, f.workspace.join("link-abs")).unwrap();
    std::os::unix::fs::symlink("../outside-secret.txt", f.workspace.join("link-rel")).unwrap();
    (f, outside)
}

async fn attempt(client: &Client, args: serde_json::Value) -> String {
    let result = call(client, "hostile", args.clone()).await;
    let message = text(&result);
    assert!(is_error(&result), "{args} should have failed, got: {}", &message[..message.len().min(300)]);
    assert!(!message.contains("TOP SECRET") && !message.contains("root:"), "{args} leaked data: {message}");
    message
}

async fn still_serving(client: &Client) {
    let ok = call(client, "hostile", json!({"op": "ok"})).await;
    assert!(!is_error(&ok), "normal call after an attack failed: {}", text(&ok));
    assert_eq!(text(&ok), "ok");
    let search = call(client, "search_workspace", json!({"query": "jwt", "limit": 1})).await;
    assert!(!is_error(&search), "{}", text(&search));
}

/// [`still_serving`], and then the client closes.
async fn still_serving_to_the_end(client: Client) {
    still_serving(&client).await;
    client.cancel().await.unwrap();
}

/// A client of a server on [`hostile_fixture`], and the fixture it serves.
async fn connected() -> (Fixture, Client) {
    let (f, _) = hostile_fixture();
    let client = f.connect().await;
    (f, client)
}

/// The hostile tool's `op` on a server of its own: it must fail cleanly
/// ([`attempt`]) and leave the server serving; returns its message.
async fn attack(op: &str) -> String {
    let (_f, client) = connected().await;
    let message = attempt(&client, json!({"op": op})).await;
    still_serving_to_the_end(client).await;
    message
}

#[tokio::test]
async fn reads_inside_the_workspace_work() {
    let (_f, client) = connected().await;
    let r = call(&client, "hostile", json!({"op": "read", "path": "notes/README.md"})).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert!(text(&r).starts_with("General notes."));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn filesystem_escapes_are_denied() {
    let (f, outside) = hostile_fixture();
    let client = f.connect().await;
    let cases = [
        (json!({"op": "read", "path": "/etc/passwd"}), "No such file"),
        (json!({"op": "read", "path": "../outside-secret.txt"}), "not permitted"),
        (json!({"op": "read", "path": "notes/../../outside-secret.txt"}), "not permitted"),
        (json!({"op": "read", "path": outside.to_str().unwrap()}), "No such file"),
        (json!({"op": "read", "path": "link-abs"}), "not permitted"),
        (json!({"op": "read", "path": "link-rel"}), "not permitted"),
        (json!({"op": "list", "path": ".."}), "not permitted"),
    ];
    for (args, expected) in cases {
        let message = attempt(&client, args.clone()).await;
        assert!(message.contains(expected), "{args}: {message}");
        still_serving(&client).await;
    }
    client.cancel().await.unwrap();
}

/// No link is followed, not even one that stays inside the workspace: the
/// guard resolves every path itself, one folder at a time, the same way on
/// every OS (a junction on Windows is refused the same way).
#[tokio::test]
async fn links_inside_the_workspace_are_not_followed() {
    let (f, _) = hostile_fixture();
    std::os::unix::fs::symlink("notes/README.md", f.workspace.join("link-in")).unwrap();
    std::os::unix::fs::symlink("notes", f.workspace.join("dir-in")).unwrap();
    let client = f.connect().await;
    for (args, expected) in [
        (json!({"op": "read", "path": "link-in"}), "not permitted"),
        (json!({"op": "read", "path": "dir-in/README.md"}), "not permitted"),
        (json!({"op": "list", "path": "dir-in"}), "not permitted"),
        (json!({"op": "stat", "path": "link-in"}), "not permitted"),
    ] {
        let message = attempt(&client, args.clone()).await;
        assert!(message.contains(expected), "{args}: {message}");
    }
    // `..` is taken by name, never above the folder it starts from.
    let r = call(&client, "hostile", json!({"op": "read", "path": "notes/../notes/./README.md"})).await;
    assert!(text(&r).starts_with("General notes."), "{}", text(&r));
    // A listing still shows the links themselves.
    let r = call(&client, "hostile", json!({"op": "list", "path": "."})).await;
    assert!(text(&r).contains("link-in") && text(&r).contains("dir-in"), "{}", text(&r));
    still_serving_to_the_end(client).await;
}

/// WASI's own open flags that std never sends (MUTATE_DIRECTORY, EXCLUSIVE,
/// SYMLINK_FOLLOW) reach nothing the guard hides, follow no link and open no
/// FIFO; a huge path and an open-everything loop are refused in time.
#[tokio::test]
async fn raw_open_flags_long_paths_and_floods_are_refused() {
    let (f, _) = hostile_fixture();
    std::fs::create_dir_all(f.workspace.join(".ragbox")).unwrap();
    std::fs::write(f.workspace.join(".ragbox/secret"), "TOP SECRET data dir").unwrap();
    std::fs::create_dir_all(f.workspace.join("sub/.RagBox")).unwrap();
    std::fs::write(f.workspace.join("sub/.RagBox/secret"), "TOP SECRET nested").unwrap();
    std::os::unix::fs::symlink(".ragbox/secret", f.workspace.join("link-data")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(f.workspace.join("fifo")).status().unwrap().success());
    let client = f.connect().await;
    for (path, mode) in [
        (".ragbox/secret", "mut"),
        (".ragbox/secret", "excl"),
        ("sub/.RagBox/secret", "mut"),
        ("link-data", "follow+excl"),
        ("link-rel", "follow+mut"),
        ("fifo", "mut"),
        ("notes/README.md", "mut"),
    ] {
        let started = Instant::now();
        let message = attempt(&client, json!({"op": "raw_open", "path": path, "mode": mode})).await;
        assert!(message.contains("raw_open"), "{path} ({mode}): {message}");
        assert!(started.elapsed() < Duration::from_secs(5), "{path} ({mode}) blocked");
    }
    assert!(f.workspace.join(".ragbox/secret").is_file(), "the secret was there to be read");
    let r = call(&client, "hostile", json!({"op": "raw_open", "path": "notes/README.md", "mode": ""})).await;
    assert!(text(&r).starts_with("General notes."), "plain reads still work: {}", text(&r));

    let started = Instant::now();
    let message = attempt(&client, json!({"op": "long_path", "n": "1000"})).await;
    assert!(message.contains("long"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(5), "a 2 MB path took {:?}", started.elapsed());
    let message = attempt(&client, json!({"op": "fd_flood", "path": "notes/README.md"})).await;
    assert!(message.starts_with("after 1024 files"), "{message}");
    still_serving_to_the_end(client).await;
}

#[tokio::test]
async fn writes_are_denied_and_nothing_is_written() {
    let (f, client) = connected().await;
    let before = std::fs::read(f.workspace.join("notes/README.md")).unwrap();
    for path in ["new-file.txt", "notes/README.md", "/tmp/ragbox-pwned", "../pwned.txt"] {
        let message = attempt(&client, json!({"op": "write", "path": path})).await;
        assert!(message.starts_with(&format!("write {path}:")), "{message}");
    }
    assert!(!f.workspace.join("new-file.txt").exists());
    assert!(!f.dir.path().join("pwned.txt").exists());
    assert!(!std::path::Path::new("/tmp/ragbox-pwned").exists());
    assert_eq!(std::fs::read(f.workspace.join("notes/README.md")).unwrap(), before);
    still_serving_to_the_end(client).await;
}

#[tokio::test]
async fn the_index_is_read_only_without_the_corpus_write_grant() {
    let (f, client) = connected().await;
    let embedded = call(&client, "embed_document", json!({"path": "notes/README.md"})).await;
    assert!(!is_error(&embedded), "{}", text(&embedded));
    let read = call(&client, "hostile", json!({"op": "read_index"})).await;
    assert_eq!(text(&read), "1 documents");
    let message = attempt(&client, json!({"op": "remove_from_index", "path": "notes/README.md"})).await;
    assert!(message.contains("ErrorCode::Denied: tool 'hostile' may not change the index"), "{message}");
    assert!(message.contains("lacks the corpus-write grant"), "{message}");
    assert!(message.contains("grants = [\"corpus-write\"]"), "{message}");
    let read = call(&client, "hostile", json!({"op": "read_index"})).await;
    assert_eq!(text(&read), "1 documents", "nothing was removed");
    client.cancel().await.unwrap();

    // Granted in config, the same call works.
    f.write_user_config("[tools.hostile]\ngrants = [\"corpus-write\"]\n");
    let client = f.connect().await;
    let r = call(&client, "hostile", json!({"op": "remove_from_index", "path": "notes/README.md"})).await;
    assert_eq!(text(&r), "removed notes/README.md from the index: true");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_host_refuses_vectors_of_another_model_to_every_tool() {
    let (f, client) = connected().await;
    let embedded = call(&client, "embed_document", json!({"path": "notes/README.md"})).await;
    assert!(!is_error(&embedded), "{}", text(&embedded));
    let r = call(&client, "hostile", json!({"op": "nearest", "path": "readme"})).await;
    assert_eq!(text(&r), "1 hits");
    client.cancel().await.unwrap();

    // A model is its weights: the same ones under another folder name keep the index.
    let model = ragbox::embed::default_model_dir().expect("a home folder or RAGBOX_MODEL");
    let renamed = f.dir.path().join("renamed-model");
    std::os::unix::fs::symlink(&model, &renamed).unwrap();
    f.write_user_config(&format!("model = {:?}\n", renamed.display().to_string()));
    let client = f.connect().await;
    let r = call(&client, "hostile", json!({"op": "nearest", "path": "readme"})).await;
    assert_eq!(text(&r), "1 hits", "a renamed model folder forced a re-embed");
    client.cancel().await.unwrap();

    // Other weights (one byte of a tensor changed) are another model.
    let other = f.dir.path().join("other-model");
    std::fs::create_dir(&other).unwrap();
    for entry in std::fs::read_dir(&model).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), other.join(entry.file_name())).unwrap();
        } else {
            std::os::unix::fs::symlink(entry.path(), other.join(entry.file_name())).unwrap();
        }
    }
    let mut weights = std::fs::read(other.join("model.safetensors")).unwrap();
    *weights.last_mut().unwrap() ^= 1;
    std::fs::write(other.join("model.safetensors"), weights).unwrap();
    f.write_user_config(&format!("model = {:?}\n", other.display().to_string()));
    let client = f.connect().await;
    // A third-party tool that checks nothing still cannot compare them.
    let message = attempt(&client, json!({"op": "nearest", "path": "readme"})).await;
    assert!(message.contains("ErrorCode::ModelMismatch"), "{message}");
    assert!(message.contains("ragbox doctor --reset"), "{message}");
    let r = call(&client, "search_semantic", json!({"query": "readme"})).await;
    assert!(is_error(&r) && text(&r).contains("holds vectors from model"), "{}", text(&r));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn no_environment_arguments_or_network() {
    let (_f, client) = connected().await;
    let message = attempt(&client, json!({"op": "env"})).await;
    assert_eq!(message, "no environment variables and no arguments are visible");
    let message = attempt(&client, json!({"op": "connect"})).await;
    assert!(message.starts_with("connect"), "{message}");
    still_serving_to_the_end(client).await;
}

#[tokio::test]
async fn guest_stdout_never_reaches_the_client() {
    let (_f, client) = connected().await;
    // The guest prints a forged JSON-RPC response; if it reached stdout, the client
    // would see a protocol error or a stray id.
    let r = call(&client, "hostile", json!({"op": "stdout"})).await;
    assert_eq!(text(&r), "printed to stdout");
    still_serving_to_the_end(client).await;
}

#[tokio::test]
async fn runaway_loop_is_stopped_at_its_deadline() {
    let (_f, client) = connected().await;
    let started = Instant::now();
    let message = attempt(&client, json!({"op": "loop"})).await;
    let took = started.elapsed();
    assert!(message.contains("exceeded its time limit of 2 s"), "{message}");
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(20), "took {took:?}");
    still_serving_to_the_end(client).await;
}

#[tokio::test]
async fn a_cooperative_tool_is_told_to_stop_before_its_deadline() {
    let (_f, client) = connected().await;
    let r = call(&client, "hostile", json!({"op": "until_cancelled"})).await;
    // Limit 2 s: cancelled() turns true at 90% of it, and the tool returns
    // normally (not an error) before the hard stop at 100%.
    assert!(!is_error(&r), "{}", text(&r));
    let ms: u64 = text(&r).trim_start_matches("stopped cooperatively after ").trim_end_matches(" ms").parse().unwrap();
    assert!(ms >= 1790, "told to stop too early, after {ms} ms");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn memory_bomb_hits_the_memory_limit() {
    let message = attack("alloc").await;
    assert!(message.contains("ran out of memory") && message.contains("limit of 512 MiB"), "{message}");
}

#[tokio::test]
async fn panic_is_reported_with_its_message() {
    let message = attack("panic").await;
    assert!(message.starts_with("tool 'hostile' crashed: wasm trap"), "{message}");
    assert!(message.contains("hostile component panicked on purpose"), "{message}");
}

#[tokio::test]
async fn huge_output_is_refused() {
    let message = attack("big_output").await;
    assert!(message.contains("returned 50.0 MiB, over the 16 MiB result limit"), "{message}");
}

#[tokio::test]
async fn chatty_stderr_does_not_break_the_guest() {
    let (_f, client) = connected().await;
    let r = call(&client, "hostile", json!({"op": "chatty_stderr"})).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(text(&r), "survived");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn concurrent_attacks_do_not_block_normal_calls() {
    let (_f, client) = connected().await;
    let peer = client.peer().clone();
    let looping = tokio::spawn(async move {
        let args = json!({"op": "loop"}).as_object().unwrap().clone();
        peer.call_tool(rmcp::model::CallToolRequestParams::new("hostile").with_arguments(args)).await
    });
    // While one call spins, others are answered promptly.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    for _ in 0..5 {
        let r = call(&client, "search_workspace", json!({"query": "jwt"})).await;
        assert!(!is_error(&r));
    }
    assert!(started.elapsed() < Duration::from_secs(2), "normal calls waited on the loop: {:?}", started.elapsed());
    let looped = looping.await.unwrap().unwrap();
    assert_eq!(looped.is_error, Some(true));
    client.cancel().await.unwrap();
}
