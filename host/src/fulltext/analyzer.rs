//! The text analyzer of every keyword field: English as Lucene's
//! EnglishAnalyzer reads it (what BM25 baselines such as BEIR's use), plus
//! code identifiers split so "user name" finds `getUserName`.

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer, Token, TokenFilter,
    TokenStream, Tokenizer,
};

/// The analyzer's name in the schema; a new name means a new index format.
pub const NAME: &str = "en_words_v2";

/// For indexing: words (split at anything not a letter or digit, so
/// `snake_case`, `--flags` and `{{placeholders}}` come apart), camelCase
/// identifiers kept whole and split too, lowercased, stop words dropped,
/// Porter-stemmed.
pub fn analyzer() -> TextAnalyzer {
    english(
        TextAnalyzer::builder(SimpleTokenizer::default()).filter(RemoveLongFilter::limit(40)).filter(CamelCaseSplit),
    )
}

/// For queries: the same without the camelCase split. A query's `FoxP3`
/// then looks for the whole word (which `FOXP3` indexed as too), not for
/// its parts at one position, which only the same casing would hold;
/// "user name" still finds `getUserName` by the parts indexed.
pub fn query_analyzer() -> TextAnalyzer {
    english(TextAnalyzer::builder(SimpleTokenizer::default()).filter(RemoveLongFilter::limit(40)))
}

fn english<T: Tokenizer>(builder: tantivy::tokenizer::TextAnalyzerBuilder<T>) -> TextAnalyzer {
    let builder = builder.filter(LowerCaser);
    match StopWordFilter::new(Language::English) {
        Some(stop) => builder.filter(stop).filter(Stemmer::new(Language::English)).build(),
        None => builder.filter(Stemmer::new(Language::English)).build(),
    }
}

/// Where `word` splits as camelCase: before an upper-case letter that follows
/// a lower-case one (`getUser`), and before the last capital of a run that a
/// lower-case letter follows (`HTTPServer` → `HTTP`, `Server`).
fn camel_cuts(word: &str) -> Vec<usize> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut cuts = Vec::new();
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        if c.is_uppercase() && (prev.is_lowercase() || (prev.is_uppercase() && next_lower)) {
            cuts.push(at);
        }
    }
    // Parts of one letter (`mRNA`, `iPhone`, `getX`) are not words: keep those whole.
    let mut bounds = Vec::with_capacity(cuts.len() + 2);
    bounds.push(0);
    bounds.extend(&cuts);
    bounds.push(word.len());
    if bounds.windows(2).any(|w| word[w[0]..w[1]].chars().nth(1).is_none()) {
        return Vec::new();
    }
    cuts
}

/// Emits each token, then its camelCase parts at the same position (as
/// Lucene's word delimiter graph does), so both the identifier and its words match.
#[derive(Clone)]
struct CamelCaseSplit;

impl TokenFilter for CamelCaseSplit {
    type Tokenizer<T: Tokenizer> = CamelCaseSplitter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> CamelCaseSplitter<T> {
        CamelCaseSplitter { inner: tokenizer, pending: Vec::new() }
    }
}

#[derive(Clone)]
struct CamelCaseSplitter<T> {
    inner: T,
    pending: Vec<Token>,
}

impl<T: Tokenizer> Tokenizer for CamelCaseSplitter<T> {
    type TokenStream<'a> = CamelCaseStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        self.pending.clear();
        CamelCaseStream { tail: self.inner.token_stream(text), pending: &mut self.pending }
    }
}

struct CamelCaseStream<'a, T> {
    tail: T,
    /// The tokens still to emit, last first: the current one is the last.
    pending: &'a mut Vec<Token>,
}

impl<T: TokenStream> CamelCaseStream<'_, T> {
    fn split(&mut self) {
        let token = self.tail.token();
        let cuts = camel_cuts(&token.text);
        if cuts.is_empty() {
            return;
        }
        let mut ends: Vec<usize> = cuts.clone();
        ends.push(token.text.len());
        let starts = std::iter::once(0).chain(cuts);
        let parts: Vec<Token> =
            starts.zip(ends).map(|(s, e)| Token { text: token.text[s..e].to_string(), ..token.clone() }).collect();
        self.pending.extend(parts.into_iter().rev());
        self.pending.push(token.clone());
    }
}

impl<T: TokenStream> TokenStream for CamelCaseStream<'_, T> {
    fn advance(&mut self) -> bool {
        self.pending.pop();
        if !self.pending.is_empty() {
            return true;
        }
        if !self.tail.advance() {
            return false;
        }
        self.split();
        true
    }

    fn token(&self) -> &Token {
        self.pending.last().unwrap_or_else(|| self.tail.token())
    }

    fn token_mut(&mut self) -> &mut Token {
        self.pending.last_mut().unwrap_or_else(|| self.tail.token_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<(String, usize)> {
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push((stream.token().text.clone(), stream.token().position));
        }
        out
    }

    #[test]
    fn identifiers_split_into_their_words() {
        let words = |t: &str| terms(t).into_iter().map(|(w, _)| w).collect::<Vec<_>>();
        assert_eq!(words("getUserName"), ["getusernam", "get", "user", "name"]);
        assert_eq!(words("HTTPServer parse_config"), ["httpserver", "http", "server", "pars", "config"]);
        assert_eq!(words("tar {{[-C|--directory]}} {{path/to/file}}"), ["tar", "c", "directori", "path", "file"]);
        assert_eq!(words("The archives"), ["archiv"]);
        assert_eq!(words("lowercase ALLCAPS"), ["lowercas", "allcap"]);
    }

    #[test]
    fn parts_share_the_identifier_position() {
        assert_eq!(terms("call getUser now").into_iter().map(|(_, p)| p).collect::<Vec<_>>(), [0, 1, 1, 1, 2]);
    }

    #[test]
    fn cuts() {
        assert_eq!(camel_cuts("getUserName"), [3, 7]);
        assert_eq!(camel_cuts("HTTPServer"), [4]);
        assert_eq!(camel_cuts("ÉtéHiver"), [5]);
        assert!(camel_cuts("plain").is_empty() && camel_cuts("ABC").is_empty() && camel_cuts("").is_empty());
        assert!(camel_cuts("mRNA").is_empty() && camel_cuts("iPhone").is_empty() && camel_cuts("getX").is_empty());
    }
}
