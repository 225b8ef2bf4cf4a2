//! BERT's tokenizer (BertNormalizer, BertPreTokenizer, WordPiece), read
//! natively from a `tokenizer.json` of that shape, with the same ids and
//! offsets as the `tokenizers` crate gives (tests/tokenizer_parity.rs holds
//! it to that on real text and on every code point class).
//!
//! Why not the crate: it keeps a vocabulary of 30,522 words as two hash maps
//! of owned strings, 4.8 MB that every server process holds privately (a
//! fifth of an idle server's private memory). Here the words are one string
//! and two tables of ids, under 1 MB; and a text is tokenized in one pass
//! over its characters, without the crate's per-stage copies.

use serde::Deserialize;
use std::borrow::Cow;
use unicode_categories::UnicodeCategories;

/// What a `tokenizer.json` says, where it can be read natively; any other
/// shape is `None` from [`WordPiece::from_json`] and left to the crate.
#[derive(Deserialize)]
struct Json<'a> {
    #[serde(borrow, default)]
    added_tokens: Vec<Added<'a>>,
    normalizer: Option<Normalizer>,
    pre_tokenizer: Option<Tagged<'a>>,
    #[serde(borrow)]
    post_processor: Option<PostProcessor<'a>>,
    #[serde(borrow)]
    model: Model<'a>,
}

#[derive(Deserialize)]
struct Added<'a> {
    id: u32,
    #[serde(borrow)]
    content: Cow<'a, str>,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

#[derive(Deserialize)]
struct Normalizer {
    #[serde(rename = "type")]
    kind: String,
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: Option<bool>,
    lowercase: bool,
}

#[derive(Deserialize)]
struct Tagged<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum PostProcessor<'a> {
    TemplateProcessing {
        #[serde(borrow)]
        single: Vec<Piece<'a>>,
        #[serde(borrow)]
        special_tokens: std::collections::HashMap<Cow<'a, str>, SpecialIds>,
    },
    BertProcessing {
        #[serde(borrow)]
        sep: (Cow<'a, str>, u32),
        #[serde(borrow)]
        cls: (Cow<'a, str>, u32),
    },
}

#[derive(Deserialize)]
enum Piece<'a> {
    SpecialToken {
        #[serde(borrow)]
        id: Cow<'a, str>,
    },
    Sequence {
        #[serde(borrow)]
        id: Cow<'a, str>,
    },
}

#[derive(Deserialize)]
struct SpecialIds {
    ids: Vec<u32>,
}

#[derive(Deserialize)]
struct Model<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    unk_token: Cow<'a, str>,
    #[serde(borrow)]
    continuing_subword_prefix: Cow<'a, str>,
    max_input_chars_per_word: usize,
    vocab: Vocab,
}

/// The vocabulary: every word in one string, found by open addressing.
struct Vocab {
    /// All words, one after another.
    text: String,
    /// Each entry of the JSON map in its order: a byte range of `text` and its id.
    entries: Vec<(u32, u32, u32)>,
}

impl Vocab {
    fn word(&self, entry: u32) -> &str {
        let (start, end, _) = self.entries[entry as usize];
        &self.text[start as usize..end as usize]
    }
}

impl<'de> Deserialize<'de> for Vocab {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Vocab;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of words to ids")
            }

            // Read straight into one string: no map of owned words, even for a moment.
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vocab, A::Error> {
                let mut vocab = Vocab { text: String::new(), entries: Vec::new() };
                while let Some((word, id)) = map.next_entry::<Cow<'de, str>, u32>()? {
                    let start = u32::try_from(vocab.text.len()).map_err(serde::de::Error::custom)?;
                    vocab.text.push_str(&word);
                    let end = u32::try_from(vocab.text.len()).map_err(serde::de::Error::custom)?;
                    vocab.entries.push((start, end, id));
                }
                vocab.text.shrink_to_fit();
                vocab.entries.shrink_to_fit();
                Ok(vocab)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// Entries found by their word's bytes past a prefix of `skip` bytes (the
/// entries only: the words stay in the vocabulary's string).
struct Table {
    entries: hashbrown::HashTable<u32>,
    skip: usize,
}

impl Table {
    /// A table of the entries `keep` accepts.
    fn new(vocab: &Vocab, keep: impl Fn(&str) -> bool, skip: usize) -> Self {
        let key = |entry: u32| &vocab.word(entry).as_bytes()[skip..];
        let mut entries = hashbrown::HashTable::new();
        for entry in (0..vocab.entries.len() as u32).filter(|&e| keep(vocab.word(e))) {
            // A word listed twice is found as its later entry, as the crate's map keeps it.
            match entries.entry(hash(key(entry)), |&other| key(other) == key(entry), |&e| hash(key(e))) {
                hashbrown::hash_table::Entry::Occupied(mut held) => *held.get_mut() = entry,
                hashbrown::hash_table::Entry::Vacant(free) => {
                    free.insert(entry);
                }
            }
        }
        entries.shrink_to_fit(|&e| hash(key(e)));
        Self { entries, skip }
    }

    /// The id of the word `key` (without the prefix every word here has).
    fn get(&self, vocab: &Vocab, key: &str) -> Option<u32> {
        let found =
            self.entries.find(hash(key.as_bytes()), |&e| &vocab.word(e).as_bytes()[self.skip..] == key.as_bytes());
        found.map(|&e| vocab.entries[e as usize].2)
    }
}

/// FNV-1a: words are short, and the tables only need them spread.
fn hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ (h >> 32)
}

/// How text is normalized before it is cut into words (BertNormalizer's switches).
#[derive(Clone, Copy)]
struct Normalize {
    clean_text: bool,
    chinese: bool,
    strip_accents: bool,
    lowercase: bool,
}

/// A BERT WordPiece tokenizer.
pub struct WordPiece {
    vocab: Vocab,
    /// Words that may start a word.
    initial: Table,
    /// Words that continue one, keyed without the prefix.
    continuing: Table,
    unk: u32,
    max_word_chars: usize,
    normalize: Option<Normalize>,
    /// Added tokens matched in the raw text, longest first.
    added: Vec<(String, u32)>,
    /// Ids put before and after a text's own.
    before: Vec<u32>,
    after: Vec<u32>,
}

/// One token: its id and its byte range in the text it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// Vocabulary id.
    pub id: u32,
    /// First byte.
    pub start: u32,
    /// One past its last byte.
    pub end: u32,
}

impl WordPiece {
    /// Reads a BERT `tokenizer.json`; `None` when it has another shape (a
    /// different model, normalizer or pre-tokenizer, added tokens matched after
    /// normalizing or as whole words) or does not parse: the crate reads those.
    pub fn from_json(bytes: &[u8]) -> Option<Self> {
        let json: Json = serde_json::from_slice(bytes).ok()?;
        if json.model.kind != "WordPiece" {
            return None;
        }
        if json.pre_tokenizer.as_ref().is_none_or(|p| p.kind != "BertPreTokenizer") {
            return None;
        }
        let normalize = match json.normalizer {
            None => None,
            Some(n) if n.kind == "BertNormalizer" => Some(Normalize {
                clean_text: n.clean_text,
                chinese: n.handle_chinese_chars,
                strip_accents: n.strip_accents.unwrap_or(n.lowercase),
                lowercase: n.lowercase,
            }),
            Some(_) => return None,
        };
        let mut added = Vec::with_capacity(json.added_tokens.len());
        for token in json.added_tokens {
            if token.single_word || token.lstrip || token.rstrip || token.normalized || token.content.is_empty() {
                return None;
            }
            added.push((token.content.into_owned(), token.id));
        }
        added.sort_by_key(|(content, _)| std::cmp::Reverse(content.len()));
        let (before, after) = match json.post_processor {
            None => (Vec::new(), Vec::new()),
            Some(PostProcessor::BertProcessing { sep, cls }) => (vec![cls.1], vec![sep.1]),
            Some(PostProcessor::TemplateProcessing { single, special_tokens }) => {
                let mut sides = (Vec::new(), Vec::new());
                let mut seen_sequence = false;
                for piece in single {
                    match piece {
                        Piece::Sequence { id } if id == "A" && !seen_sequence => seen_sequence = true,
                        Piece::Sequence { .. } => return None,
                        Piece::SpecialToken { id } => {
                            let ids = &special_tokens.get(&id)?.ids;
                            if seen_sequence { &mut sides.1 } else { &mut sides.0 }.extend(ids);
                        }
                    }
                }
                if !seen_sequence {
                    return None;
                }
                sides
            }
        };
        let vocab = json.model.vocab;
        let prefix = json.model.continuing_subword_prefix.into_owned();
        let initial = Table::new(&vocab, |_| true, 0);
        let unk = initial.get(&vocab, &json.model.unk_token)?;
        let continuing = Table::new(&vocab, |w| w.starts_with(&prefix), prefix.len());
        Some(Self {
            vocab,
            initial,
            continuing,
            unk,
            max_word_chars: json.model.max_input_chars_per_word,
            normalize,
            added,
            before,
            after,
        })
    }

    /// The ids put before and after a text's own when asked for.
    pub fn specials(&self) -> (usize, usize) {
        (self.before.len(), self.after.len())
    }

    /// `text`'s ids, with the special ones around them when `specials`.
    pub fn ids(&self, text: &str, specials: bool) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 4 + 2);
        if specials {
            ids.extend(&self.before);
        }
        self.tokens(text, |t| ids.push(t.id));
        if specials {
            ids.extend(&self.after);
        }
        ids
    }

    /// Calls `emit` with each of `text`'s tokens in order (no special ones).
    pub fn tokens(&self, text: &str, emit: impl FnMut(Token)) {
        let mut pass = Pass { word: Word::default(), nfd: Decomposing::default(), emit };
        // Where each added token is next found at or after `from` (the text's end: nowhere).
        let mut next: Vec<usize> =
            self.added.iter().map(|(content, _)| text.find(content.as_str()).unwrap_or(text.len())).collect();
        let mut from = 0;
        loop {
            let mut best: Option<(usize, usize)> = None;
            for (i, (content, _)) in self.added.iter().enumerate() {
                if next[i] < from {
                    next[i] = text[from..].find(content.as_str()).map_or(text.len(), |at| at + from);
                }
                // Leftmost, then longest (the list is longest first).
                if next[i] < text.len() && best.is_none_or(|(at, _)| next[i] < at) {
                    best = Some((next[i], i));
                }
            }
            let until = best.map_or(text.len(), |(at, _)| at);
            self.segment(&text[from..until], from as u32, &mut pass);
            let Some((at, i)) = best else { break };
            let (content, id) = &self.added[i];
            (pass.emit)(Token { id: *id, start: at as u32, end: (at + content.len()) as u32 });
            from = at + content.len();
        }
    }

    /// Tokenizes a stretch with no added token in it, starting at byte `base` of the text.
    fn segment(&self, text: &str, base: u32, pass: &mut Pass<impl FnMut(Token)>) {
        // Each stretch is normalized on its own, as the crate does.
        pass.nfd = Decomposing::default();
        for (at, c) in text.char_indices() {
            let range = (base + at as u32, base + (at + c.len_utf8()) as u32);
            match self.normalize {
                None => self.push(c, range, pass),
                Some(n) => self.normalized(c, range, n, pass),
            }
        }
        if let Some(n) = self.normalize {
            self.flush(n, pass);
        }
        self.finish(pass);
    }

    /// BertNormalizer's text cleaning and ideograph spacing on one character.
    fn normalized(&self, c: char, range: (u32, u32), n: Normalize, pass: &mut Pass<impl FnMut(Token)>) {
        let mut c = c;
        if n.clean_text {
            if c == '\0' || c == '\u{fffd}' || is_control(c) {
                return;
            }
            if is_whitespace(c) {
                c = ' ';
            }
        }
        if n.chinese && is_chinese(c) {
            // Spaced on both sides (the spaces stand for the ideograph too): a word of its own.
            for c in [' ', c, ' '] {
                self.decomposed(c, range, n, pass);
            }
        } else {
            self.decomposed(c, range, n, pass);
        }
    }

    /// BertNormalizer's accent stripping: canonical decomposition (NFD), whose
    /// combining marks are put in canonical order before the nonspacing ones
    /// are dropped. The crate aligns the reordered characters by position (the
    /// n-th character that starts a decomposition takes the n-th source
    /// character's range, the rest the range before them), and so does this.
    fn decomposed(&self, c: char, range: (u32, u32), n: Normalize, pass: &mut Pass<impl FnMut(Token)>) {
        if !n.strip_accents {
            return self.lowered(c, range, n, pass);
        }
        pass.nfd.sources.push_back(range);
        let mut first = true;
        unicode_normalization_alignments::char::decompose_canonical(c, |d| {
            let class = unicode_normalization_alignments::char::canonical_combining_class(d);
            if class == 0 {
                self.flush(n, pass);
            }
            pass.nfd.run.push((class, d, first));
            first = false;
        });
    }

    /// Puts the decomposed characters gathered in canonical order and passes them on.
    fn flush(&self, n: Normalize, pass: &mut Pass<impl FnMut(Token)>) {
        pass.nfd.run.sort_by_key(|&(class, _, _)| class);
        for i in 0..pass.nfd.run.len() {
            let (_, d, first) = pass.nfd.run[i];
            if first && let Some(source) = pass.nfd.sources.pop_front() {
                pass.nfd.current = source;
            }
            if !d.is_mark_nonspacing() {
                self.lowered(d, pass.nfd.current, n, pass);
            }
        }
        pass.nfd.run.clear();
    }

    fn lowered(&self, c: char, range: (u32, u32), n: Normalize, pass: &mut Pass<impl FnMut(Token)>) {
        if n.lowercase {
            for l in c.to_lowercase() {
                self.push(l, range, pass);
            }
        } else {
            self.push(c, range, pass);
        }
    }

    /// BertPreTokenizer on one normalized character: whitespace ends a word,
    /// punctuation is a word of its own, anything else joins the word.
    fn push(&self, c: char, range: (u32, u32), pass: &mut Pass<impl FnMut(Token)>) {
        if c.is_whitespace() {
            self.finish(pass);
        } else if is_punctuation(c) {
            self.finish(pass);
            pass.word.push(c, range);
            self.finish(pass);
        } else {
            pass.word.push(c, range);
        }
    }

    /// WordPiece on the word gathered (greedy, longest first), then empties it.
    fn finish(&self, pass: &mut Pass<impl FnMut(Token)>) {
        let Pass { word, emit, .. } = pass;
        if word.text.is_empty() {
            return;
        }
        let whole = Token { id: self.unk, start: word.origin[0].0, end: word.origin[word.origin.len() - 1].1 };
        if word.origin.len() > self.max_word_chars {
            emit(whole);
            word.clear();
            return;
        }
        word.pieces.clear();
        let mut start = 0;
        while start < word.text.len() {
            let mut end = word.text.len();
            let found = loop {
                let piece = &word.text[start..end];
                let id = if start == 0 {
                    self.initial.get(&self.vocab, piece)
                } else {
                    self.continuing.get(&self.vocab, piece)
                };
                if id.is_some() {
                    break id;
                }
                match piece.chars().next_back() {
                    Some(last) if end - last.len_utf8() > start => end -= last.len_utf8(),
                    _ => break None,
                }
            };
            let Some(id) = found else {
                emit(whole);
                word.clear();
                return;
            };
            word.pieces.push((id, start, end));
            start = end;
        }
        for &(id, start, end) in &word.pieces {
            let first = word.char_at(start);
            let last = word.char_at(end) - 1;
            emit(Token { id, start: word.origin[first].0, end: word.origin[last].1 });
        }
        word.clear();
    }
}

/// What tokenizing a text carries from character to character.
struct Pass<F> {
    word: Word,
    nfd: Decomposing,
    emit: F,
}

/// Decomposed characters waiting for the next one that starts a
/// decomposition (combining class 0), which ends their reordering.
#[derive(Default)]
struct Decomposing {
    /// Combining class, character, and whether it starts its source's decomposition.
    run: Vec<(u8, char, bool)>,
    /// The source ranges of the characters in `run`, in text order.
    sources: std::collections::VecDeque<(u32, u32)>,
    /// The range of the last source taken.
    current: (u32, u32),
}

/// A word being gathered: its normalized text and, per character, the byte
/// range of the text character it came from.
#[derive(Default)]
struct Word {
    text: String,
    /// Byte offset in `text` of each character.
    starts: Vec<u32>,
    origin: Vec<(u32, u32)>,
    /// The pieces found, kept to reuse their memory.
    pieces: Vec<(u32, usize, usize)>,
}

impl Word {
    fn push(&mut self, c: char, range: (u32, u32)) {
        self.starts.push(self.text.len() as u32);
        self.text.push(c);
        self.origin.push(range);
    }

    /// The index of the character starting at byte `at` (the count at the end).
    fn char_at(&self, at: usize) -> usize {
        self.starts.partition_point(|&s| (s as usize) < at)
    }

    fn clear(&mut self) {
        self.text.clear();
        self.starts.clear();
        self.origin.clear();
    }
}

/// BertNormalizer's whitespace.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// BertNormalizer's control characters (dropped): the Unicode "other" classes
/// but tab and line ends.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// BertPreTokenizer's punctuation: ASCII's and Unicode's.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The CJK ideographs BertNormalizer spaces out.
fn is_chinese(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}
