//! Exact lookups. A query that is an identifier, a path or a quoted string
//! (`write_txn`, `tokio::sync::mpsc`, `src/main.rs`, `getUserName`,
//! `"connection reset by peer"`) is also looked for as written, and the
//! files holding it rank first in every mode: by meaning alone an identifier
//! is buried under prose about similar things, and BM25 alone can rank a file
//! holding its words apart above the one that defines it.

use crate::Error;
use crate::bindings::ragbox::tools::corpus::Filter;
use crate::bindings::ragbox::tools::fulltext;
use crate::hybrid::Scored;
use std::collections::HashSet;

/// Longest query (in words) looked for as written when it is not quoted.
const MAX_WORDS: usize = 12;

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
/// apostrophe inside it: "long-running" and "don't" are English.
fn looks_like_code(token: &str) -> bool {
    let word = token.trim_matches(|c: char| !c.is_alphanumeric());
    if word.chars().count() < 3 {
        return false;
    }
    let joined = word.chars().any(|c| !c.is_alphanumeric() && c != '-' && c != '\'');
    let called = token.contains("()");
    let chars: Vec<char> = word.chars().collect();
    let inner_capital = chars.windows(2).any(|w| w[0].is_lowercase() && w[1].is_uppercase());
    let letters_and_digits = chars.iter().any(|c| c.is_alphabetic()) && chars.iter().any(|c| c.is_ascii_digit());
    joined || called || inner_capital || letters_and_digits
}

/// `hits` (one mode's ranking, best first) with the chunks of up to `k`
/// documents holding `query` as written moved ahead, in keyword order; the
/// rest follow in their own order, cut at `k`. A moved hit takes the list's
/// best relevance (1 for an empty list), so relevance never rises down the list.
pub fn first(query: &str, hits: Vec<Scored>, k: usize, filter: &Filter) -> Result<Vec<Scored>, Error> {
    let Some(phrase) = phrase(query) else { return Ok(hits) };
    // The index drops stop words and stems (`is_empty` would find any "empty"): a
    // hit counts only when its text holds the query's words in a row, as written.
    let wanted = format!(" {} ", words_of(query));
    let exact: Vec<_> = fulltext::search(&phrase, (k as u32).saturating_mul(4).max(50), filter)?
        .into_iter()
        .filter(|h| format!(" {} ", words_of(&h.chunk.text)).contains(&wanted))
        .take(k)
        .collect();
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
    fn plain_words_are_left_to_the_mode() {
        for query in [
            "how do I extract a tar archive",
            "tokio",
            "long-running tasks that don't stop",
            "Returns the number of bytes written, or an error when the buffer is full and nothing more fits in it",
            "a",
            "\"",
            "",
        ] {
            assert_eq!(phrase(query), None, "{query}");
        }
    }
}
