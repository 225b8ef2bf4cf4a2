//! Configuration, from two files trusted differently.
//!
//! The user's own `config.toml` (in `$RAGBOX_CONFIG_DIR`, else the platform's
//! config dir, e.g. `~/.config/ragbox/`) may grant anything. The workspace's
//! `.ragbox/config.toml` came with the folder, perhaps with a cloned repository,
//! so it may only narrow: its limits are caps, it may turn tools off and take
//! grants away. Whatever in it would widen access or speak for the user
//! (other workspaces, extra read folders, grants, pins, a shared store, the
//! model) is ignored and reported in `ignored`.
//!
//! ```toml
//! allowed_workspaces = ["/home/me/notes"]   # user's file only: other folders `workspace_path` may name
//! index_secrets = [".env.example"]    # user's file only: files named like credentials (.env, *.pem, …)
//!                                      # that may be indexed after all (patterns as in .gitignore)
//! model = "/models/bge-small-en-v1.5"  # user's file only: a sentence-transformers folder
//!                                      # (relative to this file's folder; default: all-MiniLM-L6-v2)
//!
//! [limits]                # defaults for every tool call
//! timeout_secs = 30       # read-only tools, and every third-party tool
//! indexing_timeout_secs = 3600   # built-in tools that write the index
//! memory_mib = 512
//! max_output_mib = 16
//!
//! [tools.search_workspace]   # per-tool overrides of [limits]
//! timeout_secs = 10
//!
//! [tools.my_indexer]      # user's file only, but for turning things off:
//! grants = ["corpus-write"]
//! sha256 = "9f86d0…"      # the bytes trusted (`ragbox tools trust FILE` writes it)
//! read_dirs = ["/srv/docs"] # extra folders it may read, at their absolute paths
//!
//! [tools.embed_document]
//! enabled = false         # not offered at all
//!
//! [store]                 # user's file only: a shared PostgreSQL + pgvector instead of .ragbox/store.redb
//! url = "postgres://ana@db.internal:5432/ragbox?sslmode=require"   # no password here
//! collection = "team-docs"   # default: the folder's name and a hash of its path (`notes-1f2e3d4c`)
//! shared_collections = ["team-docs"]   # collections several folders or machines may share
//! password_env = "RAGBOX_PG_PASSWORD"   # else PGPASSWORD, else ~/.pgpass
//! ca_file = "/etc/ssl/corp-ca.pem"      # extra CA for TLS
//!
//! [cache]                 # user's file only: the embedding cache (docs/cache.md)
//! max_mib = 1024          # its size cap; the least recently used vectors go first
//! enabled = true          # false: every chunk is embedded, nothing is kept
//! team = true             # with a [store]: share vectors through that database's cache table
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::datadir::{CONFIG_FILE, DATA_DIR};
use crate::datadir::{DataDir, DataDirError};

/// Largest user config file read.
const MAX_USER_CONFIG_BYTES: u64 = 1 << 20;

pub use crate::platform::user_config_dir;

/// The user's config file as messages name it (it may not exist yet).
pub fn user_config_shown() -> String {
    user_config_dir().map_or_else(|| "your config.toml".to_string(), |d| d.join(CONFIG_FILE).display().to_string())
}

/// Errors reading the config file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The config file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown keys.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The config file.
        path: PathBuf,
        /// What is wrong, with line and column.
        message: String,
    },
    /// The workspace's data dir holds a link or special file, or cannot be read.
    #[error(transparent)]
    DataDir(#[from] DataDirError),
}

/// One config file as written; every field is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Folders besides the served workspace that a call's `workspace_path` may name.
    #[serde(default)]
    pub allowed_workspaces: Vec<PathBuf>,
    /// Files whose names mark them secret that may be indexed after all
    /// (user's config only), as `.gitignore` patterns.
    #[serde(default)]
    pub index_secrets: Vec<String>,
    /// Default limits for every tool call.
    #[serde(default)]
    pub limits: LimitsFile,
    /// The embedding model folder (user's config only; relative to the
    /// user's config dir); default `$RAGBOX_MODEL`, else all-MiniLM-L6-v2 in
    /// the user cache dir.
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// Per-tool overrides, keyed by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOverrides>,
    /// A shared store instead of the workspace's own (user's config only).
    #[serde(default)]
    pub store: Option<StoreFile>,
    /// The embedding cache (user's config only).
    #[serde(default)]
    pub cache: Option<CacheFile>,
}

/// `[cache]` as written: the per-user embedding cache.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheFile {
    /// Its size cap in MiB (default [`crate::embed_cache::DEFAULT_MAX_MIB`]).
    pub max_mib: Option<u64>,
    /// `false` turns the cache off: every chunk is embedded, nothing is kept.
    pub enabled: Option<bool>,
    /// `false` keeps vectors out of (and away from) a shared store's cache table.
    pub team: Option<bool>,
}

/// `[store]` as written: where the shared store is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreFile {
    /// `postgres://USER@HOST:PORT/DB[?sslmode=require]`, without a password.
    pub url: Option<String>,
    /// The collection's name; default: the workspace folder's name and a
    /// short hash of the workspace's identity.
    pub collection: Option<String>,
    /// Collections that several workspaces (other folders, other machines)
    /// may share; any other is bound to the one workspace that made it.
    #[serde(default)]
    pub shared_collections: Vec<String>,
    /// The environment variable holding the password.
    pub password_env: Option<String>,
    /// Extra CA certificates (PEM) trusted for TLS.
    pub ca_file: Option<PathBuf>,
}

/// `[limits]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    /// Wall-clock limit for a read-only or third-party tool call, in seconds.
    pub timeout_secs: Option<u64>,
    /// Wall-clock limit for a built-in tool that writes the index, in seconds.
    pub indexing_timeout_secs: Option<u64>,
    /// Linear memory a component may use, in MiB.
    pub memory_mib: Option<u64>,
    /// Largest result a tool may return, in MiB.
    pub max_output_mib: Option<u64>,
}

/// Overrides of `[limits]` and grants for one tool.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverrides {
    /// Wall-clock limit in seconds.
    pub timeout_secs: Option<u64>,
    /// Memory limit in MiB.
    pub memory_mib: Option<u64>,
    /// Result size limit in MiB.
    pub max_output_mib: Option<u64>,
    /// What the tool may do beyond reading: `"corpus-write"` lets it change the index.
    /// Built-in tools that write the index hold it already.
    pub grants: Option<Vec<Grant>>,
    /// `false` leaves the tool out of the server altogether.
    pub enabled: Option<bool>,
    /// The sha256 (hex) the component's bytes must have; any other is refused.
    pub sha256: Option<String>,
    /// Folders besides the workspace the tool may read (read-only), relative to
    /// the workspace or absolute; the tool sees each at its absolute path.
    #[serde(default)]
    pub read_dirs: Vec<PathBuf>,
}

/// A permission a tool can be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Grant {
    /// Store and remove documents in the index.
    #[serde(rename = "corpus-write")]
    CorpusWrite,
}

impl Grant {
    /// Its name in a config file.
    pub fn name(self) -> &'static str {
        match self {
            Grant::CorpusWrite => "corpus-write",
        }
    }
}

/// What one tool may do beyond reading the workspace and the index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// May store and remove documents.
    pub corpus_write: bool,
    /// Extra folders it may read, absolute.
    pub read_dirs: Vec<PathBuf>,
}

/// The limits one call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time before the call is interrupted.
    pub timeout: Duration,
    /// Bytes of linear memory the component may grow to.
    pub memory_bytes: usize,
    /// Bytes of result the host accepts.
    pub max_output_bytes: usize,
}

/// Where a component was found, which decides how far it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Embedded in the ragbox binary.
    BuiltIn,
    /// The user's own tools folder: the user put it there.
    User,
    /// The workspace's `.ragbox/tools/`: it came with the folder, and loads
    /// only when the user's config pins its bytes.
    Workspace,
}

/// The configuration in force: the user's file, narrowed by the workspace's.
#[derive(Debug, Clone, Default)]
pub struct Config {
    user: ConfigFile,
    workspace: ConfigFile,
    /// The user's config file (whether or not it exists).
    pub user_file: Option<PathBuf>,
    /// Settings of the workspace's file that were ignored because they would
    /// widen access, each saying where to put it instead.
    pub ignored: Vec<String>,
}

impl Config {
    /// Reads the user's config and `<workspace>/.ragbox/config.toml`; a
    /// missing file gives the defaults.
    pub fn load(workspace: &Path) -> Result<Self, ConfigError> {
        Self::load_with(user_config_dir().map(|d| d.join(CONFIG_FILE)), workspace)
    }

    /// The user's config alone (no workspace's), for what is the user's
    /// own to decide wherever they are, such as `ragbox tools trust`.
    pub fn user_only() -> Result<Self, ConfigError> {
        let user_file = user_config_dir().map(|d| d.join(CONFIG_FILE));
        let folder = user_file.as_ref().and_then(|f| f.parent()).map(Path::to_path_buf).unwrap_or_default();
        let user = match &user_file {
            Some(path) => match read_user_file(path)? {
                Some(text) => parse(&text, path, &folder)?,
                None => ConfigFile::default(),
            },
            None => ConfigFile::default(),
        };
        Ok(Self { user, workspace: ConfigFile::default(), user_file, ignored: Vec::new() })
    }

    /// What the user's own config says of `tool` (`[tools.NAME]`), if anything.
    pub fn user_tool(&self, tool: &str) -> Option<&ToolOverrides> {
        self.user.tools.get(tool)
    }

    /// As [`Config::load`], with the user's config file given.
    pub fn load_with(user_file: Option<PathBuf>, workspace: &Path) -> Result<Self, ConfigError> {
        let mut user = match &user_file {
            Some(path) => match read_user_file(path)? {
                Some(text) => parse(&text, path, workspace)?,
                None => ConfigFile::default(),
            },
            None => ConfigFile::default(),
        };
        // A relative model folder is the user's: taken from their config's folder.
        if let (Some(model), Some(dir)) = (&mut user.model, user_file.as_ref().and_then(|f| f.parent()))
            && model.is_relative()
        {
            *model = dir.join(&*model);
        }
        let workspace_file = workspace.join(DATA_DIR).join(CONFIG_FILE);
        let workspace = match DataDir::open(workspace)?.map(|d| d.read_config()).transpose()?.flatten() {
            Some(text) => parse(&text, &workspace_file, workspace)?,
            None => ConfigFile::default(),
        };
        let mut config = Self { user, workspace, user_file, ignored: Vec::new() };
        config.ignored = config.widening(&workspace_file);
        for line in &config.ignored {
            tracing::warn!("{line}");
        }
        Ok(config)
    }

    /// The workspace file's settings that would widen access, as messages.
    fn widening(&self, file: &Path) -> Vec<String> {
        let user = self.user_file.as_ref().map_or("your own config.toml".to_string(), |p| p.display().to_string());
        let ignored = |what: String| {
            format!(
                "ignored {what} in {}: a workspace's config may only narrow what tools get; \
                 put it in {user} if you want it",
                file.display()
            )
        };
        let ws = &self.workspace;
        let mut out = Vec::new();
        if !ws.allowed_workspaces.is_empty() {
            out.push(ignored("allowed_workspaces".into()));
        }
        if !ws.index_secrets.is_empty() {
            // A clone would have the user's credentials indexed.
            out.push(ignored("index_secrets".into()));
        }
        if ws.store.is_some() {
            // It would send this folder's text to a server the folder names.
            out.push(ignored("[store] (or pass `--store URL`)".into()));
        }
        if ws.cache.is_some() {
            // The cache is the user's, shared by every workspace: one folder does not set it.
            out.push(ignored("[cache]".into()));
        }
        if ws.model.is_some() {
            // The host (outside the sandbox) would parse model files the folder ships.
            out.push(ignored("model (or set RAGBOX_MODEL)".into()));
        }
        for (name, o) in &ws.tools {
            if !o.read_dirs.is_empty() {
                out.push(ignored(format!("[tools.{name}] read_dirs")));
            }
            if o.sha256.is_some() {
                out.push(ignored(format!(
                    "[tools.{name}] sha256 (to trust a component, run `ragbox tools trust FILE`)"
                )));
            }
            if o.grants.as_ref().is_some_and(|g| g.contains(&Grant::CorpusWrite)) {
                out.push(ignored(format!("[tools.{name}] grants = [\"corpus-write\"]")));
            }
        }
        out
    }

    /// Folders besides the served one that `workspace_path` may name (user's config only).
    pub fn allowed_workspaces(&self) -> &[PathBuf] {
        &self.user.allowed_workspaces
    }

    /// The files named like credentials that the user lets be indexed (user's config only).
    pub fn index_secrets(&self) -> &[String] {
        &self.user.index_secrets
    }

    /// The shared store, when the user's config names one.
    pub fn store(&self) -> Option<&StoreFile> {
        self.user.store.as_ref()
    }

    /// The model folder, when the user's config names one.
    pub fn model(&self) -> Option<&Path> {
        self.user.model.as_deref()
    }

    /// The embedding cache's settings (user's config only).
    pub fn cache(&self) -> crate::embed_cache::Settings {
        let file = self.user.cache.clone().unwrap_or_default();
        let defaults = crate::embed_cache::Settings::default();
        crate::embed_cache::Settings {
            enabled: file.enabled.unwrap_or(defaults.enabled),
            max_bytes: file.max_mib.map_or(defaults.max_bytes, |mib| mib.saturating_mul(1 << 20)),
        }
    }

    /// Whether vectors are shared through a shared store's cache table (user's config only; on by default).
    pub fn team_cache(&self) -> bool {
        self.user.cache.as_ref().and_then(|c| c.team).unwrap_or(true)
    }

    /// The collections several workspaces may share (user's config only).
    pub fn shared_collections(&self) -> &[String] {
        self.user.store.as_ref().map_or(&[], |s| s.shared_collections.as_slice())
    }

    /// What `tool` may do: its `[tools.NAME] grants` in the user's config when
    /// set, else `default`; then whatever the workspace's config takes away;
    /// plus the user's `read_dirs` for it.
    pub fn grants_for(&self, tool: &str, default: Grants) -> Grants {
        let user = self.user.tools.get(tool);
        let mut grants = match user.and_then(|o| o.grants.as_ref()) {
            Some(grants) => Grants { corpus_write: grants.contains(&Grant::CorpusWrite), read_dirs: Vec::new() },
            None => default,
        };
        if let Some(narrowed) = self.workspace.tools.get(tool).and_then(|o| o.grants.as_ref()) {
            grants.corpus_write &= narrowed.contains(&Grant::CorpusWrite);
        }
        grants.read_dirs.extend(user.map(|o| o.read_dirs.clone()).unwrap_or_default());
        grants
    }

    /// Whether the component offering `tool` from `origin`, whose bytes hash
    /// to `sha256`, may load: `Err` says why not (disabled, not the pinned
    /// bytes, or a workspace's component the user has not trusted).
    pub fn admits(&self, tool: &str, sha256: &str, origin: Origin) -> Result<(), String> {
        for (which, file) in [("your config", &self.user), ("the workspace's config", &self.workspace)] {
            if file.tools.get(tool).and_then(|o| o.enabled) == Some(false) {
                return Err(format!("disabled by [tools.{tool}] enabled = false in {which}"));
            }
        }
        if origin == Origin::BuiltIn {
            return Ok(()); // built-ins are part of ragbox itself: no pin applies
        }
        let user = self.user_file.as_ref().map_or("your config".to_string(), |p| p.display().to_string());
        match (self.user.tools.get(tool).and_then(|o| o.sha256.as_ref()), origin) {
            (Some(pin), _) if pin != sha256 => Err(format!(
                "its sha256 is {sha256}, not the {pin} pinned by [tools.{tool}] sha256 in {user}: \
                 the component changed since it was pinned. If you trust the new one, run \
                 `ragbox tools trust FILE` (or put its sha256 in the pin)"
            )),
            (None, Origin::Workspace) => Err(format!(
                "came with this workspace and is not trusted: a workspace's components load only \
                 once you trust their bytes. If you do, run `ragbox tools trust FILE` (it records \
                 sha256 = \"{sha256}\" under [tools.{tool}] in {user})"
            )),
            _ => Ok(()),
        }
    }

    /// Whether the user's config pins these bytes for some tool (so a
    /// workspace's component with them may be loaded and asked its name).
    pub fn pins(&self, sha256: &str) -> bool {
        // Pins are lowercased when parsed, as `hex` writes a digest.
        self.user.tools.values().any(|o| o.sha256.as_deref() == Some(sha256))
    }

    /// The limits for a call to `tool`. `indexing` (a built-in tool that
    /// writes the index) picks the longer default timeout; the workspace's
    /// config can only lower what the user's config and the defaults give.
    pub fn limits_for(&self, tool: &str, indexing: bool) -> Limits {
        let layer = |f: &ConfigFile| {
            let (d, o) = (&f.limits, f.tools.get(tool).cloned().unwrap_or_default());
            let timeout = o.timeout_secs.or(if indexing { d.indexing_timeout_secs } else { d.timeout_secs });
            (timeout, o.memory_mib.or(d.memory_mib), o.max_output_mib.or(d.max_output_mib))
        };
        let (user, ws) = (layer(&self.user), layer(&self.workspace));
        let capped = |u: Option<u64>, w: Option<u64>, default: u64| {
            w.map_or(u.unwrap_or(default), |w| w.min(u.unwrap_or(default)))
        };
        let mib = |v: u64| usize::try_from(v.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        Limits {
            timeout: Duration::from_secs(capped(user.0, ws.0, if indexing { 3600 } else { 30 }).max(1)),
            memory_bytes: mib(capped(user.1, ws.1, 512).max(1)),
            max_output_bytes: mib(capped(user.2, ws.2, 16).max(1)),
        }
    }

    /// What the workspace's own config lowers or takes away for `tool`
    /// against the user's config and the defaults, in words: `tools inspect`
    /// says so rather than leave a lower cap unexplained.
    pub fn narrowed_by_workspace(&self, tool: &str, indexing: bool, default: &Grants) -> Vec<String> {
        let user_only = Config { workspace: ConfigFile::default(), ..self.clone() };
        let (theirs, ours) = (self.limits_for(tool, indexing), user_only.limits_for(tool, indexing));
        let mut out = Vec::new();
        let mut lowered = |what: &str, now: u64, was: u64, unit: &str| {
            if now < was {
                out.push(format!("{what} lowered to {now} {unit} (your config and the defaults give {was} {unit})"));
            }
        };
        lowered("timeout", theirs.timeout.as_secs(), ours.timeout.as_secs(), "s");
        lowered("memory", (theirs.memory_bytes >> 20) as u64, (ours.memory_bytes >> 20) as u64, "MiB");
        lowered("output", (theirs.max_output_bytes >> 20) as u64, (ours.max_output_bytes >> 20) as u64, "MiB");
        if user_only.grants_for(tool, default.clone()).corpus_write
            && !self.grants_for(tool, default.clone()).corpus_write
        {
            out.push("corpus-write taken away".into());
        }
        if self.workspace.tools.get(tool).and_then(|o| o.enabled) == Some(false) {
            out.push("switched off (enabled = false)".into());
        }
        out
    }
}

/// The user's config file, when there is one: a regular file (it may be a
/// link, as dotfile managers make them) of at most 1 MiB.
fn read_user_file(path: &Path) -> Result<Option<String>, ConfigError> {
    use std::io::Read as _;
    let err = |source| ConfigError::Read { path: path.to_path_buf(), source };
    let file = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => std::fs::File::open(path).map_err(err)?,
        Ok(_) => return Err(err(std::io::Error::other("not a regular file"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(e)),
    };
    let mut text = String::new();
    file.take(MAX_USER_CONFIG_BYTES + 1).read_to_string(&mut text).map_err(err)?;
    if text.len() as u64 > MAX_USER_CONFIG_BYTES {
        return Err(err(std::io::Error::other("larger than 1 MiB")));
    }
    Ok(Some(text))
}

/// Parses one config file's text. Relative `read_dirs` are taken from the workspace.
fn parse(text: &str, path: &Path, workspace: &Path) -> Result<ConfigFile, ConfigError> {
    let mut config: ConfigFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: crate::text::for_terminal(&e.to_string()).into_owned(),
    })?;
    for (name, tool) in &mut config.tools {
        if let Some(pin) = &mut tool.sha256 {
            *pin = pin.trim().to_ascii_lowercase();
            if pin.len() != 64 || !pin.bytes().all(|b| b.is_ascii_hexdigit()) {
                let message = format!(
                    "[tools.{name}] sha256 must be 64 hex digits (`ragbox tools inspect FILE` prints a component's)"
                );
                return Err(ConfigError::Parse { path: path.to_path_buf(), message });
            }
        }
        for dir in &mut tool.read_dirs {
            if dir.is_relative() {
                *dir = workspace.join(&*dir);
            }
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace with `ws` as its config and a user config holding `user`.
    fn load(ws: &str, user: &str) -> (tempfile::TempDir, Result<Config, ConfigError>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(DATA_DIR)).unwrap();
        std::fs::write(dir.path().join(DATA_DIR).join(CONFIG_FILE), ws).unwrap();
        let user_file = dir.path().join("user.toml");
        std::fs::write(&user_file, user).unwrap();
        let config = Config::load_with(Some(user_file), dir.path());
        (dir, config)
    }

    #[test]
    fn defaults_without_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config::load_with(None, dir.path()).unwrap();
        let l = c.limits_for("x", false);
        assert_eq!(l.timeout, Duration::from_secs(30));
        assert_eq!(l.memory_bytes, 512 << 20);
        assert_eq!(c.limits_for("x", true).timeout, Duration::from_secs(3600));
    }

    #[test]
    fn per_tool_overrides_and_unknown_keys() {
        let (_d, c) = load("", "[limits]\ntimeout_secs = 5\n[tools.slow]\ntimeout_secs = 60\nmemory_mib = 64\n");
        let c = c.unwrap();
        assert_eq!(c.limits_for("fast", false).timeout, Duration::from_secs(5));
        let slow = c.limits_for("slow", false);
        assert_eq!((slow.timeout, slow.memory_bytes), (Duration::from_secs(60), 64 << 20));

        let err = load("[limits]\ntimeout = 5\n", "").1.unwrap_err().to_string();
        assert!(err.contains("unknown field `timeout`"), "{err}");
    }

    #[test]
    fn the_workspace_config_only_lowers_limits() {
        let (_d, c) = load(
            "[limits]\ntimeout_secs = 600\nmemory_mib = 64\n[tools.t]\nmax_output_mib = 1000\n",
            "[limits]\nmemory_mib = 1024\n",
        );
        let l = c.unwrap().limits_for("t", false);
        assert_eq!(l.timeout, Duration::from_secs(30), "600 is above the default: ignored");
        assert_eq!(l.memory_bytes, 64 << 20, "a lower cap applies");
        assert_eq!(l.max_output_bytes, 16 << 20);
    }

    #[test]
    fn pins_enabled_and_read_dirs_come_from_the_user() {
        let pin = "AB".repeat(32);
        let user = format!(
            "[tools.pinned]\nsha256 = \"{pin}\"\nread_dirs = [\"../docs\", \"/srv/data\"]\n[tools.off]\nenabled = false\n"
        );
        let (dir, c) = load("", &user);
        let c = c.unwrap();
        assert_eq!(c.admits("pinned", &"ab".repeat(32), Origin::Workspace), Ok(()));
        let refused = c.admits("pinned", &"cd".repeat(32), Origin::User).unwrap_err();
        assert!(refused.contains("not the abab") && refused.contains("ragbox tools trust"), "{refused}");
        assert!(c.admits("off", "x", Origin::BuiltIn).unwrap_err().contains("enabled = false"));
        assert_eq!(c.admits("other", "x", Origin::User), Ok(()));
        let untrusted = c.admits("other", "x", Origin::Workspace).unwrap_err();
        assert!(untrusted.contains("not trusted") && untrusted.contains("ragbox tools trust"), "{untrusted}");
        let g = c.grants_for("pinned", Grants::default());
        assert_eq!(g.read_dirs, vec![dir.path().join("../docs"), PathBuf::from("/srv/data")]);
        assert!(!g.corpus_write);

        let err = load("", "[tools.x]\nsha256 = \"abc\"\n").1.unwrap_err().to_string();
        assert!(err.contains("64 hex digits"), "{err}");
    }

    #[test]
    fn the_workspace_config_cannot_widen_access() {
        let pin = "ab".repeat(32);
        let ws = format!(
            "allowed_workspaces = [\"/etc\"]\nmodel = \"m\"\n[tools.x]\nread_dirs = [\"/etc\"]\ngrants = [\"corpus-write\"]\n\
             sha256 = \"{pin}\"\n[tools.search]\nsha256 = \"{pin}\"\n[tools.embed_workspace]\ngrants = []\n\
             [store]\nurl = \"postgres://eve@evil.example/loot\"\n[cache]\nmax_mib = 1\n"
        );
        let (_d, c) = load(&ws, "");
        let c = c.unwrap();
        assert!(c.allowed_workspaces().is_empty());
        assert_eq!(c.grants_for("x", Grants::default()), Grants::default());
        assert_eq!(c.store(), None, "a cloned folder cannot send its text to a server it names");
        assert_eq!(c.model(), None, "nor make the host parse a model folder it ships");
        assert_eq!(c.cache(), crate::embed_cache::Settings::default(), "nor size the user's cache");
        assert_eq!(c.ignored.len(), 8, "{:#?}", c.ignored);
        assert!(c.ignored.iter().all(|m| m.contains("may only narrow")), "{:#?}", c.ignored);
        // A workspace pin trusts nothing, and no pin ever touches a built-in.
        assert!(c.admits("x", &pin, Origin::Workspace).is_err());
        assert_eq!(c.admits("search", &"cd".repeat(32), Origin::BuiltIn), Ok(()));
        // Taking a grant away is narrowing: it holds.
        let writer = Grants { corpus_write: true, read_dirs: Vec::new() };
        assert!(!c.grants_for("embed_workspace", writer).corpus_write);
    }
}
