//! On-disk cache of compiled components, so a server starts in milliseconds
//! instead of running Cranelift on every start.
//!
//! Entries live at `<dir>/<engine hash>/<wasm sha256>.cwasm`: the engine hash
//! covers wasmtime's version, target and settings, so a new ragbox build never
//! loads an old artifact. Only files this cache wrote are ever deserialized.

use super::RuntimeError;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
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

    /// Compiles `wasm` (whose sha256 is `sha256`), or loads it from the cache.
    pub fn load(
        &self,
        engine: &Engine,
        wasm: &[u8],
        sha256: &str,
        source_name: &str,
    ) -> Result<Component, RuntimeError> {
        let entry = self.entry(sha256);
        if let Some(entry) = entry.as_ref().filter(|e| e.exists()) {
            // SAFETY: the file was written by `store` below from a component this
            // engine compiled; wasmtime also checks its header against the engine.
            let loaded = unsafe { Component::deserialize_file(engine, entry) }.or_else(|_| {
                // Where a file cannot be mapped executable (wine), read it into memory instead.
                let bytes = std::fs::read(entry)?;
                // SAFETY: as above.
                unsafe { Component::deserialize(engine, &bytes) }
            });
            match loaded {
                Ok(component) => return Ok(component),
                Err(e) => tracing::warn!("compile cache entry {} unusable, recompiling: {e}", entry.display()),
            }
        }
        let component = Component::new(engine, wasm).map_err(|e| RuntimeError::Compile {
            source_name: source_name.to_string(),
            message: match not_a_component(wasm) {
                Some(fix) => fix.to_string(),
                None => format!("{e:#}"),
            },
        })?;
        if let Some(entry) = entry
            && let Err(e) = store(&component, &entry)
        {
            tracing::warn!("cannot write compile cache entry {}: {e}", entry.display());
        }
        Ok(component)
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
}
