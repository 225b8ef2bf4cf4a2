// Shared by the targets (included with `include!`, so each stays one file).

/// A span must lie inside the text, on character boundaries, and hold more than whitespace.
fn check_span(text: &str, start: usize, end: usize) {
    assert!(start < end && end <= text.len(), "span {start}..{end} of {}", text.len());
    assert!(text.is_char_boundary(start) && text.is_char_boundary(end), "span {start}..{end} splits a character");
    assert!(!text[start..end].trim().is_empty(), "blank chunk {start}..{end}");
}
