//! On-disk cache of compiled components, so a server starts in milliseconds
//! instead of running Cranelift on every start.
//!
//! Entries live at `<dir>/<engine hash>/<wasm sha256>.cwasm`: the engine hash
//! covers wasmtime's version, target and settings, so a new ragbox build never
//! loads an old artifact. Only files this cache wrote are ever deserialized.
//! Beside each entry, `<wasm sha256>.lock`: the process that compiles holds it,
//! so servers started together compile a component once.

use super::RuntimeError;
use std::fs::TryLockError;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The compile cache; `None` dir disables it.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: Option<PathBuf>,
}

impl CompileCache {
    /// A cache under `dir` (created on first write); `None` compiles every time.
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let dir = dir.map(|d| d.join(format!("{:016x}", hasher.finish())));
        Self { dir }
    }

    /// The default location: `$RAGBOX_COMPILE_CACHE`, else the user cache dir
    /// (`~/.cache/ragbox/components`); `RAGBOX_COMPILE_CACHE=off` disables it.
    pub fn default_dir() -> Option<PathBuf> {
        crate::platform::user_cache_dir("RAGBOX_COMPILE_CACHE", "components")
    }

    /// Whether the cache holds the compiled component whose wasm has `sha256`.
    pub fn holds(&self, sha256: &str) -> bool {
        self.entry(sha256).is_some_and(|e| e.is_file())
    }

    fn entry(&self, sha256: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{sha256}.cwasm")))
    }

    /// Compiles (or loads from the cache) `wasm` (whose sha256 is `sha256`).
    /// Servers started together (several agents', a CLI's) compile a
    /// component once: the others wait on its entry's lock, then load it.
    pub fn load(
        &self,
        engine: &Engine,
        wasm: &[u8],
        sha256: &str,
        source_name: &str,
    ) -> Result<Component, RuntimeError> {
        let Some(entry) = self.entry(sha256) else {
            return compile(engine, wasm, source_name);
        };
        // No entry yet: another process may be compiling it; wait for that one.
        let _lock = if entry.exists() { None } else { lock_entry(&entry, source_name) };
        if entry.exists()
            && let Some(component) = deserialize(engine, &entry)
        {
            return Ok(component);
        }
        let component = compile(engine, wasm, source_name)?;
        if let Err(e) = store(&component, &entry) {
            tracing::warn!("cannot write compile cache entry {}: {e}", entry.display());
        }
        Ok(component)
    }
}

/// Runs Cranelift over `wasm`.
fn compile(engine: &Engine, wasm: &[u8], source_name: &str) -> Result<Component, RuntimeError> {
    Component::new(engine, wasm).map_err(|e| RuntimeError::Compile {
        source_name: source_name.to_string(),
        message: match not_a_component(wasm) {
            Some(fix) => fix.to_string(),
            None => format!("{e:#}"),
        },
    })
}

/// The component in a cache entry; `None`, said in the log, where it is unusable.
fn deserialize(engine: &Engine, entry: &Path) -> Option<Component> {
    // SAFETY: the file was written by `store` from a component this engine
    // compiled; wasmtime also checks its header against the engine.
    let loaded = unsafe { Component::deserialize_file(engine, entry) }.or_else(|_| {
        // Where a file cannot be mapped executable (wine), read it into memory instead.
        let bytes = std::fs::read(entry)?;
        // SAFETY: as above.
        unsafe { Component::deserialize(engine, &bytes) }
    });
    loaded.map_err(|e| tracing::warn!("compile cache entry {} unusable, recompiling: {e}", entry.display())).ok()
}

/// How long a server waits for another process's compile before doing its own
/// (one stopped in a debugger must not hang every later start).
const LOCK_WAIT: Duration = Duration::from_secs(300);

/// Takes the entry's lock file, `<sha256>.lock` beside it (the OS lets go of
/// it when its holder exits, crash included). `None` where none can be had
/// (a read-only or lockless file system, or past [`LOCK_WAIT`]): the caller
/// then compiles as if no other process were about.
fn lock_entry(entry: &Path, source_name: &str) -> Option<std::fs::File> {
    let path = entry.with_extension("lock");
    let open = || {
        std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)
    };
    let file = open().map_err(|e| tracing::debug!("no compile lock {}: {e}", path.display())).ok()?;
    let deadline = Instant::now() + LOCK_WAIT;
    let mut said = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Some(file),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                if !said {
                    tracing::info!("waiting for another ragbox process compiling {source_name}");
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                tracing::warn!("{} still locked after {LOCK_WAIT:?}: compiling {source_name} here", path.display());
                return None;
            }
            Err(TryLockError::Error(e)) => {
                tracing::debug!("no compile lock {}: {e}", path.display());
                return None;
            }
        }
    }
}

/// What to do when `wasm` is not a component at all: the compiler's own
/// message ("unknown binary version") names no fix.
fn not_a_component(wasm: &[u8]) -> Option<&'static str> {
    const CORE_MODULE: [u8; 8] = *b"\0asm\x01\0\0\0";
    if wasm.starts_with(&CORE_MODULE) {
        Some(
            "it is a core WebAssembly module, not a component: build it with `--target wasm32-wasip2` \
             (a wasm32-wasip1 module can be wrapped with `wasm-tools component new --adapt`)",
        )
    } else if !wasm.starts_with(b"\0asm") {
        Some("it is not WebAssembly: give the component (`.wasm`) that the build wrote")
    } else {
        None
    }
}

/// Writes atomically: a crash leaves either no entry or a whole one.
fn store(component: &Component, entry: &Path) -> std::io::Result<()> {
    let bytes = component.serialize().map_err(std::io::Error::other)?;
    // Two threads may compile the same component: each writes a file of its own.
    crate::platform::write_whole(entry, |file| std::io::Write::write_all(file, &bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_component_is_said_with_the_fix() {
        let core = b"\0asm\x01\0\0\0\x01\x04\x01\x60\0\0";
        assert!(not_a_component(core).unwrap().contains("--target wasm32-wasip2"));
        assert!(not_a_component(b"#!/bin/sh\necho hi\n").unwrap().contains("not WebAssembly"));
        assert_eq!(not_a_component(b"\0asm\x0d\0\x01\0"), None, "a component's header: the compiler says the rest");
        // And through the loader, as `ragbox tools` shows it.
        let engine = crate::runtime::new_engine().unwrap();
        let e = CompileCache::new(&engine, None).load(&engine, core, "00", "core.wasm").err().unwrap();
        assert!(e.to_string().contains("cannot compile component core.wasm: it is a core WebAssembly module"), "{e}");
    }

    /// A server that finds another process compiling a component waits for
    /// it, then loads what that one wrote instead of compiling it again.
    #[test]
    fn a_component_compiled_elsewhere_is_waited_for_then_loaded() {
        let engine = crate::runtime::new_engine().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(&engine, Some(dir.path().to_path_buf()));
        let wasm = wat::parse_str("(component)").unwrap();
        let entry = cache.entry("ab").unwrap();
        let other = lock_entry(&entry, "the other process's").unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| done.send(cache.load(&engine, &wasm, "ab", "x.wasm").map(drop)).unwrap());
            std::thread::sleep(Duration::from_millis(300));
            assert!(finished.try_recv().is_err(), "compiled while another process held the lock");
            store(&compile(&engine, &wasm, "x.wasm").unwrap(), &entry).unwrap();
            let written = std::fs::metadata(&entry).unwrap().modified().unwrap();
            drop(other);
            finished.recv().unwrap().unwrap();
            let now = std::fs::metadata(&entry).unwrap().modified().unwrap();
            assert_eq!(now, written, "the entry was compiled and written again");
        });
    }
}
