//! Each JSON tool's response: the searches, the similar documents, context
//! and decisions, the sources and the index's status. Tools build these, so
//! the fields the host reads (and the output schemas derived from them)
//! cannot drift from the fields the tools write.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A passage as Cortext's tools give it (seeds 000-002).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Passage {
    /// The conversation folder (e.g. `001-auth-patterns`), or the file name outside conversations.
    pub conversation: String,
    /// Cosine similarity, higher is closer.
    pub score: f64,
    /// The matching chunk: a prose passage or a whole code unit (cut at 24 KiB); for a similar
    /// document, its first passage.
    pub text: String,
    /// Workspace-relative path of the document.
    pub source_path: String,
    /// Conversation type.
    #[serde(rename = "type")]
    pub conversation_type: Option<String>,
    /// Conversation date folder.
    pub date: Option<String>,
    /// The document's title.
    pub title: Option<String>,
    /// The chunk's position in its document (search results only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_index: Option<u32>,
    /// Where the passage sits: `path:first-last` lines, 1-based (left out when the file changed since indexing); in a PDF, deck or workbook its pages, slides or sheets (`report.pdf p. 14`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// `search_semantic`'s response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SemanticResults {
    /// Always true in a result.
    pub success: bool,
    /// The query as given.
    pub query: String,
    /// Passages returned.
    pub num_results: usize,
    /// Best first.
    pub results: Vec<Passage>,
    /// More passages match than were returned.
    pub more_results: bool,
    /// What to do next, when there is something to say (nothing embedded, more results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `get_similar`'s response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimilarDocuments {
    /// Always true in a result.
    pub success: bool,
    /// The document compared with.
    pub source: String,
    /// Documents returned.
    pub num_results: usize,
    /// Most similar first; `text` is each one's first passage.
    pub similar: Vec<Passage>,
    /// How much of the store was compared, when files are still being embedded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A keyword match as `search_workspace` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LineMatch {
    /// The conversation folder, outside conversations none.
    pub conversation: Option<String>,
    /// Conversation type.
    #[serde(rename = "type")]
    pub conversation_type: Option<String>,
    /// Conversation date folder.
    pub date: Option<String>,
    /// The file's name.
    pub file: String,
    /// The matching line's number, from 1.
    pub line: u64,
    /// The line, trimmed and cut.
    pub text: String,
    /// Workspace-relative path.
    pub path: String,
}

/// `search_workspace`'s response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeywordResults {
    /// Always true in a result.
    pub success: bool,
    /// The query as given.
    pub query: String,
    /// Matches returned.
    pub num_results: usize,
    /// More lines match than were returned.
    pub more_results: bool,
    /// Files read.
    pub files_searched: u64,
    /// Files left out (binary or too large).
    pub files_skipped: u64,
    /// In file order.
    pub results: Vec<LineMatch>,
}

/// Where a seed-003 result comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceRef {
    /// The file's name.
    pub filename: String,
    /// Workspace-relative path.
    pub filepath: String,
    /// MIME type.
    pub file_type: String,
    /// Stable id of the document (from its path).
    pub file_id: String,
    /// The chunk's position in the document, for chunk results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_index: Option<u32>,
    /// Where the chunk sits: `path:first-last` lines, 1-based (left out when the file changed since indexing); in a PDF, deck or workbook its pages, slides or sheets (`report.pdf p. 14`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// One result of seed 003's `search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResult {
    /// Position, from 1.
    pub rank: usize,
    /// The chunk's text.
    pub content: String,
    /// 0..1, comparable within one response.
    pub relevance_score: f64,
    /// Where it comes from.
    pub source: SourceRef,
    /// Frontmatter fields, plus title, type and date when known.
    pub metadata: BTreeMap<String, String>,
}

/// Seed 003's `search` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResults {
    /// The query as searched.
    pub query: String,
    /// `semantic`, `hybrid` or `fulltext`.
    pub search_type: String,
    /// Results returned.
    pub results_count: usize,
    /// Best first.
    pub results: Vec<SearchResult>,
    /// How the search ran (method, limit, fusion).
    pub search_info: Value,
}

/// An indexed document as `list_sources` gives it (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IndexedSource {
    /// Stable id of the document (from its path).
    pub id: String,
    /// The file's name.
    pub name: String,
    /// Workspace-relative path.
    pub path: String,
    /// MIME type.
    pub file_type: String,
    /// Size in bytes.
    pub size: u64,
    /// Where documents come from (`file`).
    pub source_type: String,
    /// How it came in: `indexer`, or `file_watcher` when `serve --watch` indexed it last.
    pub source_method: String,
    /// The file's modification time (RFC 3339): not every filesystem keeps creation times.
    pub created_at: String,
    /// When it was embedded (RFC 3339).
    pub indexed_at: String,
    /// Its title, when it has one.
    pub title: Option<String>,
    /// Chunks embedded.
    pub chunks: u32,
}

/// Sources sharing a file type or source type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceGroup {
    /// The shared value.
    pub group: String,
    /// Sources in it.
    pub count: usize,
    /// The sources.
    pub sources: Vec<IndexedSource>,
}

/// Totals over every indexed document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceStatistics {
    /// Documents indexed.
    pub total_documents: usize,
    /// Chunks indexed.
    pub total_chunks: u64,
    /// Bytes of the indexed files.
    pub total_size_bytes: u64,
    /// The same in MB, four decimals.
    pub total_size_mb: f64,
    /// Documents per MIME type.
    pub file_types: BTreeMap<String, u64>,
    /// Documents per source type.
    pub source_types: BTreeMap<String, u64>,
    /// Documents per way they came in.
    pub source_methods: BTreeMap<String, u64>,
    /// When the oldest was embedded, milliseconds since the Unix epoch.
    pub oldest_document: Option<i64>,
    /// When the newest was embedded, milliseconds since the Unix epoch.
    pub newest_document: Option<i64>,
}

/// `list_sources`' response (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceList {
    /// Documents indexed (passing the filter).
    pub total_sources: usize,
    /// Documents returned (at most the limit).
    pub returned_sources: usize,
    /// The returned documents, in path order.
    pub sources: Vec<IndexedSource>,
    /// The returned documents grouped, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouped_sources: Option<Vec<SourceGroup>>,
    /// Totals, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<SourceStatistics>,
}

/// A document embedded lately.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecentEmbedding {
    /// Workspace-relative path.
    pub path: String,
    /// When (RFC 3339).
    pub embedded_at: String,
    /// Chunks embedded.
    pub chunks: u32,
    /// Its title, when it has one.
    pub title: Option<String>,
}

/// Some paths, counted in full and listed up to a limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathList {
    /// How many there are.
    pub count: usize,
    /// The first of them.
    pub paths: Vec<String>,
}

/// What waits to be embedded or removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Pending {
    /// All of them.
    pub total: usize,
    /// Files not embedded yet.
    pub new: PathList,
    /// Files changed since they were embedded.
    pub changed: PathList,
    /// Embedded files that are gone.
    pub deleted: PathList,
}

/// Files that cannot be indexed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NotIndexed {
    /// How many.
    pub count: usize,
    /// The first of them, with why.
    pub files: Vec<crate::FileError>,
}

/// `get_embedding_status`' response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EmbeddingStatus {
    /// Always true in a result.
    pub success: bool,
    /// Chunks embedded.
    pub total_chunks: u64,
    /// Documents embedded.
    pub num_documents: u64,
    /// The store file on the host.
    pub db_path: String,
    /// The model the vectors come from, once any are stored.
    pub model: Option<String>,
    /// The documents embedded last, newest first.
    pub recent_embeddings: Vec<RecentEmbedding>,
    /// What waits.
    pub pending: Pending,
    /// Files that cannot be indexed.
    pub not_indexed: NotIndexed,
    /// Nothing pending.
    pub up_to_date: bool,
    /// The vector index as the server holds it; absent until it has loaded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_index: Option<VectorIndexState>,
}

/// The vector index's parts and background work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VectorIndexState {
    /// Live chunks searched through an HNSW graph.
    pub in_graphs: u64,
    /// Live chunks scanned exactly: the newest, and segments whose graph is still building.
    pub exact: u64,
    /// Chunks of removed or replaced documents still held (background merges drop them).
    pub tombstones: u64,
    /// Sealed segments.
    pub segments: u64,
    /// The background work running now, if any.
    pub building: Option<String>,
    /// Background jobs queued or running.
    pub queued: u64,
}

/// A conversation, or a document outside conversations, relevant to a topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelevantConversation {
    /// The conversation's name, or the file name outside conversations.
    pub conversation: String,
    /// Conversation type.
    #[serde(rename = "type")]
    pub conversation_type: Option<String>,
    /// Conversation date folder.
    pub date: Option<String>,
    /// The conversation folder, or the file outside conversations.
    pub path: String,
    /// The best-matching file.
    pub source_path: String,
    /// Cosine similarity (semantic) or keyword hits (keyword).
    pub score: f64,
    /// The passages that make it relevant.
    pub excerpts: Vec<String>,
}

/// `get_context`'s response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Context {
    /// Always true in a result.
    pub success: bool,
    /// The topic as given.
    pub topic: String,
    /// How it was found: `hybrid` (the index, by meaning and keywords), or `keyword` while nothing is embedded.
    #[schemars(extend("enum" = ["hybrid", "keyword"]))]
    pub method: String,
    /// Conversations returned.
    pub num_results: usize,
    /// Most relevant first.
    pub results: Vec<RelevantConversation>,
    /// What to do next, when there is something to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A past decision that matches a topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// Where it was found: the decisions log or a conversation's decision section.
    #[schemars(extend("enum" = ["decisions_log", "conversation"]))]
    pub source: String,
    /// Workspace-relative path.
    pub source_path: String,
    /// The conversation's name, for a conversation.
    pub conversation: Option<String>,
    /// Conversation type.
    #[serde(rename = "type")]
    pub conversation_type: Option<String>,
    /// Conversation date folder.
    pub date: Option<String>,
    /// The section's heading.
    pub heading: String,
    /// The heading's line, from 1.
    pub line: usize,
    /// Keyword hits of the topic in the section.
    pub score: f64,
    /// The whole section (cut at 1,500 bytes).
    pub text: String,
}

/// `get_decision_history`'s response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionHistory {
    /// Always true in a result.
    pub success: bool,
    /// The topic as given.
    pub topic: String,
    /// Decisions returned.
    pub num_results: usize,
    /// More decisions match than were returned.
    pub more_results: bool,
    /// Best match first.
    pub decisions: Vec<Decision>,
    /// The decisions log read, when there is one.
    pub decisions_log: Option<String>,
    /// What to do next, when there is something to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A document close in meaning to a reference text (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimilarDocument {
    /// Position, from 1.
    pub rank: usize,
    /// Cosine similarity of its closest passage.
    pub similarity_score: f64,
    /// The start of that passage.
    pub content_preview: String,
    /// The whole passage.
    pub full_content: String,
    /// Where it comes from.
    pub source: SourceRef,
    /// Frontmatter fields, plus title, type and date when known.
    pub metadata: BTreeMap<String, String>,
}

/// How `search_similar` searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimilarSearchInfo {
    /// The least similarity returned.
    pub similarity_threshold: f64,
    /// The source left out, when one was.
    pub excluded_source: Option<String>,
    /// Always `semantic_similarity`.
    pub search_method: String,
    /// How much of the store was compared, when files are still being embedded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
}

/// `search_similar`'s response (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimilarToText {
    /// The text compared with.
    pub reference_text: String,
    /// Most similar first, one per document.
    pub similar_documents: Vec<SimilarDocument>,
    /// Documents above the threshold (before the limit).
    pub total_found: usize,
    /// How it searched.
    pub search_info: SimilarSearchInfo,
}

/// What a question asks for, and the sentences that answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtractedInformation {
    /// The kind of question, from its opening words.
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["definition_or_fact", "process_or_method", "temporal", "location",
        "person_or_entity", "explanation_or_reason", "general_inquiry"]))]
    pub kind: String,
    /// The sentences that bear on it, best first.
    pub relevant_excerpts: Vec<String>,
    /// Sentences that define the term a what/define question asks about.
    pub definition_candidates: Vec<String>,
}

/// A passage retrieved for a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextChunk {
    /// Position, from 1.
    pub rank: usize,
    /// The chunk's text.
    pub content: String,
    /// 0..1, comparable within one response.
    pub relevance_score: f64,
    /// Where it comes from.
    pub source: SourceRef,
}

/// How `search_by_question` searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionSearchInfo {
    /// Chunks retrieved.
    pub total_context_chunks: usize,
    /// `semantic` or `hybrid`.
    pub search_method: String,
    /// The file types searched: `"all"`, or the list given.
    pub sources_searched: Value,
    /// The most chunks asked for.
    pub context_limit: u64,
    /// How much of the store the search by meaning covered, when files are still being embedded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
}

/// How much of the store a search by meaning covered while files are still being embedded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Coverage {
    /// Chunks with vectors, which the search by meaning saw.
    pub embedded_chunks: u64,
    /// Chunks stored, every one searchable by keyword.
    pub stored_chunks: u64,
    /// The same in words.
    pub message: String,
}

/// `search_by_question`'s response (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionContext {
    /// The question as given.
    pub question: String,
    /// Its kind and the sentences that answer it.
    pub extracted_information: ExtractedInformation,
    /// 0-100, from the retrieval scores and how much of the question the excerpts cover.
    #[schemars(range(max = 100))]
    pub confidence: u64,
    /// The passages retrieved, best first.
    pub context_chunks: Vec<ContextChunk>,
    /// How it searched.
    pub search_info: QuestionSearchInfo,
    /// Whether anything was retrieved.
    pub context_found: bool,
    /// The passages' text, joined.
    pub raw_context: String,
}
