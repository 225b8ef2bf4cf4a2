//! Cutting a document into chunks the model can embed whole.
//!
//! Markdown-aware: text is split into blocks (paragraphs, headings, fenced
//! code), blocks are packed into chunks of at most `target` tokens, and a new
//! heading starts a new chunk, so a chunk rarely straddles two sections. A
//! block longer than `target` is cut into even windows (overlapping when
//! asked) at token starts that follow whitespace, a small heading before it
//! leading the first. Byte ranges are kept so results can point into the
//! file. Token positions come from the model's own tokenizer (the host's
//! `embedder.token-offsets`), so a chunk's size is measured, not guessed.

/// A chunk's byte range in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// How big chunks are, in tokens.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Most tokens in a chunk.
    pub target: usize,
    /// Tokens shared by consecutive windows of one long block.
    pub overlap: usize,
    /// A chunk this small is merged with the next block even across a heading.
    pub min: usize,
}

impl Sizes {
    /// Sizes for a model that reads `max_tokens` tokens (special tokens included).
    /// Windows do not overlap: on SciFact an overlap of an eighth cost 7 % more
    /// tokens to embed and gained nothing (hybrid nDCG@10 0.733 with it, 0.735
    /// without, with even windows and titles leading them; bench/quality.py).
    pub fn for_model(max_tokens: usize) -> Self {
        let target = max_tokens.saturating_sub(16).clamp(16, 240);
        Self { target, overlap: 0, min: target / 8 }
    }
}

/// Cuts `text` into chunks; `token_starts` are the byte offsets where its
/// tokens start, ascending. Whitespace-only text gives no chunks.
pub fn chunk(text: &str, token_starts: &[u32], sizes: Sizes) -> Vec<Span> {
    let tokens = Tokens { starts: token_starts, len: text.len() };
    let mut chunks = Vec::new();
    let mut current: Option<Span> = None;
    for block in blocks(text) {
        let block_tokens = tokens.count(block.span);
        if block_tokens > sizes.target {
            // A small open chunk (a title, a heading) leads the block's first window:
            // alone it would be embedded without the text it names.
            let mut span = block.span;
            match current.take() {
                Some(open) if tokens.count(open) < sizes.min => span.start = open.start,
                Some(open) => chunks.push(open),
                None => {}
            }
            chunks.extend(windows(text, span, &tokens, sizes));
            continue;
        }
        current = match current {
            None => Some(block.span),
            Some(open) => {
                let joined = Span { start: open.start, end: block.span.end };
                let heading_break = block.heading && tokens.count(open) >= sizes.min;
                if heading_break || tokens.count(joined) > sizes.target {
                    chunks.push(open);
                    Some(block.span)
                } else {
                    Some(joined)
                }
            }
        };
    }
    chunks.extend(current);
    chunks
}

/// Bytes of a word after which an estimate starts another token: a BERT
/// vocabulary splits longer words (and most identifiers) into pieces.
const ESTIMATED_PIECE_BYTES: usize = 5;

/// Where a BERT tokenizer would roughly start its tokens in `text`, without
/// one: at each word, every [`ESTIMATED_PIECE_BYTES`] within a long word,
/// at each punctuation mark and at each CJK character. Some twenty times as
/// fast as tokenizing, near enough for chunks that only keyword search reads
/// until the model's own replace them (on code and Markdown of the cargo
/// registry it counts 95–100 % of all-MiniLM-L6-v2's tokens).
pub fn estimated_token_starts(text: &str) -> Vec<u32> {
    let bytes = text.as_bytes();
    let mut starts = Vec::with_capacity(text.len() / 4);
    // Where the current word's current piece started, while in a word.
    let mut piece: Option<usize> = None;
    let mut at = 0;
    while at < bytes.len() {
        // ASCII, most of what is indexed, is classified without decoding a char.
        let (class, width) = match bytes[at] {
            b if b.is_ascii() => (ASCII_CLASSES[usize::from(b)], 1),
            _ => text[at..].chars().next().map_or((Class::Mark, 1), |c| (Class::of(c), c.len_utf8())),
        };
        match class {
            Class::Space => piece = None,
            Class::Word => match piece {
                Some(from) if at - from < ESTIMATED_PIECE_BYTES => {}
                _ => {
                    starts.push(at as u32);
                    piece = Some(at);
                }
            },
            Class::Mark => {
                starts.push(at as u32);
                piece = None;
            }
        }
        at += width;
    }
    starts
}

/// The class of each ASCII character ([`Class::of`]), looked up.
const ASCII_CLASSES: [Class; 128] = {
    let mut classes = [Class::Mark; 128];
    let mut b = 0u8;
    while b < 128 {
        classes[b as usize] = match b {
            b' ' | b'\t'..=b'\r' => Class::Space,
            _ if b.is_ascii_alphanumeric() => Class::Word,
            _ => Class::Mark,
        };
        b += 1;
    }
    classes
};

/// How the token estimate reads a character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Whitespace: ends a word.
    Space,
    /// A letter or digit (not CJK): words are cut into pieces.
    Word,
    /// Punctuation, symbols and CJK: a token each.
    Mark,
}

impl Class {
    #[inline]
    fn of(c: char) -> Class {
        if c.is_whitespace() {
            Class::Space
        } else if c.is_alphanumeric() && !is_cjk(c) {
            Class::Word
        } else {
            Class::Mark
        }
    }
}

/// CJK ideographs, kana and hangul: BERT's tokenizer makes each a token.
fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// Token positions of one text.
struct Tokens<'a> {
    starts: &'a [u32],
    len: usize,
}

impl Tokens<'_> {
    /// Tokens starting inside `span`.
    fn count(&self, span: Span) -> usize {
        self.index(span.end) - self.index(span.start)
    }

    /// Number of tokens starting before byte `at`.
    fn index(&self, at: usize) -> usize {
        self.starts.partition_point(|&s| (s as usize) < at)
    }

    /// Byte where token `i` starts (the text's end past the last token).
    fn start(&self, i: usize) -> usize {
        self.starts.get(i).map_or(self.len, |&s| s as usize)
    }
}

/// Windows of at most `target` tokens over a long block, overlapping by
/// `overlap`, as few as fit and of even sizes (a block just over the target
/// becomes two halves, not a full window and a scrap), each cut where a token
/// follows whitespace when one is near.
fn windows(text: &str, span: Span, tokens: &Tokens, sizes: Sizes) -> Vec<Span> {
    let bytes = text.as_bytes();
    let (first, last) = (tokens.index(span.start), tokens.index(span.end));
    let overlap = sizes.overlap.min(sizes.target / 2);
    let stride = sizes.target - overlap;
    let count = (last - first).saturating_sub(overlap).div_ceil(stride).max(1);
    let size = ((last - first).saturating_sub(overlap).div_ceil(count) + overlap).clamp(1, sizes.target);
    let mut out = Vec::new();
    let mut from = first;
    while from < last {
        // What is left after a cut that backed off goes whole into the last window when it fits.
        let mut to = if last - from <= sizes.target { last } else { from + size };
        if to < last {
            // Back off to a token that starts a word, but not by more than a quarter window.
            let floor = to - size / 4;
            let mut t = to;
            while t > floor && !bytes.get(tokens.start(t).wrapping_sub(1)).is_some_and(u8::is_ascii_whitespace) {
                t -= 1;
            }
            if t > floor {
                to = t;
            }
        }
        let start = tokens.start(from).max(span.start);
        let end = if to >= last { span.end } else { trim_end(text, tokens.start(to)) };
        if end > start {
            out.push(Span { start, end });
        }
        if to >= last {
            break;
        }
        from = (to - overlap.min(to - from - 1)).max(from + 1);
    }
    out
}

fn trim_end(text: &str, end: usize) -> usize {
    text[..end].trim_end().len()
}

/// A block of text: a paragraph, a heading line, or a fenced code block.
#[derive(Debug, Clone, Copy)]
struct Block {
    span: Span,
    heading: bool,
}

/// Splits text into blocks at blank lines and around headings; fenced code
/// stays one block. Spans are trimmed of surrounding whitespace.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut in_fence = false;
    let mut offset = 0;
    let close = |out: &mut Vec<Block>, start: &mut Option<usize>, end: usize, heading: bool| {
        if let Some(s) = start.take() {
            let piece = &text[s..end];
            let lead = piece.len() - piece.trim_start().len();
            let trimmed = piece.trim();
            if !trimmed.is_empty() {
                out.push(Block { span: Span { start: s + lead, end: s + lead + trimmed.len() }, heading });
            }
        }
    };
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            if !in_fence {
                close(&mut out, &mut start, line_start, false);
                start = Some(line_start);
            }
            in_fence = !in_fence;
            if !in_fence {
                close(&mut out, &mut start, offset, false);
            }
            continue;
        }
        if in_fence {
            continue;
        }
        if trimmed.is_empty() {
            close(&mut out, &mut start, line_start, false);
        } else if is_heading(trimmed) {
            close(&mut out, &mut start, line_start, false);
            start = Some(line_start);
            close(&mut out, &mut start, offset, true);
        } else if start.is_none() {
            start = Some(line_start);
        }
    }
    close(&mut out, &mut start, text.len(), false);
    out
}

fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && line.as_bytes().get(hashes).is_none_or(|b| *b == b' ')
}

/// Token starts at every whitespace-separated word: the stand-in for the
/// model's tokenizer that the chunkers' tests and fuzz targets use (the
/// chunkers need only ascending offsets at character boundaries).
#[doc(hidden)]
pub fn word_starts(text: &str) -> Vec<u32> {
    let mut starts = Vec::new();
    let mut prev_space = true;
    for (i, c) in text.char_indices() {
        if !c.is_whitespace() && prev_space {
            starts.push(i as u32);
        }
        prev_space = c.is_whitespace();
    }
    starts
}

#[cfg(test)]
mod tests {
    #[test]
    fn estimated_tokens_start_at_words_long_words_punctuation_and_cjk() {
        let text = "Hi, getElementById 日本!";
        let starts: Vec<usize> = estimated_token_starts(text).into_iter().map(|s| s as usize).collect();
        let pieces: Vec<&str> =
            starts.iter().zip(starts.iter().skip(1).chain([&text.len()])).map(|(&a, &b)| text[a..b].trim()).collect();
        assert_eq!(pieces, ["Hi", ",", "getEl", "ement", "ById", "日", "本", "!"]);
        assert!(estimated_token_starts(" \n\t").is_empty());
    }

    #[test]
    fn ascii_is_classed_as_its_chars_are() {
        for b in 0u8..128 {
            assert_eq!(ASCII_CLASSES[usize::from(b)], Class::of(char::from(b)), "byte {b}");
        }
    }

    use super::*;

    fn pieces(text: &str, sizes: Sizes) -> Vec<&str> {
        chunk(text, &word_starts(text), sizes).into_iter().map(|s| &text[s.start..s.end]).collect()
    }

    const SMALL: Sizes = Sizes { target: 10, overlap: 2, min: 3 };

    #[test]
    fn packs_paragraphs_and_breaks_at_headings() {
        let text = "# Title\n\nOne two three.\n\nFour five.\n\n## Next section here\n\nSix seven eight nine.\n";
        assert_eq!(
            pieces(text, SMALL),
            ["# Title\n\nOne two three.\n\nFour five.", "## Next section here\n\nSix seven eight nine."]
        );
    }

    #[test]
    fn a_tiny_chunk_joins_across_a_heading() {
        let text = "# A\n\n## B\n\nwords here";
        assert_eq!(pieces(text, SMALL), ["# A\n\n## B\n\nwords here"]);
    }

    #[test]
    fn long_blocks_become_overlapping_windows_within_the_target() {
        let words: Vec<String> = (0..45).map(|i| format!("w{i}")).collect();
        let text = words.join(" ");
        let starts = word_starts(&text);
        let spans = chunk(&text, &starts, SMALL);
        assert!(spans.len() >= 5, "{spans:?}");
        for s in &spans {
            let n = starts.iter().filter(|&&t| (t as usize) >= s.start && (t as usize) < s.end).count();
            assert!(n <= SMALL.target, "{n} tokens in {:?}", &text[s.start..s.end]);
        }
        // Consecutive windows overlap, and together they cover every word.
        for pair in spans.windows(2) {
            assert!(pair[1].start < pair[0].end, "{pair:?}");
        }
        assert_eq!((spans[0].start, spans.last().unwrap().end), (0, text.len()));
    }

    #[test]
    fn a_block_just_over_the_target_is_halved_and_its_title_leads_the_first_half() {
        // A 2-token title and 12 words: 14 tokens over a target of 10.
        let words: Vec<String> = (0..12).map(|i| format!("w{i}")).collect();
        let text = format!("# T\n\n{}", words.join(" "));
        let sizes = Sizes { target: 10, overlap: 0, min: 3 };
        assert_eq!(pieces(&text, sizes), ["# T\n\nw0 w1 w2 w3 w4", "w5 w6 w7 w8 w9 w10 w11"]);
        // A title long enough to stand alone still does.
        let titled = format!("# A longer title\n\n{}", words.join(" "));
        assert_eq!(pieces(&titled, sizes)[0], "# A longer title");
    }

    #[test]
    fn fenced_code_stays_whole_and_blank_text_gives_nothing() {
        let text = "Intro.\n\n```\nfn a() {}\n\nfn b() {}\n```\n\nOutro.";
        let big = Sizes { target: 100, overlap: 5, min: 3 };
        assert_eq!(pieces(text, big), [text]);
        let tiny = Sizes { target: 8, overlap: 1, min: 1 };
        assert!(pieces(text, tiny).contains(&"```\nfn a() {}\n\nfn b() {}\n```"));
        assert!(pieces(" \n\n\t", SMALL).is_empty());
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let text = "héllo wörld ünïcode ".repeat(20);
        for s in chunk(&text, &word_starts(&text), SMALL) {
            assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
        }
    }
}
