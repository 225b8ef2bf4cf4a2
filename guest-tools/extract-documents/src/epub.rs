//! EPUB: the OPF package's spine in order, each XHTML item one part labelled by its first
//! heading (or `chapter N`).

use std::collections::HashMap;

use crate::html::xhtml;
use crate::model::{Builder, Extracted, Result, malformed, push_meta, truncate_chars};
use crate::xml::{Ev, Xml};
use crate::zipx::{Zip, resolve};

/// Longest part label taken from a heading, in characters.
const MAX_LABEL: usize = 60;

struct Item {
    href: String,
    media: String,
    nav: bool,
}

/// The text of an EPUB file.
pub fn epub(bytes: &[u8]) -> Result<Extracted> {
    let mut zip = Zip::open(bytes, "EPUB")?;
    let container = zip.require("META-INF/container.xml")?;
    let mut opf_path = None;
    let mut x = Xml::new(&container, "META-INF/container.xml");
    loop {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) if t.name == "rootfile" => {
                opf_path = t.attr("full-path").map(|p| resolve("", p));
                break;
            }
            _ => {}
        }
    }
    let opf_path = opf_path.ok_or_else(|| malformed("not an EPUB file: its container names no package"))?;
    let opf = zip.require(&opf_path)?;

    let mut title = None;
    let mut meta = Vec::new();
    let mut subjects = Vec::new();
    let mut items: HashMap<String, Item> = HashMap::new();
    let mut spine: Vec<String> = Vec::new();
    let mut x = Xml::new(&opf, "the EPUB package");
    loop {
        match x.event()? {
            Ev::Eof => break,
            Ev::Start(t) => match (t.prefix.as_str(), t.name.as_str()) {
                ("dc", "title") if title.is_none() => title = Some(x.text()?),
                ("dc", "creator") => push_meta(&mut meta, "author", Some(x.text()?)),
                ("dc", "language") => push_meta(&mut meta, "language", Some(x.text()?)),
                ("dc", "date") => push_meta(&mut meta, "created", Some(x.text()?)),
                ("dc", "publisher") => push_meta(&mut meta, "publisher", Some(x.text()?)),
                ("dc", "description") => push_meta(&mut meta, "description", Some(x.text()?)),
                ("dc", "subject") => subjects.push(x.text()?),
                (_, "item") => {
                    if let (Some(id), Some(href)) = (t.attr("id"), t.attr("href")) {
                        items.insert(
                            id.to_string(),
                            Item {
                                href: resolve(&opf_path, href),
                                media: t.attr("media-type").unwrap_or_default().to_string(),
                                nav: t.attr("properties").is_some_and(|p| p.split_whitespace().any(|p| p == "nav")),
                            },
                        );
                    }
                }
                (_, "itemref") => {
                    if t.attr("linear") != Some("no")
                        && let Some(id) = t.attr("idref")
                    {
                        spine.push(id.to_string());
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    if !subjects.is_empty() {
        push_meta(&mut meta, "subject", Some(subjects.join(", ")));
    }
    let mut b = Builder::new();
    let mut chapter = 0usize;
    for id in &spine {
        if b.full() {
            break;
        }
        let Some(item) = items.get(id) else { continue };
        // The navigation document repeats the headings as a table of contents.
        if item.nav || !(item.media.contains("html") || item.media.is_empty()) {
            continue;
        }
        let Some(doc) = zip.read(&item.href)? else { continue };
        chapter += 1;
        b.start_part(None);
        let heading = xhtml(&doc, &item.href, &mut b)?;
        let label = match heading {
            Some(h) if !h.is_empty() => truncate_chars(&h, MAX_LABEL),
            _ => format!("chapter {chapter}"),
        };
        b.set_label(Some(label));
    }
    meta.push(("chapters".into(), chapter.to_string()));
    Ok(b.into_extracted(title, meta))
}
