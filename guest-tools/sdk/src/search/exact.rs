//! Exact lookups. A query that is an identifier, a path or a quoted string
//! (`write_txn`, `tokio::sync::mpsc`, `src/main.rs`, `getUserName`,
//! `"connection reset by peer"`) is also looked for as written, and the
//! files holding it rank first in every mode: by meaning alone an identifier
//! is buried under prose about similar things, and BM25 alone can rank a file
//! holding its words apart above the one that defines it.

use crate::Error;
use crate::bindings::ragbox::tools::corpus::Filter;
use crate::bindings::ragbox::tools::fulltext;
use crate::search::scored::Scored;
use ragbox_protocol::script;
use std::collections::HashSet;

/// Longest query (in words) looked for as written when it is not quoted.
const MAX_WORDS: usize = 12;
/// Keyword hits looked through for the query as written when the first look
/// found it only loosely: the index drops stop words, so `from_value` is
/// searched as `value`, and the files naming it can rank past the first 50.
const WIDE_LOOK: u32 = 1000;

/// The keyword query that finds `query` as written (a quoted phrase of its
/// words), or `None` for a query in plain words, which each mode ranks alone.
/// Looked up: a quoted query; a single token with a digit, an inner capital
/// or punctuation between its parts; a query of up to 12 words holding
/// such a token (an error message quoting a path or a symbol).
pub fn phrase(query: &str) -> Option<String> {
    let q = query.trim();
    let quoted = q.len() > 2 && q.starts_with('"') && q.ends_with('"') && !q[1..q.len() - 1].contains('"');
    let tokens: Vec<&str> = q.split_whitespace().collect();
    let wanted = quoted || (tokens.len() <= MAX_WORDS && tokens.iter().any(|t| looks_like_code(t)));
    let words: Vec<&str> = q.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    (wanted && !words.is_empty()).then(|| format!("\"{}\"", words.join(" ")))
}

/// True for a token that reads as code rather than a word: `a_b`, `a::b`,
/// `a.b`, `a/b`, `f()`, `getX`, `utf8`. Punctuation around it (quotes,
/// backticks, a trailing comma) does not count, nor a hyphen or an
/// apostrophe inside it: "long-running" and "don't" are English; nor CJK
/// punctuation (`設定、ログ` is two words, as CJK text writes them).
fn looks_like_code(token: &str) -> bool {
    let word = token.trim_matches(|c: char| !c.is_alphanumeric());
    if word.chars().count() < 3 {
        return false;
    }
    let joined = word.chars().any(|c| !c.is_alphanumeric() && c != '-' && c != '\'' && !script::is_cjk_punctuation(c));
    let called = token.contains("()");
    let chars: Vec<char> = word.chars().collect();
    let inner_capital = chars.windows(2).any(|w| w[0].is_lowercase() && w[1].is_uppercase());
    let letters_and_digits = chars.iter().any(|c| c.is_alphabetic()) && chars.iter().any(|c| c.is_ascii_digit());
    joined || called || inner_capital || letters_and_digits
}

/// How closely a chunk holds the query, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Held {
    /// As typed, with no letter, digit or `_` joined on either side:
    /// `byte_offset` in `fn byte_offset(&self)`.
    AsWritten,
    /// As typed, inside a longer name: `byte_offset` in `max_byte_offset`.
    Inside,
    /// Only its words in a row, in any case and with any separators:
    /// `byte_offset` in `GOD_BYTE_OFFSET` or "the byte offset".
    Words,
}

/// How `text` holds `literal` (the query as typed) or, failing that, `words`
/// (the query's words as [`words_of`] gives them, padded with spaces). CJK
/// text has no spaces between its words: a CJK character beside the
/// literal makes no longer name of it.
fn held(literal: &str, words: &str, text: &str) -> Option<Held> {
    let joins = |c: Option<char>| c.is_some_and(|c| (c.is_alphanumeric() && !script::is_cjk(c)) || c == '_');
    let mut inside = false;
    for (at, _) in text.match_indices(literal) {
        let (before, after) = (text[..at].chars().next_back(), text[at + literal.len()..].chars().next());
        if !joins(before) && !joins(after) {
            return Some(Held::AsWritten);
        }
        inside = true;
    }
    if inside {
        return Some(Held::Inside);
    }
    format!(" {} ", words_of(text)).contains(words).then_some(Held::Words)
}

/// `hits` (one mode's ranking, best first) with the chunks of up to `k`
/// documents holding `query` moved ahead: those holding it as written first,
/// then inside longer names, then those holding only its words in a row, each
/// in keyword order; the rest follow in their own order, cut at `k`. A moved
/// hit takes the list's best relevance (1 for an empty list), so relevance
/// never rises down the list.
pub fn first(query: &str, hits: Vec<Scored>, k: usize, filter: &Filter) -> Result<Vec<Scored>, Error> {
    let Some(phrase) = phrase(query) else { return Ok(hits) };
    // The index drops stop words and stems (`is_empty` would find any "empty"): a
    // hit counts only when its text holds the query's words in a row.
    let words = format!(" {} ", words_of(query));
    let literal = query.trim().trim_matches(|c| c == '"' || c == '`');
    let look = |n: u32| -> Result<(Vec<_>, bool), Error> {
        let found = fulltext::search(&phrase, n, filter)?;
        let full = found.len() == n as usize;
        let mut held: Vec<_> =
            found.into_iter().filter_map(|h| held(literal, &words, &h.chunk.text).map(|how| (how, h))).collect();
        // Stable: keyword order within each kind.
        held.sort_by_key(|(how, _)| *how);
        Ok((held, full))
    };
    let (mut exact, full) = look((k as u32).saturating_mul(4).max(50))?;
    if full && exact.first().is_none_or(|(how, _)| *how == Held::Words) {
        exact = look(WIDE_LOOK.max(k as u32))?.0;
    }
    let exact: Vec<_> = exact.into_iter().map(|(_, hit)| hit).take(k).collect();
    if exact.is_empty() {
        return Ok(hits);
    }
    let best = hits.first().map_or(1.0, |s| s.relevance);
    let moved: HashSet<(String, u32)> = exact.iter().map(|h| (h.document.path.clone(), h.ordinal)).collect();
    // A moved hit's own score is above any list's (0..1): the chunk naming
    // the identifier leads its file's answer.
    let mut out: Vec<Scored> = exact.into_iter().map(|hit| Scored { hit, relevance: best, own: 2.0 }).collect();
    out.extend(hits.into_iter().filter(|s| !moved.contains(&(s.hit.document.path.clone(), s.hit.ordinal))));
    out.truncate(k);
    Ok(out)
}

/// A text's words, lowercased, one space between them.
fn words_of(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ").to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_paths_and_quotes_are_looked_up_as_written() {
        for (query, want) in [
            ("write_txn", "\"write txn\""),
            ("tokio::sync::mpsc", "\"tokio sync mpsc\""),
            ("src/main.rs", "\"src main rs\""),
            ("getUserName", "\"getUserName\""),
            ("`parse_args()`", "\"parse args\""),
            ("flush()", "\"flush\""),
            ("sha256", "\"sha256\""),
            ("\"connection reset by peer\"", "\"connection reset by peer\""),
            ("error: cannot find `foo_bar` in this scope", "\"error cannot find foo bar in this scope\""),
        ] {
            assert_eq!(phrase(query).as_deref(), Some(want), "{query}");
        }
    }

    #[test]
    fn a_hit_must_hold_the_words_in_a_row() {
        let wanted = format!(" {} ", words_of("is_empty"));
        assert!(format!(" {} ", words_of("fn is_empty(&self) -> bool")).contains(&wanted));
        assert!(!format!(" {} ", words_of("this empty queue")).contains(&wanted));
        assert!(!format!(" {} ", words_of("empty")).contains(&wanted));
    }

    #[test]
    fn the_query_as_written_ranks_above_its_words_in_a_row() {
        let (literal, words) = ("byte_offset", format!(" {} ", words_of("byte_offset")));
        let how = |text| held(literal, &words, text);
        assert_eq!(how("fn byte_offset(&self) -> usize"), Some(Held::AsWritten));
        assert_eq!(how("let n = byte_offset;"), Some(Held::AsWritten));
        assert_eq!(how("byte_offset"), Some(Held::AsWritten));
        assert_eq!(how("fn max_byte_offset() {} // see max_byte_offset"), Some(Held::Inside));
        assert_eq!(how("const GOD_BYTE_OFFSET: usize = 9;"), Some(Held::Words));
        assert_eq!(how("the byte offset of a page"), Some(Held::Words));
        assert_eq!(how("offset of a byte"), None);
        // A later standalone occurrence counts, after one inside a longer name.
        assert_eq!(how("max_byte_offset, then byte_offset"), Some(Held::AsWritten));
        // CJK neighbours join nothing: the literal stands as written in its run.
        let (literal, words) = ("設定ファイル", format!(" {} ", words_of("設定ファイル")));
        assert_eq!(held(literal, &words, "この設定ファイルを開く"), Some(Held::AsWritten));
        assert_eq!(held("v2", &format!(" {} ", words_of("v2")), "設定v2を"), Some(Held::AsWritten));
        assert!(Held::AsWritten < Held::Inside && Held::Inside < Held::Words);
    }

    #[test]
    fn plain_words_are_left_to_the_mode() {
        for query in [
            "how do I extract a tar archive",
            "tokio",
            "long-running tasks that don't stop",
            "Returns the number of bytes written, or an error when the buffer is full and nothing more fits in it",
            "a",
            "\"",
            "",
            "設定ファイル、ログの場所",
            "システムを停止する。その後「再起動」を選ぶ",
            "中黒・区切りの語",
            "設定，ログ（一覧）",
        ] {
            assert_eq!(phrase(query), None, "{query}");
        }
    }
}
