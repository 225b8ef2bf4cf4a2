//! Hybrid search: the nearest chunks by meaning and the best by BM25, fused
//! into one ranking that every ranking tool shares (`search`,
//! `search_by_question`, `get_context`, `search_skills`).
//!
//! Fusion is by normalised score, not rank: each list's scores are scaled to
//! 0..1 (min-max over its top 50) and a chunk's relevance is the weighted
//! sum. Measured on SciFact, tldr task → command and paraphrased skill
//! questions (bench/quality.py), reciprocal rank fusion fell below plain
//! keyword search on tldr, where the semantic list is weak: it gives the k-th
//! of a weak list as much as the k-th of a strong one, while scores keep how
//! far apart the hits are. No other scaling, weighting or per-query weight
//! tried beat equal weights on every set by more than noise (about 0.01).
//! The weights follow the query's language ([`semantic_weight`]): the model
//! (all-MiniLM-L6-v2) was trained on English, and its list is close to noise
//! for a query in another language.

use crate::Error;
use crate::bindings::ragbox::tools::corpus::Filter;
use crate::bindings::ragbox::tools::fulltext;
use crate::bindings::ragbox::tools::vectors::Hit;
use crate::search::semantic;
use ragbox_protocol::language;
use ragbox_protocol::script::{self, Script};
use std::collections::HashMap;

/// The semantic list's weight for a query in English, or in a language not
/// told; the keyword list has the rest.
pub const SEMANTIC_WEIGHT: f64 = 0.5;
/// The semantic list's weight for a query mostly in letters of another script
/// (CJK, Cyrillic, Greek, …). On the Debian Reference's Japanese and
/// Chinese questions (bench/languages.py, tuning half) hybrid hit@5 was
/// 0.68 and 0.76 at 0.1, 0.52 and 0.65 at 0.5, where the keyword list alone
/// had 0.68 and 0.75.
pub const OTHER_SCRIPT_WEIGHT: f64 = 0.1;
/// The semantic list's weight for a query that whatlang tells is in another
/// language written in Latin letters. On the German and French questions
/// hybrid MRR was 0.58 and 0.54 at 0.2, 0.55 and 0.53 at 0.5.
pub const OTHER_LANGUAGE_WEIGHT: f64 = 0.2;

/// The semantic list's weight for `query`, by its language, told from its
/// first [`language::SAMPLE_BYTES`] (the rest of a long query changes no verdict).
pub fn semantic_weight(query: &str) -> f64 {
    let opening = language::opening(query, language::SAMPLE_BYTES);
    let (mut latin, mut other) = (0usize, 0usize);
    for c in opening.chars().filter(|c| c.is_alphabetic()) {
        match script::of(c) {
            Script::Latin => latin += 1,
            _ => other += 1,
        }
    }
    if other > latin {
        return OTHER_SCRIPT_WEIGHT;
    }
    match language::latin(opening) {
        Some(lang) if lang != language::Lang::Eng => OTHER_LANGUAGE_WEIGHT,
        _ => SEMANTIC_WEIGHT,
    }
}

/// A query and its semantic weight, told once for a call however many of
/// its steps ask (the fusion, the response's `search_info`).
pub struct Query<'a> {
    /// The query as given.
    pub text: &'a str,
    weight: std::cell::OnceCell<f64>,
}

impl<'a> Query<'a> {
    /// `text` as a query, its language not yet told.
    pub fn new(text: &'a str) -> Self {
        Self { text, weight: std::cell::OnceCell::new() }
    }

    /// [`semantic_weight`] of the query, told on the first call.
    pub fn semantic_weight(&self) -> f64 {
        *self.weight.get_or_init(|| semantic_weight(self.text))
    }
}

pub use crate::search::scored::Scored;

/// Each list is scaled by its best hit and its hit at this rank, so that a
/// chunk's relevance does not depend on how many hits were asked for.
const SCALE_DEPTH: usize = 50;

/// How deep each list is read for `k` fused hits: fusion needs the overlap.
pub fn depth(k: u32) -> u32 {
    k.saturating_mul(2).clamp(SCALE_DEPTH as u32, 1000)
}

/// The `k` best chunks for `query` by meaning and keywords together, among
/// documents passing `filter`; `None` while nothing is embedded. Files holding
/// an identifier-like query as written come first ([`crate::search::exact`]). Semantic
/// hits below `min_cosine` are left out before fusion (a tool's own floor
/// for "no match at all").
pub fn search(query: &Query, k: u32, filter: &Filter, min_cosine: f32) -> Result<Option<Vec<Scored>>, Error> {
    let Some(mut meaning) = semantic::search(query.text, depth(k), filter)? else { return Ok(None) };
    meaning.retain(|h| h.score >= min_cosine);
    let keywords = fulltext::search(query.text, depth(k), filter)?;
    let fused = fuse(meaning, keywords, k as usize, query.semantic_weight());
    Ok(Some(crate::search::exact::first(query.text, fused, k as usize, filter)?))
}

/// A list's scores (best first) scaled to 0..1: its best hit is 1, its hit at
/// [`SCALE_DEPTH`] (or its last) 0, deeper ones 0 too; all 1 when those are equal.
fn normalised(list: &[Hit]) -> impl Iterator<Item = f64> + '_ {
    let hi = list.first().map_or(0.0, |h| f64::from(h.score));
    let lo = list.get(SCALE_DEPTH.min(list.len()).saturating_sub(1)).map_or(0.0, |h| f64::from(h.score));
    list.iter().map(move |h| if hi > lo { ((f64::from(h.score) - lo) / (hi - lo)).max(0.0) } else { 1.0 })
}

/// How much of its document's best score in the other list a chunk that list
/// did not return still gets. The two lists often pick different chunks of
/// the right file (meaning the function, keywords the lines that name it):
/// without a share, each gets half the evidence and neither leads. Measured
/// on the held-out sets' tuning half (bench/fusion.py): code MRR 0.687 with
/// no share, 0.708 with 0.8, 0.711 with all of it; tasks and prose, whose
/// documents are mostly one chunk, unchanged.
pub const DOCUMENT_SHARE: f64 = 1.0;

/// Normalised-score fusion of a semantic and a keyword list, best first, cut
/// at `k`, the semantic list weighing `weight` and the keyword list the rest.
/// A chunk missing from one list gets [`DOCUMENT_SHARE`] of its document's
/// best score there (nothing when the document is not there).
pub fn fuse(semantic: Vec<Hit>, keyword: Vec<Hit>, k: usize, weight: f64) -> Vec<Scored> {
    type Key = (String, u32);
    // Per chunk: its hit and its normalised score in each list, when there.
    let mut chunks: Vec<(Hit, [Option<f64>; 2])> = Vec::with_capacity(semantic.len() + keyword.len());
    let mut at: HashMap<Key, usize> = HashMap::new();
    let mut document_best: HashMap<String, [f64; 2]> = HashMap::new();
    for (side, list) in [semantic, keyword].into_iter().enumerate() {
        let scores: Vec<f64> = normalised(&list).collect();
        for (hit, score) in list.into_iter().zip(scores) {
            let best = document_best.entry(hit.document.path.clone()).or_default();
            best[side] = best[side].max(score);
            match at.entry((hit.document.path.clone(), hit.ordinal)) {
                std::collections::hash_map::Entry::Occupied(e) => chunks[*e.get()].1[side] = Some(score),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(chunks.len());
                    let mut both = [None, None];
                    both[side] = Some(score);
                    chunks.push((hit, both));
                }
            }
        }
    }
    let weights = [weight, 1.0 - weight];
    let mut fused: Vec<Scored> = chunks
        .into_iter()
        .map(|(hit, both)| {
            let best = document_best.get(&hit.document.path).copied().unwrap_or_default();
            let relevance = (0..2).map(|side| weights[side] * both[side].unwrap_or(DOCUMENT_SHARE * best[side])).sum();
            let own = (0..2).map(|side| weights[side] * both[side].unwrap_or(0.0)).sum();
            Scored { hit, relevance, own }
        })
        .collect();
    fused.sort_by(|x, y| {
        y.relevance
            .total_cmp(&x.relevance)
            .then_with(|| x.hit.document.path.cmp(&y.hit.document.path))
            .then(x.hit.ordinal.cmp(&y.hit.ordinal))
    });
    fused.truncate(k);
    for s in &mut fused {
        s.relevance = s.relevance.clamp(0.0, 1.0);
    }
    fused
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::ragbox::tools::corpus::Chunk;
    use crate::fixtures;

    fn hit(path: &str, ordinal: u32, score: f32) -> Hit {
        let document = fixtures::document(path);
        Hit { document, ordinal, chunk: Chunk { text: String::new(), start: 0, end: 0 }, score }
    }

    fn ranked(fused: &[Scored]) -> Vec<(String, f64)> {
        fused.iter().map(|s| (format!("{}#{}", s.hit.document.path, s.hit.ordinal), s.relevance)).collect()
    }

    #[test]
    fn a_chunk_first_in_both_lists_scores_one_and_leads() {
        let meaning = vec![hit("a", 0, 0.9), hit("b", 0, 0.5), hit("c", 0, 0.4)];
        let keywords = vec![hit("a", 0, 12.0), hit("c", 0, 3.0)];
        let fused = ranked(&fuse(meaning, keywords, 10, SEMANTIC_WEIGHT));
        assert_eq!(fused[0], ("a#0".to_string(), 1.0));
        // b: 0.5 × (0.5 − 0.4) / (0.9 − 0.4) = 0.1; c: last in both lists, 0.
        assert_eq!(fused[1].0, "b#0");
        assert!((fused[1].1 - 0.1).abs() < 1e-9, "{fused:?}");
        assert_eq!(fused[2], ("c#0".to_string(), 0.0));
    }

    #[test]
    fn scores_not_ranks_decide_a_close_call() {
        // Keyword hit y is nearly as good as x; meaning barely tells x, y, z apart but
        // puts y just ahead. Rank fusion would tie x and y; scores say y.
        let meaning = vec![hit("y", 0, 0.61), hit("x", 0, 0.60), hit("z", 0, 0.20)];
        let keywords = vec![hit("x", 0, 10.0), hit("y", 0, 9.9), hit("w", 0, 1.0)];
        let fused = ranked(&fuse(meaning, keywords, 2, SEMANTIC_WEIGHT));
        assert_eq!(fused.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), ["y#0", "x#0"]);
    }

    #[test]
    fn a_document_both_lists_lead_with_different_chunks_leads_the_fusion() {
        // Meaning finds a's function (chunk 1), keywords the lines naming it (chunk 0);
        // b is second in both with one chunk. Chunk by chunk alone, b would lead.
        let meaning = vec![hit("a", 1, 0.9), hit("b", 0, 0.7), hit("c", 0, 0.5)];
        let keywords = vec![hit("a", 0, 10.0), hit("b", 0, 8.0), hit("c", 0, 1.0)];
        let fused = ranked(&fuse(meaning, keywords, 3, SEMANTIC_WEIGHT));
        assert_eq!(fused.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), ["a#0", "a#1", "b#0"]);
        let share = 0.5 + 0.5 * DOCUMENT_SHARE;
        assert!((fused[0].1 - share).abs() < 1e-9 && (fused[1].1 - share).abs() < 1e-9, "{fused:?}");
    }

    #[test]
    fn one_list_alone_keeps_its_order_and_equal_scores_count_fully() {
        let keywords = vec![hit("a", 1, 5.0), hit("a", 0, 2.0), hit("b", 0, 1.0)];
        let fused = ranked(&fuse(Vec::new(), keywords, 10, SEMANTIC_WEIGHT));
        assert_eq!(fused.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), ["a#1", "a#0", "b#0"]);
        assert_eq!(fused[0].1, 0.5);
        let single = ranked(&fuse(vec![hit("s", 0, 0.3)], Vec::new(), 10, SEMANTIC_WEIGHT));
        assert_eq!(single, [("s#0".to_string(), 0.5)]);
        assert!(fuse(Vec::new(), Vec::new(), 10, SEMANTIC_WEIGHT).is_empty());
    }

    #[test]
    fn a_query_in_another_language_weighs_the_semantic_list_less() {
        for query in ["how do I extract a tar archive", "tar", "FoxP3 expression in T cells", "getUserName"] {
            assert_eq!(semantic_weight(query), SEMANTIC_WEIGHT, "{query}");
        }
        for query in ["システムをシャットダウンする方法", "使用 UUID 访问分区", "Как настроить сеть"]
        {
            assert_eq!(semantic_weight(query), OTHER_SCRIPT_WEIGHT, "{query}");
        }
        for query in ["Zugriff auf Partitionen über die UUID-Kennung", "Accès à une partition en utilisant l’UUID"]
        {
            assert_eq!(semantic_weight(query), OTHER_LANGUAGE_WEIGHT, "{query}");
        }
        // Only the opening is read: a long English question followed by pasted Japanese is English.
        let english = "How do I extract a compressed tar archive into another folder? ".repeat(40);
        let long = format!("{english}{}", "システムをシャットダウンする方法".repeat(2000));
        assert_eq!(semantic_weight(&long), SEMANTIC_WEIGHT);
        let query = Query::new(&long);
        assert_eq!((query.semantic_weight(), query.semantic_weight()), (SEMANTIC_WEIGHT, SEMANTIC_WEIGHT));
        // The weight moves the fusion: a keyword-only hit outranks a semantic-only one.
        let fused =
            ranked(&fuse(vec![hit("s", 0, 0.9), hit("x", 0, 0.1)], vec![hit("k", 0, 9.0), hit("y", 0, 1.0)], 2, 0.2));
        assert_eq!(fused[0].0, "k#0");
    }

    #[test]
    fn the_scale_ends_at_a_fixed_depth_so_more_hits_do_not_change_relevance() {
        let list = |n: usize| (0..n).map(|i| hit(&format!("d{i:03}"), 0, 100.0 - i as f32)).collect::<Vec<_>>();
        let short = fuse(Vec::new(), list(SCALE_DEPTH), 5, SEMANTIC_WEIGHT);
        let long = fuse(Vec::new(), list(SCALE_DEPTH * 3), 5, SEMANTIC_WEIGHT);
        assert_eq!(ranked(&short), ranked(&long));
        let deep = fuse(Vec::new(), list(SCALE_DEPTH * 3), SCALE_DEPTH * 3, SEMANTIC_WEIGHT);
        assert!(deep[SCALE_DEPTH..].iter().all(|s| s.relevance == 0.0));
        assert_eq!(depth(5), 50);
        assert_eq!(depth(100), 200);
        assert_eq!(depth(10_000), 1000);
    }
}
