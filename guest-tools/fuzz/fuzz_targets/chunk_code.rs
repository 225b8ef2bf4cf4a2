//! The code chunker (whole functions and types) on arbitrary text, for each
//! language family it knows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragbox_sdk::indexing::chunk::{Sizes, word_starts};
use ragbox_sdk::indexing::code::{chunks, top_level_symbols};

include!("common.rs");

const PATHS: [&str; 10] = ["a.rs", "a.py", "a.js", "a.go", "a.c", "a.rb", "a.sh", "a.sql", "a.css", "a.hs"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let path = PATHS[pick as usize % PATHS.len()];
    let target = 2 + (pick as usize / PATHS.len()) % 48;
    let sizes = Sizes { target, overlap: target / 8, min: target / 8 };
    let out = chunks(path, &text, &word_starts(&text), sizes);
    let mut previous_end = 0;
    for c in &out {
        check_span(&text, c.span.start, c.span.end);
        // Units follow the file's order and never overlap.
        assert!(c.span.start >= previous_end, "{path}: chunks overlap at {}", c.span.start);
        previous_end = c.span.end;
    }
    let _ = top_level_symbols(path, &text);
});
