//! Which Latin-script language a text is written in, as far as search tells
//! them apart, host (a document's and a query's stemming) and guests (the
//! hybrid fusion's weight) alike: the languages whatlang chooses among and
//! how sure it must be, kept here so the two sides cannot drift apart.

use std::sync::LazyLock;
pub use whatlang::Lang;

/// The Latin-script languages the keyword index stems (each has a Snowball
/// stemmer), as whatlang names them.
pub const LATIN: [Lang; 14] = [
    Lang::Dan,
    Lang::Nld,
    Lang::Eng,
    Lang::Fin,
    Lang::Fra,
    Lang::Deu,
    Lang::Hun,
    Lang::Ita,
    Lang::Nob,
    Lang::Por,
    Lang::Ron,
    Lang::Spa,
    Lang::Swe,
    Lang::Tur,
];

/// The least confidence whatlang must have to tell a language: on the Debian
/// Reference's English questions, 1 in 136 was told another language at 0.5
/// or more.
pub const MIN_CONFIDENCE: f64 = 0.5;

/// Bytes of a text handed to whatlang at most: a text's opening tells its
/// language, and the cost (about 5 MB/s) stays bounded however long it is.
pub const SAMPLE_BYTES: usize = 2048;

/// The language among [`LATIN`] that whatlang is sure `text` is in (as given:
/// callers bound it, [`opening`]).
pub fn latin(text: &str) -> Option<Lang> {
    static DETECTOR: LazyLock<whatlang::Detector> =
        LazyLock::new(|| whatlang::Detector::with_allowlist(LATIN.to_vec()));
    DETECTOR.detect(text).filter(|info| info.confidence() >= MIN_CONFIDENCE).map(|info| info.lang())
}

/// `text`'s first `bytes` bytes at most, cut at a character boundary.
pub fn opening(text: &str, bytes: usize) -> &str {
    let mut end = text.len().min(bytes);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_told_only_when_whatlang_is_sure() {
        let german = "Die Paketverwaltung von Debian installiert Programme aus den Archiven und hält sie aktuell.";
        assert_eq!(latin(german), Some(Lang::Deu));
        assert_eq!(latin("Le système de gestion des paquets installe les programmes"), Some(Lang::Fra));
        assert_eq!(latin(""), None);
    }

    #[test]
    fn an_opening_ends_on_a_character() {
        assert_eq!(opening("日本語", 4), "日");
        assert_eq!(opening("abc", 10), "abc");
        assert_eq!(opening("", 3), "");
        assert_eq!(opening(&"é".repeat(2000), SAMPLE_BYTES).len(), SAMPLE_BYTES);
    }
}
