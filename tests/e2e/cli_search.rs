//! `ragbox search` and `ragbox sources` as a person at a terminal meets them:
//! what a search says before anything is indexed, the index's documents in
//! the default search, and the small print (counts, paths, limits, help).

use ragbox_tests::Fixture;
use serde_json::Value;
use std::process::{Output, Stdio};

fn run(f: &Fixture, args: &[&str]) -> Output {
    f.command(args).stdin(Stdio::null()).output().expect("run ragbox")
}

/// stdout of a command that must succeed.
fn ok(f: &Fixture, args: &[&str]) -> String {
    let out = run(f, args);
    assert!(out.status.success(), "ragbox {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr of a command that must fail.
fn fails(f: &Fixture, args: &[&str]) -> String {
    let out = run(f, args);
    assert!(!out.status.success(), "ragbox {args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A one-page PDF whose text layer holds `text`, with a binary comment line
/// (as real writers put after the header), so a line search passes it over.
fn pdf(text: &str) -> Vec<u8> {
    let content = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_string(),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    let mut out = b"%PDF-1.4\n%\x00\x01\x02\x03\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{object}\nendobj\n", i + 1).bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    out.extend(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).bytes());
    out
}

/// Notes at the top and in a folder, and a PDF: no conversations.
fn notes() -> Fixture {
    let f = Fixture::empty();
    f.write("estuary.md", "# Estuary\n\nThe estuary survey starts in May.\n");
    f.write("notes/boats.md", "Boats leave the estuary at dawn.\nThe estuary freezes in January.\n");
    f.write_bytes("papers/birds.pdf", &pdf("Pelican migration routes cross the northern estuary every spring."));
    f
}

#[test]
fn every_search_of_the_index_before_one_exists_says_to_run_ragbox_index() {
    let f = notes();
    for mode in ["--fulltext", "--hybrid", "--semantic"] {
        let said = ok(&f, &["search", "estuary", mode]);
        assert!(said.contains("Nothing is indexed yet") && said.contains("run `ragbox index`"), "{mode}: {said}");
        assert!(
            said.contains("A keyword search reads the text files now: ragbox search \"estuary\""),
            "{mode}: {said}"
        );
    }
    assert!(!f.workspace.join(".ragbox").exists(), "a search must not create the index");
}

#[test]
fn the_default_search_covers_the_indexed_documents_and_names_what_it_passed_over() {
    let f = notes();
    // Before `ragbox index`: the PDF is not text, and the search says so by name.
    let before = ok(&f, &["search", "pelican"]);
    assert!(before.contains("No results for \"pelican\""), "{before}");
    assert!(
        before.contains("1 file was not searched (not text, or over 8 MiB), 1 document among them that `ragbox index` reads (papers/birds.pdf)"),
        "{before}"
    );
    assert!(before.contains("once `ragbox index` has read the workspace"), "{before}");
    ok(&f, &["index"]);
    // After: its passage, with its page, beside the text files' lines.
    let after = ok(&f, &["search", "estuary"]);
    assert!(after.starts_with("5 results by keyword for \"estuary\""), "{after}");
    assert!(after.contains("birds.pdf  (p. 1)") && after.contains("Pelican migration routes"), "{after}");
    assert!(!after.contains("not searched"), "{after}");
    let json: Value = serde_json::from_str(&ok(&f, &["search", "pelican", "--json"])).unwrap();
    assert_eq!(json["lines"]["num_results"], 0, "{json}");
    assert_eq!(json["documents"]["results"][0]["source"]["location"], "papers/birds.pdf p. 1", "{json}");
}

#[test]
fn results_are_counted_named_once_and_limited_as_the_help_says() {
    let f = notes();
    let one = ok(&f, &["search", "survey"]);
    assert!(one.starts_with("1 result by keyword for \"survey\":"), "{one}");
    // A file at the top: its name is its path, shown once.
    assert_eq!(one.matches("estuary.md").count(), 1, "{one}");
    let nested = ok(&f, &["search", "dawn"]);
    assert!(nested.contains("boats.md  (line 1)") && nested.contains("notes/boats.md"), "{nested}");
    // More lines than asked for, in a folder without conversations: no --type or --date to narrow by.
    let more = ok(&f, &["search", "estuary", "-n", "1"]);
    assert!(more.contains("More results exist: raise -n (up to 1000)."), "{more}");
    assert!(!more.contains("--type"), "{more}");
    // -n as the help says: 10 by default, each mode's own bound, checked before anything runs.
    let help = ok(&f, &["search", "--help"]);
    assert!(
        help.contains("at most 1000 by keyword, 100 with --semantic, 50 with --hybrid or --fulltext [default: 10]"),
        "{help}"
    );
    for (mode, max) in [(None, 1000), (Some("--semantic"), 100), (Some("--hybrid"), 50), (Some("--fulltext"), 50)] {
        let (at, over) = (max.to_string(), (max + 1).to_string());
        let (mut asking_at, mut asking_over) = (vec!["search", "x", "-n", &at], vec!["search", "x", "-n", &over]);
        asking_at.extend(mode);
        asking_over.extend(mode);
        // The tool takes the bound the command line gives (its own check is the same)…
        ok(&f, &asking_at);
        // …and one more is refused before anything runs.
        let said = fails(&f, &asking_over);
        assert!(said.contains(&format!("returns 1 to {max} results")), "{mode:?}: {said}");
    }
}

#[test]
fn the_help_offers_what_each_command_takes_and_typos_are_pointed_at_commands() {
    let f = Fixture::empty();
    for command in [&["extract", "--help"][..], &["model", "--help"], &["tools", "new", "--help"]] {
        let help = ok(&f, command);
        assert!(!help.contains("--store") && !help.contains("--collection"), "{command:?}: {help}");
    }
    let search = ok(&f, &["search", "--help"]);
    assert!(search.contains("--store <URL>"), "{search}");
    assert!(search.contains("the folder's name and a hash of its path"), "{search}");
    let refused = fails(&f, &["--store", "postgres://me@db/rag", "extract", "x.pdf"]);
    assert!(refused.contains("this command reads none"), "{refused}");
    for typo in ["serach", "servce", "serivce"] {
        let said = fails(&f, &[typo]);
        assert!(said.contains("similar subcommand") && !said.contains("'service'"), "{typo}: {said}");
    }
    let missing = f.dir.path().join("nowhere");
    let out = run(&f, &["serve", "-w", missing.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.starts_with("ragbox: error: cannot open this workspace"), "{said}");
    assert!(!said.contains("INFO"), "{said}");
}

#[test]
fn sources_keep_their_columns_whatever_the_types() {
    let f = Fixture::empty();
    f.write("a.md", "# A\n\nsome text\n");
    let notebook = r##"{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Tides\n", "High water at noon."]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"##;
    f.write("tides.ipynb", notebook);
    ok(&f, &["index"]);
    let listed = ok(&f, &["sources"]);
    let rows: Vec<&str> = listed.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(rows.len(), 2, "{listed}");
    assert!(rows.iter().any(|r| r.contains("application/x-ipynb+json")), "{listed}");
    // The size column ends at the same place on every row.
    let ends: Vec<usize> = rows.iter().map(|r| r.find(" B ").expect("a size") + 2).collect();
    assert!(ends.windows(2).all(|w| w[0] == w[1]), "{listed}");
}

#[test]
fn the_agents_config_files_init_writes_are_never_indexed_or_searched() {
    let f = Fixture::empty();
    f.write("notes.md", "# Costs\n\nTurn off idle servers to save money.\n");
    ok(&f, &["init", "--agent", "all"]);
    // A nested project's own agent config is configuration too.
    f.write("sub/.mcp.json", r#"{"mcpServers": {"other": {"command": "serve-things"}}}"#);
    f.write("sub/.vscode/mcp.json", r#"{"servers": {"x": {"command": "serve"}}}"#);
    let indexed: Value = serde_json::from_str(&ok(&f, &["index", "--json"])).unwrap();
    let sources: Value = serde_json::from_str(&ok(&f, &["sources", "--json"])).unwrap();
    let paths: Vec<&str> = sources["sources"].as_array().unwrap().iter().filter_map(|s| s["path"].as_str()).collect();
    assert!(paths.contains(&"notes.md"), "{sources}");
    for config in [".mcp.json", ".codex/config.toml", ".cursor/mcp.json", ".vscode/mcp.json", "sub/.mcp.json"] {
        assert!(!paths.contains(&config), "{config} was indexed: {sources} ({indexed})");
    }
    // Neither the line search nor the index finds them.
    for mode in [&[][..], &["--fulltext"], &["--hybrid"]] {
        let mut args = vec!["search", "serve", "--json"];
        args.extend_from_slice(mode);
        let found = ok(&f, &args);
        assert!(!found.contains("mcp.json") && !found.contains("config.toml"), "{mode:?}: {found}");
    }
    let status: Value = serde_json::from_str(&ok(&f, &["status", "--json"])).unwrap();
    assert_eq!(status["pending"]["total"], 0, "{status}");
}
