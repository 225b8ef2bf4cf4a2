//! Argument decoding shared by the search tools: counts, modes, file types
//! and metadata filters from arbitrary JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragbox_sdk::conventions::rag_server::{Mode, extensions_for, filter, mime_of};
use ragbox_sdk::tool::args::count_in;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = Mode::parse(&text);
    let _ = mime_of(&text);
    if let Some(exts) = extensions_for(&text) {
        assert!(exts.iter().all(|e| !e.is_empty()));
    }
    let Ok(value) = serde_json::from_str::<Value>(&text) else { return };
    let sources: Vec<String> = match value.get("sources") {
        Some(Value::Array(items)) => items.iter().filter_map(|s| s.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    };
    let filters = value.get("metadata_filters").and_then(Value::as_object).cloned().unwrap_or_else(Map::new);
    let _ = filter(&sources, &filters);
    if let Some(n) = value.get("limit").and_then(Value::as_u64)
        && let Ok(k) = count_in("limit", Some(n), 10, 1..=50)
    {
        assert!((1..=50).contains(&k));
    }
});
