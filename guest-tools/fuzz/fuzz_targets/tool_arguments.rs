//! Every built-in tool's argument decoding (what `call` does before touching
//! the host) on arbitrary text and on JSON objects built from the input: no
//! input may panic, which in the sandbox would be a trap instead of a clear
//! tool error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

type Decode = fn(&str) -> Result<(), ragbox_sdk::CallError>;

const DECODERS: [(&str, Decode); 13] = [
    ("embed_document", embed_document::decode),
    ("embed_workspace", embed_workspace::decode),
    ("get_context", get_context::decode),
    ("get_decision_history", get_decision_history::decode),
    ("get_embedding_status", get_embedding_status::decode),
    ("get_similar", get_similar::decode),
    ("list_sources", rag_list_sources::decode),
    ("search", rag_search::decode),
    ("search_by_question", rag_search_by_question::decode),
    ("search_similar", rag_search_similar::decode),
    ("search_semantic", search_semantic::decode),
    ("search_skills", search_skills::decode),
    ("search_workspace", search_workspace::decode),
];

/// Argument names the tools know, so the fuzzer reaches past "unknown field".
const KEYS: [&str; 24] = [
    "query",
    "n_results",
    "limit",
    "path",
    "topic",
    "source_path",
    "conversation_type",
    "date_range",
    "type",
    "search_type",
    "sources",
    "metadata_filters",
    "reference_text",
    "similarity_threshold",
    "exclude_source",
    "question",
    "context_limit",
    "include_stats",
    "source_type_filter",
    "group_by",
    "workspace_path",
    "only_skills",
    "max_results",
    "case_sensitive",
];

/// A JSON value from the next bytes: the fuzzer picks the kind and content.
fn value(bytes: &mut std::slice::Iter<'_, u8>, depth: u8) -> Value {
    let kind = bytes.next().copied().unwrap_or(0);
    let n = bytes.next().copied().unwrap_or(0);
    match kind % 8 {
        0 => Value::Null,
        1 => Value::Bool(n % 2 == 0),
        2 => Value::from(i64::from(n as i8) * 37),
        3 => Value::from(f64::from(n) / 7.0 - 3.0),
        4 | 5 => Value::String(bytes.by_ref().take(n as usize % 24).map(|&b| (b % 95 + 32) as char).collect()),
        6 if depth < 3 => Value::Array((0..n % 4).map(|_| value(bytes, depth + 1)).collect()),
        _ if depth < 3 => object(bytes, depth + 1),
        _ => Value::from(u64::from(n)),
    }
}

fn object(bytes: &mut std::slice::Iter<'_, u8>, depth: u8) -> Value {
    let fields = bytes.next().copied().unwrap_or(0) % 5;
    let mut map = Map::new();
    for _ in 0..fields {
        let key = KEYS[bytes.next().copied().unwrap_or(0) as usize % KEYS.len()];
        map.insert(key.to_string(), value(bytes, depth));
    }
    Value::Object(map)
}

fuzz_target!(|data: &[u8]| {
    let raw = String::from_utf8_lossy(data);
    let built = object(&mut data.iter(), 0).to_string();
    for (_name, decode) in DECODERS {
        let _ = decode(&raw);
        let _ = decode(&built);
    }
});
