//! The per-user service: every stdio `serve` of one user (and environment)
//! hands its client to one process, which serves each session as a process
//! of its own would, and leaves after the last.

use ragbox_tests::{Fixture, Raw, alive, tree};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The pid of the service that took `raw`'s session, as the relay's log says.
fn service_pid(raw: &Raw) -> u32 {
    const SAID: &str = "served by this user's ragbox service pid=";
    let started = Instant::now();
    loop {
        let log = raw.stderr.lock().unwrap().clone();
        if let Some(at) = log.find(SAID) {
            let digits: String = log[at + SAID.len()..].chars().take_while(char::is_ascii_digit).collect();
            return digits.parse().unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the session was not handed to the service: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The next reply within 30 s; else the test fails with the relay's log.
fn recv_or_say(raw: &mut Raw) -> Value {
    let stderr = raw.stderr.clone();
    let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| raw.recv_within(Duration::from_secs(30))));
    reply.unwrap_or_else(|_| panic!("no reply; the relay's log:\n{}", stderr.lock().unwrap()))
}

/// The paths a `search_workspace` result names.
fn paths(result: &Value) -> Vec<String> {
    let results = result["structuredContent"]["results"].as_array().cloned().unwrap_or_default();
    results.iter().map(|r| r["path"].as_str().unwrap_or_default().to_string()).collect()
}

#[test]
#[cfg(target_os = "linux")]
fn agents_share_one_service_and_each_session_keeps_its_workspace() {
    let f = Fixture::cortext();
    let other = f.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("zebra.md"), "Zebras graze on the savanna. JWT is not here.\n").unwrap();
    let indexed = f.command(&["index"]).output().unwrap();
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));

    let mut a = Raw::start(&f);
    let mut b = Raw::start(&f);
    let mut c = Raw::start_with(&f, &["serve", "-w", other.to_str().unwrap()]);
    let service = service_pid(&a);
    assert_eq!((service_pid(&b), service_pid(&c)), (service, service));
    assert!(![a.pid(), b.pid(), c.pid()].contains(&service));

    // One model for both sessions on the indexed workspace.
    for (raw, id) in [(&mut a, 1), (&mut b, 2)] {
        let found =
            raw.call_tool(id, "search", json!({"query": "which tokens does the mobile API use", "mode": "semantic"}));
        assert_ne!(found["isError"], true, "{found}");
        assert!(found.to_string().contains("001-auth-ideas"), "{found}");
    }
    // Each session searches its own workspace, and another only where the user allows it.
    let own = c.call_tool(3, "search_workspace", json!({"query": "jwt"}));
    assert_eq!(paths(&own), ["zebra.md"], "{own}");
    let theirs = a.call_tool(4, "search_workspace", json!({"query": "jwt"}));
    assert!(!paths(&theirs).contains(&"zebra.md".to_string()) && paths(&theirs).len() >= 4, "{theirs}");
    let refused = a.call_tool(5, "search_workspace", json!({"query": "zebra", "workspace_path": other}));
    assert_eq!(refused["isError"], true, "{refused}");

    // `ragbox doctor` tells where it is.
    let doctor = f.command(&["doctor"]).output().unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("ok      service running at") && said.contains(".log"), "{said}");

    // An agent that goes away ends its session only.
    drop(a);
    b.ping(6);
    c.ping(7);
    assert!(alive(service));

    // --standalone serves in the process the agent started.
    let mut own = Raw::start_standalone(&f);
    own.ping(8);
    assert!(!own.stderr.lock().unwrap().contains("served by this user's ragbox service"));
}

#[test]
#[cfg(target_os = "linux")]
fn the_service_leaves_after_its_last_session_and_a_killed_ones_sessions_go_on() {
    let f = Fixture::cortext().with_hostile();
    let mut a = Raw::start(&f);
    let first = service_pid(&a);
    a.ping(1);
    drop(a);
    // The fixture's linger is 2 s.
    let started = Instant::now();
    while alive(first) {
        assert!(started.elapsed() < Duration::from_secs(15), "the service stayed after its last session");
        std::thread::sleep(Duration::from_millis(50));
    }
    let sockets = std::fs::read_dir(f.service_dir()).unwrap().flatten();
    assert!(!sockets.into_iter().any(|e| e.path().extension().is_some_and(|x| x == "sock")), "socket left behind");

    // A service killed outright (as closing the terminal that started it would): its agents'
    // sessions go on, on a new one; the call it was running gets an error.
    let mut b = Raw::start(&f);
    let second = service_pid(&b);
    assert_ne!(second, first);
    // An answer whose result has keys of a request's name is still an answer: not errored again below.
    let context = b.call_tool(10, "get_context", json!({"topic": "jwt"}));
    assert!(context["structuredContent"]["method"].is_string(), "{context}");
    b.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hostile","arguments":{"op":"loop"}}}"#);
    std::thread::sleep(Duration::from_millis(300));
    std::process::Command::new("kill").args(["-9", &second.to_string()]).status().unwrap();
    let failed = recv_or_say(&mut b);
    assert_eq!(failed["id"], 2, "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("started again"), "{failed}");
    b.ping(3);
    const ON: &str = "the session goes on with a new ragbox service pid=";
    let log = b.stderr.lock().unwrap().clone();
    let at = log.find(ON).unwrap_or_else(|| panic!("{log}")) + ON.len();
    let third: u32 = log[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap();
    assert!(third != second && alive(third));
    let tools = b.call_tool(4, "search_workspace", json!({"query": "jwt"}));
    assert!(paths(&tools).len() >= 4, "{tools}");
    // The next agent's server joins it.
    let mut c = Raw::start(&f);
    assert_eq!(service_pid(&c), third);
    c.ping(5);
}

#[test]
#[cfg(unix)]
fn a_service_folder_that_is_not_private_is_not_used() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = Fixture::cortext();
    let open = f.dir.path().join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let elsewhere = f.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let link = f.dir.path().join("link");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    for (dir, why) in [(&open, "others may open"), (&link, "is not a folder")] {
        let mut command = f.command(&["serve"]);
        command.env("RAGBOX_SERVICE_DIR", dir);
        let mut raw = Raw::spawn_command(command);
        raw.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
        assert_eq!(raw.recv()["result"]["serverInfo"]["name"], "ragbox");
        raw.ping(1);
        let log = raw.stderr.lock().unwrap().clone();
        assert!(log.contains("serving in this process") && log.contains(why), "{log}");
        assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0, "something was made in {}", dir.display());
    }
}

#[test]
#[cfg(target_os = "linux")]
fn watching_sessions_on_one_workspace_index_it_once() {
    let f = Fixture::cortext();
    let _agents: Vec<Raw> = (0..3).map(|_| Raw::start_with(&f, &["serve", "--watch"])).collect();
    let log = || {
        let logs = std::fs::read_dir(f.service_dir()).unwrap().flatten();
        let log = logs.map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "log")).unwrap();
        std::fs::read_to_string(log).unwrap()
    };
    let started = Instant::now();
    let runs = loop {
        let runs: Vec<String> = log()
            .lines()
            .filter(|l| l.contains("--watch: index updated") && l.contains("full=true"))
            .map(String::from)
            .collect();
        if runs.len() == 3 {
            break runs;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{}", log());
        std::thread::sleep(Duration::from_millis(50));
    };
    // One catch-up embeds the files; the others take its result while it runs
    // (joined) or find them done after it.
    let embedded: Vec<bool> =
        runs.iter().filter(|l| !l.contains("joined=true")).map(|l| !l.contains(" embedded=0 ")).collect();
    assert_eq!(embedded.first(), Some(&true), "{runs:#?}");
    assert!(!embedded[1..].contains(&true), "a catch-up embedded again: {runs:#?}");
}

#[test]
#[cfg(target_os = "linux")]
fn a_sessions_log_reaches_its_own_agent_only() {
    let f = Fixture::cortext().with_hostile();
    let mut a = Raw::start(&f);
    let b = Raw::start(&f);
    assert_eq!(service_pid(&a), service_pid(&b));
    let forged = a.call_tool(1, "hostile", json!({"op": "log_forge"}));
    assert_ne!(forged["isError"], true, "{forged}");
    let started = Instant::now();
    while !a.stderr.lock().unwrap().contains("honest line\\nFORGED") {
        assert!(started.elapsed() < Duration::from_secs(10), "{}", a.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    let theirs = b.stderr.lock().unwrap().clone();
    assert!(!theirs.contains("FORGED"), "another session's log reached this agent: {theirs}");
    assert!(!a.stderr.lock().unwrap().contains('\u{1e}'), "a log line's mark reached stderr");
    a.ping(2);
}

#[test]
#[cfg(target_os = "linux")]
fn a_stopped_service_is_passed_by_and_only_its_own_old_files_are_tidied() {
    let f = Fixture::cortext();
    // The user's own files in the folder they named, old enough to look stale.
    let dir = f.service_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    for name in ["install.log", "app.lock", "0123456789abcdef.log"] {
        std::fs::write(dir.join(name), "x").unwrap();
        let touched = std::process::Command::new("touch").args(["-d", "10 days ago"]).arg(dir.join(name)).status();
        assert!(touched.unwrap().success());
    }
    let mut command = f.command(&["serve"]);
    // A linger that is no number of seconds is the default's.
    command.env("RAGBOX_SERVICE_LINGER", "nan");
    let mut a = Raw::spawn_command(command);
    a.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
    assert_eq!(a.recv()["id"], 0);
    let service = service_pid(&a);
    assert!(dir.join("install.log").exists() && dir.join("app.lock").exists(), "the user's files were removed");
    assert!(!dir.join("0123456789abcdef.log").exists(), "a gone service's old log was kept");

    // Stopped: the next agent's server does not wait on it.
    let kill = |signal: &str| std::process::Command::new("kill").args([signal, &service.to_string()]).status().unwrap();
    kill("-STOP");
    let mut command = f.command(&["serve"]);
    command.env("RAGBOX_SERVICE_LINGER", "nan");
    let started = Instant::now();
    let mut b = Raw::spawn_command(command);
    b.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
    let init = b.recv_within(Duration::from_secs(30));
    kill("-CONT");
    assert_eq!(init["id"], 0);
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    let log = b.stderr.lock().unwrap().clone();
    assert!(log.contains("serving in this process") && log.contains("stopped?"), "{log}");
    a.ping(1);
    b.ping(2);
    // Its linger is the default's two minutes.
    kill("-KILL");
}

#[test]
#[cfg(target_os = "linux")]
fn a_long_lived_services_log_is_kept_to_a_size() {
    let f = Fixture::cortext();
    let mut a = Raw::start(&f);
    service_pid(&a);
    let logs = std::fs::read_dir(f.service_dir()).unwrap().flatten();
    let log = logs.map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "log")).unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, &vec![b'x'; 9 << 20]).unwrap();
    let mut b = Raw::start(&f);
    b.ping(1);
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(size < 1 << 20, "the log is {size} bytes");
    // Written on from where it starts again, not past a hole.
    std::thread::sleep(Duration::from_millis(200));
    let text = std::fs::read(&log).unwrap();
    assert!(text.contains(&b'\n') && !text.contains(&0), "{}", String::from_utf8_lossy(&text));
    a.ping(2);
}

#[test]
#[cfg(target_os = "linux")]
fn a_clones_data_dir_reaches_no_further_than_its_own_session() {
    use std::os::unix::fs::symlink;
    let f = Fixture::cortext();
    let indexed = f.command(&["index"]).output().unwrap();
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    let mut clean = Raw::start(&f);
    let service = service_pid(&clean);
    let out = f.dir.path().join("outside");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("secret.txt"), "TOP SECRET outside the workspace\n").unwrap();
    let store = f.workspace.join(".ragbox/store.redb");
    type Plant = fn(&std::path::Path, &std::path::Path, &std::path::Path);
    let cases: [(&str, Plant); 9] = [
        ("a store linked out", |d, out, _| symlink(out.join("x.redb"), d.join("store.redb")).unwrap()),
        ("a keyword index linked out", |d, out, _| symlink(out, d.join("keyword")).unwrap()),
        ("vectors linked out", |d, out, _| symlink(out, d.join("vectors")).unwrap()),
        ("a config of /dev/zero", |d, _, _| symlink("/dev/zero", d.join("config.toml")).unwrap()),
        ("a config linked to a secret", |d, out, _| symlink(out.join("secret.txt"), d.join("config.toml")).unwrap()),
        ("an owner stamp of /dev/zero", |d, _, _| symlink("/dev/zero", d.join("owner")).unwrap()),
        ("a store that is a FIFO", |d, _, _| {
            assert!(std::process::Command::new("mkfifo").arg(d.join("store.redb")).status().unwrap().success())
        }),
        ("a lock that is a FIFO", |d, _, _| {
            assert!(std::process::Command::new("mkfifo").arg(d.join("lock")).status().unwrap().success())
        }),
        // Made for another folder (this user's own, indexed): shipped, it is not this one's.
        ("a store made elsewhere", |d, _, store| {
            std::fs::copy(store, d.join("store.redb")).unwrap();
        }),
    ];
    let before = tree(&out);
    for (i, (case, plant)) in cases.into_iter().enumerate() {
        let clone = f.dir.path().join(format!("clone{i}"));
        std::fs::create_dir_all(clone.join(".ragbox")).unwrap();
        std::fs::write(clone.join("notes.md"), "Zebras and JWT in a cloned repository.\n").unwrap();
        plant(&clone.join(".ragbox"), &out, &store);
        let args = ["serve", "-w", clone.to_str().unwrap()];
        if case.starts_with("a config") {
            // A config that is not a plain file stops the server, with the fix, in either mode.
            let mut refused = Raw::spawn(&f, &args);
            refused.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
            let started = Instant::now();
            while !refused.stderr.lock().unwrap().contains("ragbox: error:") {
                assert!(started.elapsed() < Duration::from_secs(20), "{case}: {}", refused.stderr.lock().unwrap());
                std::thread::sleep(Duration::from_millis(20));
            }
            let said = refused.stderr.lock().unwrap().clone();
            assert!(said.contains(".ragbox/config.toml") && said.contains("doctor --reset"), "{case}: {said}");
            assert!(!said.contains("TOP SECRET"), "{case}: {said}");
            clean.ping(100 + i as u64);
            continue;
        }
        let mut session = Raw::start_with(&f, &args);
        assert_eq!(service_pid(&session), service, "{case}");
        let id = 10 * i as u64;
        let semantic = session.call_tool(id + 1, "search", json!({"query": "auth ideas", "search_type": "semantic"}));
        let said = semantic.to_string();
        assert!(!said.contains("TOP SECRET") && !said.contains("auth-ideas"), "{case}: {said}");
        let keyword = session.call_tool(id + 2, "search_workspace", json!({"query": "zebras"}));
        assert_eq!(paths(&keyword), ["notes.md"], "{case}: {keyword}");
        // The other agent's session, and the service, go on as before.
        let theirs = clean.call_tool(id + 3, "search", json!({"query": "auth ideas", "search_type": "semantic"}));
        assert!(theirs.to_string().contains("001-auth-ideas"), "{case}: {theirs}");
        assert_eq!(tree(&out), before, "{case}: something outside changed");
        drop(session);
    }
    assert!(alive(service));
}
