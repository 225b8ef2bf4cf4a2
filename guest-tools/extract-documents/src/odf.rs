//! OpenDocument: ODT (text) and ODS (spreadsheet), from `content.xml` and `meta.xml`.

use std::collections::HashSet;

use crate::model::{Builder, Extracted, Meta, Para, Result, first_heading, push_meta};
use crate::sheets::Rows;
use crate::xml::{Ev, Xml};
use crate::zipx::Zip;

/// Most times one repeated non-empty spreadsheet cell is written out.
const MAX_REPEAT: u32 = 1000;

/// Title and metadata from `meta.xml`.
fn meta(zip: &mut Zip) -> Result<Meta> {
    let mut title = None;
    let mut meta = Vec::new();
    let mut keywords = Vec::new();
    let Some(bytes) = zip.read("meta.xml")? else { return Ok((title, meta)) };
    let mut x = Xml::new(&bytes, "meta.xml");
    loop {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) => {
                let key = match (t.prefix.as_str(), t.name.as_str()) {
                    ("dc", "title") => "title",
                    ("dc", "creator") | ("meta", "initial-creator") => "author",
                    ("dc", "subject") => "subject",
                    ("dc", "description") => "description",
                    ("dc", "language") => "language",
                    ("meta", "keyword") => "keywords",
                    ("meta", "creation-date") => "created",
                    ("dc", "date") => "modified",
                    ("meta", "document-statistic") => {
                        push_meta(&mut meta, "pages", t.attr("page-count").map(str::to_string));
                        continue;
                    }
                    _ => continue,
                };
                let v = x.text()?;
                match key {
                    "title" => title = Some(v).filter(|v| !v.trim().is_empty()),
                    "keywords" => keywords.push(v),
                    _ => push_meta(&mut meta, key, Some(v)),
                }
            }
            _ => {}
        }
    }
    if !keywords.is_empty() {
        push_meta(&mut meta, "keywords", Some(keywords.join(", ")));
    }
    Ok((title, meta))
}

/// The text of an ODT file; split into pages (`p. N`) where it records page breaks.
pub fn odt(bytes: &[u8]) -> Result<Extracted> {
    let mut zip = Zip::open(bytes, "ODT")?;
    let content = zip.require("content.xml")?;
    let (title, meta) = meta(&mut zip)?;
    let mut b = Builder::new();
    b.start_part(Some("p. 1".into()));
    let mut x = Xml::new(&content, "content.xml");
    let mut break_before: HashSet<String> = HashSet::new();
    let mut break_after: HashSet<String> = HashSet::new();
    let mut style: Option<String> = None;
    let mut paras: Vec<Para> = Vec::new();
    let mut lists = 0usize;
    let mut tables = 0usize;
    let mut row: Vec<String> = Vec::new();
    let mut cell = String::new();
    let mut page = 1usize;

    // A page break: a break with nothing written since the last one is the same break.
    let page_break = |b: &mut Builder, paras: &mut Vec<Para>, cell: &mut String, page: &mut usize| {
        if let Some(p) = paras.last_mut() {
            let done = Para { text: std::mem::take(&mut p.text), heading: p.heading.take(), ..Para::default() };
            let in_table = p.in_table;
            Para { in_table, ..done }.emit(b, cell);
        }
        if b.part_has_text() {
            *page += 1;
            b.start_part(Some(format!("p. {page}")));
        }
    };

    while !b.full() {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) => match (t.prefix.as_str(), t.name.as_str()) {
                ("style", "style") => style = t.attr("name").map(str::to_string),
                ("style", "paragraph-properties") => {
                    if let Some(s) = &style {
                        if t.attr("break-before") == Some("page") {
                            break_before.insert(s.clone());
                        }
                        if t.attr("break-after") == Some("page") {
                            break_after.insert(s.clone());
                        }
                    }
                }
                ("text", "note") | ("office", "annotation") | ("text", "tracked-changes") | ("office", "forms") => {
                    x.skip()?
                }
                ("text", "p") | ("text", "h") => {
                    let style = t.attr("style-name").unwrap_or_default();
                    if break_before.contains(style) && tables == 0 {
                        page_break(&mut b, &mut paras, &mut cell, &mut page);
                    }
                    let heading = (t.name == "h")
                        .then(|| t.attr("outline-level").and_then(|l| l.parse::<usize>().ok()).unwrap_or(1));
                    paras.push(Para {
                        heading,
                        list: (lists > 0 && heading.is_none()).then(|| lists - 1),
                        in_table: tables > 0,
                        break_after: break_after.contains(style),
                        ..Para::default()
                    });
                }
                ("text", "list") => lists += 1,
                ("text", "s") => {
                    if let Some(p) = paras.last_mut() {
                        p.text.push(' ');
                    }
                }
                ("text", "tab") => {
                    if let Some(p) = paras.last_mut() {
                        p.text.push(' ');
                    }
                }
                ("text", "line-break") => {
                    if let Some(p) = paras.last_mut() {
                        p.text.push('\n');
                    }
                }
                ("text", "soft-page-break") if tables == 0 => page_break(&mut b, &mut paras, &mut cell, &mut page),
                ("table", "table") => tables += 1,
                ("table", "table-row") if tables == 1 => row.clear(),
                ("table", "table-cell") if tables == 1 => cell.clear(),
                _ => {}
            },
            Ev::End(n) => match n.as_str() {
                "p" | "h" => {
                    if let Some(p) = paras.pop() {
                        let after = p.break_after;
                        p.emit(&mut b, &mut cell);
                        if after && tables == 0 {
                            page_break(&mut b, &mut paras, &mut cell, &mut page);
                        }
                    }
                }
                "list" => lists = lists.saturating_sub(1),
                "table-cell" if tables == 1 => row.push(std::mem::take(&mut cell)),
                "table-row" if tables == 1 => {
                    b.row(&row);
                    row.clear();
                }
                "table" => tables = tables.saturating_sub(1),
                _ => {}
            },
            Ev::Text(s) => {
                if let Some(p) = paras.last_mut() {
                    p.text.push_str(&s);
                }
            }
        }
    }
    if page == 1 {
        b.clear_labels();
    }
    let parts = b.finish();
    let title = title.or_else(|| first_heading(&parts));
    Ok(Extracted { title, metadata: meta, parts })
}

/// The text of an ODS file: one part per sheet, labelled `sheet NAME`.
pub fn ods(bytes: &[u8]) -> Result<Extracted> {
    let mut zip = Zip::open(bytes, "ODS")?;
    let content = zip.require("content.xml")?;
    let (title, meta) = meta(&mut zip)?;
    let mut b = Builder::new();
    let mut x = Xml::new(&content, "content.xml");
    let mut rows = Rows::new();
    let mut sheets = 0usize;
    let (mut r, mut c) = (0u32, 0u32);
    let mut row_repeat = 1u32;
    let mut col_repeat = 1u32;
    let mut cell: Option<String> = None;
    let mut depth_in_table = 0usize;
    let mut sheet_depth = 0usize;
    while !b.full() {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) => match (t.prefix.as_str(), t.name.as_str()) {
                ("table", "table") => {
                    depth_in_table += 1;
                    if depth_in_table == 1 {
                        sheet_depth = x.depth();
                        sheets += 1;
                        rows.finish(&mut b);
                        rows = Rows::new();
                        let name = t.attr("name").map_or_else(|| sheets.to_string(), str::to_string);
                        b.start_part(Some(format!("sheet {name}")));
                        (r, c) = (0, 0);
                    }
                }
                ("table", "table-row") => {
                    c = 0;
                    row_repeat = t.attr("number-rows-repeated").and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
                }
                ("table", "table-cell") | ("table", "covered-table-cell") => {
                    col_repeat = t.attr("number-columns-repeated").and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
                    cell = Some(String::new());
                }
                ("text", "p") => {
                    if let Some(s) = cell.as_mut()
                        && !s.is_empty()
                    {
                        s.push(' ');
                    }
                }
                ("text", "s") | ("text", "tab") | ("text", "line-break") => {
                    if let Some(s) = cell.as_mut() {
                        s.push(' ');
                    }
                }
                ("office", "annotation") | ("text", "note") => x.skip()?,
                _ => {}
            },
            Ev::End(n) => match n.as_str() {
                "table-cell" | "covered-table-cell" => {
                    if let Some(text) = cell.take() {
                        if rows.visit(col_repeat as usize) && !text.trim().is_empty() {
                            for k in 0..col_repeat.min(MAX_REPEAT) {
                                rows.cell(&mut b, r, c.saturating_add(k), &text);
                            }
                        }
                        c = c.saturating_add(col_repeat);
                    }
                }
                "table-row" => {
                    // A repeated row is written once: repeats are nearly always empty rows.
                    rows.visit(row_repeat as usize);
                    r = r.saturating_add(row_repeat);
                }
                "table" => {
                    depth_in_table = depth_in_table.saturating_sub(1);
                }
                _ => {}
            },
            Ev::Text(s) => {
                if let Some(cur) = cell.as_mut() {
                    cur.push_str(&s);
                }
            }
        }
        if rows.cut && cell.is_none() && depth_in_table > 0 {
            // This sheet has had enough: skip to its end.
            while depth_in_table > 0 {
                match x.event()? {
                    Ev::Eof => break,
                    Ev::End(n) if n == "table" && x.depth() < sheet_depth => depth_in_table = 0,
                    _ => {}
                }
            }
        }
    }
    rows.finish(&mut b);
    let mut meta = meta;
    meta.push(("sheets".into(), sheets.to_string()));
    Ok(b.into_extracted(title, meta))
}
