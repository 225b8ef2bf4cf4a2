//! Where a hit sits in its file, as `path:first-last` lines: an agent can open
//! or cite exactly that range instead of reading the file again to find it.
//! Chunks are stored with byte ranges; lines are counted from the file as it
//! is now, and left out when it no longer matches what was indexed. A
//! document an extractor read (PDF, slides, …) is pointed into by its pages,
//! slides or sheets instead: `report.pdf p. 14`.

use crate::bindings::ragbox::tools::corpus::Document;
use crate::indexing::document::{PARTS, decode_parts, is_extracted, part_span};
use std::collections::HashMap;

/// The files read so far in one call, each once, with their line starts.
#[derive(Default)]
pub struct Lines {
    files: HashMap<String, Option<File>>,
    /// The part lists of documents an extractor read, each decoded once.
    parts: HashMap<String, Vec<(usize, String)>>,
}

/// A file's bytes and the byte offset where each of its lines begins.
struct File {
    bytes: Vec<u8>,
    starts: Vec<usize>,
}

impl Lines {
    /// `path:first-last` (1-based, inclusive) for bytes `start..end` of
    /// `doc`; `None` when the file cannot be read, its size is no longer
    /// the indexed one (changed since, so its lines would point elsewhere)
    /// or it is HTML.
    pub fn location(&mut self, doc: &Document, start: u64, end: u64) -> Option<String> {
        if let Some(parts) = self.parts(doc) {
            return part_span(parts, start as usize, end as usize).map(|at| format!("{} {at}", doc.path));
        }
        let file = self.file(doc)?;
        let (first, last) = span(&file.starts, file.bytes.len(), start as usize, end as usize)?;
        Some(format!("{}:{first}-{last}", doc.path))
    }

    /// The file's bytes, when it is still the size indexed.
    pub fn bytes(&mut self, doc: &Document) -> Option<&[u8]> {
        self.file(doc).map(|f| f.bytes.as_slice())
    }

    /// The labelled parts of a document an extractor read; `None` for a file read as text.
    fn parts(&mut self, doc: &Document) -> Option<&[(usize, String)]> {
        let (_, value) = doc.metadata.iter().find(|(k, _)| k == PARTS)?;
        Some(self.parts.entry(doc.path.clone()).or_insert_with(|| decode_parts(value)))
    }

    fn file(&mut self, doc: &Document) -> Option<&File> {
        // An HTML page is chunked by its visible text, a PDF by its extracted
        // text: their ranges are not the file's bytes.
        if doc.kind == "html" || is_extracted(&doc.metadata) {
            return None;
        }
        self.files.entry(doc.path.clone()).or_insert_with(|| read(&doc.path, doc.size)).as_ref()
    }

    /// `path:a-b,c-d` for several byte ranges of `doc`, in file order; `None`
    /// as for [`Lines::location`].
    pub fn locations(&mut self, doc: &Document, runs: &[(u64, u64)]) -> Option<String> {
        if let Some(parts) = self.parts(doc) {
            let mut places: Vec<String> = Vec::new();
            for at in runs.iter().filter_map(|&(start, end)| part_span(parts, start as usize, end as usize)) {
                if !places.contains(&at) {
                    places.push(at);
                }
            }
            return (!places.is_empty()).then(|| format!("{} {}", doc.path, places.join(", ")));
        }
        let file = self.file(doc)?;
        let ranges = runs
            .iter()
            .map(|&(start, end)| {
                span(&file.starts, file.bytes.len(), start as usize, end as usize).map(|(a, b)| format!("{a}-{b}"))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(format!("{}:{}", doc.path, ranges.join(",")))
    }
}

/// The file's line starts, when it is still `size` bytes.
fn read(path: &str, size: u64) -> Option<File> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() as u64 != size {
        return None;
    }
    let newlines = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1);
    let starts = std::iter::once(0).chain(newlines).collect();
    Some(File { bytes, starts })
}

/// The 1-based lines holding bytes `start..end`, given the line starts; a
/// range ending just after a newline ends on that line, not the next.
fn span(starts: &[usize], len: usize, start: usize, end: usize) -> Option<(usize, usize)> {
    if start > end || end > len {
        return None;
    }
    let line = |at: usize| starts.partition_point(|&s| s <= at);
    let first = line(start);
    let last = line(end.saturating_sub(1).max(start));
    Some((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges_become_inclusive_line_ranges() {
        // "ab\ncd\nef\n": lines start at 0, 3, 6, 9.
        let s = [0, 3, 6, 9];
        assert_eq!(span(&s, 9, 0, 2), Some((1, 1)));
        assert_eq!(span(&s, 9, 0, 3), Some((1, 1)), "the newline ends line 1");
        assert_eq!(span(&s, 9, 3, 9), Some((2, 3)));
        assert_eq!(span(&s, 9, 4, 7), Some((2, 3)));
        assert_eq!(span(&s, 9, 5, 5), Some((2, 2)), "an empty range is its line");
        assert_eq!(span(&s, 9, 7, 3), None);
        assert_eq!(span(&s, 9, 3, 10), None, "past the end: the file changed");
    }
}
