//! The set of tools a server offers: the built-ins embedded in the binary, then
//! `.wasm` components from the tools folders. A component that fails to load,
//! that the policy refuses (disabled, not its pinned bytes, or a workspace's
//! component nobody trusted) or whose tool name is taken is rejected with a
//! reason; the rest still load. A built-in's name is never taken by another
//! component, even while the built-in is disabled.

use super::RuntimeError;
use super::cache::CompileCache;
use super::tool::{LoadedTool, Source};
use crate::config::{Limits, Origin};
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

/// Decides whether a component offering a tool (name, sha256 of its bytes,
/// where it was found) may load; `Err` says why not.
pub type Admit<'a> = &'a dyn Fn(&str, &str, Origin) -> Result<(), String>;

/// What the tools folders and config files hold, to notice a change: each
/// file's path, size and modification time.
pub type Fingerprint = Vec<(PathBuf, u64, Option<std::time::SystemTime>)>;

/// The fingerprint of the components in `dirs` and of `files`.
pub fn fingerprint(dirs: &[(PathBuf, Origin)], files: &[PathBuf]) -> Fingerprint {
    dirs.iter()
        .flat_map(|(d, _)| wasm_files(d))
        .chain(files.iter().cloned())
        .map(|p| {
            let meta = std::fs::metadata(&p).ok();
            let size = meta.as_ref().map_or(0, |m| m.len());
            (p, size, meta.and_then(|m| m.modified().ok()))
        })
        .collect()
}

/// The loaded tools, in load order, and the rejected components.
#[derive(Clone, Default)]
pub struct Catalog {
    tools: Vec<LoadedTool>,
    rejected: Vec<Rejected>,
    /// Every built-in's tool name, loaded or disabled: names no other component may take.
    builtin_names: Vec<String>,
}

/// Why a component offering `name`, a built-in tool's name, is refused.
fn builtin_name_taken(name: &str) -> String {
    format!("tool name '{name}' is a built-in tool's, and built-ins are never replaced; rename it")
}

/// Why a second component offering `name` is refused.
fn name_taken(name: &str, by: &Source) -> String {
    format!("tool name '{name}' is already taken by {by}; rename one of them or remove one")
}

impl Catalog {
    /// Loads `builtins`, then every `*.wasm` in each of `dirs` (missing folders
    /// are skipped), keeping those `admit` lets in.
    pub fn load(
        engine: &Engine,
        cache: &CompileCache,
        builtins: &[(&str, &[u8])],
        dirs: &[(PathBuf, Origin)],
        describe_limits: &Limits,
        admit: Admit,
    ) -> Self {
        let mut catalog = Self::default();
        let add = |catalog: &mut Self, source: Source, origin: Origin, bytes: &[u8]| {
            let tool = match load_one(engine, cache, source.clone(), bytes, describe_limits) {
                Ok(tool) => tool,
                Err(reason) => return catalog.reject(source, reason),
            };
            if origin == Origin::BuiltIn {
                catalog.builtin_names.push(tool.name().to_string());
            }
            match catalog.verdict(&tool, origin, admit) {
                Ok(()) => catalog.add(tool),
                Err(reason) => catalog.reject(source, reason),
            }
        };
        for (name, bytes) in builtins {
            add(&mut catalog, Source::BuiltIn((*name).to_string()), Origin::BuiltIn, bytes);
        }
        for (dir, origin) in dirs {
            for path in wasm_files(dir) {
                let source = Source::File(path.clone());
                match read_component(&path) {
                    Ok(bytes) => add(&mut catalog, source, *origin, &bytes),
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

    /// True when `name` is a built-in tool's, whether or not that built-in is enabled.
    pub fn is_builtin_name(&self, name: &str) -> bool {
        self.builtin_names.iter().any(|n| n == name)
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&LoadedTool> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Whether `tool`, found at `origin`, may join this catalog under `admit`
    /// (the config's policy); `Err` says why not. A tool with the same bytes
    /// as the loaded one of its name is that tool.
    pub fn verdict(&self, tool: &LoadedTool, origin: Origin, admit: Admit) -> Result<(), String> {
        if origin != Origin::BuiltIn && self.is_builtin_name(tool.name()) {
            return Err(builtin_name_taken(tool.name()));
        }
        admit(tool.name(), &tool.sha256, origin).map_err(|reason| format!("tool '{}' {reason}", tool.name()))?;
        match self.get(tool.name()) {
            Some(existing) if existing.sha256 != tool.sha256 => Err(name_taken(tool.name(), &existing.source)),
            _ => Ok(()),
        }
    }

    fn add(&mut self, tool: LoadedTool) {
        match self.get(tool.name()) {
            Some(existing) => {
                let reason = name_taken(tool.name(), &existing.source);
                self.reject(tool.source.clone(), reason);
            }
            None => {
                tracing::debug!(tool = tool.name(), source = %tool.source, "loaded");
                self.tools.push(tool);
            }
        }
    }

    fn reject(&mut self, source: Source, reason: String) {
        tracing::warn!("component {source} not loaded: {reason}");
        self.rejected.push(Rejected { source, reason });
    }
}

/// Compiles (or loads from the cache) one component and asks it to describe itself.
pub fn load_one(
    engine: &Engine,
    cache: &CompileCache,
    source: Source,
    bytes: &[u8],
    limits: &Limits,
) -> Result<LoadedTool, String> {
    let sha256 = hex::encode(Sha256::digest(bytes));
    cache
        .load(engine, bytes, &sha256, &source.to_string())
        .and_then(|component| LoadedTool::new(engine, &component, source, sha256, limits))
        .map_err(|e| e.to_string())
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

/// A component file's bytes, refused above the size limit.
pub fn read_component(path: &Path) -> Result<Vec<u8>, RuntimeError> {
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
