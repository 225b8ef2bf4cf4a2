//! The set of tools a server offers: the built-ins embedded in the binary, then
//! `.wasm` components from the tools folders. A component that fails to load,
//! that the policy refuses (disabled, not its pinned bytes, or a workspace's
//! component nobody trusted) or whose tool name is taken is rejected with a
//! reason; the rest still load. A built-in's name is never taken by another
//! component, even while the built-in is disabled. A workspace's component
//! whose bytes the user has not pinned is refused before it is compiled or
//! asked anything.

use super::RuntimeError;
use super::cache::CompileCache;
use super::component::Source;
use super::extract::{Extractors, LoadedExtractor, is_extractor};
use super::tool::LoadedTool;
use crate::config::{Limits, Origin};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::Engine;

/// The built-in most sessions call first (ragbox's own `search`): a server
/// links it while it warms up, so that its first call does not load it from
/// the compile cache (1 to 3 ms of a first answer, measured).
pub const FIRST_CALLED: &str = "search";

/// Largest component file accepted.
const MAX_COMPONENT_BYTES: u64 = crate::datadir::MAX_COMPONENT_BYTES;

/// A component file found in a tools folder: its bytes, or why they were not read.
pub struct Found {
    /// Where it is.
    pub source: Source,
    /// Which folder, which decides how far it is trusted.
    pub origin: Origin,
    /// Its bytes.
    pub bytes: Result<Vec<u8>, String>,
}

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

/// The fingerprint of the components in `dirs` and of `files` (links are
/// described, not followed).
pub fn fingerprint(dirs: &[PathBuf], files: &[PathBuf]) -> Fingerprint {
    dirs.iter()
        .flat_map(|d| wasm_files(d))
        .chain(files.iter().cloned())
        .map(|p| {
            let meta = std::fs::symlink_metadata(&p).ok();
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
    /// Every built-in's name (tools and extractors), loaded or disabled: names no other component may take.
    builtin_names: Vec<String>,
    /// The extractor components, by the formats they read.
    extractors: Arc<Extractors>,
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
    /// Loads `builtins`, then every component `found`, keeping those `admit`
    /// lets in; a workspace's component whose sha256 `pinned` does not know
    /// is refused unread.
    pub fn load(
        engine: &Engine,
        cache: &CompileCache,
        builtins: &[crate::builtins::Builtin],
        found: Vec<Found>,
        describe_limits: &Limits,
        admit: Admit,
        pinned: &dyn Fn(&str) -> bool,
    ) -> Self {
        let mut catalog = Self::default();
        let add = |catalog: &mut Self, source: Source, origin: Origin, loaded: Result<Loaded, String>| {
            let tool = match loaded {
                Ok(Loaded::Tool(tool)) => tool,
                Ok(Loaded::Extractor(extractor)) => return catalog.add_extractor(extractor, origin, admit),
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
        for builtin in builtins {
            let (bytes, sha256) = (builtin.bytes, builtin.sha256);
            let source = Source::BuiltIn(builtin.name.to_string());
            let loaded =
                load_component(engine, cache, source.clone(), bytes, sha256, describe_limits).map(|mut loaded| {
                    link_on_demand(&mut loaded, engine, cache, &source, bytes);
                    loaded
                });
            add(&mut catalog, source, Origin::BuiltIn, loaded);
        }
        for Found { source, origin, bytes } in found {
            let bytes = match bytes {
                Ok(bytes) => bytes,
                Err(why) => {
                    catalog.reject(source, why);
                    continue;
                }
            };
            let sha256 = hex::encode(Sha256::digest(&bytes));
            if origin == Origin::Workspace && !pinned(&sha256) {
                // Compiling and describing would already run its code: neither happens.
                let reason = untrusted(&source, &sha256);
                catalog.reject(source, reason);
                continue;
            }
            let loaded = load_component(engine, cache, source.clone(), &bytes, &sha256, describe_limits);
            add(&mut catalog, source, origin, loaded);
        }
        catalog
    }

    /// The extractors that read documents which are not text, by format.
    pub fn extractors(&self) -> Arc<Extractors> {
        self.extractors.clone()
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

    /// Links [`FIRST_CALLED`] now, when it is served and was let go.
    pub fn link_first_called(&self) -> Result<(), String> {
        self.get(FIRST_CALLED).map_or(Ok(()), LoadedTool::link)
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

    /// Adds an extractor the policy admits (under its name, as a tool would
    /// be) for the formats no earlier one reads.
    fn add_extractor(&mut self, extractor: LoadedExtractor, origin: Origin, admit: Admit) {
        let source = extractor.source.clone();
        // Its name keys its `[tools.NAME]` section: a built-in's is never shared.
        if origin == Origin::BuiltIn {
            self.builtin_names.push(extractor.name().to_string());
        } else if self.is_builtin_name(extractor.name()) {
            let reason = format!("extractor name '{}' is a built-in's; rename the file", extractor.name());
            return self.reject(source, reason);
        }
        let verdict = admit(extractor.name(), &extractor.sha256, origin)
            .map_err(|reason| format!("extractor '{}' {reason}", extractor.name()))
            .and_then(|()| Arc::make_mut(&mut self.extractors).add(extractor));
        match verdict {
            Ok(()) => tracing::debug!(source = %source, "extractor loaded"),
            Err(reason) => self.reject(source, reason),
        }
    }

    fn reject(&mut self, source: Source, reason: String) {
        tracing::warn!("component {source} not loaded: {reason}");
        self.rejected.push(Rejected { source, reason });
    }
}

/// A loaded component: a tool, or an extractor of document formats.
pub enum Loaded {
    /// A component of the `tool` world.
    Tool(LoadedTool),
    /// A component of the `extractor` world.
    Extractor(LoadedExtractor),
}

/// Lets go of a built-in's linked component until its first use, when the
/// compile cache holds its code: made again from there in a few
/// milliseconds, instead of held by every server whose agent never calls it.
/// (A third-party component's bytes are not kept: it stays held.)
fn link_on_demand(loaded: &mut Loaded, engine: &Engine, cache: &CompileCache, source: &Source, bytes: &'static [u8]) {
    let sha256 = match loaded {
        Loaded::Tool(tool) => tool.sha256.clone(),
        Loaded::Extractor(extractor) => extractor.sha256.clone(),
    };
    if !cache.holds(&sha256) {
        return;
    }
    let component = {
        let (engine, cache, name) = (engine.clone(), cache.clone(), source.to_string());
        move || cache.load(&engine, bytes, &sha256, &name).map_err(|e| e.to_string())
    };
    let (engine, name) = (engine.clone(), source.to_string());
    match loaded {
        Loaded::Tool(tool) => tool.link_on_demand(Arc::new(move || {
            super::tool::link(&engine, &component()?, &name).map_err(|e| e.to_string())
        })),
        Loaded::Extractor(extractor) => {
            extractor.link_on_demand(Arc::new(move || super::extract::link(&engine, &component()?)))
        }
    }
}

/// The limits `describe()` runs under: it must answer fast and small.
pub fn describe_limits() -> Limits {
    let mut limits = crate::config::Config::default().limits_for("(describe)", false);
    limits.timeout = std::time::Duration::from_secs(5);
    limits.max_output_bytes = 1 << 20;
    limits
}

/// Compiles (or loads from the cache) one component, `sha256` the hex digest
/// of its `bytes`, and asks it what it is: a tool describes itself, an
/// extractor names its formats.
pub fn load_component(
    engine: &Engine,
    cache: &CompileCache,
    source: Source,
    bytes: &[u8],
    sha256: &str,
    limits: &Limits,
) -> Result<Loaded, String> {
    let sha256 = sha256.to_string();
    let component = cache.load(engine, bytes, &sha256, &source.to_string()).map_err(|e| e.to_string())?;
    if is_extractor(engine, &component) {
        let name = source.stem();
        return LoadedExtractor::new(engine, &component, &name, source.clone(), sha256)
            .map(Loaded::Extractor)
            .map_err(|message| format!("extractor {source}: {message}"));
    }
    LoadedTool::new(engine, &component, source, sha256, limits).map(Loaded::Tool).map_err(|e| e.to_string())
}

/// Why a workspace's component at `source` with bytes `sha256` is refused
/// before it is compiled, and how to trust it.
pub fn untrusted(source: &impl std::fmt::Display, sha256: &str) -> String {
    format!(
        "came with this workspace and is not trusted, so it is neither compiled nor run: a workspace's \
         components load only once you trust their bytes. If you do, run `ragbox tools trust {source}` (it \
         records sha256 = \"{sha256}\" in {})",
        crate::config::user_config_shown()
    )
}

/// `*.wasm` files directly in `dir` (the user's own folder: links to
/// components are theirs to make), sorted; none when the folder is missing.
pub fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .collect();
    files.sort();
    files
}

/// A component file's bytes: a regular file (opened without waiting on a
/// FIFO), refused above the size limit.
pub fn read_component(path: &Path) -> Result<Vec<u8>, RuntimeError> {
    use std::io::Read as _;
    let read_err = |source| RuntimeError::Read { path: path.to_path_buf(), source };
    let file = crate::platform::no_block(std::fs::OpenOptions::new().read(true)).open(path).map_err(read_err)?;
    if !file.metadata().map_err(read_err)?.is_file() {
        return Err(read_err(std::io::Error::other("not a regular file")));
    }
    let mut bytes = Vec::new();
    file.take(MAX_COMPONENT_BYTES + 1).read_to_end(&mut bytes).map_err(read_err)?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(read_err(std::io::Error::other(format!(
            "over the {} MiB limit for a component",
            MAX_COMPONENT_BYTES >> 20
        ))));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::runtime::{CallEnv, ExtractFailure, Outcome};
    use std::time::Duration;
    use tokio_util::sync::CancellationToken;

    fn builtins(cache: &CompileCache, engine: &Engine) -> Catalog {
        let limits = Config::default().limits_for("(describe)", false);
        Catalog::load(engine, cache, &crate::builtins::components(), Vec::new(), &limits, &|_, _, _| Ok(()), &|_| true)
    }

    #[test]
    fn the_built_ins_sha256_computed_at_build_time_is_their_bytes_digest() {
        let builtins = crate::builtins::components();
        assert!(builtins.len() >= 14);
        for builtin in builtins {
            assert_eq!(builtin.sha256, hex::encode(Sha256::digest(builtin.bytes)), "{}", builtin.name);
        }
    }

    /// The built-ins, from the test suites' compile cache (warm once they
    /// ran: compiling them all here would take a minute).
    fn cached_builtins() -> Catalog {
        let engine = crate::runtime::new_engine().unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-compile-cache");
        builtins(&CompileCache::new(&engine, Some(dir)), &engine)
    }

    #[test]
    fn built_ins_are_let_go_after_start_and_linked_again_at_their_first_call() {
        let catalog = cached_builtins();
        assert!(
            catalog.rejected().is_empty(),
            "{:?}",
            catalog.rejected().iter().map(|r| &r.reason).collect::<Vec<_>>()
        );
        assert!(catalog.tools().len() >= 10);
        assert!(catalog.tools().iter().all(|t| !t.is_linked()), "every built-in tool let go after describe()");
        let extractors = catalog.extractors();
        assert!(!extractors.loaded().is_empty() && extractors.loaded().iter().all(|x| !x.is_linked()));

        // A call links its tool (and only it): the call runs, here to the tool's own refusal.
        let search = catalog.get("search").unwrap();
        let limits = Config::default().limits_for("search", false);
        let outcome =
            search.call(r#"{"query":"pelican"}"#, CallEnv::refused("no workspace in this test".into()), &limits);
        assert!(!matches!(outcome, Outcome::Failed(_)), "{outcome:?}");
        assert!(search.is_linked());
        assert_eq!(catalog.tools().iter().filter(|t| t.is_linked()).count(), 1);

        // A file read links its extractor: garbage is the document's fault, not a failure to load.
        let read = extractors.extract("x.pdf", b"not a pdf", Duration::from_secs(30), CancellationToken::new());
        assert!(!matches!(read, Err(ExtractFailure::Unloadable { .. })), "{read:?}");
        assert!(extractors.loaded().iter().any(|x| x.is_linked()));
    }

    #[test]
    fn the_first_called_built_in_is_linked_ahead_and_only_it() {
        let catalog = cached_builtins();
        assert!(catalog.tools().iter().all(|t| !t.is_linked()));
        catalog.link_first_called().unwrap();
        let linked: Vec<&str> = catalog.tools().iter().filter(|t| t.is_linked()).map(LoadedTool::name).collect();
        assert_eq!(linked, [FIRST_CALLED]);
    }
}
