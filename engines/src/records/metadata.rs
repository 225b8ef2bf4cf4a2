//! A document's metadata (frontmatter fields, path facts, ragbox's own
//! notes), kept compact: every server holds the record of every document of
//! its workspace, and a `BTreeMap` of owned strings cost each record a
//! 544-byte tree node plus two allocations an entry (2.8 MB of a server's
//! private memory on SciFact's 5,183 abstracts, which carry two or three
//! entries each). Here the keys and values are one string and one list of
//! where they end. Stored as the same JSON object as before.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Key=value strings, keys unique and in order.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Metadata {
    /// Each key, then its value, one after another.
    text: Box<str>,
    /// Where each key and each value ends in `text`: 2 × the entries.
    ends: Box<[u32]>,
}

impl Metadata {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find_map(|(k, v)| (k == key).then_some(v))
    }

    /// The entries, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.ends.chunks_exact(2).scan(0usize, |start, ends| {
            let (key_end, value_end) = (ends[0] as usize, ends[1] as usize);
            let entry = (&self.text[*start..key_end], &self.text[key_end..value_end]);
            *start = value_end;
            Some(entry)
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ends.len() / 2
    }

    /// True without entries.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Metadata {
    /// Sorted by key; of a key given twice, the last value is kept (as a map's insert would).
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let sorted: BTreeMap<String, String> = entries.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        let mut text = String::with_capacity(sorted.iter().map(|(k, v)| k.len() + v.len()).sum());
        let mut ends = Vec::with_capacity(sorted.len() * 2);
        for (key, value) in &sorted {
            // Offsets are u32: metadata comes from files read whole, each far below 4 GiB.
            text.push_str(key);
            ends.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
            text.push_str(value);
            ends.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
        }
        Self { text: text.into_boxed_str(), ends: ends.into_boxed_slice() }
    }
}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Metadata {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // The length up front: postcard (the vector index's manifest) cannot write a map without it.
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (key, value) in self.iter() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(BTreeMap::<String, String>::deserialize(deserializer)?.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_sorted_unique_and_found() {
        let m: Metadata = [("b", "2"), ("a", "1"), ("b", "3"), ("", "empty key"), ("c", "")].into_iter().collect();
        assert_eq!(m.iter().collect::<Vec<_>>(), [("", "empty key"), ("a", "1"), ("b", "3"), ("c", "")]);
        assert_eq!((m.get("b"), m.get("c"), m.get("z"), m.len()), (Some("3"), Some(""), None, 4));
        assert!(Metadata::default().is_empty() && Metadata::default().get("").is_none());
    }

    #[test]
    fn stored_as_the_json_object_a_map_was() {
        let map: BTreeMap<String, String> =
            [("tags", "a, b"), ("ragbox.read_at", "17"), ("ünïcode", "✓\0")].map(|(k, v)| (k.into(), v.into())).into();
        let json = serde_json::to_string(&map).unwrap();
        let m: Metadata = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&m).unwrap(), json);
        assert_eq!(m.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(), map);
        assert!(serde_json::from_str::<Metadata>("[1]").is_err());
    }

    #[test]
    fn the_vector_index_manifest_format_round_trips_it() {
        let m: Metadata = [("source_method", "file_watcher"), ("ragbox.read_at", "1764100000")].into_iter().collect();
        let bytes = postcard::to_stdvec(&m).expect("postcard writes it");
        assert_eq!(postcard::from_bytes::<Metadata>(&bytes).expect("and reads it back"), m);
    }
}
