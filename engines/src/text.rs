//! Text from files, file names and components, made safe to show: control
//! characters that a terminal or a log reader would act on are shown escaped.

use std::borrow::Cow;

/// True for characters a terminal acts on, that break a line, or that
/// reorder what is shown: C0 controls and DEL, C1 controls (U+0080–U+009F,
/// e.g. CSI and NEL), the line and paragraph separators (U+2028, U+2029: new
/// lines to many log readers and editors), and the bidirectional
/// embeddings, overrides and isolates.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The first `max` bytes of `text`, cut back to a character boundary.
pub fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Where a piece of `text` starting at `from` and at most `max` bytes long
/// ends: after the last whitespace within reach (at a character boundary
/// when there is none).
pub fn word_end(text: &str, from: usize, max: usize) -> usize {
    if text.len() - from <= max {
        return text.len();
    }
    let end = from + head(&text[from..], max).len();
    match text[from..end].char_indices().rev().find(|(_, c)| c.is_whitespace()) {
        Some((at, c)) if at > 0 => from + at + c.len_utf8(),
        _ => end,
    }
}

/// `text` as one short line: every unsafe character (controls, line
/// separators, bidirectional overrides) a space, at most `max` characters,
/// trimmed. For what a component says about a file: a label, a metadata
/// field, a message.
pub fn one_line(text: &str, max: usize) -> String {
    let line: String = text.chars().map(|c| if is_unsafe(c) { ' ' } else { c }).take(max).collect();
    line.trim().to_string()
}

/// `text` for a terminal or a plain-text file: every unsafe character except
/// newline and tab becomes a visible escape (`\x1b`, `\u{202e}`), so file
/// content cannot move the cursor, set the title or hide text.
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    escape(
        text,
        |c| c != '\n' && c != '\t' && is_unsafe(c),
        |c, out| {
            let n = c as u32;
            if n < 0x100 {
                out.push_str(&format!("\\x{n:02x}"));
            } else {
                out.push_str(&format!("\\u{{{n:x}}}"));
            }
        },
    )
}

/// `text` for one log line: as [`for_terminal`], and newlines and tabs too,
/// so a message cannot forge a second line.
pub fn for_log(text: &str) -> Cow<'_, str> {
    escape(text, is_unsafe, |c, out| match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    })
}

/// Pretty JSON for a terminal: serde_json escapes C0 controls inside strings
/// already, so a raw newline is layout; the other unsafe characters only occur
/// inside strings, where `\uXXXX` is valid.
pub fn for_json(json: &str) -> Cow<'_, str> {
    escape(json, |c| c != '\n' && is_unsafe(c), |c, out| out.push_str(&format!("\\u{:04x}", c as u32)))
}

fn escape(text: &str, unsafe_char: impl Fn(char) -> bool, write: impl Fn(char, &mut String)) -> Cow<'_, str> {
    if !text.chars().any(&unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            write(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_end_on_character_boundaries() {
        assert_eq!(head("abc", 10), "abc");
        assert_eq!(head("abcdef", 3), "abc");
        assert_eq!(head("aé", 2), "a", "é is two bytes");
    }

    #[test]
    fn pieces_end_after_whitespace_on_character_boundaries() {
        assert_eq!(word_end("abc def", 0, 100), 7);
        assert_eq!(word_end("abc def ghi", 0, 9), 8);
        assert_eq!(word_end("ab\u{3000}cdefgh", 0, 7), 5, "after a 3-byte space");
        assert_eq!(word_end("ééééé", 0, 5), 4, "no whitespace: a character boundary");
        assert_eq!(word_end("abc def ghi", 4, 5), 8);
    }

    #[test]
    fn escapes_what_a_terminal_would_act_on() {
        assert_eq!(for_terminal("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(for_terminal("\x1b]0;pwned\x07x\r"), "\\x1b]0;pwned\\x07x\\x0d");
        assert_eq!(for_terminal("a\u{9b}2Jb\u{202e}c"), "a\\x9b2Jb\\u{202e}c");
        assert_eq!(for_log("one\nFAKE line\t\x1b"), "one\\nFAKE line\\t\\u{1b}");
        assert_eq!(for_log("a\u{2028}FAKE\u{2029}b\u{85}c"), "a\\u{2028}FAKE\\u{2029}b\\u{85}c");
        let json = serde_json::to_string_pretty(&serde_json::json!({"t": "a\u{9b}b\u{1b}"})).unwrap();
        let shown = for_json(&json);
        assert_eq!(shown, "{\n  \"t\": \"a\\u009bb\\u001b\"\n}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap()["t"], "a\u{9b}b\u{1b}");
    }
}
