//! `serve --watch`: file changes in the workspace, settled into batches of
//! workspace-relative paths for the indexer.
//!
//! Which changed files are indexable (ignore files, binary, size) is decided
//! by the indexing component, as for a full run; here only ragbox's own data
//! and VCS folders are dropped, so the index's writes never feed back.

use notify::{EventKind, RecursiveMode, Watcher as _};
use ragbox_protocol::walk::{IGNORE_FILES, is_skipped};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A batch is handed over once no event came for this long.
const QUIET: Duration = Duration::from_millis(300);
/// ... or once its first event is this old, so a steady stream of writes is still indexed.
const MAX_WAIT: Duration = Duration::from_secs(3);
/// Polling interval when the kernel cannot watch the whole tree.
const POLL: Duration = Duration::from_secs(1);
/// At most one warning about the watch's own errors this often; the rest are counted.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Why the workspace cannot be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Neither inotify nor polling could start.
    #[error("cannot watch {path}: {source}")]
    Start { path: PathBuf, source: notify::Error },
}

/// What changed since the last batch.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Workspace-relative `/`-separated paths of files or folders that were
    /// created, written, removed or renamed (both names of a rename).
    pub paths: BTreeSet<String>,
    /// Events were lost (the kernel queue overflowed) or the root itself
    /// changed: only a full run can tell what changed.
    pub rescan: bool,
}

impl Changes {
    /// A batch that asks for a full run.
    pub fn rescan() -> Self {
        Self { paths: BTreeSet::new(), rescan: true }
    }
}

/// A running watch of one workspace.
pub struct Watcher {
    root: PathBuf,
    /// Kept alive: dropping it stops the events.
    _watcher: Box<dyn notify::Watcher + Send>,
    events: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
    /// Set when the kernel watch could not start and the tree is polled instead.
    pub polling: bool,
    /// When the last warning about the watch's errors went out, and how many since.
    warned: Option<Instant>,
    unwarned: u64,
}

/// Called on the watch's own thread as each change that matters arrives,
/// before any batching (what a cached answer needs to know at once).
pub type OnChange = Arc<dyn Fn() + Send + Sync>;

impl Watcher {
    /// Starts watching `root` recursively, calling `on_change` as changes
    /// arrive. When the kernel's watch limit is too low for the tree, polls
    /// it instead if `poll` (with a warning saying how to raise the limit),
    /// else fails.
    pub fn start(root: &Path, poll: bool, on_change: Option<OnChange>) -> Result<Self, WatchError> {
        let root = crate::platform::canonical(root).unwrap_or_else(|_| root.to_path_buf());
        let (tx, events) = mpsc::unbounded_channel();
        let send = |tx: mpsc::UnboundedSender<_>| {
            let (root, on_change) = (root.clone(), on_change.clone());
            move |event: notify::Result<notify::Event>| {
                if let Some(on_change) = &on_change
                    && matters(&root, &event)
                {
                    on_change();
                }
                drop(tx.send(event));
            }
        };
        let start_err = |source| WatchError::Start { path: root.clone(), source };
        // Links are not followed: `up -> /` in a clone would watch the whole
        // filesystem and use up the user's inotify watches.
        let config = notify::Config::default().with_follow_symlinks(false);
        let mut native = notify::RecommendedWatcher::new(send(tx.clone()), config).map_err(start_err)?;
        match native.watch(&root, RecursiveMode::Recursive) {
            Ok(()) => Ok(Self { root, _watcher: Box::new(native), events, polling: false, warned: None, unwarned: 0 }),
            Err(e) if !poll => Err(start_err(e)),
            Err(e) => {
                drop(native);
                tracing::warn!(
                    "cannot watch {} with inotify ({e}); polling it every {}s instead. On Linux, raise the \
                     limit with: sudo sysctl fs.inotify.max_user_watches=524288",
                    root.display(),
                    POLL.as_secs()
                );
                let config = notify::Config::default().with_poll_interval(POLL).with_follow_symlinks(false);
                let mut poll = notify::PollWatcher::new(send(tx), config).map_err(start_err)?;
                poll.watch(&root, RecursiveMode::Recursive).map_err(start_err)?;
                Ok(Self { root, _watcher: Box::new(poll), events, polling: true, warned: None, unwarned: 0 })
            }
        }
    }

    /// The next settled batch of changes; `None` once the watch has ended.
    pub async fn next(&mut self) -> Option<Changes> {
        let mut changes = Changes::default();
        loop {
            let event = self.events.recv().await?;
            if self.add(&mut changes, event) {
                break;
            }
        }
        // Only changes that matter keep the batch open: reads, and the index's
        // own writes under `.ragbox/`, must not delay it.
        let deadline = Instant::now() + MAX_WAIT;
        let mut quiet = (Instant::now() + QUIET).min(deadline);
        while let Ok(Some(event)) = tokio::time::timeout_at(quiet, self.events.recv()).await {
            if self.add(&mut changes, event) {
                quiet = (Instant::now() + QUIET).min(deadline);
            }
        }
        Some(changes)
    }

    /// Adds what `event` changed to `changes`; false when it changed nothing that is indexed.
    fn add(&mut self, changes: &mut Changes, event: notify::Result<notify::Event>) -> bool {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                self.report(&e);
                changes.rescan = true;
                return true;
            }
        };
        let mut relevant = false;
        if event.need_rescan() {
            changes.rescan = true;
            relevant = true;
        }
        if matches!(event.kind, EventKind::Access(_)) {
            return relevant;
        }
        for path in &event.paths {
            match relative(&self.root, path) {
                Some(Relative::Root) => changes.rescan = true,
                // New ignore rules change what is indexable anywhere below: look at everything.
                Some(Relative::Inside(rel))
                    if IGNORE_FILES.iter().any(|f| rel == *f || rel.ends_with(&format!("/{f}"))) =>
                {
                    changes.rescan = true;
                    changes.paths.insert(rel);
                }
                Some(Relative::Inside(rel)) => {
                    changes.paths.insert(rel);
                }
                None => continue,
            }
            relevant = true;
        }
        relevant
    }
}

impl Watcher {
    /// Logs a watch error: a folder gone before its watch was set (a rename
    /// storm makes thousands) at debug level; others as a warning at most
    /// once every [`WARN_EVERY`], with a count of those held back.
    fn report(&mut self, e: &notify::Error) {
        let vanished = match &e.kind {
            notify::ErrorKind::PathNotFound | notify::ErrorKind::WatchNotFound => true,
            notify::ErrorKind::Io(io) => io.kind() == std::io::ErrorKind::NotFound,
            _ => false,
        };
        if vanished {
            tracing::debug!("file watch: {e} (gone before it could be watched); the next batch looks at everything");
            return;
        }
        if self.warned.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            self.unwarned += 1;
            return;
        }
        let held_back = std::mem::take(&mut self.unwarned);
        let more = if held_back > 0 { format!(" ({held_back} more since the last warning)") } else { String::new() };
        tracing::warn!("file watch: {e}{more}; indexing the whole workspace to catch up");
        self.warned = Some(Instant::now());
    }
}

/// Whether `event` may have changed what is indexed: anything but a read, or
/// a change only under ragbox's data dir or a VCS folder.
fn matters(root: &Path, event: &notify::Result<notify::Event>) -> bool {
    match event {
        Err(_) => true,
        Ok(event) if event.need_rescan() => true,
        Ok(event) if matches!(event.kind, EventKind::Access(_)) => false,
        Ok(event) => event.paths.iter().any(|p| relative(root, p).is_some()),
    }
}

/// Where an event's path lies.
#[derive(Debug, PartialEq, Eq)]
enum Relative {
    /// The workspace folder itself.
    Root,
    /// A path inside it, `/`-separated.
    Inside(String),
}

/// `path` relative to `root`; `None` when it is outside, in a skipped folder, or not UTF-8.
fn relative(root: &Path, path: &Path) -> Option<Relative> {
    let rest = path.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for part in rest.components() {
        let Component::Normal(name) = part else { return None };
        let Some(name) = name.to_str() else {
            tracing::warn!(path = %path.display(), "file watch: a name that is not UTF-8 cannot be indexed");
            return None;
        };
        if is_skipped(name) {
            return None;
        }
        parts.push(name);
    }
    Some(if parts.is_empty() { Relative::Root } else { Relative::Inside(parts.join("/")) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_relative_to_the_workspace() {
        let root = Path::new("/w");
        assert_eq!(relative(root, Path::new("/w/a/b.md")), Some(Relative::Inside("a/b.md".into())));
        assert_eq!(relative(root, Path::new("/w")), Some(Relative::Root));
        assert_eq!(relative(root, Path::new("/w/.ragbox/index.redb")), None);
        assert_eq!(relative(root, Path::new("/w/a/.git/HEAD")), None);
        assert_eq!(relative(root, Path::new("/elsewhere/x.md")), None);
    }

    #[tokio::test]
    async fn a_burst_of_writes_settles_into_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let count = seen.clone();
        let on_change: OnChange = Arc::new(move || {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        let mut watcher = Watcher::start(dir.path(), false, Some(on_change)).unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("f{i}.md")), "x").unwrap();
        }
        std::fs::create_dir(dir.path().join(".ragbox")).unwrap();
        std::fs::write(dir.path().join(".ragbox/index.redb"), "x").unwrap();
        let changes = tokio::time::timeout(Duration::from_secs(10), watcher.next()).await.unwrap().unwrap();
        assert!(!changes.rescan);
        assert_eq!(changes.paths.len(), 50, "{changes:?}");
        assert!(changes.paths.contains("f49.md"));
        let before = seen.load(std::sync::atomic::Ordering::SeqCst);
        assert!(before >= 50, "each write told at once, before batching: {before}");
        let _ = std::fs::read(dir.path().join("f1.md")).unwrap();
        std::fs::write(dir.path().join(".ragbox/index.redb"), "y").unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            seen.load(std::sync::atomic::Ordering::SeqCst),
            before,
            "reads and ragbox's own writes are not changes"
        );

        // New ignore rules ask for a full run.
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let changes = tokio::time::timeout(Duration::from_secs(10), watcher.next()).await.unwrap().unwrap();
        assert!(!changes.rescan, "{changes:?}");
        std::fs::write(dir.path().join("sub/.gitignore"), "*.log\n").unwrap();
        let changes = tokio::time::timeout(Duration::from_secs(10), watcher.next()).await.unwrap().unwrap();
        assert!(changes.rescan, "{changes:?}");
    }
}
