//! Where a user's service lives: a folder only the user may enter (under
//! `$XDG_RUNTIME_DIR`, else the user's cache; `$RAGBOX_SERVICE_DIR` over
//! both), and in it one socket, lock and log per key: the build of ragbox and
//! the environment it reads, so that a session is only ever served by a
//! process that would have read the same files and settings its own would.

use crate::platform;
use sha2::Digest as _;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Variables besides `RAGBOX_*` whose values the host reads: where the
/// user's files are, who the user is, the shared store's password.
const KEYED: [&str; 8] =
    ["HOME", "USER", "LOGNAME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "PGPASSWORD", "PGPASSFILE"];

/// `RAGBOX_*` variables a session carries in its hello, or only the relay reads.
const NOT_KEYED: [&str; 3] = ["RAGBOX_TOOLS", "RAGBOX_STANDALONE", "RAGBOX_SERVICE_DIR"];

/// A service's log is started again (the last one kept as `.log.1`) when it
/// outgrows this, at a start or while it runs: 8 MiB, or `RAGBOX_SERVICE_LOG_MAX` bytes.
pub fn max_log() -> u64 {
    std::env::var("RAGBOX_SERVICE_LOG_MAX")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(8 << 20)
}

/// Longest socket path every Unix takes (macOS: 104 bytes with the NUL).
const MAX_SOCKET_PATH: usize = 100;

/// One service's files, and the folder its process runs in.
#[derive(Debug, Clone)]
pub struct Place {
    dir: PathBuf,
    key: String,
    /// Set where a `RAGBOX_*` path is relative: the service reads it from the same folder.
    cwd: Option<PathBuf>,
}

impl Place {
    /// This process's service's place, its folder made private if new; `Err` says why there is none.
    pub fn find() -> Result<Self, String> {
        let dir = folder()?;
        platform::private_folder(&dir)?;
        let (key, cwd) = key()?;
        let place = Self { dir, key, cwd };
        if place.socket().as_os_str().len() > MAX_SOCKET_PATH {
            return Err(format!(
                "{} is too long a path for a socket: set RAGBOX_SERVICE_DIR",
                place.socket().display()
            ));
        }
        Ok(place)
    }

    /// The socket the service listens on.
    pub fn socket(&self) -> PathBuf {
        self.dir.join(format!("{}.sock", self.key))
    }

    /// The folder the service runs in.
    pub fn cwd(&self) -> &Path {
        self.cwd.as_deref().unwrap_or(Path::new("/"))
    }
}

/// The service key `path` is named for, when it is named as a service's
/// lock or log: its key (16 hex digits), then `.lock`, `.log` or `.log.1`.
pub fn service_key(path: &Path) -> Option<&str> {
    let (key, ext) = path.file_name()?.to_str()?.split_once('.')?;
    let named =
        key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit()) && matches!(ext, "lock" | "log" | "log.1");
    named.then_some(key)
}

/// The lock a relay holds while it starts the service at `socket`, which
/// the service holds while it leaves.
pub fn lock_file(socket: &Path) -> PathBuf {
    socket.with_extension("lock")
}

/// The log of the service at `socket`.
pub fn log_file(socket: &Path) -> PathBuf {
    socket.with_extension("log")
}

fn folder() -> Result<PathBuf, String> {
    let chosen = std::env::var_os("RAGBOX_SERVICE_DIR").is_some_and(|v| !v.is_empty());
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|p| p.is_absolute());
    let dir = match runtime.filter(|_| !chosen) {
        Some(run) => run.join("ragbox"),
        None => platform::user_cache_dir("RAGBOX_SERVICE_DIR", "run")
            .ok_or("RAGBOX_SERVICE_DIR is off, or no home folder is known")?,
    };
    if !dir.is_absolute() {
        return Err(format!("RAGBOX_SERVICE_DIR must be an absolute path, not {}", dir.display()));
    }
    Ok(dir)
}

/// Whether the variable `name` is part of the key.
fn keyed(name: &OsString) -> bool {
    let name = name.to_string_lossy();
    (name.starts_with("RAGBOX_") && !NOT_KEYED.contains(&name.as_ref())) || KEYED.contains(&name.as_ref())
}

/// The key: this binary (path, size, time), the variables it reads, the
/// machine and what confines this process (`platform::confinement`); and
/// the current folder too where a `RAGBOX_*` variable is a path relative to it.
fn key() -> Result<(String, Option<PathBuf>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot tell this program's path: {e}"))?;
    let meta = std::fs::metadata(&exe).map_err(|e| format!("cannot read {}: {e}", exe.display()))?;
    let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().filter(|(name, _)| keyed(name)).collect();
    vars.sort();
    let cwd = std::env::current_dir().ok();
    let relative = |v: &OsString| {
        let path = Path::new(v);
        !v.is_empty() && path.is_relative() && cwd.as_ref().is_some_and(|cwd| cwd.join(path).exists())
    };
    let cwd = cwd
        .clone()
        .filter(|_| vars.iter().any(|(name, v)| name.to_string_lossy().starts_with("RAGBOX_") && relative(v)));
    let mut hash = sha2::Sha256::new();
    let mut part = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    part(env!("CARGO_PKG_VERSION").as_bytes());
    part(exe.as_os_str().as_encoded_bytes());
    part(&meta.len().to_le_bytes());
    part(&modified.map_or(0, |d| d.as_nanos()).to_le_bytes());
    part(platform::confinement().as_bytes());
    for (name, value) in &vars {
        part(name.as_encoded_bytes());
        part(value.as_encoded_bytes());
    }
    if let Some(cwd) = &cwd {
        part(cwd.as_os_str().as_encoded_bytes());
    }
    Ok((hex::encode(&hash.finalize()[..8]), cwd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_a_session_carries_are_not_keyed() {
        assert!(keyed(&"RAGBOX_CONFIG_DIR".into()));
        assert!(keyed(&"HOME".into()));
        assert!(!keyed(&"RAGBOX_TOOLS".into()));
        assert!(!keyed(&"RAGBOX_STANDALONE".into()));
        assert!(!keyed(&"TERM".into()));
        assert_eq!(log_file(Path::new("/run/ragbox/ab.sock")), Path::new("/run/ragbox/ab.log"));
        assert_eq!(service_key(Path::new("/d/0123456789abcdef.lock")), Some("0123456789abcdef"));
        assert!(service_key(Path::new("/d/0123456789abcdef.log")).is_some());
        assert!(service_key(Path::new("/d/0123456789abcdef.log.1")).is_some());
        assert!(service_key(Path::new("/d/install.log")).is_none());
        assert!(service_key(Path::new("/d/0123456789abcdef.sock")).is_none());
        assert!(service_key(Path::new("/d/0123456789abcdeg.lock")).is_none());
        assert!(service_key(Path::new("/d/0123456789abcdef.log.2")).is_none());
        assert_eq!(lock_file(Path::new("/run/ragbox/ab.sock")), Path::new("/run/ragbox/ab.lock"));
    }
}
