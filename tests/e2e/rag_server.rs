//! The seed-003 tool set (search, search_similar, search_by_question,
//! list_sources) through MCP
//! on real data: tldr pages and SciFact abstracts, plus a few notes with
//! frontmatter, a CSV and a JSON file. Every filter, error type and range edge.

use ragbox_tests::{Client, Fixture, call, is_error, ok, shared_data, text};
use serde_json::{Value, json};
use std::collections::HashMap;

/// tldr pages copied in (`pages/<name>.md`).
const PAGES: [&str; 20] = [
    "tar", "git", "grep", "curl", "ssh", "rsync", "docker", "find", "sed", "awk", "zip", "gzip", "chmod", "ps", "kill",
    "ping", "wget", "scp", "crontab", "make",
];
/// SciFact test queries whose relevant abstracts are copied in.
const QUERIES: [&str; 8] = ["3", "5", "13", "36", "42", "49", "50", "51"];
/// Other SciFact abstracts, as distractors.
const DISTRACTORS: usize = 30;

struct Corpus {
    f: Fixture,
    /// Query id → (text, relevant abstract files).
    queries: HashMap<String, (String, Vec<String>)>,
    /// Abstract file → its text.
    abstracts: HashMap<String, String>,
}

fn lines(rel: &str) -> Vec<Value> {
    let path = shared_data().join("scifact").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn corpus() -> Corpus {
    let f = Fixture::empty();
    for page in PAGES {
        let from = shared_data().join("tldr/common").join(format!("{page}.md"));
        f.write(&format!("pages/{page}.md"), &std::fs::read_to_string(from).unwrap());
    }
    let qrels = std::fs::read_to_string(shared_data().join("scifact/qrels/test.tsv")).unwrap();
    let mut relevant: HashMap<String, Vec<String>> = HashMap::new();
    for line in qrels.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        relevant.entry(cols[0].to_string()).or_default().push(cols[1].to_string());
    }
    let queries: HashMap<String, (String, Vec<String>)> = lines("queries.jsonl")
        .into_iter()
        .filter(|q| QUERIES.contains(&q["_id"].as_str().unwrap()))
        .map(|q| {
            let id = q["_id"].as_str().unwrap().to_string();
            let files = relevant[&id].iter().map(|d| format!("{d}.txt")).collect();
            (id, (q["text"].as_str().unwrap().to_string(), files))
        })
        .collect();
    let wanted: Vec<String> = queries.values().flat_map(|(_, files)| files.clone()).collect();
    let mut abstracts = HashMap::new();
    let mut distractors = 0;
    for doc in lines("corpus.jsonl") {
        let file = format!("{}.txt", doc["_id"].as_str().unwrap());
        let keep = wanted.contains(&file) || distractors < DISTRACTORS;
        if !keep {
            continue;
        }
        if !wanted.contains(&file) {
            distractors += 1;
        }
        let body = format!("{}\n\n{}\n", doc["title"].as_str().unwrap(), doc["text"].as_str().unwrap());
        f.write(&format!("scifact/{file}"), &body);
        abstracts.insert(file, body);
    }
    f.write(
        "notes/ml.md",
        "---\ntitle: Learning notes\nauthor: john\ntags: [ml, notes]\n---\n# Learning notes\n\nGradient descent is \
         an optimisation method: it updates the weights against the gradient of the loss. The learning rate sets \
         the step size.\n",
    );
    f.write(
        "notes/garden.md",
        "---\nauthor: jane\n---\n# Garden\n\nTomatoes need six hours of sun; water them at the roots.\n",
    );
    // Prose about the setting in settings.json, in words: by meaning alone it is the nearer.
    f.write(
        "notes/backup.md",
        "# Backups\n\nBackups run at an interval of minutes that the operator sets; the backup interval is \
         counted in minutes, and a shorter interval means more backups.\n",
    );
    f.write("data/cities.csv", "city,country,population\nLisbon,Portugal,545000\nOslo,Norway,709000\n");
    f.write("data/settings.json", "{\"theme\": \"dark\", \"autosave\": true, \"backup_interval_minutes\": 15}\n");
    f.write(
        "docs/deploy.html",
        "<html><head><title>Deploy guide</title><script>var secret = 'not text';</script></head><body>\
         <h1>Deploying</h1><p>Build with <code>make release</code>, then copy the binary to the server &amp; \
         restart the service.</p></body></html>",
    );
    // A Word 97-2003 file (an OLE compound file): recognised, not read, reported.
    f.write_bytes("papers/study.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00\x00\x00binary Word 97 body");
    Corpus { f, queries, abstracts }
}

fn files(results: &Value) -> Vec<String> {
    results.as_array().unwrap().iter().map(|r| r["source"]["filepath"].as_str().unwrap().to_string()).collect()
}

/// The error body of a call that must fail with `isError`.
async fn error(client: &Client, tool: &str, args: Value) -> Value {
    let r = call(client, tool, args).await;
    assert!(is_error(&r), "{tool} should fail: {}", text(&r));
    let body: Value = serde_json::from_str(&text(&r)).unwrap();
    assert!(body["message"].is_string() && body["suggestion"].is_string(), "{body}");
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_003_tools_on_real_data() {
    let c = corpus();
    let client = c.f.connect().await;

    // Before anything is indexed: empty answers, not errors.
    let r = ok(&client, "search", json!({ "query": "tar archive" })).await;
    assert_eq!((&r["results_count"], &r["results"]), (&json!(0), &json!([])), "{r}");
    let r = ok(&client, "list_sources", json!({ "include_stats": true })).await;
    assert_eq!(r["total_sources"], 0);
    let r = ok(&client, "search_by_question", json!({ "question": "What is tar?" })).await;
    assert_eq!(
        (&r["context_found"], &r["confidence"], &r["raw_context"]),
        (&json!(false), &json!(0), &json!("")),
        "{r}"
    );

    let total = PAGES.len() + c.abstracts.len() + 6;
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!(
        (r["embedded"].as_u64(), r["total_files"].as_u64()),
        (Some(total as u64), Some(total as u64 + 1)),
        "{r}"
    );
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{r}");
    assert_eq!(errors[0]["path"], "papers/study.doc");
    assert!(errors[0]["error"].as_str().unwrap().starts_with("unsupported file type: Word 97-2003"), "{r}");

    // HTML is indexed by its visible text.
    let r = ok(
        &client,
        "search",
        json!({ "query": "copy the binary to the server", "search_type": "fulltext", "limit": 1 }),
    )
    .await;
    let hit = &r["results"][0];
    assert_eq!(
        (&hit["source"]["filepath"], &hit["source"]["file_type"]),
        (&json!("docs/deploy.html"), &json!("text/html")),
        "{r}"
    );
    let content = hit["content"].as_str().unwrap();
    assert!(
        content.contains("restart the service") && !content.contains("<p>") && !content.contains("secret"),
        "{content}"
    );
    assert_eq!(hit["metadata"]["title"], "Deploy guide");

    // Semantic search finds the judged abstract for SciFact claims.
    let mut found = 0;
    for (text, relevant) in c.queries.values() {
        let r = ok(&client, "search", json!({ "query": text })).await;
        assert_eq!((&r["search_type"], &r["search_info"]["max_requested"]), (&json!("semantic"), &json!(5)));
        let top: Vec<String> =
            files(&r["results"]).iter().map(|p| p.trim_start_matches("scifact/").to_string()).collect();
        if relevant.iter().any(|d| top.contains(d)) {
            found += 1;
        }
    }
    assert!(
        found >= c.queries.len() - 1,
        "relevant abstract in the top 5 for only {found} of {} claims",
        c.queries.len()
    );

    // The documented result shape, ranks and scores in 0..1, best first, in every mode.
    for mode in ["semantic", "fulltext", "hybrid"] {
        let r =
            ok(&client, "search", json!({ "query": "extract a tar archive", "search_type": mode, "limit": 10 })).await;
        assert_eq!((&r["search_type"], &r["search_info"]["search_method"]), (&json!(mode), &json!(mode)));
        let results = r["results"].as_array().unwrap();
        assert!(!results.is_empty() && results.len() <= 10, "{mode}: {r}");
        assert_eq!(r["results_count"], results.len());
        assert_eq!(results[0]["source"]["filepath"], "pages/tar.md", "{mode}: {r}");
        let paths = files(&r["results"]);
        assert_eq!(paths.iter().collect::<std::collections::HashSet<_>>().len(), paths.len(), "one per file: {r}");
        let scores: Vec<f64> = results.iter().map(|x| x["relevance_score"].as_f64().unwrap()).collect();
        assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{mode}: {scores:?}");
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{mode}: {scores:?}");
        for (i, x) in results.iter().enumerate() {
            assert_eq!(x["rank"], i + 1);
            let s = &x["source"];
            assert!(s["filename"].is_string() && s["chunk_index"].is_u64() && s["file_id"].is_string(), "{x}");
            assert!(x["content"].as_str().is_some_and(|t| !t.is_empty()) && x["metadata"].is_object());
        }
        assert_eq!(results[0]["source"]["file_type"], "text/markdown");
    }
    let r = ok(&client, "search", json!({ "query": "compress files", "search_type": "hybrid" })).await;
    assert_eq!(r["search_info"]["fusion"]["method"], "normalized_score_fusion");

    // Filters: file types by extension or MIME type, and metadata.
    let r = ok(&client, "search", json!({ "query": "learning", "sources": ["md"], "limit": 50 })).await;
    assert!(files(&r["results"]).iter().all(|p| p.ends_with(".md")), "{r}");
    let r = ok(&client, "search", json!({ "query": "learning", "sources": ["text/plain"], "limit": 20 })).await;
    assert!(files(&r["results"]).iter().all(|p| p.starts_with("scifact/")), "{r}");
    assert_eq!(r["results_count"], 20, "enough .txt files exist for the limit");
    let r = ok(
        &client,
        "search",
        json!({ "query": "city populations", "sources": ["csv", "application/json"], "search_type": "fulltext" }),
    )
    .await;
    assert_eq!(files(&r["results"]), ["data/cities.csv"], "{r}");
    let r = ok(&client, "search", json!({ "query": "learning", "metadata_filters": { "author": "john" } })).await;
    assert_eq!(files(&r["results"]), ["notes/ml.md"], "{r}");
    assert_eq!(r["results"][0]["metadata"]["tags"], "ml, notes");
    assert_eq!(r["results"][0]["metadata"]["title"], "Learning notes");
    let r =
        ok(&client, "search", json!({ "query": "copy files", "metadata_filters": { "path": "pages" }, "limit": 50 }))
            .await;
    assert!(
        files(&r["results"]).iter().all(|p| p.starts_with("pages/")) && r["results_count"].as_u64() > Some(5),
        "{r}"
    );
    let r = ok(&client, "search", json!({ "query": "x", "metadata_filters": { "author": "nobody" } })).await;
    assert_eq!(r["results_count"], 0);

    // An identifier ranks the file holding it as written first, in every mode; every hit says its lines.
    for mode in ["semantic", "fulltext", "hybrid"] {
        let r = ok(&client, "search", json!({ "query": "backup_interval_minutes", "search_type": mode })).await;
        assert_eq!(files(&r["results"])[0], "data/settings.json", "{mode}: {r}");
    }
    let r = ok(&client, "search", json!({ "query": "gradient descent learning rate", "limit": 10 })).await;
    for hit in r["results"].as_array().unwrap() {
        let (path, at) = (hit["source"]["filepath"].as_str().unwrap(), hit["source"]["location"].as_str().unwrap());
        let ranges = at.strip_prefix(&format!("{path}:")).unwrap_or_else(|| panic!("{at}"));
        let mut previous = 0;
        for range in ranges.split(',') {
            let (first, last) = range.split_once('-').unwrap();
            let (first, last) = (first.parse::<u32>().unwrap(), last.parse::<u32>().unwrap());
            assert!(previous < first && first <= last, "{at}");
            previous = last;
        }
    }
    assert_eq!(r["results"][0]["source"]["location"], "notes/ml.md:6-8", "{r}");

    // A token budget cuts the list, and says so.
    let query = json!({ "query": "files", "limit": 50, "search_type": "fulltext" });
    let all = ok(&client, "search", query.clone()).await;
    let mut budget = query.clone();
    budget["max_tokens"] = json!(500);
    let cut = ok(&client, "search", budget).await;
    let (n_all, n_cut) = (all["results_count"].as_u64().unwrap(), cut["results_count"].as_u64().unwrap());
    assert!(n_cut >= 1 && n_cut < n_all, "{n_cut} of {n_all}");
    assert_eq!(cut["search_info"]["cut"]["results_left_out"].as_u64(), Some(n_all - n_cut), "{cut}");
    assert!(all["search_info"].get("cut").is_none());

    // Range edges and every error type of search.
    ok(&client, "search", json!({ "query": "git", "limit": 1 })).await;
    let r = ok(&client, "search", json!({ "query": "git", "limit": 50, "search_type": "fulltext" })).await;
    assert!(r["results_count"].as_u64().unwrap() <= 50);
    assert_eq!(error(&client, "search", json!({})).await["error"], "InvalidQuery");
    assert_eq!(error(&client, "search", json!({ "query": " " })).await["error"], "InvalidQuery");
    for bad in [
        json!({ "query": "x", "limit": 0 }),
        json!({ "query": "x", "limit": 51 }),
        json!({ "query": "x", "limit": "five" }),
        json!({ "query": "x", "search_type": "vector" }),
        json!({ "query": "x", "sources": ["image/x-unknown"] }),
        json!({ "query": "x", "metadata_filters": { "date": "yesterday" } }),
        json!({ "query": "x", "max_tokens": 10 }),
    ] {
        assert_eq!(error(&client, "search", bad.clone()).await["error"], "InvalidParameter", "{bad}");
    }
    let e = error(&client, "search", json!({ "query": "x", "workspace_path": "/" })).await;
    assert_eq!(e["error"], "WorkspaceNotAllowed");

    // search_similar: an abstract finds itself first, unless excluded.
    let (file, body) = c.abstracts.iter().find(|(f, _)| f.as_str() == c.queries["49"].1[0]).unwrap();
    let r = ok(&client, "search_similar", json!({ "reference_text": body })).await;
    let docs = r["similar_documents"].as_array().unwrap();
    assert_eq!(docs[0]["source"]["filename"], file.as_str(), "{r}");
    assert!(docs[0]["similarity_score"].as_f64().unwrap() > 0.9);
    assert_eq!(docs.len(), 3, "default limit");
    assert!(docs[0]["full_content"].as_str().unwrap().len() >= docs[0]["content_preview"].as_str().unwrap().len() - 3);
    let paths: Vec<&str> = docs.iter().map(|d| d["source"]["filepath"].as_str().unwrap()).collect();
    let mut unique = paths.clone();
    unique.dedup();
    assert_eq!(unique.len(), paths.len(), "one entry per document");
    for exclude in [file.clone(), format!("scifact/{file}"), docs[0]["source"]["file_id"].as_str().unwrap().to_string()]
    {
        let r =
            ok(&client, "search_similar", json!({ "reference_text": body, "exclude_source": exclude, "limit": 10 }))
                .await;
        assert!(
            r["similar_documents"].as_array().unwrap().iter().all(|d| d["source"]["filename"] != file.as_str()),
            "{exclude}"
        );
        assert_eq!(r["search_info"]["excluded_source"], exclude.as_str());
    }
    // A threshold between the best and the second score leaves only the best.
    let (s0, s1) = (docs[0]["similarity_score"].as_f64().unwrap(), docs[1]["similarity_score"].as_f64().unwrap());
    let r =
        ok(&client, "search_similar", json!({ "reference_text": body, "similarity_threshold": (s0 + s1) / 2.0 })).await;
    assert_eq!((r["total_found"].as_u64(), r["similar_documents"].as_array().map(Vec::len)), (Some(1), Some(1)), "{r}");
    let r = ok(
        &client,
        "search_similar",
        json!({ "reference_text": "tomato plants in the garden", "similarity_threshold": 0.0, "limit": 10 }),
    )
    .await;
    assert_eq!(r["similar_documents"].as_array().unwrap().len(), 10);
    assert!(r["total_found"].as_u64().unwrap() >= 10);
    assert_eq!(error(&client, "search_similar", json!({})).await["error"], "InvalidReferenceText");
    for bad in [json!({ "limit": 11 }), json!({ "limit": 0 }), json!({ "similarity_threshold": 1.01 })] {
        let mut args = bad.clone();
        args["reference_text"] = json!("x");
        assert_eq!(error(&client, "search_similar", args).await["error"], "InvalidParameter", "{bad}");
    }

    // search_by_question: the kind of question, its sentences, a confidence.
    let r = ok(&client, "search_by_question", json!({ "question": "How do I extract a tar archive?" })).await;
    let info = &r["extracted_information"];
    assert_eq!((&info["type"], &r["context_found"]), (&json!("process_or_method"), &json!(true)), "{r}");
    assert_eq!(r["context_chunks"][0]["source"]["filepath"], "pages/tar.md", "{r}");
    assert!(r["context_chunks"].as_array().unwrap().len() <= 5);
    let excerpts = info["relevant_excerpts"].as_array().unwrap();
    assert!(
        !excerpts.is_empty() && excerpts.iter().all(|e| e.as_str().unwrap().len() < 400),
        "sentences, not chunks: {r}"
    );
    // tldr marks the letters of flags: "E[x]tract".
    assert!(excerpts[0].as_str().unwrap().to_lowercase().replace(['[', ']'], "").contains("extract"), "{r}");
    let confidence = r["confidence"].as_u64().unwrap();
    assert!((30..=100).contains(&confidence), "{confidence}");
    assert!(r["raw_context"].as_str().unwrap().contains(r["context_chunks"][0]["content"].as_str().unwrap()));
    assert_eq!(
        r["search_info"],
        json!({"total_context_chunks": r["context_chunks"].as_array().unwrap().len(), "search_method": "semantic", "sources_searched": "all", "context_limit": 5})
    );
    let r = ok(
        &client,
        "search_by_question",
        json!({ "question": "What is gradient descent?", "search_method": "hybrid" }),
    )
    .await;
    let info = &r["extracted_information"];
    assert_eq!(info["type"], "definition_or_fact");
    assert!(
        info["definition_candidates"][0].as_str().unwrap().starts_with("Gradient descent is an optimisation method"),
        "{r}"
    );
    assert_eq!(r["search_info"]["search_method"], "hybrid");
    let r = ok(
        &client,
        "search_by_question",
        json!({ "question": "Why do tomatoes need sun?", "sources": ["txt"], "context_limit": 20 }),
    )
    .await;
    assert_eq!(r["extracted_information"]["type"], "explanation_or_reason");
    let chunks = r["context_chunks"].as_array().unwrap();
    assert_eq!(chunks.len(), 20);
    assert!(chunks.iter().all(|c| c["source"]["filepath"].as_str().unwrap().starts_with("scifact/")), "{r}");
    assert_eq!(r["search_info"]["sources_searched"], json!(["txt"]));
    let r = ok(&client, "search_by_question", json!({ "question": "Where is the crontab?", "context_limit": 1 })).await;
    assert_eq!(
        (r["context_chunks"].as_array().map(Vec::len), &r["extracted_information"]["type"]),
        (Some(1), &json!("location"))
    );
    assert_eq!(error(&client, "search_by_question", json!({ "question": "" })).await["error"], "InvalidQuestion");
    for bad in [
        json!({ "context_limit": 0 }),
        json!({ "context_limit": 21 }),
        json!({ "search_method": "fulltext" }),
        json!({ "sources": ["x/y"] }),
    ] {
        let mut args = bad.clone();
        args["question"] = json!("What is tar?");
        assert_eq!(error(&client, "search_by_question", args).await["error"], "InvalidParameter", "{bad}");
    }

    // list_sources: every indexed file, grouping and statistics.
    let r = ok(&client, "list_sources", json!({})).await;
    assert_eq!((r["total_sources"].as_u64(), r["returned_sources"].as_u64()), (Some(total as u64), Some(total as u64)));
    let tar = r["sources"].as_array().unwrap().iter().find(|s| s["path"] == "pages/tar.md").unwrap();
    assert_eq!(
        (&tar["name"], &tar["file_type"], &tar["source_type"]),
        (&json!("tar.md"), &json!("text/markdown"), &json!("local_file"))
    );
    assert!(tar["id"].as_str().unwrap().starts_with("doc_") && tar["size"].as_u64() > Some(100));
    assert!(tar["indexed_at"].as_str().unwrap().ends_with('Z') && tar["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(r.get("statistics").is_none() && r.get("grouped_sources").is_none());
    let r = ok(&client, "list_sources", json!({ "include_stats": true, "group_by": "file_type", "limit": 1000 })).await;
    let stats = &r["statistics"];
    assert_eq!(stats["total_documents"], total);
    assert_eq!(stats["file_types"]["text/markdown"], PAGES.len() + 3);
    assert_eq!(stats["file_types"]["text/plain"], c.abstracts.len());
    assert_eq!((&stats["file_types"]["text/csv"], &stats["file_types"]["application/json"]), (&json!(1), &json!(1)));
    assert_eq!(stats["file_types"]["text/html"], 1);
    assert_eq!(stats["source_types"]["local_file"], total);
    assert!(stats["oldest_document"].as_i64() <= stats["newest_document"].as_i64());
    let groups = r["grouped_sources"].as_array().unwrap();
    assert_eq!(groups.iter().map(|g| g["count"].as_u64().unwrap()).sum::<u64>(), total as u64);
    let r = ok(&client, "list_sources", json!({ "limit": 1, "group_by": "source_type" })).await;
    assert_eq!((r["returned_sources"].as_u64(), r["total_sources"].as_u64()), (Some(1), Some(total as u64)));
    assert_eq!(r["grouped_sources"], json!([{ "group": "local_file", "count": 1, "sources": r["sources"] }]));
    let r = ok(&client, "list_sources", json!({ "source_type_filter": ["file_upload"] })).await;
    assert_eq!(r["total_sources"], 0);
    for bad in
        [json!({ "limit": 0 }), json!({ "limit": 1001 }), json!({ "group_by": "size" }), json!({ "include_stats": 1 })]
    {
        assert_eq!(error(&client, "list_sources", bad.clone()).await["error"], "InvalidParameter", "{bad}");
    }
    client.cancel().await.unwrap();

    // The command line: every mode, file types, and the sources listing.
    let run = |args: &[&str]| {
        let out = c.f.command(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok_, stdout, stderr) = run(&["search", "extract a tar archive", "--hybrid", "-n", "3"]);
    assert!(ok_, "{stderr}");
    assert!(
        stdout.contains("3 results by meaning and keywords")
            && stdout.contains("pages/tar.md")
            && stdout.contains("%)"),
        "{stdout}"
    );
    let (ok_, stdout, _) = run(&["search", "city populations", "--fulltext", "--source", "csv"]);
    assert!(ok_ && stdout.contains("data/cities.csv") && stdout.contains("(files csv)"), "{stdout}");
    let (ok_, stdout, _) = run(&["search", "learning", "--semantic", "--source", "text/markdown", "--json"]);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(ok_ && files(&v["results"]).iter().all(|p| p.ends_with(".md")), "{v}");
    let (ok_, _, stderr) = run(&["search", "tar", "--source", "md"]);
    assert!(!ok_ && stderr.contains("--source filters the index"), "{stderr}");
    let (ok_, _, stderr) = run(&["search", "tar", "--semantic", "--hybrid"]);
    assert!(!ok_ && stderr.contains("cannot be used with"), "{stderr}");
    let (ok_, stdout, _) = run(&["sources", "--stats", "--group-by", "file_type"]);
    assert!(
        ok_ && stdout.contains(&format!("{total} of {total} sources")) && stdout.contains("text/csv (1):"),
        "{stdout}"
    );
    assert!(stdout.contains("file types: ") && stdout.contains("pages/tar.md"), "{stdout}");
}
