//! How text is cut into what the keyword index counts: words, and runs of
//! CJK characters (Han, Hiragana, Katakana, Hangul), which are written
//! without spaces and read as overlapping character pairs. The analyzer,
//! the chunk positions and the query's plain words all cut text here, so
//! they cannot disagree on where a word is.

pub use ragbox_protocol::script::{self, Script};
use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

/// A word longer than this many characters is kept cut to it: past it a
/// "word" is a hash, an encoded blob or a clause of a script written without
/// spaces, found only as a whole, and every distinct one would be a term.
pub const MAX_WORD_CHARS: usize = 40;

/// One piece of text as the index reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A run of letters, digits and the marks joined to them, in no CJK
    /// script: one position.
    Word {
        /// The word as written.
        text: &'a str,
        /// Its byte offset in the text.
        start: usize,
    },
    /// A run of CJK characters: a position per pair of neighbours (one for a
    /// single character).
    Cjk {
        /// The run as written (marks after a character, such as variation
        /// selectors, included).
        text: &'a str,
        /// Its byte offset in the text.
        start: usize,
    },
}

impl<'a> Piece<'a> {
    /// The piece as written.
    pub fn text(&self) -> &'a str {
        match *self {
            Piece::Word { text, .. } | Piece::Cjk { text, .. } => text,
        }
    }

    /// The positions the piece takes.
    pub fn positions(&self) -> u32 {
        match self {
            Piece::Word { .. } => 1,
            Piece::Cjk { text, .. } => {
                let units = text.chars().filter(|&c| script::is_cjk(c)).count() as u32;
                units.saturating_sub(1).max(1)
            }
        }
    }
}

/// The pieces of `text`, in order. Anything else (spaces, punctuation,
/// symbols) separates them.
pub fn pieces(text: &str) -> Pieces<'_> {
    Pieces { text, at: 0 }
}

/// The word positions of `text`: the sum of its pieces' positions, which is
/// how the analyzers number them.
pub fn positions(text: &str) -> u32 {
    pieces(text).fold(0u32, |n, piece| n.saturating_add(piece.positions()))
}

/// Iterator of [`pieces`].
pub struct Pieces<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        let rest = &self.text[self.at..];
        // A mark with no letter before it joins nothing: skipped as a separator.
        let (offset, first) = rest.char_indices().find(|&(_, c)| c.is_alphanumeric())?;
        let start = self.at + offset;
        let cjk = script::is_cjk(first);
        // A word's letters are of one script (`textСлово` is two words, each
        // stemmed as its own); digits and marks join any.
        let mut letters = (!cjk && first.is_alphabetic()).then(|| script::of(first));
        let mut end = start + first.len_utf8();
        for c in self.text[end..].chars() {
            let joins = if is_mark(c) {
                true
            } else if !c.is_alphanumeric() || script::is_cjk(c) != cjk {
                false
            } else if cjk || !c.is_alphabetic() {
                true
            } else {
                *letters.get_or_insert(script::of(c)) == script::of(c)
            };
            if !joins {
                break;
            }
            end += c.len_utf8();
        }
        self.at = end;
        let text = &self.text[start..end];
        Some(if cjk { Piece::Cjk { text, start } } else { Piece::Word { text, start } })
    }
}

/// True for a combining mark (an accent written apart, a vowel sign of an
/// Indic or Thai letter, a variation selector): part of the letter before it.
fn is_mark(c: char) -> bool {
    !c.is_ascii() && c.is_mark()
}

/// The script whose stemmer reads a word: that of its first letter (CJK
/// runs are no words).
pub fn word_script(word: &str) -> Script {
    word.chars().find(|c| c.is_alphabetic()).map_or(Script::Other, script::of)
}

/// `word` (lowercased) with its diacritics folded, for matching: `résumé`
/// as `resume`, `straße` as `strasse`, full-width `ＡＢＣ` as `abc`.
/// Latin and Greek letters only: Cyrillic's `й` and `ё` are letters of their
/// own that the Russian stemmer reads. ASCII words are returned as they are.
pub fn fold(word: &str, script: Script) -> std::borrow::Cow<'_, str> {
    if word.is_ascii() || !matches!(script, Script::Latin | Script::Greek) {
        return std::borrow::Cow::Borrowed(word);
    }
    let mut out = String::with_capacity(word.len());
    for c in word.nfd() {
        match c {
            c if is_mark(c) => {}
            '\u{FF01}'..='\u{FF5E}' => out.push(char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)),
            'ß' => out.push_str("ss"),
            'æ' => out.push_str("ae"),
            'œ' => out.push_str("oe"),
            'ø' => out.push('o'),
            'đ' | 'ð' => out.push('d'),
            'ł' => out.push('l'),
            'þ' => out.push_str("th"),
            'ı' => out.push('i'),
            'ς' => out.push('σ'),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// At most [`MAX_WORD_CHARS`] characters of `word`.
pub fn capped(word: &str) -> &str {
    cut(word, MAX_WORD_CHARS)
}

/// At most `chars` characters of `word`.
pub fn cut(word: &str, chars: usize) -> &str {
    match word.char_indices().nth(chars) {
        Some((end, _)) => &word[..end],
        None => word,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<(&str, bool)> {
        pieces(text)
            .map(|p| match p {
                Piece::Word { text, .. } => (text, false),
                Piece::Cjk { text, .. } => (text, true),
            })
            .collect()
    }

    #[test]
    fn scripts_written_without_spaces_come_apart_from_words() {
        assert_eq!(
            all("Linuxのカーネル 3.2 設定ファイルを開く getUserName()"),
            [
                ("Linux", false),
                ("のカーネル", true),
                ("3", false),
                ("2", false),
                ("設定ファイルを開く", true),
                ("getUserName", false)
            ]
        );
        assert_eq!(all("한국어 텍스트"), [("한국어", true), ("텍스트", true)]);
        // Mixed within a word: each script its own piece; digits join any.
        assert_eq!(all("日本語text中文"), [("日本語", true), ("text", false), ("中文", true)]);
        assert_eq!(
            all("textСловоλόγος 3dСлово2 x²"),
            [("text", false), ("Слово", false), ("λόγος", false), ("3d", false), ("Слово2", false), ("x²", false)]
        );
    }

    #[test]
    fn marks_stay_with_their_letters() {
        // Thai vowel and tone marks, Devanagari vowel signs, a decomposed accent.
        assert_eq!(all("ที่นี่ ภาษาไทย"), [("ที่นี่", false), ("ภาษาไทย", false)]);
        assert_eq!(all("हिन्दी"), [("हिन्दी", false)]);
        assert_eq!(all("cafe\u{301} x"), [("cafe\u{301}", false), ("x", false)]);
        // A mark with nothing before it joins nothing.
        assert_eq!(all("\u{301}a"), [("a", false)]);
    }

    #[test]
    fn positions_count_words_and_character_pairs() {
        assert_eq!(positions("the quick fox"), 3);
        assert_eq!(positions("日本語"), 2);
        assert_eq!(positions("日 本"), 2);
        assert_eq!(positions("私はragboxを使う"), 1 + 1 + 2);
        // A variation selector is no character of its own.
        assert_eq!(positions("葛\u{E0100}城"), 1);
        assert_eq!(positions(""), 0);
    }

    #[test]
    fn scripts_and_folds() {
        assert_eq!(word_script("résumé"), Script::Latin);
        assert_eq!(word_script("3d"), Script::Latin);
        assert_eq!(word_script("42"), Script::Other);
        assert_eq!(word_script("файлы"), Script::Cyrillic);
        assert_eq!(word_script("αρχεία"), Script::Greek);
        assert_eq!(word_script("ملفات"), Script::Other);
        assert_eq!(fold("résumé", Script::Latin), "resume");
        assert_eq!(fold("straße", Script::Latin), "strasse");
        assert_eq!(fold("ｒａｇｂｏｘ", Script::Latin), "ragbox");
        assert_eq!(fold("αρχεία", Script::Greek), "αρχεια");
        assert_eq!(fold("новый", Script::Cyrillic), "новый");
        assert_eq!(capped(&"ก".repeat(50)).chars().count(), MAX_WORD_CHARS);
        assert_eq!(capped("short"), "short");
    }
}
