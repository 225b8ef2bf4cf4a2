//! Retrieval quality on SciFact (BEIR): nDCG@10 and recall@50 over the 300
//! test claims for ragbox's `search` tool in fulltext, semantic and hybrid
//! mode, driven through MCP stdio like an agent. Published figures for
//! comparison: BM25 0.665, all-MiniLM-L6-v2 0.645 (BEIR / SBERT tables).
//!
//! The corpus (5,183 abstracts, `# title` + text, one Markdown file each) is
//! indexed once into `target/bench/scifact-retrieval`; later runs only catch up.
//! Run with `make bench`, or `RAGBOX_BIN=target/release/ragbox cargo bench -p
//! ragbox-tests --bench retrieval`. Writes `bench/results/retrieval.md`.

use ragbox_tests::{Client, call, cpu_model, ragbox_bin, repo_root, shared_data, text};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::Instant;

const MODES: [&str; 3] = ["fulltext", "semantic", "hybrid"];
/// Chunks fetched per query (the tool's maximum); deduplicated to documents.
const FETCH: u32 = 50;

fn jsonl(rel: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(shared_data().join("scifact").join(rel)).expect("SciFact data");
    text.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect()
}

/// nDCG@10 with binary relevance.
fn ndcg10(ranked: &[String], relevant: &HashSet<String>) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, d)| relevant.contains(*d))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(10)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

fn recall(ranked: &[String], relevant: &HashSet<String>) -> f64 {
    ranked.iter().filter(|d| relevant.contains(*d)).count() as f64 / relevant.len().max(1) as f64
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let workspace = repo_root().join("target/bench/scifact-retrieval");
    let docs = workspace.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for doc in jsonl("corpus.jsonl") {
        let path = docs.join(format!("{}.md", doc["_id"].as_str().unwrap()));
        let body = format!("# {}\n\n{}\n", doc["title"].as_str().unwrap_or(""), doc["text"].as_str().unwrap_or(""));
        if std::fs::read_to_string(&path).ok().as_deref() != Some(body.as_str()) {
            std::fs::write(&path, body).unwrap();
        }
    }
    let started = Instant::now();
    let status = std::process::Command::new(ragbox_bin())
        .args(["index", "--workspace"])
        .arg(&workspace)
        .status()
        .expect("run ragbox index");
    assert!(status.success(), "ragbox index failed");
    eprintln!("index up to date in {:.0} s", started.elapsed().as_secs_f64());

    let qrels = std::fs::read_to_string(shared_data().join("scifact/qrels/test.tsv")).expect("qrels");
    let mut relevant: HashMap<String, HashSet<String>> = HashMap::new();
    for line in qrels.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() >= 3 && cols[2].trim() != "0" {
            relevant.entry(cols[0].to_string()).or_default().insert(cols[1].to_string());
        }
    }
    let queries: Vec<(String, String)> = jsonl("queries.jsonl")
        .into_iter()
        .filter_map(|q| {
            let id = q["_id"].as_str()?.to_string();
            relevant.contains_key(&id).then(|| (id, q["text"].as_str().unwrap_or("").to_string()))
        })
        .collect();

    let mut cmd = tokio::process::Command::new(ragbox_bin());
    cmd.args(["serve", "--workspace"]).arg(&workspace).env("RAGBOX_LOG", "warn");
    let transport = TokioChildProcess::builder(cmd).stderr(std::process::Stdio::null()).spawn().expect("spawn").0;
    let client: Client = ().serve(transport).await.expect("initialize");

    let mut rows = Vec::new();
    for mode in MODES {
        let (mut ndcg, mut rec) = (0.0, 0.0);
        let mut latencies = Vec::new();
        for (id, query) in &queries {
            let t = Instant::now();
            let r = call(&client, "search", json!({ "query": query, "search_type": mode, "limit": FETCH })).await;
            latencies.push(t.elapsed().as_secs_f64() * 1000.0);
            let body = r.structured_content.clone().unwrap_or_else(|| panic!("{mode} search failed: {}", text(&r)));
            let mut ranked: Vec<String> = Vec::new();
            for hit in body["results"].as_array().unwrap() {
                let path = hit["source"]["filepath"].as_str().unwrap();
                let doc = path.trim_start_matches("docs/").trim_end_matches(".md").to_string();
                if !ranked.contains(&doc) {
                    ranked.push(doc);
                }
            }
            ndcg += ndcg10(&ranked, &relevant[id]);
            rec += recall(&ranked, &relevant[id]);
        }
        latencies.sort_by(f64::total_cmp);
        let n = queries.len() as f64;
        let p50 = latencies[latencies.len() / 2];
        let p95 = latencies[(latencies.len() * 95 / 100).min(latencies.len() - 1)];
        eprintln!("{mode}: nDCG@10 {:.4}", ndcg / n);
        rows.push((mode, ndcg / n, rec / n, p50, p95));
    }
    client.cancel().await.ok();

    let mut report = String::new();
    writeln!(report, "# Retrieval quality: SciFact (BEIR), {} test claims\n", queries.len()).unwrap();
    writeln!(report, "Command: `RAGBOX_BIN=target/release/ragbox cargo bench -p ragbox-tests --bench retrieval` (part of `make bench`).").unwrap();
    writeln!(
        report,
        "Machine: {}, {} threads. Model all-MiniLM-L6-v2; 5,183 abstracts as `# title` + text, chunked at 240 tokens; \
         each query asks the `search` tool for {FETCH} chunks over MCP stdio, deduplicated to documents.\n",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    )
    .unwrap();
    writeln!(report, "| mode | nDCG@10 | target | recall@50 docs | query p50 | query p95 |\n|---|---|---|---|---|---|")
        .unwrap();
    for (mode, ndcg, rec, p50, p95) in &rows {
        let target = match *mode {
            "fulltext" => "≥ 0.66 (BM25 published 0.665)",
            "semantic" => "≥ 0.64 (model published 0.645)",
            _ => "above both; aim 0.70",
        };
        writeln!(report, "| {mode} | {ndcg:.4} | {target} | {rec:.4} | {p50:.1} ms | {p95:.1} ms |").unwrap();
    }
    print!("{report}");
    let out = repo_root().join("bench/results/retrieval.md");
    std::fs::write(&out, report).expect("write bench/results/retrieval.md");
    eprintln!("wrote {}", out.display());
}
