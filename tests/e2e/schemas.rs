//! Every built-in tool's contract as `tools/list` shows it with
//! `--output-schemas` (title, description, input and output schemas,
//! annotations), against the snapshots
//! in `tests/snapshots/tools/`: a changed contract is a visible diff.
//! `RAGBOX_BLESS=1 cargo test -p ragbox-tests --test e2e schemas` rewrites them.

use ragbox_tests::{Fixture, repo_root};
use serde_json::{Value, json};

#[tokio::test]
async fn every_tool_contract_matches_its_snapshot() {
    let f = Fixture::empty();
    let client = f.connect_with(&["serve", "--output-schemas"]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    client.cancel().await.ok();
    let dir = repo_root().join("tests/snapshots/tools");
    let bless = std::env::var_os("RAGBOX_BLESS").is_some();
    let mut stale = Vec::new();
    let mut names = Vec::new();
    for tool in &tools {
        let contract = serde_json::to_value(tool).expect("a tool serialises");
        let pretty = serde_json::to_string_pretty(&contract).expect("JSON") + "\n";
        let file = dir.join(format!("{}.json", tool.name));
        names.push(tool.name.to_string());
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, &pretty).unwrap();
            continue;
        }
        let snapshot = std::fs::read_to_string(&file).unwrap_or_default();
        if snapshot != pretty {
            stale.push(format!("{}:\n--- snapshot\n{snapshot}\n+++ now\n{pretty}", file.display()));
        }
    }
    // A snapshot without a tool is a tool that went away.
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".json").map(str::to_string)).collect())
        .unwrap_or_default();
    on_disk.sort();
    names.sort();
    assert_eq!(on_disk, names, "tests/snapshots/tools/ names other tools than tools/list");
    assert!(stale.is_empty(), "tool contracts changed (RAGBOX_BLESS=1 rewrites the snapshots):\n{}", stale.join("\n"));
    // The snapshots are real contracts, not empty files.
    let search: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("search.json")).unwrap()).unwrap();
    assert_eq!(search["inputSchema"]["required"], json!(["query"]));
}
