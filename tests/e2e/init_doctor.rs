//! `ragbox init` (agent MCP configs, merged into what is there) and
//! `ragbox doctor` (checks, and a reset that asks first).

use ragbox_tests::Fixture;
use serde_json::{Value, json};
use std::process::{Output, Stdio};

fn run(f: &Fixture, args: &[&str]) -> Output {
    f.command(args).stdin(Stdio::null()).output().expect("run ragbox")
}

fn read_json(f: &Fixture, rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(f.workspace.join(rel)).unwrap()).unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The arguments Claude Code, Gemini CLI and OpenCode get: they start servers
/// in the workspace, so the committed file names it `.`.
fn serve_args() -> Value {
    json!(["serve", "--workspace", ".", "--watch"])
}

#[test]
fn init_on_an_empty_folder_configures_claude_code_and_ignores_the_index() {
    let f = Fixture::empty();
    let out = run(&f, &["init"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mcp = read_json(&f, ".mcp.json");
    let server = &mcp["mcpServers"]["ragbox"];
    assert_eq!((&server["type"], &server["args"]), (&json!("stdio"), &serve_args()), "{mcp}");
    // The command starts this very binary.
    let command = server["command"].as_str().unwrap();
    let started = std::process::Command::new(if command == "ragbox" { "ragbox" } else { command })
        .arg("--version")
        .output()
        .unwrap();
    assert!(started.status.success());
    assert_eq!(std::fs::read_to_string(f.workspace.join(".gitignore")).unwrap().lines().last(), Some(".ragbox/"));
    // Running it again changes nothing and adds no second .gitignore line.
    let before = std::fs::read_to_string(f.workspace.join(".mcp.json")).unwrap();
    let again = run(&f, &["init"]);
    assert!(again.status.success());
    assert!(
        stdout(&again).contains("unchanged .mcp.json (Claude Code)") && stdout(&again).contains("Nothing changed"),
        "{}",
        stdout(&again)
    );
    assert_eq!(std::fs::read_to_string(f.workspace.join(".mcp.json")).unwrap(), before);
    let gitignore = std::fs::read_to_string(f.workspace.join(".gitignore")).unwrap();
    assert_eq!(gitignore.matches(".ragbox/").count(), 1, "{gitignore}");
}

#[test]
fn init_merges_into_every_agents_existing_config() {
    let f = Fixture::empty();
    f.write(".mcp.json", r#"{"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}"#);
    f.write(".gemini/settings.json", r#"{"theme": "GitHub", "mcpServers": {"ragbox": {"command": "old-ragbox"}}}"#);
    f.write("opencode.json", r#"{"$schema": "https://opencode.ai/config.json", "model": "anthropic/claude", "mcp": {"fs": {"type": "local", "command": ["fs-mcp"]}}}"#);
    f.write(".codex/config.toml", "# personal settings\nmodel = \"o4-mini\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--port\", \"0\"]\n");
    f.write(".gitignore", "target\n/.ragbox\n");
    let out = run(&f, &["init", "--agent", "all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("updated .codex/config.toml (Codex)"), "{}", stdout(&out));

    let claude = read_json(&f, ".mcp.json");
    assert_eq!(claude["mcpServers"]["github"]["command"], "gh-mcp");
    assert_eq!(claude["mcpServers"]["ragbox"]["args"], serve_args());
    let gemini = read_json(&f, ".gemini/settings.json");
    assert_eq!(gemini["theme"], "GitHub");
    assert_ne!(gemini["mcpServers"]["ragbox"]["command"], "old-ragbox", "the old entry is replaced");
    assert_eq!(gemini["mcpServers"]["ragbox"]["args"], serve_args());
    let opencode = read_json(&f, "opencode.json");
    assert_eq!(
        (&opencode["model"], &opencode["mcp"]["fs"]["command"]),
        (&json!("anthropic/claude"), &json!(["fs-mcp"]))
    );
    let entry = &opencode["mcp"]["ragbox"];
    assert_eq!((&entry["type"], &entry["enabled"]), (&json!("local"), &json!(true)));
    assert_eq!(entry["command"].as_array().unwrap()[1..], serve_args().as_array().unwrap()[..]);
    let codex = std::fs::read_to_string(f.workspace.join(".codex/config.toml")).unwrap();
    assert!(codex.starts_with("# personal settings\nmodel = \"o4-mini\""), "{codex}");
    let codex: toml::Table = toml::from_str(&codex).unwrap();
    assert_eq!(codex["mcp_servers"]["docs"]["command"].as_str(), Some("docs-mcp"));
    // Codex does not start servers in the project folder: its entry keeps the absolute path.
    let workspace = f.workspace.canonicalize().unwrap().display().to_string();
    assert_eq!(codex["mcp_servers"]["ragbox"]["args"].as_array().unwrap()[2].as_str(), Some(workspace.as_str()));
    assert_eq!(codex["mcp_servers"]["ragbox"]["tool_timeout_sec"].as_integer(), Some(600));
    let cursor = read_json(&f, ".cursor/mcp.json");
    assert_eq!(cursor["mcpServers"]["ragbox"]["args"][2], "${workspaceFolder}");
    let vscode = read_json(&f, ".vscode/mcp.json");
    assert_eq!(vscode["servers"]["ragbox"]["type"], "stdio");
    // `/.ragbox` already ignores the index: nothing added.
    assert_eq!(std::fs::read_to_string(f.workspace.join(".gitignore")).unwrap(), "target\n/.ragbox\n");
}

#[test]
fn init_detects_agents_and_leaves_broken_files_alone() {
    let f = Fixture::empty();
    std::fs::create_dir_all(f.workspace.join(".codex")).unwrap();
    let out = run(&f, &["init"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(f.workspace.join(".codex/config.toml").exists());
    assert!(!f.workspace.join(".mcp.json").exists(), "only the agent the workspace uses");

    let f = Fixture::empty();
    f.write(".mcp.json", "{ \"mcpServers\": { // a comment\n } }");
    let out = run(&f, &["init", "--agent", "claude", "--agent", "gemini"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(".mcp.json is not valid JSON") && err.contains("add this entry by hand"), "{err}");
    assert!(err.contains("\"mcpServers\""), "shows the entry: {err}");
    assert_eq!(
        std::fs::read_to_string(f.workspace.join(".mcp.json")).unwrap(),
        "{ \"mcpServers\": { // a comment\n } }"
    );
    assert!(!f.workspace.join(".gemini").exists(), "nothing written when any file is broken");
    assert!(!f.workspace.join(".gitignore").exists());
}

/// Claude Code's command in `.mcp.json` after `init` run by this build's
/// binary with `PATH` set to `dirs`, and what `init` printed.
fn command_with_path(dirs: &[&std::path::Path]) -> (String, String) {
    let f = Fixture::empty();
    let out =
        f.command(&["init"]).env("PATH", std::env::join_paths(dirs).unwrap()).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let command = read_json(&f, ".mcp.json")["mcpServers"]["ragbox"]["command"].as_str().unwrap().to_string();
    (command, stdout(&out))
}

#[cfg(unix)]
#[test]
fn init_writes_a_bare_ragbox_when_the_first_on_path_is_this_program() {
    use std::os::unix::fs::PermissionsExt as _;
    let bins = tempfile::tempdir().unwrap();
    let make = |dir: &str| {
        let dir = bins.path().join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    };
    let (copy, other, linked) = (make("copy"), make("other"), make("linked"));
    // What `make install` leaves on PATH: a copy of the build's bytes, not the same file.
    std::fs::copy(ragbox_tests::ragbox_bin(), copy.join("ragbox")).unwrap();
    assert_eq!(command_with_path(&[&copy]).0, "ragbox");
    // Another program of that name found first: it would be the one started.
    std::fs::write(other.join("ragbox"), "#!/bin/sh\necho another ragbox\n").unwrap();
    std::fs::set_permissions(other.join("ragbox"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(ragbox_tests::ragbox_bin(), linked.join("ragbox")).unwrap();
    let (command, said) = command_with_path(&[&other, &linked]);
    assert_eq!(command, std::fs::canonicalize(ragbox_tests::ragbox_bin()).unwrap().to_str().unwrap());
    assert!(said.contains("the `ragbox` on PATH is not this binary"), "{said}");
    assert_eq!(command_with_path(&[&linked, &other]).0, "ragbox");
}

#[test]
fn doctor_finds_a_broken_index_and_reset_asks_first() {
    let f = Fixture::empty();
    f.write("notes/a.md", "Some notes about gardening.");
    let out = run(&f, &["doctor"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("nothing embedded yet"), "{}", stdout(&out));
    assert!(run(&f, &["index"]).status.success());
    let out = run(&f, &["doctor"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("1 documents") && stdout(&out).contains("everything is in order"),
        "{}",
        stdout(&out)
    );

    // A damaged store: doctor says so and how to recover; so do the tools.
    f.write_bytes(".ragbox/store.redb", b"this is not a redb file at all, just garbage bytes");
    let out = run(&f, &["doctor"]);
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains("BROKEN  store") && stdout(&out).contains("ragbox doctor --reset"),
        "{}",
        stdout(&out)
    );
    let out = run(&f, &["search", "garden", "--semantic"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("ragbox doctor --reset"), "{}", stderr(&out));

    // Reset refuses without a confirmation when nobody can answer.
    let out = run(&f, &["doctor", "--reset"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("embeddings of") && stderr(&out).contains("--reset --yes"), "{}", stderr(&out));
    assert!(f.workspace.join(".ragbox/store.redb").exists());
    f.write(".ragbox/config.toml", "# kept\n");
    let out = run(&f, &["doctor", "--reset", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!f.workspace.join(".ragbox/store.redb").exists());
    assert!(f.workspace.join(".ragbox/config.toml").exists(), "config survives a reset");
    assert!(run(&f, &["index"]).status.success());
    assert!(run(&f, &["doctor"]).status.success());

    // A missing model: the command that fetches it.
    let out =
        f.command(&["doctor"]).env("RAGBOX_MODEL", f.dir.path().join("nowhere")).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    assert!(stdout(&out).contains("BROKEN  model") && stdout(&out).contains("ragbox model fetch"), "{}", stdout(&out));
}
