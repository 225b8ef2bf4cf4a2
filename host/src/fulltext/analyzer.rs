//! The text analyzer of every keyword field: English as Lucene's
//! EnglishAnalyzer reads it (what BM25 baselines such as BEIR's use), plus
//! code identifiers split so "user name" finds `getUserName`.

use std::collections::HashMap;
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
        KeptStems,
    )
}

/// For queries: the same without the camelCase split. A query's `FoxP3`
/// then looks for the whole word (which `FOXP3` indexed as too), not for
/// its parts at one position, which only the same casing would hold;
/// "user name" still finds `getUserName` by the parts indexed. Each query
/// is read by a fresh copy, so keeping stems would only allocate: the same
/// stemmer runs without [`KeptStems`].
pub fn query_analyzer() -> TextAnalyzer {
    english(
        TextAnalyzer::builder(SimpleTokenizer::default()).filter(RemoveLongFilter::limit(40)),
        Stemmer::new(Language::English),
    )
}

/// The word positions the analyzers give `text`: one per word of their
/// tokenizer ([`SimpleTokenizer`]: each run of letters and digits). Their
/// filters drop words or split them but keep positions (camelCase parts take
/// their word's), so a word's position is the count of words before it.
pub fn positions(text: &str) -> u32 {
    let mut words = 0u32;
    let mut in_word = false;
    for c in text.chars() {
        // What `SimpleTokenizer` asks of each char (std answers ASCII without Unicode's tables).
        let letter = c.is_alphanumeric();
        if letter && !in_word {
            words = words.saturating_add(1);
        }
        in_word = letter;
    }
    words
}

/// Lowercased, English stop words dropped, then stemmed by `stem`.
fn english<T: Tokenizer, S: TokenFilter>(builder: tantivy::tokenizer::TextAnalyzerBuilder<T>, stem: S) -> TextAnalyzer {
    let builder = builder.filter(LowerCaser);
    match StopWordFilter::new(Language::English) {
        Some(stop) => builder.filter(stop).filter(stem).build(),
        None => builder.filter(stem).build(),
    }
}

/// Stems kept by one analyzer at most; past it they are dropped and kept
/// anew (a code base's identifiers are unbounded; ~2 MB at most).
const KEPT_STEMS: usize = 1 << 15;

/// English (Porter2) stemming, the algorithm tantivy's `Stemmer` runs, with
/// each word's stem kept: text repeats a small vocabulary, and stemming every
/// occurrence anew was a third of the keyword indexing thread's time. An
/// analyzer is cloned per indexing thread and field, so each keeps its own.
#[derive(Clone)]
struct KeptStems;

impl TokenFilter for KeptStems {
    type Tokenizer<T: Tokenizer> = KeptStemmer<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> KeptStemmer<T> {
        KeptStemmer { inner: tokenizer, stems: HashMap::new() }
    }
}

#[derive(Clone)]
struct KeptStemmer<T> {
    inner: T,
    /// Word → its stem.
    stems: HashMap<Box<str>, Box<str>>,
}

impl<T: Tokenizer> Tokenizer for KeptStemmer<T> {
    type TokenStream<'a> = KeptStemStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        KeptStemStream {
            tail: self.inner.token_stream(text),
            stems: &mut self.stems,
            stemmer: frostem::Stemmer::new(frostem::Algorithm::English),
        }
    }
}

struct KeptStemStream<'a, T> {
    tail: T,
    stems: &'a mut HashMap<Box<str>, Box<str>>,
    stemmer: frostem::Stemmer,
}

impl<T: TokenStream> TokenStream for KeptStemStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        match self.stems.get(token.text.as_str()) {
            Some(stem) => {
                token.text.clear();
                token.text.push_str(stem);
            }
            None => {
                // Checked per word: one generated file can hold any number of them.
                if self.stems.len() >= KEPT_STEMS {
                    self.stems.clear();
                }
                let stem: Box<str> = self.stemmer.stem(&token.text).into();
                let word = std::mem::replace(&mut token.text, stem.to_string());
                self.stems.insert(word.into_boxed_str(), stem);
            }
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

/// Where `word` splits as camelCase: before an upper-case letter that follows
/// a lower-case one (`getUser`), and before the last capital of a run that a
/// lower-case letter follows (`HTTPServer` → `HTTP`, `Server`).
fn camel_cuts(word: &str) -> Vec<usize> {
    // Most words have no capital past their first letter: no cut, and nothing to allocate.
    if !word.chars().skip(1).any(char::is_uppercase) {
        return Vec::new();
    }
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
    fn kept_stems_are_tantivys_stems_and_stay_so_once_dropped() {
        let plain = || TextAnalyzer::builder(SimpleTokenizer::default()).filter(LowerCaser);
        let mut tantivys = plain().filter(Stemmer::new(Language::English)).build();
        let mut kept = plain().filter(KeptStems).build();
        let all = |analyzer: &mut TextAnalyzer, text: &str| {
            let mut stream = analyzer.token_stream(text);
            let mut out = Vec::new();
            while stream.advance() {
                out.push((stream.token().text.clone(), stream.token().position, stream.token().offset_from));
            }
            out
        };
        // More distinct words than are kept, each met several times, over many
        // texts, so stems are found kept, missed, and dropped in between.
        let stems = ["connect", "generaliz", "happ", "run", "argu", "nation", "cri"];
        let endings = ["ing", "ed", "ies", "ations", "ness", "ly", "s", "", "ement"];
        let words: Vec<String> = (0..KEPT_STEMS + 5_000)
            .map(|n| {
                let prefix: String =
                    [n % 26, n / 26 % 26, n / 676 % 26].iter().map(|&d| (b'a' + d as u8) as char).collect();
                format!("{prefix}{}{}", stems[n % stems.len()], endings[n / 7 % endings.len()])
            })
            .collect();
        let mut compared = 0;
        for round in 0..3 {
            // Texts of fewer words than are kept, and (the last round) one text of them all.
            let size = [4_000, 5_000, words.len()][round];
            for text in words.chunks(size) {
                let text = format!("{} Running RUNS the {}", text.join(" "), text[..10].join("  "));
                let expected = all(&mut tantivys, &text);
                assert_eq!(all(&mut kept, &text), expected);
                compared += expected.len();
            }
        }
        assert!(compared > 3 * words.len());
    }

    #[test]
    fn kept_stems_stay_bounded_within_one_text() {
        let mut stemmer = KeptStems.transform(SimpleTokenizer::default());
        let text: String = (0..KEPT_STEMS + 100).map(|n| format!("w{n}x ")).collect();
        let mut words = 0;
        let mut stream = stemmer.token_stream(&text);
        while stream.advance() {
            words += 1;
        }
        assert_eq!(words, KEPT_STEMS + 100);
        assert!(stemmer.stems.len() <= KEPT_STEMS, "{} stems kept", stemmer.stems.len());
    }

    #[test]
    fn positions_are_those_the_analyzer_numbers() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut texts: Vec<String> = [
            "",
            " ",
            "getUserName() -> HTTPServer",
            "the of and a",
            "日本語 テキスト café naïve",
            "IL-6 0-dimensional",
            "snake_case::path/to.rs",
            "\u{2028}\t\u{a0}x",
            "x²³ ½ Ⅻ ٣",
            &"y".repeat(60),
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        for entry in std::fs::read_dir(root.join("fulltext")).unwrap().chain(std::fs::read_dir(&root).unwrap()) {
            let path = entry.unwrap().path();
            if let Ok(text) = std::fs::read_to_string(&path) {
                texts.push(text);
            }
        }
        let mut words = TextAnalyzer::from(SimpleTokenizer::default());
        let mut analyzer = analyzer();
        for text in &texts {
            let mut stream = words.token_stream(text);
            let mut count = 0;
            while stream.advance() {
                count += 1;
            }
            let counted = positions(text);
            assert_eq!(counted, count, "{text:.80}");
            // Every position the analyzer gives lies inside them (filters drop words, not positions).
            let mut stream = analyzer.token_stream(text);
            while stream.advance() {
                assert!((stream.token().position as u32) < counted, "{text:.80}");
            }
        }
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
