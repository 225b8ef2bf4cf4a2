//! Documents that are not text (PDF, Word, PowerPoint, Excel, OpenDocument,
//! EPUB, RTF, notebooks), made by real writers (LibreOffice, python-docx and
//! others: `make target/documents/.stamp`), indexed through the sandboxed
//! extractor and found on the page, slide or sheet that holds the answer;
//! hostile documents end within their budget, each as its own file's error.

use ragbox_tests::{Client, Fixture, documents, ok};
use serde_json::{Value, json};
use std::path::Path;

/// A question whose answer sits in a known part of a known file.
struct Check {
    file: String,
    question: String,
    phrase: String,
    label: Option<String>,
}

/// The checks `expected.json` lists.
fn checks(expected: &Value) -> Vec<Check> {
    let files = expected.as_object().expect("expected.json: an object of files");
    let mut checks = Vec::new();
    for (file, entry) in files {
        for c in entry["checks"].as_array().expect("expected.json: checks") {
            checks.push(Check {
                file: file.clone(),
                question: c["question"].as_str().expect("question").to_string(),
                phrase: c["phrase"].as_str().expect("phrase").to_string(),
                label: c["label"].as_str().map(str::to_string),
            });
        }
    }
    checks
}

/// Copies every file of `from` (but `expected.json`) into the workspace under `to`.
fn copy_into(f: &Fixture, from: &Path, to: &str) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "expected.json" || !path.is_file() {
            continue;
        }
        f.write_bytes(&format!("{to}/{name}"), &std::fs::read(&path).unwrap());
        names.push(name);
    }
    names.sort();
    names
}

/// The `errors` of an indexing result, by path.
fn errors(report: &Value) -> Vec<(String, String)> {
    report["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| (e["path"].as_str().unwrap().to_string(), e["error"].as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `place` (`p. 3`, `p. 1–2, p. 4`, `sheet A – sheet B`) names the part `label` (`p. 2`).
fn covers(place: &str, label: &str) -> bool {
    let (kind, n) = label.rsplit_once(' ').unwrap_or(("", label));
    place.split(", ").any(|item| {
        item.split(" \u{2013} ").any(|end| end == label)
            || item.strip_prefix(&format!("{kind} ")).and_then(|range| range.split_once('\u{2013}')).is_some_and(
                |(a, b)| match (a.parse::<u32>(), b.parse::<u32>(), n.parse::<u32>()) {
                    (Ok(a), Ok(b), Ok(n)) => a <= n && n <= b,
                    _ => false,
                },
            )
    })
}

async fn search(client: &Client, query: &str, extra: Value) -> Vec<Value> {
    let mut args = json!({ "query": query, "limit": 5 });
    args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    ok(client, "search", args).await["results"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn documents_are_found_on_the_page_that_holds_the_answer() {
    let real = documents().join("real");
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(real.join("expected.json")).unwrap()).unwrap();
    let f = Fixture::empty();
    let names = copy_into(&f, &real, "docs");
    let client = f.connect().await;
    let report = ok(&client, "embed_workspace", json!({})).await;

    // Every document is indexed but those that cannot be (a scan, an encrypted PDF), which say why.
    let errors = errors(&report);
    let failing: Vec<(&String, &str)> =
        names.iter().filter_map(|n| expected[n.as_str()]["error"].as_str().map(|kind| (n, kind))).collect();
    assert!(failing.iter().any(|(_, kind)| *kind == "no-text"), "expected.json has a scanned PDF: {expected}");
    for (name, kind) in &failing {
        let error = errors.iter().find(|(p, _)| *p == format!("docs/{name}")).map(|(_, e)| e.as_str());
        let why = if *kind == "no-text" { "no text layer" } else { "encrypted" };
        assert!(error.is_some_and(|e| e.contains(why)), "{name}: {error:?} should say {why:?}");
    }
    assert_eq!(errors.len(), failing.len(), "{report}");
    assert_eq!(report["embedded"], json!(names.len() - failing.len()), "{report}");

    // A second run reads none of them again, and still says why.
    let again = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!((&again["embedded"], self::errors(&again).len()), (&json!(0), failing.len()), "{again}");

    // Each question finds its file among the first three, pointed at the part that answers.
    let checks = checks(&expected);
    assert!(checks.len() >= 10, "{} checks", checks.len());
    let mut misses = Vec::new();
    for check in &checks {
        let hits = search(&client, &check.question, json!({})).await;
        let path = format!("docs/{}", check.file);
        let Some(hit) = hits.iter().take(3).find(|h| h["source"]["filepath"] == json!(path)) else {
            misses.push(format!("{}: {} not in the first three", check.question, check.file));
            continue;
        };
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let content = squash(hit["content"].as_str().unwrap());
        assert!(content.contains(&squash(&check.phrase)), "{}: {content:?} lacks {:?}", check.question, check.phrase);
        let location = hit["source"]["location"].as_str().unwrap_or_default();
        if let Some(label) = &check.label {
            let place = location.strip_prefix(&format!("{path} ")).unwrap_or_default();
            assert!(covers(place, label), "{}: location {location:?} is not {label:?}", check.question);
        }
    }
    // Semantic ranking may put a near neighbour first; nine in ten must land.
    assert!(misses.len() * 10 <= checks.len(), "{} of {} missed:\n{}", misses.len(), checks.len(), misses.join("\n"));

    // A document's own metadata is a filter like frontmatter.
    let by = search(&client, "harbour", json!({ "metadata_filters": { "author": "Mara Quint" } })).await;
    assert!(by.iter().any(|h| h["source"]["filepath"] == json!("docs/facts.pdf")), "{by:?}");
    assert!(by.iter().all(|h| h["metadata"]["author"] == json!("Mara Quint")), "{by:?}");

    // The file-type filter and statistics know the new types.
    let pdfs = search(&client, "harbour", json!({ "sources": [".pdf"] })).await;
    assert!(pdfs.iter().all(|h| h["source"]["filepath"].as_str().unwrap().ends_with(".pdf")), "{pdfs:?}");
    let listed = ok(&client, "list_sources", json!({ "include_stats": true })).await;
    let types = &listed["statistics"]["file_types"];
    for mime in ["application/pdf", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"] {
        assert!(types[mime].as_u64().unwrap_or(0) >= 1, "{mime}: {listed}");
    }

    // Similar documents and context work on them as on text.
    let pdf = checks.iter().find(|c| c.file == "facts.pdf").expect("a check on facts.pdf");
    let similar = ok(&client, "get_similar", json!({ "source_path": format!("docs/{}", pdf.file) })).await;
    assert!(similar["similar"].as_array().is_some_and(|r| !r.is_empty()), "{similar}");
    let docx = checks.iter().find(|c| c.file == "report.docx").expect("a check on report.docx");
    let like = ok(&client, "search_similar", json!({ "reference_text": docx.phrase })).await;
    assert!(like["similar_documents"].to_string().contains("docs/report.docx p. "), "{like}");
    let context = ok(&client, "get_context", json!({ "topic": pdf.question })).await;
    assert!(context.to_string().contains(&pdf.phrase), "{context}");

    // What the index reads is what `ragbox extract` shows.
    let out = f.command(&["extract", &format!("docs/{}", pdf.file)]).output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && shown.contains("--- p. 1") && shown.contains(&pdf.phrase), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_documents_end_within_their_budget_and_the_rest_is_indexed() {
    let hostile = documents().join("hostile");
    let f = Fixture::empty();
    let names = copy_into(&f, &hostile, "inbox");
    f.write("notes/ok.md", "# Ferry timetable\n\nThe night ferry to Velmora leaves at 23:40 from pier 9.\n");
    let client = f.connect().await;
    let started = std::time::Instant::now();
    let report = ok(&client, "embed_workspace", json!({})).await;
    let took = started.elapsed();

    // Each hostile file is its own error (or, where it holds readable text, indexed).
    let errors = errors(&report);
    for name in &names {
        let path = format!("inbox/{name}");
        let error = errors.iter().find(|(p, _)| *p == path).map(|(_, e)| e.as_str());
        match name.as_str() {
            "bomb.docx" => assert!(error.is_some_and(|e| e.contains("MiB")), "{name}: {error:?}"),
            "million-empty-cells.xlsx" | "cyclic.pdf" => {} // may hold nothing, or a little text: either is fine
            _ => assert!(error.is_some_and(|e| !e.is_empty()), "{name} gave no error: {report}"),
        }
    }
    assert!(errors.iter().all(|(p, _)| p.starts_with("inbox/")), "{report}");
    // What a file makes an extractor say is one short line, whatever the file quotes.
    assert!(errors.iter().all(|(_, e)| e.len() < 1000 && !e.contains('\n')), "{errors:?}");
    eprintln!("hostile documents: indexed in {took:?}: {errors:?}");

    // The rest is indexed and the server still answers.
    let hits = search(&client, "when does the night ferry leave", json!({})).await;
    assert_eq!(hits[0]["source"]["filepath"], json!("notes/ok.md"), "{hits:?}");
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(status["success"], json!(true), "{status}");
}

/// The built-in extractor's component, as the host build left it.
fn builtin_extractor() -> std::path::PathBuf {
    let wasm = ragbox_tests::repo_root().join("target/guest-tools/wasm32-wasip2/release/extract_documents.wasm");
    assert!(wasm.exists(), "{} is built with ragbox (cargo build -p ragbox)", wasm.display());
    wasm
}

fn tools_json(f: &Fixture) -> Value {
    let out = f.command(&["tools", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_in_extractor_loads_under_the_tools_rules() {
    let real = documents().join("real");
    let f = Fixture::empty();
    f.write_bytes("docs/scan.pdf", &std::fs::read(real.join("scan.pdf")).unwrap());
    // The built-in finds no text in a scan, and says so.
    let out = f.command(&["index", "--json"]).output().unwrap();
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(first["errors"][0]["error"].as_str().unwrap_or_default().contains("no text layer"), "{first}");
    f.write_bytes("docs/facts.pdf", &std::fs::read(real.join("facts.pdf")).unwrap());
    let tools = f.config_dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(builtin_extractor(), tools.join("pdfx.wasm")).unwrap();

    // It may not take a format the built-in reads.
    let listed = tools_json(&f);
    let names: Vec<&str> =
        listed["extractors"].as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["extract-documents"], "{listed}");
    assert!(listed["rejected"].to_string().contains("already taken"), "{listed}");

    // With the built-in turned off, it reads them.
    f.write_user_config("[tools.extract-documents]\nenabled = false\n");
    let listed = tools_json(&f);
    assert_eq!(listed["extractors"][0]["name"], json!("pdfx"), "{listed}");
    assert!(listed["extractors"][0]["formats"].as_array().unwrap().contains(&json!("pdf")), "{listed}");
    let client = f.connect().await;
    let report = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!(report["embedded"], json!(1), "{report}");
    // What the built-in could not read, another extractor is given to read.
    assert_eq!(errors(&report).len(), 1, "{report}");
    if !ragbox_tests::postgres_backend() {
        let scan = f.store().document("docs/scan.pdf").unwrap().unwrap();
        let by = scan.metadata.get("ragbox.extractor").unwrap_or_default();
        assert!(by.starts_with("pdfx@"), "{:?}", scan.metadata);
    }
    drop(client);

    // A workspace's copy is neither compiled nor run until trusted; none reads PDFs now.
    std::fs::remove_file(tools.join("pdfx.wasm")).unwrap();
    f.write_bytes(".ragbox/tools/pdfx.wasm", &std::fs::read(builtin_extractor()).unwrap());
    f.write_bytes("docs/more.pdf", &std::fs::read(real.join("facts.pdf")).unwrap());
    let listed = tools_json(&f);
    assert_eq!(listed["extractors"], json!([]), "{listed}");
    assert!(listed["rejected"].to_string().contains("not trusted"), "{listed}");
    let out = f.command(&["index", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(report.to_string().contains("no document formats are read"), "{report}");

    // Trusted, it loads from the workspace too.
    let out = f.command(&["tools", "trust", ".ragbox/tools/pdfx.wasm"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("trusted extractor 'pdfx'"), "{out:?}");
    assert_eq!(tools_json(&f)["extractors"][0]["name"], json!("pdfx"));
}
