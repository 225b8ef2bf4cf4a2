//! The text analyzer of every keyword field. Text is cut into words and
//! CJK runs ([`words`]). A word is lowercased, dropped when it is a stop word
//! of its language, its diacritics folded, and stemmed by that language's
//! Snowball stemmer: the language its document is written in, per script
//! ([`language`]). A code identifier is also split, so "user name" finds
//! `getUserName`. A CJK run is read as overlapping character pairs (a lone
//! character alone), as Lucene's CJK analyzer reads it. English text reads
//! as Lucene's EnglishAnalyzer (what BM25 baselines such as BEIR's use).

use super::language::{self, Language, Languages};
use super::words::{self, Piece, Script};
use std::collections::HashMap;
use tantivy::tokenizer::{PreTokenizedString, TextAnalyzer, Token, TokenStream, Tokenizer};

/// The analyzer's name in the schema; a new name means a new index format.
pub const NAME: &str = "words_v3";

pub use words::positions;

/// For a document's text: its languages read from the line it opens with
/// ([`open_with`]), or told from the text itself when it has none;
/// camelCase identifiers kept whole and split too.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::from(Words::new(Reading::Detect, true))
}

/// What opens the line naming a text's languages: no text the index is
/// given starts with it but through [`open_with`].
const OPENING_MARK: char = '\u{1}';

/// Opens `text` with a line naming `languages`, which [`analyzer`] reads
/// them from instead of telling them again: the index tells a document's
/// languages once, for its record (its title and path words are read in
/// them too), and the text field's analyzer runs later, on the writer's thread.
pub fn open_with(text: &mut String, languages: Languages) {
    let [latin, cyrillic] = languages.codes();
    text.insert_str(0, &format!("{OPENING_MARK}{latin} {cyrillic}\n"));
}

/// The languages [`open_with`] named at the start of `text`, and the text after that line.
fn opened(text: &str) -> Option<(Languages, &str)> {
    let (line, rest) = text.strip_prefix(OPENING_MARK)?.split_once('\n')?;
    let (latin, cyrillic) = line.split_once(' ')?;
    Some((Languages::from_codes([latin, cyrillic])?, rest))
}

/// Reads documents' title and path words, each in its text's languages (a
/// title alone is too short to tell), camelCase identifiers kept whole and
/// split too. One for many documents: the words it read are kept for all
/// of them, within one bound ([`KEPT_WORDS`]) whatever their languages.
pub struct ShortFields(Words);

impl Default for ShortFields {
    fn default() -> Self {
        Self(Words::new(Reading::Fixed(Languages::default()), true))
    }
}

impl ShortFields {
    /// `text` read in `languages`, as the index takes it.
    pub fn read(&mut self, text: &str, languages: Languages) -> PreTokenizedString {
        self.0.reading = Reading::Fixed(languages);
        let mut tokens = Vec::new();
        let mut stream = self.0.token_stream(text);
        while stream.advance() {
            tokens.push(stream.token().clone());
        }
        PreTokenizedString { text: text.to_string(), tokens }
    }
}

/// For queries, read in `languages`: as [`analyzer`] without the camelCase
/// split. A query's `FoxP3` then looks for the whole word (which `FOXP3`
/// indexed as too), not for its parts at one position, which only the same
/// casing would hold; "user name" still finds `getUserName` by the parts
/// indexed. The stop words of every language in `also_stop` are dropped
/// too ([`language::also_stop`]).
pub fn query_analyzer(languages: Languages, also_stop: &[Language]) -> TextAnalyzer {
    let mut words = Words::new(Reading::Fixed(languages), false);
    words.also_stop = also_stop.to_vec();
    TextAnalyzer::from(words)
}

/// Where an analyzer takes a text's languages from.
#[derive(Clone, Copy)]
enum Reading {
    /// Read from its opening line, or told from the text.
    Detect,
    /// Given.
    Fixed(Languages),
}

/// The tokenizer behind every analyzer here.
#[derive(Clone)]
struct Words {
    reading: Reading,
    /// Whether camelCase identifiers are split too.
    identifiers: bool,
    /// Languages whose stop words are dropped besides the reading's.
    also_stop: Vec<Language>,
    kept: Kept,
    /// A word's tokens still to emit, last first.
    pending: Vec<Token>,
}

impl Words {
    fn new(reading: Reading, identifiers: bool) -> Self {
        Self { reading, identifiers, also_stop: Vec::new(), kept: Kept::default(), pending: Vec::new() }
    }
}

impl Tokenizer for Words {
    type TokenStream<'a> = WordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordStream<'a> {
        let (languages, body) = match self.reading {
            Reading::Detect => opened(text).unwrap_or_else(|| (language::detect(text), text)),
            Reading::Fixed(languages) => (languages, text),
        };
        self.pending.clear();
        WordStream {
            pieces: words::pieces(body),
            base: text.len() - body.len(),
            languages,
            identifiers: self.identifiers,
            also_stop: &self.also_stop,
            kept: &mut self.kept,
            pending: &mut self.pending,
            run: None,
            next_position: 0,
            token: Token::default(),
        }
    }
}

/// The characters of a CJK run (marks left out) and their byte offsets in it.
type Units<'a> = std::iter::Peekable<std::iter::Filter<std::str::CharIndices<'a>, fn(&(usize, char)) -> bool>>;

/// A CJK run being read in pairs.
struct Run<'a> {
    units: Units<'a>,
    /// The run's byte offset in the text.
    start: usize,
    /// The next pair's position.
    position: usize,
    /// Whether a pair was read.
    started: bool,
}

/// The tokens of one text.
struct WordStream<'a> {
    pieces: words::Pieces<'a>,
    /// The byte offset of the text read in the text given (past its opening line).
    base: usize,
    languages: Languages,
    identifiers: bool,
    also_stop: &'a [Language],
    kept: &'a mut Kept,
    pending: &'a mut Vec<Token>,
    run: Option<Run<'a>>,
    next_position: usize,
    token: Token,
}

impl WordStream<'_> {
    /// Makes the CJK run's next pair (or its lone character) the current
    /// token; false once the run is read.
    fn pair(&mut self) -> bool {
        let Some(run) = &mut self.run else { return false };
        let Some((at, first)) = run.units.next() else {
            self.run = None;
            return false;
        };
        let second = run.units.peek().copied();
        if second.is_none() && run.started {
            // The run's last character, already read as the second of the pair before.
            self.run = None;
            return false;
        }
        self.token.text.clear();
        self.token.text.push(first);
        self.token.offset_from = run.start + at;
        self.token.offset_to = run.start + at + first.len_utf8();
        if let Some((next, c)) = second {
            self.token.text.push(c);
            self.token.offset_to = run.start + next + c.len_utf8();
        }
        self.token.position = run.position;
        self.token.position_length = 1;
        run.position += 1;
        run.started = true;
        true
    }

    /// Reads `word` (at byte `start`, position `position`) into the tokens to
    /// emit: the word, then its camelCase parts at its position (as Lucene's
    /// word delimiter graph does), so both the identifier and its words match.
    fn word(&mut self, word: &str, start: usize, position: usize) {
        let whole = words::capped(word);
        let script = words::word_script(whole);
        let language = self.languages.of(script);
        let mut parts: Vec<(usize, usize)> = Vec::new();
        if self.identifiers {
            // Split before it is cut, each part then cut: cut first, a 41-character
            // identifier ended in a part of one letter, and was kept whole.
            let split = words::cut(word, MAX_SPLIT_CHARS);
            let cuts = camel_cuts(split);
            if !cuts.is_empty() {
                let ends = cuts.iter().copied().chain(std::iter::once(split.len()));
                parts = std::iter::once(0)
                    .chain(cuts.iter().copied())
                    .zip(ends)
                    .map(|(from, to)| (from, from + words::capped(&split[from..to]).len()))
                    .collect();
            }
        }
        // Pushed last first.
        for &(from, to) in parts.iter().rev().chain(std::iter::once(&(0, whole.len()))) {
            let mut text = String::new();
            if self.kept.read(&word[from..to], script, language, self.also_stop, &mut text) {
                let (offset_from, offset_to) = (start + from, start + to);
                self.pending.push(Token { text, offset_from, offset_to, position, position_length: 1 });
            }
        }
    }
}

impl TokenStream for WordStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            if let Some(token) = self.pending.pop() {
                self.token = token;
                return true;
            }
            if self.pair() {
                return true;
            }
            let Some(piece) = self.pieces.next() else { return false };
            let position = self.next_position;
            self.next_position += piece.positions() as usize;
            match piece {
                Piece::Word { text, start } => self.word(text, self.base + start, position),
                Piece::Cjk { text, start } => {
                    let start = self.base + start;
                    let unit: fn(&(usize, char)) -> bool = |&(_, c)| words::script::is_cjk(c);
                    let units = text.char_indices().filter(unit).peekable();
                    self.run = Some(Run { units, start, position, started: false });
                }
            }
        }
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// Characters of a word split into its camelCase parts, at most: a part
/// holds [`words::MAX_WORD_CHARS`] at most, and a word can be any length.
const MAX_SPLIT_CHARS: usize = 4 * words::MAX_WORD_CHARS;

/// Words read by one analyzer at most, over its languages; past it they are
/// dropped and kept anew (a code base's identifiers are unbounded). Each
/// costs its entry (about 33 bytes, in a table of 2^16 slots) and its word
/// and term: a few MB for everyday words, about 13 MB at most for words of
/// 40 four-byte characters each kept with a term as long.
const KEPT_WORDS: usize = 1 << 15;

/// Each word's term as read once: text repeats a small vocabulary, and
/// stemming every occurrence anew was a third of the keyword indexing
/// thread's time. An analyzer is cloned per indexing thread and field, so
/// each keeps its own.
#[derive(Clone, Default)]
struct Kept {
    languages: HashMap<Language, KeptLanguage>,
    /// Words kept over all languages.
    count: usize,
    /// The word being read, lowercased.
    lower: String,
}

/// What one language's words read as.
#[derive(Clone)]
struct KeptLanguage {
    stemmer: frostem::Stemmer,
    /// A one-word analyzer that drops the language's stop words.
    stop: Option<TextAnalyzer>,
    /// Lowercased word → its term, or `None` for a stop word.
    words: HashMap<Box<str>, Option<Box<str>>>,
}

impl KeptLanguage {
    fn new(language: Language) -> Self {
        let stop = language::stop_words(language);
        Self { stemmer: frostem::Stemmer::new(language.algorithm()), stop, words: HashMap::new() }
    }

    /// Whether `lower` (a lowercased word) is one of the language's stop words.
    fn is_stop(&mut self, lower: &str) -> bool {
        self.stop.as_mut().is_some_and(|stop| !stop.token_stream(lower).advance())
    }

    /// The term of `lower` (a lowercased word of `script`), `None` for a stop word.
    fn term(&mut self, lower: &str, script: Script) -> Option<Box<str>> {
        if self.is_stop(lower) {
            return None;
        }
        let folded = words::fold(lower, script);
        Some(self.stemmer.stem(&folded).into())
    }
}

impl Kept {
    /// Writes `word`'s term (of `script`, stemmed in `language`) to `out`;
    /// false for a stop word of `language` or of one of `also_stop`.
    fn read(
        &mut self,
        word: &str,
        script: Script,
        language: Option<Language>,
        also_stop: &[Language],
        out: &mut String,
    ) -> bool {
        self.lower.clear();
        if word.is_ascii() {
            self.lower.push_str(word);
            self.lower.make_ascii_lowercase();
        } else {
            self.lower.extend(word.chars().flat_map(char::to_lowercase));
        }
        for &other in also_stop.iter().filter(|l| l.script() == script && Some(**l) != language) {
            let kept = self.languages.entry(other).or_insert_with(|| KeptLanguage::new(other));
            if kept.is_stop(&self.lower) {
                return false;
            }
        }
        let Some(language) = language else {
            out.push_str(&words::fold(&self.lower, script));
            return true;
        };
        let kept = self.languages.entry(language).or_insert_with(|| KeptLanguage::new(language));
        if let Some(term) = kept.words.get(self.lower.as_str()) {
            return term.as_deref().is_some_and(|t| {
                out.push_str(t);
                true
            });
        }
        // Checked per word: one generated file can hold any number of them.
        if self.count >= KEPT_WORDS {
            self.languages.values_mut().for_each(|k| k.words.clear());
            self.count = 0;
        }
        let kept = self.languages.entry(language).or_insert_with(|| KeptLanguage::new(language));
        let term = kept.term(&self.lower, script);
        if let Some(term) = &term {
            out.push_str(term);
        }
        let found = term.is_some();
        kept.words.insert(self.lower.as_str().into(), term);
        self.count += 1;
        found
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

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::tokenizer::{LowerCaser, SimpleTokenizer, Stemmer, StopWordFilter};

    fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<(String, usize)> {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push((stream.token().text.clone(), stream.token().position));
        }
        out
    }

    fn terms(text: &str) -> Vec<(String, usize)> {
        tokens(&mut analyzer(), text)
    }

    fn words_of(text: &str) -> Vec<String> {
        terms(text).into_iter().map(|(w, _)| w).collect()
    }

    #[test]
    fn identifiers_split_into_their_words() {
        assert_eq!(words_of("getUserName"), ["getusernam", "get", "user", "name"]);
        assert_eq!(words_of("HTTPServer parse_config"), ["httpserver", "http", "server", "pars", "config"]);
        assert_eq!(words_of("tar {{[-C|--directory]}} {{path/to/file}}"), ["tar", "c", "directori", "path", "file"]);
        assert_eq!(words_of("The archives"), ["archiv"]);
        assert_eq!(words_of("lowercase ALLCAPS"), ["lowercas", "allcap"]);
    }

    #[test]
    fn an_identifier_longer_than_a_word_is_split_whole() {
        // 44 characters: cut to 40 first, it ended in a part of one letter (`C`) and kept whole.
        let long = "fetchAuthenticatedUserProfileFromRemoteCache";
        let read = words_of(long);
        assert_eq!(read[0], words::capped(&long.to_lowercase()));
        assert_eq!(read[1..], ["fetch", "authent", "user", "profil", "from", "remot", "cach"]);
        // Each part is cut as a word is, and only so much of a word is split.
        let parts = format!("get{}Name", "X".repeat(50));
        assert_eq!(words_of(&parts)[1..], ["get", &"x".repeat(words::MAX_WORD_CHARS), "name"]);
        // `ab`, `Cdab` …, `Cd` over the first MAX_SPLIT_CHARS, beside the word cut.
        let endless = "abCd".repeat(10_000);
        assert_eq!(words_of(&endless).len(), 1 + 1 + MAX_SPLIT_CHARS / 4);
    }

    #[test]
    fn parts_share_the_identifier_position() {
        assert_eq!(terms("call getUser now").into_iter().map(|(_, p)| p).collect::<Vec<_>>(), [0, 1, 1, 1, 2]);
    }

    #[test]
    fn english_reads_as_tantivys_english_analyzer() {
        // What the index read before languages were told apart: Lucene's English
        // stop words and Porter2 stems, through tantivy's own filters. Words of more
        // than 40 bytes were dropped then; they are cut now, so the texts have none.
        let mut tantivys = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(LowerCaser)
            .filter(StopWordFilter::new(tantivy::tokenizer::Language::English).unwrap())
            .filter(Stemmer::new(tantivy::tokenizer::Language::English))
            .build();
        let mut ours = query_analyzer(Languages::default(), &[]);
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts = vec![
            "The quick brown foxes jumped over the lazy dogs; running RUNS ran".to_string(),
            "Connection resets, generalizations and happiness: argued nationally".to_string(),
        ];
        texts.extend(["../README.md", "../docs/architecture.md"].iter().filter_map(|f| {
            let text = std::fs::read_to_string(root.join(f)).ok()?;
            Some(text.split(|c: char| !c.is_ascii()).collect::<Vec<_>>().join(" "))
        }));
        assert!(texts.len() >= 4);
        let mut words = 0;
        for text in &texts {
            let expected = tokens(&mut tantivys, text);
            assert_eq!(tokens(&mut ours, text), expected);
            words += expected.len();
        }
        assert!(words > 1000, "{words}");
    }

    #[test]
    fn each_language_is_stemmed_and_folded_as_its_own() {
        let german = "Die Paketverwaltung installiert Programme aus den Archiven und hält sie auf dem neuesten \
            Stand. Dazu werden die Paketlisten regelmäßig aktualisiert und die Abhängigkeiten zwischen den Paketen \
            automatisch aufgelöst, sodass das System in einem konsistenten Zustand bleibt.";
        let read = words_of(german);
        // German stop words dropped, diacritics folded, German stems: a word's forms are one.
        assert!(!read.iter().any(|w| ["die", "und", "den", "sie"].contains(&w.as_str())), "{read:?}");
        assert!(read.iter().all(|w| w.is_ascii()) && read.contains(&"abhang".to_string()), "{read:?}");
        let mut query = query_analyzer(Languages { latin: Language::German, ..Languages::default() }, &[]);
        let forms: Vec<_> = ["Paket", "Pakete", "Paketen", "Paketes"].map(|w| tokens(&mut query, w)).into();
        assert!(forms.windows(2).all(|w| w[0] == w[1]), "{forms:?}");
        // In English, the same words are other terms.
        assert_ne!(tokens(&mut query_analyzer(Languages::default(), &[]), "Paketen"), forms[0]);
        // `resume` finds `résumé`, whatever the language reading them.
        for latin in [Language::English, Language::French, Language::German] {
            let mut a = query_analyzer(Languages { latin, ..Languages::default() }, &[]);
            assert_eq!(tokens(&mut a, "résumé"), tokens(&mut a, "resume"), "{latin:?}");
        }
        // Cyrillic words are Russian's, Greek words Greek's, in any document.
        assert_eq!(words_of("файлы"), ["файл"]);
        assert_eq!(words_of("αρχεία"), words_of("αρχεια"));
    }

    #[test]
    fn a_text_opened_with_its_languages_is_read_in_them() {
        let english = "The packages are installed from the archives and kept up to date by the package manager.";
        let german = Languages { latin: Language::German, ..Languages::default() };
        let mut text = english.to_string();
        open_with(&mut text, german);
        // Read in German though it would be told English; the opening line is no word.
        let read = tokens(&mut analyzer(), &text);
        let mut fixed = TextAnalyzer::from(Words::new(Reading::Fixed(german), true));
        assert_eq!(read, tokens(&mut fixed, english));
        assert_ne!(read, terms(english));
        assert_eq!(read.first().map(|(_, p)| *p), Some(0));
        // Offsets are the text's as given.
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(&text);
        assert!(stream.advance());
        assert_eq!(&text[stream.token().offset_from..stream.token().offset_to], "The");
        // A line that only looks like one is the text's own (its stop word counts a position too).
        assert_eq!(
            terms("\u{1}xx yy\nThe archives"),
            [("xx".to_string(), 0), ("yy".to_string(), 1), ("archiv".to_string(), 3)]
        );
    }

    #[test]
    fn short_fields_are_read_in_the_languages_given_each_time() {
        let mut short = ShortFields::default();
        let german = Languages { latin: Language::German, ..Languages::default() };
        for _ in 0..2 {
            for languages in [german, Languages::default()] {
                let read: Vec<(String, usize)> = short
                    .read("Paketen getUserName", languages)
                    .tokens
                    .into_iter()
                    .map(|t| (t.text, t.position))
                    .collect();
                let mut fresh = TextAnalyzer::from(Words::new(Reading::Fixed(languages), true));
                assert_eq!(read, tokens(&mut fresh, "Paketen getUserName"), "{languages:?}");
            }
        }
    }

    #[test]
    fn cjk_runs_are_read_in_overlapping_pairs() {
        let pairs = |text: &str| terms(text);
        let at = |list: &[(&str, usize)]| list.iter().map(|(t, p)| (t.to_string(), *p)).collect::<Vec<_>>();
        assert_eq!(pairs("日本語の設定"), at(&[("日本", 0), ("本語", 1), ("語の", 2), ("の設", 3), ("設定", 4)]));
        assert_eq!(pairs("日 本"), at(&[("日", 0), ("本", 1)]));
        assert_eq!(pairs("한국어"), at(&[("한국", 0), ("국어", 1)]));
        // Mixed text keeps its Latin words, identifiers whole and split.
        assert_eq!(
            pairs("getUserNameを呼ぶ"),
            at(&[("getusernam", 0), ("get", 0), ("user", 0), ("name", 0), ("を呼", 1), ("呼ぶ", 2)])
        );
        assert_eq!(pairs("Linuxカーネル"), at(&[("linux", 0), ("カー", 1), ("ーネ", 2), ("ネル", 3)]));
    }

    #[test]
    fn no_script_is_dropped_and_long_words_are_cut() {
        // Thai (no spaces, marks in words) and Arabic: words, kept.
        assert_eq!(words_of("ภาษาไทย ที่นี่"), ["ภาษาไทย", "ที่นี่"]);
        assert_eq!(words_of("مرحبا بالعالم"), ["مرحبا", "بالعالم"]);
        let long = "ก".repeat(100);
        assert_eq!(words_of(&long), ["ก".repeat(words::MAX_WORD_CHARS)]);
        let hash = "a".repeat(64);
        assert_eq!(words_of(&hash), ["a".repeat(words::MAX_WORD_CHARS)]);
    }

    #[test]
    fn a_megabyte_of_one_han_character_is_read_pair_by_pair() {
        let text = "日".repeat(350_000);
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(&text);
        let (mut count, mut last) = (0, 0);
        while stream.advance() {
            assert_eq!(stream.token().text, "日日");
            count += 1;
            last = stream.token().position;
        }
        assert_eq!(count, 349_999);
        assert_eq!(last as u32 + 1, positions(&text));
    }

    #[test]
    fn kept_terms_are_the_terms_and_stay_so_once_dropped() {
        let mut kept = query_analyzer(Languages::default(), &[]);
        let fresh = |text: &str| tokens(&mut query_analyzer(Languages::default(), &[]), text);
        // More distinct words than are kept, each met several times, over many
        // texts, so terms are found kept, missed, and dropped in between.
        let stems = ["connect", "generaliz", "happ", "run", "argu", "nation", "cri"];
        let endings = ["ing", "ed", "ies", "ations", "ness", "ly", "s", "", "ement"];
        let words: Vec<String> = (0..KEPT_WORDS + 5_000)
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
                let expected = fresh(&text);
                assert_eq!(tokens(&mut kept, &text), expected);
                compared += expected.len();
            }
        }
        assert!(compared > 3 * words.len());
    }

    #[test]
    fn kept_words_stay_bounded_within_one_text() {
        let mut words = Words::new(Reading::Fixed(Languages::default()), false);
        let text: String = (0..KEPT_WORDS + 100).map(|n| format!("w{n}x ")).collect();
        let mut count = 0;
        let mut stream = words.token_stream(&text);
        while stream.advance() {
            count += 1;
        }
        assert_eq!(count, KEPT_WORDS + 100);
        let kept: usize = words.kept.languages.values().map(|k| k.words.len()).sum();
        assert!(kept <= KEPT_WORDS, "{kept} words kept");
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
            "日本語textの中文 ภาษาไทย مرحبا",
            "葛\u{E0100}城 cafe\u{301}",
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
        // Read with no stop words, every position holds a token: they are 0..positions.
        let mut analyzer = analyzer();
        let mut every = TextAnalyzer::from(Words::new(Reading::Fixed(Languages::default()), true));
        for text in &texts {
            let counted = positions(text);
            let mut stream = analyzer.token_stream(text);
            while stream.advance() {
                assert!((stream.token().position as u32) < counted, "{text:.80}");
            }
            let unstopped = text.replace(|c: char| !c.is_alphanumeric() && !c.is_whitespace(), " ");
            let unstopped: String = unstopped.split_whitespace().filter(|w| !is_stop(w)).collect::<Vec<_>>().join(" ");
            let mut seen: Vec<usize> = tokens(&mut every, &unstopped).into_iter().map(|(_, p)| p).collect();
            seen.dedup();
            assert_eq!(seen, (0..positions(&unstopped) as usize).collect::<Vec<_>>(), "{unstopped:.80}");
        }
    }

    /// Whether the default reading drops `word`.
    fn is_stop(word: &str) -> bool {
        let script = words::word_script(word);
        !Kept::default().read(word, script, Languages::default().of(script), &[], &mut String::new())
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
