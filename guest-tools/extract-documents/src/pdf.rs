//! PDF through lopdf: one part per page (`p. N`), text in the order the page draws it (which
//! for LibreOffice, Word and TeX output is reading order, one column after another), lines
//! broken where the baseline moves and paragraphs where it jumps. Form XObjects are followed
//! with a depth cap and a cycle check; every page has an operation budget.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use lopdf::{Dictionary, Document, Encoding, LoadOptions, Object, ObjectId};

use crate::content::{Lexer, Operand};
use crate::model::{Builder, ExtractError, Extracted, Result, malformed, push_meta};

/// Most bytes one stream may decompress to.
const MAX_STREAM: usize = 64 << 20;
/// Deepest chain of form XObjects followed.
const MAX_FORM_DEPTH: usize = 12;
/// Most content operations run for one page, forms included.
const MAX_OPS: usize = 4_000_000;
/// Most content operations run for the whole file.
const MAX_DOC_OPS: usize = 40_000_000;
/// Most pages read.
const MAX_PAGES: usize = 100_000;
/// Deepest `q` nesting tracked.
const MAX_GSTATE: usize = 256;

type Matrix = [f64; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

fn mul(m1: &Matrix, m2: &Matrix) -> Matrix {
    [
        m1[0] * m2[0] + m1[1] * m2[2],
        m1[0] * m2[1] + m1[1] * m2[3],
        m1[2] * m2[0] + m1[3] * m2[2],
        m1[2] * m2[1] + m1[3] * m2[3],
        m1[4] * m2[0] + m1[5] * m2[2] + m2[4],
        m1[4] * m2[1] + m1[5] * m2[3] + m2[5],
    ]
}

fn num(o: &Object) -> Option<f64> {
    match o {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
    .filter(|v| v.is_finite())
}

fn matrix(ops: &[Object]) -> Option<Matrix> {
    if ops.len() < 6 {
        return None;
    }
    let mut m = [0.0; 6];
    for (slot, o) in m.iter_mut().zip(ops) {
        *slot = num(o)?;
    }
    Some(m)
}

/// The number `back` places from the end of the operands (0 = the last).
fn last_num(o: &[Operand], back: usize) -> Option<f64> {
    match o.len().checked_sub(back + 1).map(|i| o[i]) {
        Some(Operand::Num(n)) if n.is_finite() => Some(n),
        _ => None,
    }
}

/// The last six operands as a matrix.
fn last_matrix(o: &[Operand]) -> Option<Matrix> {
    let mut m = [0.0; 6];
    for (k, slot) in m.iter_mut().enumerate() {
        *slot = last_num(o, 5 - k)?;
    }
    Some(m)
}

/// Resources dictionaries in lookup order (nearest first).
type Resources<'d> = Vec<&'d Dictionary>;

fn lookup<'d>(doc: &'d Document, res: &Resources<'d>, category: &[u8], name: &[u8]) -> Option<&'d Object> {
    res.iter().find_map(|r| {
        let cat = match r.get(category).ok()? {
            Object::Reference(id) => doc.get_dictionary(*id).ok()?,
            Object::Dictionary(d) => d,
            _ => return None,
        };
        let o = cat.get(name).ok()?;
        Some(o)
    })
}

/// A font: how its codes become text, and how wide they are.
struct Font<'d> {
    enc: Option<Encoding<'d>>,
    /// Two-byte codes (a Type0 font with Identity-H or -V).
    two_byte: bool,
    first: i64,
    widths: Vec<f64>,
    cid_widths: HashMap<u32, f64>,
    default: f64,
}

/// Most entries read from a font's width table.
const MAX_WIDTHS: usize = 65_536;

impl<'d> Font<'d> {
    fn load(doc: &'d Document, dict: &'d Dictionary) -> Self {
        let enc = dict.get_font_encoding_with_limit(doc, MAX_STREAM).ok();
        let deref = |o: &'d Object| -> Option<&'d Object> {
            match o {
                Object::Reference(id) => doc.get_object(*id).ok(),
                o => Some(o),
            }
        };
        let array = |o: Option<&'d Object>| o.and_then(deref).and_then(|a| a.as_array().ok());
        let mut f =
            Font { enc, two_byte: false, first: 0, widths: Vec::new(), cid_widths: HashMap::new(), default: 500.0 };
        if dict.get(b"Subtype").and_then(|s| s.as_name()).ok() == Some(b"Type0".as_slice()) {
            f.two_byte = dict
                .get(b"Encoding")
                .and_then(|e| e.as_name())
                .is_ok_and(|n| n.starts_with(b"Identity") || n.ends_with(b"-UCS2-H") || n.ends_with(b"UTF16-H"));
            f.default = 1000.0;
            let desc = array(dict.get(b"DescendantFonts").ok())
                .and_then(|a| a.first())
                .and_then(deref)
                .and_then(|d| d.as_dict().ok());
            if let Some(desc) = desc {
                if let Some(dw) = desc.get(b"DW").ok().and_then(num) {
                    f.default = dw;
                }
                if let Some(w) = array(desc.get(b"W").ok()) {
                    let mut i = 0;
                    while i + 1 < w.len() && f.cid_widths.len() < MAX_WIDTHS {
                        let Some(c0) = num(&w[i]) else { break };
                        match deref(&w[i + 1]) {
                            Some(Object::Array(ws)) => {
                                for (k, wv) in ws.iter().enumerate().take(MAX_WIDTHS) {
                                    if let Some(wv) = num(wv) {
                                        f.cid_widths.insert(c0 as u32 + k as u32, wv);
                                    }
                                }
                                i += 2;
                            }
                            Some(c1) => {
                                let (Some(c1), Some(wv)) = (num(c1), w.get(i + 2).and_then(num)) else { break };
                                let (c0, c1) = (c0 as u32, (c1 as u32).min(c0 as u32 + MAX_WIDTHS as u32));
                                for c in c0..=c1 {
                                    f.cid_widths.insert(c, wv);
                                }
                                i += 3;
                            }
                            None => break,
                        }
                    }
                }
            }
        } else {
            f.first = dict.get(b"FirstChar").ok().and_then(num).unwrap_or(0.0) as i64;
            if let Some(w) = array(dict.get(b"Widths").ok()) {
                f.widths = w.iter().take(MAX_WIDTHS).map(|o| deref(o).and_then(num).unwrap_or(0.0)).collect();
            }
            let missing = dict
                .get(b"FontDescriptor")
                .ok()
                .and_then(deref)
                .and_then(|d| d.as_dict().ok())
                .and_then(|d| d.get(b"MissingWidth").ok())
                .and_then(num);
            f.default = missing.filter(|m| *m > 0.0).unwrap_or(500.0);
        }
        f
    }

    /// The advance of `bytes` in text space units (before size and scaling): glyph widths
    /// in thousandths, and how many codes were single-byte spaces (for word spacing).
    fn advance(&self, bytes: &[u8]) -> (f64, usize, usize) {
        let (mut w, mut spaces, mut codes) = (0.0, 0, 0);
        if self.two_byte {
            for pair in bytes.chunks(2) {
                let code = pair.iter().fold(0u32, |a, b| (a << 8) | u32::from(*b));
                w += self.cid_widths.get(&code).copied().unwrap_or(self.default);
                codes += 1;
            }
        } else {
            for &b in bytes {
                let idx = i64::from(b) - self.first;
                w += usize::try_from(idx)
                    .ok()
                    .and_then(|i| self.widths.get(i))
                    .copied()
                    .filter(|v| *v > 0.0)
                    .unwrap_or(self.default);
                spaces += usize::from(b == b' ');
                codes += 1;
            }
        }
        (w, spaces, codes)
    }
}

struct Walker<'d> {
    doc: &'d Document,
    out: String,
    ops: usize,
    fonts: HashMap<usize, Font<'d>>,
    forms: Vec<ObjectId>,
    /// Form XObjects already decompressed: a form drawn many times is inflated once.
    decoded: HashMap<ObjectId, Option<Rc<Vec<u8>>>>,
    scratch: String,
    max_ops: usize,
    /// Where the last shown text ended (device space x), its baseline y and font size.
    last: Option<(f64, f64, f64)>,
    errors: usize,
}

struct GState {
    ctm: Matrix,
}

struct TextState {
    tm: Matrix,
    tlm: Matrix,
    leading: f64,
    size: f64,
    char_space: f64,
    word_space: f64,
    scale: f64,
    font: Option<usize>,
}

impl<'d> Walker<'d> {
    fn font(&mut self, res: &Resources<'d>, name: &[u8]) -> Option<usize> {
        let obj = lookup(self.doc, res, b"Font", name)?;
        let dict = match obj {
            Object::Reference(id) => self.doc.get_dictionary(*id).ok()?,
            Object::Dictionary(d) => d,
            _ => return None,
        };
        let key = dict as *const Dictionary as usize;
        if !self.fonts.contains_key(&key) {
            let font = Font::load(self.doc, dict);
            self.fonts.insert(key, font);
        }
        Some(key)
    }

    /// Starts a line or paragraph break, or a space, by where the next text begins.
    fn place(&mut self, x: f64, y: f64, size: f64) {
        let size = size.abs().max(1.0);
        if let Some((lx, ly, lsize)) = self.last {
            let dy = ly - y;
            let em = lsize.max(size);
            if dy.abs() > em * 0.5 {
                // A gap of more than a line and a half, or a move up the page (the next
                // column, a new block), ends a paragraph.
                let sep = if dy > em * 1.5 || dy < -em * 0.5 { "\n\n" } else { "\n" };
                let trimmed = self.out.trim_end_matches([' ', '\n']).len();
                self.out.truncate(trimmed);
                if !self.out.is_empty() {
                    self.out.push_str(sep);
                }
            } else if (x - lx > em * 0.15 || lx - x > em * 0.5)
                && !self.out.is_empty()
                && !self.out.ends_with([' ', '\n'])
            {
                self.out.push(' ');
            }
        }
    }

    fn show(&mut self, ts: &mut TextState, gs: &GState, bytes: &[u8]) {
        let trm = mul(&ts.tm, &gs.ctm);
        let size = ts.size * (trm[2] * trm[2] + trm[3] * trm[3]).sqrt();
        let Some(font) = ts.font.and_then(|k| self.fonts.get(&k)) else {
            self.errors += 1;
            return;
        };
        let (w, spaces, codes) = font.advance(bytes);
        let tx = (w / 1000.0 * ts.size + ts.char_space * codes as f64 + ts.word_space * spaces as f64) * ts.scale;
        let mut s = std::mem::take(&mut self.scratch);
        s.clear();
        let decoded = font.enc.as_ref().is_some_and(|enc| enc.write_to_string(bytes, &mut s).is_ok());
        ts.tm = mul(&[1.0, 0.0, 0.0, 1.0, tx, 0.0], &ts.tm);
        if !decoded || s.is_empty() {
            self.scratch = s;
            return;
        }
        self.place(trm[4], trm[5], size);
        for c in s.chars() {
            match c {
                '\t' | '\n' | '\r' | '\u{a0}' => self.out.push(' '),
                '\u{0}'..='\u{1f}' | '\u{fffd}' => {}
                c => self.out.push(c),
            }
        }
        self.scratch = s;
        let end = mul(&ts.tm, &gs.ctm);
        self.last = Some((end[4], trm[5], size.abs().max(1.0)));
    }

    fn run(&mut self, content: &[u8], res: &Resources<'d>, ctm: Matrix) {
        let mut gs = GState { ctm };
        let mut stack: Vec<Matrix> = Vec::new();
        let mut ts = TextState {
            tm: IDENTITY,
            tlm: IDENTITY,
            leading: 0.0,
            size: 0.0,
            char_space: 0.0,
            word_space: 0.0,
            scale: 1.0,
            font: None,
        };
        let mut lx = Lexer::new(content);
        while let Some(op) = lx.next_op() {
            self.ops += 1;
            if self.ops > self.max_ops {
                return;
            }
            let o = &lx.operands;
            match op {
                b"q" if stack.len() < MAX_GSTATE => stack.push(gs.ctm),
                b"Q" => {
                    if let Some(m) = stack.pop() {
                        gs.ctm = m;
                    }
                }
                b"cm" => {
                    if let Some(m) = last_matrix(o) {
                        gs.ctm = mul(&m, &gs.ctm);
                    }
                }
                b"BT" => {
                    ts.tm = IDENTITY;
                    ts.tlm = IDENTITY;
                }
                b"Tf" => {
                    let name = o.iter().rev().find_map(|x| match x {
                        Operand::Name(s, e) => Some(lx.name(*s, *e)),
                        _ => None,
                    });
                    ts.font = name.and_then(|n| self.font(res, n));
                    ts.size = last_num(o, 0).unwrap_or(0.0);
                }
                b"TL" => ts.leading = last_num(o, 0).unwrap_or(0.0),
                b"Tc" => ts.char_space = last_num(o, 0).unwrap_or(0.0),
                b"Tw" => ts.word_space = last_num(o, 0).unwrap_or(0.0),
                b"Tz" => ts.scale = last_num(o, 0).unwrap_or(100.0) / 100.0,
                b"Td" | b"TD" => {
                    let (tx, ty) = (last_num(o, 1).unwrap_or(0.0), last_num(o, 0).unwrap_or(0.0));
                    if op == b"TD" {
                        ts.leading = -ty;
                    }
                    ts.tlm = mul(&[1.0, 0.0, 0.0, 1.0, tx, ty], &ts.tlm);
                    ts.tm = ts.tlm;
                }
                b"Tm" => {
                    if let Some(m) = last_matrix(o) {
                        ts.tlm = m;
                        ts.tm = m;
                    }
                }
                b"T*" => {
                    ts.tlm = mul(&[1.0, 0.0, 0.0, 1.0, 0.0, -ts.leading], &ts.tlm);
                    ts.tm = ts.tlm;
                }
                b"Tj" | b"'" | b"\"" => {
                    if op != b"Tj" {
                        ts.tlm = mul(&[1.0, 0.0, 0.0, 1.0, 0.0, -ts.leading], &ts.tlm);
                        ts.tm = ts.tlm;
                    }
                    if op == b"\"" {
                        ts.word_space = last_num(o, 1).unwrap_or(ts.word_space);
                        ts.char_space = last_num(o, 0).unwrap_or(ts.char_space);
                    }
                    if let Some(Operand::Str(s, e)) = o.iter().rev().find(|x| matches!(x, Operand::Str(..))) {
                        self.show(&mut ts, &gs, &lx.strings[*s..*e]);
                    }
                }
                b"TJ" => {
                    for item in o {
                        match item {
                            Operand::Str(s, e) => self.show(&mut ts, &gs, &lx.strings[*s..*e]),
                            // A kerning adjustment moves the pen; a wide one is a space the
                            // writer did not draw, which place() sees by the gap.
                            Operand::Num(n) => {
                                let tx = -n / 1000.0 * ts.size * ts.scale;
                                ts.tm = mul(&[1.0, 0.0, 0.0, 1.0, tx, 0.0], &ts.tm);
                            }
                            _ => {}
                        }
                    }
                }
                b"Do" => {
                    let name = o.iter().rev().find_map(|x| match x {
                        Operand::Name(s, e) => Some(lx.name(*s, *e)),
                        _ => None,
                    });
                    if let Some(name) = name {
                        self.form(res, name, &gs);
                    }
                }
                _ => {}
            }
        }
    }

    /// Runs a form XObject, unless it is an image, too deep, or already running (a cycle).
    fn form(&mut self, res: &Resources<'d>, name: &[u8], gs: &GState) {
        let Some(Object::Reference(id)) = lookup(self.doc, res, b"XObject", name) else { return };
        if self.forms.len() >= MAX_FORM_DEPTH || self.forms.contains(id) || self.ops > self.max_ops {
            return;
        }
        let Ok(Object::Stream(stream)) = self.doc.get_object(*id) else { return };
        if stream.dict.get(b"Subtype").and_then(|s| s.as_name()).ok() != Some(b"Form".as_slice()) {
            return;
        }
        let content = match self.decoded.get(id) {
            Some(c) => c.clone(),
            None => {
                let content = stream.decompressed_content_with_limit(MAX_STREAM).or_else(|e| {
                    // An unfiltered stream has nothing to decompress.
                    if stream.dict.get(b"Filter").is_err() { Ok(stream.content.clone()) } else { Err(e) }
                });
                let content = content.ok().map(Rc::new);
                self.decoded.insert(*id, content.clone());
                content
            }
        };
        let Some(content) = content else {
            self.errors += 1;
            return;
        };
        let mut inner: Resources<'d> = Vec::new();
        match stream.dict.get(b"Resources") {
            Ok(Object::Dictionary(d)) => inner.push(d),
            Ok(Object::Reference(rid)) => {
                if let Ok(d) = self.doc.get_dictionary(*rid) {
                    inner.push(d);
                }
            }
            _ => {}
        }
        // Forms without resources of their own use the page's.
        inner.extend(res.iter().copied());
        let m = stream.dict.get(b"Matrix").ok().and_then(|m| m.as_array().ok()).and_then(|a| matrix(a));
        let ctm = mul(&m.unwrap_or(IDENTITY), &gs.ctm);
        self.forms.push(*id);
        self.run(&content, &inner, ctm);
        self.forms.pop();
    }
}

fn page_resources(doc: &Document, page: ObjectId) -> Resources<'_> {
    let mut res = Vec::new();
    match doc.get_page_resources(page) {
        Ok((dict, ids)) => {
            res.extend(dict);
            res.extend(ids.iter().filter_map(|id| doc.get_dictionary(*id).ok()));
        }
        // A /Parent cycle makes lopdf give up on inherited resources: keep the page's own.
        Err(_) => {
            let own = doc.get_dictionary(page).ok().and_then(|p| p.get(b"Resources").ok());
            match own {
                Some(Object::Dictionary(d)) => res.push(d),
                Some(Object::Reference(id)) => res.extend(doc.get_dictionary(*id).ok()),
                _ => {}
            }
        }
    }
    res
}

impl<'d> Walker<'d> {
    /// A walker for `doc`; fonts and decoded forms are kept from page to page.
    fn new(doc: &'d Document) -> Self {
        Walker {
            doc,
            out: String::new(),
            ops: 0,
            fonts: HashMap::new(),
            forms: Vec::new(),
            decoded: HashMap::new(),
            scratch: String::new(),
            max_ops: MAX_OPS,
            last: None,
            errors: 0,
        }
    }

    /// The text of one page, the errors met, and the operations run (at most `ops_left`).
    fn page(&mut self, page: ObjectId, ops_left: usize) -> (String, usize, usize) {
        self.out.clear();
        self.forms.clear();
        self.last = None;
        self.errors = 0;
        self.max_ops = MAX_OPS.min(ops_left);
        let Ok(content) = self.doc.get_page_content_with_limit(page, MAX_STREAM) else { return (String::new(), 1, 0) };
        self.ops = 0;
        let res = page_resources(self.doc, page);
        self.run(&content, &res, IDENTITY);
        (std::mem::take(&mut self.out), self.errors, self.ops)
    }
}

fn is_password_error(e: &lopdf::Error) -> bool {
    matches!(e, lopdf::Error::InvalidPassword | lopdf::Error::Decryption(_))
        || e.to_string().to_ascii_lowercase().contains("encrypt")
}

fn load(bytes: &[u8]) -> std::result::Result<Document, lopdf::Error> {
    let options = LoadOptions { max_decompressed_size: Some(MAX_STREAM), ..LoadOptions::default() };
    Document::load_mem_with_options(bytes, options)
}

/// For a file cut short (no trailer, no page tree): a page tree and trailer made up from the
/// page objects found by scanning, appended so lopdf can rebuild the rest.
fn salvage(bytes: &[u8]) -> Option<Document> {
    let mut pages = Vec::new();
    let mut max_id = 0u32;
    let mut i = 0;
    while let Some(pos) = memfind(&bytes[i..], b" obj") {
        let at = i + pos;
        i = at + 4;
        // "N G obj": read the two numbers backwards.
        let head = &bytes[at.saturating_sub(24)..at];
        let text = String::from_utf8_lossy(head);
        let mut nums = text.rsplit(|c: char| c.is_ascii_whitespace()).filter(|s| !s.is_empty());
        let (Some(g), Some(n)) = (nums.next(), nums.next()) else { continue };
        let (Ok(_), Ok(n)) = (g.parse::<u16>(), n.parse::<u32>()) else { continue };
        max_id = max_id.max(n);
        let body = &bytes[i..bytes.len().min(i + 2048)];
        let end = memfind(body, b"endobj").or_else(|| memfind(body, b"stream")).unwrap_or(body.len());
        let body = &body[..end];
        if let Some(p) = memfind(body, b"/Type").map(|p| p + 5) {
            let rest = &body[p..];
            let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(rest.len())..];
            if rest.starts_with(b"/Page") && !rest.get(5).is_some_and(|b| b.is_ascii_alphanumeric()) {
                pages.push(n);
            }
        }
        if pages.len() > MAX_PAGES {
            break;
        }
    }
    if pages.is_empty() {
        return None;
    }
    let (tree, cat) = (max_id + 1, max_id + 2);
    let kids: Vec<String> = pages.iter().map(|p| format!("{p} 0 R")).collect();
    let mut fixed = bytes.to_vec();
    fixed.extend_from_slice(
        format!(
            "\nendstream\nendobj\n{tree} 0 obj\n<< /Type /Pages /Kids [{}] /Count {} >>\nendobj\n{cat} 0 obj\n<< /Type /Catalog /Pages {tree} 0 R >>\nendobj\ntrailer\n<< /Size {} /Root {cat} 0 R >>\n%%EOF\n",
            kids.join(" "),
            pages.len(),
            cat + 1
        )
        .as_bytes(),
    );
    let options =
        LoadOptions { max_decompressed_size: Some(MAX_STREAM), force_reconstruct: true, ..LoadOptions::default() };
    Document::load_mem_with_options(&fixed, options).ok()
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `D:YYYYMMDDHHmmSS+HH'mm'` as ISO 8601, as far as it goes; none if it does not parse.
fn pdf_date(s: &str) -> Option<String> {
    let s = s.trim().trim_start_matches("D:");
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    if digits.len() < 4 {
        return None;
    }
    let part = |a: usize, b: usize, default: &str| digits.get(a..b).unwrap_or(default).to_string();
    let (y, mo, d) = (part(0, 4, ""), part(4, 6, "01"), part(6, 8, "01"));
    if !(1..=12).contains(&mo.parse::<u32>().ok()?) || !(1..=31).contains(&d.parse::<u32>().ok()?) {
        return None;
    }
    if digits.len() < 10 {
        return Some(format!("{y}-{mo}-{d}"));
    }
    let (h, mi, sec) = (part(8, 10, "00"), part(10, 12, "00"), part(12, 14, "00"));
    let rest = &s[digits.len()..];
    let tz = match rest.chars().next() {
        Some('Z') => "Z".to_string(),
        Some(sign @ ('+' | '-')) => {
            let tzd: String = rest[1..].chars().filter(char::is_ascii_digit).collect();
            match (tzd.get(0..2), tzd.get(2..4)) {
                (Some(th), Some(tm)) => format!("{sign}{th}:{tm}"),
                (Some(th), None) => format!("{sign}{th}:00"),
                _ => String::new(),
            }
        }
        _ => String::new(),
    };
    Some(format!("{y}-{mo}-{d}T{h}:{mi}:{sec}{tz}"))
}

fn info(doc: &Document) -> (Option<String>, Vec<(String, String)>) {
    let mut meta = Vec::new();
    let Some(info) = doc.trailer.get(b"Info").ok().and_then(|i| match i {
        Object::Reference(id) => doc.get_dictionary(*id).ok(),
        Object::Dictionary(d) => Some(d),
        _ => None,
    }) else {
        return (None, meta);
    };
    let get = |k: &[u8]| info.get(k).ok().and_then(|o| lopdf::decode_text_string(o).ok());
    for (key, name) in [(b"Author".as_slice(), "author"), (b"Subject", "subject"), (b"Keywords", "keywords")] {
        push_meta(&mut meta, name, get(key));
    }
    push_meta(&mut meta, "created", get(b"CreationDate").and_then(|d| pdf_date(&d)));
    push_meta(&mut meta, "modified", get(b"ModDate").and_then(|d| pdf_date(&d)));
    (get(b"Title").filter(|t| !t.trim().is_empty()), meta)
}

/// The text of a PDF file: one part per page that has text.
pub fn pdf(bytes: &[u8]) -> Result<Extracted> {
    if memfind(&bytes[..bytes.len().min(1024)], b"%PDF-").is_none() {
        return Err(malformed("not a PDF file: no %PDF- header"));
    }
    let mut salvaged = false;
    let doc = match load(bytes) {
        Ok(d) if d.page_iter().next().is_some() || d.trailer.get(b"Encrypt").is_ok() => d,
        Ok(d) => match salvage(bytes) {
            Some(s) => {
                salvaged = true;
                s
            }
            None => d,
        },
        Err(e) if is_password_error(&e) => {
            return Err(ExtractError::Unsupported(format!(
                "an encrypted PDF that does not open without a password ({e})"
            )));
        }
        Err(e) => match salvage(bytes) {
            Some(s) => {
                salvaged = true;
                s
            }
            None => return Err(malformed(format!("the PDF does not read ({e}); is it cut short or damaged?"))),
        },
    };
    if doc.trailer.get(b"Encrypt").is_ok() && doc.encryption_state.is_none() {
        return Err(ExtractError::Unsupported("an encrypted PDF that does not open without a password".into()));
    }
    let mut seen = HashSet::new();
    let pages: Vec<ObjectId> = doc.page_iter().filter(|p| seen.insert(*p)).take(MAX_PAGES).collect();
    if pages.is_empty() {
        return Err(malformed(if salvaged {
            "the PDF is cut short or damaged: no page of it reads".to_string()
        } else {
            "the PDF has no pages".to_string()
        }));
    }
    let mut b = Builder::new();
    let mut errors = 0;
    let mut ops_left = MAX_DOC_OPS;
    let mut walker = Walker::new(&doc);
    for (i, &page) in pages.iter().enumerate() {
        if b.full() {
            break;
        }
        b.start_part(Some(format!("p. {}", i + 1)));
        if ops_left == 0 {
            b.para(&format!(
                "[ragbox: stopped at page {} of {}: the PDF's content is too large to read whole]",
                i + 1,
                pages.len()
            ));
            break;
        }
        let (text, errs, ops) = walker.page(page, ops_left);
        errors += errs;
        ops_left = ops_left.saturating_sub(ops);
        b.para(&text);
    }
    let (title, mut meta) = info(&doc);
    meta.push(("pages".into(), pages.len().to_string()));
    let ex = b.into_extracted(title, meta);
    if ex.parts.is_empty() {
        let n = pages.len();
        return Err(if salvaged || errors >= n {
            malformed("the PDF is cut short or damaged: no text of it reads")
        } else {
            ExtractError::NoText(format!(
                "no text layer on any of its {n} page{} (a scan?); ragbox has no OCR yet",
                if n == 1 { "" } else { "s" }
            ))
        });
    }
    Ok(ex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(pdf_date("D:20240305102030+01'00'").as_deref(), Some("2024-03-05T10:20:30+01:00"));
        assert_eq!(pdf_date("D:20240305").as_deref(), Some("2024-03-05"));
        assert_eq!(pdf_date("D:2024").as_deref(), Some("2024-01-01"));
        assert_eq!(pdf_date("yesterday"), None);
    }
}
