//! What tools keep between calls (`host.memo-get` / `memo-put`) while the
//! host can vouch that nothing it was made from changed: the store's
//! generation is the same and the server's watch of the workspace saw no
//! change. Without a watch (the command line, a workspace a call names, a
//! tree too big for the kernel's watch limit) nothing is kept.
//!
//! A file with other names (a hard link from outside the workspace) can be
//! written through one the watch does not see: the walk reports such files,
//! and each stamp looks at them again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::SystemTime;

/// Largest value kept.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// Values kept per workspace, all tools together; past it the oldest go.
const MAX_ENTRIES: usize = 64;
/// Hard-linked files looked at again per stamp; with more, nothing is kept.
const MAX_LINKED: usize = 1024;

/// One workspace's kept values.
#[derive(Default)]
pub struct Memo {
    /// The watches of the workspace running (one per session of the
    /// per-user service that serves it).
    watches: AtomicUsize,
    /// Bumped by every change the watch sees.
    epoch: AtomicU64,
    entries: Mutex<HashMap<(String, String), Entry>>,
    linked: Mutex<Linked>,
}

/// The workspace's files with other names, as last seen.
#[derive(Default)]
struct Linked {
    files: HashMap<PathBuf, Seen>,
    /// More than [`MAX_LINKED`]: too many to look at on every stamp.
    too_many: bool,
}

/// What a file looked like: changed when any of it changes.
type Seen = Option<(u64, Option<SystemTime>)>;

fn seen(path: &std::path::Path) -> Seen {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()))
}

/// A running watch of the workspace (see [`Memo::watching`]).
pub struct Watching<'a>(&'a Memo);

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        if self.0.watches.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.changed();
        }
    }
}

/// The state of things a value was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    epoch: u64,
    generation: u64,
}

struct Entry {
    at: Stamp,
    value: String,
    /// For eviction: the order values were kept in.
    seq: u64,
}

impl Memo {
    /// A watch of the workspace reports its changes until the guard drops.
    /// What changed while nothing watched was not seen: the first watch
    /// makes every kept value stale, and so does the last one's end.
    pub fn watching(&self) -> Watching<'_> {
        if self.watches.fetch_add(1, Ordering::SeqCst) == 0 {
            self.changed();
        }
        Watching(self)
    }

    /// A change in the workspace: every kept value is stale.
    pub fn changed(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Now, for a store at `generation`; `None` while nothing watches the
    /// workspace (or it has too many hard-linked files to look at).
    pub fn stamp(&self, generation: u64) -> Option<Stamp> {
        if self.watches.load(Ordering::SeqCst) == 0 {
            return None;
        }
        {
            let mut linked = self.linked.lock().unwrap_or_else(|e| e.into_inner());
            if linked.too_many {
                return None;
            }
            let mut moved = false;
            for (path, was) in linked.files.iter_mut() {
                let now = seen(path);
                if now != *was {
                    *was = now;
                    moved = true;
                }
            }
            if moved {
                self.changed();
            }
        }
        Some(Stamp { epoch: self.epoch.load(Ordering::SeqCst), generation })
    }

    /// Files of the workspace a walk found to have other names: looked at
    /// again on every stamp (see the module's note).
    pub fn track_linked(&self, paths: impl IntoIterator<Item = PathBuf>) {
        let mut linked = self.linked.lock().unwrap_or_else(|e| e.into_inner());
        for path in paths {
            if linked.files.len() >= MAX_LINKED {
                linked.too_many = true;
                return;
            }
            if let std::collections::hash_map::Entry::Vacant(slot) = linked.files.entry(path) {
                let now = seen(slot.key());
                slot.insert(now);
            }
        }
    }

    /// `tool`'s value for `key`, when it was made at `now` and the watch has seen nothing since.
    pub fn get(&self, tool: &str, key: &str, now: Stamp) -> Option<String> {
        if now.epoch != self.epoch.load(Ordering::SeqCst) {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(&(tool.to_string(), key.to_string())).filter(|e| e.at == now).map(|e| e.value.clone())
    }

    /// Keeps `tool`'s `value` for `key`, made from the state at `at`.
    pub fn put(&self, tool: &str, key: &str, value: String, at: Stamp) {
        if value.len() > MAX_VALUE_BYTES {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let seq = entries.values().map(|e| e.seq + 1).max().unwrap_or(0);
        entries.insert((tool.to_string(), key.to_string()), Entry { at, value, seq });
        if entries.len() > MAX_ENTRIES
            && let Some(oldest) = entries.iter().min_by_key(|(_, e)| e.seq).map(|(k, _)| k.clone())
        {
            entries.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_only_while_nothing_changed() {
        let memo = Memo::default();
        assert_eq!(memo.stamp(1), None, "nothing kept without a watch");
        let watching = memo.watching();
        let at = memo.stamp(1).unwrap();
        memo.put("status", "all", "v1".into(), at);
        assert_eq!(memo.get("status", "all", memo.stamp(1).unwrap()).as_deref(), Some("v1"));
        assert_eq!(memo.get("other-tool", "all", memo.stamp(1).unwrap()), None, "each tool its own");
        assert_eq!(memo.get("status", "all", memo.stamp(2).unwrap()), None, "the index changed");
        memo.changed();
        assert_eq!(memo.get("status", "all", memo.stamp(1).unwrap()), None, "a file changed");

        // Made from a state that changed while it was being made: never given out.
        let at = memo.stamp(1).unwrap();
        memo.changed();
        memo.put("status", "all", "stale".into(), at);
        assert_eq!(memo.get("status", "all", memo.stamp(1).unwrap()), None);

        memo.put("status", "big", "x".repeat(MAX_VALUE_BYTES + 1), memo.stamp(1).unwrap());
        assert_eq!(memo.get("status", "big", memo.stamp(1).unwrap()), None, "too big to keep");
        // A second session's watch comes and goes: the first still vouches.
        memo.put("status", "all", "v2".into(), memo.stamp(1).unwrap());
        drop(memo.watching());
        assert_eq!(memo.get("status", "all", memo.stamp(1).unwrap()).as_deref(), Some("v2"));
        drop(watching);
        assert_eq!(memo.stamp(1), None);
    }

    #[test]
    fn hard_linked_files_are_looked_at_again() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("note.md");
        std::fs::write(&inside, "v1").unwrap();
        let memo = Memo::default();
        let _watching = memo.watching();
        memo.track_linked([inside.clone()]);
        let at = memo.stamp(1).unwrap();
        memo.put("status", "all", "v1".into(), at);
        assert_eq!(memo.get("status", "all", memo.stamp(1).unwrap()).as_deref(), Some("v1"));
        // Written through another name: no watch event, but the size moved.
        std::fs::write(&inside, "version 2").unwrap();
        assert_eq!(memo.get("status", "all", memo.stamp(1).unwrap()), None);
    }

    #[test]
    fn the_oldest_values_go_first() {
        let memo = Memo::default();
        let _watching = memo.watching();
        let at = memo.stamp(1).unwrap();
        for i in 0..=MAX_ENTRIES {
            memo.put("t", &i.to_string(), i.to_string(), at);
        }
        assert_eq!(memo.get("t", "0", at), None);
        assert_eq!(memo.get("t", &MAX_ENTRIES.to_string(), at), Some(MAX_ENTRIES.to_string()));
    }
}
