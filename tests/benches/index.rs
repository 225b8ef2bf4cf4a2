//! Index build benchmark: `ragbox index` on the SciFact corpus (5,183
//! abstracts, one Markdown file each), end to end through the sandboxed
//! embed_workspace component; then the same command on the unchanged corpus
//! (target: under 2 s), then after editing one file. Wall time and peak RSS
//! (from `/usr/bin/time -v`) per run.
//!
//! Run with `make bench` (or `RAGBOX_BIN=target/release/ragbox cargo bench -p
//! ragbox-tests --bench index`); `RAGBOX_BENCH_DOCS=500` indexes a subset.
//! Writes `bench/results/index.md`.

use ragbox_tests::{cpu_model, ragbox_bin, repo_root, shared_data};
use serde_json::Value;
use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

/// One `ragbox index` run: wall seconds, peak RSS in MiB, its JSON report.
fn index(workspace: &std::path::Path) -> (f64, f64, Value) {
    let started = Instant::now();
    let out = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(ragbox_bin())
        .args(["index", "--json", "--workspace"])
        .arg(workspace)
        .env("RAGBOX_LOG", "warn")
        .output()
        .expect("run /usr/bin/time -v ragbox index (GNU time is needed for peak RSS)");
    let wall = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ragbox index failed: {stderr}");
    let rss_kib: f64 = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes): "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0);
    let report: Value = serde_json::from_slice(&out.stdout).expect("index JSON");
    (wall, rss_kib / 1024.0, report)
}

fn main() {
    let limit: usize = std::env::var("RAGBOX_BENCH_DOCS").ok().and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
    let corpus = std::fs::read_to_string(shared_data().join("scifact/corpus.jsonl")).expect("SciFact corpus");
    let workspace = repo_root().join("target/bench/scifact-workspace");
    let _ = std::fs::remove_dir_all(&workspace);
    std::fs::create_dir_all(workspace.join("docs")).unwrap();
    let mut docs = 0;
    let mut bytes = 0;
    for line in corpus.lines().take(limit) {
        let doc: Value = serde_json::from_str(line).expect("corpus line");
        let text = format!("# {}\n\n{}\n", doc["title"].as_str().unwrap_or(""), doc["text"].as_str().unwrap_or(""));
        bytes += text.len();
        std::fs::write(workspace.join("docs").join(format!("{}.md", doc["_id"].as_str().unwrap())), text).unwrap();
        docs += 1;
    }

    let (build, build_rss, first) = index(&workspace);
    assert_eq!(first["embedded"].as_u64(), Some(docs as u64), "{first}");
    let (rerun, rerun_rss, second) = index(&workspace);
    assert_eq!(second["embedded"].as_u64(), Some(0), "{second}");
    let edited = workspace.join("docs").join(format!("{}.md", corpus_first_id(&corpus)));
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str("\nAn added sentence about the findings.\n");
    std::fs::write(&edited, text).unwrap();
    let (one, one_rss, third) = index(&workspace);
    assert_eq!(third["embedded"].as_u64(), Some(1), "{third}");

    let chunks = first["chunks"].as_u64().unwrap_or(0);
    let cpu = cpu_model();
    let mut report = String::new();
    writeln!(report, "# Index build: SciFact through `ragbox index`\n").unwrap();
    writeln!(
        report,
        "Command: `RAGBOX_BIN=target/release/ragbox cargo bench -p ragbox-tests --bench index` (part of `make bench`)."
    )
    .unwrap();
    writeln!(
        report,
        "Machine: {cpu}, {} threads available. Release binary; model all-MiniLM-L6-v2 on the CPU.\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    )
    .unwrap();
    writeln!(report, "{docs} documents ({:.1} MB of Markdown) → {chunks} chunks.\n", bytes as f64 / 1e6).unwrap();
    writeln!(report, "| run | wall | docs/s | peak RSS |\n|---|---|---|---|").unwrap();
    writeln!(report, "| first build | {build:.1} s | {:.1} | {build_rss:.0} MiB |", docs as f64 / build).unwrap();
    writeln!(report, "| re-run, nothing changed (target < 2 s) | {rerun:.2} s | — | {rerun_rss:.0} MiB |").unwrap();
    writeln!(report, "| re-run after editing one file | {one:.2} s | — | {one_rss:.0} MiB |").unwrap();
    print!("{report}");
    let out = repo_root().join("bench/results/index.md");
    std::fs::write(&out, report).expect("write bench/results/index.md");
    eprintln!("wrote {}", out.display());
}

fn corpus_first_id(corpus: &str) -> String {
    let first: Value = serde_json::from_str(corpus.lines().next().expect("a document")).expect("JSON");
    first["_id"].as_str().expect("_id").to_string()
}
