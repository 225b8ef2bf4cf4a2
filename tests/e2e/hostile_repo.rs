//! A hostile repository, component or client gets nothing: one test per hole
//! of issue 20. The "repository" is a workspace as a `git clone` could leave
//! it: its own `.ragbox/config.toml` and tools, symlinks out of the workspace
//! and into `.ragbox/`, a FIFO, control characters in names and content.

use ragbox_tests::{Fixture, Raw, call, hostile_wasm, impostor_wasm, is_error, ok, text};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A file outside the workspace that nothing may read or write.
fn outside_secret(f: &Fixture) -> std::path::PathBuf {
    let outside = f.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "TOP SECRET outside the workspace").unwrap();
    outside
}

fn tools_json(f: &Fixture) -> Value {
    let out = f.command(&["tools", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// 1. `init` never reads or writes through a link that leaves the workspace.
#[test]
fn init_refuses_links_out_of_the_workspace() {
    let f = Fixture::empty();
    let outside = outside_secret(&f);
    std::os::unix::fs::symlink(&outside, f.workspace.join(".codex")).unwrap();
    std::os::unix::fs::symlink(&outside, f.workspace.join(".gemini")).unwrap();
    let out = f.command(&["init", "--agent", "all"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("symbolic link") && err.contains("outside the workspace"), "{err}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "nothing written outside");

    // A config or .gitignore linked to an outside file is not copied in.
    std::fs::remove_file(f.workspace.join(".codex")).unwrap();
    std::fs::remove_file(f.workspace.join(".gemini")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), f.workspace.join(".mcp.json")).unwrap();
    let out = f.command(&["init", "--agent", "claude"]).output().unwrap();
    assert!(!out.status.success());
    std::fs::remove_file(f.workspace.join(".mcp.json")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), f.workspace.join(".gitignore")).unwrap();
    let out = f.command(&["init", "--agent", "claude"]).output().unwrap();
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "TOP SECRET outside the workspace");
    // The link is left as it was, not replaced by a file holding what it pointed to.
    assert!(std::fs::symlink_metadata(f.workspace.join(".gitignore")).unwrap().file_type().is_symlink());
    let mcp = std::fs::read_to_string(f.workspace.join(".mcp.json")).unwrap_or_default();
    assert!(!mcp.contains("TOP SECRET"), ".mcp.json got the outside file's content");
}

/// 2. A workspace's own config only narrows: no other workspaces, no extra
///    folders, no grants, no pins, and a built-in is never replaced.
#[tokio::test(flavor = "multi_thread")]
async fn the_workspace_config_cannot_widen_the_sandbox() {
    let f = Fixture::cortext();
    let outside = outside_secret(&f);
    std::fs::create_dir_all(f.config_dir.join("tools")).unwrap();
    std::fs::copy(hostile_wasm(), f.config_dir.join("tools/hostile.wasm")).unwrap();
    let tools = f.workspace.join(".ragbox/tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(impostor_wasm(), tools.join("search.wasm")).unwrap();
    let impostor_sha = tools_json(&f)["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["source"].as_str().unwrap().ends_with("search.wasm"))
        .map(|r| r["reason"].as_str().unwrap().to_string())
        .expect("the impostor is refused");
    // Nobody trusted it, so it is not even compiled to learn its name.
    assert!(impostor_sha.contains("neither compiled nor run"), "{impostor_sha}");
    let out = f.command(&["tools", "inspect", tools.join("search.wasm").to_str().unwrap(), "--json"]).output().unwrap();
    let sha = serde_json::from_slice::<Value>(&out.stdout).unwrap()["sha256"].as_str().unwrap().to_string();

    f.write(
        ".ragbox/config.toml",
        &format!(
            "allowed_workspaces = [{outside:?}]\n\
             [tools.hostile]\nread_dirs = [{outside:?}]\ngrants = [\"corpus-write\"]\n\
             [tools.search]\nsha256 = \"{sha}\"\nenabled = false\n"
        ),
    );
    // Even the user's own pin does not let a component take a built-in's name.
    f.write_user_config(&format!("[tools.search]\nsha256 = \"{sha}\"\n"));
    let listed = tools_json(&f);
    let search = listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == "search");
    assert!(search.is_none(), "disabled by the workspace, and not replaced: {listed}");
    let rejected = listed["rejected"].to_string();
    assert!(rejected.contains("never replaced"), "pinned, it is compiled and refused by name: {listed}");
    // `tools inspect` says the same while the built-in is switched off.
    let out = f.command(&["tools", "inspect", tools.join("search.wasm").to_str().unwrap(), "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["would_load"], false, "{report}");
    assert!(report["refused_because"].as_str().unwrap().contains("never replaced"), "{report}");

    let client = f.connect().await;
    let r = call(&client, "search_workspace", json!({"query": "secret", "workspace_path": outside.to_str().unwrap()}))
        .await;
    assert!(is_error(&r) && text(&r).contains("Workspace not allowed"), "{}", text(&r));
    let secret = outside.join("secret.txt");
    let r = call(&client, "hostile", json!({"op": "read", "path": secret.to_str().unwrap()})).await;
    assert!(is_error(&r) && !text(&r).contains("TOP SECRET"), "{}", text(&r));
    let r = call(&client, "hostile", json!({"op": "remove_from_index", "path": "notes/README.md"})).await;
    assert!(is_error(&r) && text(&r).contains("corpus-write"), "{}", text(&r));
    client.cancel().await.unwrap();

    // `ragbox doctor` names what was ignored.
    let out = f.command(&["doctor"]).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("ignored allowed_workspaces") && said.contains("may only narrow"), "{said}");
}

/// 3. The data dir does not exist for a component, whatever path or link it
///    takes; indexing never follows a link into it; it is the owner's only.
#[tokio::test(flavor = "multi_thread")]
async fn the_data_dir_is_invisible_and_private() {
    let f = Fixture::cortext().with_hostile();
    std::fs::write(f.workspace.join(".ragbox/http-token"), "a".repeat(64)).unwrap();
    std::os::unix::fs::symlink(".ragbox/http-token", f.workspace.join("tok.md")).unwrap();
    std::os::unix::fs::symlink(".ragbox", f.workspace.join("data")).unwrap();
    std::fs::create_dir_all(f.workspace.join("notes/deeper")).unwrap();
    std::os::unix::fs::symlink("../../.ragbox/http-token", f.workspace.join("notes/deeper/tok2.md")).unwrap();
    let client = f.connect().await;
    for path in [
        ".ragbox",
        ".ragbox/http-token",
        "./.ragbox/config.toml",
        "notes/../.ragbox/http-token",
        "tok.md",
        "data/http-token",
        "notes/deeper/tok2.md",
    ] {
        for op in ["read", "stat", "list"] {
            let r = call(&client, "hostile", json!({"op": op, "path": path})).await;
            assert!(is_error(&r), "{op} {path} must fail: {}", text(&r));
            assert!(!text(&r).contains("aaaaaaaa"), "{op} {path} leaked the token");
        }
    }
    let listing = call(&client, "hostile", json!({"op": "list", "path": "."})).await;
    assert!(!is_error(&listing) && !text(&listing).contains(".ragbox"), "{}", text(&listing));
    assert!(text(&listing).contains("notes"), "the rest is listed: {}", text(&listing));

    ok(&client, "embed_workspace", json!({})).await;
    let hits = ok(&client, "search", json!({"query": "aaaaaaaaaaaaaaaa", "search_type": "fulltext"})).await;
    assert_eq!(hits["results"], json!([]), "the token became searchable: {hits}");
    client.cancel().await.unwrap();

    let mode = |p: &str| std::fs::metadata(f.workspace.join(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(".ragbox"), 0o700);
    assert_eq!(mode(".ragbox/store.redb"), 0o600);

    // A data dir that is a link (a repository could point it anywhere) is refused.
    let g = Fixture::empty();
    g.write("notes.md", "pelicans\n");
    let elsewhere = outside_secret(&g);
    std::os::unix::fs::symlink(&elsewhere, g.workspace.join(".ragbox")).unwrap();
    let out = g.command(&["index"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 1, "nothing written through the link");
}

/// 4. A FIFO never blocks a call: present at the start or named directly.
#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_never_blocks() {
    let f = Fixture::cortext().with_hostile();
    let status = std::process::Command::new("mkfifo").arg(f.workspace.join("pipe.md")).status().unwrap();
    assert!(status.success());
    // Ignore files the host's walk would read outside the sandbox: a FIFO, and a link to an endless file.
    f.write("traps/a.md", "behind a FIFO .gitignore");
    f.write("more-traps/b.md", "behind an endless .ignore");
    let status = std::process::Command::new("mkfifo").arg(f.workspace.join("traps/.gitignore")).status().unwrap();
    assert!(status.success());
    std::os::unix::fs::symlink("/dev/zero", f.workspace.join("more-traps/.ignore")).unwrap();
    let client = f.connect().await;
    let started = Instant::now();
    let r = call(&client, "hostile", json!({"op": "read", "path": "pipe.md"})).await;
    assert!(is_error(&r), "{}", text(&r));
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert!(r["embedded"].as_u64().unwrap() > 0, "{r}");
    let said = r["errors"].to_string();
    assert!(said.contains("traps/.gitignore") && said.contains("more-traps/.ignore"), "{r}");
    assert!(said.contains("nothing in its folder is indexed"), "{r}");
    // Rules that cannot be read might exclude anything beside them: their folders are left out.
    let s = ok(&client, "search_workspace", json!({"query": "behind"})).await;
    assert_eq!(s["num_results"], 0, "the files beside unread rules are left out: {s}");
    // Named directly, it is skipped: nothing embedded, nothing waiting.
    let r = call(&client, "embed_document", json!({"path": "pipe.md"})).await;
    let body = r.structured_content.clone().unwrap_or(Value::Null);
    assert!(is_error(&r) || body["embedded"] == 0, "{}", text(&r));
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
    client.cancel().await.unwrap();
}

/// 5. Progress reports are rate-limited on every path, the last one included.
#[test]
fn a_progress_flood_is_throttled() {
    let f = Fixture::empty().with_hostile();
    f.write(".ragbox/config.toml", "[tools.hostile]\ntimeout_secs = 60\n");
    let mut raw = Raw::start(&f);
    raw.send(
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hostile","arguments":{"op":"progress_flood"},"_meta":{"progressToken":"p"}}}"#,
    );
    let started = Instant::now();
    let (mut notes, mut bytes) = (0usize, 0usize);
    let reply = loop {
        let msg = raw.recv();
        if msg["method"] == "notifications/progress" {
            notes += 1;
            bytes += msg.to_string().len();
            continue;
        }
        break msg;
    };
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(reply["id"], 5, "{reply}");
    // At most one every 100 ms, plus the last.
    assert!(notes as f64 <= elapsed * 10.0 + 3.0, "{notes} notifications in {elapsed:.1} s");
    assert!(bytes < (elapsed * 10.0 + 3.0) as usize * 5000, "{bytes} bytes");
    raw.ping(6);
}

/// 6. A third party that says it writes gets the ordinary time limit, and
///    host work is bounded by input size.
#[tokio::test(flavor = "multi_thread")]
async fn third_parties_get_the_ordinary_limits() {
    let f = Fixture::empty();
    std::fs::create_dir_all(f.config_dir.join("tools")).unwrap();
    std::fs::copy(hostile_wasm(), f.config_dir.join("tools/hostile.wasm")).unwrap();
    f.write_user_config("[limits]\ntimeout_secs = 2\n");
    let client = f.connect().await;
    let started = Instant::now();
    let r = call(&client, "hostile", json!({"op": "loop"})).await;
    assert!(is_error(&r) && text(&r).contains("time limit of 2 s"), "{}", text(&r));
    assert!(started.elapsed() < Duration::from_secs(15));
    let r = call(&client, "hostile", json!({"op": "tokenize_huge"})).await;
    assert!(is_error(&r) && text(&r).contains("ErrorCode::Invalid: text of"), "{}", text(&r));
    assert!(text(&r).contains("send it in parts"), "{}", text(&r));
    client.cancel().await.unwrap();
}

/// 7. No command prints control characters from file content, file names or
///    a component's description.
#[test]
fn terminal_escapes_are_shown_escaped() {
    let f = Fixture::empty();
    std::fs::create_dir_all(f.config_dir.join("tools")).unwrap();
    std::fs::copy(hostile_wasm(), f.config_dir.join("tools/hostile.wasm")).unwrap();
    f.write("evil\x1b[31mname.md", "# Pelican \x1b]0;pwned\x07 title\n\npelican text \x1b[2J with \u{9b}2J escapes\n");
    assert!(f.command(&["index"]).output().unwrap().status.success());
    let runs: [&[&str]; 5] = [
        &["search", "pelican"],
        &["search", "pelican", "--semantic"],
        &["status"],
        &["sources"],
        &["tools", "inspect", hostile_wasm().to_str().unwrap()],
    ];
    for args in runs {
        let out = f.command(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(!shown.contains('\x1b') && !shown.contains('\u{9b}') && !shown.contains('\x07'), "{args:?}: {shown:?}");
        if args[0] == "search" {
            assert!(shown.contains("\\x1b"), "{args:?} shows the escape: {shown}");
        }
    }
}

/// 8. The store refuses vectors that are not finite and paths with another spelling.
#[tokio::test(flavor = "multi_thread")]
async fn corpus_put_refuses_bad_vectors_and_paths() {
    let f = Fixture::cortext().with_hostile();
    // Room for the model's first load; the grant is the user's to give.
    f.write(".ragbox/config.toml", "");
    f.write_user_config("[tools.hostile]\ngrants = [\"corpus-write\"]\n");
    let client = f.connect().await;
    for (path, vector, expected) in [
        ("nan.md", "nan", "must be finite"),
        ("inf.md", "inf", "must be finite"),
        ("./x.md", "ok", "`.` or `..` part"),
        ("a//b.md", "ok", "empty"),
        ("   ", "ok", "blank"),
        ("/etc/passwd", "ok", "relative"),
    ] {
        let r = call(&client, "hostile", json!({"op": "put", "path": path, "vector": vector})).await;
        assert!(is_error(&r) && text(&r).contains(expected), "{path} {vector}: {}", text(&r));
        assert!(text(&r).contains("ErrorCode::Invalid: "), "{path} {vector}: {}", text(&r));
    }
    let r = call(&client, "hostile", json!({"op": "put", "path": "forged.md", "vector": "ok"})).await;
    assert!(!is_error(&r), "{}", text(&r));
    let hits =
        ok(&client, "search", json!({"query": "document the hostile tool forged", "search_type": "semantic"})).await;
    assert!(hits["results"].as_array().unwrap().iter().all(|h| h["relevance_score"].is_number()), "{hits}");
    client.cancel().await.unwrap();
}

/// 9. HTTP sessions are capped, and a connection that sends no headers is closed.
#[test]
fn http_sessions_are_capped_and_slow_headers_closed() {
    let f = Fixture::empty();
    let server = f.serve_http();
    let statuses: Vec<u16> = (0..80).map(|_| server.initialize(&server.token)).collect();
    assert!(statuses[..64].iter().all(|&s| s == 200), "{statuses:?}");
    assert!(statuses[64..].iter().all(|&s| s == 503), "{statuses:?}");
    // Sessions that only sent `initialize` give their slots back within seconds.
    std::thread::sleep(Duration::from_secs(11));
    assert_eq!(server.initialize(&server.token), 200, "the unused sessions still hold every slot");

    let mut slow = std::net::TcpStream::connect(&server.addr).unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: ").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(started.elapsed() < Duration::from_secs(25), "slow headers held the connection {:?}", started.elapsed());
}

/// 10. The smaller holes.
#[tokio::test(flavor = "multi_thread")]
async fn small_holes_are_closed() {
    // A short or world-readable token file is refused.
    let f = Fixture::empty();
    let token_file = f.config_dir.join("http-token");
    std::fs::write(&token_file, "x").unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = f.command(&["serve", "--http", "127.0.0.1:0"]).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("fewer than 32"));
    std::fs::write(&token_file, "b".repeat(64)).unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = f.command(&["serve", "--http", "127.0.0.1:0"]).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("chmod 600"));

    // A name with a backslash is indexed; a keyword query in the index's own syntax is read as
    // plain words, never as a broken index.
    let f = Fixture::cortext().with_hostile();
    f.write("odd\\name.md", "pelicans behind a backslash\n");
    let client = f.connect().await;
    ok(&client, "embed_workspace", json!({})).await;
    let found = ok(&client, "search", json!({"query": "pelicans backslash", "search_type": "fulltext"})).await;
    assert_eq!(found["results"][0]["source"]["filepath"], "odd\\name.md", "{found}");
    let r = call(&client, "search", json!({"query": "text:*", "search_type": "fulltext"})).await;
    assert!(!is_error(&r) && !text(&r).contains("delete"), "{}", text(&r));

    // Editing the workspace's config while serving takes effect without a restart.
    let names =
        |tools: &rmcp::model::ListToolsResult| tools.tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
    assert!(names(&client.list_tools(None).await.unwrap()).contains(&"get_similar".to_string()));
    f.write(".ragbox/config.toml", "[tools.get_similar]\nenabled = false\n");
    let deadline = Instant::now() + Duration::from_secs(20);
    while names(&client.list_tools(None).await.unwrap()).contains(&"get_similar".to_string()) {
        assert!(Instant::now() < deadline, "the config edit was not picked up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    client.cancel().await.unwrap();

    // A log message cannot forge a log line; framing errors get replies.
    let mut raw = Raw::start(&f);
    let log = raw.forged_log(2);
    assert!(log.contains("honest line\\nFORGED"), "{log}");
    assert!(!log.lines().any(|l| l.starts_with("FORGED")), "{log}");
    assert!(!log.contains('\x1b'), "escape sequence in the log");

    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":[1,2]}}"#);
    let reply = raw.recv();
    assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(3), &json!(-32602)), "{reply}");
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"ping","params":{{"x":{}1{}}}}}"#,
        "[".repeat(500),
        "]".repeat(500)
    );
    raw.send(&deep);
    let reply = raw.recv();
    assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(4), &json!(-32600)), "{reply}");
    let huge = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(17 << 20));
    raw.send(&huge);
    let reply = raw.recv();
    assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(5), &json!(-32600)), "{reply}");
    raw.ping(6);
}
