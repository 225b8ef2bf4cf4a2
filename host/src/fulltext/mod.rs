//! BM25 keyword search over chunk text (tantivy, English stemming).
//!
//! Derived from the store and rebuildable: each commit records the store
//! generation it reflects, and [`Fulltext::is_current`] tells when a rebuild
//! is due. tantivy allows one writer per index across processes, so a busy
//! writer lock is retried, as the store does.

use crate::store::TextDelta;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tantivy::collector::TopDocs;
use tantivy::directory::error::LockError;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser, TermSetQuery};
use tantivy::schema::{Field, INDEXED, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term, doc};

/// Memory the writer may buffer before flushing a segment.
const WRITER_BUDGET: usize = 50 << 20;

/// Errors from the fulltext index.
#[derive(Debug, thiserror::Error)]
pub enum FulltextError {
    /// Another process held the writer lock for longer than the retry window.
    #[error("the keyword index at {0} stayed busy (another ragbox process is writing); try again")]
    Busy(PathBuf),
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

/// The keyword index in one folder.
pub struct Fulltext {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    path: Field,
    ordinal: Field,
    text: Field,
    wait: Duration,
}

/// The text analyzer's name in the schema; a new name means a new format.
const ANALYZER: &str = "en_stem_stop";

/// English as Lucene's EnglishAnalyzer reads it (what BM25 baselines such as
/// BEIR's use): words, lowercased, stop words dropped, Porter-stemmed.
fn analyzer() -> TextAnalyzer {
    let builder =
        TextAnalyzer::builder(SimpleTokenizer::default()).filter(RemoveLongFilter::limit(40)).filter(LowerCaser);
    match StopWordFilter::new(Language::English) {
        Some(stop) => builder.filter(stop).filter(Stemmer::new(Language::English)).build(),
        None => builder.filter(Stemmer::new(Language::English)).build(),
    }
}

impl Fulltext {
    /// Opens (creating if needed) the index in `dir`.
    pub fn open(dir: &Path) -> Result<Self, FulltextError> {
        let fail = |e: &dyn std::fmt::Display| FulltextError::Index { path: dir.to_path_buf(), message: e.to_string() };
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        let mut schema = Schema::builder();
        let path = schema.add_text_field("path", STRING | STORED);
        let ordinal = schema.add_u64_field("ordinal", STORED | INDEXED);
        let text_options = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(tantivy::schema::IndexRecordOption::WithFreqsAndPositions),
        );
        let text = schema.add_text_field("text", text_options);
        let schema = schema.build();
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| fail(&e))?;
        let index = match Index::open_or_create(directory, schema.clone()) {
            Ok(index) => index,
            // Written by an older ragbox with another schema or analyzer: the
            // index is derived, so start it over and let the store fill it.
            Err(tantivy::TantivyError::SchemaError(why)) => {
                tracing::warn!("keyword index {} has an older format ({why}); rebuilding it", dir.display());
                std::fs::remove_dir_all(dir).map_err(|e| fail(&e))?;
                std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
                let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| fail(&e))?;
                Index::create(directory, schema, tantivy::IndexSettings::default()).map_err(|e| fail(&e))?
            }
            Err(e) => return Err(fail(&e)),
        };
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(|e| fail(&e))?;
        Ok(Self { dir: dir.to_path_buf(), index, reader, path, ordinal, text, wait: Duration::from_secs(30) })
    }

    /// The store generation the last commit reflects (0 for a new index).
    pub fn generation(&self) -> Result<u64, FulltextError> {
        let metas = self.index.load_metas().map_err(|e| self.err(e))?;
        Ok(metas.payload.and_then(|p| p.parse().ok()).unwrap_or(0))
    }

    /// Applies what changed in the store (from
    /// [`crate::store::Store::text_delta`] at [`Self::generation`]) in one commit.
    /// Re-applying a delta is harmless: each changed path is replaced whole.
    pub fn apply(&self, delta: &TextDelta) -> Result<(), FulltextError> {
        let writer = self.writer()?;
        if delta.full {
            writer.delete_all_documents().map_err(|e| self.err(e))?;
        }
        for path in &delta.removed {
            writer.delete_term(Term::from_field_text(self.path, path));
        }
        for (doc, chunks) in &delta.documents {
            writer.delete_term(Term::from_field_text(self.path, &doc.path));
            let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
            self.add(&writer, &doc.path, &texts)?;
        }
        self.commit(writer, delta.generation)
    }

    /// The `k` best chunks for `query`; with `allowed`, only chunks of those paths.
    /// Query syntax errors are forgiven: what parses is searched.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        allowed: Option<&BTreeSet<String>>,
    ) -> Result<Vec<FulltextHit>, FulltextError> {
        if k == 0 || allowed.is_some_and(|a| a.is_empty()) {
            return Ok(Vec::new());
        }
        self.reader.reload().map_err(|e| self.err(e))?;
        let parser = QueryParser::for_index(&self.index, vec![self.text]);
        let (parsed, _errors) = parser.parse_query_lenient(query);
        let scoped: Box<dyn Query> = match allowed {
            Some(paths) => {
                let terms = paths.iter().map(|p| Term::from_field_text(self.path, p));
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, parsed),
                    (Occur::Must, Box::new(TermSetQuery::new(terms)) as Box<dyn Query>),
                ]))
            }
            None => parsed,
        };
        let searcher = self.reader.searcher();
        let top = searcher.search(&scoped, &TopDocs::with_limit(k).order_by_score()).map_err(|e| match e {
            // The query asked for something the index cannot do (`text:*`, a range): a bad query, not a bad index.
            tantivy::TantivyError::InvalidArgument(_)
            | tantivy::TantivyError::SchemaError(_)
            | tantivy::TantivyError::FieldNotFound(_) => {
                FulltextError::Query { query: query.to_string(), message: e.to_string() }
            }
            e => self.err(e),
        })?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let stored: TantivyDocument = searcher.doc(address).map_err(|e| self.err(e))?;
            let path = stored.get_first(self.path).and_then(|v| v.as_str()).unwrap_or_default().to_string();
            let ordinal = stored.get_first(self.ordinal).and_then(|v| v.as_u64()).unwrap_or(0) as u32;
            hits.push(FulltextHit { path, ordinal, score });
        }
        Ok(hits)
    }

    fn add(&self, writer: &IndexWriter, path: &str, chunks: &[&str]) -> Result<(), FulltextError> {
        for (ordinal, text) in chunks.iter().enumerate() {
            writer
                .add_document(doc!(self.path => path, self.ordinal => ordinal as u64, self.text => *text))
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn commit(&self, mut writer: IndexWriter, generation: u64) -> Result<(), FulltextError> {
        let mut prepared = writer.prepare_commit().map_err(|e| self.err(e))?;
        prepared.set_payload(&generation.to_string());
        prepared.commit().map_err(|e| self.err(e))?;
        writer.wait_merging_threads().map_err(|e| self.err(e))
    }

    /// Takes the writer lock, waiting while another process holds it.
    fn writer(&self) -> Result<IndexWriter, FulltextError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            match self.index.writer_with_num_threads(1, WRITER_BUDGET) {
                Ok(writer) => return Ok(writer),
                Err(tantivy::TantivyError::LockFailure(LockError::LockBusy, _)) if started.elapsed() < self.wait => {
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
        FulltextError::Index { path: self.dir.clone(), message: e.to_string() }
    }
}
