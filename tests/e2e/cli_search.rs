//! `ragbox search` and `ragbox sources` as a person at a terminal meets them.

use ragbox_tests::Fixture;
use serde_json::Value;
use std::process::{Output, Stdio};

fn run(f: &Fixture, args: &[&str]) -> Output {
    f.command(args).stdin(Stdio::null()).output().expect("run ragbox")
}

/// stdout of a command that must succeed.
fn ok(f: &Fixture, args: &[&str]) -> String {
    let out = run(f, args);
    assert!(out.status.success(), "ragbox {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_agents_config_files_init_writes_are_never_indexed_or_searched() {
    let f = Fixture::empty();
    f.write("notes.md", "# Costs\n\nTurn off idle servers to save money.\n");
    ok(&f, &["init", "--agent", "all"]);
    // A nested project's own agent config is configuration too.
    f.write("sub/.mcp.json", r#"{"mcpServers": {"other": {"command": "serve-things"}}}"#);
    f.write("sub/.vscode/mcp.json", r#"{"servers": {"x": {"command": "serve"}}}"#);
    let indexed: Value = serde_json::from_str(&ok(&f, &["index", "--json"])).unwrap();
    let sources: Value = serde_json::from_str(&ok(&f, &["sources", "--json"])).unwrap();
    let paths: Vec<&str> = sources["sources"].as_array().unwrap().iter().filter_map(|s| s["path"].as_str()).collect();
    assert!(paths.contains(&"notes.md"), "{sources}");
    for config in [".mcp.json", ".codex/config.toml", ".cursor/mcp.json", ".vscode/mcp.json", "sub/.mcp.json"] {
        assert!(!paths.contains(&config), "{config} was indexed: {sources} ({indexed})");
    }
    // Neither the line search nor the index finds them.
    for mode in [&[][..], &["--fulltext"], &["--hybrid"]] {
        let mut args = vec!["search", "serve", "--json"];
        args.extend_from_slice(mode);
        let found = ok(&f, &args);
        assert!(!found.contains("mcp.json") && !found.contains("config.toml"), "{mode:?}: {found}");
    }
    let status: Value = serde_json::from_str(&ok(&f, &["status", "--json"])).unwrap();
    assert_eq!(status["pending"]["total"], 0, "{status}");
}
