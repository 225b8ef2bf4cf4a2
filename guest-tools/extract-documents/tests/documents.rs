//! The real documents made by tests/documents/make_documents.py (`make target/documents/.stamp`,
//! or the folder RAGBOX_DOCUMENTS names): every expected phrase must come out under its
//! expected part label.

mod common;

use std::path::Path;

use extract_documents::ExtractError;
use serde_json::Value;

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn real_documents_give_expected_phrases_under_expected_labels() {
    // The folder `make target/documents/.stamp` writes, or another one RAGBOX_DOCUMENTS names.
    let dir = std::env::var_os("RAGBOX_DOCUMENTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/documents/real"));
    assert!(
        dir.join("expected.json").exists(),
        "no test documents at {}: run `make target/documents/.stamp` (or set RAGBOX_DOCUMENTS)",
        dir.display()
    );
    let dir = dir.as_path();
    let expected: Value = serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    for (name, want) in expected.as_object().unwrap() {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let (result, _) = common::timed(name, &bytes);
        let error = want["error"].as_str();
        let got = match (result, error) {
            (Ok(e), None) => e,
            (Err(ExtractError::NoText(_)), Some("no-text"))
            | (Err(ExtractError::Unsupported(_)), Some("unsupported"))
            | (Err(ExtractError::Malformed(_)), Some("malformed")) => continue,
            (r, want) => {
                failures.push(format!("{name}: expected error {want:?}, got {r:?}"));
                continue;
            }
        };
        if let Some(title) = want["title"].as_str()
            && got.title.as_deref() != Some(title)
        {
            failures.push(format!("{name}: title {:?}, expected {title:?}", got.title));
        }
        for check in want["checks"].as_array().unwrap() {
            let phrase = squash(check["phrase"].as_str().unwrap());
            let label = check["label"].as_str();
            let hit = got.parts.iter().find(|p| squash(&p.text).contains(&phrase));
            match hit {
                Some(p) if p.label.as_deref() == label => {}
                Some(p) => failures.push(format!("{name}: {phrase:?} is under {:?}, expected {label:?}", p.label)),
                None => failures.push(format!("{name}: {phrase:?} not found (expected under {label:?})")),
            }
        }
        // The first half of every file: an error or partial text, never a panic.
        let (r, took) = common::timed(&format!("half of {name}"), &bytes[..bytes.len() / 2]);
        if r.is_err() && !matches!(r, Err(ExtractError::Malformed(_) | ExtractError::NoText(_))) {
            failures.push(format!("half of {name}: {r:?}"));
        }
        assert!(took < common::QUICK);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
