//! XHTML (EPUB chapters) to text: headings as `#` lines, list items as `- item`, table rows
//! as `a | b`, paragraphs apart by a blank line.

use crate::model::{Builder, Result, collapse_ws};
use crate::xml::{Ev, Xml};

/// Marks a `<br>` in collected text until the block is written.
const BR: char = '\u{2028}';

fn heading_level(name: &str) -> Option<usize> {
    let n = name.strip_prefix('h')?.parse::<usize>().ok()?;
    (1..=6).contains(&n).then_some(n)
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "blockquote"
            | "dt"
            | "dd"
            | "dl"
            | "figcaption"
            | "figure"
            | "header"
            | "footer"
            | "aside"
            | "main"
            | "body"
            | "hr"
            | "table"
            | "caption"
            | "address"
    )
}

struct Walk<'b> {
    b: &'b mut Builder,
    buf: String,
    heading: Option<usize>,
    item: Option<usize>,
    lists: usize,
    pre: usize,
    cell: Option<String>,
    row: Option<Vec<String>>,
    first_heading: Option<String>,
}

impl Walk<'_> {
    fn push(&mut self, s: &str) {
        match self.cell.as_mut() {
            Some(c) => c.push_str(s),
            None => self.buf.push_str(s),
        }
    }

    fn flush(&mut self) {
        let raw = std::mem::take(&mut self.buf);
        let text = if self.pre > 0 {
            raw.replace(BR, "\n")
        } else {
            raw.split(BR).map(collapse_ws).collect::<Vec<_>>().join("\n")
        };
        if let Some(level) = self.heading.take() {
            if self.first_heading.is_none() && !text.trim().is_empty() {
                self.first_heading = Some(collapse_ws(&text));
            }
            self.b.heading(level, &text);
        } else if let Some(level) = self.item.take() {
            self.b.item(level, &text);
        } else {
            self.b.para(&text);
        }
    }
}

/// Writes the text of one XHTML document into `b`; returns its first heading.
pub fn xhtml(bytes: &[u8], what: &str, b: &mut Builder) -> Result<Option<String>> {
    let mut x = Xml::new(bytes, what);
    let mut w = Walk {
        b,
        buf: String::new(),
        heading: None,
        item: None,
        lists: 0,
        pre: 0,
        cell: None,
        row: None,
        first_heading: None,
    };
    while !w.b.full() {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) => {
                let name = t.name.to_ascii_lowercase();
                match name.as_str() {
                    "head" | "script" | "style" | "template" | "nav" => x.skip()?,
                    "br" => w.push(&BR.to_string()),
                    "ul" | "ol" => {
                        w.flush();
                        w.lists += 1;
                    }
                    "li" => {
                        w.flush();
                        w.item = Some(w.lists.saturating_sub(1));
                    }
                    "pre" => {
                        w.flush();
                        w.pre += 1;
                    }
                    "tr" => {
                        w.flush();
                        w.row = Some(Vec::new());
                    }
                    "td" | "th" => w.cell = Some(String::new()),
                    n if heading_level(n).is_some() && w.cell.is_none() => {
                        w.flush();
                        w.heading = heading_level(n);
                    }
                    n if is_block(n) => {
                        if w.cell.is_some() {
                            w.push(" ");
                        } else {
                            w.flush();
                        }
                    }
                    _ => {}
                }
            }
            Ev::End(name) => {
                let name = name.to_ascii_lowercase();
                match name.as_str() {
                    "ul" | "ol" => {
                        w.flush();
                        w.lists = w.lists.saturating_sub(1);
                    }
                    "li" => w.flush(),
                    "pre" => {
                        w.flush();
                        w.pre = w.pre.saturating_sub(1);
                    }
                    "td" | "th" => {
                        if let (Some(c), Some(r)) = (w.cell.take(), w.row.as_mut()) {
                            r.push(c);
                        }
                    }
                    "tr" => {
                        w.cell = None;
                        if let Some(r) = w.row.take() {
                            w.b.row(&r);
                        }
                    }
                    n if (heading_level(n).is_some() || is_block(n)) && w.cell.is_none() => w.flush(),
                    _ => {}
                }
            }
            Ev::Text(s) => w.push(&s),
        }
    }
    w.flush();
    Ok(w.first_heading)
}
