//! The last calls of each tool, kept per user so that `ragbox tools inspect`
//! can show what a tool costs as agents use it: one line per call (when, how
//! long, how it ended, which bytes ran), appended to
//! `<cache>/calls/<tool>.jsonl`. Each tool's file is held open for
//! appending, so a call pays one small write for it; every [`CHECK_EVERY`]
//! lines the file is opened again (another process may have replaced it) and,
//! past [`TRIM_AT`], cut back to its last lines. It is a record for people, not state: a line lost to
//! two processes writing at once, or a file that cannot be written, costs
//! nothing but the line.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Calls shown per tool.
pub const KEPT: usize = 20;
/// A history file this large is cut back to its last [`KEPT`] lines.
const TRIM_AT: u64 = 16 << 10;
/// The most of a history file read (its end).
const READ_AT_MOST: u64 = 64 << 10;
/// Lines appended through one open handle before the file is looked at again.
const CHECK_EVERY: u32 = 64;

/// One finished call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// When it ended, seconds since the Unix epoch.
    pub at: i64,
    /// How long it took, in milliseconds.
    pub ms: f64,
    /// `ok`, `tool-error`, `invalid-arguments`, or the host's failure (`timeout`, `crashed`, …).
    pub outcome: String,
    /// The sha256 of the component that ran.
    pub sha256: String,
}

impl CallRecord {
    /// A call of the component `sha256` that took `elapsed` and ended as `outcome`, now.
    pub fn now(sha256: &str, elapsed: Duration, outcome: &str) -> Self {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let ms = (elapsed.as_secs_f64() * 1e4).round() / 10.0;
        Self { at, ms, outcome: outcome.to_string(), sha256: sha256.to_string() }
    }
}

/// Where the calls are kept.
#[derive(Debug)]
pub struct History {
    dir: Option<PathBuf>,
    /// Each tool's file, open for appending, and the lines written through it.
    open: Mutex<HashMap<String, (File, u32)>>,
}

impl History {
    /// The history in `dir` (`None`: nothing is kept).
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self { dir, open: Mutex::default() }
    }

    /// `$RAGBOX_CALL_HISTORY` (`off` keeps nothing), else `calls/` in the user's cache dir.
    pub fn default_dir() -> Option<PathBuf> {
        crate::platform::user_cache_dir("RAGBOX_CALL_HISTORY", "calls")
    }

    /// Adds a call of `tool` (a tool name: letters, digits, `_` and `-`).
    pub fn record(&self, tool: &str, call: &CallRecord) {
        let Some(file) = self.file(tool) else { return };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = append(&mut open, tool, &file, call) {
            open.remove(tool);
            tracing::debug!("call history {}: {e}", file.display());
        }
    }

    /// The last calls of `tool` by the component `sha256`, oldest first.
    pub fn last(&self, tool: &str, sha256: &str) -> Vec<CallRecord> {
        let Some(file) = self.file(tool) else { return Vec::new() };
        let mut calls: Vec<CallRecord> = tail(&file).into_iter().filter(|c| c.sha256 == sha256).collect();
        calls.drain(..calls.len().saturating_sub(KEPT));
        calls
    }

    fn file(&self, tool: &str) -> Option<PathBuf> {
        let plain = !tool.is_empty() && tool.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        Some(self.dir.as_ref()?.join(format!("{tool}.jsonl"))).filter(|_| plain)
    }
}

/// Appends `call` to `file` through the handle held for `tool`; every
/// [`CHECK_EVERY`] lines, cuts the file back when it has grown and lets the
/// handle go.
fn append(open: &mut HashMap<String, (File, u32)>, tool: &str, file: &Path, call: &CallRecord) -> std::io::Result<()> {
    let line = serde_json::to_string(call).map_err(std::io::Error::other)? + "\n";
    if !open.contains_key(tool) {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let handle = std::fs::OpenOptions::new().create(true).append(true).open(file)?;
        open.insert(tool.to_string(), (handle, 0));
    }
    let Some((handle, written)) = open.get_mut(tool) else { return Ok(()) };
    handle.write_all(line.as_bytes())?;
    *written += 1;
    if *written >= CHECK_EVERY {
        open.remove(tool);
        trim(file)?;
    }
    Ok(())
}

/// Cuts `file` back to its last lines when it is past [`TRIM_AT`].
fn trim(file: &Path) -> std::io::Result<()> {
    if std::fs::metadata(file)?.len() <= TRIM_AT {
        return Ok(());
    }
    let calls = tail(file);
    let kept: Vec<String> =
        calls[calls.len().saturating_sub(KEPT * 4)..].iter().filter_map(|c| serde_json::to_string(c).ok()).collect();
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut fresh = tempfile::NamedTempFile::new_in(dir)?;
    fresh.write_all((kept.join("\n") + "\n").as_bytes())?;
    fresh.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// The calls in the last [`READ_AT_MOST`] bytes of `file`; lines that do not parse are passed over.
fn tail(file: &Path) -> Vec<CallRecord> {
    let Ok(mut f) = File::open(file) else { return Vec::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len > READ_AT_MOST && f.seek(SeekFrom::Start(len - READ_AT_MOST)).is_err() {
        return Vec::new();
    }
    let mut text = String::new();
    if f.take(READ_AT_MOST).read_to_string(&mut text).is_err() {
        return Vec::new();
    }
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_calls_of_the_bytes_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::new(Some(dir.path().join("calls")));
        for i in 0..500 {
            let sha = if i % 2 == 0 { "aa" } else { "bb" };
            history.record("word_stats", &CallRecord::now(sha, Duration::from_micros(1500 + i), "ok"));
        }
        let last = history.last("word_stats", "aa");
        assert_eq!(last.len(), KEPT);
        assert!(last.iter().all(|c| c.sha256 == "aa" && c.ms >= 1.5));
        assert_eq!(last.last().map(|c| c.ms), Some(2.0), "the newest call last");
        let size = std::fs::metadata(dir.path().join("calls/word_stats.jsonl")).unwrap().len();
        assert!(size <= TRIM_AT + u64::from(CHECK_EVERY) * 200, "cut back: {size} bytes");
        assert!(history.last("other", "aa").is_empty());
        history.record("../escape", &CallRecord::now("aa", Duration::ZERO, "ok"));
        assert!(!dir.path().join("escape.jsonl").exists(), "only plain tool names make files");
        assert!(History::new(None).last("word_stats", "aa").is_empty());
    }
}
