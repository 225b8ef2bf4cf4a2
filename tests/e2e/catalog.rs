//! Which components load: built-ins, the workspace's and the user's tools
//! folders, name clashes and broken files.

use ragbox_tests::{Fixture, hostile_wasm};
use serde_json::Value;

fn tools_json(f: &Fixture) -> Value {
    let out = f.command(&["tools", "--json"]).output().expect("run ragbox tools");
    assert!(out.status.success(), "ragbox tools failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("ragbox tools --json prints JSON")
}

#[test]
fn lists_builtins_and_user_components_with_sha256() {
    let f = Fixture::cortext().with_hostile();
    let v = tools_json(&f);
    let tools = v["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "embed_document",
            "embed_workspace",
            "get_context",
            "get_decision_history",
            "get_embedding_status",
            "get_similar",
            "list_sources",
            "search",
            "search_by_question",
            "search_similar",
            "search_semantic",
            "search_skills",
            "search_workspace",
            "hostile"
        ]
    );
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap();
    assert_eq!(tool("search_workspace")["source"], "built-in (search-workspace)");
    // Built-in writers hold corpus-write; readers and third-party tools only read.
    let (write, read) = (["workspace:read", "index:read", "corpus-write"], ["workspace:read", "index:read"]);
    for t in tools {
        let writes = ["embed_document", "embed_workspace"].contains(&t["name"].as_str().unwrap());
        assert_eq!(t["grants"], if writes { serde_json::json!(write) } else { serde_json::json!(read) }, "{t}");
    }
    let hostile = tool("hostile");
    assert_eq!(hostile["sha256"], sha256_hex(&std::fs::read(hostile_wasm()).unwrap()));
    assert!(hostile["source"].as_str().unwrap().ends_with("user-config/tools/hostile.wasm"));
    assert_eq!(v["rejected"], serde_json::json!([]));
}

#[test]
fn user_tools_folder_is_loaded_and_clashes_are_refused_naming_both() {
    let f = Fixture::cortext().with_hostile();
    let user_tools = f.config_dir.join("tools");
    std::fs::create_dir_all(&user_tools).unwrap();
    std::fs::copy(hostile_wasm(), user_tools.join("zz-hostile.wasm")).unwrap();
    std::fs::write(user_tools.join("garbage.wasm"), b"\0asm not really").unwrap();
    // A core module (a wasm32-wasip1 build, say): refused with the target that makes a component.
    std::fs::write(user_tools.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let v = tools_json(&f);
    assert_eq!(v["tools"].as_array().unwrap().len(), ragbox::builtins::BUILTIN_TOOLS.len() + 1);
    let rejected = v["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 3, "{v}");
    let clash = rejected.iter().find(|r| r["source"].as_str().unwrap().ends_with("zz-hostile.wasm")).unwrap();
    let reason = clash["reason"].as_str().unwrap();
    assert!(
        reason.contains("tool name 'hostile' is already taken by") && reason.contains("tools/hostile.wasm"),
        "{reason}"
    );
    let garbage = rejected.iter().find(|r| r["source"].as_str().unwrap().ends_with("garbage.wasm")).unwrap();
    assert!(garbage["reason"].as_str().unwrap().starts_with("cannot compile component"), "{garbage}");
    let core = rejected.iter().find(|r| r["source"].as_str().unwrap().ends_with("core.wasm")).unwrap();
    assert!(
        core["reason"]
            .as_str()
            .unwrap()
            .contains("core WebAssembly module, not a component: build it with `--target wasm32-wasip2`"),
        "{core}"
    );
}

#[test]
fn a_bad_config_is_a_clear_error() {
    let f = Fixture::cortext();
    f.write(".ragbox/config.toml", "[limits]\ntimeout = 5\n");
    let out = f.command(&["tools"]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("invalid config") && stderr.contains("unknown field `timeout`"), "{stderr}");
}

#[test]
fn a_missing_workspace_is_a_clear_error() {
    let f = Fixture::empty();
    let out = f.command(&["serve", "--workspace", "/no/such/folder"]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("workspace folder /no/such/folder cannot be opened"), "{stderr}");
    assert!(out.stdout.is_empty(), "stdout must stay clean");
}

#[test]
fn compile_cache_is_written_and_reused() {
    let f = Fixture::cortext();
    let cache = f.dir.path().join("cache");
    let run = || {
        let out = f.command(&["tools"]).env("RAGBOX_COMPILE_CACHE", &cache).output().unwrap();
        assert!(out.status.success());
    };
    run();
    let entries: Vec<_> = walk(&cache).into_iter().filter(|p| p.extension().is_some_and(|e| e == "cwasm")).collect();
    let builtins = ragbox::builtins::components().len();
    assert_eq!(entries.len(), builtins, "one cached component per built-in tool and extractor: {entries:?}");
    let modified = std::fs::metadata(&entries[0]).unwrap().modified().unwrap();
    run();
    assert_eq!(std::fs::metadata(&entries[0]).unwrap().modified().unwrap(), modified, "cache entry rewritten");
    // A corrupt entry is recompiled, not trusted.
    std::fs::write(&entries[0], b"corrupt").unwrap();
    run();
    assert!(std::fs::metadata(&entries[0]).unwrap().len() > 1000);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// sha256 by the `sha256sum` tool, to check ragbox against an independent implementation.
fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

#[test]
fn hub_download_without_the_hub_feature_says_how_to_get_it() {
    let f = Fixture::empty();
    let dest = f.dir.path().join("model");
    let out = f.command(&["model", "fetch", "--from-hub", "--dir"]).arg(&dest).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--features hub") && stderr.contains("sentence-transformers/all-MiniLM-L6-v2"), "{stderr}");
    assert!(!dest.exists());
}
