//! Third-party components: the example tool in `examples/tool-find-todos`
//! (built against `wit/` only) goes from a file dropped into the user's tools
//! folder to `tools/list` while the server runs; one that came with the
//! workspace loads only once the user trusts its bytes; the user's config
//! pins and grants, the workspace's only switches off and lowers;
//! `ragbox tools inspect` says what a component is.

use ragbox_tests::{Fixture, Raw, call, example_tool_wasm, hostile_named, hostile_wasm, is_error, repo_root, text};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn tools_json(f: &Fixture) -> Value {
    let out = f.command(&["tools", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn names(tools: &Value) -> Vec<String> {
    tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

fn rejected_reason(tools: &Value, needle: &str) -> Option<String> {
    tools["rejected"].as_array().unwrap().iter().find_map(|r| {
        let reason = r["reason"].as_str().unwrap();
        reason.contains(needle).then(|| reason.to_string())
    })
}

/// Reads server messages until a `tools/list_changed` notification, answering nothing else.
fn await_list_changed(raw: &mut Raw) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if raw.recv()["method"] == "notifications/tools/list_changed" {
            return;
        }
    }
    panic!("no notifications/tools/list_changed within 20 s");
}

fn listed(raw: &mut Raw, id: u64) -> Vec<String> {
    raw.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string());
    let reply = raw.recv();
    reply["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_dropped_in_tool_is_listed_while_serving_and_works() {
    let f = Fixture::empty();
    f.write("src/app.rs", "fn main() {\n    // TODO: parse the flags\n    let todos = 1; // not a note\n}\n");
    f.write("notes/plan.md", "- FIXME the deploy script\n- done: tests\n");
    f.write("node_modules/dep/index.js", "// TODO: skipped folder\n");
    let mut raw = Raw::start(&f);
    assert!(!listed(&mut raw, 1).contains(&"find_todos".to_string()));

    // Copied into the user's tools folder while serving: the client is told, and the tool is there.
    let tools = f.config_dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(example_tool_wasm(), tools.join("find_todos.wasm")).unwrap();
    await_list_changed(&mut raw);
    assert!(listed(&mut raw, 2).contains(&"find_todos".to_string()));

    raw.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "find_todos", "arguments": {}}})
        .to_string(),
    );
    let reply = raw.recv();
    let body = &reply["result"]["structuredContent"];
    assert_eq!(
        body["notes"],
        json!([
            {"path": "notes/plan.md", "line": 1, "tag": "FIXME", "text": "the deploy script"},
            {"path": "src/app.rs", "line": 2, "tag": "TODO", "text": "parse the flags"}
        ]),
        "{reply}"
    );
    assert_eq!(body["complete"], true);

    raw.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                     "params": {"name": "find_todos", "arguments": {"limit": "ten"}}})
        .to_string(),
    );
    let reply = raw.recv();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("invalid arguments for tool 'find_todos'") && text.contains("/limit: "), "{text}");
    assert!(text.contains("\"ten\" is not of type \"integer\""), "{text}");

    // The host checks a dropped-in tool's arguments against its own inputSchema
    // before it runs: a misspelt field is named, not silently ignored.
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                     "params": {"name": "find_todos", "arguments": {"tgas": ["NOTE"], "limit": 0}}})
        .to_string(),
    );
    let reply = raw.recv();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("'tgas' was unexpected") && text.contains("/limit: 0 is less than the minimum of 1"),
        "{text}"
    );

    // Removed while serving: gone from the list, and the client is told.
    std::fs::remove_file(tools.join("find_todos.wasm")).unwrap();
    await_list_changed(&mut raw);
    assert!(!listed(&mut raw, 5).contains(&"find_todos".to_string()));

    // One that came with the workspace stays out until the user trusts it;
    // trusting it (an edit of the user's config) reaches the running server.
    let shipped = f.workspace.join(".ragbox/tools");
    std::fs::create_dir_all(&shipped).unwrap();
    std::fs::copy(example_tool_wasm(), shipped.join("find_todos.wasm")).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(!listed(&mut raw, 6).contains(&"find_todos".to_string()));
    let out = f.command(&["tools", "trust", shipped.join("find_todos.wasm").to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("trusted tool 'find_todos'"));
    await_list_changed(&mut raw);
    assert!(listed(&mut raw, 7).contains(&"find_todos".to_string()));
    raw.ping(8);
}

#[test]
fn the_policy_pins_switches_off_and_inspect_explains() {
    let f = Fixture::empty();
    let wasm = f.workspace.join(".ragbox/tools/find_todos.wasm");
    std::fs::create_dir_all(wasm.parent().unwrap()).unwrap();
    std::fs::copy(example_tool_wasm(), &wasm).unwrap();

    // inspect: what the component imports and offers, and what it would get.
    let out = f.command(&["tools", "inspect", wasm.to_str().unwrap(), "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sha = report["sha256"].as_str().unwrap().to_string();
    assert_eq!(sha.len(), 64);
    let imports = report["imports"].as_array().unwrap();
    assert!(imports.iter().any(|i| i.as_str().unwrap().starts_with("ragbox:tools/host@")), "{report}");
    assert!(report["exports"].as_array().unwrap().iter().any(|e| e == "call"), "{report}");
    assert_eq!(report["tool"]["name"], "find_todos");
    assert_eq!(report["tool"]["input_schema"]["properties"]["limit"]["maximum"], 1000);
    // Shipped with the workspace and not trusted: refused, saying how to trust it.
    assert_eq!((&report["would_load"], &report["grants"]), (&json!(false), &json!(["workspace:read", "index:read"])));
    assert!(report["refused_because"].as_str().unwrap().contains("ragbox tools trust"), "{report}");
    assert_eq!(report["limits"]["timeout_secs"], 30);
    // What a start costs: a compile (once per version), and a start from the cache.
    let (compile, start) = (&report["timings_ms"]["compile"], &report["timings_ms"]["cached_start"]);
    assert!(compile.as_f64().is_some_and(|ms| ms > 0.0) && start.as_f64().is_some_and(|ms| ms > 0.0), "{report}");
    let tools = tools_json(&f);
    assert!(!names(&tools).contains(&"find_todos".to_string()));
    assert!(rejected_reason(&tools, "find_todos").unwrap().contains("not trusted"));
    // A pin in the workspace's own config trusts nothing.
    f.write(".ragbox/config.toml", &format!("[tools.find_todos]\nsha256 = \"{sha}\"\n"));
    assert!(!names(&tools_json(&f)).contains(&"find_todos".to_string()));

    // `ragbox tools trust` records the pin in the user's config.
    let out = f.command(&["tools", "trust", wasm.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let user = std::fs::read_to_string(f.config_dir.join("config.toml")).unwrap();
    assert!(user.contains("[tools.find_todos]") && user.contains(&sha), "{user}");
    let human = f.command(&["tools", "inspect", wasm.to_str().unwrap()]).output().unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.contains("would load") && human.contains(&format!("sha256 = \"{sha}\"")), "{human}");
    assert!(names(&tools_json(&f)).contains(&"find_todos".to_string()));

    // A pin of other bytes refuses it, saying what to do.
    let other = "0".repeat(64);
    f.write_user_config(&format!("[tools.find_todos]\nsha256 = \"{other}\"\n"));
    let tools = tools_json(&f);
    assert!(!names(&tools).contains(&"find_todos".to_string()));
    let reason = rejected_reason(&tools, "find_todos").expect("refused with a reason");
    // These bytes are pinned for no tool, so they are not even compiled to learn a name.
    assert!(reason.contains("not trusted") && reason.contains(&sha), "{reason}");
    let out = f.command(&["tools", "inspect", wasm.to_str().unwrap(), "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["would_load"], false);

    // The right pin lets it in; the workspace's config may switch tools off and lower limits.
    f.write_user_config(&format!("[tools.find_todos]\nsha256 = \"{}\"\n", sha.to_uppercase()));
    f.write(".ragbox/config.toml", "[tools.find_todos]\ntimeout_secs = 7\n[tools.search_workspace]\nenabled = false\n");
    let tools = tools_json(&f);
    assert!(names(&tools).contains(&"find_todos".to_string()), "{tools}");
    assert!(!names(&tools).contains(&"search_workspace".to_string()));
    assert!(rejected_reason(&tools, "search_workspace").unwrap().contains("enabled = false"));
    let out = f.command(&["tools", "inspect", wasm.to_str().unwrap(), "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&report["would_load"], &report["limits"]["timeout_secs"]), (&json!(true), &json!(7)));
    // And inspect says so, never silently.
    assert_eq!(
        report["narrowed_by_workspace"],
        json!(["timeout lowered to 7 s (your config and the defaults give 30 s)"])
    );
    let human = f.command(&["tools", "inspect", wasm.to_str().unwrap()]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&human.stdout).contains("warning: this workspace's .ragbox/config.toml narrows it")
    );

    // A malformed pin is a config error that names the fix.
    f.write_user_config("[tools.find_todos]\nsha256 = \"abc\"\n");
    let out = f.command(&["tools"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("64 hex digits"));
}

#[test]
fn a_clones_component_cannot_take_the_name_and_grants_of_the_users_own_tool() {
    let f = Fixture::empty();
    // The user's own tool, granted a private folder and writes to the index.
    let private = f.dir.path().join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("keys.txt"), "the user's secret").unwrap();
    let tools = f.config_dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(example_tool_wasm(), tools.join("find_todos.wasm")).unwrap();
    let config = format!(
        "[tools.find_todos]\ngrants = [\"corpus-write\"]\nread_dirs = [{:?}]\ntimeout_secs = 120\n",
        private.display().to_string()
    );
    f.write_user_config(&config);
    // A clone ships a component that calls itself by that name.
    let shipped = f.workspace.join(".ragbox/tools/helper.wasm");
    std::fs::create_dir_all(shipped.parent().unwrap()).unwrap();
    std::fs::copy(hostile_named("find_todos"), &shipped).unwrap();

    let out = f.command(&["tools", "trust", ".ragbox/tools/helper.wasm"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "trusted a component under the user's tool's name: {said}");
    assert!(
        said.contains("'find_todos'")
            && said.contains(&tools.join("find_todos.wasm").display().to_string())
            && said.contains("corpus-write")
            && said.contains("--replace"),
        "{said}"
    );
    // Nothing was pinned: the user's own tool still loads, with its grants.
    assert_eq!(std::fs::read_to_string(f.config_dir.join("config.toml")).unwrap(), config);
    let listed = tools_json(&f);
    let mine = listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == "find_todos").expect("listed");
    assert!(mine["source"].as_str().unwrap().contains("user-config"), "{mine}");
    assert!(rejected_reason(&listed, "helper.wasm").is_some_and(|r| r.contains("not trusted")), "{listed}");

    // Replacing it is a choice that says what the bytes take over.
    let out = f.command(&["tools", "trust", "--replace", ".ragbox/tools/helper.wasm"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("corpus-write")
            && said.contains(&private.display().to_string())
            && said.contains("timeout_secs = 120")
            && said.contains("trusted"),
        "{said}"
    );

    // A new tool cannot be made under a built-in's name.
    let out =
        f.command(&["tools", "new", "search", "--dir", f.dir.path().join("new").to_str().unwrap()]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("built-in"), "{out:?}");
    assert!(!f.dir.path().join("new").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn read_dirs_grant_one_more_folder_read_only() {
    let f = Fixture::empty();
    let shared = f.dir.path().join("shared-docs");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("guide.md"), "granted text").unwrap();
    let secret = shared.join("guide.md");
    let tools = f.config_dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(hostile_wasm(), tools.join("hostile.wasm")).unwrap();

    // Without the grant the folder does not exist for the tool; the
    // workspace's config cannot give it.
    f.write(".ragbox/config.toml", "[tools.hostile]\nread_dirs = [\"../shared-docs\"]\n");
    let client = f.connect().await;
    let r = call(&client, "hostile", json!({"op": "read", "path": secret.to_str().unwrap()})).await;
    assert!(is_error(&r) && text(&r).contains("No such file"), "{}", text(&r));
    client.cancel().await.unwrap();

    // Granted in the user's config, the tool reads it at its absolute path, and only reads.
    f.write_user_config("[tools.hostile]\nread_dirs = [\"../shared-docs\"]\n");
    let client = f.connect().await;
    let r = call(&client, "hostile", json!({"op": "read", "path": secret.to_str().unwrap()})).await;
    assert_eq!(text(&r), "granted text");
    let r = call(&client, "hostile", json!({"op": "write", "path": secret.to_str().unwrap()})).await;
    assert!(is_error(&r), "{}", text(&r));
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "granted text");
    client.cancel().await.unwrap();

    let tools = tools_json(&f);
    let hostile = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "hostile").unwrap();
    let canonical = f.workspace.join("../shared-docs");
    assert!(
        hostile["grants"].as_array().unwrap().iter().any(|g| g == &json!(format!("read:{}", canonical.display()))),
        "{hostile}"
    );
}

/// `ragbox tools call`: one call without an MCP client, under the same sandbox.
#[test]
fn tools_call_runs_one_tool_once_from_the_command_line() {
    let f = Fixture::empty();
    f.write("src/app.rs", "fn main() {\n    // TODO: parse the flags\n}\n");
    f.write("notes/plan.md", "- FIXME the deploy script\n");
    let tools = f.config_dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(example_tool_wasm(), tools.join("find_todos.wasm")).unwrap();
    let run = |args: &[&str], stdin: Option<&str>| {
        let mut cmd = f.command(args);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut input, stdin.unwrap_or("").as_bytes()).unwrap();
        drop(input);
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // Arguments on the command line, and from stdin with `-`.
    let (ok, stdout, stderr) = run(&["tools", "call", "find_todos", r#"{"tags": ["FIXME"]}"#], None);
    assert!(ok, "{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(
        result["notes"],
        json!([{"path": "notes/plan.md", "line": 1, "tag": "FIXME", "text": "the deploy script"}])
    );
    let (ok, stdout, stderr) = run(&["tools", "call", "find_todos", "-"], Some(r#"{"path": "src"}"#));
    assert!(ok && stdout.contains("parse the flags") && !stdout.contains("deploy"), "{stdout}{stderr}");
    // A built-in, in its own words.
    let (ok, stdout, stderr) = run(&["tools", "call", "get_embedding_status"], None);
    assert!(ok && serde_json::from_str::<Value>(&stdout).is_ok(), "{stdout}{stderr}");

    // inspect shows what those calls cost (the refused ones below never ran).
    let report = run(&["tools", "inspect", tools.join("find_todos.wasm").to_str().unwrap(), "--json"], None).1;
    let report: Value = serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {report}"));
    assert_eq!(report["last_calls_ms"]["count"], 2, "{report}");
    assert!(
        report["last_calls"].as_array().unwrap().iter().all(|c| c["outcome"] == "ok" && c["ms"].as_f64() > Some(0.0))
    );

    // What goes wrong says what to do, on stderr, with a failing status.
    for (args, wanted) in [
        (vec!["tools", "call", "find_todos", "{limit: 3}"], "the arguments are not JSON"),
        (vec!["tools", "call", "find_todos", "[1]"], "must be a JSON object"),
        (vec!["tools", "call", "find_todos", r#"{"limit": 0}"#], "/limit: 0 is less than the minimum of 1"),
        (vec!["tools", "call", "find_todoz"], "find_todos"),
    ] {
        let (ok, stdout, stderr) = run(&args, None);
        assert!(!ok && stdout.is_empty() && stderr.contains(wanted), "{args:?}: {stderr}");
    }
}

/// `ragbox tools new word_stats --lang LANG` in a folder outside any
/// checkout; the project's folder, not yet built.
fn scaffold(f: &Fixture, lang: &str, projects: &Path) -> PathBuf {
    let new = |args: &[&str]| f.command(args).current_dir(projects).output().unwrap();
    let out = new(&["tools", "new", "word_stats", "--lang", lang]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let project = projects.join("word_stats");
    // Again into the same folder: refused, nothing written over.
    let again = new(&["tools", "new", "word_stats", "--lang", lang]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("already holds files"));
    project
}

/// Adds `line` to the scaffolded `logic` file before the line `before`, as a
/// user's edit would: the Python and JavaScript tests build once, with a crash
/// on the path "crash" (each build and first load of those components takes
/// tens of seconds).
fn insert_before(project: &Path, logic: &str, before: &str, line: &str) {
    let logic = project.join(logic);
    let text = std::fs::read_to_string(&logic).unwrap();
    let edited = text.replacen(before, &format!("{line}\n{before}"), 1);
    assert_ne!(text, edited, "{before:?} is in the scaffold's {}", logic.display());
    std::fs::write(&logic, edited).unwrap();
}

/// Runs `make [goal]` in `project`: Rust builds share the example's target folder,
/// so the crates build once per run.
fn make(project: &Path, goal: Option<&str>) -> String {
    let mut cmd = std::process::Command::new("make");
    cmd.current_dir(project).env("CARGO_TARGET_DIR", repo_root().join("target/guest-tools-tests"));
    // The Node.js 22 that `make test` installs for the conformance suite, when there.
    let node = repo_root().join("tests/conformance/node_modules/.bin");
    if node.join("node").exists() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(node).chain(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    cmd.args(goal);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "make {goal:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Builds the project's component, `word_stats.wasm`.
fn build(project: &Path, lang: &str) {
    let out = make(project, None);
    assert!(project.join("word_stats.wasm").is_file(), "{lang}: {out}");
}

/// Copies the built component into the user's tools folder.
fn install(f: &Fixture, project: &Path) {
    let tools = f.config_dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(project.join("word_stats.wasm"), tools.join("word_stats.wasm")).unwrap();
}

/// `ragbox tools call word_stats JSON`: (succeeded, stdout, stderr).
fn call_word_stats(f: &Fixture, json: &str) -> (bool, String, String) {
    let out = f.command(&["tools", "call", "word_stats", json]).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What every scaffolded tool must do once installed: answer, be held to its
/// schema by the host, and to the workspace by the sandbox.
fn check_word_stats(f: &Fixture) {
    let (ok, stdout, stderr) = call_word_stats(f, r#"{"path": "notes.md"}"#);
    assert!(ok, "{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result, json!({"path": "notes.md", "lines": 2, "words": 3, "bytes": 14}));
    let (ok, _, stderr) = call_word_stats(f, r#"{"path": 3}"#);
    assert!(!ok && stderr.contains("/path: 3 is not of type \"string\""), "{stderr}");
    let (ok, stdout, stderr) = call_word_stats(f, r#"{"path": "../outside.txt"}"#);
    assert!(!ok && stderr.contains("cannot read ../outside.txt") && !stdout.contains("secret"), "{stderr}");
}

fn word_stats_fixture() -> Fixture {
    let f = Fixture::empty();
    f.write("notes.md", "one two\nthree\n");
    std::fs::write(f.workspace.parent().unwrap().join("outside.txt"), "secret").unwrap();
    f
}

/// `ragbox tools new`: a Rust project outside any checkout that builds with
/// `make`, passes `make test`, and loads and runs in the sandbox like any tool.
#[test]
fn a_scaffolded_rust_tool_builds_tests_and_runs_sandboxed() {
    let f = word_stats_fixture();
    let projects = tempfile::tempdir().unwrap();
    let project = scaffold(&f, "rust", projects.path());
    build(&project, "rust");
    assert!(make(&project, Some("test")).contains("test result: ok. 1 passed"));
    install(&f, &project);
    check_word_stats(&f);

    // The compatibility promise: the same tool built against the previous
    // release of the contract (ragbox:tools@0.2.0) loads and runs unchanged.
    std::fs::copy(repo_root().join("tests/compat/wit-0.2.0/ragbox.wit"), project.join("wit/ragbox.wit")).unwrap();
    build(&project, "rust");
    let wasm = std::fs::read(project.join("word_stats.wasm")).unwrap();
    let imports = |version: &str| wasm.windows(version.len()).any(|w| w == version.as_bytes());
    let interfaces = ["types", "host", "embedder", "corpus", "vectors", "fulltext"];
    let at = |version: &str| interfaces.iter().any(|i| imports(&format!("ragbox:tools/{i}@{version}")));
    assert!(at("0.2.0") && !at("0.2.2"), "built against 0.2.0");
    install(&f, &project);
    check_word_stats(&f);
}

/// The same in Python (componentize-py, which the project's Makefile
/// installs); an uncaught exception reaches the caller with its traceback.
#[test]
fn a_scaffolded_python_tool_builds_tests_runs_sandboxed_and_reports_its_traceback() {
    let f = word_stats_fixture();
    let projects = tempfile::tempdir().unwrap();
    let project = scaffold(&f, "python", projects.path());
    let crash = "    if path == \"crash\":\n        return 1 / 0";
    insert_before(&project, "logic.py", "    with open(path, \"rb\") as f:", crash);
    build(&project, "python");
    let tested = make(&project, Some("test"));
    assert!(tested.contains("Ran 2 tests") && tested.contains("\nOK"), "{tested}");
    install(&f, &project);
    check_word_stats(&f);

    let (ok, _, stderr) = call_word_stats(&f, r#"{"path": "crash"}"#);
    assert!(!ok && stderr.contains("tool 'word_stats' crashed"), "{stderr}");
    assert!(
        stderr.contains("Traceback (most recent call last)") && stderr.contains("ZeroDivisionError: division by zero"),
        "{stderr}"
    );
    assert!(stderr.contains("logic.py\", line"), "{stderr}");
}

/// The same in JavaScript (componentize-js, which the project's Makefile
/// installs); it lists the workspace through the host, and an exception
/// reaches the caller as the tool's error, with its stack.
#[test]
fn a_scaffolded_js_tool_builds_tests_runs_sandboxed_and_reports_its_stack() {
    let f = word_stats_fixture();
    f.write("notes/more.md", "four\n");
    let projects = tempfile::tempdir().unwrap();
    let project = scaffold(&f, "js", projects.path());
    insert_before(&project, "logic.js", "  let bytes = 0n;", "  if (path === 'crash') null.boom();");
    build(&project, "js");
    let tested = make(&project, Some("test"));
    assert!(tested.contains("# pass 2") && tested.contains("# fail 0"), "{tested}");
    install(&f, &project);
    let (ok, stdout, stderr) = call_word_stats(&f, r#"{"path": "notes"}"#);
    assert!(ok, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), json!({"path": "notes", "files": 1, "bytes": 5}));
    let (ok, _, stderr) = call_word_stats(&f, r#"{"path": 3}"#);
    assert!(!ok && stderr.contains("/path: 3 is not of type \"string\""), "{stderr}");
    let (ok, stdout, stderr) = call_word_stats(&f, r#"{"path": "../"}"#);
    assert!(!ok && stderr.contains("is not a path inside the workspace") && !stdout.contains("outside"), "{stderr}");

    let (ok, _, stderr) = call_word_stats(&f, r#"{"path": "crash"}"#);
    assert!(!ok && stderr.contains("TypeError") && stderr.contains("logic.js"), "{stderr}");
}

/// The first-tool walk-through (docs/authoring-tools.md), run line for line in a folder outside
/// the repository, with a fresh home (so `~/.config/ragbox` is the user's
/// config dir) and this build's `ragbox` on the PATH.
#[cfg(target_os = "linux")]
#[test]
fn the_authoring_walk_through_runs_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("docs/authoring-tools.md")).unwrap();
    let block = readme
        .split_once("<!-- walk-through: first tool -->\n```sh\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(block, _)| block)
        .expect("docs/authoring-tools.md has its walk-through block");
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let bin = ragbox_tests::ragbox_bin().parent().unwrap().to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(bin).chain(std::env::split_paths(&path));
    let out = std::process::Command::new("sh")
        .args(["-eu", "-c", block])
        .current_dir(&work)
        .env("HOME", home.path())
        .env_remove("RAGBOX_CONFIG_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .env("CARGO_TARGET_DIR", repo_root().join("target/guest-tools-tests"))
        .env("RAGBOX_COMPILE_CACHE", home.path().join("cache"))
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{block}\n{stdout}\n{stderr}");
    let result = stdout.rsplit_once("\n{").map(|(_, json)| format!("{{{json}")).expect("the call's JSON last");
    let result: Value = serde_json::from_str(&result).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(result, json!({"path": "notes.md", "lines": 2, "words": 2, "bytes": 8}));
    assert!(home.path().join(".config/ragbox/tools/line_count.wasm").is_file());
}

/// The `ragbox-tool` crate (`tool-sdk/`): the example in its README, built
/// outside the tree against the crate, loads and runs like any tool; the
/// crate carries this ragbox's WIT and packages as it would be published.
#[test]
fn a_tool_built_on_the_ragbox_tool_crate_runs() {
    let sdk = repo_root().join("tool-sdk");
    let carried = std::fs::read_to_string(sdk.join("wit/ragbox.wit")).unwrap();
    assert_eq!(carried, std::fs::read_to_string(repo_root().join("wit/ragbox.wit")).unwrap(), "tool-sdk/wit is wit/");

    let readme = std::fs::read_to_string(sdk.join("README.md")).unwrap();
    let example = readme.split("```rust\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a rust block");
    let projects = tempfile::tempdir().unwrap();
    let project = projects.path().join("hello");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), example).unwrap();
    // The scaffold's release profile: with the same `strip` the build reuses the
    // wit-bindgen macros the other test tools built (cargo hashes it into them too).
    let manifest = format!(
        "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n\
         [dependencies]\nragbox-tool = {{ path = {:?} }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\
         serde_json = \"1\"\n\n[profile.release]\nopt-level = \"s\"\npanic = \"abort\"\nstrip = true\n\n[workspace]\n",
        sdk.display().to_string()
    );
    std::fs::write(project.join("Cargo.toml"), manifest).unwrap();
    let target = repo_root().join("target/guest-tools-tests");
    let out = std::process::Command::new("cargo")
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let f = Fixture::empty();
    let tools = f.config_dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(target.join("wasm32-wasip2/release/hello.wasm"), tools.join("hello.wasm")).unwrap();
    let out = f.command(&["tools", "call", "hello", r#"{"name": "you"}"#]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result, json!({"greeting": "hello, you"}));
    let out = f.command(&["tools", "call", "hello", r#"{"name": "you", "nmae": 1}"#]).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("'nmae' was unexpected"));

    // What `cargo publish` would upload: the sources, the README and the WIT.
    let out = std::process::Command::new("cargo")
        .args(["package", "--list", "--allow-dirty"])
        .current_dir(&sdk)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for file in ["Cargo.toml", "README.md", "src/lib.rs", "wit/ragbox.wit"] {
        assert!(listed.lines().any(|l| l == file), "{file} not packaged: {listed}");
    }
}
