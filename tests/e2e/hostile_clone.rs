//! A cloned repository's `.ragbox/` is data, never a pointer or a voice: one
//! test per hole of issue 33. Each "clone" is a workspace as `git clone` (or
//! a tarball) could leave it: links, FIFOs, a store, a token and a config of
//! someone else's choosing in its data dir, folders nested 1,700 deep,
//! megabyte arguments.

use ragbox_tests::{
    Fixture, Raw, call, hostile_wasm, is_error, ok, peak_mib, rename_storm, shared_cache_dir, text, tree,
};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` with no stdin, killed if it takes longer than `limit` (a
/// command that reads a FIFO or `/dev/zero` would otherwise hang the suite).
fn run_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("{cmd:?} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn run(f: &Fixture, args: &[&str]) -> Output {
    run_within(f.command(args), Duration::from_secs(120))
}

fn said(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A folder outside the workspace holding one secret file, and what it holds now.
fn outside(f: &Fixture) -> PathBuf {
    let dir = f.dir.path().join("outside");
    std::fs::create_dir_all(dir.join("keep")).unwrap();
    std::fs::write(dir.join("secret.txt"), "TOP SECRET outside the workspace\n").unwrap();
    dir
}

/// The shared compile cache's entries (the built-ins' compiled code) copied
/// into `to`, less any whose name holds `sha`: a cache only that component's
/// compilation could add it to, without compiling every built-in again.
/// Entries other tests write meanwhile may come and go: those are skipped.
fn copy_cache_without(to: &Path, sha: &str) {
    let shared = shared_cache_dir();
    let mut stack = vec![shared.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let dest = to.join(path.strip_prefix(&shared).unwrap());
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() && !path.to_string_lossy().contains(sha) => {
                    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
                    let _ = std::fs::copy(&path, &dest);
                }
                _ => {}
            }
        }
    }
}

fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// A workspace with a few notes and, once indexed, something to find.
fn notes() -> Fixture {
    let f = Fixture::empty();
    f.write("notes/pelicans.md", "# Pelicans\n\nPelicans scoop fish with their throat pouch.\n");
    f.write("notes/herons.md", "# Herons\n\nHerons stand still in shallow water to hunt.\n");
    f
}

/// Puts a link or special file into a workspace, maybe pointing at the folder outside it.
type Plant = fn(&Fixture, &Path);

/// [`notes`] with `folder` made and `plant` run on it, the folder outside the
/// workspace, and what that folder holds before any command runs.
fn planted(folder: &str, plant: Plant) -> (Fixture, PathBuf, Vec<(PathBuf, u64)>) {
    let f = notes();
    let out = outside(&f);
    std::fs::create_dir_all(f.workspace.join(folder)).unwrap();
    plant(&f, &out);
    let before = tree(&out);
    (f, out, before)
}

/// 1–2. A link or special file where ragbox keeps something is refused with
/// its name and the fix, never followed (nothing outside changes, nothing is
/// read from `/dev/zero` or a secret file), and `doctor --reset` clears it.
#[test]
fn links_and_special_files_in_the_data_dir_are_refused_not_followed() {
    let cases: [(&str, Plant); 9] = [
        ("store.redb", |f, out| symlink(out.join("x.redb"), f.workspace.join(".ragbox/store.redb"))),
        ("keyword", |f, out| symlink(out, f.workspace.join(".ragbox/keyword"))),
        ("vectors", |f, out| symlink(out, f.workspace.join(".ragbox/vectors"))),
        ("shared", |f, out| symlink(out, f.workspace.join(".ragbox/shared"))),
        ("config.toml", |f, _| symlink("/dev/zero", f.workspace.join(".ragbox/config.toml"))),
        ("config.toml", |f, out| symlink(out.join("secret.txt"), f.workspace.join(".ragbox/config.toml"))),
        ("owner", |f, _| symlink("/dev/zero", f.workspace.join(".ragbox/owner"))),
        ("store.redb", |f, _| mkfifo(&f.workspace.join(".ragbox/store.redb"))),
        ("lock", |f, _| mkfifo(&f.workspace.join(".ragbox/lock"))),
    ];
    for (name, plant) in cases {
        let (f, out, before) = planted(".ragbox", plant);
        let indexed = run(&f, &["index"]);
        let message = said(&indexed);
        assert!(!indexed.status.success(), "{name}: {message}");
        assert!(
            message.contains(&format!(".ragbox/{name}")) && message.contains("doctor --reset"),
            "{name}: {message}"
        );
        assert!(!message.contains("TOP SECRET"), "{name}: the linked file was read: {message}");
        assert_eq!(tree(&out), before, "{name}: something outside changed");

        let reset = run(&f, &["doctor", "--reset", "--yes"]);
        assert!(reset.status.success(), "{name}: {}", said(&reset));
        assert!(std::fs::symlink_metadata(f.workspace.join(".ragbox").join(name)).is_err(), "{name} is still there");
        assert_eq!(tree(&out), before, "{name}: the reset reached outside");
        let indexed = run(&f, &["index"]);
        assert!(indexed.status.success(), "{name} after the reset: {}", said(&indexed));
    }

    // The data dir itself a link: the reset removes the link, never what it points at.
    let f = notes();
    let out = outside(&f);
    symlink(&out, f.workspace.join(".ragbox"));
    let before = tree(&out);
    assert!(!run(&f, &["status"]).status.success());
    assert!(run(&f, &["doctor", "--reset", "--yes"]).status.success());
    assert!(std::fs::symlink_metadata(f.workspace.join(".ragbox")).is_err());
    assert_eq!(tree(&out), before);

    // In the user's own data dir, a saved-index file swapped for a link is
    // ignored (the index is derived) and never read.
    let f = notes();
    assert!(run(&f, &["index"]).status.success());
    std::fs::create_dir_all(f.workspace.join(".ragbox/vectors")).unwrap();
    let _ = std::fs::remove_file(f.workspace.join(".ragbox/vectors/manifest"));
    symlink("/dev/zero", f.workspace.join(".ragbox/vectors/manifest"));
    let found = run(&f, &["search", "fish pouch", "--semantic", "--json"]);
    assert!(found.status.success(), "{}", said(&found));
    assert!(said(&found).contains("pelicans.md"), "{}", said(&found));

    // The same for the codes file the manifest names (mapped, not read): a link to a
    // device or outside, a FIFO, or a file made elsewhere is passed over, never
    // mapped, waited on or trusted; the index is rebuilt from the store.
    type Swap = fn(&Path, &Path);
    let swaps: [(&str, Swap); 4] = [
        ("a link to /dev/zero", |codes, _| symlink("/dev/zero", codes)),
        ("a link outside", |codes, out| symlink(out.join("secret.txt"), codes)),
        ("a FIFO", |codes, _| mkfifo(codes)),
        ("a file made elsewhere", |codes, _| std::fs::write(codes, vec![0x5A; 4096]).unwrap()),
    ];
    for (what, swap) in swaps {
        let f = notes();
        let out = outside(&f);
        let before = tree(&out);
        assert!(run(&f, &["index"]).status.success());
        let vectors = f.workspace.join(".ragbox/vectors");
        let codes = std::fs::read_dir(&vectors)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "codes"))
            .expect("`ragbox index` saved the vector index's codes");
        std::fs::remove_file(&codes).unwrap();
        swap(&codes, &out);
        let found = run(&f, &["search", "fish pouch", "--semantic", "--json"]);
        assert!(found.status.success(), "{what}: {}", said(&found));
        assert!(said(&found).contains("pelicans.md"), "{what}: {}", said(&found));
        assert!(said(&found).contains("ignoring the saved vector index"), "{what}: {}", said(&found));
        assert!(!said(&found).contains("TOP SECRET"), "{what}: the linked file was read");
        assert_eq!(tree(&out), before, "{what}: something outside changed");
    }
}

/// (1–2, continued) Where a shipped entry is not needed to run (a component,
/// what older versions kept, a half-removed folder, a keyword-index file),
/// a link, FIFO or `/dev/zero` there is passed over or reported, never
/// followed or waited on; the command ends and nothing outside changes.
#[test]
fn links_and_special_files_ragbox_can_do_without_are_never_followed() {
    let cases: [(&str, Plant); 7] = [
        ("tools/zero.wasm", |f, _| symlink("/dev/zero", f.workspace.join(".ragbox/tools/zero.wasm"))),
        ("tools/fifo.wasm", |f, _| mkfifo(&f.workspace.join(".ragbox/tools/fifo.wasm"))),
        ("tools/secret.wasm", |f, out| symlink(out.join("secret.txt"), f.workspace.join(".ragbox/tools/secret.wasm"))),
        ("tools", |f, out| {
            std::fs::remove_dir(f.workspace.join(".ragbox/tools")).unwrap();
            symlink(out, f.workspace.join(".ragbox/tools"));
        }),
        ("http-token", |f, out| symlink(out.join("secret.txt"), f.workspace.join(".ragbox/http-token"))),
        ("fulltext", |f, out| symlink(out, f.workspace.join(".ragbox/fulltext"))),
        (".discard-0000000000000001", |f, out| symlink(out, f.workspace.join(".ragbox/.discard-0000000000000001"))),
    ];
    for (name, plant) in cases {
        let (f, out, before) = planted(".ragbox/tools", plant);
        for args in [&["tools", "--json"][..], &["index"], &["search", "pelicans", "--fulltext"], &["status"]] {
            let ran = run(&f, args);
            assert!(!said(&ran).contains("TOP SECRET"), "{name} {args:?}: read through the link: {}", said(&ran));
            assert_eq!(tree(&out), before, "{name} {args:?}: something outside changed");
        }
        let listed = run(&f, &["tools", "--json"]);
        if name.starts_with("tools") {
            let body: Value = serde_json::from_slice(&listed.stdout).unwrap();
            assert!(body["rejected"].to_string().contains("tools"), "{name}: not reported: {body}");
        }
        assert!(run(&f, &["doctor", "--reset", "--yes"]).status.success(), "{name}");
        assert_eq!(tree(&out), before, "{name}: the reset reached outside");
        assert!(run(&f, &["index"]).status.success(), "{name} after the reset");
    }

    // A keyword-index file of the user's own index swapped for a FIFO or
    // /dev/zero: the search says the index is damaged, and does not wait.
    for plant in [|p: &Path| mkfifo(p), |p: &Path| symlink("/dev/zero", p)] {
        let f = notes();
        assert!(run(&f, &["index"]).status.success());
        assert!(run(&f, &["search", "pelicans", "--fulltext"]).status.success());
        let meta = std::fs::read_dir(f.workspace.join(".ragbox/keyword"))
            .unwrap()
            .map(|e| e.unwrap().path().join("meta.json"))
            .find(|p| p.exists())
            .expect("a tantivy meta.json");
        std::fs::remove_file(&meta).unwrap();
        plant(&meta);
        let searched = run(&f, &["search", "pelicans", "--fulltext"]);
        assert!(!searched.status.success() && said(&searched).contains("doctor --reset"), "{}", said(&searched));
        // An index run's keyword follower meets it too: it ends (warning, not waiting), its documents stored.
        f.write(
            "notes/later.md",
            "# Later

A note written after the swap.
",
        );
        let indexed = run(&f, &["index"]);
        assert!(indexed.status.success(), "{}", said(&indexed));
        assert!(said(&indexed).contains("keyword index"), "{}", said(&indexed));
    }
}

/// (3) The model is the user's choice only: a workspace's `model` (here a
/// folder whose config is an endless file) is ignored and said so; the
/// user's relative `model` is taken from their config's folder.
#[test]
fn the_model_comes_from_the_user_only() {
    let f = notes();
    f.write(".ragbox/config.toml", "model = \"m\"\n");
    std::fs::create_dir_all(f.workspace.join("m")).unwrap();
    symlink("/dev/zero", f.workspace.join("m/config.json"));
    symlink("/dev/zero", f.workspace.join("m/tokenizer.json"));
    f.write("m/model.safetensors", "not weights");
    let indexed = run(&f, &["index"]);
    assert!(indexed.status.success(), "{}", said(&indexed));
    let doctor = said(&run(&f, &["doctor"]));
    assert!(doctor.contains("ignored model") && doctor.contains("RAGBOX_MODEL"), "{doctor}");
    assert!(doctor.contains("all-MiniLM-L6-v2"), "the default model is used: {doctor}");

    // The user's relative model folder is the user's own (a link here, to the real one).
    let model = ragbox::embed::default_model_dir().expect("a home folder or RAGBOX_MODEL");
    symlink(&model, f.config_dir.join("my-model"));
    f.write_user_config("model = \"my-model\"\n");
    let doctor = said(&run(&f, &["doctor"]));
    assert!(doctor.contains(&f.config_dir.join("my-model").display().to_string()), "{doctor}");
}

/// (4) A folder chain 1,700 deep (a real `git clone` can make one) neither
/// crashes `serve` nor hides the rest of the workspace.
#[tokio::test(flavor = "multi_thread")]
async fn a_deep_clone_does_not_crash_the_server() {
    let f = notes();
    let mut deep = f.workspace.join("deep");
    for _ in 0..1700 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("bottom.md"), "at the bottom").unwrap();
    let client = f.connect().await;
    let report = ok(&client, "embed_workspace", json!({})).await;
    assert!(report["embedded"].as_u64().unwrap() >= 2, "{report}");
    assert!(report["errors"].to_string().contains("deeper than"), "{report}");
    let found = ok(&client, "search_workspace", json!({"query": "throat pouch"})).await;
    assert_eq!(found["num_results"], 1, "{found}");
    client.cancel().await.unwrap();
    // Cleaning up a chain this deep needs no deep recursion either.
    let top = f.workspace.join("deep");
    let mut depth = 0;
    while std::fs::read_dir(&top).unwrap().next().is_some() {
        let mut inner = top.clone();
        while let Some(Ok(e)) = std::fs::read_dir(&inner).unwrap().next() {
            inner = e.path();
            depth += 1;
            if depth > 100 {
                break;
            }
        }
        std::fs::rename(&inner, f.dir.path().join(format!("flat-{depth}"))).unwrap();
        depth = 0;
    }
}

/// (5) Host work is bounded by what the host reads, not by what a component
/// or a client sends: 40 MB through `embedder.embed`, and a 15 MB argument to
/// each search tool, cost the server little and end in seconds.
#[test]
fn host_work_is_bounded_by_input_size() {
    let f = Fixture::cortext().with_hostile();
    f.write(".ragbox/config.toml", "");
    let mut raw = Raw::start(&f);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"embed_workspace","arguments":{}}}"#);
    let indexed = raw.recv_within(Duration::from_secs(120));
    assert_eq!(indexed["result"]["isError"], false, "{indexed}");
    let baseline = peak_mib(raw.pid());

    let started = Instant::now();
    raw.send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hostile","arguments":{"op":"embed_huge"}}}"#,
    );
    let huge = raw.recv_within(Duration::from_secs(60));
    assert!(huge["result"]["content"].to_string().contains("1 vectors"), "{huge}");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());

    let big = "pelican ".repeat(15 << 17); // 15 MiB
    let calls = [
        ("search", json!({"query": big})),
        ("search_similar", json!({"reference_text": big})),
        ("search_by_question", json!({"question": big})),
        ("get_context", json!({"topic": big})),
        ("search_semantic", json!({"query": big})),
        ("search_skills", json!({"query": big})),
    ];
    for (id, (tool, arguments)) in calls.into_iter().enumerate() {
        let started = Instant::now();
        let line = json!({"jsonrpc": "2.0", "id": 10 + id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        raw.send(&line.to_string());
        let reply = raw.recv_within(Duration::from_secs(60));
        assert_eq!(reply["result"]["isError"], true, "{tool}: {reply}");
        assert!(reply.to_string().contains("KiB a call may send"), "{tool}: {reply}");
        assert!(started.elapsed() < Duration::from_secs(10), "{tool}: {:?}", started.elapsed());
    }
    // Under the cap, a long query is cut to what the host reads.
    let long = "pelican heron ".repeat(60_000); // 840 KB
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": long, "search_type": "hybrid"}}})
        .to_string(),
    );
    let reply = raw.recv_within(Duration::from_secs(60));
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let grew = peak_mib(raw.pid()).saturating_sub(baseline);
    assert!(grew < 400, "the server's peak memory grew by {grew} MiB (was 1.6–1.9 GB before)");
    raw.ping(40);
}

/// The sha256 of `text`, hex.
fn sha256(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// (7b) A `git pull` can overwrite the files of a stamped data dir (it is
/// ignored, so git treats its files as expendable): a keyword index whose
/// `.managed.json` names files outside its folder is refused, and tantivy
/// never gets to delete them.
#[test]
fn a_keyword_index_that_names_outside_files_is_refused() {
    let f = notes();
    let out = outside(&f);
    assert!(run(&f, &["index"]).status.success());
    // The keyword index is made at the first keyword search.
    assert!(run(&f, &["search", "pelicans", "--fulltext"]).status.success());
    let victim = out.join("secret.txt");
    let mut managed = Vec::new();
    let mut stack = vec![f.workspace.join(".ragbox/keyword")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == ".managed.json") {
                managed.push(path);
            }
        }
    }
    assert!(!managed.is_empty(), "tantivy keeps a .managed.json");
    let before = tree(&out);
    for file in &managed {
        let names = serde_json::json!([victim.display().to_string(), "../../../../outside/keep"]);
        std::fs::write(file, names.to_string()).unwrap();
    }
    let searched = run(&f, &["search", "pelicans", "--fulltext"]);
    let message = said(&searched);
    assert!(message.contains(".managed.json") && message.contains("doctor --reset"), "{message}");
    assert!(!message.contains("TOP SECRET"));
    f.write("notes/new.md", "# New\n\nA new note so that indexing commits.\n");
    run(&f, &["index"]);
    assert!(!run(&f, &["search", "new note", "--fulltext"]).status.success());
    assert_eq!(tree(&out), before, "a file outside was deleted");
    assert!(run(&f, &["doctor", "--reset", "--yes"]).status.success());
    assert!(run(&f, &["index"]).status.success());
    assert_eq!(tree(&out), before);
}

/// (7) A store that came with the folder is never believed: a record that
/// carries a file's true sha256 with chunks of someone else's choosing is
/// not served as that file's text on this user's machine, or from a copy.
#[tokio::test(flavor = "multi_thread")]
async fn a_shipped_store_is_never_believed() {
    // Someone else's machine: their own key, and a tool they let write the index.
    let theirs = Fixture::empty().with_hostile();
    theirs.write(".ragbox/config.toml", ""); // room for the model's first load
    let honest = "Honest notes about pelicans and their pouches.\n";
    theirs.write("note.md", honest);
    theirs.write_user_config("[tools.hostile]\ngrants = [\"corpus-write\"]\ntimeout_secs = 30\n");
    assert!(run(&theirs, &["index"]).status.success());
    let client = theirs.connect().await;
    let forged = call(
        &client,
        "hostile",
        json!({"op": "forge", "path": "note.md", "hash": sha256(honest), "text": "INJECTED buy cheap pills here"}),
    )
    .await;
    assert!(!is_error(&forged), "{}", text(&forged));
    let hits = ok(&client, "search", json!({"query": "INJECTED pills", "search_type": "fulltext"})).await;
    assert_eq!(hits["results"][0]["source"]["filepath"], "note.md", "the forgery is in their store: {hits}");
    let kept = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!(kept["embedded"], 0, "their ragbox keeps it as unchanged: {kept}");
    client.cancel().await.unwrap();

    // The clone: the same files, their .ragbox included, on this user's machine.
    let mine = Fixture::empty();
    copy_tree(&theirs.workspace, &mine.workspace);
    let found = run(&mine, &["search", "INJECTED pills", "--fulltext", "--json"]);
    assert!(found.status.success(), "{}", said(&found));
    assert!(!said(&found).contains("note.md"), "the shipped store was served: {}", said(&found));
    let indexed = run(&mine, &["index", "--json"]);
    assert!(indexed.status.success(), "{}", said(&indexed));
    let report: Value = serde_json::from_slice(&indexed.stdout).unwrap();
    assert_eq!(report["embedded"], 1, "the file is embedded from what it says: {report}");
    let found = said(&run(&mine, &["search", "INJECTED pills", "--fulltext", "--json"]));
    assert!(!found.contains("note.md"), "{found}");
    let found = said(&run(&mine, &["search", "pouches", "--fulltext", "--json"]));
    assert!(found.contains("note.md"), "{found}");

    // Even this user's own index, copied to another folder, is made again there.
    let copy = Fixture::empty();
    copy_tree(&mine.workspace, &copy.workspace);
    std::fs::remove_dir_all(&copy.config_dir).unwrap();
    copy_tree(&mine.config_dir, &copy.config_dir);
    let indexed = run(&copy, &["index", "--json"]);
    let report: Value = serde_json::from_slice(&indexed.stdout).unwrap();
    assert_eq!(report["embedded"], 1, "{report}");
    assert!(said(&indexed).contains("was not made by ragbox for you"), "{}", said(&indexed));
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp").arg("-a").arg(format!("{}/.", from.display())).arg(to).status().unwrap();
    assert!(status.success());
}

/// (8) The HTTP token is the user's: one a repository ships is not accepted.
#[test]
fn the_http_token_is_the_users() {
    let f = notes();
    std::fs::create_dir_all(f.workspace.join(".ragbox")).unwrap();
    let shipped = f.workspace.join(".ragbox/http-token");
    std::fs::write(&shipped, format!("{}\n", "a".repeat(64))).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shipped, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = f.serve_http();
    let token_said: String = server.started.iter().filter(|l| l.contains("token")).cloned().collect();
    let token_file = f.config_dir.join("http-token");
    assert!(token_said.contains(&token_file.display().to_string()), "{token_said}");
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
    assert_ne!(token, "a".repeat(64));
    assert_eq!(server.initialize(&"a".repeat(64)), 401, "the shipped token is refused");
    assert_eq!(server.initialize(&token), 200);
}

/// (9) Data dirs are hidden from components at every depth: a sub-workspace's,
/// the served one's when a parent folder is the call's workspace, the
/// user's config dir inside the workspace, and `/proc`'s process folders
/// under a grant of `/proc`.
#[tokio::test(flavor = "multi_thread")]
async fn data_dirs_are_hidden_at_every_depth() {
    let mut f = notes().with_hostile();
    // The user's config dir inside the workspace (a home folder served whole).
    let inside = f.workspace.join(".config/ragbox");
    std::fs::create_dir_all(inside.join("tools")).unwrap();
    std::fs::copy(hostile_wasm(), inside.join("tools/hostile.wasm")).unwrap();
    f.config_dir = inside.clone();
    let parent = f.dir.path().to_path_buf();
    f.write_user_config(&format!(
        "allowed_workspaces = [{parent:?}]\n[tools.hostile]\nread_dirs = [\"/proc\"]\ntimeout_secs = 30\n"
    ));
    f.write("sub/.ragbox/http-token", &"s".repeat(64));
    f.write("sub/.ragbox/store.redb", "sub-workspace store");
    f.write("sub/readme.md", "a sub-workspace");
    let client = f.connect().await;
    ok(&client, "embed_workspace", json!({})).await;
    let leaked = |r: &rmcp::model::CallToolResult| {
        let t = text(r);
        t.contains("ssssssss") || t.contains("sub-workspace store")
    };
    for path in ["sub/.ragbox/http-token", "sub/.ragbox/store.redb", ".ragbox/store.redb", ".config/ragbox/owner.key"] {
        for op in ["read", "stat"] {
            let r = call(&client, "hostile", json!({"op": op, "path": path})).await;
            assert!(is_error(&r) && !leaked(&r), "{op} {path}: {}", text(&r));
        }
    }
    for dir in ["sub", ".config"] {
        let listing = call(&client, "hostile", json!({"op": "list", "path": dir})).await;
        assert!(!text(&listing).contains(".ragbox") && !text(&listing).contains("owner.key"), "{}", text(&listing));
    }
    assert!(text(&call(&client, "hostile", json!({"op": "list", "path": "sub"})).await).contains("readme.md"));
    // The parent folder as the call's workspace: the served workspace's data dir stays hidden.
    let parent_path = parent.display().to_string();
    for (op, path) in [("read", "ws/.ragbox/store.redb"), ("read", "ws/sub/.ragbox/http-token"), ("list", "ws/.ragbox")]
    {
        let r = call(&client, "hostile", json!({"op": op, "path": path, "workspace_path": parent_path})).await;
        assert!(is_error(&r) && !leaked(&r), "{op} {path} through the parent: {}", text(&r));
    }
    let r = call(&client, "hostile", json!({"op": "list", "path": "ws", "workspace_path": parent_path})).await;
    assert!(!is_error(&r) && text(&r).contains("notes") && !text(&r).contains(".ragbox"), "{}", text(&r));
    // A grant of /proc: the host's own environment (a PGPASSWORD, a token) is not readable.
    for path in ["/proc/self/environ", "/proc/thread-self/environ", "/proc/self/cmdline", "/proc/1/environ"] {
        let r = call(&client, "hostile", json!({"op": "read", "path": path})).await;
        assert!(is_error(&r) && !text(&r).contains("RAGBOX_CONFIG_DIR"), "{path}: {}", text(&r));
    }
    let listing = text(&call(&client, "hostile", json!({"op": "list", "path": "/proc"})).await);
    assert!(listing.lines().any(|l| l == "cpuinfo"), "the rest of /proc is listed: {listing}");
    assert!(!listing.lines().any(|l| l == "self" || l.bytes().all(|b| b.is_ascii_digit())), "{listing}");
    // Nothing of it reached the index either.
    let hits = ok(&client, "search", json!({"query": "ssssssss owner key", "search_type": "fulltext"})).await;
    assert!(!hits.to_string().contains("owner.key") && !hits.to_string().contains(".ragbox"), "{hits}");
    client.cancel().await.unwrap();
}

/// The smaller holes of issue 33.
#[tokio::test(flavor = "multi_thread")]
async fn smaller_holes_are_closed() {
    // Ignore files cannot stretch the walk past the call's limit: rules are
    // read up to a budget, and the walk stops when the call must.
    let f = notes();
    let rules: String = (0..3_000).map(|i| format!("pattern-{i}-*.tmp\n")).collect(); // ~60 KiB
    for i in 0..70 {
        f.write(&format!("big/{i}/.gitignore"), &rules);
        f.write(&format!("big/{i}/note.md"), "beside a huge ignore file");
    }
    // The rule files themselves are left out of the index, so the time measured is the walk's.
    f.write(".ignore", ".gitignore\n");
    f.write_user_config("[limits]\nindexing_timeout_secs = 60\n");
    let indexed = run(&f, &["index", "--json"]);
    assert!(indexed.status.success(), "{}", said(&indexed));
    assert!(said(&indexed).contains("rules are not read"), "{}", said(&indexed));
    std::fs::remove_dir_all(f.workspace.join(".ragbox")).unwrap();
    f.write_user_config("[limits]\nindexing_timeout_secs = 2\n");
    let started = Instant::now();
    let indexed = run(&f, &["index", "--json"]);
    let waited = started.elapsed();
    assert!(!indexed.status.success() && said(&indexed).contains("time limit"), "{}", said(&indexed));
    assert!(waited < Duration::from_secs(12), "stopped {waited:?} after a 2 s limit");

    // A workspace's component nobody trusted is neither compiled nor run.
    let f = notes();
    std::fs::create_dir_all(f.workspace.join(".ragbox/tools")).unwrap();
    std::fs::copy(hostile_wasm(), f.workspace.join(".ragbox/tools/hostile.wasm")).unwrap();
    let bytes = std::fs::read(hostile_wasm()).unwrap();
    let sha: String = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect()
    };
    let cache = f.dir.path().join("fresh-cache");
    copy_cache_without(&cache, &sha);
    let mut listed = f.command(&["tools", "--json"]);
    listed.env("RAGBOX_COMPILE_CACHE", &cache);
    let listed = run_within(listed, Duration::from_secs(120));
    let body: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(body["rejected"].to_string().contains("neither compiled nor run"), "{body}");
    let compiled: Vec<String> = tree(&cache).iter().map(|(p, _)| p.display().to_string()).collect();
    assert!(!compiled.iter().any(|p| p.contains(&sha)), "it was compiled: {compiled:?}");

    // A store password is never echoed, however the URL is written.
    let f = notes();
    for url in [
        "postgres://db.invalid/x?password=s3cretpw&sslmode=bogus",
        "postgres://ana:s3cretpw@db.invalid/x",
        "host=db.invalid password=s3cretpw sslmode=bogus",
    ] {
        let out = run(&f, &["--store", url, "status"]);
        assert!(!out.status.success() && !said(&out).contains("s3cretpw"), "{url}: {}", said(&out));
    }

    // Advice names the file that can change the setting: the user's config.
    let f = notes().with_hostile();
    let client = f.connect().await;
    let r = call(&client, "search_workspace", json!({"query": "x", "workspace_path": "/etc"})).await;
    let user_config = f.config_dir.join("config.toml").display().to_string();
    assert!(text(&r).contains(&user_config) && !text(&r).contains(".ragbox/config.toml"), "{}", text(&r));
    let r = call(&client, "hostile", json!({"op": "remove_from_index", "path": "notes/pelicans.md"})).await;
    assert!(text(&r).contains(&user_config), "{}", text(&r));
    let r = call(&client, "hostile", json!({"op": "loop"})).await;
    assert!(text(&r).contains(&user_config), "{}", text(&r));

    // An edit made through a hard link from outside shows in the served status.
    let outside_file = f.dir.path().join("linked-note.md");
    std::fs::write(&outside_file, "first version\n").unwrap();
    std::fs::hard_link(&outside_file, f.workspace.join("notes/linked.md")).unwrap();
    ok(&client, "embed_workspace", json!({})).await;
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(status["pending"]["changed"]["count"], 0, "{status}");
    std::fs::write(&outside_file, "second version, written from outside\n").unwrap();
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(status["pending"]["changed"]["paths"], json!(["notes/linked.md"]), "{status}");
    client.cancel().await.unwrap();

    // `init` writes nothing when a later file is refused, and says so truthfully.
    let f = notes();
    let out = outside(&f);
    symlink(out.join("secret.txt"), f.workspace.join(".gitignore"));
    let init = run(&f, &["init", "--agent", "claude"]);
    assert!(!init.status.success() && said(&init).contains("nothing was written"), "{}", said(&init));
    assert!(!f.workspace.join(".mcp.json").exists(), ".mcp.json was written after all");

    // A damaged store: every command says so (no panic), and the reset recovers.
    let f = notes();
    assert!(run(&f, &["index"]).status.success());
    let store = f.workspace.join(".ragbox/store.redb");
    let mut bytes = std::fs::read(&store).unwrap();
    for at in (4096..bytes.len()).step_by(997) {
        bytes[at] ^= 0xff;
    }
    // Written in place: the same file, so the same stamp vouches for it.
    std::fs::OpenOptions::new().write(true).open(&store).unwrap().write_all(&bytes).unwrap();
    for args in [&["status"][..], &["search", "pelicans", "--semantic"], &["index"], &["doctor"]] {
        let out = run(&f, args);
        let message = said(&out);
        assert!(!out.status.success(), "{args:?}: {message}");
        assert!(!message.contains("panicked") && message.contains("doctor --reset"), "{args:?}: {message}");
    }
    assert!(run(&f, &["doctor", "--reset", "--yes"]).status.success());
    assert!(run(&f, &["index"]).status.success());

    // A message nested exactly as deep as the server reads gets its reply, one level more its refusal.
    let f = notes();
    let mut raw = Raw::start(&f);
    // A ping nested `levels` deep, its id before the nesting or after it.
    let ping = |id: u64, levels: usize, id_last: bool| {
        let params = format!(r#""params":{{"x":{}1{}}}"#, "[".repeat(levels - 2), "]".repeat(levels - 2));
        match id_last {
            false => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping",{params}}}"#),
            true => format!(r#"{{"jsonrpc":"2.0","method":"ping",{params},"id":{id}}}"#),
        }
    };
    // Its id before the nesting, then after it: the refusal carries it too.
    for (id_last, under, over) in [(false, 1, 2), (true, 4, 5)] {
        raw.send(&ping(under, 127, id_last));
        assert_eq!(raw.recv()["id"], under);
        raw.send(&ping(over, 128, id_last));
        let refused = raw.recv();
        assert_eq!((&refused["id"], &refused["error"]["code"]), (&json!(over), &json!(-32600)), "{refused}");
    }
    raw.ping(3);
}

/// (10) A log line from a component cannot be split by a line separator, and
/// a rename storm under `serve --watch` does not flood the log.
#[test]
fn logs_stay_one_line_per_message_and_quiet_in_a_storm() {
    let f = notes().with_hostile();
    let mut raw = Raw::start_with(&f, &["serve", "--watch"]);
    let log = raw.forged_log(1);
    assert!(log.contains("\\u{2028}FORGED2"), "{log}");
    assert!(!log.contains('\u{2028}'), "a raw line separator reached the log");

    // Folders created and renamed away faster than their watches can be set.
    let n = rename_storm(&f.workspace.join("storm"), Duration::from_secs(4));
    std::thread::sleep(Duration::from_secs(2));
    let log = raw.stderr.lock().unwrap().clone();
    let warnings = log.lines().filter(|l| l.contains("WARN") && l.contains("file watch")).count();
    assert!(warnings <= 3, "{warnings} watch warnings for {n} renames:\n{}", &log[log.len().saturating_sub(2000)..]);
    raw.ping(2);
}

/// The paths `ragbox index --json` stored, read back with `ragbox status --json`.
fn indexed(f: &Fixture) -> Vec<String> {
    let out = run(f, &["index", "--json"]);
    assert!(out.status.success(), "{}", said(&out));
    let out = run(f, &["tools", "call", "list_sources", "{\"limit\": 1000}"]);
    assert!(out.status.success(), "{}", said(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sources = listed["sources"].as_array().cloned().unwrap_or_default();
    let mut paths: Vec<String> =
        sources.iter().filter_map(|s| s["filepath"].as_str().or(s["path"].as_str()).map(str::to_string)).collect();
    paths.sort();
    paths
}

/// (11) An ignore file padded past what ragbox reads does not let in what it
/// lists: its folder is left out and the report says why. Files named like
/// credentials are never indexed, whatever the ignore files say, unless the
/// user's own config lets one in (a workspace's cannot).
#[test]
fn what_the_ignore_files_keep_out_stays_out_and_secrets_are_never_indexed() {
    let f = notes();
    f.write("team/.gitignore", &format!("private.md\n{}", "# padding\n".repeat(8000)));
    f.write("team/private.md", "The user's private notes: pelican passwords.\n");
    f.write("team/plan.md", "The plan.\n");
    f.write(".env", "OPENAI_API_KEY=sk-not-a-real-key\n");
    f.write("deploy/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    f.write("certs/server.pem", "-----BEGIN CERTIFICATE-----\n");
    f.write(".gitignore", "!.env\n");
    let out = run(&f, &["index", "--json"]);
    assert!(out.status.success(), "{}", said(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["errors"].to_string().contains("team/.gitignore")
            && report["errors"].to_string().contains("nothing in its folder is indexed"),
        "{report}"
    );
    let paths = indexed(&f);
    for kept_out in ["team/private.md", "team/plan.md", ".env", "deploy/id_rsa", "certs/server.pem"] {
        assert!(!paths.iter().any(|p| p == kept_out), "{kept_out} indexed: {paths:?}");
    }
    // Asked for by name: refused, saying how to let it in.
    let out = run(&f, &["tools", "call", "embed_document", "{\"path\": \".env\"}"]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("\"embedded\": 0") && report.contains("index_secrets"), "{}", said(&out));
    // A workspace's config cannot let one in; the user's can.
    f.write(".ragbox/config.toml", "index_secrets = [\".env\"]\n");
    assert!(!indexed(&f).contains(&".env".to_string()));
    f.write_user_config("index_secrets = [\"/.env\"]\n");
    let paths = indexed(&f);
    assert!(paths.contains(&".env".to_string()) && !paths.contains(&"deploy/id_rsa".to_string()), "{paths:?}");
}
