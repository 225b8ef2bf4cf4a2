//! Which language a text's words are stemmed in. Latin and Cyrillic
//! letters are each shared by many languages: a document's are told apart
//! by whatlang (trigram profiles) over a sample of its words in that script,
//! so a German note is stemmed as German and its English identifiers and
//! quotes still as one language, the note's. Greek letters are Greek.

use super::words::{Piece, Script, pieces, word_script};
use ragbox_protocol::language::{self as shared, MIN_CONFIDENCE, SAMPLE_BYTES};
use std::sync::LazyLock;
use tantivy::tokenizer::{RawTokenizer, StopWordFilter, TextAnalyzer, TokenStream};

/// A language the keyword index stems: those with a Snowball stemmer in a
/// Latin, Cyrillic or Greek script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    /// Danish.
    Danish,
    /// Dutch.
    Dutch,
    /// English.
    English,
    /// Finnish.
    Finnish,
    /// French.
    French,
    /// German.
    German,
    /// Greek.
    Greek,
    /// Hungarian.
    Hungarian,
    /// Italian.
    Italian,
    /// Norwegian (Bokmål).
    Norwegian,
    /// Portuguese.
    Portuguese,
    /// Romanian.
    Romanian,
    /// Russian.
    Russian,
    /// Spanish.
    Spanish,
    /// Swedish.
    Swedish,
    /// Turkish.
    Turkish,
}

/// Every language with its ISO 639-1 code (as the index records it) and whatlang's name.
const TABLE: [(Language, &str, whatlang::Lang); 16] = [
    (Language::Danish, "da", whatlang::Lang::Dan),
    (Language::Dutch, "nl", whatlang::Lang::Nld),
    (Language::English, "en", whatlang::Lang::Eng),
    (Language::Finnish, "fi", whatlang::Lang::Fin),
    (Language::French, "fr", whatlang::Lang::Fra),
    (Language::German, "de", whatlang::Lang::Deu),
    (Language::Greek, "el", whatlang::Lang::Ell),
    (Language::Hungarian, "hu", whatlang::Lang::Hun),
    (Language::Italian, "it", whatlang::Lang::Ita),
    (Language::Norwegian, "no", whatlang::Lang::Nob),
    (Language::Portuguese, "pt", whatlang::Lang::Por),
    (Language::Romanian, "ro", whatlang::Lang::Ron),
    (Language::Russian, "ru", whatlang::Lang::Rus),
    (Language::Spanish, "es", whatlang::Lang::Spa),
    (Language::Swedish, "sv", whatlang::Lang::Swe),
    (Language::Turkish, "tr", whatlang::Lang::Tur),
];

impl Language {
    /// The ISO 639-1 code.
    pub fn code(self) -> &'static str {
        TABLE.iter().find(|(l, ..)| *l == self).map_or("en", |(_, code, _)| code)
    }

    /// The language of an ISO 639-1 code.
    pub fn from_code(code: &str) -> Option<Self> {
        TABLE.iter().find(|(_, c, _)| *c == code).map(|(l, ..)| *l)
    }

    fn from_whatlang(lang: whatlang::Lang) -> Option<Self> {
        TABLE.iter().find(|(.., w)| *w == lang).map(|(l, ..)| *l)
    }

    /// The script its words are written in.
    pub fn script(self) -> Script {
        match self {
            Language::Russian => Script::Cyrillic,
            Language::Greek => Script::Greek,
            _ => Script::Latin,
        }
    }

    /// Its Snowball stemmer.
    pub fn algorithm(self) -> frostem::Algorithm {
        use frostem::Algorithm as A;
        match self {
            Language::Danish => A::Danish,
            Language::Dutch => A::Dutch,
            Language::English => A::English,
            Language::Finnish => A::Finnish,
            Language::French => A::French,
            Language::German => A::German,
            Language::Greek => A::Greek,
            Language::Hungarian => A::Hungarian,
            Language::Italian => A::Italian,
            Language::Norwegian => A::Norwegian,
            Language::Portuguese => A::Portuguese,
            Language::Romanian => A::Romanian,
            Language::Russian => A::Russian,
            Language::Spanish => A::Spanish,
            Language::Swedish => A::Swedish,
            Language::Turkish => A::Turkish,
        }
    }

    /// tantivy's name for it, whose stop word lists (Snowball's; Lucene's for
    /// English) the index drops; `None` where tantivy has none.
    pub fn stop_words(self) -> Option<tantivy::tokenizer::Language> {
        use tantivy::tokenizer::Language as T;
        Some(match self {
            Language::Danish => T::Danish,
            Language::Dutch => T::Dutch,
            Language::English => T::English,
            Language::Finnish => T::Finnish,
            Language::French => T::French,
            Language::German => T::German,
            Language::Hungarian => T::Hungarian,
            Language::Italian => T::Italian,
            Language::Norwegian => T::Norwegian,
            Language::Portuguese => T::Portuguese,
            Language::Russian => T::Russian,
            Language::Spanish => T::Spanish,
            Language::Swedish => T::Swedish,
            Language::Greek | Language::Romanian | Language::Turkish => return None,
        })
    }
}

/// How one text's words are stemmed, per script. Greek words are always
/// Greek; words of any other script are not stemmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Languages {
    /// The language of its Latin-script words.
    pub latin: Language,
    /// The language of its Cyrillic words, when Russian; other Cyrillic
    /// languages have no stemmer here and keep their words whole.
    pub cyrillic: Option<Language>,
}

impl Default for Languages {
    /// What a text too short to tell is read as: English, and Cyrillic as Russian.
    fn default() -> Self {
        Self { latin: Language::English, cyrillic: Some(Language::Russian) }
    }
}

impl Languages {
    /// The language a word of `script` is stemmed in.
    pub fn of(self, script: Script) -> Option<Language> {
        match script {
            Script::Latin => Some(self.latin),
            Script::Cyrillic => self.cyrillic,
            Script::Greek => Some(Language::Greek),
            Script::Cjk | Script::Other => None,
        }
    }

    /// The codes the index records for a document read so: its Latin
    /// language's, then `ru`, or `cyrillic` for Cyrillic words kept whole.
    pub fn codes(self) -> [&'static str; 2] {
        [self.latin.code(), self.cyrillic.map_or(OTHER_CYRILLIC, Language::code)]
    }

    /// The languages [`Self::codes`] gave these codes; `None` for others.
    pub fn from_codes([latin, cyrillic]: [&str; 2]) -> Option<Self> {
        let latin = Language::from_code(latin).filter(|l| l.script() == Script::Latin)?;
        let cyrillic = match cyrillic {
            OTHER_CYRILLIC => None,
            code => Some(Language::from_code(code).filter(|l| l.script() == Script::Cyrillic)?),
        };
        Some(Self { latin, cyrillic })
    }

    /// The sets of languages `query` is read in, at most [`MAX_READINGS`],
    /// given how many of the index's `documents` were recorded under each
    /// code (`held`, [`Self::codes`]). Latin words: in the query's own language
    /// when whatlang is sure of it, in English, then in each language
    /// [`is_common`] in the index, most documents first (or, failing all of
    /// them, the index's most common one). Cyrillic words likewise, Russian
    /// or kept whole. Languages of a script the query has no word in are not
    /// told apart: they would read it alike. Reading it in every language
    /// any document was told to be in made each search as many searches (up
    /// to 28, one small file of each language in a workspace sufficing).
    pub fn for_query(query: &QueryWords, held: &[(&str, u64)], documents: u64) -> Vec<Languages> {
        let count = |code: &str| held.iter().find(|(c, _)| *c == code).map_or(0, |(_, n)| *n);
        let default = Languages::default();
        // Latin: the query's own language and English first, then the common ones by their documents.
        let mut by_count: Vec<(Language, u64)> = held
            .iter()
            .filter_map(|&(code, n)| Some((Language::from_code(code)?, n)))
            .filter(|(l, n)| l.script() == Script::Latin && *n > 0)
            .collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let first = query.own.into_iter().chain([Language::English]).filter(|l| count(l.code()) > 0);
        let common = by_count.iter().filter(|(_, n)| is_common(*n, documents)).map(|(l, _)| *l);
        let mut latin: Vec<Language> = Vec::new();
        for language in first.chain(common) {
            if !latin.contains(&language) {
                latin.push(language);
            }
        }
        if latin.is_empty() {
            latin.push(by_count.first().map_or(default.latin, |(l, _)| *l));
        }
        if query.latin.is_empty() {
            latin.truncate(1);
        }
        // Cyrillic: Russian or kept whole, the one of more documents first.
        let mut cyrillic: Vec<(Option<Language>, u64)> =
            [(Some(Language::Russian), count("ru")), (None, count(OTHER_CYRILLIC))]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .collect();
        cyrillic.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let mut cyrillic: Vec<Option<Language>> = cyrillic
            .iter()
            .enumerate()
            .filter(|(at, (_, n))| *at == 0 || is_common(*n, documents))
            .map(|(_, (l, _))| *l)
            .collect();
        if cyrillic.is_empty() {
            cyrillic.push(default.cyrillic);
        }
        if query.cyrillic.is_empty() {
            cyrillic.truncate(1);
        }
        let mut all: Vec<Languages> = latin
            .iter()
            .flat_map(|&latin| cyrillic.iter().map(move |&cyrillic| Languages { latin, cyrillic }))
            .collect();
        all.truncate(MAX_READINGS);
        all
    }
}

/// A query's Latin and Cyrillic words (from its first [`SAMPLE_BYTES`]),
/// and the language whatlang is sure its Latin words are in.
pub struct QueryWords {
    latin: String,
    cyrillic: String,
    own: Option<Language>,
}

impl QueryWords {
    /// The words of `query` that tell its languages.
    pub fn new(query: &str) -> Self {
        let (mut latin, mut cyrillic) = (String::new(), String::new());
        for piece in pieces(shared::opening(query, SAMPLE_BYTES)) {
            let Piece::Word { text: word, .. } = piece else { continue };
            let words = match word_script(word) {
                Script::Latin => &mut latin,
                Script::Cyrillic => &mut cyrillic,
                _ => continue,
            };
            words.push_str(word);
            words.push(' ');
        }
        let own = shared::latin(&latin).and_then(Language::from_whatlang);
        Self { latin, cyrillic, own }
    }

    /// Whether the query reads as written in `language`: whatlang is sure
    /// of it, or its words of that script hold [`MIN_STOP_WORDS`] of the
    /// language's stop words (more than of English's, for another Latin one).
    fn is_in(&self, language: Language) -> bool {
        if self.own == Some(language) {
            return true;
        }
        let words = match language.script() {
            Script::Latin => &self.latin,
            Script::Cyrillic => &self.cyrillic,
            _ => return false,
        };
        let Some(mut own) = stop_words(language) else { return false };
        let found = stop_words_in(&mut own, words);
        if found < MIN_STOP_WORDS {
            return false;
        }
        match stop_words(Language::English) {
            Some(mut english) if language.script() == Script::Latin && language != Language::English => {
                found > stop_words_in(&mut english, words)
            }
            _ => true,
        }
    }
}

/// The languages whose stop words every reading of `query` drops besides
/// its own ([`super::analyzer::query_analyzer`]): those [`STOP_DOCUMENTS`]
/// of the index's documents at least are in (`held`, as for
/// [`Languages::for_query`]) and the query reads as written in
/// ([`QueryWords::is_in`]). Read in English, a French question's `de` and
/// `la` match the French words of the documents read as English (notes too
/// short to tell, pages left untranslated: a French title over an English
/// page), where they are rare, so weigh. Dropped whenever a tenth of the
/// documents were in the language, whatever the query's, a workspace of ten
/// notes with one German note lost `die`, `war` and `man` from every
/// English query.
pub fn also_stop(query: &QueryWords, held: &[(&str, u64)]) -> Vec<Language> {
    held.iter()
        .filter(|(_, n)| *n >= STOP_DOCUMENTS)
        .filter_map(|(code, _)| Language::from_code(code))
        .filter(|&language| query.is_in(language))
        .collect()
}

/// Documents of a language an index holds at least for its stop words to be
/// dropped from other readings: one or two (a note in that language, or
/// told so wrongly) take no words from any query.
const STOP_DOCUMENTS: u64 = 3;
/// Stop words of a language a query holds at least to read as written in it.
const MIN_STOP_WORDS: usize = 2;

/// How many of the space-separated `words` `stop` drops.
fn stop_words_in(stop: &mut TextAnalyzer, words: &str) -> usize {
    words.split(' ').filter(|w| !w.is_empty() && !stop.token_stream(&w.to_lowercase()).advance()).count()
}

/// Sets of languages one query is read in at most ([`Languages::for_query`]):
/// each is another search of the whole index.
pub const MAX_READINGS: usize = 4;
/// A language is common in an index when one in this many of its documents at least are in it ...
const COMMON_SHARE: u64 = 10;
/// ... and this many at least: a file or two of a language do not make every search read it.
const COMMON_DOCUMENTS: u64 = 3;

/// Whether a language `n` of an index's `documents` were read in is common there.
fn is_common(n: u64, documents: u64) -> bool {
    n >= COMMON_DOCUMENTS && n.saturating_mul(COMMON_SHARE) >= documents
}

/// The code recorded for Cyrillic words in a language with no stemmer here.
const OTHER_CYRILLIC: &str = "cyrillic";

/// Bytes of a text scanned for its words' languages: a document's opening
/// tells its language, and the scan's cost stays bounded however large it is.
const SCAN_BYTES: usize = 64 << 10;
/// Fewer bytes of a script's words than this keep its default language: a
/// few words (a title, a short note, code) do not tell a language apart.
const MIN_SAMPLE_BYTES: usize = 200;

/// The languages of `text`'s words, told from its opening.
pub fn detect(text: &str) -> Languages {
    let mut end = text.len().min(SCAN_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut latin = String::new();
    let mut cyrillic = String::new();
    for piece in pieces(&text[..end]) {
        let Piece::Word { text: word, .. } = piece else { continue };
        let sample = match word_script(word) {
            Script::Latin => &mut latin,
            Script::Cyrillic => &mut cyrillic,
            _ => continue,
        };
        if sample.len() < SAMPLE_BYTES {
            sample.push_str(word);
            sample.push(' ');
        } else if latin.len() >= SAMPLE_BYTES && cyrillic.len() >= SAMPLE_BYTES {
            break;
        }
    }
    let default = Languages::default();
    Languages {
        latin: told(&latin).unwrap_or(default.latin),
        cyrillic: if cyrillic.len() < MIN_SAMPLE_BYTES {
            default.cyrillic
        } else {
            match CYRILLIC.detect(&cyrillic) {
                Some(info) if info.confidence() >= MIN_CONFIDENCE => Language::from_whatlang(info.lang()),
                _ => default.cyrillic,
            }
        },
    }
}

/// The language whatlang tells `sample` (Latin-script words) is in, when
/// it is long enough and whatlang is sure enough; another than English only
/// when the sample holds more of that language's stop words than of
/// English's. whatlang alone told 62 of tldr's 4,613 English pages French,
/// most with full confidence ("Convert a GEM image file into a PNM image"):
/// terse technical English has few of the trigrams it weighs.
fn told(sample: &str) -> Option<Language> {
    if sample.len() < MIN_SAMPLE_BYTES {
        return None;
    }
    let language = Language::from_whatlang(shared::latin(sample)?)?;
    if language == Language::English {
        return Some(language);
    }
    let (Some(mut own), Some(mut english)) = (stop_words(language), stop_words(Language::English)) else {
        return Some(language);
    };
    (stop_words_in(&mut own, sample) > stop_words_in(&mut english, sample)).then_some(language)
}

/// A one-word analyzer that drops `language`'s stop words; `None` where tantivy has no list.
pub fn stop_words(language: Language) -> Option<TextAnalyzer> {
    static LISTS: LazyLock<Vec<(Language, TextAnalyzer)>> = LazyLock::new(|| {
        TABLE
            .iter()
            .filter_map(|&(language, ..)| {
                let filter = StopWordFilter::new(language.stop_words()?)?;
                Some((language, TextAnalyzer::builder(RawTokenizer::default()).filter(filter).build()))
            })
            .collect()
    });
    LISTS.iter().find(|(l, _)| *l == language).map(|(_, stop)| stop.clone())
}

/// whatlang among the Cyrillic languages it knows: Russian, or one with no stemmer here.
static CYRILLIC: LazyLock<whatlang::Detector> = LazyLock::new(|| {
    use whatlang::Lang as W;
    whatlang::Detector::with_allowlist(vec![W::Rus, W::Ukr, W::Bel, W::Bul, W::Srp, W::Mkd])
});

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_document_is_read_in_its_own_language() {
        let german = "Die Paketverwaltung von Debian installiert Programme aus den Archiven und hält sie auf \
            dem neuesten Stand. Dazu werden die Paketlisten regelmäßig aktualisiert und die Abhängigkeiten \
            zwischen den Paketen automatisch aufgelöst, sodass das System in einem konsistenten Zustand bleibt.";
        assert_eq!(detect(german).latin, Language::German);
        let french = "Le système de gestion des paquets de Debian installe les programmes depuis les archives et \
            les maintient à jour. Les listes de paquets sont mises à jour régulièrement et les dépendances entre \
            les paquets sont résolues automatiquement.";
        assert_eq!(detect(french).latin, Language::French);
        let russian = "Система управления пакетами Debian устанавливает программы из архивов и поддерживает их в \
            актуальном состоянии. Списки пакетов регулярно обновляются, а зависимости между пакетами \
            разрешаются автоматически.";
        assert_eq!(detect(russian).cyrillic, Some(Language::Russian));
        let ukrainian = "Система керування пакунками Debian встановлює програми з архівів і підтримує їх в \
            актуальному стані. Списки пакунків регулярно оновлюються, а залежності між пакунками \
            розв'язуються автоматично, і система завжди лишається узгодженою.";
        assert_eq!(detect(ukrainian).cyrillic, None);
        // Terse technical English that whatlang alone tells French.
        let tldr = "Convert a GEM image file into a PNM image. More information: https://netpbm.sourceforge.net/doc/\
            gemtopnm.html. Convert a GEM image file to a PNM image: gemtopnm path/to/file.img > path/to/output.pnm. \
            Display version: gemtopnm -version";
        assert_eq!(shared::latin(tldr), Some(whatlang::Lang::Fra));
        assert_eq!(detect(tldr).latin, Language::English);
    }

    #[test]
    fn whatlang_chooses_among_the_latin_languages_stemmed_here() {
        let stemmed: BTreeSet<_> =
            TABLE.iter().filter(|(l, ..)| l.script() == Script::Latin).map(|(.., w)| w.code()).collect();
        let told: BTreeSet<_> = shared::LATIN.iter().map(|w| w.code()).collect();
        assert_eq!(stemmed, told);
    }

    #[test]
    fn another_languages_stop_words_are_dropped_only_for_a_query_in_it_and_three_documents() {
        let stop = |query: &str, held: &[(&str, u64)]| also_stop(&QueryWords::new(query), held);
        // A German and a Danish note among English ones: an English query keeps its words.
        let few = [("en", 8), ("de", 1), ("da", 1), ("ru", 10)];
        assert!(stop("die war over man end", &few).is_empty());
        assert!(stop("les paquets de la", &[("en", 8), ("fr", 2)]).is_empty());
        assert_eq!(stop("les paquets de la", &[("en", 8), ("fr", 3)]), [Language::French]);
        // Many French documents: a French query's stop words go; an English query's own
        // go from its French reading, its French-looking words stay.
        let many = [("en", 100), ("fr", 30), ("ru", 130)];
        assert_eq!(stop("les paquets de la", &many), [Language::French]);
        assert_eq!(stop("Comment les listes de paquets sont-elles mises à jour", &many), [Language::French]);
        assert!(stop("how do I install packages", &many).is_empty());
        assert_eq!(stop("the rise of de la Soul", &many), [Language::English]);
        // A German question in a German and English index: German's, not English's.
        let german = "Wie werden die Pakete aus den Archiven installiert";
        assert_eq!(stop(german, &[("en", 30), ("de", 30)]), [Language::German]);
        // Russian's, for a Russian query in an index of Cyrillic words kept whole.
        assert_eq!(stop("как и где это", &[("en", 30), ("ru", 25), ("cyrillic", 25)]), [Language::Russian]);
    }

    #[test]
    fn too_little_text_is_read_as_the_default() {
        assert_eq!(detect("Paketverwaltung"), Languages::default());
        assert_eq!(detect(""), Languages::default());
        assert_eq!(detect("日本語のテキストだけ"), Languages::default());
    }

    #[test]
    fn codes_round_trip_into_readings() {
        let german = Languages { latin: Language::German, cyrillic: Some(Language::Russian) };
        assert_eq!(german.codes(), ["de", "ru"]);
        let other = Languages { latin: Language::English, cyrillic: None };
        assert_eq!(other.codes(), ["en", "cyrillic"]);
        for languages in [german, other] {
            assert_eq!(Languages::from_codes(languages.codes()), Some(languages));
        }
        assert_eq!(Languages::from_codes(["ru", "en"]), None);
        assert_eq!(Languages::from_codes(["xx", "ru"]), None);
        for (l, code, _) in TABLE {
            assert_eq!(Language::from_code(code), Some(l));
            assert_eq!(l.code(), code);
        }
    }

    fn read(query: &str, held: &[(&str, u64)], documents: u64) -> Vec<Languages> {
        Languages::for_query(&QueryWords::new(query), held, documents)
    }

    #[test]
    fn a_query_is_read_in_its_own_language_english_and_the_common_ones_only() {
        let at = |latin, cyrillic| Languages { latin, cyrillic };
        let (en, de, ru) = (Language::English, Language::German, Some(Language::Russian));
        // One document of each language: English and the query's own only.
        let mut one_each: Vec<(&str, u64)> = TABLE.iter().map(|(_, code, _)| (*code, 1)).collect();
        one_each.push((OTHER_CYRILLIC, 1));
        let documents = one_each.len() as u64;
        assert_eq!(read("how are packages installed", &one_each, documents), [at(en, ru)]);
        let german = "Wie werden die Pakete aus den Archiven installiert und aktualisiert";
        assert_eq!(read(german, &one_each, documents), [at(de, ru), at(en, ru)]);
        // Nine Latin-script languages common (a ninth of the documents each) and Cyrillic
        // words of both kinds: still four readings at most, English among them.
        let latin = TABLE.iter().filter(|(l, ..)| l.script() == Script::Latin).map(|(_, code, _)| *code);
        let mut common: Vec<(&str, u64)> = latin.take(9).map(|code| (code, 40)).collect();
        common.extend([("ru", 320), (OTHER_CYRILLIC, 40)]);
        assert_eq!(read("how are packages installed", &common, 360).len(), MAX_READINGS);
        for query in [german, "пакеты packages", "Как установить пакеты"] {
            let read = read(query, &common, 360);
            assert!(!read.is_empty() && read.len() <= MAX_READINGS, "{query}: {read:?}");
            assert!(read.iter().any(|l| l.latin == en), "{query}: {read:?}");
        }
        // The common ones by their documents; a file or two of French are not common.
        let held = [("en", 50), ("de", 30), ("fr", 2), ("ru", 40), ("cyrillic", 1)];
        assert_eq!(read("packages", &held, 120), [at(en, ru), at(de, ru)]);
        // Cyrillic readings only for a query with Cyrillic words; a CJK query is read once.
        let held = [("en", 50), ("ru", 40), ("cyrillic", 30)];
        assert_eq!(read("пакеты", &held, 120), [at(en, ru), at(en, None)]);
        assert_eq!(read("パッケージ", &held, 120), [at(en, ru)]);
        // No English and nothing common: the most common language, not English.
        assert_eq!(read("Pakete", &[("de", 2), ("fr", 1)], 3), [at(de, ru)]);
        assert_eq!(read("anything", &[], 0), [Languages::default()]);
    }
}
