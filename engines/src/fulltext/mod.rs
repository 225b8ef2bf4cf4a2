//! BM25 keyword search (tantivy) at two grains. Whole documents rank the
//! documents, as BM25 baselines score them (one length and one set of term
//! frequencies per file, with its title and path words as fields of their
//! own); their chunks' own BM25 then picks and orders the passages within
//! them. Scoring chunks alone (as before) cut SciFact's abstracts in two and
//! left nDCG@10 0.03 below BM25 over whole abstracts.
//!
//! Chunks have no index of their own: each document records where its
//! chunks end among its word positions, and a chunk's words are read from the
//! ranked documents' positions at search time. A second index of every chunk
//! had been a third of the CPU of indexing a large tree for keywords.
//!
//! Derived from the store and rebuildable: each commit records the store
//! generation it reflects, and [`Fulltext::generation`] tells what to apply.
//! tantivy allows one writer per index across processes, so a busy writer
//! lock is retried, as the store does.

mod analyzer;
mod held;
pub mod language;
mod words;

use crate::records::{ChunkRecord, DocumentRecord, TextDelta};
use cap_fs_ext::DirExt as _;
use cap_std::fs::Dir;
use held::HeldDirectory;
use language::{Language, Languages};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tantivy::collector::TopDocs;
use tantivy::columnar::StrColumn;
use tantivy::directory::error::LockError;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::Postings;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::query::{BooleanQuery, DisjunctionMaxQuery, Occur, Query, QueryParser, TermSetQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::TokenizerManager;
use tantivy::{DocId, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, TERMINATED, Term, doc};

/// The index's folder in its keyword folder.
const DOCUMENTS: &str = "documents";
/// Where an older ragbox indexed chunks apart (removed when found).
const OLD_CHUNKS: &str = "chunks";

/// Memory the writer may buffer before flushing a segment.
const WRITER_BUDGET: usize = 50 << 20;

/// Errors from the fulltext index.
#[derive(Debug, thiserror::Error)]
pub enum FulltextError {
    /// Another process held the writer lock for longer than the retry window.
    #[error("the keyword index at {0} stayed busy (another ragbox process is writing); try again")]
    Busy(PathBuf),
    /// Updating the index panicked (a bug); the next search tries again.
    #[error("updating the keyword index failed unexpectedly; the next search tries again")]
    Panicked,
    /// Updating the index was stopped before it committed (its workspace is
    /// no longer served); the next process to search it catches up.
    #[error("updating the keyword index was stopped; the next search catches up")]
    Stopped,
    /// The query cannot be run (query syntax the index does not support).
    #[error("cannot search for {query:?}: {message}. Search with plain words (and \"quoted phrases\")")]
    Query {
        /// The query as given.
        query: String,
        /// What tantivy said.
        message: String,
    },
    /// tantivy failed.
    #[error(
        "keyword index at {path}: {message}. It is derived from the store: if this persists, delete {path} and it is rebuilt"
    )]
    Index {
        /// The index folder.
        path: PathBuf,
        /// tantivy's message.
        message: String,
    },
}

/// Documents added between two looks at whether an update must stop.
const STOP_EVERY: usize = 64;

/// One hit: a chunk and its BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct FulltextHit {
    /// Workspace-relative document path.
    pub path: String,
    /// The chunk's position in the document.
    pub ordinal: u32,
    /// BM25 score (unbounded, higher is better).
    pub score: f32,
}

// The weights below were chosen with bench/quality.py on SciFact, tldr task
// → command and paraphrased skill questions. A match in the title or the path
// is scored as a field of its own and added to the body's score: at full
// weight it wins too easily (tldr's many pages named for everyday words,
// `file` or `watch`, then outrank the page a task describes; SciFact's titles,
// already in the text, count twice), so both count a fifth.

/// The weight of a document's title (its first heading or frontmatter title) beside its body.
const TITLE_BOOST: f32 = 0.2;
/// The weight of a document's path words (folders, file name) beside its body.
const NAME_BOOST: f32 = 0.2;
/// How much a chunk's own BM25 adds to its document's: enough to order the
/// passages of one document, too little to lift a weak document.
const CHUNK_WEIGHT: f32 = 0.3;
/// Documents ranked for a search, at least (more when more hits are asked).
const MIN_DOCUMENTS: usize = 50;

/// The fields of a document's record.
#[derive(Clone, Copy)]
struct Fields {
    path: Field,
    text: Field,
    title: Field,
    name: Field,
    /// Where each chunk's words end, counted in the text's word positions (see [`document_text`]).
    chunk_ends: Field,
    /// The codes of the languages its words were stemmed in ([`Languages::codes`]).
    languages: Field,
}

/// The tantivy index of the documents, one record each.
struct Part {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

/// The query read in one set of languages the index holds.
struct Reading {
    languages: Languages,
    /// Languages whose stop words it drops besides its own ([`language::also_stop`]).
    also_stop: Vec<Language>,
    /// Its terms in order, phrases' words included.
    terms: Vec<String>,
}

/// A chunk found: its document's path, its ordinal and its BM25 score.
struct Found {
    path: String,
    ordinal: u32,
    score: f32,
}

/// A ranked document while its chunks are scored.
struct Ranked<'a> {
    doc: DocId,
    path: &'a str,
    /// Where each chunk's words end among the document's positions.
    ends: Vec<u32>,
    /// Each chunk's BM25 so far.
    scores: Vec<f32>,
}

impl Ranked<'_> {
    /// Adds one word's BM25 to the chunks that hold it at `positions` (in order).
    fn add(&mut self, weight: &Bm25Weight, positions: &[u32]) {
        let mut rest = positions;
        while let Some(&first) = rest.first() {
            let chunk = self.ends.partition_point(|&end| end <= first);
            let Some(&end) = self.ends.get(chunk) else { break };
            let in_chunk = rest.partition_point(|&p| p < end);
            let start = chunk.checked_sub(1).map_or(0, |before| self.ends[before]);
            let norm = FieldNormReader::fieldnorm_to_id(end - start);
            self.scores[chunk] += weight.score(norm, in_chunk as u32);
            rest = &rest[in_chunk..];
        }
    }
}

/// The keyword index in one folder (`documents/`).
pub struct Fulltext {
    documents: Part,
    wait: Duration,
}

impl Fulltext {
    /// Opens (creating if needed) the index in the folder `dir`, held open
    /// (shown as `shown`): every file of it is reached through that handle.
    pub fn open_in(dir: &Dir, shown: &Path) -> Result<Self, FulltextError> {
        // Chunks were once indexed apart, in `chunks/`: derived data nothing reads now.
        if dir.symlink_metadata(OLD_CHUNKS).is_ok_and(|m| m.is_dir())
            && let Err(e) = dir.remove_dir_all(OLD_CHUNKS)
        {
            tracing::warn!("could not remove the older keyword index {}: {e}", shown.join(OLD_CHUNKS).display());
        }
        Ok(Self { documents: Part::open(dir, DOCUMENTS, &shown.join(DOCUMENTS))?, wait: Duration::from_secs(30) })
    }

    /// [`Self::open_in`] the folder at `dir`, made when missing (tests and tools).
    pub fn open(dir: &Path) -> Result<Self, FulltextError> {
        let fail = |e: std::io::Error| FulltextError::Index { path: dir.to_path_buf(), message: brief(&e) };
        std::fs::create_dir_all(dir).map_err(fail)?;
        let held = Dir::open_ambient_dir(dir, cap_std::ambient_authority()).map_err(fail)?;
        Self::open_in(&held, dir)
    }

    /// The store generation the index reflects (0 for a new index).
    pub fn generation(&self) -> Result<u64, FulltextError> {
        self.documents.generation()
    }

    /// Applies what changed in the store (from
    /// [`crate::store::Store::text_delta`] at [`Self::generation`]) in one
    /// commit. Re-applying a delta is harmless: each changed path is replaced whole.
    pub fn apply(&self, delta: &TextDelta) -> Result<(), FulltextError> {
        self.apply_until(delta, &|| false)
    }

    /// [`Self::apply`], given up before it commits once `stop` says so
    /// (asked every [`STOP_EVERY`] documents): nothing it wrote is then
    /// searched, and its files are removed by the next writer.
    pub fn apply_until(&self, delta: &TextDelta, stop: &dyn Fn() -> bool) -> Result<(), FulltextError> {
        let part = &self.documents;
        let writer = part.writer(self.wait)?;
        if delta.full {
            writer.delete_all_documents().map_err(|e| part.err(e))?;
        }
        for path in delta.removed.iter().chain(delta.documents.iter().map(|(doc, _)| &doc.path)) {
            writer.delete_term(Term::from_field_text(part.fields.path, path));
        }
        // One for the run: it keeps the words it read, within one bound for all languages.
        let mut short = analyzer::ShortFields::default();
        for (at, (doc, records)) in delta.documents.iter().enumerate() {
            if at % STOP_EVERY == 0 && stop() {
                return Err(FulltextError::Stopped);
            }
            part.add_document(&writer, doc, records, &mut short)?;
        }
        if stop() {
            return Err(FulltextError::Stopped);
        }
        part.commit(writer, delta.generation)?;
        self.refresh()
    }

    /// Makes searches see what is committed now (by this process or
    /// another). Searches do not reload on their own: the corpus calls this
    /// when the store's generation says the index moved.
    pub fn refresh(&self) -> Result<(), FulltextError> {
        self.documents.reader.reload().map_err(|e| self.documents.err(e))
    }

    /// The `k` best chunks for `query`; with `allowed`, only chunks of those
    /// paths. Documents are ranked whole, then each hit's score is its
    /// document's plus a share of its chunk's own. The query is read as
    /// plain words and quoted phrases ([`plain_words`]), so no query fails
    /// for its syntax.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        allowed: Option<&BTreeSet<String>>,
    ) -> Result<Vec<FulltextHit>, FulltextError> {
        if k == 0 || allowed.is_some_and(|a| a.is_empty()) {
            return Ok(Vec::new());
        }
        let f = self.documents.fields;
        let depth = k.max(MIN_DOCUMENTS);
        let weighted = [(f.text, 1.0), (f.title, TITLE_BOOST), (f.name, NAME_BOOST)];
        let readings = self.documents.readings(query)?;
        let documents = self.documents.rank(query, &readings, &weighted, depth, allowed)?;
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let ranked: BTreeSet<&str> = documents.iter().map(|(path, _)| path.as_str()).collect();
        let chunks = self.documents.score_chunks(&readings, &ranked)?;
        Ok(combine(documents, chunks, k))
    }
}

/// Each chunk's score from its document's and its own; a document matched
/// only by its title or path words is represented by its first chunk.
fn combine(documents: Vec<(String, f32)>, chunks: Vec<Found>, k: usize) -> Vec<FulltextHit> {
    let mut by_path: HashMap<String, (f32, bool)> =
        documents.into_iter().map(|(path, score)| (path, (score, false))).collect();
    let mut hits: Vec<FulltextHit> = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let Some((document, seen)) = by_path.get_mut(&chunk.path) else { continue };
        *seen = true;
        hits.push(FulltextHit {
            score: *document + CHUNK_WEIGHT * chunk.score,
            path: chunk.path,
            ordinal: chunk.ordinal,
        });
    }
    for (path, (score, seen)) in by_path {
        if !seen {
            hits.push(FulltextHit { path, ordinal: 0, score });
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.path.cmp(&b.path)).then(a.ordinal.cmp(&b.ordinal)));
    hits.truncate(k);
    hits
}

/// A document's text for its whole-document record: its chunks joined in
/// order, each overlap with the one before taken once (the chunker overlaps
/// neighbours; counting those words twice would skew term frequencies). An
/// overlap is cut only where the texts agree with their byte ranges: a tool
/// that stores chunks otherwise loses no words. With the text, where each
/// chunk's words end in it, counted as the index's positions count them
/// ([`analyzer::positions`]): a chunk's words are those after the one before it ends
/// (an overlap counts for the earlier chunk).
fn document_text(chunks: &[ChunkRecord]) -> (String, Vec<u32>) {
    let mut text = String::new();
    let mut ends = Vec::with_capacity(chunks.len());
    let mut words = 0u32;
    let mut previous: Option<&ChunkRecord> = None;
    for chunk in chunks {
        let overlap = previous.map_or(0, |p| p.end.saturating_sub(chunk.start)) as usize;
        let repeated = |p: &ChunkRecord| chunk.text.get(..overlap).is_some_and(|head| p.text.ends_with(head));
        let part = match chunk.text.get(overlap..) {
            Some(rest) if overlap > 0 && previous.is_some_and(repeated) => rest,
            _ => &chunk.text,
        };
        text.push_str(part);
        // A line break between parts: no word runs from one chunk into the next.
        text.push('\n');
        words = words.saturating_add(analyzer::positions(part));
        ends.push(words);
        previous = Some(chunk);
    }
    (text, ends)
}

/// The query as BM25 baselines read it: words, with double-quoted phrases
/// kept as phrases. Any other punctuation becomes a space, so no query syntax
/// (`-word`, `field:`) reaches the parser and `IL-6` or `0-dimensional` are
/// two words to find (reading them only as a phrase, as tantivy does, cost
/// 0.01 hit@5 on tldr task → command). A token joined by punctuation
/// (`write_txn`, `tokio::sync::mpsc`, `src/main.rs`, `IL-6`) is also asked
/// for as a phrase beside its words: a file holding the identifier as
/// written outranks one holding its words apart.
fn plain_words(query: &str) -> String {
    let words = |s: &str| -> Vec<String> { words::pieces(s).map(|p| p.text().to_string()).collect() };
    let mut out: Vec<String> = Vec::new();
    let parts: Vec<&str> = query.split('"').collect();
    let closed = parts.len() % 2 == 1;
    for (i, part) in parts.iter().enumerate() {
        // Odd parts sit between quotes; an unclosed quote's part is plain words.
        if i % 2 == 1 && (closed || i + 1 < parts.len()) {
            let inner = words(part);
            if !inner.is_empty() {
                out.push(format!("\"{}\"", inner.join(" ")));
            }
            continue;
        }
        for token in part.split_whitespace() {
            let pieces = words(token).join(" ");
            // A CJK run is asked for by its pairs, each a word of its own: as one
            // word it would be a phrase of them, found only as written. (Asked for
            // as written beside its pairs too, as identifiers are below, it ranked
            // no better on the Debian Reference's Japanese and Chinese questions.)
            let pairs = cjk_pairs(token);
            if !pairs.is_empty() {
                out.push(pairs);
            } else if pieces.contains(' ') {
                out.push(format!("{pieces} \"{pieces}\""));
            } else if !pieces.is_empty() {
                out.push(pieces);
            }
        }
    }
    out.join(" ")
}

/// A token's words with each CJK run cut into its overlapping pairs (a lone
/// character alone), space-separated; empty when it holds no CJK run.
fn cjk_pairs(token: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut any = false;
    for piece in words::pieces(token) {
        match piece {
            words::Piece::Word { text, .. } => out.push(text.to_string()),
            words::Piece::Cjk { text, .. } => {
                any = true;
                let units: Vec<char> = text.chars().filter(|&c| words::script::is_cjk(c)).collect();
                match units.as_slice() {
                    [one] => out.push(one.to_string()),
                    _ => out.extend(units.windows(2).map(|w| w.iter().collect::<String>())),
                }
            }
        }
    }
    if any { out.join(" ") } else { String::new() }
}

/// The words of a path that a user searches by: its folders and file name,
/// without the extension (`pages/git-commit.md` → `pages/git-commit`).
fn path_words(path: &str) -> &str {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    match path[name_start..].rfind('.') {
        Some(dot) if dot > 0 => &path[..name_start + dot],
        _ => path,
    }
}

/// An error of tantivy's in a few words: some carry the content of the
/// file they could not parse, which is no one's to print.
fn brief(e: &dyn std::fmt::Display) -> String {
    let full = e.to_string();
    let head = full.split("Content").next().unwrap_or_default().trim_end();
    let mut cut: String = head.chars().take(300).collect();
    if cut.len() < head.len() {
        cut.push('…');
    }
    crate::text::for_terminal(&cut).into_owned()
}

impl Part {
    /// Opens the index in the folder `name` of `parent` (made when missing; shown as `dir`).
    fn open(parent: &Dir, name: &str, dir: &Path) -> Result<Self, FulltextError> {
        let fail = |e: &dyn std::fmt::Display| FulltextError::Index { path: dir.to_path_buf(), message: brief(e) };
        let folder = || -> std::io::Result<Dir> {
            match parent.create_dir_with(name, &crate::platform::private_dir()) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
            parent.open_dir_nofollow(name)
        };
        let mut schema = Schema::builder();
        let analyzed = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(analyzer::NAME).set_index_option(
                // Positions match phrases and tell which chunk holds each word.
                IndexRecordOption::WithFreqsAndPositions,
            ),
        );
        let fields = Fields {
            // Read back from columns (fast fields), not stored documents: a
            // stored-document fetch decompresses a block per hit.
            path: schema.add_text_field("path", STRING | FAST),
            text: schema.add_text_field("text", analyzed.clone()),
            title: schema.add_text_field("title", analyzed.clone()),
            name: schema.add_text_field("name", analyzed),
            chunk_ends: schema.add_u64_field("chunk_ends", FAST),
            languages: schema.add_text_field("languages", STRING),
        };
        let schema = schema.build();
        let directory = HeldDirectory::new(folder().map_err(|e| fail(&e))?, dir);
        let index = match Index::open_or_create(directory, schema.clone()) {
            Ok(index) => index,
            // Written by an older ragbox with another schema or analyzer: the
            // index is derived, so start it over and let the store fill it.
            Err(tantivy::TantivyError::SchemaError(why)) => {
                tracing::warn!("keyword index {} has an older format ({why}); rebuilding it", dir.display());
                parent.remove_dir_all(name).map_err(|e| fail(&e))?;
                let directory = HeldDirectory::new(folder().map_err(|e| fail(&e))?, dir);
                Index::create(directory, schema, tantivy::IndexSettings::default()).map_err(|e| fail(&e))?
            }
            Err(e) => return Err(fail(&e)),
        };
        index.tokenizers().register(analyzer::NAME, analyzer::analyzer());
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(|e| fail(&e))?;
        Ok(Self { dir: dir.to_path_buf(), index, reader, fields })
    }

    fn generation(&self) -> Result<u64, FulltextError> {
        let metas = self.index.load_metas().map_err(|e| self.err(e))?;
        Ok(metas.payload.and_then(|p| p.parse().ok()).unwrap_or(0))
    }

    fn add_document(
        &self,
        writer: &IndexWriter,
        doc: &DocumentRecord,
        chunks: &[ChunkRecord],
        short: &mut analyzer::ShortFields,
    ) -> Result<(), FulltextError> {
        let f = self.fields;
        let (mut text, ends) = document_text(chunks);
        // Told once: the text's analyzer reads them from its opening line; the
        // title and path words, too short to tell, are read in them.
        let languages = language::detect(&text);
        analyzer::open_with(&mut text, languages);
        let title = short.read(doc.title.as_deref().unwrap_or_default(), languages);
        let name = short.read(path_words(&doc.path), languages);
        let mut record = doc!(f.path => doc.path.as_str(), f.text => text);
        record.add_pre_tokenized_text(f.title, title);
        record.add_pre_tokenized_text(f.name, name);
        for code in languages.codes() {
            record.add_text(f.languages, code);
        }
        for end in ends {
            record.add_u64(f.chunk_ends, u64::from(end));
        }
        writer.add_document(record).map(drop).map_err(|e| self.err(e))
    }

    /// Every chunk of `paths`' documents that holds a word of `query`, with its
    /// BM25 for those words (phrases read as words). A chunk's words are its
    /// span of its document's positions, so only the ranked documents'
    /// postings are read: the cost follows them, not the corpus. The words'
    /// rarity is the documents' (chunks have no index to count them in), a
    /// chunk's length is weighed against the ranked documents' chunks.
    fn score_chunks(&self, readings: &[Reading], paths: &BTreeSet<&str>) -> Result<Vec<Found>, FulltextError> {
        let searcher = self.reader.searcher();
        let text = self.fields.text;
        // Each term once, in order, however many readings hold it (a set: a long query has many).
        let mut seen: HashSet<&str> = HashSet::new();
        let terms: Vec<Term> = readings
            .iter()
            .flat_map(|r| &r.terms)
            .filter(|term| seen.insert(term.as_str()))
            .map(|term| Term::from_field_text(text, term))
            .collect();
        // The ranked documents by segment, in doc-id order (postings are read forwards).
        let mut ranked: Vec<Vec<Ranked>> = Vec::new();
        for segment in searcher.segment_readers() {
            let by_path = segment.inverted_index(self.fields.path).map_err(|e| self.err(e))?;
            let ends = segment.fast_fields().u64("chunk_ends").map_err(|e| self.err(e))?;
            let mut docs: Vec<Ranked> = Vec::new();
            for &path in paths {
                let term = Term::from_field_text(self.fields.path, path);
                let Some(mut postings) =
                    by_path.read_postings(&term, IndexRecordOption::Basic).map_err(|e| self.err(e))?
                else {
                    continue;
                };
                while postings.doc() != TERMINATED {
                    let doc = postings.doc();
                    if !segment.is_deleted(doc) {
                        let ends: Vec<u32> = ends.values_for_doc(doc).map(|e| e as u32).collect();
                        docs.push(Ranked { doc, path, scores: vec![0.0; ends.len()], ends });
                    }
                    postings.advance();
                }
            }
            docs.sort_unstable_by_key(|r| r.doc);
            ranked.push(docs);
        }
        let (spanned, chunks) = ranked.iter().flatten().fold((0u64, 0u64), |(w, c), r| {
            (w + u64::from(r.ends.last().copied().unwrap_or(0)), c + r.ends.len() as u64)
        });
        if chunks == 0 {
            return Ok(Vec::new());
        }
        let average = spanned as f32 / chunks as f32;
        // Counted as tantivy counts for its own BM25: replaced documents stay in
        // both counts until their segment is merged (live ones only would let a
        // word's document count pass the total, which tantivy refuses).
        let total = Bm25StatisticsProvider::total_num_docs(&searcher).map_err(|e| self.err(e))?;
        let weights: Vec<Bm25Weight> = terms
            .iter()
            .map(|t| Ok(Bm25Weight::for_one_term_without_explain(searcher.doc_freq(t)?, total, average)))
            .collect::<Result<_, tantivy::TantivyError>>()
            .map_err(|e| self.err(e))?;
        let mut positions: Vec<u32> = Vec::new();
        for (segment, docs) in searcher.segment_readers().iter().zip(&mut ranked) {
            if docs.is_empty() {
                continue;
            }
            let words = segment.inverted_index(text).map_err(|e| self.err(e))?;
            for (term, weight) in terms.iter().zip(&weights) {
                let Some(mut postings) =
                    words.read_postings(term, IndexRecordOption::WithFreqsAndPositions).map_err(|e| self.err(e))?
                else {
                    continue;
                };
                for ranked in docs.iter_mut() {
                    // Postings only move forwards: past `doc` already means it lacks the word.
                    let at = if postings.doc() < ranked.doc { postings.seek(ranked.doc) } else { postings.doc() };
                    if at == TERMINATED {
                        break;
                    }
                    if at == ranked.doc {
                        positions.clear();
                        postings.positions(&mut positions);
                        ranked.add(weight, &positions);
                    }
                }
            }
        }
        let mut found = Vec::new();
        for ranked in ranked.into_iter().flatten() {
            for (ordinal, score) in ranked.scores.into_iter().enumerate() {
                if score > 0.0 {
                    found.push(Found { path: ranked.path.to_string(), ordinal: ordinal as u32, score });
                }
            }
        }
        Ok(found)
    }

    /// `query` read in the sets of languages [`Languages::for_query`] picks
    /// from those the index's documents were read in; readings that come to
    /// the same terms are one. Each drops the stop words of the languages
    /// [`language::also_stop`] picks, besides its own.
    fn readings(&self, query: &str) -> Result<Vec<Reading>, FulltextError> {
        let searcher = self.reader.searcher();
        let mut codes: BTreeSet<String> = BTreeSet::new();
        for segment in searcher.segment_readers() {
            let recorded = segment.inverted_index(self.fields.languages).map_err(|e| self.err(e))?;
            let mut stream = recorded.terms().stream().map_err(|e| self.err(e))?;
            while stream.advance() {
                codes.insert(String::from_utf8_lossy(stream.key()).into_owned());
            }
        }
        let documents = searcher.num_docs();
        let mut counts: Vec<(&str, u64)> = Vec::with_capacity(codes.len());
        for code in &codes {
            let term = Term::from_field_text(self.fields.languages, code);
            counts.push((code, searcher.doc_freq(&term).map_err(|e| self.err(e))?));
        }
        let told = language::QueryWords::new(query);
        let also_stop = language::also_stop(&told, &counts);
        let words = plain_words(query);
        let mut readings: Vec<Reading> = Vec::new();
        for languages in Languages::for_query(&told, &counts, documents) {
            let mut terms = Vec::new();
            let mut analyzer = analyzer::query_analyzer(languages, &also_stop);
            let mut stream = analyzer.token_stream(&words);
            while stream.advance() {
                terms.push(stream.token().text.clone());
            }
            if !readings.iter().any(|r| r.terms == terms) {
                readings.push(Reading { languages, also_stop: also_stop.clone(), terms });
            }
        }
        Ok(readings)
    }

    /// The paths of the `limit` best records for `query` over the weighted
    /// `fields`, with their BM25 scores. Each record is scored by the reading
    /// of the query that fits it best: a German note by the query's German
    /// stems, an English one by its English stems.
    fn rank(
        &self,
        query: &str,
        readings: &[Reading],
        fields: &[(Field, f32)],
        limit: usize,
        allowed: Option<&BTreeSet<String>>,
    ) -> Result<Vec<(String, f32)>, FulltextError> {
        let defaults: Vec<Field> = fields.iter().map(|(f, _)| *f).collect();
        let words = plain_words(query);
        let mut each: Vec<Box<dyn Query>> = Vec::with_capacity(readings.len());
        for reading in readings {
            let analyzers = TokenizerManager::new();
            analyzers.register(analyzer::NAME, analyzer::query_analyzer(reading.languages, &reading.also_stop));
            let mut parser = QueryParser::new(self.index.schema(), defaults.clone(), analyzers);
            for &(field, boost) in fields {
                parser.set_field_boost(field, boost);
            }
            each.push(parser.parse_query_lenient(&words).0);
        }
        let parsed: Box<dyn Query> = match each.len() {
            1 => each.remove(0),
            _ => Box::new(DisjunctionMaxQuery::new(each)),
        };
        let scoped: Box<dyn Query> = match allowed {
            Some(paths) => {
                let terms = paths.iter().map(|p| Term::from_field_text(self.fields.path, p));
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, parsed),
                    (Occur::Must, Box::new(TermSetQuery::new(terms)) as Box<dyn Query>),
                ]))
            }
            None => parsed,
        };
        let searcher = self.reader.searcher();
        let top = searcher.search(&scoped, &TopDocs::with_limit(limit).order_by_score()).map_err(|e| match e {
            // The query asked for something the index cannot do (`text:*`, a range): a bad query, not a bad index.
            tantivy::TantivyError::InvalidArgument(_)
            | tantivy::TantivyError::SchemaError(_)
            | tantivy::TantivyError::FieldNotFound(_) => {
                FulltextError::Query { query: query.to_string(), message: e.to_string() }
            }
            e => self.err(e),
        })?;
        // Paths by segment, from each hit's term ordinal, read in ordinal order: the
        // dictionary's blocks are compressed, and one look per hit decompressed a
        // block per hit (a tenth of a keyword search's time on SciFact).
        let mut by_segment: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
        let mut found: Vec<(String, f32)> = Vec::with_capacity(top.len());
        for (at, (score, address)) in top.iter().enumerate() {
            found.push((String::new(), *score));
            by_segment.entry(address.segment_ord).or_default().push((u64::from(address.doc_id), at));
        }
        for (segment, hits) in by_segment {
            let fast = searcher.segment_reader(segment).fast_fields();
            let paths: StrColumn =
                fast.str("path").map_err(|e| self.err(e))?.ok_or_else(|| self.err("no path column"))?;
            let mut ords: Vec<(u64, usize)> =
                hits.into_iter().filter_map(|(doc, at)| Some((paths.term_ords(doc as DocId).next()?, at))).collect();
            ords.sort_unstable();
            let sorted: Vec<u64> = ords.iter().map(|(ord, _)| *ord).collect();
            let mut next = ords.iter().map(|(_, at)| *at);
            paths
                .dictionary()
                .sorted_ords_to_term_cb(&sorted, |bytes| {
                    if let Some(at) = next.next() {
                        found[at].0 = String::from_utf8_lossy(bytes).into_owned();
                    }
                })
                .map_err(|e| self.err(e))?;
        }
        Ok(found)
    }

    fn commit(&self, mut writer: IndexWriter, generation: u64) -> Result<(), FulltextError> {
        let mut prepared = writer.prepare_commit().map_err(|e| self.err(e))?;
        prepared.set_payload(&generation.to_string());
        prepared.commit().map_err(|e| self.err(e))?;
        writer.wait_merging_threads().map_err(|e| self.err(e))
    }

    /// Takes the writer lock, waiting while another process holds it, and
    /// removes the files no commit names: a writer killed mid-commit leaves
    /// some, named as this one's next commit would name its own (tantivy
    /// refuses to overwrite them).
    fn writer(&self, wait: Duration) -> Result<IndexWriter, FulltextError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            match self.index.writer_with_num_threads(1, WRITER_BUDGET) {
                Ok(writer) => {
                    writer.garbage_collect_files().wait().map_err(|e| self.err(e))?;
                    return Ok(writer);
                }
                Err(tantivy::TantivyError::LockFailure(LockError::LockBusy, _)) if started.elapsed() < wait => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(tantivy::TantivyError::LockFailure(LockError::LockBusy, _)) => {
                    return Err(FulltextError::Busy(self.dir.clone()));
                }
                Err(e) => return Err(self.err(e)),
            }
        }
    }

    fn err(&self, e: impl std::fmt::Display) -> FulltextError {
        FulltextError::Index { path: self.dir.clone(), message: brief(&e) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Delta;

    fn chunk(text: &str, start: u64) -> ChunkRecord {
        ChunkRecord { text: text.to_string(), start, end: start + text.len() as u64 }
    }

    fn document(path: &str, title: Option<&str>, chunks: &[&str]) -> (DocumentRecord, Vec<ChunkRecord>) {
        let record = DocumentRecord { path: path.into(), title: title.map(str::to_string), ..Default::default() };
        let mut at = 0;
        let chunks = chunks
            .iter()
            .map(|t| {
                let c = chunk(t, at);
                at = c.end;
                c
            })
            .collect();
        (record, chunks)
    }

    fn index(documents: Vec<(DocumentRecord, Vec<ChunkRecord>)>) -> (tempfile::TempDir, Fulltext) {
        let dir = tempfile::tempdir().unwrap();
        let fulltext = Fulltext::open(dir.path()).unwrap();
        fulltext.apply(&Delta { generation: 7, full: true, documents, removed: Vec::new() }).unwrap();
        (dir, fulltext)
    }

    fn paths(hits: &[FulltextHit]) -> Vec<String> {
        hits.iter().map(|h| format!("{}#{}", h.path, h.ordinal)).collect()
    }

    /// Every file name under `dir`, recursively, relative to it.
    fn files(dir: &Path) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(files(&path).into_iter().map(|f| path.strip_prefix(dir).unwrap().join(f)));
            } else {
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
        out
    }

    #[test]
    fn files_a_killed_writer_left_behind_do_not_block_the_next() {
        // A process killed while committing leaves the files it wrote (a delete file named
        // by segment and operation number) listed as managed but in no commit. The next
        // writer starts from the same commit, reaches the same numbers and names the same
        // files: it must not fail on them. Made here by committing a change in a copy of
        // the index and carrying the copy's new files back, as the killed one had.
        let (dir, fulltext) = index(vec![document("a.md", None, &["alpha one"]), document("b.md", None, &["beta"])]);
        drop(fulltext);
        let copy = tempfile::tempdir().unwrap();
        for file in files(dir.path()) {
            std::fs::create_dir_all(copy.path().join(&file).parent().unwrap()).unwrap();
            std::fs::copy(dir.path().join(&file), copy.path().join(&file)).unwrap();
        }
        let change = Delta { generation: 8, full: false, documents: Vec::new(), removed: vec!["a.md".into()] };
        Fulltext::open(copy.path()).unwrap().apply(&change).unwrap();
        let before = files(dir.path());
        let left: Vec<PathBuf> = files(copy.path()).into_iter().filter(|f| !before.contains(f)).collect();
        assert!(left.iter().any(|f| f.extension().is_some_and(|e| e == "del")), "no delete file to leave: {left:?}");
        for file in left.iter().filter(|f| f.file_name().is_some_and(|n| n != "meta.json")) {
            std::fs::copy(copy.path().join(file), dir.path().join(file)).unwrap();
        }
        let managed = "documents/.managed.json";
        std::fs::copy(copy.path().join(managed), dir.path().join(managed)).unwrap();
        let fulltext = Fulltext::open(dir.path()).unwrap();
        assert_eq!(fulltext.generation().unwrap(), 7, "the change must not be committed here");
        fulltext.apply(&change).unwrap();
        assert_eq!(fulltext.generation().unwrap(), 8);
        assert_eq!(paths(&fulltext.search("alpha beta", 5, None).unwrap()), ["b.md#0"]);
    }

    #[test]
    fn chunks_are_scored_while_replaced_documents_wait_for_a_merge() {
        // Replaced documents stay, deleted, in a segment that still holds a live one
        // until a merge: the word's document count (10) then passes the live
        // documents (6). (A segment left with none alive is dropped at once.)
        let names = ["a", "b", "c", "d", "e"].map(|n| format!("{n}.md"));
        let mut first: Vec<_> = names.iter().map(|n| document(n, None, &["alpha one"])).collect();
        first.push(document("z.md", None, &["beta two"]));
        let (_dir, fulltext) = index(first);
        let again = names.iter().map(|n| document(n, None, &["alpha one", "alpha again"])).collect();
        fulltext.apply(&Delta { generation: 8, full: false, documents: again, removed: Vec::new() }).unwrap();
        let hits = fulltext.search("alpha", 20, None).unwrap();
        assert_eq!(hits.len(), 10, "{hits:?}");
        assert!(hits.iter().all(|h| h.score.is_finite() && h.score > 0.0), "{hits:?}");
    }

    #[test]
    fn an_index_of_the_older_two_grain_format_is_rebuilt_from_the_store() {
        // Chunks were once a second index (`chunks/`), and documents had no chunk ends:
        // such an index is started over, the index then asks for everything again
        // (generation 0), and the chunks' folder is gone.
        let dir = tempfile::tempdir().unwrap();
        for grain in ["documents", "chunks"] {
            let mut schema = Schema::builder();
            schema.add_text_field("path", STRING | FAST);
            schema.add_u64_field("ordinal", tantivy::schema::INDEXED | FAST);
            schema.add_text_field("text", tantivy::schema::TEXT);
            std::fs::create_dir_all(dir.path().join(grain)).unwrap();
            Index::create_in_dir(dir.path().join(grain), schema.build()).unwrap();
        }
        let fulltext = Fulltext::open(dir.path()).unwrap();
        assert!(!dir.path().join("chunks").exists());
        assert_eq!(fulltext.generation().unwrap(), 0);
        let (doc, records) = document("a.md", None, &["alpha one", "beta two"]);
        let delta = Delta { generation: 9, full: true, documents: vec![(doc, records)], removed: Vec::new() };
        fulltext.apply(&delta).unwrap();
        assert_eq!(fulltext.generation().unwrap(), 9);
        assert_eq!(paths(&fulltext.search("beta", 5, None).unwrap()), ["a.md#1"]);
        assert_eq!(paths(&fulltext.search("\"alpha one\"", 5, None).unwrap()), ["a.md#0"]);
    }

    #[test]
    fn an_index_of_the_english_only_analyzer_is_rebuilt_once() {
        // The format before languages were told apart: the same fields, read by
        // `en_words_v2`, no languages field, committed at generation 5.
        let dir = tempfile::tempdir().unwrap();
        let older = dir.path().join("documents");
        std::fs::create_dir_all(&older).unwrap();
        let mut schema = Schema::builder();
        let analyzed = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("en_words_v2")
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let path = schema.add_text_field("path", STRING | FAST);
        for name in ["text", "title", "name"] {
            schema.add_text_field(name, analyzed.clone());
        }
        schema.add_u64_field("chunk_ends", FAST);
        let index = Index::create_in_dir(&older, schema.build()).unwrap();
        index.tokenizers().register("en_words_v2", tantivy::tokenizer::SimpleTokenizer::default());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, WRITER_BUDGET).unwrap();
        writer.add_document(doc!(path => "a.md")).unwrap();
        let mut prepared = writer.prepare_commit().unwrap();
        prepared.set_payload("5");
        prepared.commit().unwrap();
        drop((writer, index));
        // Opened by this version: empty, at generation 0, so the store's every
        // document is applied again (the vectors, elsewhere, are untouched).
        let fulltext = Fulltext::open(dir.path()).unwrap();
        assert_eq!(fulltext.generation().unwrap(), 0);
        let (doc, records) = document("a.md", None, &["日本語の設定ファイル"]);
        let delta = Delta { generation: 9, full: true, documents: vec![(doc, records)], removed: Vec::new() };
        fulltext.apply(&delta).unwrap();
        assert_eq!(paths(&fulltext.search("設定", 5, None).unwrap()), ["a.md#0"]);
        // Once: opened again, it is the current format and kept.
        drop(fulltext);
        assert_eq!(Fulltext::open(dir.path()).unwrap().generation().unwrap(), 9);
    }

    #[test]
    fn each_language_is_found_by_its_own_words() {
        let (_dir, fulltext) = index(vec![
            document(
                "de.md",
                Some("Paketverwaltung"),
                &["Die Paketverwaltung von Debian installiert Programme aus den Archiven und hält sie auf dem \
                   neuesten Stand. Dazu werden die Paketlisten regelmäßig aktualisiert und die Abhängigkeiten \
                   zwischen den Paketen automatisch aufgelöst."],
            ),
            document(
                "fr.md",
                None,
                &["Le système de gestion des paquets de Debian installe les programmes depuis les archives et \
                   les maintient à jour. Les listes de paquets sont mises à jour régulièrement et les \
                   dépendances entre les paquets sont résolues automatiquement. Voir le résumé."],
            ),
            // German and French are each three documents: a query's words are read in them
            // whatever its language (a word alone tells none).
            document(
                "de2.md",
                None,
                &["Nach dem Start des Rechners zeigt die Konsole eine Anmeldung. Wer sich dort mit seinem Namen \
                   und seinem Kennwort anmeldet, erhält eine Shell, in der er Befehle eingeben kann. Die grafische \
                   Oberfläche startet erst danach, wenn sie eingerichtet ist."],
            ),
            document(
                "de3.md",
                None,
                &["Der Rechnername wird bei der Installation festgelegt und steht in einer Datei im Verzeichnis \
                   der Systemeinstellungen. Wer ihn später ändern will, muss auch die Namensauflösung anpassen, \
                   sonst finden sich die Dienste nicht mehr gegenseitig."],
            ),
            document(
                "fr2.md",
                None,
                &["Après le démarrage de l'ordinateur, la console affiche une invite de connexion. Celui qui s'y \
                   connecte avec son nom et son mot de passe obtient un interpréteur de commandes dans lequel il \
                   peut saisir des commandes. L'interface graphique démarre ensuite, si elle est configurée."],
            ),
            document(
                "fr3.md",
                None,
                &["Le nom de la machine est choisi lors de l'installation et se trouve dans un fichier du \
                   répertoire des réglages du système. Qui veut le changer plus tard doit aussi adapter la \
                   résolution des noms, sinon les services ne se trouvent plus entre eux."],
            ),
            document("en.md", None, &["The package manager keeps the installed programs up to date."]),
            document("short.md", None, &["Notes de la semaine"]),
            document("ja.md", None, &["パッケージ管理システムはアーカイブからプログラムをインストールします。"]),
            document("zh.md", None, &["软件包管理系统从档案库安装程序并保持其最新状态。"]),
            document("th.md", None, &["ระบบจัดการแพ็กเกจ ติดตั้งโปรแกรม"]),
        ]);
        for (query, want) in [
            // German forms of one stem; a French plural; a fold.
            ("Paket", "de.md#0"),
            ("Abhangigkeit", "de.md#0"),
            ("dépendance", "fr.md#0"),
            ("resume", "fr.md#0"),
            ("packages", "en.md#0"),
            // Three characters inside a longer run, and a word of a run.
            ("管理シ", "ja.md#0"),
            ("档案库", "zh.md#0"),
            ("ติดตั้งโปรแกรม", "th.md#0"),
        ] {
            assert_eq!(
                paths(&fulltext.search(query, 5, None).unwrap()).first().map(String::as_str),
                Some(want),
                "{query}"
            );
        }
        // A French query's stop words find nothing in a note read as English (too short to tell).
        let hits = fulltext.search("les paquets de la", 5, None).unwrap();
        assert_eq!(paths(&hits), ["fr.md#0"]);
    }

    #[test]
    fn another_languages_stop_words_stay_in_a_query_unless_it_is_in_that_language() {
        // Ten notes, one in German and one in Danish: an English query loses none of its
        // words to their stop words (German `die`, `war`, `man`; Danish `over`, `end`).
        let mut notes: Vec<_> = (0..8).map(|i| document(&format!("en{i}.md"), None, &[PACKAGES[0]])).collect();
        notes.push(document("de.md", None, &[PACKAGES[5]]));
        notes.push(document("da.md", None, &[PACKAGES[1]]));
        let (_dir, fulltext) = index(notes);
        let readings = fulltext.documents.readings("die war over man end").unwrap();
        let english = readings.iter().find(|r| r.languages.latin == Language::English).unwrap();
        assert_eq!(english.terms, ["die", "war", "over", "man", "end"]);
        // Three French pages: a French query's stop words find nothing in a note read
        // as English (too short to tell).
        let mut pages: Vec<_> = (0..3).map(|i| document(&format!("fr{i}.md"), None, &[PACKAGES[4]])).collect();
        pages.push(document("en.md", None, &[PACKAGES[0]]));
        pages.push(document("short.md", None, &["Notes de la semaine"]));
        let (_dir, fulltext) = index(pages);
        let hits = paths(&fulltext.search("les paquets de la", 30, None).unwrap());
        assert_eq!(hits.len(), 3, "{hits:?}");
        assert!(hits.iter().all(|h| h.starts_with("fr")), "{hits:?}");
    }

    /// One paragraph (about the package manager) in each of 17 languages, past the 200 bytes that tell one.
    const PACKAGES: [&str; 17] = [
        "The package management system installs programs from the archives and keeps them up to date. The \
         package lists are updated regularly and the dependencies between the packages are resolved automatically, \
         so that the system always stays in a consistent state.",
        "Pakkehåndteringssystemet installerer programmer fra arkiverne og holder dem opdaterede. Pakkelisterne \
         bliver opdateret regelmæssigt, og afhængighederne mellem pakkerne bliver løst automatisk, så systemet \
         altid er i en konsistent tilstand og kan bruges uden problemer.",
        "Het pakketbeheersysteem installeert programma's uit de archieven en houdt ze up-to-date. De pakketlijsten \
         worden regelmatig bijgewerkt en de afhankelijkheden tussen de pakketten worden automatisch opgelost, \
         zodat het systeem altijd in een consistente toestand blijft.",
        "Pakettienhallintajärjestelmä asentaa ohjelmat arkistoista ja pitää ne ajan tasalla. Pakettiluettelot \
         päivitetään säännöllisesti, ja pakettien väliset riippuvuudet ratkaistaan automaattisesti, jotta \
         järjestelmä pysyy aina yhtenäisessä tilassa eikä mitään tarvitse tehdä käsin.",
        "Le système de gestion des paquets installe les programmes depuis les archives et les maintient à jour. \
         Les listes de paquets sont mises à jour régulièrement et les dépendances entre les paquets sont résolues \
         automatiquement, de sorte que le système reste toujours dans un état cohérent.",
        "Die Paketverwaltung installiert Programme aus den Archiven und hält sie auf dem neuesten Stand. Die \
         Paketlisten werden regelmäßig aktualisiert und die Abhängigkeiten zwischen den Paketen automatisch \
         aufgelöst, sodass das System immer in einem konsistenten Zustand bleibt.",
        "A csomagkezelő rendszer az archívumokból telepíti a programokat, és naprakészen tartja őket. A \
         csomaglistákat rendszeresen frissíti, és a csomagok közötti függőségeket automatikusan feloldja, így a \
         rendszer mindig egységes állapotban marad, és nem kell semmit kézzel csinálni.",
        "Il sistema di gestione dei pacchetti installa i programmi dagli archivi e li mantiene aggiornati. Gli \
         elenchi dei pacchetti vengono aggiornati regolarmente e le dipendenze tra i pacchetti vengono risolte \
         automaticamente, in modo che il sistema rimanga sempre in uno stato coerente.",
        "Pakkehåndteringssystemet installerer programmer fra arkivene og holder dem oppdatert. Pakkelistene blir \
         oppdatert jevnlig, og avhengighetene mellom pakkene blir løst automatisk, slik at systemet alltid er i en \
         konsistent tilstand og kan brukes uten problemer av noen.",
        "O sistema de gerenciamento de pacotes instala os programas a partir dos arquivos e os mantém atualizados. \
         As listas de pacotes são atualizadas regularmente e as dependências entre os pacotes são resolvidas \
         automaticamente, para que o sistema permaneça sempre em um estado consistente.",
        "Sistemul de gestionare a pachetelor instalează programele din arhive și le menține actualizate. Listele \
         de pachete sunt actualizate în mod regulat, iar dependențele dintre pachete sunt rezolvate automat, \
         astfel încât sistemul să rămână întotdeauna într-o stare consecventă.",
        "El sistema de gestión de paquetes instala los programas desde los archivos y los mantiene actualizados. \
         Las listas de paquetes se actualizan con regularidad y las dependencias entre los paquetes se resuelven \
         automáticamente, de modo que el sistema siempre permanece en un estado coherente.",
        "Pakethanteringssystemet installerar program från arkiven och håller dem uppdaterade. Paketlistorna \
         uppdateras regelbundet och beroendena mellan paketen löses automatiskt, så att systemet alltid förblir \
         i ett konsekvent tillstånd och kan användas utan några problem.",
        "Paket yönetim sistemi programları arşivlerden kurar ve onları güncel tutar. Paket listeleri düzenli \
         olarak güncellenir ve paketler arasındaki bağımlılıklar otomatik olarak çözülür, böylece sistem her \
         zaman tutarlı bir durumda kalır ve hiçbir şeyin elle yapılması gerekmez.",
        "Система управления пакетами Debian устанавливает программы из архивов и поддерживает их в актуальном \
         состоянии. Списки пакетов регулярно обновляются, а зависимости между пакетами разрешаются \
         автоматически.",
        "Система керування пакунками Debian встановлює програми з архівів і підтримує їх в актуальному стані. \
         Списки пакунків регулярно оновлюються, а залежності між пакунками розв'язуються автоматично, і система \
         завжди лишається узгодженою.",
        "Το σύστημα διαχείρισης πακέτων εγκαθιστά τα προγράμματα από τα αρχεία και τα διατηρεί ενημερωμένα. Οι \
         λίστες πακέτων ενημερώνονται τακτικά και οι εξαρτήσεις μεταξύ των πακέτων επιλύονται αυτόματα.",
    ];

    #[test]
    fn a_file_of_each_language_does_not_multiply_a_querys_readings() {
        let documents = PACKAGES.iter().enumerate().map(|(i, text)| document(&format!("{i}.md"), None, &[text]));
        let (_dir, fulltext) = index(documents.collect());
        let told: BTreeSet<Languages> = PACKAGES.iter().map(|text| language::detect(text)).collect();
        assert!(told.len() >= 12, "{told:?}");
        for query in [
            "installed packages archives dependencies regularly",
            "Pakete Abhängigkeiten automatisch aufgelöst",
            "пакеты packages архивы archives",
            "パッケージ",
        ] {
            let readings = fulltext.documents.readings(query).unwrap();
            assert!(readings.len() <= language::MAX_READINGS, "{query}: {} readings", readings.len());
            assert!(readings.iter().any(|r| r.languages.latin == Language::English), "{query}");
        }
        // Each is still found by its own words in a question that tells its language.
        for (query, want) in [
            ("Wie werden die Paketlisten aktualisiert", "5.md#0"),
            ("Comment les listes de paquets sont-elles mises à jour", "4.md#0"),
            ("Come vengono aggiornati gli elenchi dei pacchetti", "7.md#0"),
        ] {
            let found = paths(&fulltext.search(query, 5, None).unwrap());
            assert_eq!(found.first().map(String::as_str), Some(want), "{query}: {found:?}");
        }
    }

    #[test]
    fn each_chunk_is_found_by_its_own_words_whatever_the_words_before() {
        // The chunk ends count words as the analyzer numbers them: punctuation,
        // stop words, camelCase, long and non-Latin words must not shift them.
        let long = "x".repeat(60);
        let fillers = [
            "the of and",
            "getUserName() -> HTTPServer",
            "snake_case::path/to.rs",
            "日本語 テキスト café naïve",
            &long,
            "a-b-c 1.2.3 --flag {{x}}",
            "",
            "\u{2028}\t\u{a0}",
            "IL-6 0-dimensional",
            "'quoted' \"twice\"",
        ];
        let numbers = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];
        let texts: Vec<String> = fillers.iter().zip(numbers).map(|(f, n)| format!("{f} marker{n} {f}")).collect();
        let chunks: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (_dir, fulltext) = index(vec![document("a.md", None, &chunks)]);
        for (i, number) in numbers.iter().enumerate() {
            let hits = fulltext.search(&format!("marker{number}"), 5, None).unwrap();
            assert_eq!(paths(&hits), [format!("a.md#{i}")], "marker{number}");
        }
        // Overlapping chunks: the overlap's words count for the earlier chunk.
        let overlapping = vec![(
            DocumentRecord { path: "b.md".into(), ..Default::default() },
            vec![chunk("red green blue", 0), chunk("blue yellow", 10)],
        )];
        let (_dir, fulltext) = index(overlapping);
        assert_eq!(paths(&fulltext.search("blue", 5, None).unwrap()), ["b.md#0"]);
        assert_eq!(paths(&fulltext.search("yellow", 5, None).unwrap()), ["b.md#1"]);
    }

    #[test]
    fn overlapping_chunks_make_one_document_text() {
        // "quick brown fox" then a chunk starting again at "brown".
        let chunks = [chunk("the quick brown", 0), chunk("brown fox jumps", 10)];
        assert_eq!(document_text(&chunks), ("the quick brown\n fox jumps\n".to_string(), vec![3, 5]));
        // Chunk texts that are not the ranges they claim are taken whole.
        let odd = [chunk("héllo", 0), ChunkRecord { text: "é".into(), start: 2, end: 9 }];
        assert_eq!(document_text(&odd), ("héllo\né\n".to_string(), vec![1, 2]));
        let all_at_zero = [chunk("Buy milk.", 0), chunk("Connecting fails.", 0)];
        assert_eq!(document_text(&all_at_zero), ("Buy milk.\nConnecting fails.\n".to_string(), vec![2, 4]));
        assert_eq!(document_text(&[]), (String::new(), Vec::new()));
    }

    #[test]
    fn path_words_drop_the_extension_only() {
        assert_eq!(path_words("pages/git-commit.md"), "pages/git-commit");
        assert_eq!(path_words("src/lib.rs"), "src/lib");
        assert_eq!(path_words(".bashrc"), ".bashrc");
        assert_eq!(path_words("a.b/README"), "a.b/README");
    }

    #[test]
    fn documents_rank_whole_and_their_chunks_follow_their_own_scores() {
        // a holds all three words, one per chunk; b two of them in one chunk. By chunk
        // alone b's would lead (two words against one); scored whole, a does.
        let (_dir, fulltext) = index(vec![
            document("a.md", None, &["alpha one", "beta two", "gamma three"]),
            document("b.md", None, &["alpha beta four"]),
            document("c.md", None, &["unrelated text"]),
        ]);
        let hits = fulltext.search("alpha beta gamma", 10, None).unwrap();
        assert_eq!(hits[0].path, "a.md", "{hits:?}");
        // Within a, the chunk with the rarest word comes first.
        assert_eq!(hits[0].ordinal, 2, "{hits:?}");
        let mut found = paths(&hits);
        found.sort();
        assert_eq!(found, ["a.md#0", "a.md#1", "a.md#2", "b.md#0"]);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert_eq!(fulltext.generation().unwrap(), 7);
    }

    #[test]
    fn file_names_titles_and_identifiers_are_searchable() {
        let (_dir, fulltext) = index(vec![
            document("pages/tar.md", Some("Archiving utility"), &["create and extract archives"]),
            document("src/user.rs", None, &["fn getUserName() -> String"]),
            document("notes/other.md", None, &["nothing to see"]),
        ]);
        // Matched only by its file name: found, represented by its first chunk.
        assert_eq!(paths(&fulltext.search("tar", 5, None).unwrap()), ["pages/tar.md#0"]);
        assert_eq!(paths(&fulltext.search("archiving", 5, None).unwrap()), ["pages/tar.md#0"]);
        assert_eq!(paths(&fulltext.search("user name", 5, None).unwrap()), ["src/user.rs#0"]);
        assert_eq!(paths(&fulltext.search("getUserName", 5, None).unwrap()), ["src/user.rs#0"]);
    }

    #[test]
    fn an_identifier_ranks_the_file_that_holds_it_as_written_first() {
        let (_dir, fulltext) = index(vec![
            document("notes.md", None, &["write it down, write again: the transaction log, a transaction id, write"]),
            document(
                "src/db.rs",
                None,
                &["fn commit(&self) -> Result<()> { self.inner.write_transaction()?.commit() }"],
            ),
        ]);
        for query in ["write_transaction", "inner.write_transaction()", "how is write_transaction used"] {
            assert_eq!(paths(&fulltext.search(query, 5, None).unwrap())[0], "src/db.rs#0", "{query}");
        }
    }

    #[test]
    fn hyphenated_words_are_words_and_quotes_make_phrases() {
        let (_dir, fulltext) = index(vec![
            document("a.md", None, &["dimensional analysis of 0 defects in materials"]),
            document("b.md", None, &["unrelated text"]),
        ]);
        assert_eq!(plain_words("IL-6 \"x-ray\" text:y -z"), "IL 6 \"IL 6\" \"x ray\" text y \"text y\" z");
        assert_eq!(plain_words("write_txn(\"a b"), "write txn \"write txn\" a b");
        assert_eq!(plain_words("plain words, only"), "plain words only");
        assert_eq!(paths(&fulltext.search("0-dimensional", 5, None).unwrap()), ["a.md#0"]);
        assert_eq!(paths(&fulltext.search("\"dimensional analysis\"", 5, None).unwrap()), ["a.md#0"]);
        assert!(fulltext.search("\"analysis dimensional\"", 5, None).unwrap().is_empty());
        // Syntax is not syntax: no error, just words.
        assert_eq!(paths(&fulltext.search("path:defects (", 5, None).unwrap()), ["a.md#0"]);
    }

    #[test]
    fn a_word_matches_whatever_its_casing() {
        let (_dir, fulltext) = index(vec![
            document("a.md", None, &["FoxP3 expression in T cells"]),
            document("b.md", None, &["FOXP3 is a transcription factor"]),
        ]);
        for query in ["FoxP3", "FOXP3", "foxp3"] {
            let mut found = paths(&fulltext.search(query, 5, None).unwrap());
            found.sort();
            assert_eq!(found, ["a.md#0", "b.md#0"], "{query}");
        }
    }

    #[test]
    fn allowed_paths_k_and_changes_are_honoured() {
        let (_dir, fulltext) =
            index(vec![document("a.md", None, &["apple pie", "apple tart"]), document("b.md", None, &["apple juice"])]);
        let only_b: BTreeSet<String> = ["b.md".to_string()].into();
        assert_eq!(paths(&fulltext.search("apple", 10, Some(&only_b)).unwrap()), ["b.md#0"]);
        assert!(fulltext.search("apple", 10, Some(&BTreeSet::new())).unwrap().is_empty());
        assert_eq!(fulltext.search("apple", 2, None).unwrap().len(), 2);
        assert!(fulltext.search("apple", 0, None).unwrap().is_empty());
        // b replaced, a removed: both grains follow.
        let (b, chunks) = document("b.md", None, &["orange juice"]);
        let delta = Delta { generation: 8, full: false, documents: vec![(b, chunks)], removed: vec!["a.md".into()] };
        fulltext.apply(&delta).unwrap();
        assert!(fulltext.search("apple", 10, None).unwrap().is_empty());
        assert_eq!(paths(&fulltext.search("orange", 10, None).unwrap()), ["b.md#0"]);
        assert_eq!(fulltext.generation().unwrap(), 8);
    }
}
