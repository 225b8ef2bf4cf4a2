//! Workspace configuration: `<workspace>/.ragbox/config.toml`.
//!
//! ```toml
//! allowed_workspaces = ["../notes"]   # other folders `workspace_path` may name
//! model = "/models/bge-small-en-v1.5"  # a sentence-transformers folder (default: all-MiniLM-L6-v2)
//!
//! [limits]                # defaults for every tool call
//! timeout_secs = 30       # read-only tools
//! indexing_timeout_secs = 3600   # tools that write the index
//! memory_mib = 512
//! max_output_mib = 16
//!
//! [tools.search_workspace]   # per-tool overrides of [limits]
//! timeout_secs = 10
//!
//! [tools.my_indexer]      # a third-party tool allowed to change the index
//! grants = ["corpus-write"]
//! sha256 = "9f86d0…"      # refuse the component unless its bytes hash to this
//! read_dirs = ["../docs"] # extra folders it may read, at their absolute paths
//!
//! [tools.embed_document]
//! enabled = false         # not offered at all
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where ragbox keeps its per-workspace data, relative to the workspace.
pub const DATA_DIR: &str = ".ragbox";

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
}

/// The parsed workspace config; every field has a default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Folders besides the served workspace that a call's `workspace_path` may name.
    #[serde(default)]
    pub allowed_workspaces: Vec<PathBuf>,
    /// Default limits for every tool call.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The embedding model folder (relative to the workspace); default
    /// `$RAGBOX_MODEL`, else all-MiniLM-L6-v2 in the user cache dir.
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// Per-tool overrides, keyed by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOverrides>,
}

/// Default per-call limits.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Wall-clock limit for a read-only tool call, in seconds.
    pub timeout_secs: u64,
    /// Wall-clock limit for a tool that writes the index, in seconds.
    pub indexing_timeout_secs: u64,
    /// Linear memory a component may use, in MiB.
    pub memory_mib: u64,
    /// Largest result a tool may return, in MiB.
    pub max_output_mib: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self { timeout_secs: 30, indexing_timeout_secs: 3600, memory_mib: 512, max_output_mib: 16 }
    }
}

/// Overrides of [`LimitsConfig`] for one tool.
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

impl Config {
    /// Reads `<workspace>/.ragbox/config.toml`; a missing file gives the defaults.
    pub fn load(workspace: &Path) -> Result<Self, ConfigError> {
        let path = workspace.join(DATA_DIR).join("config.toml");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let mut config: Self =
            toml::from_str(&text).map_err(|e| ConfigError::Parse { path: path.clone(), message: e.to_string() })?;
        for (name, tool) in &mut config.tools {
            if let Some(pin) = &mut tool.sha256 {
                *pin = pin.trim().to_ascii_lowercase();
                if pin.len() != 64 || !pin.bytes().all(|b| b.is_ascii_hexdigit()) {
                    let message = format!(
                        "[tools.{name}] sha256 must be 64 hex digits (`ragbox tools inspect FILE` prints a component's)"
                    );
                    return Err(ConfigError::Parse { path, message });
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

    /// What `tool` may do: its `[tools.NAME] grants` when set, else `default`;
    /// plus its `read_dirs`.
    pub fn grants_for(&self, tool: &str, default: Grants) -> Grants {
        let overrides = self.tools.get(tool);
        let mut grants = match overrides.and_then(|o| o.grants.as_ref()) {
            Some(grants) => Grants { corpus_write: grants.contains(&Grant::CorpusWrite), read_dirs: Vec::new() },
            None => default,
        };
        grants.read_dirs.extend(overrides.map(|o| o.read_dirs.clone()).unwrap_or_default());
        grants
    }

    /// Whether the component offering `tool`, whose bytes hash to `sha256`, may
    /// load: `Err` says why not (disabled, or not the pinned bytes).
    pub fn admits(&self, tool: &str, sha256: &str) -> Result<(), String> {
        let Some(o) = self.tools.get(tool) else { return Ok(()) };
        if o.enabled == Some(false) {
            return Err(format!("disabled by [tools.{tool}] enabled = false in {DATA_DIR}/config.toml"));
        }
        match &o.sha256 {
            Some(pin) if pin != sha256 => Err(format!(
                "its sha256 is {sha256}, not the {pin} pinned by [tools.{tool}] sha256 in {DATA_DIR}/config.toml: \
                 the component changed since it was pinned. If you trust the new one, put its sha256 in the pin"
            )),
            _ => Ok(()),
        }
    }

    /// The limits for a call to `tool`; `indexing` picks the longer default timeout.
    pub fn limits_for(&self, tool: &str, indexing: bool) -> Limits {
        let d = &self.limits;
        let o = self.tools.get(tool).cloned().unwrap_or_default();
        let timeout = o.timeout_secs.unwrap_or(if indexing { d.indexing_timeout_secs } else { d.timeout_secs });
        let mib = |v: u64| usize::try_from(v.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        Limits {
            timeout: Duration::from_secs(timeout.max(1)),
            memory_bytes: mib(o.memory_mib.unwrap_or(d.memory_mib).max(1)),
            max_output_bytes: mib(o.max_output_mib.unwrap_or(d.max_output_mib).max(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_without_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config::load(dir.path()).unwrap();
        let l = c.limits_for("x", false);
        assert_eq!(l.timeout, Duration::from_secs(30));
        assert_eq!(l.memory_bytes, 512 << 20);
        assert_eq!(c.limits_for("x", true).timeout, Duration::from_secs(3600));
    }

    #[test]
    fn per_tool_overrides_and_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(DATA_DIR)).unwrap();
        let file = dir.path().join(DATA_DIR).join("config.toml");
        std::fs::write(&file, "[limits]\ntimeout_secs = 5\n[tools.slow]\ntimeout_secs = 60\nmemory_mib = 64\n")
            .unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert_eq!(c.limits_for("fast", false).timeout, Duration::from_secs(5));
        let slow = c.limits_for("slow", false);
        assert_eq!((slow.timeout, slow.memory_bytes), (Duration::from_secs(60), 64 << 20));

        std::fs::write(&file, "[limits]\ntimeout = 5\n").unwrap();
        let err = Config::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("unknown field `timeout`"), "{err}");
    }

    #[test]
    fn pins_enabled_and_read_dirs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(DATA_DIR)).unwrap();
        let file = dir.path().join(DATA_DIR).join("config.toml");
        let pin = "AB".repeat(32);
        let text = format!(
            "[tools.pinned]\nsha256 = \"{pin}\"\nread_dirs = [\"../docs\", \"/srv/data\"]\n[tools.off]\nenabled = false\n"
        );
        std::fs::write(&file, text).unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert_eq!(c.admits("pinned", &"ab".repeat(32)), Ok(()));
        let refused = c.admits("pinned", &"cd".repeat(32)).unwrap_err();
        assert!(refused.contains("not the abab") && refused.contains("put its sha256 in the pin"), "{refused}");
        assert!(c.admits("off", "x").unwrap_err().contains("enabled = false"));
        assert_eq!(c.admits("other", "x"), Ok(()));
        let g = c.grants_for("pinned", Grants::default());
        assert_eq!(g.read_dirs, vec![dir.path().join("../docs"), PathBuf::from("/srv/data")]);
        assert!(!g.corpus_write);

        std::fs::write(&file, "[tools.x]\nsha256 = \"abc\"\n").unwrap();
        let err = Config::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("64 hex digits"), "{err}");
    }
}
