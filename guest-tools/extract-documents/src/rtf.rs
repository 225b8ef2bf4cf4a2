//! RTF: a small reader of control words and groups. Paragraphs (`\par`), line breaks,
//! `\'hh` and `\uN` escapes, tables (`\cell`, `\row`), headings by style or `\outlinelevel`,
//! list items (`\listtext`); font and colour tables, pictures, objects, fields' instructions
//! and every `\*` destination are skipped; `\info` gives the title and author.

use std::collections::HashMap;

use encoding_rs::{Encoding, WINDOWS_1252};

use crate::model::{Builder, Extracted, Result, first_heading, malformed, push_meta};

/// Deepest group nesting accepted; real files stay far below it.
pub const MAX_DEPTH: usize = 256;
/// Marks a `\line` in collected text until the paragraph is written.
const BR: char = '\u{2028}';

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Text,
    Skip,
    /// Inside `\info`, not yet in one of its fields.
    Info,
    /// An `\info` field: title, author, …
    InfoField(&'static str),
    /// `\creatim` or `\revtim`.
    InfoDate(&'static str),
    StyleSheet,
    StyleEntry,
    /// `\listtext` or `\pntext`: the bullet drawn before a list item.
    ListText,
}

#[derive(Debug, Clone, Copy)]
struct Group {
    dest: Dest,
    uc: usize,
}

#[derive(Debug, Default)]
struct Par {
    style: i64,
    outline: Option<usize>,
    list: bool,
    in_table: bool,
}

struct Reader<'a> {
    src: &'a [u8],
    i: usize,
    enc: &'static Encoding,
    b: Builder,
    groups: Vec<Group>,
    buf: String,
    pending: Vec<u8>,
    high_surrogate: Option<u16>,
    skip_chars: usize,
    par: Par,
    cells: Vec<String>,
    cell: String,
    styles: HashMap<i64, usize>,
    style_entry: (i64, String),
    info_text: String,
    info: Vec<(String, String)>,
    date: [i64; 5],
    title: Option<String>,
    /// Whether the group just opened has not yet seen its first control word.
    group_start: bool,
}

fn heading_level(style_name: &str) -> Option<usize> {
    let n = style_name.trim().trim_end_matches(';').to_ascii_lowercase().replace(' ', "");
    if n == "title" {
        return Some(1);
    }
    let level = n.strip_prefix("heading")?.parse::<usize>().ok()?;
    (1..=9).contains(&level).then_some(level.min(6))
}

impl Reader<'_> {
    fn dest(&self) -> Dest {
        self.groups.last().map_or(Dest::Skip, |g| g.dest)
    }

    fn set_dest(&mut self, d: Dest) {
        if let Some(g) = self.groups.last_mut() {
            g.dest = d;
        }
    }

    /// Decodes bytes held for the codepage (a double-byte character comes as two `\'hh`).
    fn flush_bytes(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let (s, _, _) = self.enc.decode(&self.pending);
        let s = s.into_owned();
        self.pending.clear();
        self.text(&s);
    }

    fn text(&mut self, s: &str) {
        match self.dest() {
            Dest::Text => self.buf.push_str(s),
            Dest::InfoField(_) => self.info_text.push_str(s),
            Dest::StyleEntry => self.style_entry.1.push_str(s),
            _ => {}
        }
    }

    fn byte(&mut self, c: u8) {
        if self.skip_chars > 0 {
            self.skip_chars -= 1;
            return;
        }
        if c.is_ascii() {
            self.flush_bytes();
            self.text(&(c as char).to_string());
        } else {
            self.pending.push(c);
        }
    }

    fn end_par(&mut self) {
        let raw = std::mem::take(&mut self.buf);
        let text: String =
            raw.split(BR).map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join("\n");
        if self.par.in_table {
            if !text.trim().is_empty() {
                if !self.cell.is_empty() {
                    self.cell.push(' ');
                }
                self.cell.push_str(text.trim());
            }
            return;
        }
        let heading = self.par.outline.or_else(|| self.styles.get(&self.par.style).copied());
        if let Some(level) = heading {
            self.b.heading(level, &text);
        } else if self.par.list {
            self.b.item(0, &text);
        } else {
            self.b.para(&text);
        }
        self.par.list = false;
    }

    fn control(&mut self, word: &str, param: Option<i64>) {
        let first = std::mem::replace(&mut self.group_start, false);
        if self.skip_chars > 0 && word != "u" {
            self.skip_chars -= 1;
            return;
        }
        if word != "u" {
            self.high_surrogate = None;
        }
        if word != "'" {
            self.flush_bytes();
        }
        let dest = self.dest();
        // Destinations: the first control word of a group says what the group holds.
        if first {
            let d = match (dest, word) {
                (
                    _,
                    "fonttbl" | "colortbl" | "pict" | "object" | "header" | "headerl" | "headerr" | "headerf"
                    | "footer" | "footerl" | "footerr" | "footerf" | "footnote" | "fldinst" | "themedata"
                    | "colorschememapping" | "datastore" | "latentstyles" | "xmlnstbl" | "listtable"
                    | "listoverridetable" | "rsidtbl" | "generator" | "pgdsctbl" | "filetbl" | "revtbl" | "xe" | "tc"
                    | "bkmkstart" | "bkmkend" | "nonshppict" | "shp" | "shpinst" | "sp" | "sn" | "sv",
                ) => Some(Dest::Skip),
                (_, "info") => Some(Dest::Info),
                (_, "stylesheet") => Some(Dest::StyleSheet),
                (Dest::StyleSheet, _) => Some(Dest::StyleEntry),
                (Dest::Text, "listtext" | "pntext") => {
                    self.par.list = true;
                    Some(Dest::ListText)
                }
                (Dest::Info, "title") => Some(Dest::InfoField("title")),
                (Dest::Info, "author") => Some(Dest::InfoField("author")),
                (Dest::Info, "subject") => Some(Dest::InfoField("subject")),
                (Dest::Info, "keywords") => Some(Dest::InfoField("keywords")),
                (Dest::Info, "doccomm") => Some(Dest::InfoField("description")),
                (Dest::Info, "creatim") => Some(Dest::InfoDate("created")),
                (Dest::Info, "revtim") => Some(Dest::InfoDate("modified")),
                (Dest::Info, _) => Some(Dest::Skip),
                _ => None,
            };
            if let Some(d) = d {
                if matches!(d, Dest::InfoField(_)) {
                    self.info_text.clear();
                }
                if matches!(d, Dest::InfoDate(_)) {
                    self.date = [0; 5];
                }
                if d == Dest::StyleEntry {
                    self.style_entry = (0, String::new());
                }
                self.set_dest(d);
            }
        }
        let dest = self.dest();
        match dest {
            Dest::StyleEntry => {
                if word == "s" {
                    self.style_entry.0 = param.unwrap_or(0);
                } else if matches!(word, "cs" | "ds" | "ts") {
                    // Character, section and table styles are not paragraph headings.
                    self.style_entry.0 = i64::MIN;
                }
                return;
            }
            Dest::InfoDate(_) => {
                let slot = match word {
                    "yr" => 0,
                    "mo" => 1,
                    "dy" => 2,
                    "hr" => 3,
                    "min" => 4,
                    _ => return,
                };
                self.date[slot] = param.unwrap_or(0);
                return;
            }
            Dest::Text => {}
            _ => {
                if word == "uc" {
                    self.set_uc(param);
                }
                return;
            }
        }
        match word {
            "par" | "sect" | "page" => self.end_par(),
            "line" => self.buf.push(BR),
            "tab" => self.buf.push(' '),
            "cell" | "nestcell" => {
                self.end_par();
                let cell = std::mem::take(&mut self.cell);
                self.cells.push(cell);
            }
            "row" | "nestrow" => {
                self.end_par();
                let cells = std::mem::take(&mut self.cells);
                self.b.row(&cells);
            }
            "pard" => self.par = Par::default(),
            "intbl" => self.par.in_table = true,
            "s" => self.par.style = param.unwrap_or(0),
            "outlinelevel" => {
                self.par.outline =
                    param.and_then(|p| usize::try_from(p).ok()).filter(|p| *p < 9).map(|p| (p + 1).min(6))
            }
            "uc" => self.set_uc(param),
            "u" => {
                let v = param.unwrap_or(0);
                let unit = if v < 0 { (v + 65536) as u16 } else { v as u16 };
                match (self.high_surrogate.take(), unit) {
                    (_, 0xD800..=0xDBFF) => self.high_surrogate = Some(unit),
                    (Some(h), 0xDC00..=0xDFFF) => {
                        let c = 0x10000 + ((u32::from(h) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                        self.buf.extend(char::from_u32(c));
                    }
                    (_, u) => self.buf.extend(char::from_u32(u32::from(u))),
                }
                self.skip_chars = self.groups.last().map_or(1, |g| g.uc);
            }
            "emdash" => self.buf.push('—'),
            "endash" => self.buf.push('–'),
            "bullet" => self.buf.push('•'),
            "lquote" => self.buf.push('‘'),
            "rquote" => self.buf.push('’'),
            "ldblquote" => self.buf.push('“'),
            "rdblquote" => self.buf.push('”'),
            "emspace" | "enspace" | "qmspace" | "~" => self.buf.push(' '),
            "_" => self.buf.push('-'),
            _ => {}
        }
    }

    fn set_uc(&mut self, param: Option<i64>) {
        if let Some(g) = self.groups.last_mut() {
            g.uc = param.and_then(|p| usize::try_from(p).ok()).unwrap_or(1).min(8);
        }
    }

    fn close_group(&mut self) {
        self.flush_bytes();
        let Some(g) = self.groups.pop() else { return };
        match g.dest {
            Dest::InfoField(key) => {
                let v = std::mem::take(&mut self.info_text);
                if key == "title" {
                    self.title = Some(v).filter(|v| !v.trim().is_empty());
                } else {
                    push_meta(&mut self.info, key, Some(v));
                }
            }
            Dest::InfoDate(key) => {
                let [y, mo, d, h, mi] = self.date;
                if (1..=9999).contains(&y) && (1..=12).contains(&mo) && (1..=31).contains(&d) {
                    push_meta(&mut self.info, key, Some(format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:00")));
                }
            }
            Dest::StyleEntry => {
                let (n, name) = std::mem::take(&mut self.style_entry);
                if n != i64::MIN
                    && let Some(level) = heading_level(&name)
                {
                    self.styles.insert(n, level);
                }
            }
            _ => {}
        }
        self.skip_chars = 0;
    }

    fn run(&mut self) -> Result<()> {
        while self.i < self.src.len() {
            if self.b.full() {
                return Ok(());
            }
            let c = self.src[self.i];
            self.i += 1;
            match c {
                b'{' => {
                    self.flush_bytes();
                    let top = self.groups.last().copied().unwrap_or(Group { dest: Dest::Text, uc: 1 });
                    if self.groups.len() >= MAX_DEPTH {
                        return Err(malformed(format!("RTF groups nest deeper than {MAX_DEPTH} levels")));
                    }
                    self.groups.push(top);
                    self.group_start = true;
                    self.skip_chars = 0;
                }
                b'}' => {
                    self.close_group();
                    if self.groups.is_empty() {
                        return Ok(());
                    }
                }
                b'\\' => self.escape(),
                b'\r' | b'\n' => {}
                c => {
                    self.group_start = false;
                    self.byte(c);
                }
            }
        }
        Ok(())
    }

    fn escape(&mut self) {
        let Some(&c) = self.src.get(self.i) else { return };
        if c.is_ascii_alphabetic() {
            let start = self.i;
            while self.i < self.src.len() && self.src[self.i].is_ascii_alphabetic() && self.i - start < 32 {
                self.i += 1;
            }
            let word = String::from_utf8_lossy(&self.src[start..self.i]).into_owned();
            let pstart = self.i;
            if self.src.get(self.i) == Some(&b'-') {
                self.i += 1;
            }
            while self.i < self.src.len() && self.src[self.i].is_ascii_digit() && self.i - pstart < 11 {
                self.i += 1;
            }
            let param = std::str::from_utf8(&self.src[pstart..self.i]).ok().and_then(|p| p.parse::<i64>().ok());
            if self.src.get(self.i) == Some(&b' ') {
                self.i += 1;
            }
            if word == "bin" {
                // Raw binary data follows: skip it whole.
                let n = param.and_then(|p| usize::try_from(p).ok()).unwrap_or(0);
                self.i = self.i.saturating_add(n).min(self.src.len());
                return;
            }
            self.control(&word, param);
            return;
        }
        self.i += 1;
        match c {
            b'\'' => {
                let hex = self.src.get(self.i..self.i + 2).and_then(|h| std::str::from_utf8(h).ok());
                if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    self.i += 2;
                    self.group_start = false;
                    if self.skip_chars > 0 {
                        self.skip_chars -= 1;
                    } else {
                        self.pending.push(v);
                    }
                }
            }
            b'*' => self.set_dest(Dest::Skip),
            b'\\' | b'{' | b'}' => {
                self.group_start = false;
                self.byte(c);
            }
            b'\r' | b'\n' => self.control("par", None),
            b'~' => self.control("~", None),
            b'_' => self.control("_", None),
            b'-' => {}
            _ => {}
        }
    }
}

/// The text of an RTF file, as one part.
pub fn rtf(bytes: &[u8]) -> Result<Extracted> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    if !bytes[start..].starts_with(b"{\\rtf") {
        return Err(malformed("not an RTF file: it does not begin with {\\rtf"));
    }
    let cp = bytes.windows(8).take(4096).position(|w| w == b"\\ansicpg").and_then(|p| {
        let digits: String =
            bytes[p + 8..].iter().take(5).take_while(|b| b.is_ascii_digit()).map(|&b| b as char).collect();
        digits.parse::<u16>().ok()
    });
    let enc = cp.and_then(codepage::to_encoding_no_replacement).unwrap_or(WINDOWS_1252);
    let mut r = Reader {
        src: &bytes[start..],
        i: 0,
        enc,
        b: Builder::new(),
        groups: Vec::new(),
        buf: String::new(),
        pending: Vec::new(),
        high_surrogate: None,
        skip_chars: 0,
        par: Par::default(),
        cells: Vec::new(),
        cell: String::new(),
        styles: HashMap::new(),
        style_entry: (0, String::new()),
        info_text: String::new(),
        info: Vec::new(),
        date: [0; 5],
        title: None,
        group_start: false,
    };
    r.run()?;
    r.flush_bytes();
    // A file cut short still gives the paragraph it was in.
    r.end_par();
    let cut_short = !r.groups.is_empty();
    let title = r.title.take();
    let info = std::mem::take(&mut r.info);
    let parts = r.b.finish();
    if parts.is_empty() && cut_short {
        return Err(malformed("the RTF is cut short: it ends inside a group, before any text"));
    }
    let title = title.or_else(|| first_heading(&parts));
    Ok(Extracted { title, metadata: info, parts })
}
