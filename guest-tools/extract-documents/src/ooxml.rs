//! Office Open XML: DOCX (Word) and PPTX (PowerPoint), and the core properties all
//! OOXML files share.

use std::collections::HashMap;

use crate::model::{Builder, Extracted, Meta, Para, Result, first_heading, malformed, push_meta};
use crate::xml::{Ev, Tag, Xml};
use crate::zipx::{Zip, resolve};

/// Metadata from `docProps/core.xml` (and the page or slide count from `docProps/app.xml`).
pub fn core_properties(zip: &mut Zip) -> Result<Meta> {
    let mut title = None;
    let mut meta = Vec::new();
    if let Some(core) = zip.read("docProps/core.xml")? {
        let mut x = Xml::new(&core, "docProps/core.xml");
        loop {
            match x.event()? {
                Ev::Eof => break,
                Ev::Start(t) => {
                    let key = match t.name.as_str() {
                        "title" => "title",
                        "creator" => "author",
                        "subject" => "subject",
                        "keywords" => "keywords",
                        "description" => "description",
                        "created" => "created",
                        "modified" => "modified",
                        "language" => "language",
                        _ => continue,
                    };
                    let v = x.text()?;
                    if key == "title" {
                        title = Some(v.trim().to_string()).filter(|v| !v.is_empty());
                    } else {
                        push_meta(&mut meta, key, Some(v));
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(app) = zip.read("docProps/app.xml")? {
        let mut x = Xml::new(&app, "docProps/app.xml");
        loop {
            match x.event()? {
                Ev::Eof => break,
                Ev::Start(t) if t.name == "Pages" || t.name == "Slides" => {
                    let key = if t.name == "Pages" { "pages" } else { "slides" };
                    let v = x.text()?;
                    if v.trim().parse::<u64>().is_ok_and(|n| n > 0) {
                        push_meta(&mut meta, key, Some(v));
                    }
                }
                _ => {}
            }
        }
    }
    Ok((title, meta))
}

/// A Relationship id → target map from a `.rels` part, targets resolved against `source`.
fn relationships(zip: &mut Zip, source: &str) -> Result<HashMap<String, (String, String)>> {
    let rels_path = match source.rsplit_once('/') {
        Some((dir, file)) => format!("{dir}/_rels/{file}.rels"),
        None => format!("_rels/{source}.rels"),
    };
    let mut out = HashMap::new();
    if let Some(rels) = zip.read(&rels_path)? {
        let mut x = Xml::new(&rels, "a relationships part");
        loop {
            match x.event()? {
                Ev::Eof => break,
                Ev::Start(t) if t.name == "Relationship" => {
                    if let (Some(id), Some(target)) = (t.attr("Id"), t.attr("Target")) {
                        let kind = t.attr("Type").unwrap_or_default().rsplit('/').next().unwrap_or_default();
                        out.insert(id.to_string(), (resolve(source, target), kind.to_string()));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

// ------------------------------------------------------------------------------- DOCX

#[derive(Debug, Default, Clone)]
struct Style {
    heading: Option<usize>,
    list: bool,
    based_on: Option<String>,
}

fn heading_from_name(name: &str) -> Option<usize> {
    let n = name.to_ascii_lowercase().replace(' ', "");
    if n == "title" {
        return Some(1);
    }
    let level = n.strip_prefix("heading")?.parse::<usize>().ok()?;
    (1..=9).contains(&level).then_some(level.min(6))
}

fn outline_level(t: &Tag) -> Option<usize> {
    // w:outlineLvl 0..8 are heading levels 1..9; 9 means body text.
    t.attr("val").and_then(|v| v.parse::<usize>().ok()).filter(|v| *v < 9).map(|v| (v + 1).min(6))
}

fn docx_styles(zip: &mut Zip) -> Result<HashMap<String, Style>> {
    let mut styles = HashMap::new();
    let Some(bytes) = zip.read("word/styles.xml")? else { return Ok(styles) };
    let mut x = Xml::new(&bytes, "word/styles.xml");
    let mut cur: Option<(String, Style)> = None;
    loop {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) => match t.name.as_str() {
                "style" => {
                    let id = t.attr("styleId").unwrap_or_default().to_string();
                    cur = Some((id.clone(), Style { heading: heading_from_name(&id), ..Style::default() }));
                }
                "name" => {
                    if let Some((_, s)) = cur.as_mut()
                        && let Some(h) = t.attr("val").and_then(heading_from_name)
                    {
                        s.heading = Some(h);
                    }
                }
                "basedOn" => {
                    if let Some((_, s)) = cur.as_mut() {
                        s.based_on = t.attr("val").map(str::to_string);
                    }
                }
                "outlineLvl" => {
                    if let Some((_, s)) = cur.as_mut() {
                        s.heading = s.heading.or(outline_level(&t));
                    }
                }
                "numPr" => {
                    if let Some((_, s)) = cur.as_mut() {
                        s.list = true;
                    }
                }
                _ => {}
            },
            Ev::End(n) if n == "style" => {
                if let Some((id, s)) = cur.take() {
                    styles.insert(id, s);
                }
            }
            _ => {}
        }
    }
    Ok(styles)
}

/// A style's heading level and list-ness, following `basedOn` a bounded number of steps.
fn style_info(styles: &HashMap<String, Style>, id: &str) -> (Option<usize>, bool) {
    let (mut heading, mut list) = (None, false);
    let mut cur = styles.get(id);
    for _ in 0..16 {
        let Some(s) = cur else { break };
        heading = heading.or(s.heading);
        list |= s.list;
        cur = s.based_on.as_deref().and_then(|b| styles.get(b));
    }
    (heading, list)
}

struct DocxWalk<'s> {
    b: Builder,
    styles: &'s HashMap<String, Style>,
    page: usize,
    /// Whether the last page break was an explicit one.
    explicit_last: bool,
    paras: Vec<Para>,
    tables: usize,
    row: Vec<String>,
    cell: String,
}

impl DocxWalk<'_> {
    fn emit(&mut self, p: Para) {
        p.emit(&mut self.b, &mut self.cell);
    }

    /// A page ends: at an explicit break (`explicit`), or where the writer last rendered one.
    fn page_break(&mut self, explicit: bool) {
        let pending = self.paras.last().is_some_and(|p| !p.text.trim().is_empty());
        let nothing_since = !pending && !self.b.part_has_text();
        // Word writes a lastRenderedPageBreak right after an explicit break: the same break
        // twice. An explicit break always ends a page, even an empty one (a blank page).
        if !explicit && nothing_since && (self.explicit_last || self.page == 1) {
            return;
        }
        self.explicit_last = explicit;
        // Text before the break stays on this page; the rest of the paragraph goes on.
        if let Some(p) = self.paras.last_mut() {
            let done = Para {
                text: std::mem::take(&mut p.text),
                heading: p.heading,
                list: p.list,
                in_table: p.in_table,
                ..Para::default()
            };
            p.heading = None;
            self.emit(done);
        }
        if self.tables > 0 {
            return;
        }
        self.page += 1;
        self.b.start_part(Some(format!("p. {}", self.page)));
    }
}

/// The text of a DOCX file.
pub fn docx(bytes: &[u8]) -> Result<Extracted> {
    let mut zip = Zip::open(bytes, "DOCX")?;
    let doc = zip.require("word/document.xml")?;
    let styles = docx_styles(&mut zip)?;
    let (title, meta) = core_properties(&mut zip)?;
    let mut w = DocxWalk {
        b: Builder::new(),
        styles: &styles,
        page: 1,
        explicit_last: false,
        paras: Vec::new(),
        tables: 0,
        row: Vec::new(),
        cell: String::new(),
    };
    w.b.start_part(Some("p. 1".into()));
    let mut x = Xml::new(&doc, "word/document.xml");
    let mut in_ppr = false;
    while !w.b.full() {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) => match t.name.as_str() {
                // Deleted text, field codes, the fallback copy of drawings and text boxes.
                "delText" | "instrText" | "Fallback" | "del" | "footnoteReference" | "endnoteReference" => x.skip()?,
                "p" => w.paras.push(Para { in_table: w.tables > 0, ..Para::default() }),
                "pPr" => in_ppr = true,
                "rPr" if in_ppr => x.skip()?,
                "pStyle" if in_ppr => {
                    if let (Some(p), Some(id)) = (w.paras.last_mut(), t.attr("val")) {
                        let (h, list) = style_info(w.styles, id);
                        p.heading = p.heading.or(h);
                        if list && p.list.is_none() {
                            p.list = Some(0);
                        }
                    }
                }
                "outlineLvl" if in_ppr => {
                    if let Some(p) = w.paras.last_mut() {
                        p.heading = outline_level(&t).or(p.heading);
                    }
                }
                "ilvl" if in_ppr => {
                    if let Some(p) = w.paras.last_mut() {
                        p.list = Some(t.attr("val").and_then(|v| v.parse().ok()).unwrap_or(0));
                    }
                }
                "numId" if in_ppr => {
                    if let Some(p) = w.paras.last_mut() {
                        if t.attr("val") == Some("0") {
                            p.list = None;
                        } else if p.list.is_none() {
                            p.list = Some(0);
                        }
                    }
                }
                "pageBreakBefore" if in_ppr && t.attr("val").is_none_or(|v| v != "0" && v != "false") => {
                    w.page_break(true)
                }
                "t" => {
                    let s = x.text()?;
                    if let Some(p) = w.paras.last_mut() {
                        p.text.push_str(&s);
                    }
                }
                "tab" | "ptab" if !in_ppr => {
                    if let Some(p) = w.paras.last_mut() {
                        p.text.push(' ');
                    }
                }
                "br" | "cr" => {
                    if t.attr("type") == Some("page") {
                        w.page_break(true);
                    } else if let Some(p) = w.paras.last_mut() {
                        p.text.push('\n');
                    }
                }
                "lastRenderedPageBreak" => w.page_break(false),
                "noBreakHyphen" => {
                    if let Some(p) = w.paras.last_mut() {
                        p.text.push('-');
                    }
                }
                "tbl" => w.tables += 1,
                "tr" if w.tables == 1 => w.row.clear(),
                "tc" if w.tables == 1 => w.cell.clear(),
                _ => {}
            },
            Ev::End(n) => match n.as_str() {
                "pPr" => in_ppr = false,
                "p" => {
                    if let Some(p) = w.paras.pop() {
                        w.emit(p);
                    }
                }
                "tc" if w.tables == 1 => {
                    let cell = std::mem::take(&mut w.cell);
                    w.row.push(cell);
                }
                "tr" if w.tables == 1 => {
                    let row = std::mem::take(&mut w.row);
                    w.b.row(&row);
                }
                "tbl" => w.tables = w.tables.saturating_sub(1),
                _ => {}
            },
            Ev::Text(_) => {}
        }
    }
    if w.page == 1 {
        w.b.clear_labels();
    }
    let mut meta = meta;
    if w.page > 1 {
        // The page breaks found outrank a count the writer may not have kept up to date.
        meta.retain(|(k, _)| k != "pages");
        meta.push(("pages".into(), w.page.to_string()));
    }
    let parts = w.b.finish();
    let title = title.or_else(|| first_heading(&parts));
    Ok(Extracted { title, metadata: meta, parts })
}

// ------------------------------------------------------------------------------- PPTX

#[derive(Debug, Default)]
struct Shape {
    title: bool,
    skip: bool,
    paras: Vec<String>,
}

/// The text of one slide or notes page.
struct SlideText {
    /// The title placeholders' paragraphs.
    titles: Vec<String>,
    /// Every other shape's paragraphs.
    blocks: Vec<Vec<String>>,
    /// Table rows.
    rows: Vec<Vec<String>>,
}

/// Reads one slide or notes part.
fn slide_text(bytes: &[u8], what: &str, notes: bool) -> Result<SlideText> {
    let mut x = Xml::new(bytes, what);
    let mut shapes: Vec<Shape> = Vec::new();
    let mut titles = Vec::new();
    let mut blocks: Vec<Vec<String>> = Vec::new();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut para: Option<String> = None;
    let mut row: Option<Vec<String>> = None;
    let mut cell: Option<String> = None;
    loop {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) => match (t.prefix.as_str(), t.name.as_str()) {
                ("mc", "Fallback") => x.skip()?,
                ("p", "sp") => shapes.push(Shape::default()),
                ("p", "ph") => {
                    if let Some(s) = shapes.last_mut() {
                        let ty = t.attr("type").unwrap_or("body");
                        s.title = matches!(ty, "title" | "ctrTitle");
                        // Notes pages repeat the slide image, its number and headers: only the body is notes.
                        s.skip = matches!(ty, "sldNum" | "dt" | "ftr" | "hdr" | "sldImg")
                            || (notes && !matches!(ty, "body"));
                    }
                }
                ("a", "tr") => row = Some(Vec::new()),
                ("a", "tc") => cell = Some(String::new()),
                ("a", "p") => para = Some(String::new()),
                ("a", "t") => {
                    let s = x.text()?;
                    if let Some(p) = para.as_mut() {
                        p.push_str(&s);
                    }
                }
                ("a", "br") => {
                    if let Some(p) = para.as_mut() {
                        p.push('\n');
                    }
                }
                ("a", "tab") => {
                    if let Some(p) = para.as_mut() {
                        p.push(' ');
                    }
                }
                _ => {}
            },
            Ev::End(n) => match n.as_str() {
                "p" => {
                    if let Some(p) = para.take() {
                        if let Some(c) = cell.as_mut() {
                            if !c.is_empty() {
                                c.push(' ');
                            }
                            c.push_str(p.trim());
                        } else if let Some(s) = shapes.last_mut() {
                            s.paras.push(p);
                        }
                    }
                }
                "tc" => {
                    if let (Some(c), Some(r)) = (cell.take(), row.as_mut()) {
                        r.push(c);
                    }
                }
                "tr" => {
                    if let Some(r) = row.take() {
                        rows.push(r);
                    }
                }
                "sp" => {
                    if let Some(s) = shapes.pop()
                        && !s.skip
                    {
                        let paras: Vec<String> =
                            s.paras.into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
                        if s.title {
                            titles.extend(paras);
                        } else if !paras.is_empty() {
                            blocks.push(paras);
                        }
                    }
                }
                _ => {}
            },
            Ev::Text(_) => {}
        }
    }
    Ok(SlideText { titles, blocks, rows })
}

/// The text of a PPTX file: one part per slide, in presentation order.
pub fn pptx(bytes: &[u8]) -> Result<Extracted> {
    let mut zip = Zip::open(bytes, "PPTX")?;
    let pres = zip.require("ppt/presentation.xml")?;
    let rels = relationships(&mut zip, "ppt/presentation.xml")?;
    let mut slides = Vec::new();
    let mut x = Xml::new(&pres, "ppt/presentation.xml");
    loop {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) if t.name == "sldId" => {
                if let Some((target, _)) = t.attr_q("r", "id").or_else(|| t.attr("id")).and_then(|id| rels.get(id)) {
                    slides.push(target.clone());
                }
            }
            _ => {}
        }
    }
    if slides.is_empty() && !zip.names().iter().any(|n| n.starts_with("ppt/slides/")) {
        return Err(malformed("not a PPTX file: ppt/presentation.xml lists no slides"));
    }
    let (title, meta) = core_properties(&mut zip)?;
    let mut b = Builder::new();
    for (i, path) in slides.iter().enumerate() {
        if b.full() {
            break;
        }
        b.start_part(Some(format!("slide {}", i + 1)));
        let Some(bytes) = zip.read(path)? else { continue };
        let SlideText { titles, blocks, rows } = slide_text(&bytes, path, false)?;
        if !titles.is_empty() {
            b.heading(1, &titles.join(" "));
        }
        for block in blocks {
            b.para(&block.join("\n"));
        }
        for r in rows {
            b.row(&r);
        }
        let notes = relationships(&mut zip, path)?.into_values().find(|(_, kind)| kind == "notesSlide");
        if let Some((notes_path, _)) = notes
            && let Some(nbytes) = zip.read(&notes_path)?
        {
            let nblocks = slide_text(&nbytes, &notes_path, true)?.blocks;
            let text: Vec<String> = nblocks.into_iter().map(|p| p.join("\n")).collect();
            if !text.is_empty() {
                b.para(&format!("Notes:\n{}", text.join("\n\n")));
            }
        }
    }
    let parts = b.finish();
    let title = title.or_else(|| first_heading(&parts));
    Ok(Extracted { title, metadata: meta, parts })
}
