//! Hostile workspaces: binary and invalid UTF-8 files, a 200 MB file, deep
//! nesting, file names with newlines or not in UTF-8, 100,000 empty files,
//! and files changing while they are indexed. Each has a clear outcome and
//! nothing already indexed is lost.

use ragbox_tests::{Fixture, ok};
use serde_json::{Value, json};
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

fn error_for<'a>(report: &'a Value, path: &str) -> Option<&'a str> {
    report["errors"].as_array()?.iter().find(|e| e["path"] == path).and_then(|e| e["error"].as_str())
}

#[tokio::test(flavor = "multi_thread")]
async fn odd_files_each_have_a_clear_outcome() {
    let f = Fixture::empty();
    f.write_bytes("blob.bin", &(0..=255u8).cycle().take(25_600).collect::<Vec<_>>());
    f.write_bytes("latin1.txt", b"caf\xe9 pelicans in Latin-1\n");
    f.write("line\nbreak.md", "pelicans behind a newline in the name\n");
    f.write("tab\tand \u{e9}.md", "pelicans in an odd name\n");
    let deep: String = (0..300).map(|i| format!("d{}/", i % 10)).collect();
    f.write(&format!("{deep}deep.md"), "# Deep\n\npelicans far down the tree\n");
    // 200 MB of text.
    let line = "pelicans over a huge log, line after line\n";
    let huge = std::fs::File::create(f.workspace.join("huge.log")).unwrap();
    let mut w = std::io::BufWriter::new(huge);
    for _ in 0..(200 << 20) / line.len() + 1 {
        std::io::Write::write_all(&mut w, line.as_bytes()).unwrap();
    }
    drop(w);

    let client = f.connect().await;
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert!(error_for(&r, "huge.log").unwrap().contains("over the 8 MiB limit"), "{r}");
    // Binary is not indexable (not counted); the rest is indexed, Latin-1 with replacement characters.
    assert_eq!((&r["embedded"], &r["total_files"]), (&json!(4), &json!(5)), "{r}");

    let found = ok(&client, "search", json!({ "query": "pelicans", "search_type": "fulltext", "limit": 10 })).await;
    let mut paths: Vec<&str> =
        found["results"].as_array().unwrap().iter().map(|h| h["source"]["filepath"].as_str().unwrap()).collect();
    paths.sort();
    let deep_path = format!("{deep}deep.md");
    assert_eq!(paths, vec![deep_path.as_str(), "latin1.txt", "line\nbreak.md", "tab\tand \u{e9}.md"], "{found}");
    let latin = found["results"].as_array().unwrap().iter().find(|h| h["source"]["filepath"] == "latin1.txt").unwrap();
    assert!(latin["content"].as_str().unwrap().contains("caf\u{fffd} pelicans"), "{latin}");

    // The keyword tool skips the oversized file and the binary one, and counts them.
    let kw = ok(&client, "search_workspace", json!({ "query": "pelicans" })).await;
    assert_eq!(kw["files_skipped"], 2, "{kw}");
    assert_eq!(kw["num_results"], 4, "{kw}");
}

#[test]
fn binary_files_never_count_as_work_for_a_later_run() {
    let f = Fixture::empty();
    // More binaries than it takes to store files for keyword search first, and a 1 MiB one.
    for i in 0..40 {
        f.write_bytes(&format!("img/{i:02}.png"), &[0x89, b'P', b'N', b'G', 0, 0, 0, i]);
    }
    f.write_bytes("big.bin", &vec![0u8; 1 << 20]);
    f.write(
        "notes/a.md",
        "# A

The heron census.
",
    );
    let index = || {
        let out = f.command(&["index", "--json"]).output().expect("run ragbox index");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).expect("index JSON");
        (report, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (first, log) = index();
    assert_eq!((&first["embedded"], &first["total_files"]), (&json!(1), &json!(1)), "{first}");
    assert!(!log.contains("for keyword search first"), "binaries were taken for new files: {log}");
    // Unchanged: nothing to do, and the model is not even loaded.
    let (second, log) = index();
    assert_eq!((&second["embedded"], &second["skipped"]), (&json!(0), &json!(1)), "{second}");
    assert!(!log.contains("embedding model loaded"), "an unchanged workspace loaded the model: {log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_that_is_not_utf8_is_reported_and_loses_nothing() {
    let f = Fixture::empty();
    for n in 'a'..='j' {
        f.write(&format!("{n}.md"), "pelicans\n");
    }
    let client = f.connect().await;
    assert_eq!(ok(&client, "embed_workspace", json!({})).await["embedded"], 10);

    // A name the sandbox cannot represent is passed over, in the root folder
    // too: the rest of the folder is indexed, the run says so, and removes
    // nothing it could not see.
    let bad = std::ffi::OsStr::from_bytes(b"m-\xff.md");
    std::fs::write(f.workspace.join(bad), "x").unwrap();
    f.write("k.md", "pelicans too\n");
    let r = ok(&client, "embed_workspace", json!({})).await;
    let errors = r["errors"].as_array().unwrap();
    assert!(errors.iter().any(|e| e["error"].as_str().unwrap().contains("not valid UTF-8")), "{r}");
    assert_eq!(r["removed"], 0, "{r}");
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!(status["num_documents"], 11, "every other file, k.md included: {status}");
    assert!(status["not_indexed"]["count"].as_u64().unwrap() >= 1, "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_thousand_empty_files() {
    let f = Fixture::empty();
    // Files written in the second they were read cannot be judged by their mtimes, so a status
    // call may read many of these again (seconds on 2 cores under the whole suite): this test
    // is about counting them right; the speed of status is bench/calls.py's.
    f.write_user_config("[tools.get_embedding_status]\ntimeout_secs = 120\n");
    for dir in 0..100 {
        let d = f.workspace.join(format!("empty/{dir:03}"));
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..1000 {
            std::fs::File::create(d.join(format!("{i:04}.md"))).unwrap();
        }
    }
    let client = f.connect().await;
    let started = std::time::Instant::now();
    let r = ok(&client, "embed_workspace", json!({})).await;
    eprintln!("100,000 empty files indexed in {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!((&r["embedded"], &r["chunks"], &r["errors"]), (&json!(100_000), &json!(0), &Value::Null), "{r}");
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!((&r["embedded"], &r["skipped"]), (&json!(0), &json!(100_000)), "{r}");
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!((&status["num_documents"], &status["up_to_date"]), (&json!(100_000), &json!(true)));
}

#[tokio::test(flavor = "multi_thread")]
async fn files_changing_during_indexing_end_up_indexed_as_they_are() {
    let f = Fixture::tldr(300);
    let pages = f.workspace.join("pages");
    let mut names: Vec<_> = std::fs::read_dir(&pages).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let client = f.connect().await;

    // While embed_workspace runs: delete 50 pages, rewrite 50, add 50.
    let churn = {
        let (pages, names) = (pages.clone(), names.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            for (i, path) in names.iter().rev().take(150).enumerate() {
                match i % 3 {
                    0 => std::fs::remove_file(path).unwrap(),
                    1 => std::fs::write(path, format!("# Rewritten {i}\n\nchanged while indexing\n")).unwrap(),
                    _ => std::fs::write(pages.join(format!("new-{i}.md")), "# New\n\nadded while indexing\n").unwrap(),
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let first = ok(&client, "embed_workspace", json!({})).await;
    churn.join().unwrap();
    assert_eq!(first["success"], true, "{first}");

    // The next run brings the index in line with the folder, exactly.
    ok(&client, "embed_workspace", json!({})).await;
    let on_disk = std::fs::read_dir(&pages).unwrap().count();
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!((&status["num_documents"], &status["up_to_date"]), (&json!(on_disk), &json!(true)), "{status}");
    let r = ok(&client, "search", json!({ "query": "changed while indexing", "search_type": "fulltext", "limit": 50 }))
        .await;
    assert_eq!(r["results_count"], 50, "the rewritten pages are indexed with their new text: {r}");
}
