//! Where a hit sits in its file, as `path:first-last` lines: an agent can open
//! or cite exactly that range instead of reading the file again to find it.
//! Chunks are stored with byte ranges; lines are counted from the file as it
//! is now, and left out when it no longer matches what was indexed.

use crate::bindings::ragbox::tools::corpus::Document;
use std::collections::HashMap;

/// The files read so far in one call, each once, as their line starts.
#[derive(Default)]
pub struct Lines {
    files: HashMap<String, Option<File>>,
}

/// A file's length and the byte offset where each of its lines begins.
struct File {
    len: usize,
    starts: Vec<usize>,
}

impl Lines {
    /// `path:first-last` (1-based, inclusive) for bytes `start..end` of
    /// `doc`; `None` when the file cannot be read or its size is no longer
    /// the indexed one (changed since, so its lines would point elsewhere).
    pub fn location(&mut self, doc: &Document, start: u64, end: u64) -> Option<String> {
        let file = self.files.entry(doc.path.clone()).or_insert_with(|| read(&doc.path, doc.size)).as_ref()?;
        let (first, last) = span(&file.starts, file.len, start as usize, end as usize)?;
        Some(format!("{}:{first}-{last}", doc.path))
    }
}

/// The file's line starts, when it is still `size` bytes.
fn read(path: &str, size: u64) -> Option<File> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() as u64 != size {
        return None;
    }
    let newlines = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1);
    Some(File { len: bytes.len(), starts: std::iter::once(0).chain(newlines).collect() })
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
