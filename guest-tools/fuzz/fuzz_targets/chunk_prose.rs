//! The Markdown-aware chunker on arbitrary text and sizes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragbox_sdk::indexing::chunk::{Sizes, chunk, word_starts};

include!("common.rs");

fuzz_target!(|data: &[u8]| {
    let Some((&size, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let target = 2 + size as usize % 64;
    let sizes = Sizes { target, overlap: target / 8, min: target / 8 };
    let starts = word_starts(&text);
    let spans = chunk(&text, &starts, sizes);
    for s in &spans {
        check_span(&text, s.start, s.end);
    }
    // Every word lands in some chunk.
    for &w in &starts {
        let w = w as usize;
        assert!(spans.iter().any(|s| s.start <= w && w < s.end), "word at {w} in no chunk");
    }
});
