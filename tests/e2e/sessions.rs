//! What one session may cost the process that serves every agent, and what it
//! leaves behind: a session that ended leaves nothing running in its
//! workspace, a data dir swapped while served is never written through, a
//! client that reads nothing cannot grow the process, and what cannot be
//! read as a message gets JSON-RPC's own errors. Each runs through the
//! per-user service and standalone, where both apply.

use ragbox_tests::{Fixture, Raw, alive, peak_mib, rename_storm, tree};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
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

/// Every file under `dir` with its bytes, links not followed.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|(p, _)| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .map(|(p, _)| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
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
            let report = raw.call_tool(1, "embed_workspace", json!({}));
            assert_ne!(report["isError"], true, "{report}");
            let found = raw.call_tool(2, "search_semantic", json!({"query": "compress files", "n_results": 3}));
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

#[test]
#[cfg(unix)]
fn a_data_dir_swapped_for_a_link_while_served_is_never_written_through() {
    for standalone in [false, true] {
        let f = Fixture::tldr(10);
        // Another workspace of the same user's, indexed: what a link could lead to.
        let other = f.dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        for i in 0..5 {
            std::fs::write(other.join(format!("note-{i}.md")), format!("Other notes, page {i}: pelicans.\n")).unwrap();
        }
        for dir in [&f.workspace, &other] {
            let out = f.command(&["index", "-w", dir.to_str().unwrap()]).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let mut raw = serve(&f, &["--watch"], standalone);
        let found = raw.call_tool(1, "search", json!({"query": "tar", "search_type": "fulltext"}));
        assert_ne!(found["isError"], true, "{found}");
        let before = contents(&other.join(".ragbox"));

        // What a `git pull` that tracks a link there does: the folder goes, a link comes.
        let data = f.workspace.join(".ragbox");
        std::fs::rename(&data, f.dir.path().join("moved-away")).unwrap();
        std::os::unix::fs::symlink(other.join(".ragbox"), &data).unwrap();
        // The watch indexes these; a search follows.
        for i in 0..40 {
            f.write(&format!("new/page-{i}.md"), &format!("# New page {i}\n\nPelicans and tar archives, {i}.\n"));
        }
        std::thread::sleep(Duration::from_secs(5));
        assert!(
            contents(&other.join(".ragbox")) == before,
            "standalone={standalone}: the other workspace's data dir was written through the link"
        );
        // The session says what happened, naming the folder.
        let refused = raw.call_tool(2, "search", json!({"query": "pelicans", "search_type": "fulltext"}));
        assert_eq!(refused["isError"], true, "standalone={standalone}: {refused}");
        let said = refused.to_string();
        assert!(said.contains(&data.display().to_string()) && said.contains("link"), "{said}");
        std::thread::sleep(Duration::from_secs(1));
        assert!(contents(&other.join(".ragbox")) == before, "standalone={standalone}: written after the call");
        // The folder put back, the next call serves from it: no restart.
        std::fs::remove_file(&data).unwrap();
        std::fs::rename(f.dir.path().join("moved-away"), &data).unwrap();
        let found = raw.call_tool(3, "search", json!({"query": "tar", "search_type": "fulltext"}));
        assert_ne!(found["isError"], true, "standalone={standalone}: {found}");
        drop(raw);
    }
}

#[test]
#[cfg(target_os = "linux")]
fn a_client_that_reads_no_answers_cannot_grow_the_process() {
    use std::io::Write as _;
    use std::process::Stdio;
    for standalone in [false, true] {
        let f = Fixture::empty();
        // The largest file a resource read returns whole.
        f.write("big.txt", &"pelican ".repeat(1 << 20));
        let big = std::fs::canonicalize(f.workspace.join("big.txt")).unwrap();
        let uri = url::Url::from_file_path(&big).unwrap().to_string();
        let mut args = vec!["serve"];
        if standalone {
            args.push("--standalone");
        }
        // Its stdout is a pipe nobody reads.
        let mut child =
            f.command(&args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = said.clone();
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let mut input = child.stdin.take().unwrap();
        let mut lines = vec![
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}"#.to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        ];
        for id in 1..=150 {
            lines.push(
                json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}}).to_string(),
            );
        }
        // Small lines: all fit in the pipes, whether or not the server reads them.
        input.write_all((lines.join("\n") + "\n").as_bytes()).unwrap();
        input.flush().unwrap();
        std::thread::sleep(Duration::from_secs(8));
        let pid = if standalone {
            child.id()
        } else {
            const SAID: &str = "served by this user's ragbox service pid=";
            let log = said.lock().unwrap().clone();
            let at = log.find(SAID).unwrap_or_else(|| panic!("not handed to the service: {log}"));
            log[at + SAID.len()..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
        };
        // Another agent's session is served meanwhile (by the same service).
        let mut other = serve(&f, &[], standalone);
        other.ping(1);
        let found = other.call_tool(2, "search_workspace", json!({"query": "pelican"}));
        assert_ne!(found["isError"], true, "{found}");
        let peak = peak_mib(pid);
        // 150 answers of 8 MiB each would be over 1.2 GB; a few at a time wait.
        assert!(peak < 500, "standalone={standalone}: the serving process reached {peak} MiB");
        drop(other);
        let _ = child.kill();
        let _ = child.wait();
        // Its client gone, the session ends (its answers waiting go with it): the service,
        // with no session left, leaves after its linger.
        if !standalone {
            wait_for("the flooding session's end", Duration::from_secs(30), || !alive(pid));
        }
    }
}

#[test]
#[cfg(target_os = "linux")]
fn the_service_takes_the_open_files_its_user_may_have() {
    use std::os::unix::process::CommandExt as _;
    let f = Fixture::cortext();
    let mut command = f.command(&["serve"]);
    // An agent started with a low soft limit (as many shells and launchers give): the service inherits it.
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        command.pre_exec(|| {
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            limit.rlim_cur = 256;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            Ok(())
        });
    }
    let mut raw = Raw::spawn_command(command);
    raw.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
    assert_eq!(raw.recv()["id"], 0);
    const SAID: &str = "served by this user's ragbox service pid=";
    let log = raw.stderr.lock().unwrap().clone();
    let at = log.find(SAID).unwrap_or_else(|| panic!("not handed to the service: {log}"));
    let pid: u32 = log[at + SAID.len()..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers[0], numbers[1], "the service's soft limit is its hard one: {line}");
    assert_ne!(numbers[0], "256", "{line}");
}

/// `tests/documents/make_hostile.py`'s DOCX of millions of empty paragraphs
/// (no text; ~150 MB to read), written to `to`.
fn empty_markup_docx(to: &Path) {
    let script = ragbox_tests::repo_root().join("tests/documents/make_hostile.py");
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("python3")
        .arg(&script)
        .arg(dir.path())
        .args(["--only", "empty-markup.docx"])
        .status()
        .unwrap();
    assert!(made.success(), "python3 {}", script.display());
    std::fs::copy(dir.path().join("empty-markup.docx"), to).unwrap();
}

#[test]
#[cfg(target_os = "linux")]
fn hostile_documents_are_read_a_few_at_a_time_for_the_whole_process() {
    for standalone in [false, true] {
        let f = Fixture::empty();
        let first = f.dir.path().join("hostile.docx");
        empty_markup_docx(&first);
        // Five agents in five workspaces each index one at the same time (a workspace's
        // writes take turns; the process's document readers are what is shared).
        // Standalone: one agent's five calls, one process.
        let workspaces: Vec<PathBuf> = (0..5).map(|i| f.dir.path().join(format!("project-{i}"))).collect();
        for (i, workspace) in workspaces.iter().enumerate() {
            std::fs::create_dir_all(workspace).unwrap();
            std::fs::copy(&first, workspace.join(format!("doc-{i}.docx"))).unwrap();
            std::fs::copy(&first, f.workspace.join(format!("doc-{i}.docx"))).unwrap();
        }
        let mut sessions: Vec<Raw> = match standalone {
            true => vec![serve(&f, &[], true)],
            false => workspaces
                .iter()
                .map(|w| {
                    let mut command = f.command(&["serve"]);
                    command.current_dir(w);
                    Raw::start_command(command)
                })
                .collect(),
        };
        let count = sessions.len();
        for i in 0..5u64 {
            let request = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                "params": {"name": "embed_document", "arguments": {"path": format!("doc-{i}.docx")}}});
            sessions[i as usize % count].send(&request.to_string());
        }
        for i in 0..5u64 {
            let reply = sessions[i as usize % count].recv_within(Duration::from_secs(300));
            assert_ne!(reply["result"]["isError"], true, "standalone={standalone}: {reply}");
            let said = reply["result"]["structuredContent"].to_string();
            assert!(said.contains("no text") || said.contains("memory"), "standalone={standalone}: {said}");
        }
        let pid = match standalone {
            true => sessions[0].pid(),
            false => {
                const SAID: &str = "served by this user's ragbox service pid=";
                let pids: Vec<u32> = sessions
                    .iter()
                    .map(|session| {
                        let log = session.stderr.lock().unwrap().clone();
                        let at = log.find(SAID).unwrap_or_else(|| panic!("not handed to the service: {log}"));
                        log[at + SAID.len()..]
                            .chars()
                            .take_while(char::is_ascii_digit)
                            .collect::<String>()
                            .parse()
                            .unwrap()
                    })
                    .collect();
                assert!(pids.iter().all(|p| *p == pids[0]), "five workspaces, one service: {pids:?}");
                pids[0]
            }
        };
        let peak = peak_mib(pid);
        eprintln!("standalone={standalone}: peak {peak} MiB");
        assert!(peak < 450, "standalone={standalone}: five documents read at once took the process to {peak} MiB");
    }
}

#[test]
#[cfg(unix)]
fn two_calls_asking_the_same_index_run_it_once() {
    for standalone in [false, true] {
        let f = Fixture::tldr(40);
        let mut sessions: Vec<Raw> = (0..if standalone { 1 } else { 2 }).map(|_| serve(&f, &[], standalone)).collect();
        let count = sessions.len();
        // A run is joined only while the server's watch of the workspace vouches nothing
        // changed since it started; the watch starts just after `initialize`.
        for session in &mut sessions {
            session.ping(0);
        }
        std::thread::sleep(Duration::from_millis(1500));
        for id in 1..=2u64 {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "embed_workspace", "arguments": {}}});
            sessions[id as usize % count].send(&request.to_string());
        }
        let reports: Vec<Value> = (1..=2u64)
            .map(|id| {
                sessions[id as usize % count].recv_within(Duration::from_secs(300))["result"]["structuredContent"]
                    .clone()
            })
            .collect();
        assert_eq!(reports[0]["embedded"], 40, "standalone={standalone}: {reports:?}");
        assert_eq!(reports[0], reports[1], "standalone={standalone}: the second asker takes the run's result");
        // One run, not two: the call history has one line.
        let history = std::fs::read_to_string(f.dir.path().join("calls").join("embed_workspace.jsonl")).unwrap();
        assert_eq!(history.lines().count(), 1, "standalone={standalone}: {history}");
    }
}

/// The per-user service's log in `f`'s service folder (its key's `.log`).
fn service_log(f: &Fixture) -> PathBuf {
    let entries = std::fs::read_dir(f.service_dir()).unwrap().flatten();
    let mut logs: Vec<PathBuf> =
        entries.map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "log")).collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.remove(0)
}

#[test]
#[cfg(target_os = "linux")]
fn the_services_log_stays_small_in_a_storm_and_is_started_again_past_its_size() {
    // Folders made and renamed away beside a watched workspace's files, faster than
    // their watches can be set: the file-watch library logs a line for most of them.
    let f = Fixture::cortext();
    let mut raw = Raw::start_with(&f, &["serve", "--watch"]);
    raw.ping(1);
    let renames = rename_storm(&f.workspace.join("storm"), Duration::from_secs(6));
    std::thread::sleep(Duration::from_secs(2));
    raw.ping(2);
    let log = std::fs::read_to_string(service_log(&f)).unwrap();
    let lines = log.lines().count();
    assert!(
        lines < 400,
        "{lines} lines in the service's log for {renames} renames:\n{}",
        &log[log.len().saturating_sub(3000)..]
    );
    drop(raw);

    // Past its size while it runs, the log starts again and the last one is kept beside it.
    let f = Fixture::tldr(30);
    let mut command = f.command(&["serve"]);
    command.env("RAGBOX_SERVICE_LOG_MAX", "16384").env("RAGBOX_LOG", "debug");
    let mut raw = Raw::spawn_command(command);
    raw.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
    assert_eq!(raw.recv()["id"], 0);
    let report = raw.call_tool(1, "embed_workspace", json!({}));
    assert_ne!(report["isError"], true, "{report}");
    for id in 2..40 {
        let found = raw.call_tool(id, "search", json!({"query": format!("compress files {id}")}));
        assert_ne!(found["isError"], true, "{found}");
    }
    let log = service_log(&f);
    let kept = log.with_extension("log.1");
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(kept.exists(), "no {} beside {}", kept.display(), log.display());
    // Started again at the line that passes the size: its 16 KiB and one line (a debug line can hold a result).
    assert!(size < 16384 + (64 << 10), "the log is {size} bytes, past its 16 KiB");
    let old = std::fs::metadata(&kept).unwrap().len();
    assert!(old < 16384 + (64 << 10), "the log kept beside it is {old} bytes");
}

#[test]
#[cfg(unix)]
fn a_client_with_many_calls_waiting_is_still_heard() {
    for standalone in [false, true] {
        let f = Fixture::tldr(30);
        let mut raw = serve(&f, &[], standalone);
        // More calls than run at once (they also take the workspace's writing turn one by one).
        let calls = 24u64;
        for id in 1..=calls {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "embed_document", "arguments": {"path": format!("pages/{}", page(&f, id))}}});
            raw.send(&request.to_string());
        }
        // A ping is answered before the calls waiting ahead of it, and a cancelled call never runs.
        raw.send(r#"{"jsonrpc":"2.0","id":"ping","method":"ping"}"#);
        raw.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": calls}}).to_string(),
        );
        let mut answered = Vec::new();
        let mut ping_after = None;
        while answered.len() < calls as usize - 1 {
            let reply = raw.recv_within(Duration::from_secs(120));
            if reply["id"] == "ping" {
                ping_after = Some(answered.len());
            } else {
                answered.push(reply["id"].as_u64().unwrap());
            }
        }
        assert!(
            ping_after.is_some_and(|n| n < calls as usize - 1),
            "standalone={standalone}: the ping waited for all the calls"
        );
        assert!(!answered.contains(&calls), "standalone={standalone}: the cancelled call ran");
        raw.silent_for(Duration::from_millis(500));
    }
}

/// The name of the `n`th page of a tldr fixture (1-based).
fn page(f: &Fixture, n: u64) -> String {
    let mut names: Vec<String> = std::fs::read_dir(f.workspace.join("pages"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names[(n as usize - 1) % names.len()].clone()
}
