//! A small pull reader over quick-xml that every XML-based format shares: local names,
//! attributes by local name, entities resolved, and a cap on element depth.

use quick_xml::events::Event;
use quick_xml::{Reader, XmlVersion};

use crate::model::{Result, malformed};

/// Deepest element nesting accepted; real documents stay far below it.
pub const MAX_DEPTH: usize = 256;

/// One event, owned.
#[derive(Debug)]
pub enum Ev {
    /// An element opens (an empty element gives `Start` then `End`).
    Start(Tag),
    /// An element closes: its local name.
    End(String),
    /// Character data, entities resolved.
    Text(String),
    /// The end of the document.
    Eof,
}

/// An opening tag.
#[derive(Debug)]
pub struct Tag {
    /// Its local name (`p` for `w:p`).
    pub name: String,
    /// Its prefix (`w` for `w:p`), empty if none.
    pub prefix: String,
    attrs: Vec<(String, String, String)>,
}

impl Tag {
    /// The value of the attribute with local name `local`.
    pub fn attr(&self, local: &str) -> Option<&str> {
        self.attrs.iter().find(|(_, l, _)| l == local).map(|(_, _, v)| v.as_str())
    }

    /// The value of the attribute `prefix:local`.
    pub fn attr_q(&self, prefix: &str, local: &str) -> Option<&str> {
        self.attrs.iter().find(|(p, l, _)| p == prefix && l == local).map(|(_, _, v)| v.as_str())
    }

    /// Whether this is `prefix:name`.
    pub fn is(&self, prefix: &str, name: &str) -> bool {
        self.name == name && self.prefix == prefix
    }
}

/// Pull reader with a depth cap.
pub struct Xml<'a> {
    reader: Reader<&'a [u8]>,
    depth: usize,
    what: &'a str,
}

fn split_qname(q: &str) -> (String, String) {
    match q.split_once(':') {
        Some((p, l)) => (p.to_string(), l.to_string()),
        None => (String::new(), q.to_string()),
    }
}

/// The text of an entity reference: predefined and common HTML ones, else as written.
fn entity(name: &str) -> String {
    let c = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "shy" => return String::new(),
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "bull" => '•',
        "middot" => '·',
        "eacute" => 'é',
        "egrave" => 'è',
        "auml" => 'ä',
        "ouml" => 'ö',
        "uuml" => 'ü',
        "szlig" => 'ß',
        "deg" => '°',
        "times" => '×',
        _ => return format!("&{name};"),
    };
    c.to_string()
}

impl<'a> Xml<'a> {
    /// A reader over `bytes`; `what` names the part in error messages.
    pub fn new(bytes: &'a [u8], what: &'a str) -> Self {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let mut reader = Reader::from_reader(bytes);
        let c = reader.config_mut();
        c.expand_empty_elements = true;
        // Some writers (and hand-made EPUBs) leave end tags unmatched; read on rather than fail.
        c.check_end_names = false;
        c.allow_unmatched_ends = true;
        Self { reader, depth: 0, what }
    }

    /// Current element depth.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The next event.
    pub fn event(&mut self) -> Result<Ev> {
        loop {
            let ev = self
                .reader
                .read_event()
                .map_err(|e| malformed(format!("{} is not well-formed XML: {e}", self.what)))?;
            return Ok(match ev {
                Event::Start(s) => {
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(malformed(format!("{} nests elements deeper than {MAX_DEPTH} levels", self.what)));
                    }
                    let (prefix, name) = split_qname(s.name().as_ref());
                    let mut attrs = Vec::new();
                    for a in s.attributes().with_checks(false).flatten() {
                        let (p, l) = split_qname(a.key.as_ref());
                        let v = a
                            .normalized_value(XmlVersion::Implicit1_0)
                            .map(|v| v.into_owned())
                            .unwrap_or_else(|_| a.value.clone().into_owned());
                        attrs.push((p, l, v));
                    }
                    Ev::Start(Tag { name, prefix, attrs })
                }
                Event::End(e) => {
                    self.depth = self.depth.saturating_sub(1);
                    Ev::End(split_qname(e.name().as_ref()).1)
                }
                Event::Text(t) => Ev::Text(t.xml_content(XmlVersion::Implicit1_0).into_owned()),
                Event::CData(t) => Ev::Text(t.into_inner().into_owned()),
                Event::GeneralRef(r) => match r.resolve_char_ref() {
                    Ok(Some(c)) => Ev::Text(c.to_string()),
                    Ok(None) => Ev::Text(entity(&r)),
                    Err(_) => continue,
                },
                Event::Eof => Ev::Eof,
                Event::Empty(_) | Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => continue,
            });
        }
    }

    /// Skips to the end of the element just started.
    pub fn skip(&mut self) -> Result<()> {
        let target = self.depth.saturating_sub(1);
        loop {
            match self.event()? {
                Ev::Eof => return Ok(()),
                Ev::End(_) if self.depth <= target => return Ok(()),
                _ => {}
            }
        }
    }

    /// The text inside the element just started, skipping its markup.
    pub fn text(&mut self) -> Result<String> {
        let target = self.depth.saturating_sub(1);
        let mut out = String::new();
        loop {
            match self.event()? {
                Ev::Eof => return Ok(out),
                Ev::End(_) if self.depth <= target => return Ok(out),
                Ev::Text(t) => out.push_str(&t),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_and_depth() {
        let mut x = Xml::new(b"<a:b x:y='1 &amp; 2'>t &amp; &#x41; &nbsp;<c/></a:b>", "t");
        let Ev::Start(t) = x.event().unwrap() else { panic!() };
        assert!(t.is("a", "b"));
        assert_eq!(t.attr("y"), Some("1 & 2"));
        assert_eq!(x.text().unwrap(), "t & A \u{a0}");

        let deep = "<a>".repeat(100_000);
        let mut x = Xml::new(deep.as_bytes(), "deep.xml");
        let err = loop {
            match x.event() {
                Err(e) => break e,
                Ok(Ev::Eof) => panic!("no error"),
                Ok(_) => {}
            }
        };
        assert!(err.to_string().contains("deeper than 256"), "{err}");
    }
}
