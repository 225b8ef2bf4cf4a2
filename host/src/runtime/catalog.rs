//! The set of tools a server offers: the built-ins embedded in the binary, then
//! `.wasm` components from the tools folders. A component that fails to load or
//! whose tool name is taken is rejected with a reason; the rest still load.

use super::RuntimeError;
use super::cache::CompileCache;
use super::tool::{LoadedTool, Source};
use crate::config::Limits;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use wasmtime::Engine;

/// Largest component file accepted.
const MAX_COMPONENT_BYTES: u64 = 64 << 20;

/// A component that was not loaded, and why.
#[derive(Debug, Clone)]
pub struct Rejected {
    /// Where it came from.
    pub source: Source,
    /// Why it was refused.
    pub reason: String,
}

/// The loaded tools, in load order, and the rejected components.
#[derive(Clone, Default)]
pub struct Catalog {
    tools: Vec<LoadedTool>,
    rejected: Vec<Rejected>,
}

impl Catalog {
    /// Loads `builtins`, then every `*.wasm` in each of `dirs` (missing folders are skipped).
    pub fn load(
        engine: &Engine,
        cache: &CompileCache,
        builtins: &[(&str, &[u8])],
        dirs: &[PathBuf],
        describe_limits: &Limits,
    ) -> Self {
        let mut catalog = Self::default();
        for (name, bytes) in builtins {
            catalog.add(engine, cache, Source::BuiltIn((*name).to_string()), bytes, describe_limits);
        }
        for dir in dirs {
            for path in wasm_files(dir) {
                let source = Source::File(path.clone());
                match read_component(&path) {
                    Ok(bytes) => catalog.add(engine, cache, source, &bytes, describe_limits),
                    Err(e) => catalog.reject(source, e.to_string()),
                }
            }
        }
        catalog
    }

    /// The loaded tools.
    pub fn tools(&self) -> &[LoadedTool] {
        &self.tools
    }

    /// The components that were refused.
    pub fn rejected(&self) -> &[Rejected] {
        &self.rejected
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&LoadedTool> {
        self.tools.iter().find(|t| t.name() == name)
    }

    fn add(&mut self, engine: &Engine, cache: &CompileCache, source: Source, bytes: &[u8], limits: &Limits) {
        let sha256 = hex::encode(Sha256::digest(bytes));
        let loaded = cache
            .load(engine, bytes, &sha256, &source.to_string())
            .and_then(|component| LoadedTool::new(engine, &component, source.clone(), sha256, limits));
        match loaded {
            Ok(tool) => match self.get(tool.name()) {
                Some(existing) => {
                    let reason = format!(
                        "tool name '{}' is already taken by {}; rename one of them or remove one",
                        tool.name(),
                        existing.source
                    );
                    self.reject(source, reason);
                }
                None => {
                    tracing::debug!(tool = tool.name(), source = %tool.source, "loaded");
                    self.tools.push(tool);
                }
            },
            Err(e) => self.reject(source, e.to_string()),
        }
    }

    fn reject(&mut self, source: Source, reason: String) {
        tracing::warn!("component {source} not loaded: {reason}");
        self.rejected.push(Rejected { source, reason });
    }
}

/// `*.wasm` files directly in `dir`, sorted; none when the folder is missing.
fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .collect();
    files.sort();
    files
}

fn read_component(path: &Path) -> Result<Vec<u8>, RuntimeError> {
    let read_err = |source| RuntimeError::Read { path: path.to_path_buf(), source };
    let len = std::fs::metadata(path).map_err(read_err)?.len();
    if len > MAX_COMPONENT_BYTES {
        return Err(read_err(std::io::Error::other(format!(
            "{len} bytes is over the {} MiB limit for a component",
            MAX_COMPONENT_BYTES >> 20
        ))));
    }
    std::fs::read(path).map_err(read_err)
}
