//! Cortext's workspace layout: registry.json from arbitrary JSON, paths
//! parsed against it, and date ranges.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragbox_sdk::indexing::layout::{DateRange, Layout};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // First line: a registry; the rest: paths and date ranges.
    let (registry, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let layout = Layout::from_registry(registry).unwrap_or_else(|_| Layout::defaults());
    for line in rest.lines().chain([registry]) {
        if let Some(c) = layout.parse(line) {
            assert!(!c.kind.is_empty() && !c.conversation.is_empty(), "{line:?} → {c:?}");
            assert!(layout.find_type(&c.kind).is_some(), "{line:?} gave an unknown type {:?}", c.kind);
        }
        if let Ok(range) = DateRange::parse(line) {
            assert!(range.contains(range.as_str()), "{line:?}");
        }
    }
});
