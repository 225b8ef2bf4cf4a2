//! The index's background worker: writes sealed segments, builds their
//! graphs, merges segments and saves the manifest, one job at a time in
//! order, on its own low-priority threads. Searches and writes never wait on
//! it: a graph appears in its segment when done (a `OnceLock`), and a merged
//! segment is handed back for the index to swap in at its next call. Once the
//! index is dropped, what is queued is saved but no longer built.

use super::hnsw::GraphParams;
use super::quantized::Codes;
use super::saved::{SaveDir, Saving};
use super::segment::Segment;
use crate::sync::lock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex};

/// Work for the worker.
pub(super) enum Job {
    /// Write a newly sealed segment's codes.
    Persist(Arc<Segment>),
    /// Build (and write) a segment's graph.
    Graph(Arc<Segment>),
    /// Make segment `id` from the chunks of `parts` whose documents are live
    /// (per document number), with its graph.
    Merge { parts: Vec<Arc<Segment>>, live: Vec<bool>, id: u64 },
    /// Write the manifest (and the fresh buffer it names).
    Save(Box<Saving>),
}

/// A merge's result, for the index to swap in.
pub(super) struct Merged {
    /// The new segment (`None` when no chunk was live).
    pub(super) segment: Option<Arc<Segment>>,
    /// The segments it replaces.
    pub(super) replaced: Vec<u64>,
}

/// What the worker shares with the index.
#[derive(Default)]
struct Shared {
    merged: Mutex<Vec<Merged>>,
    /// Jobs submitted and not finished.
    pending: Mutex<usize>,
    idle: Condvar,
    /// Graph builds finished since the index last looked (they want a save).
    built: AtomicUsize,
    /// Manifest saves queued or running.
    saves: AtomicUsize,
    /// What runs now, for status.
    running: Mutex<Option<String>>,
    /// The index is gone: builds and merges still queued are skipped.
    closed: std::sync::atomic::AtomicBool,
    /// Held while a job writes to the folder; [`Worker::close`] takes it to
    /// set `shut`, after which nothing is written there.
    writes: Mutex<()>,
    shut: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// Runs `write` unless the worker was shut (see [`Worker::close`]).
    fn write<T>(&self, write: impl FnOnce() -> T) -> Option<T> {
        let _writing = lock(&self.writes);
        (!self.shut.load(Ordering::Acquire)).then(write)
    }
}

/// The worker of one index; its thread starts with the first job and ends
/// when the index is dropped (after the job in hand).
pub(super) struct Worker {
    params: GraphParams,
    threads: usize,
    save: Option<Arc<SaveDir>>,
    sender: Option<Sender<Job>>,
    shared: Arc<Shared>,
}

impl Worker {
    /// A worker that builds with `params` on `threads` threads, writing to `save` when given.
    pub(super) fn new(params: GraphParams, threads: usize, save: Option<SaveDir>) -> Self {
        Self { params, threads, save: save.map(Arc::new), sender: None, shared: Arc::default() }
    }

    /// True when this worker writes the index to disk.
    pub(super) fn saves(&self) -> bool {
        self.save.is_some()
    }

    /// The file stem segment `id` gets.
    pub(super) fn stem(&self, id: u64) -> Option<String> {
        self.save.as_ref().map(|s| s.stem(id))
    }

    /// Queues `job`.
    pub(super) fn submit(&mut self, job: Job) {
        if matches!(job, Job::Persist(_) | Job::Save(_)) && self.save.is_none() {
            return;
        }
        *lock(&self.shared.pending) += 1;
        let is_save = matches!(job, Job::Save(_));
        if is_save {
            self.shared.saves.fetch_add(1, Ordering::AcqRel);
        }
        let job = match &self.sender {
            Some(sender) => match sender.send(job) {
                Ok(()) => return,
                Err(e) => e.0,
            },
            None => job,
        };
        // No thread yet (or it died, and the saves queued with it): start one and hand it the job.
        self.shared.saves.store(usize::from(is_save), Ordering::Release);
        let (sender, receiver) = channel::<Job>();
        let (shared, save, params, threads) = (self.shared.clone(), self.save.clone(), self.params, self.threads);
        let started = std::thread::Builder::new().name("ragbox-index".into()).spawn(move || {
            crate::platform::lower_thread_priority();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("ragbox-index-{i}"))
                .start_handler(|_| crate::platform::lower_thread_priority())
                .build();
            let pool = match pool {
                Ok(pool) => pool,
                Err(e) => {
                    tracing::error!("cannot start the vector index's build threads: {e}");
                    return;
                }
            };
            for job in receiver {
                pool.install(|| run(job, &shared, save.as_deref(), params));
                let mut pending = lock(&shared.pending);
                *pending = pending.saturating_sub(1);
                shared.idle.notify_all();
            }
        });
        match started {
            Ok(_) => {
                // The receiver lives as long as the thread: this send succeeds.
                let _ = sender.send(job);
                self.sender = Some(sender);
            }
            Err(e) => {
                tracing::error!("cannot start the vector index's worker: {e}");
                *lock(&self.shared.pending) -= 1;
                self.shared.saves.store(0, Ordering::Release);
            }
        }
    }

    /// Merges finished since the last look.
    pub(super) fn take_merged(&self) -> Vec<Merged> {
        std::mem::take(&mut *lock(&self.shared.merged))
    }

    /// Graph builds finished since the last look.
    pub(super) fn take_built(&self) -> usize {
        self.shared.built.swap(0, Ordering::AcqRel)
    }

    /// Manifest saves queued or running.
    pub(super) fn saves_queued(&self) -> usize {
        self.shared.saves.load(Ordering::Acquire)
    }

    /// Blocks until no manifest save is queued or running (other jobs may be).
    pub(super) fn wait_saved(&self) {
        let mut pending = lock(&self.shared.pending);
        while self.shared.saves.load(Ordering::Acquire) > 0 && *pending > 0 {
            pending = self.shared.idle.wait(pending).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Jobs queued or running.
    pub(super) fn pending(&self) -> usize {
        *lock(&self.shared.pending)
    }

    /// What the worker does now.
    pub(super) fn running(&self) -> Option<String> {
        lock(&self.shared.running).clone()
    }

    /// Writes nothing more to the folder, from the moment a write under way
    /// (waited for) ends: queued saves get up to `saves` to run first; builds
    /// and merges queued are skipped, one running writes nothing when done.
    /// (Its folder may be about to be deleted: its workspace is no longer served.)
    pub(super) fn close(&mut self, saves: std::time::Duration) {
        self.shared.closed.store(true, Ordering::Release);
        let deadline = std::time::Instant::now() + saves;
        let mut pending = lock(&self.shared.pending);
        while self.shared.saves.load(Ordering::Acquire) > 0 && *pending > 0 {
            let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) else { break };
            pending = self.shared.idle.wait_timeout(pending, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        drop(pending);
        let _writing = lock(&self.shared.writes);
        self.shared.shut.store(true, Ordering::Release);
        // The thread ends once it has passed over what is queued.
        self.sender = None;
    }

    /// Blocks until every queued job is done.
    pub(super) fn wait(&self) {
        let mut pending = lock(&self.shared.pending);
        while *pending > 0 {
            pending = self.shared.idle.wait(pending).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

fn run(job: Job, shared: &Shared, save: Option<&SaveDir>, params: GraphParams) {
    if matches!(job, Job::Graph(_) | Job::Merge { .. }) && shared.closed.load(Ordering::Acquire) {
        return;
    }
    let set_running = |what: Option<String>| *lock(&shared.running) = what;
    match job {
        Job::Persist(segment) => {
            if let Some(Some(Err(e))) = save.map(|s| shared.write(|| s.write_segment(&segment))) {
                tracing::warn!("cannot save vector segment {}: {e}", segment.id);
            }
        }
        Job::Graph(segment) => {
            // Only this job still holds it: merged away or the index is gone.
            if Arc::strong_count(&segment) == 1 || segment.graph.get().is_some() {
                return;
            }
            set_running(Some(format!("graph of {} chunks", segment.len())));
            let started = std::time::Instant::now();
            let graph = segment.build_graph(params);
            tracing::info!(chunks = segment.len(), ms = started.elapsed().as_millis() as u64, "built a vector graph");
            if let Some(Some(Err(e))) = save.map(|s| shared.write(|| s.write_graph(segment.id, graph))) {
                tracing::warn!("cannot save the graph of vector segment {}: {e}", segment.id);
            }
            shared.built.fetch_add(1, Ordering::AcqRel);
            set_running(None);
        }
        Job::Merge { parts, live, id } => {
            let total: usize = parts.iter().map(|p| p.len()).sum();
            set_running(Some(format!("merge of {} segments ({total} chunks)", parts.len())));
            let started = std::time::Instant::now();
            let segment = merge(&parts, &live, id);
            if let Some(segment) = &segment {
                segment.build_graph(params);
                if let Some(save) = save {
                    let written = shared.write(|| {
                        save.write_segment(segment)
                            .and_then(|()| save.write_graph(segment.id, segment.graph.get().expect("built above")))
                    });
                    if let Some(Err(e)) = written {
                        tracing::warn!("cannot save merged vector segment {id}: {e}");
                    }
                }
            }
            tracing::info!(
                parts = parts.len(),
                chunks = segment.as_ref().map_or(0, |s| s.len()),
                ms = started.elapsed().as_millis() as u64,
                "merged vector segments"
            );
            let replaced = parts.iter().map(|p| p.id).collect();
            lock(&shared.merged).push(Merged { segment: segment.map(Arc::new), replaced });
            set_running(None);
        }
        Job::Save(mut saving) => {
            let started = std::time::Instant::now();
            match save.and_then(|s| shared.write(|| s.write_manifest(&mut saving))) {
                Some(Ok(())) => tracing::debug!(ms = started.elapsed().as_millis() as u64, "saved the vector index"),
                Some(Err(e)) => tracing::warn!("cannot save the vector index: {e}"),
                None => {}
            }
            shared.saves.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// One segment of the live chunks of `parts`, in order; `None` when none is live.
fn merge(parts: &[Arc<Segment>], live: &[bool], id: u64) -> Option<Segment> {
    let dimension = parts.first()?.codes.dimension();
    let mut chunks = Vec::new();
    let mut codes = Codes::new(dimension);
    for part in parts {
        for (i, &(doc, ordinal)) in part.chunks.iter().enumerate() {
            if live.get(doc as usize).copied().unwrap_or(false) {
                chunks.push((doc, ordinal));
                codes.push_from(&part.codes, i);
            }
        }
    }
    (!chunks.is_empty()).then(|| Segment::new(id, chunks, codes))
}
