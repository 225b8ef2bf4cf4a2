//! A PDF content-stream lexer for text extraction: operators with their operands, without
//! building an object tree. It is several times faster than a general object parser on the
//! kerning-heavy streams office suites write, allocates only into buffers it reuses, and
//! cannot recurse: nested arrays and dictionaries are flat markers.

/// One operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Operand {
    /// A number.
    Num(f64),
    /// A name: a range of the content (without the `/`).
    Name(usize, usize),
    /// A string: a range of [`Lexer::strings`].
    Str(usize, usize),
    /// `[`.
    Open,
    /// `]`.
    Close,
    /// Anything else (booleans, null, dictionary brackets).
    Other,
}

/// Most operands kept for one operator; a stream piling up more is hostile or broken.
const MAX_OPERANDS: usize = 1 << 16;

/// Reads `content` one operator at a time.
pub struct Lexer<'a> {
    src: &'a [u8],
    i: usize,
    /// The operands of the operator just read.
    pub operands: Vec<Operand>,
    /// The bytes of the string operands.
    pub strings: Vec<u8>,
}

fn is_white(b: u8) -> bool {
    matches!(b, b'\0' | b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn is_delim(b: u8) -> bool {
    matches!(b, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// A PDF number (`12`, `-3.5`, `.5`, `4.`), or none.
fn number(tok: &[u8]) -> Option<f64> {
    let (neg, digits) = match tok.first() {
        Some(b'-') => (true, &tok[1..]),
        Some(b'+') => (false, &tok[1..]),
        _ => (false, tok),
    };
    if digits.is_empty() {
        return None;
    }
    let (mut v, mut scale, mut dot) = (0f64, 1f64, false);
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                v = v * 10.0 + f64::from(b - b'0');
                if dot {
                    scale *= 10.0;
                }
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    let v = v / scale;
    Some(if neg { -v } else { v })
}

impl<'a> Lexer<'a> {
    /// A lexer over `src`.
    pub fn new(src: &'a [u8]) -> Self {
        Self { src, i: 0, operands: Vec::with_capacity(64), strings: Vec::with_capacity(1024) }
    }

    /// The bytes of a name operand.
    pub fn name(&self, start: usize, end: usize) -> &'a [u8] {
        &self.src[start..end]
    }

    /// The next operator (its operands in [`Self::operands`]), or none at the end.
    pub fn next_op(&mut self) -> Option<&'a [u8]> {
        self.operands.clear();
        self.strings.clear();
        let src = self.src;
        while self.i < src.len() {
            let b = src[self.i];
            match b {
                b if is_white(b) => self.i += 1,
                b'%' => {
                    while self.i < src.len() && !matches!(src[self.i], b'\r' | b'\n') {
                        self.i += 1;
                    }
                }
                b'(' => {
                    let s = self.literal();
                    self.push(s);
                }
                b'<' if src.get(self.i + 1) == Some(&b'<') => {
                    self.i += 2;
                    self.push(Operand::Other);
                }
                b'>' => {
                    self.i += if src.get(self.i + 1) == Some(&b'>') { 2 } else { 1 };
                    self.push(Operand::Other);
                }
                b'<' => {
                    let s = self.hex_string();
                    self.push(s);
                }
                b'[' => {
                    self.i += 1;
                    self.push(Operand::Open);
                }
                b']' => {
                    self.i += 1;
                    self.push(Operand::Close);
                }
                b'{' | b'}' | b')' => self.i += 1,
                b'/' => {
                    let start = self.i + 1;
                    self.i = start;
                    while self.i < src.len() && !is_white(src[self.i]) && !is_delim(src[self.i]) {
                        self.i += 1;
                    }
                    self.push(Operand::Name(start, self.i));
                }
                _ => {
                    let start = self.i;
                    while self.i < src.len() && !is_white(src[self.i]) && !is_delim(src[self.i]) {
                        self.i += 1;
                    }
                    let tok = &src[start..self.i];
                    if let Some(n) = number(tok) {
                        self.push(Operand::Num(n));
                    } else if matches!(tok, b"true" | b"false" | b"null") {
                        self.push(Operand::Other);
                    } else {
                        if tok == b"BI" {
                            self.skip_inline_image();
                        }
                        return Some(tok);
                    }
                }
            }
        }
        None
    }

    fn push(&mut self, o: Operand) {
        if self.operands.len() < MAX_OPERANDS {
            self.operands.push(o);
        }
    }

    /// A `( … )` string, escapes resolved, into [`Self::strings`].
    fn literal(&mut self) -> Operand {
        let src = self.src;
        let start = self.strings.len();
        let mut depth = 0usize;
        self.i += 1;
        while self.i < src.len() {
            let b = src[self.i];
            self.i += 1;
            match b {
                b'(' => {
                    depth += 1;
                    self.strings.push(b);
                }
                b')' if depth == 0 => break,
                b')' => {
                    depth -= 1;
                    self.strings.push(b);
                }
                b'\\' => {
                    let Some(&e) = src.get(self.i) else { break };
                    self.i += 1;
                    match e {
                        b'n' => self.strings.push(b'\n'),
                        b'r' => self.strings.push(b'\r'),
                        b't' => self.strings.push(b'\t'),
                        b'b' => self.strings.push(8),
                        b'f' => self.strings.push(12),
                        b'0'..=b'7' => {
                            let mut v = u32::from(e - b'0');
                            for _ in 0..2 {
                                match src.get(self.i) {
                                    Some(&d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        self.i += 1;
                                    }
                                    _ => break,
                                }
                            }
                            self.strings.push(v as u8);
                        }
                        // A backslash before a line end continues the string.
                        b'\r' => {
                            if src.get(self.i) == Some(&b'\n') {
                                self.i += 1;
                            }
                        }
                        b'\n' => {}
                        other => self.strings.push(other),
                    }
                }
                b => self.strings.push(b),
            }
        }
        Operand::Str(start, self.strings.len())
    }

    /// A `< … >` hex string into [`Self::strings`].
    fn hex_string(&mut self) -> Operand {
        let src = self.src;
        let start = self.strings.len();
        let mut hi: Option<u8> = None;
        self.i += 1;
        while self.i < src.len() {
            let b = src[self.i];
            self.i += 1;
            if b == b'>' {
                break;
            }
            if let Some(v) = hex(b) {
                match hi.take() {
                    Some(h) => self.strings.push(h << 4 | v),
                    None => hi = Some(v),
                }
            }
        }
        if let Some(h) = hi {
            self.strings.push(h << 4);
        }
        Operand::Str(start, self.strings.len())
    }

    /// Skips an inline image's dictionary and data, up to and including `EI`.
    fn skip_inline_image(&mut self) {
        let src = self.src;
        // The dictionary runs to `ID`; the data from one white-space byte after it to `EI`
        // standing alone.
        let Some(id) = find_token(src, self.i, b"ID") else {
            self.i = src.len();
            return;
        };
        let mut j = id + 3;
        loop {
            let Some(ei) = find_token(src, j, b"EI") else {
                self.i = src.len();
                return;
            };
            if ei > 0 && is_white(src[ei - 1]) {
                self.i = ei + 2;
                return;
            }
            j = ei + 2;
        }
    }
}

/// Where `tok` next stands alone (delimited by white space or the end) at or after `from`.
fn find_token(src: &[u8], from: usize, tok: &[u8]) -> Option<usize> {
    let mut i = from;
    while i + tok.len() <= src.len() {
        let at = i + src[i..].windows(tok.len()).position(|w| w == tok)?;
        let after = src.get(at + tok.len()).copied();
        let before = if at == 0 { None } else { Some(src[at - 1]) };
        if after.is_none_or(|b| is_white(b) || is_delim(b)) && before.is_none_or(is_white) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_operators_strings_and_arrays() {
        let src = b"BT /F1 12 Tf 1 0 0 1 72.5 -.5 Tm [(a\\(b\\)\\101)-250<4142 3>] TJ % comment\n BI /W 1 ID \xff\x01EI x EI Q";
        let mut l = Lexer::new(src);
        assert_eq!(l.next_op(), Some(b"BT".as_slice()));
        assert_eq!(l.next_op(), Some(b"Tf".as_slice()));
        assert_eq!(l.operands[1], Operand::Num(12.0));
        let Operand::Name(s, e) = l.operands[0] else { panic!() };
        assert_eq!(l.name(s, e), b"F1");
        assert_eq!(l.next_op(), Some(b"Tm".as_slice()));
        assert_eq!(l.operands[4..], [Operand::Num(72.5), Operand::Num(-0.5)]);
        assert_eq!(l.next_op(), Some(b"TJ".as_slice()));
        assert_eq!(l.operands.len(), 5);
        assert_eq!(l.strings, b"a(b)AAB0");
        assert_eq!(l.next_op(), Some(b"BI".as_slice()));
        assert_eq!(l.next_op(), Some(b"Q".as_slice()));
        assert_eq!(l.next_op(), None);
    }
}
