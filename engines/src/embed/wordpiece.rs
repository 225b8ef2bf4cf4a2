//! BERT's tokenizer (BertNormalizer, BertPreTokenizer, WordPiece), read
//! natively from a `tokenizer.json` of that shape, with the same ids and
//! offsets as the `tokenizers` crate gives (tests/tokenizer_parity.rs holds
//! it to that on real text and on every code point class).
//!
//! Why not the crate: it keeps a vocabulary of 30,522 words as two hash maps
//! of owned strings, 4.8 MB that every server process holds privately (a
//! fifth of an idle server's private memory). Here the words and their two
//! lookup tables are five flat arrays ([`Words`], 0.8 MB), which the packed
//! model file holds too (`packed.rs`): every process maps one copy, and one
//! that finds it there parses no JSON. A text is tokenized in one pass over
//! its characters, without the crate's per-stage copies.

use ragbox_kernels::buf::Buf;
use serde::{Deserialize, Serialize};
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

/// The vocabulary as the JSON lists it: every word in one string.
struct Vocab {
    /// All words, one after another.
    text: String,
    /// Where each word starts in `text`, and where the last one ends.
    starts: Vec<u32>,
    /// Each word's id.
    ids: Vec<u32>,
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
                let mut vocab = Vocab { text: String::new(), starts: vec![0], ids: Vec::new() };
                while let Some((word, id)) = map.next_entry::<Cow<'de, str>, u32>()? {
                    vocab.text.push_str(&word);
                    vocab.starts.push(u32::try_from(vocab.text.len()).map_err(serde::de::Error::custom)?);
                    vocab.ids.push(id);
                }
                Ok(vocab)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A slot no word holds.
const EMPTY: u32 = u32::MAX;

/// The layout of [`Words`]' arrays and [`Settings`]: raised whenever [`hash`],
/// the tables or what [`WordPiece::from_json`] derives change, so that packed
/// files written by an older ragbox are packed again instead of misread.
pub(super) const LAYOUT: u32 = 1;

/// The vocabulary and its two lookup tables as flat arrays, owned or mapped
/// from the packed model file. The tables are open addressing written out
/// here, not a map type's, because their slots must lie in that file. Nothing
/// in the arrays is trusted: a lookup reads every index through `get`, so
/// arrays that disagree find nothing, never panic.
#[derive(Default)]
pub(super) struct Words {
    /// Every word's bytes, one after another, four to a value.
    text: Buf<u32>,
    /// Where word `i` starts in `text`'s bytes; it ends where word `i + 1` starts.
    starts: Buf<u32>,
    /// Word `i`'s id.
    ids: Buf<u32>,
    /// Open-addressed slots, a power of two of them: a word's index, or [`EMPTY`].
    initial: Buf<u32>,
    /// The same for the words that continue one, keyed without the prefix.
    continuing: Buf<u32>,
}

/// The arrays' names in the packed model file.
const ARRAYS: [&str; 5] = ["vocab.text", "vocab.starts", "vocab.ids", "vocab.initial", "vocab.continuing"];

impl Words {
    /// The arrays for `vocab`, words continuing one being those that start with `prefix`.
    fn new(vocab: Vocab, prefix: &str) -> Self {
        let mut text = vec![0u32; vocab.text.len().div_ceil(4)];
        for (value, bytes) in text.iter_mut().zip(vocab.text.as_bytes().chunks(4)) {
            let mut word = [0u8; 4];
            word[..bytes.len()].copy_from_slice(bytes);
            // In memory order, so that `as_bytes` gives the text back on any machine.
            *value = u32::from_ne_bytes(word);
        }
        let mut words =
            Self { text: text.into(), starts: vocab.starts.into(), ids: vocab.ids.into(), ..Self::default() };
        let all = 0..words.ids.len() as u32;
        words.initial = words.table(all.clone().collect(), 0).into();
        let continuing = all.filter(|&e| words.word(e).is_some_and(|w| w.starts_with(prefix.as_bytes()))).collect();
        words.continuing = words.table(continuing, prefix.len()).into();
        words
    }

    /// Slots for `entries`, each found by its word past `skip` bytes; a word
    /// listed twice is found as its later entry, as the crate's map keeps it.
    fn table(&self, entries: Vec<u32>, skip: usize) -> Vec<u32> {
        let mut slots = vec![EMPTY; (entries.len() * 2).next_power_of_two().max(16)];
        let mask = slots.len() - 1;
        let key = |e: u32| self.word(e).and_then(|w| w.get(skip..)).unwrap_or_default();
        for entry in entries {
            let mut at = hash(key(entry)) as usize & mask;
            while slots[at] != EMPTY && key(slots[at]) != key(entry) {
                at = (at + 1) & mask;
            }
            slots[at] = entry;
        }
        slots
    }

    /// Word `entry`'s bytes.
    fn word(&self, entry: u32) -> Option<&[u8]> {
        let entry = entry as usize;
        let (start, end) = (*self.starts.get(entry)?, *self.starts.get(entry + 1)?);
        self.text.as_bytes().get(start as usize..end as usize)
    }

    /// The id of the word `key` in `slots`, its words keyed past `skip` bytes.
    fn find(&self, slots: &[u32], skip: usize, key: &str) -> Option<u32> {
        let mask = slots.len().checked_sub(1)?;
        let mut at = hash(key.as_bytes()) as usize & mask;
        // Every slot at most once: a table with no empty slot ends too.
        for _ in 0..slots.len() {
            let entry = *slots.get(at)?;
            if entry == EMPTY {
                return None;
            }
            if self.word(entry).and_then(|w| w.get(skip..)) == Some(key.as_bytes()) {
                return self.ids.get(entry as usize).copied();
            }
            at = (at + 1) & mask;
        }
        None
    }

    /// The arrays by name, to be packed.
    pub(super) fn arrays(&self) -> [(&'static str, &Buf<u32>); 5] {
        let [text, starts, ids, initial, continuing] = ARRAYS;
        [
            (text, &self.text),
            (starts, &self.starts),
            (ids, &self.ids),
            (initial, &self.initial),
            (continuing, &self.continuing),
        ]
    }

    /// The arrays `get` gives by name, checked to be of the shape [`Self::new`] makes.
    pub(super) fn from_arrays(get: impl Fn(&str) -> Option<Buf<u32>>) -> Result<Self, String> {
        let take = |name: &str| get(name).ok_or_else(|| format!("no {name}"));
        let words = Self {
            text: take(ARRAYS[0])?,
            starts: take(ARRAYS[1])?,
            ids: take(ARRAYS[2])?,
            initial: take(ARRAYS[3])?,
            continuing: take(ARRAYS[4])?,
        };
        let n = words.ids.len();
        if words.starts.len() != n + 1
            || words.starts.windows(2).any(|w| w[0] > w[1])
            || words.starts.last().is_some_and(|&end| end as usize > words.text.as_bytes().len())
        {
            return Err("the vocabulary's word bounds do not fit its text".into());
        }
        for slots in [&words.initial, &words.continuing] {
            if !slots.len().is_power_of_two() || slots.iter().any(|&e| e != EMPTY && e as usize >= n) {
                return Err("a vocabulary table is malformed".into());
            }
        }
        Ok(words)
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
#[derive(Clone, Copy, Serialize, Deserialize, PartialEq, Debug)]
struct Normalize {
    clean_text: bool,
    chinese: bool,
    strip_accents: bool,
    lowercase: bool,
}

/// A BERT WordPiece tokenizer.
pub struct WordPiece {
    words: Words,
    settings: Settings,
}

/// Everything of a WordPiece tokenizer but its words: a few values, kept as
/// JSON in the packed model file's header beside the words' arrays.
#[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
pub(super) struct Settings {
    unk: u32,
    max_word_chars: usize,
    /// The bytes every continuing word starts with (`##`), left out of its key.
    prefix_len: usize,
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
        let prefix = json.model.continuing_subword_prefix;
        let words = Words::new(json.model.vocab, &prefix);
        let unk = words.find(&words.initial, 0, &json.model.unk_token)?;
        let max_word_chars = json.model.max_input_chars_per_word;
        let prefix_len = prefix.len();
        Some(Self { words, settings: Settings { unk, max_word_chars, prefix_len, normalize, added, before, after } })
    }

    /// The tokenizer of these parts, as [`Self::parts`] gave them; an empty
    /// added token (which [`Self::from_json`] refuses) would match everywhere.
    pub(super) fn from_parts(words: Words, settings: Settings) -> Result<Self, String> {
        if settings.added.iter().any(|(content, _)| content.is_empty()) {
            return Err("an added token is empty".into());
        }
        Ok(Self { words, settings })
    }

    /// Whether every id it can give is below `vocab` (the weights' table).
    pub(super) fn ids_below(&self, vocab: usize) -> bool {
        let s = &self.settings;
        let added = s.added.iter().map(|(_, id)| id);
        std::iter::once(&s.unk)
            .chain(added)
            .chain(&s.before)
            .chain(&s.after)
            .chain(self.words.ids.iter())
            .all(|&id| (id as usize) < vocab)
    }

    /// Its words' arrays and its other settings, to be packed.
    pub(super) fn parts(&self) -> (&Words, &Settings) {
        (&self.words, &self.settings)
    }

    /// Whether its words are read from a mapping other processes share.
    pub(super) fn is_mapped(&self) -> bool {
        self.words.text.is_mapped()
    }

    /// The ids put before and after a text's own when asked for.
    pub fn specials(&self) -> (usize, usize) {
        (self.settings.before.len(), self.settings.after.len())
    }

    /// `text`'s ids, with the special ones around them when `specials`.
    pub fn ids(&self, text: &str, specials: bool) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 4 + 2);
        if specials {
            ids.extend(&self.settings.before);
        }
        self.tokens(text, |t| ids.push(t.id));
        if specials {
            ids.extend(&self.settings.after);
        }
        ids
    }

    /// Calls `emit` with each of `text`'s tokens in order (no special ones).
    pub fn tokens(&self, text: &str, emit: impl FnMut(Token)) {
        let mut pass = Pass { word: Word::default(), nfd: Decomposing::default(), emit };
        // Where each added token is next found at or after `from` (the text's end: nowhere).
        let mut next: Vec<usize> =
            self.settings.added.iter().map(|(content, _)| text.find(content.as_str()).unwrap_or(text.len())).collect();
        let mut from = 0;
        loop {
            let mut best: Option<(usize, usize)> = None;
            for (i, (content, _)) in self.settings.added.iter().enumerate() {
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
            let (content, id) = &self.settings.added[i];
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
            match self.settings.normalize {
                None => self.push(c, range, pass),
                Some(n) => self.normalized(c, range, n, pass),
            }
        }
        if let Some(n) = self.settings.normalize {
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
        let whole = Token { id: self.settings.unk, start: word.origin[0].0, end: word.origin[word.origin.len() - 1].1 };
        if word.origin.len() > self.settings.max_word_chars {
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
                    self.words.find(&self.words.initial, 0, piece)
                } else {
                    self.words.find(&self.words.continuing, self.settings.prefix_len, piece)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A tokenizer.json of BERT's shape with a few words, one of them listed twice.
    const JSON: &str = r###"{
        "added_tokens": [{"id": 0, "content": "[UNK]"}],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100,
                  "vocab": {"[UNK]": 0, "play": 1, "##ing": 2, "##ed": 3, "the": 4, "play": 5}}
    }"###;
    const TEXT: &str = "The PLAYING played, [UNK] zebra";

    fn copied(words: &Words) -> impl Fn(&str) -> Option<Buf<u32>> + '_ {
        |name| words.arrays().iter().find(|(n, _)| *n == name).map(|(_, b)| Buf::from(b.to_vec()))
    }

    #[test]
    fn the_packed_layout_is_pinned() {
        // Packed files written by an older ragbox are read as they are while
        // `LAYOUT` stays: a change to the hash, the tables or the settings
        // fails here, and must raise `LAYOUT` with these values.
        let tokenizer = WordPiece::from_json(JSON.as_bytes()).unwrap();
        let (words, settings) = tokenizer.parts();
        assert_eq!(LAYOUT, 1);
        assert_eq!(
            [hash(b""), hash(b"play"), hash(b"##ing")],
            [14695981038468906945u64, 11954900924519669870, 13248799140708017482]
        );
        const E: u32 = EMPTY;
        assert_eq!(words.initial.to_vec(), [E, E, E, E, E, 4, E, E, 0, E, 2, E, E, E, 5, 3]);
        assert_eq!(words.continuing.to_vec(), [E, E, 2, E, E, E, E, E, E, E, E, 3, E, E, E, E]);
        assert_eq!(
            serde_json::to_string(settings).unwrap(),
            r#"{"unk":0,"max_word_chars":100,"prefix_len":2,"normalize":{"clean_text":true,"chinese":true,"strip_accents":true,"lowercase":true},"added":[["[UNK]",0]],"before":[],"after":[]}"#
        );
    }

    #[test]
    fn words_read_back_from_their_arrays_tokenize_the_same() {
        let tokenizer = WordPiece::from_json(JSON.as_bytes()).unwrap();
        // The later "play" wins, as in the crate; "zebra" is unknown, the added token found as written.
        assert_eq!(tokenizer.ids(TEXT, false), [4, 5, 2, 5, 3, 0, 0, 0]);
        let (words, settings) = tokenizer.parts();
        let again = WordPiece::from_parts(Words::from_arrays(copied(words)).unwrap(), settings.clone()).unwrap();
        assert_eq!(again.ids(TEXT, true), tokenizer.ids(TEXT, true));
        assert!(tokenizer.ids_below(6) && !tokenizer.ids_below(5), "ids 0-5");
        let json = serde_json::to_string(settings).unwrap();
        assert_eq!(&serde_json::from_str::<Settings>(&json).unwrap(), settings);
    }

    #[test]
    fn arrays_that_disagree_are_refused_and_any_accepted_ones_never_panic() {
        let tokenizer = WordPiece::from_json(JSON.as_bytes()).unwrap();
        let (words, settings) = tokenizer.parts();
        type Damage = fn(&mut Vec<u32>);
        let refused: [(&str, Damage); 5] = [
            ("vocab.initial", |v| v.truncate(v.len() - 1)),
            ("vocab.continuing", |v| v[3] = 6),
            ("vocab.starts", |v| v.swap(1, 2)),
            ("vocab.starts", |v| *v.last_mut().unwrap() = 1000),
            ("vocab.ids", |v| v.truncate(2)),
        ];
        for (damaged, damage) in refused {
            let get = |name: &str| {
                let mut v = copied(words)(name)?.to_vec();
                if name == damaged {
                    damage(&mut v);
                }
                Some(Buf::from(v))
            };
            assert!(Words::from_arrays(get).is_err(), "{damaged}");
        }
        // Tables full of one word, text bytes that are no words: accepted, and nothing found wrongly.
        let get = |name: &str| {
            let mut v = copied(words)(name)?.to_vec();
            match name {
                "vocab.initial" | "vocab.continuing" => v.fill(1),
                "vocab.text" => v.fill(u32::MAX),
                _ => {}
            }
            Some(Buf::from(v))
        };
        let odd = WordPiece::from_parts(Words::from_arrays(get).unwrap(), settings.clone()).unwrap();
        assert_eq!(odd.ids("the playing", false), [0, 0]);
        let mut empty_added = settings.clone();
        empty_added.added.push((String::new(), 9));
        assert!(WordPiece::from_parts(Words::from_arrays(copied(words)).unwrap(), empty_added).is_err());
    }
}
