//! Reading entries of a zip container (OOXML, OpenDocument, EPUB) with caps on what
//! they inflate to, so a zip bomb ends in an error instead of exhausting memory.

use std::io::{Cursor, Read};

use zip::ZipArchive;
use zip::result::ZipError;

use crate::model::{ExtractError, Result, malformed};

/// Most bytes one entry may inflate to.
pub const MAX_ENTRY: u64 = 256 << 20;
/// Most bytes all entries read from one file may inflate to.
pub const MAX_TOTAL: u64 = 512 << 20;
/// First allocation for an entry: never sized by what the entry declares.
const FIRST_ALLOC: u64 = 1 << 20;

/// A zip container being read.
pub struct Zip<'a> {
    archive: ZipArchive<Cursor<&'a [u8]>>,
    total: u64,
    kind: &'static str,
}

fn mib(n: u64) -> u64 {
    n >> 20
}

impl<'a> Zip<'a> {
    /// Opens `bytes` as the zip container of a `kind` file (for messages: "DOCX").
    pub fn open(bytes: &'a [u8], kind: &'static str) -> Result<Self> {
        let archive = ZipArchive::new(Cursor::new(bytes))
            .map_err(|e| malformed(format!("not a {kind} file (its zip container does not read: {e})")))?;
        Ok(Self { archive, total: 0, kind })
    }

    /// Whether the container has an entry `name`.
    pub fn has(&self, name: &str) -> bool {
        self.archive.index_for_name(name).is_some()
    }

    /// The names of the entries.
    pub fn names(&self) -> Vec<String> {
        self.archive.file_names().filter_map(|n| n.ok().map(|n| n.into_owned())).collect()
    }

    /// Checks every entry's declared size against the caps, for containers handed whole to a
    /// crate (calamine) that reads entries itself; zip never inflates past a declared size.
    pub fn check_declared_sizes(&mut self) -> Result<()> {
        let mut total = 0u64;
        for i in 0..self.archive.len() {
            let f = self.archive.by_index_raw(i).map_err(|e| malformed(format!("{} entry {i}: {e}", self.kind)))?;
            let size = f.size();
            if size > MAX_ENTRY {
                return Err(malformed(format!(
                    "{} entry {} declares {} MiB, over the {} MiB limit for one entry (a zip bomb?)",
                    self.kind,
                    f.name().unwrap_or_default(),
                    mib(size),
                    mib(MAX_ENTRY)
                )));
            }
            total = total.saturating_add(size);
        }
        if total > MAX_TOTAL {
            return Err(malformed(format!(
                "{} entries declare {} MiB in all, over the {} MiB limit (a zip bomb?)",
                self.kind,
                mib(total),
                mib(MAX_TOTAL)
            )));
        }
        Ok(())
    }

    /// The bytes of entry `name`, or none if there is no such entry.
    pub fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>> {
        let kind = self.kind;
        let file = match self.archive.by_name(name) {
            Ok(f) => f,
            Err(ZipError::FileNotFound) => return Ok(None),
            Err(ZipError::UnsupportedArchive(m)) => {
                return Err(ExtractError::Unsupported(format!("{kind} entry {name}: {m}")));
            }
            Err(e) => return Err(malformed(format!("{kind} entry {name} does not read: {e}"))),
        };
        let declared = file.size();
        if declared > MAX_ENTRY {
            return Err(malformed(format!(
                "{kind} entry {name} declares {} MiB, over the {} MiB limit for one entry (a zip bomb?)",
                mib(declared),
                mib(MAX_ENTRY)
            )));
        }
        let room = MAX_ENTRY.min(MAX_TOTAL.saturating_sub(self.total));
        let mut out = Vec::with_capacity(declared.min(FIRST_ALLOC) as usize);
        file.take(room + 1)
            .read_to_end(&mut out)
            .map_err(|e| malformed(format!("{kind} entry {name} is damaged: {e}")))?;
        let got = out.len() as u64;
        if got > room {
            return Err(malformed(format!(
                "{kind} entry {name} inflates past {} MiB, over the limit of {} MiB for one entry and {} MiB for the file (a zip bomb?)",
                mib(room),
                mib(MAX_ENTRY),
                mib(MAX_TOTAL)
            )));
        }
        self.total += got;
        Ok(Some(out))
    }

    /// Entry `name`, which the format requires.
    pub fn require(&mut self, name: &str) -> Result<Vec<u8>> {
        let kind = self.kind;
        self.read(name)?.ok_or_else(|| malformed(format!("not a {kind} file: it has no {name}")))
    }
}

/// Resolves `target` (a relationship or href, maybe `../x`, maybe `/abs`) against the folder
/// of `base` inside a zip; percent-escapes are decoded and any fragment dropped.
pub fn resolve(base: &str, target: &str) -> String {
    let target = target.split('#').next().unwrap_or_default();
    let target = percent_decode(target);
    let mut parts: Vec<&str> = if let Some(abs) = target.strip_prefix('/') {
        return normalize(abs.split('/').collect());
    } else {
        base.rsplit_once('/').map(|(dir, _)| dir.split('/').collect()).unwrap_or_default()
    };
    parts.extend(target.split('/'));
    normalize(parts)
}

fn normalize(parts: Vec<&str>) -> String {
    let mut out: Vec<&str> = Vec::new();
    for p in parts {
        match p {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out.join("/")
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(h) = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok())
            && let Ok(v) = u8::from_str_radix(h, 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_paths() {
        assert_eq!(resolve("ppt/presentation.xml", "slides/slide1.xml"), "ppt/slides/slide1.xml");
        assert_eq!(resolve("ppt/slides/slide1.xml", "../notesSlides/n1.xml"), "ppt/notesSlides/n1.xml");
        assert_eq!(resolve("OEBPS/content.opf", "text/ch%201.xhtml#x"), "OEBPS/text/ch 1.xhtml");
        assert_eq!(resolve("a/b.xml", "/word/document.xml"), "word/document.xml");
    }
}
