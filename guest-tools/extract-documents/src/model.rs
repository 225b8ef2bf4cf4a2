//! What an extractor returns, mirroring `ragbox:tools/documents` in plain Rust, and the
//! builder every format reader writes its text into.

use std::fmt;

/// What was read out of one file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extracted {
    /// The document's own title (its metadata, else its first heading).
    pub title: Option<String>,
    /// Metadata such as `author`, `created` (ISO 8601), `pages`.
    pub metadata: Vec<(String, String)>,
    /// The parts (pages, slides, sheets, chapters) in order.
    pub parts: Vec<Part>,
}

/// A part of a document a reader can be pointed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// `p. 3`, `slide 2`, `sheet Budget`, `chapter 4`, or none.
    pub label: Option<String>,
    /// Its text: headings as `#` lines, table rows with ` | `, paragraphs apart by a blank line.
    pub text: String,
}

/// Why no text came out of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractError {
    /// Not a valid file of the format: what is wrong.
    Malformed(String),
    /// A valid file with no text to index: what it holds instead.
    NoText(String),
    /// A valid file this extractor cannot read (encrypted, …).
    Unsupported(String),
}

impl fmt::Display for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(m) => write!(f, "malformed: {m}"),
            Self::NoText(m) => write!(f, "no text: {m}"),
            Self::Unsupported(m) => write!(f, "unsupported: {m}"),
        }
    }
}

impl std::error::Error for ExtractError {}

/// A document's own title and its metadata.
pub type Meta = (Option<String>, Vec<(String, String)>);

/// Shorthand for a reader's result.
pub type Result<T> = std::result::Result<T, ExtractError>;

/// A `Malformed` error from anything printable.
pub fn malformed(what: impl fmt::Display) -> ExtractError {
    ExtractError::Malformed(what.to_string())
}

/// Most text one file may yield; the rest is cut and the cut said in the last part. Under the
/// 8 MiB the host takes from one file (what one call may tokenize), with room for the breaks
/// that join the parts.
pub const MAX_TEXT: usize = 7 << 20;

/// The kind of the last block written, so list items and table rows stay on adjacent lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// A paragraph or heading: blank lines around it.
    Para,
    /// A list item: adjacent items on adjacent lines.
    Item,
    /// A table row: adjacent rows on adjacent lines.
    Row,
}

/// Collects parts and blocks, bounding the total text to [`MAX_TEXT`].
#[derive(Debug)]
pub struct Builder {
    parts: Vec<Part>,
    text: String,
    label: Option<String>,
    last: Option<Block>,
    used: usize,
    limit: usize,
    cut: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Self::with_limit(MAX_TEXT)
    }
}

impl Builder {
    /// A builder whose first part has no label.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder that cuts the text at `limit` bytes (tests use small limits).
    pub fn with_limit(limit: usize) -> Self {
        Self { parts: Vec::new(), text: String::new(), label: None, last: None, used: 0, limit, cut: false }
    }

    /// Whether the text limit was reached: readers may stop early.
    pub fn full(&self) -> bool {
        self.cut
    }

    /// Ends the current part (dropped if it has no text) and starts one labelled `label`.
    pub fn start_part(&mut self, label: Option<String>) {
        self.end_part();
        self.label = label;
    }

    fn end_part(&mut self) {
        let text = std::mem::take(&mut self.text);
        let trimmed = text.trim();
        if !trimmed.is_empty() {
            self.parts.push(Part { label: self.label.take(), text: trimmed.to_string() });
        }
        self.last = None;
    }

    /// Sets the current part's label (known only once its text is read).
    pub fn set_label(&mut self, label: Option<String>) {
        self.label = label;
    }

    /// Whether the current part has any text yet.
    pub fn part_has_text(&self) -> bool {
        !self.text.trim().is_empty()
    }

    /// Appends one block (whitespace-trimmed; nothing if empty).
    pub fn block(&mut self, kind: Block, s: &str) {
        let s = s.trim_end();
        let s = s.trim_start_matches(['\n', '\r']);
        if s.trim().is_empty() {
            return;
        }
        let sep = match self.last {
            None => "",
            Some(last) if last == kind && kind != Block::Para => "\n",
            Some(_) => "\n\n",
        };
        self.push(sep);
        self.push(s);
        self.last = Some(kind);
    }

    /// Appends a paragraph.
    pub fn para(&mut self, s: &str) {
        self.block(Block::Para, s);
    }

    /// Appends a heading of `level` (1..=6) as a Markdown `#` line.
    pub fn heading(&mut self, level: usize, s: &str) {
        let s = collapse_ws(s);
        if !s.is_empty() {
            self.block(Block::Para, &format!("{} {s}", "#".repeat(level.clamp(1, 6))));
        }
    }

    /// Appends a list item at nesting `level` (0 = top) as `- item`.
    pub fn item(&mut self, level: usize, s: &str) {
        let s = s.trim();
        if !s.is_empty() {
            self.block(Block::Item, &format!("{}- {s}", "  ".repeat(level.min(8))));
        }
    }

    /// Appends a table row, cells joined by ` | ` (trailing empty cells dropped).
    pub fn row<S: AsRef<str>>(&mut self, cells: &[S]) {
        let end = cells.iter().rposition(|c| !c.as_ref().trim().is_empty()).map_or(0, |i| i + 1);
        if end == 0 {
            return;
        }
        let line = cells[..end].iter().map(|c| collapse_ws(c.as_ref())).collect::<Vec<_>>().join(" | ");
        self.block(Block::Row, &line);
    }

    fn push(&mut self, s: &str) {
        if self.cut {
            return;
        }
        let room = self.limit.saturating_sub(self.used);
        if s.len() <= room {
            self.text.push_str(s);
            self.used += s.len();
        } else {
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&s[..end]);
            self.used += end;
            self.cut = true;
        }
    }

    /// Sets every part's label to none (a document found to have one page only).
    pub fn clear_labels(&mut self) {
        self.label = None;
        for p in &mut self.parts {
            p.label = None;
        }
    }

    /// The parts written so far, the current one included.
    pub fn finish(mut self) -> Vec<Part> {
        self.end_part();
        if self.cut {
            let note = format!(
                "\n\n[ragbox: the text was cut at {} MiB; the rest of the file is not indexed]",
                self.limit >> 20
            );
            match self.parts.last_mut() {
                Some(p) => p.text.push_str(&note),
                None => self.parts.push(Part { label: None, text: note.trim().to_string() }),
            }
        }
        self.parts
    }

    /// Finishes into an [`Extracted`].
    pub fn into_extracted(self, title: Option<String>, metadata: Vec<(String, String)>) -> Extracted {
        Extracted { title: title.map(|t| collapse_ws(&t)).filter(|t| !t.is_empty()), metadata, parts: self.finish() }
    }
}

/// `s` with runs of whitespace made one space, trimmed.
pub fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// `s` cut to at most `n` characters, at a word boundary when there is one, with `…` when cut.
pub fn truncate_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => {
            let head = &s[..i];
            let head = match head.rfind(' ') {
                Some(sp) if sp > i / 2 => &head[..sp],
                _ => head,
            };
            format!("{}…", head.trim_end().trim_end_matches([',', ';', ':']))
        }
        None => s.to_string(),
    }
}

/// Adds `(key, value)` to `meta` when the value is not blank.
pub fn push_meta(meta: &mut Vec<(String, String)>, key: &str, value: Option<String>) {
    if let Some(v) = value {
        let v = collapse_ws(&v);
        if !v.is_empty() && !meta.iter().any(|(k, _)| k == key) {
            meta.push((key.to_string(), v));
        }
    }
}

/// The first Markdown heading in the parts, for documents with no title of their own.
pub fn first_heading(parts: &[Part]) -> Option<String> {
    parts.iter().flat_map(|p| p.text.lines()).find_map(|l| {
        let t = l.trim_start_matches('#');
        (t.len() < l.len() && t.starts_with(' ')).then(|| t.trim().to_string())
    })
}

/// A paragraph of a word-processing document (DOCX, ODT) while it is read.
#[derive(Debug, Default)]
pub struct Para {
    /// Its text so far.
    pub text: String,
    /// Its heading level, if it is a heading.
    pub heading: Option<usize>,
    /// Its list level, if it is a list item.
    pub list: Option<usize>,
    /// Whether it sits in a table cell.
    pub in_table: bool,
    /// Whether a page break follows it (ODT paragraph styles say so).
    pub break_after: bool,
}

impl Para {
    /// Writes the finished paragraph: into the table `cell` being read, or
    /// into `b` as a heading, a list item or a paragraph.
    pub fn emit(self, b: &mut Builder, cell: &mut String) {
        let text = self.text.trim();
        if text.is_empty() {
            return;
        }
        if self.in_table {
            if !cell.is_empty() {
                cell.push(' ');
            }
            cell.push_str(text);
        } else if let Some(level) = self.heading {
            b.heading(level, text);
        } else if let Some(level) = self.list {
            b.item(level, text);
        } else {
            b.para(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_lists_rows_and_cut() {
        let mut b = Builder::with_limit(1 << 20);
        b.heading(2, "Title  here");
        b.para("First.");
        b.item(0, "a");
        b.item(1, "b");
        b.row(&["x", "y", ""]);
        b.row(&["1", "2", "3"]);
        b.start_part(Some("p. 2".into()));
        b.start_part(Some("p. 3".into()));
        b.para("Third.");
        let parts = b.finish();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].text, "## Title here\n\nFirst.\n\n- a\n  - b\n\nx | y\n1 | 2 | 3");
        assert_eq!(parts[1].label.as_deref(), Some("p. 3"));

        let mut b = Builder::with_limit(10);
        b.para("ééééééééé");
        assert!(b.full());
        let parts = b.finish();
        assert!(parts[0].text.starts_with("éééé"));
        assert!(parts[0].text.contains("cut at"));
    }
}
