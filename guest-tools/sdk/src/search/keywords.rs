//! Keyword scoring: the words of a topic worth matching, and how well a text
//! matches them (`get_context` and `get_decision_history` rank files by it;
//! `search_by_question` picks the sentences that answer with them).

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
}
