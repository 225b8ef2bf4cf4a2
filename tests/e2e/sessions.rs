//! What one session may cost the process that serves every agent, and what it
//! leaves behind: a session that ended leaves nothing running in its
//! workspace. Each runs through the per-user service and standalone, where
//! both apply.

use ragbox_tests::{Fixture, Raw};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// `serve` with `args`, through the per-user service or in its own process.
fn serve(f: &Fixture, args: &[&str], standalone: bool) -> Raw {
    let mut line: Vec<&str> = vec!["serve"];
    line.extend_from_slice(args);
    if standalone {
        line.push("--standalone");
    }
    Raw::start_with(f, &line)
}

/// Waits up to `within` for `done`, else fails naming `what`.
fn wait_for(what: &str, within: Duration, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < within, "{what} did not happen within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Calls `tool` with `arguments`; the reply's `result`.
fn call(raw: &mut Raw, id: u64, tool: &str, arguments: Value) -> Value {
    raw.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
            .to_string(),
    );
    let reply = raw.recv_within(Duration::from_secs(60));
    assert_eq!(reply["id"], id, "{reply}");
    reply["result"].clone()
}

/// Deletes `f`'s workspace right after `raw` exits, as `make run`'s demo
/// (a temporary folder) and a removed git worktree do.
fn delete_after_exit(f: &Fixture, mut raw: Raw, standalone: bool, round: u64) {
    let status = raw.hang_up(Duration::from_secs(30));
    assert!(status.success(), "standalone={standalone}: {status}");
    if let Err(e) = std::fs::remove_dir_all(&f.workspace) {
        panic!(
            "standalone={standalone}, round {round}: the workspace could not be deleted right after its \
             agent's server exited ({e}): something still wrote in it"
        );
    }
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !f.workspace.exists(),
        "standalone={standalone}, round {round}: something made files in the workspace after its server exited"
    );
}

#[test]
#[cfg(unix)]
fn a_workspace_can_be_deleted_the_moment_its_agent_has_exited() {
    for standalone in [false, true] {
        for round in 0..3u64 {
            // Over 32 new files: a run stores them for keywords first, and the keyword
            // index follows its writes on a thread of its own while it embeds, and after.
            // As the demo does: index, search, leave.
            let f = Fixture::tldr(60);
            let mut raw = serve(&f, &[], standalone);
            let report = call(&mut raw, 1, "embed_workspace", json!({}));
            assert_ne!(report["isError"], true, "{report}");
            let found = call(&mut raw, 2, "search_semantic", json!({"query": "compress files", "n_results": 3}));
            assert_ne!(found["isError"], true, "{found}");
            delete_after_exit(&f, raw, standalone, round);

            // Left in the middle of the watch's first run, at a different moment each round.
            let f = Fixture::tldr(60);
            let raw = serve(&f, &["--watch"], standalone);
            let store = f.workspace.join(".ragbox").join("store.redb");
            wait_for("the watch's first run", Duration::from_secs(60), || store.exists());
            std::thread::sleep(Duration::from_millis(150 * round));
            delete_after_exit(&f, raw, standalone, round);
        }
    }
}
