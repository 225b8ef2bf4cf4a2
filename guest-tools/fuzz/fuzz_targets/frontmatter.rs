//! What the indexer reads from a file: frontmatter, YAML fields, titles, HTML
//! text, and SKILL.md parsing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragbox_sdk::indexing::document::{frontmatter, parse_yaml, prepare};
use ragbox_sdk::indexing::skill;

const PATHS: [&str; 5] = ["notes/a.md", "a.txt", "page.html", "skills/x/SKILL.md", "brainstorm/2025-01-02/001-x/c.md"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let path = PATHS[pick as usize % PATHS.len()];
    let p = prepare(path, &text);
    assert!(p.body_start <= text.len() && text.is_char_boundary(p.body_start));
    if let Some((yaml, end)) = frontmatter(&text) {
        assert!(end <= text.len() && text.is_char_boundary(end));
        let _ = parse_yaml(yaml);
    }
    if let Ok(s) = skill::parse(&text) {
        assert!(!s.name.is_empty());
        let _ = s.intent_text();
    }
});
