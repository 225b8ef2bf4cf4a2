//! Extractor components (the WIT `extractor` world): the text out of document
//! formats that are not text, such as PDF and Word. Parsers of such formats
//! are where most parsing bugs live, so each file is read by a fresh instance
//! with no filesystem, environment or network, under its own deadline and
//! memory limit, and what it returns is capped: a hostile document can at
//! worst waste its own budget.
//!
//! And the process has one budget for all of them ([`Slots`]): the per-user
//! service reads documents for every session, and five hostile files read at
//! once took it to 2.6 GB. At most a few documents are read at a time (from
//! the machine's cores and memory, each with its memory limit); the others
//! wait their turn, as long as their call may.

use super::component::{Source, check_wit_version};
use super::guard::{Guard, Interrupt};
use super::linked::{Linked, Relink};
use super::stderr::StderrCapture;
use crate::runtime::bindings::ragbox::tools::documents::{ExtractError, Extracted, Part};
use crate::text::one_line as line;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod bindings {
    #![allow(missing_docs)]
    wasmtime::component::bindgen!({
        world: "extractor",
        path: "../wit",
        with: { "ragbox:tools/documents": crate::runtime::bindings::ragbox::tools::documents },
    });
}
use bindings::{Extractor, ExtractorPre};

/// One file's budget: the time and memory its extraction may take, and the
/// text it may return.
#[derive(Debug, Clone, Copy)]
pub struct ExtractLimits {
    /// Wall-clock time for one file.
    pub timeout: Duration,
    /// Linear memory the instance may grow to.
    pub memory_bytes: usize,
    /// Text returned, all parts together.
    pub max_text_bytes: usize,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        // 8 MiB of text is what one call may tokenize, as for a text file.
        Self { timeout: Duration::from_secs(60), memory_bytes: 1 << 30, max_text_bytes: 8 << 20 }
    }
}

/// Documents read at once in this process, each up to its memory limit:
/// one for each two cores, within an eighth of the machine's memory (8 GiB
/// is assumed where the OS does not say), at least one, at most four.
struct Slots {
    free: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
}

/// The process's slots (one budget for every session and call).
fn slots() -> &'static Slots {
    static SLOTS: std::sync::OnceLock<Slots> = std::sync::OnceLock::new();
    SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let memory = crate::platform::physical_memory().unwrap_or(8 << 30);
        let per_file = ExtractLimits::default().memory_bytes as u64;
        let by_memory = usize::try_from(memory / 8 / per_file).unwrap_or(usize::MAX);
        let free = (cores / 2).min(by_memory).clamp(1, 4);
        tracing::debug!(free, "documents read at once");
        Slots { free: std::sync::Mutex::new(free), freed: std::sync::Condvar::new() }
    })
}

/// One of the process's slots, given back when dropped.
struct Slot(&'static Slots);

impl Slots {
    /// A slot, waiting for one while others read; `None` when `cancel` fires
    /// or `until` (if any) passes first.
    fn take(&'static self, until: Option<Instant>, cancel: &CancellationToken) -> Option<Slot> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if *free > 0 {
                *free -= 1;
                return Some(Slot(self));
            }
            let left = match until {
                Some(until) => until.checked_duration_since(Instant::now())?,
                None => Duration::MAX,
            };
            if cancel.is_cancelled() {
                return None;
            }
            let wait = left.min(Duration::from_millis(50));
            free = self.freed.wait_timeout(free, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// Runs `read` on a thread of its own at a lower priority, so that reading a
/// document yields the CPU to other agents' searches (the thread that asks
/// may serve a search next: its own priority could not be raised back).
/// Where no thread can be had, on the calling thread.
fn read_below_searches(
    read: impl FnOnce() -> Result<Extracted, ExtractFailure> + Send,
) -> Result<Extracted, ExtractFailure> {
    let sink = crate::logs::current();
    let read = std::sync::Mutex::new(Some(read));
    let take = || read.lock().unwrap_or_else(|e| e.into_inner()).take();
    let spawned = std::thread::scope(|scope| {
        let reading = std::thread::Builder::new().name("ragbox-extract".into()).spawn_scoped(scope, || {
            crate::platform::lower_thread_priority();
            take().map(|read| crate::logs::with(sink.as_ref(), read))
        });
        reading.map(|thread| thread.join())
    });
    match spawned {
        Ok(Ok(Some(done))) => done,
        Ok(Ok(None)) | Ok(Err(_)) => Err(ExtractFailure::Crashed {
            extractor: "the host".to_string(),
            reason: "the thread reading the document panicked".to_string(),
        }),
        // No thread to be had: read here, at the caller's priority.
        Err(_) => match take() {
            Some(read) => read(),
            None => Err(ExtractFailure::Crashed { extractor: "the host".to_string(), reason: "no thread".to_string() }),
        },
    }
}

/// Why a file gave no text. Each says what to do, for the indexing report.
#[derive(Debug, thiserror::Error)]
pub enum ExtractFailure {
    /// No extractor reads this extension.
    #[error("no extractor reads .{ext} files")]
    NoExtractor {
        /// The file's extension.
        ext: String,
    },
    /// The file is not a valid document of its format.
    #[error("cannot read it as {format}: {message}")]
    Malformed {
        /// The format's extension.
        format: String,
        /// What the extractor found wrong.
        message: String,
    },
    /// A valid document without text, such as a scan.
    #[error("no text to index: {0}")]
    NoText(String),
    /// A valid document the extractor cannot read, such as an encrypted one.
    #[error("not readable by ragbox: {0}")]
    Unsupported(String),
    /// The file used up its time.
    #[error("reading it took over its {secs} s budget; the file may be hostile or damaged")]
    Timeout {
        /// The budget.
        secs: u64,
    },
    /// The file needed more memory than its budget.
    #[error("reading it needed over its {limit_mib} MiB memory budget; the file may be hostile or damaged")]
    OutOfMemory {
        /// The budget.
        limit_mib: usize,
    },
    /// It gave more text than a file may.
    #[error("it holds over {limit_mib} MiB of text, more than one file may; split it")]
    TooMuchText {
        /// The limit.
        limit_mib: usize,
    },
    /// The call it was read for was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The process's document readers were all busy until the call's time ran out.
    #[error("every document reader of ragbox was busy with other calls until this call's time ran out; run it again")]
    Busy,
    /// The extractor crashed on it.
    #[error("the {extractor} extractor crashed on it ({reason}); the file may be hostile or damaged")]
    Crashed {
        /// Which extractor.
        extractor: String,
        /// The trap, and what the extractor said last.
        reason: String,
    },
    /// The extractor, let go after start-up, could not be loaded again.
    #[error("the {extractor} extractor could not be loaded: {reason}")]
    Unloadable {
        /// Which extractor.
        extractor: String,
        /// Why.
        reason: String,
    },
}

/// The data of one extraction's store: WASI with nothing in reach.
pub(super) struct ExtractState {
    wasi: WasiCtx,
    table: ResourceTable,
    guard: Guard,
}

impl WasiView for ExtractState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// A loaded extractor component.
#[derive(Clone)]
pub struct LoadedExtractor {
    /// Its name: the crate or file stem (config's `[tools.NAME]` disables it).
    name: Arc<str>,
    /// Where it came from.
    pub source: Source,
    /// The sha256 of its bytes.
    pub sha256: String,
    /// The extensions it reads, lowercase.
    formats: Vec<String>,
    engine: Engine,
    pre: Arc<Linked<ExtractorPre<ExtractState>>>,
}

/// Links `component` to the extractor world (WASI only), once its WIT
/// version is one this host serves.
pub(super) fn link(engine: &Engine, component: &Component) -> Result<ExtractorPre<ExtractState>, String> {
    check_wit_version(engine, component)?;
    let mut linker: Linker<ExtractState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(|e| format!("{e:#}"))?;
    linker
        .instantiate_pre(component)
        .and_then(ExtractorPre::new)
        .map_err(|e| format!("it does not fit the ragbox extractor world: {e:#}"))
}

/// True when `component` is an extractor (exports `extract`) rather than a tool.
pub fn is_extractor(engine: &Engine, component: &Component) -> bool {
    component.component_type().exports(engine).any(|(name, _)| name == "extract")
}

/// A store for one extraction, with `limits` and the caller's `cancel`.
fn new_store(engine: &Engine, limits: &ExtractLimits, cancel: CancellationToken) -> Store<ExtractState> {
    // No preopens, environment, arguments or sockets: the bytes come as an argument.
    let wasi = WasiCtxBuilder::new()
        .stderr(StderrCapture::default())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build();
    let guard = Guard::new(limits.memory_bytes, limits.timeout, cancel);
    let mut store = Store::new(engine, ExtractState { wasi, table: ResourceTable::new(), guard });
    store.limiter(|s| &mut s.guard);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut ctx| match ctx.data_mut().guard.check() {
        None => Ok(UpdateDeadline::Continue(1)),
        Some(Interrupt::Deadline) => Err(wasmtime::format_err!("deadline exceeded")),
        Some(Interrupt::Cancelled) => Err(wasmtime::format_err!("cancelled")),
    });
    store
}

/// Most formats one extractor may read.
const MAX_FORMATS: usize = 64;
/// Longest message kept from an extractor (it lands in reports and the index).
const MAX_MESSAGE_CHARS: usize = 300;
/// Largest label kept for a part.
const MAX_LABEL_CHARS: usize = 80;
/// Metadata entries kept from one file, and the size of each value.
const MAX_METADATA: usize = 32;
const MAX_METADATA_VALUE: usize = 1000;

impl LoadedExtractor {
    /// Links `component` and asks it which formats it reads.
    pub fn new(
        engine: &Engine,
        component: &Component,
        name: &str,
        source: Source,
        sha256: String,
    ) -> Result<Self, String> {
        let pre = link(engine, component)?;
        let limits = ExtractLimits { timeout: Duration::from_secs(10), ..Default::default() };
        let mut store = new_store(engine, &limits, CancellationToken::new());
        let formats = pre
            .instantiate(&mut store)
            .and_then(|x: Extractor| x.call_formats(&mut store))
            .map_err(|e| format!("formats() failed: {e:#}"))?;
        if formats.len() > MAX_FORMATS {
            return Err(format!("formats() named {} formats; an extractor reads at most {MAX_FORMATS}", formats.len()));
        }
        let formats: Vec<String> = formats.iter().map(|f| f.trim_start_matches('.').to_ascii_lowercase()).collect();
        if let Some(bad) =
            formats.iter().find(|f| f.is_empty() || f.len() > 16 || !f.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            return Err(format!("formats() named {bad:?}: an extension is 1 to 16 letters or digits"));
        }
        let pre = Arc::new(Linked::held(pre));
        Ok(Self { name: Arc::from(name), source, sha256, formats, engine: engine.clone(), pre })
    }

    /// Lets go of the linked component until the next file it reads, which
    /// `relink` makes it for (a built-in, from the compile cache).
    pub(super) fn link_on_demand(&mut self, relink: Relink<ExtractorPre<ExtractState>>) {
        self.pre = Arc::new(Linked::on_demand(relink));
    }

    /// Whether its linked component is held now (else its next file loads it).
    pub fn is_linked(&self) -> bool {
        self.pre.is_held()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The extensions it reads.
    pub fn formats(&self) -> &[String] {
        &self.formats
    }

    /// The text of the file `name` with content `bytes`, read in a fresh
    /// instance under `limits`. Blocks.
    pub fn extract(
        &self,
        name: &str,
        bytes: &[u8],
        limits: &ExtractLimits,
        cancel: CancellationToken,
    ) -> Result<Extracted, ExtractFailure> {
        let started = Instant::now();
        let pre =
            self.pre.get().map_err(|reason| ExtractFailure::Unloadable { extractor: self.name.to_string(), reason })?;
        let mut store = new_store(&self.engine, limits, cancel);
        let result = pre.instantiate(&mut store).and_then(|x: Extractor| x.call_extract(&mut store, name, bytes));
        tracing::debug!(extractor = &*self.name, file = name, ms = started.elapsed().as_millis() as u64, "extracted");
        let guard = &store.data().guard;
        let format = extension(name).unwrap_or_default();
        let said = |message: &str| line(message, MAX_MESSAGE_CHARS);
        match result {
            Ok(Ok(extracted)) => tidy(extracted, limits.max_text_bytes),
            Ok(Err(ExtractError::Malformed(message))) => {
                Err(ExtractFailure::Malformed { format, message: said(&message) })
            }
            Ok(Err(ExtractError::NoText(message))) => Err(ExtractFailure::NoText(said(&message))),
            Ok(Err(ExtractError::Unsupported(message))) => Err(ExtractFailure::Unsupported(said(&message))),
            Err(trap) => Err(match (guard.interrupted, guard.memory_denied) {
                (Some(Interrupt::Deadline), _) => ExtractFailure::Timeout { secs: limits.timeout.as_secs() },
                (Some(Interrupt::Cancelled), _) => ExtractFailure::Cancelled,
                (None, Some(_)) => ExtractFailure::OutOfMemory { limit_mib: limits.memory_bytes >> 20 },
                (None, None) => {
                    let reason = match trap.downcast_ref::<wasmtime::Trap>() {
                        Some(t) => t.to_string(),
                        None => said(&format!("{trap:#}")),
                    };
                    ExtractFailure::Crashed { extractor: self.name.to_string(), reason }
                }
            }),
        }
    }
}

/// What an extractor returned, held to what the index accepts: the text
/// capped, labels one short line, metadata a few short fields and never the
/// indexer's own `ragbox.*` keys.
fn tidy(mut extracted: Extracted, max_text: usize) -> Result<Extracted, ExtractFailure> {
    // Counted as the indexer joins them: a blank line between parts.
    let text: usize = extracted.parts.iter().map(|p| p.text.len() + 2).sum();
    if text > max_text {
        return Err(ExtractFailure::TooMuchText { limit_mib: max_text >> 20 });
    }
    for Part { label, .. } in &mut extracted.parts {
        *label = label.as_deref().map(|l| line(l, MAX_LABEL_CHARS)).filter(|l| !l.is_empty());
    }
    extracted.title = extracted.title.as_deref().map(|t| line(t, MAX_METADATA_VALUE)).filter(|t| !t.is_empty());
    let fields = std::mem::take(&mut extracted.metadata);
    extracted.metadata = fields
        .into_iter()
        .map(|(k, v)| (line(&k, 64), line(&v, MAX_METADATA_VALUE)))
        .filter(|(k, v)| !k.is_empty() && !v.is_empty() && !reserved(k))
        .take(MAX_METADATA)
        .collect();
    Ok(extracted)
}

/// Keys the index sets itself: the indexer's `ragbox.*` bookkeeping (in any
/// case, with invisible characters) and Cortext's `conversation`.
fn reserved(key: &str) -> bool {
    let visible: String = key
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}' | '\u{feff}'))
        .collect();
    let lower = visible.to_lowercase();
    lower.starts_with("ragbox.") || lower == "conversation"
}

/// The lowercase extension of a file name.
fn extension(name: &str) -> Option<String> {
    let file = name.rsplit(['/', '\\']).next().unwrap_or(name);
    file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).filter(|e| !e.is_empty())
}

/// The extractors in force, by the extension each reads: built-ins first,
/// and a format a built-in reads is never taken by another component.
#[derive(Clone, Default)]
pub struct Extractors {
    by_format: BTreeMap<String, Arc<LoadedExtractor>>,
    loaded: Vec<Arc<LoadedExtractor>>,
    limits: ExtractLimits,
}

impl Extractors {
    /// Adds `extractor` for each format it reads that none has yet; `Err`
    /// names the formats already taken (the extractor is added for none).
    pub fn add(&mut self, extractor: LoadedExtractor) -> Result<(), String> {
        let taken: Vec<String> = extractor
            .formats
            .iter()
            .filter_map(|f| self.by_format.get(f).map(|by| format!(".{f} (read by {})", by.source)))
            .collect();
        if !taken.is_empty() {
            return Err(format!("extractor '{}' reads formats already taken: {}", extractor.name, taken.join(", ")));
        }
        let extractor = Arc::new(extractor);
        for format in &extractor.formats {
            self.by_format.insert(format.clone(), extractor.clone());
        }
        self.loaded.push(extractor);
        Ok(())
    }

    /// The loaded extractors.
    pub fn loaded(&self) -> &[Arc<LoadedExtractor>] {
        &self.loaded
    }

    /// Every extension some extractor reads, sorted.
    pub fn formats(&self) -> Vec<String> {
        self.by_format.keys().cloned().collect()
    }

    /// The extractor for files named like `name`: its name and the start of its sha256.
    pub fn identity(&self, name: &str) -> Option<String> {
        let extractor = self.by_format.get(&extension(name)?)?;
        Some(format!("{}@{}", extractor.name, extractor.sha256.get(..16).unwrap_or(&extractor.sha256)))
    }

    /// Reads the file `name` (`bytes`) with the extractor for its extension,
    /// within one file's budget and at most `within`.
    pub fn extract(
        &self,
        name: &str,
        bytes: &[u8],
        within: Duration,
        cancel: CancellationToken,
    ) -> Result<Extracted, ExtractFailure> {
        let ext = extension(name).unwrap_or_default();
        let extractor = self.by_format.get(&ext).ok_or(ExtractFailure::NoExtractor { ext })?;
        // The wait for a slot is the call's time, not the file's: its budget starts once it is read.
        let until = Instant::now().checked_add(within);
        let Some(_slot) = slots().take(until, &cancel) else {
            return Err(if cancel.is_cancelled() { ExtractFailure::Cancelled } else { ExtractFailure::Busy });
        };
        let within = until.map_or(within, |until| until.saturating_duration_since(Instant::now()));
        let limits = ExtractLimits { timeout: self.limits.timeout.min(within), ..self.limits };
        match read_below_searches(|| extractor.extract(name, bytes, &limits, cancel)) {
            // The call's own time ran out, not the file's budget: the file is not to blame.
            Err(ExtractFailure::Timeout { .. }) if within < self.limits.timeout => Err(ExtractFailure::Cancelled),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_waits_for_a_slot_until_its_deadline_or_cancel() {
        let slots: &'static Slots =
            Box::leak(Box::new(Slots { free: std::sync::Mutex::new(1), freed: std::sync::Condvar::new() }));
        let cancel = CancellationToken::new();
        let held = slots.take(None, &cancel).expect("a free slot");
        let started = Instant::now();
        assert!(slots.take(Some(started + Duration::from_millis(100)), &cancel).is_none(), "none came in time");
        assert!(started.elapsed() >= Duration::from_millis(100));
        let waiting = std::thread::spawn(move || slots.take(None, &CancellationToken::new()));
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        let _taken = waiting.join().unwrap().expect("a slot given back goes to who waits");
        cancel.cancel();
        assert!(slots.take(None, &cancel).is_none(), "a cancelled call stops waiting");
    }

    fn part(label: Option<&str>, text: &str) -> Part {
        Part { label: label.map(str::to_string), text: text.to_string() }
    }

    #[test]
    fn what_an_extractor_returns_is_held_to_what_the_index_accepts() {
        let extracted = Extracted {
            title: Some("  A\ttitle\n".into()),
            metadata: vec![
                ("author".into(), "Ada".into()),
                ("ragbox.index".into(), "skill".into()),
                (" ragbox.parts".into(), "0\tp. 9".into()),
                ("Ragbox\u{200b}.unreadable".into(), "no".into()),
                ("conversation".into(), "x".into()),
                ("empty".into(), " ".into()),
            ],
            parts: vec![part(Some("p.\t1\n"), "one"), part(Some("   "), "two")],
        };
        let tidy = tidy(extracted, 1 << 20).expect("within limits");
        assert_eq!(tidy.title.as_deref(), Some("A title"));
        assert_eq!(tidy.metadata, vec![("author".to_string(), "Ada".to_string())]);
        assert_eq!(tidy.parts[0].label.as_deref(), Some("p. 1"));
        assert_eq!(tidy.parts[1].label, None);
        let big = Extracted { title: None, metadata: vec![], parts: vec![part(None, &"x".repeat(2048))] };
        assert!(matches!(super::tidy(big, 1024), Err(ExtractFailure::TooMuchText { .. })));
    }

    #[test]
    fn extensions_are_read_from_the_file_name() {
        assert_eq!(extension("a/b/Report.PDF").as_deref(), Some("pdf"));
        assert_eq!(extension("a.b/README"), None);
        assert_eq!(extension("x."), None);
    }
}
