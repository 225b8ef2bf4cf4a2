//! Bringing the index in line with the workspace: the shared engine of
//! `embed_document` and `embed_workspace` (and `ragbox index`).
//!
//! Files whose content hash matches the stored one are skipped; the rest are
//! read, chunked and embedded in batches across documents (the model is
//! fastest on full batches), and each document is committed on its own, so an
//! interrupted run keeps what it finished and the next run resumes there.
//! Stored documents whose file is gone are removed.
//!
//! A large change (a first index, a checkout) is stored for keyword search
//! first: every file cut by estimated token counts and stored without
//! vectors in a quick pass, so keyword search covers it in seconds, then
//! embedded file by file, each replacing its keyword-only version.

use crate::bindings::ragbox::tools::corpus::{self, Chunk, Document, NewDocument};
use crate::bindings::ragbox::tools::embedder::{self, EmbedKind};
use crate::bindings::ragbox::tools::extract;
use crate::bindings::ragbox::tools::types::ErrorCode;
use crate::host;
use crate::indexing::chunk::{Sizes, chunk};
use crate::indexing::document::{Assembled, assemble, prepare, prepare_extracted};
use crate::indexing::{code, skill, walk};
use crate::tool::text::looks_binary;
use ragbox_protocol::{FileError, IndexReport};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Chunks embedded per call to the model.
const BATCH_CHUNKS: usize = 64;
/// Most texts one `embedder.embed` call takes (the host's limit).
const EMBED_CALL_TEXTS: usize = 4096;
/// Documents stored per transaction at most (many small or empty files).
const BATCH_DOCUMENTS: usize = 256;
/// Text stored per transaction at most by the keyword-first pass.
const BATCH_BYTES: usize = 32 << 20;
/// Files to embed from which a run stores them for keyword search first:
/// fewer are embedded in seconds anyway.
const KEYWORD_FIRST_AT: usize = 32;

/// What a run did.
#[derive(Debug, Default)]
pub struct Report {
    /// Documents embedded (new or changed).
    pub embedded: u64,
    /// Documents unchanged since they were embedded.
    pub skipped: u64,
    /// Stored documents whose file is gone, removed from the index.
    pub removed: u64,
    /// Indexable files in scope (binary files are not).
    pub total_files: u64,
    /// Chunks written.
    pub chunks: u64,
    /// Files that could not be indexed, with the reason.
    pub errors: Vec<(String, String)>,
    /// True when the run stopped early (cancelled or out of time): run again to finish.
    pub stopped_early: bool,
}

impl Report {
    /// The Cortext result: `success`, `embedded`, `skipped`, `total_files`,
    /// `errors` (null when none) as Cortext's embedding tools give them, plus `removed`,
    /// `chunks` and, when the run stopped early, `complete: false` and why.
    pub fn result(&self) -> IndexReport {
        let errors = (!self.errors.is_empty()).then(|| {
            let errors = self.errors.iter();
            errors.map(|(path, error)| FileError { path: path.clone(), error: error.clone() }).collect()
        });
        IndexReport {
            success: true,
            embedded: self.embedded,
            skipped: self.skipped,
            total_files: self.total_files,
            removed: self.removed,
            chunks: self.chunks,
            errors,
            complete: !self.stopped_early,
            message: self.stopped_early.then(|| {
                "stopped before every file was embedded (cancelled or out of time); \
                 what was embedded is kept: run again to continue"
                    .to_string()
            }),
        }
    }
}

/// A file's content as read for indexing.
struct Content {
    /// Its text; empty for a document an extractor reads (see `document`).
    text: String,
    /// The bytes of a document an extractor reads (PDF, Word, …), until it is read.
    document: Option<Vec<u8>>,
    hash: String,
    size: u64,
    mtime: i64,
    /// When it was read (seconds since the Unix epoch), for [`unchanged_by_stat`].
    read_at: i64,
}

/// How the files in scope compare with the index.
#[derive(Debug, Default)]
pub struct Survey {
    /// Indexable files not in the index yet.
    pub new: Vec<String>,
    /// Indexed files whose content changed.
    pub changed: Vec<String>,
    /// Indexed files that are gone (or no longer indexable).
    pub deleted: Vec<String>,
    /// Files stored for keyword search only, unchanged since, whose vectors
    /// are still to be made (also in `new`: they are not embedded yet).
    pub keyword_only: BTreeSet<String>,
    /// Indexed files that are unchanged.
    pub unchanged: u64,
    /// Indexable files in scope.
    pub total_files: u64,
    /// Files that cannot be indexed, with the reason.
    pub errors: Vec<(String, String)>,
}

/// Every stored document, by path.
pub fn stored_documents() -> Result<BTreeMap<String, Document>, String> {
    let all = corpus::Filter {
        conversation_type: None,
        date_range: None,
        path_prefix: None,
        extensions: Vec::new(),
        metadata: Vec::new(),
    };
    Ok(corpus::list(&all)?.into_iter().map(|d| (d.path.clone(), d)).collect())
}

/// Which files an indexing run looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Only {
    /// Every indexable file.
    All,
    /// `SKILL.md` files only (a skills library indexed on its own).
    Skills,
}

impl Only {
    fn wants(self, path: &str) -> bool {
        self == Only::All || skill::is_skill(path)
    }
}

/// Compares the files under `scope` (workspace-relative; `.` for all) with
/// `stored`, by content hash.
pub fn survey(scope: &str, stored: &BTreeMap<String, Document>) -> Survey {
    survey_only(scope, Only::All, stored)
}

/// The files a run covers.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Everything under a workspace-relative folder or file (`.` for all).
    Under(&'a str),
    /// These workspace-relative files or folders, present or gone (what a watcher saw change).
    Paths(&'a [String]),
}

impl Scope<'_> {
    /// Whether the stored document at `path` falls in this scope.
    fn covers(&self, path: &str) -> bool {
        let under = |prefix: &str| {
            let prefix = prefix.trim_start_matches("./").trim_matches('/');
            prefix.is_empty() || prefix == "." || path == prefix || path.starts_with(&format!("{prefix}/"))
        };
        match self {
            Scope::Under(prefix) => under(prefix),
            Scope::Paths(paths) => paths.iter().any(|p| under(p)),
        }
    }

    /// How a walk error names the scope when it names no path.
    fn label(&self) -> String {
        match self {
            Scope::Under(prefix) => prefix.to_string(),
            Scope::Paths(paths) => paths.join(", "),
        }
    }
}

/// [`survey`] restricted to the files `only` wants.
pub fn survey_only(scope: &str, only: Only, stored: &BTreeMap<String, Document>) -> Survey {
    survey_scoped(Scope::Under(scope), only, stored)
}

/// Compares the files in `scope` that `only` wants with `stored`, by content hash.
pub fn survey_scoped(scope: Scope<'_>, only: Only, stored: &BTreeMap<String, Document>) -> Survey {
    survey_reading(scope, only, stored, Reading::Everything)
}

/// Which files a survey reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Every file not vouched for by size and mtime: `new` then holds no
    /// binary file and no SKILL.md that is not a skill (a status lists it).
    Everything,
    /// Files already stored, to compare hashes; of a new file only its
    /// first bytes, to leave binaries out: the run reads it when it indexes
    /// it (the first survey of a large tree read and hashed every byte only
    /// to learn that it was new). A new SKILL.md is read whole (parsed).
    Stored,
}

fn survey_reading(scope: Scope<'_>, only: Only, stored: &BTreeMap<String, Document>, reading: Reading) -> Survey {
    let mut survey = Survey::default();
    let mut on_disk = BTreeSet::new();
    // What the walk could not see is reported with the run, not only logged.
    let mut unseen = Vec::new();
    let mut on_error = |path: Option<String>, e: String| {
        let path = path.unwrap_or_else(|| scope.label());
        host::log(host::Level::Warn, &format!("walk: {path}: {e}"));
        unseen.push((path, e));
    };
    let entries = match scope {
        Scope::Under(root) => walk::files(root, &mut on_error),
        Scope::Paths(paths) => walk::files_at(paths, &mut on_error),
    };
    let walk_complete = unseen.is_empty();
    survey.errors.extend(unseen);
    for entry in entries {
        if !only.wants(&entry.path) {
            continue;
        }
        // A full walk trusts size and mtime where they can be trusted; a watcher's paths are read.
        if matches!(scope, Scope::Under(_))
            && let Some(d) = stored.get(&entry.path)
            && unchanged_by_stat(&entry, d)
            && indexed_as_now(&entry.path, d)
        {
            survey.total_files += 1;
            if !is_embedded(d) {
                // As stored for keyword search, and still to embed: not read again to learn that.
                survey.keyword_only.insert(entry.path.clone());
                on_disk.insert(entry.path.clone());
                survey.new.push(entry.path);
                continue;
            }
            survey.unchanged += 1;
            if let Some(reason) = unreadable(d) {
                survey.errors.push((entry.path.clone(), reason));
            }
            on_disk.insert(entry.path);
            continue;
        }
        let limit = max_bytes(&entry.path);
        if reading == Reading::Stored
            && entry.size <= limit
            && !stored.contains_key(&entry.path)
            && !skill::is_skill(&entry.path)
        {
            match sniff(&entry.path) {
                Ok(false) => continue, // binary: not indexable
                Ok(true) => survey.new.push(entry.path.clone()),
                Err(e) => survey.errors.push((entry.path.clone(), e)),
            }
            survey.total_files += 1;
            on_disk.insert(entry.path);
            continue;
        }
        let outcome = if entry.size > limit { Err(too_large(entry.size, limit)) } else { read(&entry.path) };
        let content = match outcome {
            Ok(None) => continue, // binary: not indexable
            Ok(Some(content)) => content,
            Err(e) => {
                survey.total_files += 1;
                on_disk.insert(entry.path.clone());
                survey.errors.push((entry.path, e));
                continue;
            }
        };
        survey.total_files += 1;
        // A SKILL.md that cannot be read as a skill is reported, not left "pending" forever;
        // left out of `on_disk`, an older stored version of it is removed.
        if skill::is_skill(&entry.path)
            && let Err(reason) = skill::parse(&content.text)
        {
            survey.errors.push((entry.path, reason));
            continue;
        }
        on_disk.insert(entry.path.clone());
        match stored.get(&entry.path) {
            Some(d) if d.content_hash == content.hash && indexed_as_now(&entry.path, d) => {
                if !is_embedded(d) {
                    survey.keyword_only.insert(entry.path.clone());
                    survey.new.push(entry.path);
                    continue;
                }
                survey.unchanged += 1;
                if let Some(reason) = unreadable(d) {
                    survey.errors.push((entry.path, reason));
                }
            }
            // Never embedded: still new, whatever its keyword-only version held.
            Some(d) if !is_embedded(d) => survey.new.push(entry.path),
            Some(_) => survey.changed.push(entry.path),
            None => survey.new.push(entry.path),
        }
    }
    // A file the walk could not see may still be there: only a complete walk removes documents.
    if walk_complete {
        survey.deleted =
            stored.keys().filter(|p| scope.covers(p) && only.wants(p) && !on_disk.contains(*p)).cloned().collect();
    }
    survey
}

/// The metadata key under which a document no extractor could read keeps why:
/// it is stored without chunks, so the same bytes are not read again on every
/// run, and each run and status still lists the file with that reason.
const UNREADABLE: &str = "ragbox.unreadable";

/// The metadata key of the extractor that read a document (`extract.identity`).
const EXTRACTOR: &str = "ragbox.extractor";

/// The extractor that reads the file at `path` now (asked once per extension and call).
fn extractor_of(path: &str) -> Option<String> {
    static KNOWN: std::sync::Mutex<BTreeMap<String, Option<String>>> = std::sync::Mutex::new(BTreeMap::new());
    let ext = crate::indexing::document::extension(path);
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    known.entry(ext).or_insert_with(|| extract::identity(path)).clone()
}

/// The value of metadata `key` of a stored document.
fn meta<'a>(stored: &'a Document, key: &str) -> Option<&'a str> {
    stored.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// The longest reason kept for a file that could not be read.
const MAX_REASON: usize = 500;

/// Whether the stored document's chunks have vectors (false while it is
/// stored for keyword search only: the host names no model for it).
pub fn is_embedded(stored: &Document) -> bool {
    stored.chunks == 0 || !stored.model_id.is_empty()
}

/// Whether the stored document is a file no extractor could read (kept without chunks).
pub fn is_unreadable(stored: &Document) -> bool {
    meta(stored, UNREADABLE).is_some()
}

/// Why the stored document's file could not be read, if it could not.
fn unreadable(stored: &Document) -> Option<String> {
    meta(stored, UNREADABLE).map(str::to_string)
}

/// The metadata key of when a document's file was read, seconds since the Unix epoch.
const READ_AT: &str = "ragbox.read_at";

/// Whether a file's size and mtime say it is unchanged since `stored` was
/// read, without reading it. Only when its mtime is of a second before the
/// one it was read in: a write in the same second as the read would have left
/// the mtime as it was (git's "racily clean" files).
fn unchanged_by_stat(entry: &walk::Entry, stored: &Document) -> bool {
    let read_at = stored.metadata.iter().find(|(k, _)| k == READ_AT).and_then(|(_, v)| v.parse::<i64>().ok());
    entry.mtime > 0
        && entry.size == stored.size
        && entry.mtime == stored.mtime
        && read_at.is_some_and(|read_at| entry.mtime < read_at)
}

/// Whether a stored document was cut the way its file is cut now: skills and
/// code indexed by an older ragbox as prose are re-embedded as whole units.
fn indexed_as_now(path: &str, stored: &Document) -> bool {
    // A notebook indexed as JSON before an extractor read it is read again.
    if is_document(path) != crate::indexing::document::is_extracted(&stored.metadata) {
        return false;
    }
    // A file one extractor could not read is tried again by another (or a newer one).
    if unreadable(stored).is_some() && meta(stored, EXTRACTOR) != extractor_of(path).as_deref() {
        return false;
    }
    let marker = if skill::is_skill(path) {
        skill::MARKER
    } else if crate::indexing::document::kind_of(path) == "code" {
        code::MARKER
    } else {
        return true;
    };
    stored.metadata.iter().any(|(k, v)| k == marker.0 && v == marker.1)
}

/// Brings the index in line with the files under `scope` (workspace-relative:
/// `.` for the whole workspace, a folder, or one file).
pub fn run(scope: &str) -> Result<Report, String> {
    run_only(scope, Only::All)
}

/// [`run`] restricted to the files `only` wants.
pub fn run_only(scope: &str, only: Only) -> Result<Report, String> {
    run_scoped(Scope::Under(scope), only)
}

/// Brings the index in line with the files in `scope` that `only` wants.
pub fn run_scoped(scope: Scope<'_>, only: Only) -> Result<Report, String> {
    let survey = survey_reading(scope, only, &stored_documents()?, Reading::Stored);
    let mut report = Report {
        skipped: survey.unchanged,
        total_files: survey.total_files,
        errors: survey.errors,
        ..Default::default()
    };
    for path in &survey.deleted {
        if corpus::remove(path)? {
            report.removed += 1;
        }
    }
    // New files only, and no extractor's documents: a changed file keeps its embedded
    // version (found by meaning) until it is replaced, and a PDF is read once, to embed it.
    let to_store: Vec<String> =
        survey.new.iter().filter(|p| !survey.keyword_only.contains(*p) && !is_document(p)).cloned().collect();
    let pending: Vec<String> = survey.new.into_iter().chain(survey.changed).collect();
    if pending.is_empty() {
        return Ok(report);
    }
    // Loaded only now: an unchanged workspace never waits for the model.
    let sizes = Sizes::for_model(embedder::model()?.max_tokens as usize);
    if to_store.len() >= KEYWORD_FIRST_AT {
        let message = format!("{} files to embed: storing them for keyword search first", to_store.len());
        host::log(host::Level::Info, &message);
        store_for_keywords(&to_store, sizes);
    }

    // Pass 2: embed what changed, a batch of chunks at a time.
    let total = pending.len() as u64;
    let mut batch: Vec<Pending> = Vec::new();
    let mut batch_chunks = 0;
    let mut done = 0u64;
    host::progress(0, Some(total), Some(&format!("{total} files to embed, {} unchanged", report.skipped)));
    for path in pending {
        if host::cancelled() {
            report.stopped_early = true;
            break;
        }
        let content = match read(&path) {
            Ok(Some(c)) => c,
            Ok(None) => {
                // A binary file, counted before it was read: not indexable.
                report.total_files = report.total_files.saturating_sub(1);
                continue;
            }
            Err(e) => {
                report.errors.push((path, e));
                continue;
            }
        };
        let mut content = content;
        let mut prepared = match content.document.take() {
            Some(bytes) => match extract::extract(&path, &bytes) {
                Ok(doc) => {
                    let assembled = assemble(doc.parts.iter().map(|p| (p.label.as_deref(), p.text.as_str())));
                    let mut prepared = prepare_extracted(&path, doc.title, doc.metadata, assembled);
                    prepared.metadata.extend(extractor_of(&path).map(|x| (EXTRACTOR.to_string(), x)));
                    prepared
                }
                Err(e) if e.code == ErrorCode::Cancelled => {
                    report.stopped_early = true;
                    break;
                }
                // The host could not run the extractor: the file is not at fault, and is read next run.
                Err(e) if e.code == ErrorCode::Internal => {
                    report.errors.push((path, e.message));
                    continue;
                }
                Err(e) => {
                    // Kept, without chunks, with why: the same bytes are not read again.
                    let nothing = Assembled { text: String::new(), parts: Vec::new() };
                    let mut prepared = prepare_extracted(&path, None, Vec::new(), nothing);
                    prepared
                        .metadata
                        .push((UNREADABLE.to_string(), crate::tool::text::truncate(&e.message, MAX_REASON)));
                    prepared.metadata.extend(extractor_of(&path).map(|x| (EXTRACTOR.to_string(), x)));
                    report.errors.push((path.clone(), e.message));
                    batch.push(Pending { path, content, chunks: Vec::new(), embed: Vec::new(), prepared });
                    continue;
                }
            },
            None => prepare(&path, &content.text),
        };
        let (chunks, embed) = match cut(&path, &content.text, &mut prepared, sizes, Tokens::Model) {
            Ok(cut) => cut,
            Err(e) => {
                report.errors.push((path, e));
                continue;
            }
        };
        batch_chunks += chunks.len();
        batch.push(Pending { path, content, chunks, embed, prepared });
        if batch_chunks >= BATCH_CHUNKS || batch.len() >= BATCH_DOCUMENTS {
            done += flush(&mut batch, &mut report)?;
            batch_chunks = 0;
            host::progress(done, Some(total), Some(&format!("embedded {done} of {total} files")));
        }
    }
    done += flush(&mut batch, &mut report)?;
    host::progress(done, Some(total), Some(&format!("embedded {done} of {total} files")));
    Ok(report)
}

/// Where a file's token starts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tokens {
    /// The model's tokenizer (`embedder.token-offsets`): chunks the model reads whole.
    Model,
    /// A quick estimate ([`crate::indexing::chunk::estimated_token_starts`]), for chunks
    /// stored for keyword search until the model's replace them.
    Estimated,
}

/// Where the tokens of `text` start.
fn token_starts(text: &str, tokens: Tokens) -> Result<Vec<u32>, String> {
    match tokens {
        Tokens::Model => embedder::token_offsets(text).map_err(|e| e.message),
        Tokens::Estimated => Ok(crate::indexing::chunk::estimated_token_starts(text)),
    }
}

/// Cuts a read file into its chunks and what to embed for each: a SKILL.md
/// whole (embedded by its intent), code into whole units, the rest into
/// blocks of at most `sizes.target` tokens. Fills in the kind, title and
/// metadata this learns. An error is the file's (not a skill, too long to tokenize).
/// Cut by [`Tokens::Estimated`], code and prose chunks come with nothing to
/// embed: they are stored for keyword search only.
fn cut(
    path: &str,
    text: &str,
    prepared: &mut crate::indexing::document::Prepared,
    sizes: Sizes,
    tokens: Tokens,
) -> Result<(Vec<Chunk>, Vec<String>), String> {
    if skill::is_skill(path) {
        // Parent-child: one chunk holding the whole SKILL.md, its vector from the intent.
        let parsed = skill::parse(text)?;
        prepared.kind = "skill";
        prepared.title = Some(parsed.name.clone());
        let extra = parsed.metadata(&skill::sibling_files(path));
        prepared.metadata.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
        prepared.metadata.extend(extra);
        let whole = Chunk { text: text.to_string(), start: 0, end: text.len() as u64 };
        return Ok((vec![whole], vec![parsed.intent_text()]));
    }
    if prepared.kind == "code" {
        return code_chunks(path, text, sizes, prepared, tokens);
    }
    // HTML is chunked by its visible text; everything else from after the frontmatter.
    let (body, base) = match &prepared.extracted {
        Some(text) => (text.as_str(), 0),
        None => (&text[prepared.body_start..], prepared.body_start),
    };
    let offsets = token_starts(body, tokens)?;
    let chunks: Vec<Chunk> = chunk(body, &offsets, sizes)
        .into_iter()
        .map(|s| Chunk {
            text: body[s.start..s.end].to_string(),
            start: (base + s.start) as u64,
            end: (base + s.end) as u64,
        })
        .collect();
    let embed = match tokens {
        Tokens::Model => chunks.iter().map(|c| c.text.clone()).collect(),
        Tokens::Estimated => Vec::new(),
    };
    Ok((chunks, embed))
}

/// Stores the files about to be embedded for keyword search first: read,
/// cut by estimated token counts and stored without vectors, a batch per
/// transaction, so keyword search covers a large change within seconds while
/// the model works through it (minutes, or hours for a big tree). Documents
/// an extractor reads (PDF, …) wait for the embedding pass, and so does
/// everything after a failure here (a shared PostgreSQL collection refuses
/// documents without vectors): this pass only brings keyword search forward.
fn store_for_keywords(paths: &[String], sizes: Sizes) {
    let total = paths.len() as u64;
    let mut batch: Vec<NewDocument> = Vec::new();
    let mut bytes = 0;
    let mut done = 0u64;
    // Told once a batch is stored: a store that refuses them says nothing about keywords.
    let message = |done: u64| format!("searchable by keyword: {done} of {total} files; embedding follows");
    for path in paths {
        if host::cancelled() {
            return;
        }
        done += 1;
        let Ok(Some(content)) = read(path) else { continue };
        if content.document.is_some() {
            continue;
        }
        let mut prepared = prepare(path, &content.text);
        let Ok((chunks, _)) = cut(path, &content.text, &mut prepared, sizes, Tokens::Estimated) else { continue };
        if chunks.is_empty() {
            continue;
        }
        bytes += content.text.len();
        batch.push(new_document(path.to_string(), content, prepared, chunks, Vec::new()));
        if batch.len() >= BATCH_DOCUMENTS || bytes >= BATCH_BYTES {
            if let Err(e) = corpus::put_many(&batch) {
                return host::log(host::Level::Info, &format!("not stored for keyword search first: {}", e.message));
            }
            batch.clear();
            bytes = 0;
            host::progress(done, Some(total), Some(&message(done)));
        }
    }
    if let Err(e) = corpus::put_many(&batch) {
        return host::log(host::Level::Info, &format!("not stored for keyword search first: {}", e.message));
    }
    host::progress(total, Some(total), Some(&message(total)));
    host::log(host::Level::Info, &format!("{total} files stored for keyword search; embedding them now"));
}

/// The document to store for a file read and cut: with one vector per
/// chunk, or none to store it for keyword search only.
fn new_document(
    path: String,
    content: Content,
    prepared: crate::indexing::document::Prepared,
    chunks: Vec<Chunk>,
    vectors: Vec<Vec<f32>>,
) -> NewDocument {
    let conversation = prepared.conversation;
    let mut metadata = prepared.metadata;
    metadata.push((READ_AT.to_string(), content.read_at.to_string()));
    NewDocument {
        path,
        content_hash: content.hash,
        size: content.size,
        mtime: content.mtime,
        kind: prepared.kind.to_string(),
        title: prepared.title,
        conversation_type: conversation.as_ref().map(|c| c.kind.clone()),
        date: conversation.map(|c| c.date),
        metadata,
        chunks,
        vectors,
    }
}

/// Symbols named in a code file's first chunk's vector (the model reads 256 tokens).
const EMBEDDED_SYMBOLS: usize = 24;
/// Symbols kept in a code file's metadata.
const LISTED_SYMBOLS: usize = 64;

/// A code file cut into whole units (see [`code`]), each embedded with the
/// file's path and its container's first line; the first also with the
/// symbols the file defines, so "where is X done" finds the file.
fn code_chunks(
    path: &str,
    text: &str,
    sizes: Sizes,
    prepared: &mut crate::indexing::document::Prepared,
    tokens: Tokens,
) -> Result<(Vec<Chunk>, Vec<String>), String> {
    let offsets = token_starts(text, tokens)?;
    let code = code::Code::scan(path, text);
    let symbols = code.top_level_symbols();
    if !symbols.is_empty() {
        let mut listed = symbols.iter().take(LISTED_SYMBOLS).cloned().collect::<Vec<_>>().join(", ");
        if symbols.len() > LISTED_SYMBOLS {
            listed.push_str(&format!(", … ({} in all)", symbols.len()));
        }
        prepared.metadata.push(("symbols".into(), listed));
    }
    prepared.metadata.push((code::MARKER.0.into(), code::MARKER.1.into()));
    let pieces = code.chunks(&offsets, sizes);
    let mut chunks = Vec::with_capacity(pieces.len());
    let mut embed = Vec::with_capacity(pieces.len());
    for (i, piece) in pieces.into_iter().enumerate() {
        let body = &text[piece.span.start..piece.span.end];
        chunks.push(Chunk { text: body.to_string(), start: piece.span.start as u64, end: piece.span.end as u64 });
        if tokens == Tokens::Estimated {
            // Stored for keyword search only: nothing is embedded from these chunks.
            continue;
        }
        let header = match (i, piece.context.is_empty()) {
            (0, _) if !symbols.is_empty() => {
                format!(
                    "{path} defines {}",
                    symbols.iter().take(EMBEDDED_SYMBOLS).cloned().collect::<Vec<_>>().join(", ")
                )
            }
            (_, false) => format!("{path} {}", piece.context),
            _ => path.to_string(),
        };
        embed.push(format!("{header}\n{body}"));
    }
    Ok((chunks, embed))
}

/// A document read, chunked and waiting for its vectors.
struct Pending {
    path: String,
    content: Content,
    chunks: Vec<Chunk>,
    /// What to embed for each chunk: its text, or a skill's intent.
    embed: Vec<String>,
    prepared: crate::indexing::document::Prepared,
}

/// Embeds every chunk in the batch in one call, then stores the batch's
/// documents in one transaction: an interrupted run loses at most one batch.
fn flush(batch: &mut Vec<Pending>, report: &mut Report) -> Result<u64, String> {
    let texts: Vec<String> = batch.iter().flat_map(|p| p.embed.iter().cloned()).collect();
    // Empty and whitespace-only files have no chunks: nothing for the model. A long
    // document's chunks go in several calls: the host takes so many texts at once.
    let mut vectors = Vec::with_capacity(texts.len());
    for slice in texts.chunks(EMBED_CALL_TEXTS) {
        vectors.extend(embedder::embed(slice, EmbedKind::Passage)?);
    }
    let mut vectors = vectors.into_iter();
    let mut documents = Vec::with_capacity(batch.len());
    let mut chunk_count = 0;
    let mut unreadable = 0;
    for Pending { path, content, chunks, embed, prepared } in batch.drain(..) {
        unreadable += u64::from(prepared.metadata.iter().any(|(k, _)| k == UNREADABLE));
        let doc_vectors: Vec<Vec<f32>> = vectors.by_ref().take(embed.len()).collect();
        chunk_count += chunks.len() as u64;
        documents.push(new_document(path, content, prepared, chunks, doc_vectors));
    }
    let stored = documents.len() as u64;
    if stored > 0 {
        corpus::put_many(&documents)?;
    }
    report.embedded += stored - unreadable;
    report.chunks += chunk_count;
    Ok(stored)
}

/// Largest document an extractor is handed (PDF, Word, …): such files run
/// larger than text, and their extractor has its own memory budget.
const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// The formats the host's extractors read (asked once per call).
fn document_formats() -> &'static [String] {
    static FORMATS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    FORMATS.get_or_init(extract::formats)
}

/// Whether an extractor reads the file at `path`.
fn is_document(path: &str) -> bool {
    let ext = crate::indexing::document::extension(path);
    !ext.is_empty() && document_formats().contains(&ext)
}

/// The largest file at `path` that is indexed.
fn max_bytes(path: &str) -> u64 {
    if is_document(path) { MAX_DOCUMENT_BYTES } else { walk::DEFAULT_MAX_FILE_BYTES }
}

/// Reads a file for indexing: `None` when it is binary, an error for a
/// document format that no extractor reads (old Word files, …). A document
/// an extractor reads is kept as bytes, read into text only when embedded.
fn read(path: &str) -> Result<Option<Content>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    let limit = max_bytes(path);
    if meta.len() > limit {
        return Err(too_large(meta.len(), limit));
    }
    let (mut file, mut bytes) = match opened(path, meta.len())? {
        Opened::Binary => return Ok(None),
        Opened::Indexable(file, head) => (file, head),
    };
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    let document = is_document(path);
    let hash = hex(&Sha256::digest(&bytes));
    let (_, mtime) = walk::stat(&meta);
    let size = bytes.len() as u64;
    let read_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    if document {
        return Ok(Some(Content { text: String::new(), document: Some(bytes), hash, size, mtime, read_at }));
    }
    // Invalid UTF-8 is read with replacement characters rather than refused.
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Some(Content { text, document: None, hash, size, mtime, read_at }))
}

/// Whether the file at `path` is indexable, from its first bytes (the same
/// answers as [`read`], without reading the rest).
fn sniff(path: &str) -> Result<bool, String> {
    Ok(matches!(opened(path, 0)?, Opened::Indexable(..)))
}

/// A file opened for indexing, its first bytes read.
enum Opened {
    /// Binary, and no document format anyone expects to be searchable.
    Binary,
    /// The open file, read up to [`crate::tool::text::BINARY_SNIFF_BYTES`], and those bytes.
    Indexable(std::fs::File, Vec<u8>),
}

/// Opens the file at `path` (about `size` long) and reads its first
/// [`crate::tool::text::BINARY_SNIFF_BYTES`]: a binary costs that small read, not a
/// full one. A binary in a document format no extractor reads (old Word
/// files, …) is an error that says so; other binaries are not indexable.
fn opened(path: &str, size: u64) -> Result<Opened, String> {
    use std::io::Read;
    let failed = |e: std::io::Error| format!("cannot read: {e}");
    let mut file = std::fs::File::open(path).map_err(failed)?;
    let mut head = Vec::with_capacity(size as usize + 1);
    (&mut file).take(crate::tool::text::BINARY_SNIFF_BYTES as u64).read_to_end(&mut head).map_err(failed)?;
    if is_document(path) || !looks_binary(&head) {
        return Ok(Opened::Indexable(file, head));
    }
    match crate::indexing::document::unsupported(path, document_formats()) {
        Some(reason) => Err(reason),
        None => Ok(Opened::Binary),
    }
}

/// The content hash the index records: sha256, hex.
pub fn content_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn too_large(size: u64, limit: u64) -> String {
    format!("file is {:.1} MiB, over the {} MiB limit for indexing", size as f64 / (1 << 20) as f64, limit >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(size: u64, mtime: i64, read_at: Option<i64>) -> Document {
        let metadata = read_at.map(|r| (READ_AT.to_string(), r.to_string())).into_iter().collect();
        Document { size, mtime, metadata, ..crate::fixtures::document("notes/a.md") }
    }

    #[test]
    fn size_and_mtime_are_trusted_only_for_files_written_before_the_second_they_were_read() {
        let entry = walk::Entry { path: "notes/a.md".into(), size: 10, mtime: 1_000 };
        assert!(unchanged_by_stat(&entry, &stored(10, 1_000, Some(1_001))));
        // Written in the second it was read: a second write then would keep the mtime.
        assert!(!unchanged_by_stat(&entry, &stored(10, 1_000, Some(1_000))));
        // Indexed by a ragbox that did not record when it read.
        assert!(!unchanged_by_stat(&entry, &stored(10, 1_000, None)));
        assert!(!unchanged_by_stat(&entry, &stored(11, 1_000, Some(2_000))), "size changed");
        assert!(!unchanged_by_stat(&entry, &stored(10, 999, Some(2_000))), "mtime changed");
        let unknown = walk::Entry { mtime: 0, ..entry };
        assert!(!unchanged_by_stat(&unknown, &stored(10, 0, Some(2_000))), "no mtime to compare");
    }
}
