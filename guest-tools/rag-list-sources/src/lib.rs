//! The RAG MCP Server's `list_sources`: the indexed documents with
//! their metadata, optionally grouped and with collection statistics.

use ragbox_sdk::conventions::rag_server::{self, document_id, mime_of};
use ragbox_sdk::corpus::{self, Document};
use ragbox_sdk::host::WorkspaceInfo;
use ragbox_sdk::indexing::indexer::stored_documents;
use ragbox_sdk::protocol::{IndexedSource, SourceGroup, SourceList, SourceStatistics};
use ragbox_sdk::tool::args;
use ragbox_sdk::tool::args::optional_count;
use ragbox_sdk::tool::text::rfc3339;
use ragbox_sdk::tool::{self, ToolSet};
use ragbox_sdk::{Annotations, CallError};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

const DEFAULT_LIMIT: u64 = 100;
const MAX_LIMIT: u64 = 1000;
/// Every document ragbox indexes is a file in the workspace.
const SOURCE_TYPE: &str = "local_file";
/// How it got into the index: by an indexing run (embed tools or `ragbox index`).
const SOURCE_METHOD: &str = "indexer";
/// The metadata key the host sets on documents written by the file watcher.
const SOURCE_METHOD_KEY: &str = "ragbox.source_method";

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// Include collection statistics
    #[schemars(extend("default" = false))]
    include_stats: Option<bool>,
    /// Filter by source types (every ragbox source is "local_file")
    source_type_filter: Option<Vec<String>>,
    #[schemars(extend("enum" = ["source_type", "file_type"]))]
    group_by: Option<String>,
    /// Max sources to return
    #[serde(default, deserialize_with = "optional_count")]
    #[schemars(range(min = 1, max = MAX_LIMIT), extend("default" = DEFAULT_LIMIT))]
    limit: Option<u64>,
}

/// What to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupBy {
    SourceType,
    FileType,
}

struct Request {
    stats: bool,
    source_types: Option<Vec<String>>,
    group_by: Option<GroupBy>,
    limit: usize,
}

/// How the document came in: `file_watcher` when `serve --watch` indexed it
/// last (the host records that), `indexer` otherwise.
fn source_method(d: &Document) -> &str {
    d.metadata.iter().find(|(k, _)| k == SOURCE_METHOD_KEY).map_or(SOURCE_METHOD, |(_, v)| v.as_str())
}

fn indexed_source(d: &Document) -> IndexedSource {
    IndexedSource {
        id: document_id(&d.path),
        name: d.path.rsplit('/').next().unwrap_or(&d.path).to_string(),
        path: d.path.clone(),
        file_type: mime_of(&d.path).to_string(),
        size: d.size,
        source_type: SOURCE_TYPE.to_string(),
        source_method: source_method(d).to_string(),
        // The file's modification time: creation times are not kept by every filesystem.
        created_at: rfc3339(d.mtime.saturating_mul(1000)),
        indexed_at: rfc3339(d.embedded_at),
        title: d.title.clone(),
        chunks: d.chunks,
    }
}

fn counts<'a>(keys: impl Iterator<Item = &'a str>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for k in keys {
        *m.entry(k.to_string()).or_default() += 1;
    }
    m
}

fn run(r: &Request) -> Result<SourceList, String> {
    // Every source has the one source type: a filter keeps all of them or none.
    let wanted = r.source_types.as_ref().is_none_or(|types| types.iter().any(|t| t == SOURCE_TYPE));
    // Statistics need every document; a listing only its first page.
    let (total, docs): (usize, Vec<Document>) = match (wanted, r.stats) {
        (false, _) => (0, Vec::new()),
        (true, true) => {
            let all: Vec<Document> = stored_documents()?.into_values().collect();
            (all.len(), all)
        }
        (true, false) => (corpus::stats()?.documents as usize, corpus::page(None, r.limit as u32)?),
    };
    let returned: Vec<&Document> = docs.iter().take(r.limit).collect();
    let grouped_sources = r.group_by.map(|group_by| {
        let key = |d: &Document| match group_by {
            GroupBy::SourceType => SOURCE_TYPE,
            GroupBy::FileType => mime_of(&d.path),
        };
        let mut groups: BTreeMap<&str, Vec<IndexedSource>> = BTreeMap::new();
        for d in &returned {
            groups.entry(key(d)).or_default().push(indexed_source(d));
        }
        let groups = groups.into_iter();
        groups.map(|(group, sources)| SourceGroup { group: group.to_string(), count: sources.len(), sources }).collect()
    });
    let statistics = r.stats.then(|| {
        let size: u64 = docs.iter().map(|d| d.size).sum();
        SourceStatistics {
            total_documents: docs.len(),
            total_chunks: docs.iter().map(|d| u64::from(d.chunks)).sum::<u64>(),
            total_size_bytes: size,
            total_size_mb: rag_server::round(size as f64 / 1_048_576.0),
            file_types: counts(docs.iter().map(|d| mime_of(&d.path))),
            source_types: counts(docs.iter().map(|_| SOURCE_TYPE)),
            source_methods: counts(docs.iter().map(source_method)),
            oldest_document: docs.iter().map(|d| d.embedded_at).min(),
            newest_document: docs.iter().map(|d| d.embedded_at).max(),
        }
    });
    Ok(SourceList {
        total_sources: total,
        returned_sources: returned.len(),
        sources: returned.iter().map(|d| indexed_source(d)).collect(),
        grouped_sources,
        statistics,
    })
}

struct Tool;

impl ragbox_sdk::tool::Tool for Tool {
    const NAME: &'static str = "list_sources";
    const TITLE: &'static str = "List indexed sources";
    const DESCRIPTION: &'static str = "List all indexed documents with metadata (id, name, path, file type, size, \
        source type and method, created and indexed times), optionally grouped by file or source type and with \
        collection statistics.";
    const ANNOTATIONS: Annotations = tool::READS;
    const SET: ToolSet = ToolSet::RagServer;
    type Args = Args;
    type Request = Request;
    type Output = SourceList;

    fn check(a: Args) -> Result<Request, CallError> {
        let bad = rag_server::bad_parameter;
        let group_by = match a.group_by.as_deref() {
            None => None,
            Some("source_type") => Some(GroupBy::SourceType),
            Some("file_type") => Some(GroupBy::FileType),
            Some(other) => {
                return Err(bad(format!("unknown group_by {other:?}: use \"source_type\" or \"file_type\"")));
            }
        };
        let limit = args::count_in("limit", a.limit, DEFAULT_LIMIT, 1..=MAX_LIMIT).map_err(bad)?;
        Ok(Request {
            stats: a.include_stats.unwrap_or(false),
            source_types: a.source_type_filter,
            group_by,
            limit: limit as usize,
        })
    }

    fn run(request: Request, _workspace: &WorkspaceInfo) -> Result<SourceList, CallError> {
        run(&request).map_err(|e| rag_server::failed("ListSourcesFailed", e, "Check the index with `ragbox doctor`"))
    }
}

ragbox_sdk::export_tool!(Tool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_arguments() {
        let request = tool::decode::<Tool>;
        let err = |a: &str| tool::refusal::<Tool>(a).unwrap_or_else(|| panic!("{a} should be invalid"));
        assert_eq!(err(r#"{"limit":0}"#)["error"], "InvalidParameter");
        assert_eq!(err(r#"{"limit":1001}"#)["error"], "InvalidParameter");
        assert_eq!(err(r#"{"group_by":"size"}"#)["error"], "InvalidParameter");
        assert_eq!(err(r#"{"include_stats":"yes"}"#)["error"], "InvalidParameter");
        let r = request("{}").ok().unwrap();
        assert_eq!((r.stats, r.limit, r.group_by), (false, 100, None));
    }
}
