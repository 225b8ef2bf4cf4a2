//! Small text helpers shared by tools.

/// Cuts `s` to at most `max` bytes on a character boundary, adding `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// True when the bytes look like a binary file: a NUL byte in the first 8 KiB,
/// the same test git and ripgrep use.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0)
}

/// The first bytes [`looks_binary`] looks at.
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// Milliseconds since the epoch as RFC 3339 UTC (`2025-11-17T09:30:00.123Z`).
pub fn rfc3339(millis: i64) -> String {
    let nanos = i128::from(millis) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| millis.to_string())
}

/// Words too common to say anything about a topic.
const STOPWORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do", "does",
    "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me",
    "my", "of", "on", "or", "our", "she", "should", "so", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
];

/// The words of a topic worth matching, lowercased: stopwords dropped unless
/// nothing else is left.
pub fn keywords(topic: &str) -> Vec<String> {
    let words: Vec<String> =
        topic.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    let significant: Vec<String> = words.iter().filter(|w| !STOPWORDS.contains(&w.as_str())).cloned().collect();
    if significant.is_empty() { words } else { significant }
}

/// How well lowercased `text` matches a topic's `words`: each word counts up to
/// five times, the whole `phrase` (lowercased) three times as much. 0 = no match.
pub fn keyword_score(text_lower: &str, words: &[String], phrase: &str) -> f64 {
    let per_word: usize = words.iter().map(|w| text_lower.matches(w.as_str()).count().min(5)).sum();
    let phrase_hits = if words.len() > 1 { text_lower.matches(phrase).count().min(5) * 3 } else { 0 };
    (per_word + phrase_hits) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_763_371_800_123), "2025-11-17T09:30:00.123Z");
    }

    #[test]
    fn keywords_drop_stopwords_unless_nothing_is_left() {
        assert_eq!(keywords("The choice of a Database"), ["choice", "database"]);
        assert_eq!(keywords("what is it"), ["what", "is", "it"]);
    }

    #[test]
    fn keyword_score_rewards_the_phrase() {
        let words = keywords("api design");
        let both = keyword_score("our api design review", &words, "api design");
        let apart = keyword_score("the api and its design", &words, "api design");
        assert!(both > apart && apart > 0.0, "{both} {apart}");
        assert_eq!(keyword_score("nothing here", &words, "api design"), 0.0);
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("hello", 10), "hello");
        assert_eq!(truncate("hello", 3), "hel…");
        // 'é' is two bytes: cutting inside it must back off.
        assert_eq!(truncate("héllo", 2), "h…");
    }

    #[test]
    fn detects_binary() {
        assert!(!looks_binary(b"plain text\n"));
        assert!(looks_binary(b"PK\x03\x04\x00\x00"));
    }
}
