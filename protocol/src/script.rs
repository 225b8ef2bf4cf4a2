//! Which script a letter is written in, as far as search tells them apart,
//! host (the keyword index's analyzer) and guests (the exact lookup, the
//! hybrid fusion's weight) alike: kept here so the two sides cannot drift apart.

/// A letter's script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Latin letters (full-width ones too).
    Latin,
    /// Cyrillic.
    Cyrillic,
    /// Greek.
    Greek,
    /// Han (with its iteration and closing marks), Hiragana, Katakana
    /// (half-width too) and Hangul: written without spaces between words.
    Cjk,
    /// Any other (Arabic, Hebrew, Thai, Devanagari, …), and what is no letter.
    Other,
}

/// The script of `c`.
pub fn of(c: char) -> Script {
    match c as u32 {
        0x41..=0x5A | 0x61..=0x7A => Script::Latin,
        0xC0..=0xD6 | 0xD8..=0xF6 | 0xF8..=0x24F | 0x1E00..=0x1EFF | 0x2C60..=0x2C7F | 0xA720..=0xA7FF => Script::Latin,
        0xAB30..=0xAB6F | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A => Script::Latin,
        0x370..=0x3FF | 0x1F00..=0x1FFF => Script::Greek,
        0x400..=0x52F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => Script::Cyrillic,
        0x1100..=0x11FF       // Hangul Jamo
        | 0x3005..=0x3007     // 々 〆 〇
        | 0x3021..=0x3029     // Hangzhou numerals
        | 0x3031..=0x3035     // vertical kana repeat marks
        | 0x303B..=0x303C     // 〻 〼
        | 0x3041..=0x30FF     // Hiragana, Katakana
        | 0x3131..=0x318E     // Hangul compatibility Jamo
        | 0x31F0..=0x31FF     // Katakana phonetic extensions
        | 0x3400..=0x4DBF     // CJK extension A
        | 0x4E00..=0x9FFF     // CJK unified ideographs
        | 0xA960..=0xA97F     // Hangul Jamo extended A
        | 0xAC00..=0xD7AF     // Hangul syllables
        | 0xD7B0..=0xD7FF     // Hangul Jamo extended B
        | 0xF900..=0xFAFF     // CJK compatibility ideographs
        | 0xFF66..=0xFF9F     // half-width Katakana
        | 0xFFA0..=0xFFDC     // half-width Hangul
        | 0x1B000..=0x1B16F   // Kana supplement and extended
        | 0x20000..=0x3134F => Script::Cjk, // CJK extensions B to G, compatibility supplement
        _ => Script::Other,
    }
}

/// True for a CJK letter or digit: one that search reads in pairs with its
/// neighbours rather than as part of a space-separated word.
pub fn is_cjk(c: char) -> bool {
    of(c) == Script::Cjk && c.is_alphanumeric()
}

/// True for the punctuation CJK text is written with (`、` `。` `「` `」`
/// `・`, full-width `，` `！` `？` `（` …): it separates words as a space
/// does in other scripts, and joins no identifier.
pub fn is_cjk_punctuation(c: char) -> bool {
    let cjk = matches!(
        c as u32,
        0x3000..=0x303F       // CJK symbols and punctuation
        | 0x30A0 | 0x30FB     // ゠ ・
        | 0xFE30..=0xFE4F     // CJK compatibility forms
        | 0xFF01..=0xFF0F     // ！ ＂ ＃ … ／
        | 0xFF1A..=0xFF20     // ： ； ＜ ＝ ＞ ？ ＠
        | 0xFF3B..=0xFF40     // ［ ＼ ］ ＾ ＿ ｀
        | 0xFF5B..=0xFF65 // ｛ ｜ ｝ ～ ｟ ｠ ｡ ｢ ｣ ､ ･
    );
    cjk && !c.is_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_are_told_apart_by_script() {
        assert_eq!(of('a'), Script::Latin);
        assert_eq!(of('é'), Script::Latin);
        assert_eq!(of('×'), Script::Other);
        assert_eq!(of('Ｚ'), Script::Latin);
        assert_eq!(of('ж'), Script::Cyrillic);
        assert_eq!(of('λ'), Script::Greek);
        for c in ['日', 'の', 'カ', 'ｶ', '한', '々', '𠮷'] {
            assert!(is_cjk(c), "{c}");
        }
        // CJK punctuation is no letter: it separates.
        for c in ['。', '、', '・', '「', 'ا', 'ก', '1'] {
            assert!(!is_cjk(c), "{c}");
        }
        for c in ['。', '、', '・', '「', '」', '，', '！', '（', '｡', '　'] {
            assert!(is_cjk_punctuation(c), "{c}");
        }
        // Letters and ASCII punctuation are not; nor the marks that are letters (々, 〇).
        for c in ['々', '〇', '日', 'ー', '_', ':', '.', '/', 'a'] {
            assert!(!is_cjk_punctuation(c), "{c}");
        }
    }
}
