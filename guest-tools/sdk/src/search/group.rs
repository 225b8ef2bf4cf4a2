//! One result per file. A chunk ranking often holds several chunks of the
//! right file, and the best-ranked of them is often not the one asked about:
//! with the doc comment cut from a function, its neighbour's doc comment
//! matches better. Measured on the held-out code set's tuning half
//! (bench/quality.py), the file's first chunk held the function asked about
//! in 27 % of hits; the file's best three chunks by their own scores, 61 %.
//! So a file is ranked once, at its best chunk's place, and answers with up
//! to [`per_file`] of its chunks, best by their own evidence, in file order.
//! The first file gets the most: it is the likeliest answer. On the same
//! tuning half, 6, 4, 3 and then 2 pieces held the function in 73 % of hybrid
//! hits against 64 % for 3 everywhere, for 18 % more text in five results.

use crate::bindings::ragbox::tools::corpus::Document;
use crate::bindings::ragbox::tools::vectors::Hit;
use crate::search::scored::Scored;
use std::collections::HashMap;

/// Chunks a file answers with at most, by its place in the results (best
/// first); any later file gets the last.
const PER_FILE: [usize; 4] = [6, 4, 3, 2];

/// Chunks the file at `rank` (0 = best) answers with at most.
pub fn per_file(rank: usize) -> usize {
    PER_FILE[rank.min(PER_FILE.len() - 1)]
}

/// What goes between two pieces of a file that are not next to each other.
pub const GAP: &str = "\n⋮\n";

/// How many chunks to rank for `files` files: enough that the best files
/// bring their other chunks along (three a file, at least 50).
pub fn depth(files: u32) -> u32 {
    files.saturating_mul(3).clamp(50, 1000)
}

/// A file's answer: its best chunks and the relevance of its best.
pub struct FileHit {
    /// The file's relevance: its first chunk's in the ranking.
    pub relevance: f64,
    /// The chunk that matched best by its own scores.
    pub lead: u32,
    /// Up to [`per_file`] chunks, in file order.
    pub pieces: Vec<Hit>,
}

/// A stretch of a file an answer shows: one chunk, or neighbours joined.
#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    /// Byte range in the file.
    pub start: u64,
    /// End of the byte range.
    pub end: u64,
    /// The indexed text of that range.
    pub text: String,
}

impl FileHit {
    /// The file's document.
    pub fn document(&self) -> &Document {
        &self.pieces[0].document
    }

    /// The pieces as stretches of the file, in file order. Pieces that
    /// overlap are joined; so are pieces with only whitespace between them
    /// in `file` (the file's bytes, when it still is as indexed: a chunk
    /// leaves out the blank lines around it, and a split container's own
    /// line, `impl Foo {`, lies between its members' chunks).
    pub fn runs(&self, file: Option<&[u8]>) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        for hit in &self.pieces {
            let chunk = &hit.chunk;
            let Some(run) = runs.last_mut() else {
                runs.push(Run { start: chunk.start, end: chunk.end, text: chunk.text.clone() });
                continue;
            };
            // A chunk's text is its bytes of the file, so an overlap is cut from
            // the later one (unless the text was rewritten and lengths differ).
            let raw = chunk.text.len() as u64 == chunk.end.saturating_sub(chunk.start);
            let overlap = run.end.saturating_sub(chunk.start) as usize;
            let gap = file.and_then(|f| f.get(run.end as usize..chunk.start as usize));
            if chunk.start <= run.end && raw && chunk.text.is_char_boundary(overlap.min(chunk.text.len())) {
                run.text.push_str(&chunk.text[overlap.min(chunk.text.len())..]);
            } else if let Some(blank) = gap.filter(|g| g.iter().all(u8::is_ascii_whitespace)) {
                run.text.push_str(&String::from_utf8_lossy(blank));
                run.text.push_str(&chunk.text);
            } else {
                runs.push(Run { start: chunk.start, end: chunk.end, text: chunk.text.clone() });
                continue;
            }
            run.end = run.end.max(chunk.end);
        }
        runs
    }
}

/// The runs' text, [`GAP`] between them.
pub fn joined(runs: &[Run]) -> String {
    runs.iter().map(|r| r.text.as_str()).collect::<Vec<_>>().join(GAP)
}

/// `ranked` (best first) as files, best first, cut at `files`: each file at
/// its first chunk's place and relevance, with its [`per_file`] chunks of
/// highest own score (ties: ranking order).
pub fn by_file(ranked: Vec<Scored>, files: usize) -> Vec<FileHit> {
    let mut order: Vec<String> = Vec::new();
    let mut of_file: HashMap<String, Vec<Scored>> = HashMap::new();
    for s in ranked {
        let path = s.hit.document.path.clone();
        match of_file.get_mut(&path) {
            Some(list) => list.push(s),
            None => {
                if order.len() == files {
                    continue;
                }
                order.push(path.clone());
                of_file.insert(path, vec![s]);
            }
        }
    }
    order
        .into_iter()
        .filter_map(|path| of_file.remove(&path))
        .enumerate()
        .map(|(rank, mut chunks)| {
            let relevance = chunks[0].relevance;
            // Stable: equal own scores keep the ranking's order.
            chunks.sort_by(|x, y| y.own.total_cmp(&x.own));
            chunks.truncate(per_file(rank));
            let lead = chunks[0].hit.ordinal;
            let mut pieces: Vec<Hit> = chunks.into_iter().map(|s| s.hit).collect();
            pieces.sort_by_key(|h| h.ordinal);
            FileHit { relevance, lead, pieces }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::ragbox::tools::corpus::Chunk;
    use crate::fixtures;

    fn scored(path: &str, ordinal: u32, span: (u64, u64), text: &str, relevance: f64, own: f64) -> Scored {
        let document = fixtures::document(path);
        let chunk = Chunk { text: text.into(), start: span.0, end: span.1 };
        Scored { hit: Hit { document, ordinal, chunk, score: 0.0 }, relevance, own }
    }

    #[test]
    fn a_file_ranks_once_with_its_best_chunks_in_file_order() {
        let ranked = vec![
            scored("a.rs", 4, (40, 50), "four", 0.9, 0.5),
            scored("b.rs", 0, (0, 10), "b zero", 0.8, 0.8),
            scored("a.rs", 1, (10, 13), "one", 0.85, 0.7),
            scored("a.rs", 2, (20, 23), "two", 0.8, 0.6),
            scored("c.rs", 0, (0, 10), "c zero", 0.6, 0.6),
        ];
        let files = by_file(ranked, 2);
        assert_eq!(files.len(), 2, "cut at two files");
        let a = &files[0];
        assert_eq!((a.document().path.as_str(), a.relevance, a.lead), ("a.rs", 0.9, 1));
        assert_eq!(a.pieces.iter().map(|h| h.ordinal).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(files[1].document().path, "b.rs");

        // Without the file, pieces stand apart; with it, blank lines join them
        // and anything else between them is a gap.
        let spans = |runs: &[Run]| runs.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>();
        let apart = a.runs(None);
        assert_eq!(spans(&apart), [(10, 13), (20, 23), (40, 50)]);
        assert_eq!(joined(&apart), format!("one{GAP}two{GAP}four"));
        let mut file = vec![b'x'; 60];
        file[13..20].copy_from_slice(b"\n  \n\t\n\n");
        let runs = a.runs(Some(&file));
        assert_eq!(spans(&runs), [(10, 23), (40, 50)]);
        assert_eq!(joined(&runs), format!("one\n  \n\t\n\ntwo{GAP}four"));
    }

    #[test]
    fn the_best_file_answers_with_the_most_chunks() {
        // Six files of eight chunks each, ranked a.rs first; within a file the
        // ranking runs by ordinal and the chunks' own scores the other way.
        let mut ranked = Vec::new();
        for (place, path) in ["a.rs", "b.rs", "c.rs", "d.rs", "e.rs", "f.rs"].into_iter().enumerate() {
            for ordinal in 0..8u32 {
                let at = u64::from(ordinal) * 10;
                let relevance = 1.0 - place as f64 / 10.0;
                ranked.push(scored(path, ordinal, (at, at + 5), "x", relevance, f64::from(ordinal) / 10.0));
            }
        }
        let files = by_file(ranked, 6);
        assert_eq!(files.iter().map(|f| f.pieces.len()).collect::<Vec<_>>(), [6, 4, 3, 2, 2, 2]);
        assert_eq!(
            files[0].pieces.iter().map(|h| h.ordinal).collect::<Vec<_>>(),
            [2, 3, 4, 5, 6, 7],
            "best own scores"
        );
        assert_eq!(files[5].pieces.iter().map(|h| h.ordinal).collect::<Vec<_>>(), [6, 7]);
    }

    #[test]
    fn overlapping_windows_are_joined_once() {
        // "abcdefghij": windows 0..6 and 4..10 share "ef".
        let files = by_file(
            vec![scored("p.md", 0, (0, 6), "abcdef", 1.0, 1.0), scored("p.md", 1, (4, 10), "efghij", 0.9, 0.9)],
            5,
        );
        assert_eq!(files[0].runs(None), [Run { start: 0, end: 10, text: "abcdefghij".into() }]);
    }
}
