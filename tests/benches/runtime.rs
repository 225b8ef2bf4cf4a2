//! Runtime benchmark: server start to `initialize` answered (with and without
//! the compile cache), per-call overhead of a trivial tool (in process and over
//! stdio), and the compile cache's effect on loading one component.
//!
//! Run with `make bench` (or `RAGBOX_BIN=target/release/ragbox cargo bench -p
//! ragbox-tests --bench runtime`); writes `bench/results/runtime.md`.

use ragbox::config::{Config, Origin};
use ragbox::corpus::{Corpora, SharedEmbedder};
use ragbox::embed::default_model_dir;
use ragbox::runtime::{Catalog, CompileCache, Found, Outcome, Request, Runner, Setup, Source, new_engine};
use ragbox::workspace::Workspaces;
use ragbox_tests::{Fixture, hostile_wasm, ragbox_bin, repo_root};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;

/// Median, p95 and mean of a sample, in milliseconds.
fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let p = |q: f64| ms(samples[((samples.len() - 1) as f64 * q).round() as usize]);
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64;
    format!("{:.3} | {:.3} | {:.3} | {}", p(0.5), p(0.95), mean, samples.len())
}

/// `ragbox serve` on the fixture with piped stdio and the given compile cache.
fn spawn_server(f: &Fixture, cache: &str) -> std::process::Child {
    f.command(&["serve"])
        .env("RAGBOX_COMPILE_CACHE", cache)
        .env("RAGBOX_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ragbox")
}

/// Spawns `ragbox serve` and times until the initialize response arrives.
fn time_to_initialize(f: &Fixture, cache: &str) -> Duration {
    let started = Instant::now();
    let mut child = spawn_server(f, cache);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{INIT}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let elapsed = started.elapsed();
    assert!(line.contains("\"serverInfo\""), "unexpected reply: {line}");
    drop(stdin);
    let _ = child.wait();
    elapsed
}

/// Round trips of a trivial `tools/call` over one server's stdio.
fn stdio_calls(f: &Fixture, n: usize) -> Vec<Duration> {
    let mut child = spawn_server(f, ragbox_tests::shared_cache_dir().to_str().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, "{INIT}").unwrap();
    out.read_line(&mut line).unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    let mut samples = Vec::with_capacity(n);
    for id in 1..=n + 20 {
        line.clear();
        let started = Instant::now();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"hostile","arguments":{{"op":"ok"}}}}}}"#
        )
        .unwrap();
        stdin.flush().unwrap();
        out.read_line(&mut line).unwrap();
        assert!(line.contains("\"isError\":false"), "{line}");
        if id > 20 {
            samples.push(started.elapsed()); // the first 20 warm up
        }
    }
    drop(stdin);
    let _ = child.wait();
    samples
}

fn main() {
    let bin = ragbox_bin();
    let fixture = Fixture::cortext().with_hostile();
    let scratch = tempfile::tempdir().unwrap();
    let warm_cache = scratch.path().join("cache");
    let warm = warm_cache.to_str().unwrap();
    let mut report = String::new();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    writeln!(report, "# Runtime benchmark\n").unwrap();
    writeln!(
        report,
        "- command: `make bench` (`RAGBOX_BIN={} cargo bench -p ragbox-tests --bench runtime`)",
        bin.display()
    )
    .unwrap();
    writeln!(report, "- machine: {cpu}, {cores} cores; {rustc}; wasmtime 48.0.8; rmcp 3.9.0").unwrap();
    writeln!(
        report,
        "- binary: {} ({:.1} MiB)",
        bin.display(),
        std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0) as f64 / (1 << 20) as f64
    )
    .unwrap();
    writeln!(
        report,
        "- tools loaded: the {} built-in tools + hostile (the user's tools folder), and the built-in extractor\n",
        ragbox::builtins::BUILTIN_TOOLS.len()
    )
    .unwrap();
    writeln!(report, "Times in ms: median | p95 | mean | samples\n").unwrap();
    writeln!(report, "| measurement | median | p95 | mean | n |\n|---|---|---|---|---|").unwrap();

    // Start-up. Prime the warm cache once, then alternate cold and warm runs so
    // machine noise hits both alike (6 pairs: a cold start compiles every
    // built-in component, seconds each time).
    time_to_initialize(&fixture, warm);
    let (mut cold, mut hot) = (Vec::new(), Vec::new());
    for _ in 0..6 {
        cold.push(time_to_initialize(&fixture, "off"));
        hot.push(time_to_initialize(&fixture, warm));
    }
    writeln!(report, "| spawn → initialize answered, no compile cache | {} |", summary(cold)).unwrap();
    writeln!(report, "| spawn → initialize answered, warm compile cache | {} |", summary(hot)).unwrap();

    // One component: Cranelift compile vs loading the cached artifact.
    let engine = new_engine().unwrap();
    let wasm = std::fs::read(hostile_wasm()).unwrap();
    let (mut compile, mut cached) = (Vec::new(), Vec::new());
    let no_cache = CompileCache::new(&engine, None);
    let disk = CompileCache::new(&engine, Some(scratch.path().join("inproc")));
    disk.load(&engine, &wasm, "bench", "hostile").unwrap();
    for _ in 0..10 {
        let t = Instant::now();
        no_cache.load(&engine, &wasm, "bench", "hostile").unwrap();
        compile.push(t.elapsed());
        let t = Instant::now();
        disk.load(&engine, &wasm, "bench", "hostile").unwrap();
        cached.push(t.elapsed());
    }
    writeln!(report, "| load hostile.wasm ({} KiB): Cranelift compile | {} |", wasm.len() / 1024, summary(compile))
        .unwrap();
    writeln!(report, "| load hostile.wasm: from compile cache | {} |", summary(cached)).unwrap();

    // Per-call overhead in process: fresh store + WASI context + instantiate + call.
    let config = Config::default();
    let limits = config.limits_for("hostile", false);
    let tool = fixture.config_dir.join("tools/hostile.wasm");
    let found = vec![Found {
        source: Source::File(tool.clone()),
        origin: Origin::User,
        bytes: Ok(std::fs::read(&tool).unwrap()),
    }];
    let catalog = Catalog::load(&engine, &disk, &[], found, &limits, &|_, _, _| Ok(()), &|_| true);
    assert!(catalog.get("hostile").is_some(), "hostile loaded");
    let workspaces = Workspaces::new(&fixture.workspace, &[]).unwrap();
    let embedder = Arc::new(SharedEmbedder::new(default_model_dir().expect("a home folder or RAGBOX_MODEL")));
    let runner =
        Runner::new(Setup { config, workspaces, catalog }, None, Arc::new(Corpora::new(embedder, Default::default())));
    let arguments = serde_json::json!({"op": "ok"}).as_object().cloned().unwrap();
    let mut calls = Vec::new();
    for i in 0..2100 {
        let t = Instant::now();
        let outcome = runner.call("hostile", arguments.clone(), Request::default()).unwrap().outcome;
        if i >= 100 {
            calls.push(t.elapsed());
        }
        assert!(matches!(outcome, Outcome::Ok(ref s) if s == "ok"), "{outcome:?}");
    }
    writeln!(report, "| trivial call in process (fresh sandbox per call) | {} |", summary(calls)).unwrap();
    writeln!(report, "| trivial `tools/call` round trip over stdio | {} |", summary(stdio_calls(&fixture, 1000)))
        .unwrap();

    let out = repo_root().join("bench/results/runtime.md");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, &report).unwrap();
    print!("{report}");
    println!("\nwritten to {}", out.display());
}
