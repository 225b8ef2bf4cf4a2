// Shared by the targets (included with `include!`, so each stays one file).

/// Token starts at every word, standing in for the model's tokenizer: the
/// chunkers only need ascending offsets at character boundaries.
fn word_starts(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut prev_space = true;
    for (i, c) in text.char_indices() {
        if !c.is_whitespace() && prev_space {
            out.push(i as u32);
        }
        prev_space = c.is_whitespace();
    }
    out
}

/// A span must lie inside the text, on character boundaries, and hold more than whitespace.
fn check_span(text: &str, start: usize, end: usize) {
    assert!(start < end && end <= text.len(), "span {start}..{end} of {}", text.len());
    assert!(text.is_char_boundary(start) && text.is_char_boundary(end), "span {start}..{end} splits a character");
    assert!(!text[start..end].trim().is_empty(), "blank chunk {start}..{end}");
}
