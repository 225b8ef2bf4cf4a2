//! Code is never cut mid-function (seed 004): real Rust and Python sources,
//! searched by what a function does, come back as whole functions, byte for
//! byte as they stand in the file, and a file's first chunk carries the
//! symbols it defines. (tests/python checks every returned Python chunk
//! with Python's own parser.)

use ragbox_tests::{Client, Fixture, ok, repo_root, shared_data};
use serde_json::{Value, json};

const PY_GARDENER: &str = "skills/wshobson+agents/tools/doc_gardener.py";
const PY_VALIDATOR: &str =
    "skills/K-Dense-AI+claude-scientific-skills/scientific-skills/pptx/scripts/office/validators/base.py";

fn workspace() -> Fixture {
    let f = Fixture::empty();
    let copy = |from: std::path::PathBuf, to: &str| {
        let text = std::fs::read_to_string(&from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        f.write(to, &text);
    };
    copy(repo_root().join("guest-tools/sdk/src/indexing/chunk.rs"), "src/chunk.rs");
    copy(shared_data().join(PY_GARDENER), "tools/doc_gardener.py");
    copy(shared_data().join(PY_VALIDATOR), "tools/validators/base.py");
    f
}

/// Results of a search_semantic call: (source_path, text).
async fn search(client: &Client, query: &str, n: u64) -> Vec<(String, String)> {
    let r = ok(client, "search_semantic", json!({ "query": query, "n_results": n })).await;
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h: &Value| (h["source_path"].as_str().unwrap().to_string(), h["text"].as_str().unwrap().to_string()))
        .collect()
}

/// The source of a Python `def` from its line to the next line indented no deeper.
fn python_def<'a>(file: &'a str, signature: &str) -> &'a str {
    let start = file.find(signature).unwrap();
    let indent = file[..start].rsplit('\n').next().unwrap().len();
    let start = start - indent;
    let mut end = start + file[start..].find('\n').unwrap() + 1;
    for line in file[end..].split_inclusive('\n') {
        let depth = line.len() - line.trim_start().len();
        if !line.trim().is_empty() && depth <= indent {
            break;
        }
        end += line.len();
    }
    file[start..end].trim_end()
}

#[tokio::test(flavor = "multi_thread")]
async fn code_is_found_by_purpose_and_returned_in_whole_functions() {
    let f = workspace();
    let client = f.connect().await;
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!(r["embedded"], 3, "{r}");

    let read = |rel: &str| std::fs::read_to_string(f.workspace.join(rel)).unwrap();
    let (rust, gardener, validator) =
        (read("src/chunk.rs"), read("tools/doc_gardener.py"), read("tools/validators/base.py"));

    // A Rust function with its doc comment, whole.
    let hits = search(&client, "cut a long block into overlapping windows that start at word boundaries", 3).await;
    let start = rust.find("/// Windows of at most").unwrap();
    let end = start + rust[start..].find("\n}\n").unwrap() + 2;
    assert!(hits.iter().any(|(p, t)| p == "src/chunk.rs" && t.contains(&rust[start..end])), "fn windows: {hits:?}");

    // A top-level Python function, whole.
    let hits = search(&client, "find markdown links that point at files which do not exist", 3).await;
    let whole = python_def(&gardener, "def check_dead_links(");
    assert!(hits.iter().any(|(p, t)| p == "tools/doc_gardener.py" && t.contains(whole)), "{hits:?}");

    // A method of an 800-line class: split into its members, each whole.
    let hits = search(&client, "check that every XML element id is unique across the document parts", 5).await;
    let whole = python_def(&validator, "def validate_unique_ids(self):");
    assert!(hits.iter().any(|(p, t)| p == "tools/validators/base.py" && t.contains(whole)), "{hits:?}");

    // `search` answers once per file with the file's best chunks, whole, and
    // their lines: each `a-b` range is those lines of the file, ⋮ between ranges.
    let query = "cut a long block into overlapping windows that start at word boundaries";
    for mode in ["semantic", "fulltext", "hybrid"] {
        let r = ok(&client, "search", json!({ "query": query, "search_type": mode, "limit": 3 })).await;
        let results = r["results"].as_array().unwrap();
        let paths: Vec<&str> = results.iter().map(|x| x["source"]["filepath"].as_str().unwrap()).collect();
        assert_eq!(paths[0], "src/chunk.rs", "{mode}: {r}");
        assert!(paths.iter().skip(1).all(|p| *p != "src/chunk.rs"), "{mode}: one result per file: {paths:?}");
        let content = results[0]["content"].as_str().unwrap();
        let windows_fn = &rust[rust.find("/// Windows of at most").unwrap()..];
        assert!(content.contains(&windows_fn[..windows_fn.find("\n}\n").unwrap() + 2]), "{mode}: {content}");
        let at = results[0]["source"]["location"].as_str().unwrap();
        let file_lines: Vec<&str> = rust.lines().collect();
        let pieces: Vec<String> = at["src/chunk.rs:".len()..]
            .split(',')
            .map(|range| {
                let (a, b) = range.split_once('-').unwrap();
                let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
                file_lines[a - 1..b].join("\n")
            })
            .collect();
        let shown: Vec<&str> = content.split("\n⋮\n").map(str::trim_end).collect();
        assert_eq!(shown, pieces.iter().map(|p| p.trim_end()).collect::<Vec<_>>(), "{mode}: {at}");
    }

    // A code file's metadata names what it defines, and its vectors know it:
    // asking where a symbol lives finds the file.
    let r = ok(
        &client,
        "search",
        json!({ "query": "which file defines the chunk sizes for a model", "metadata_filters": { "path": "src/" } }),
    )
    .await;
    let top = &r["results"][0];
    assert_eq!(top["source"]["filepath"], "src/chunk.rs", "{r}");
    let symbols = top["metadata"]["symbols"].as_str().unwrap_or_else(|| panic!("{top}"));
    assert!(
        symbols.contains("fn chunk") && symbols.contains("struct Sizes") && symbols.contains("fn windows"),
        "{symbols}"
    );
}
