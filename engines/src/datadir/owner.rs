//! Telling ragbox's own data from data a folder brought with it.
//!
//! A cloned repository can ship a `.ragbox/` of its choosing: a store whose
//! records claim a file is unchanged while their chunks say something else,
//! indexes, anything. So ragbox believes a data dir only when it carries a
//! stamp made with a key that never leaves the user's config dir: an
//! HMAC-SHA256 over the identity of the data dir and of its store file. A
//! clone cannot make one (no key), and `git pull` or a copy gives the store a
//! new identity, so a stamp cannot be carried over to other bytes either.

use crate::platform::FileId;
use hmac::{KeyInit as _, Mac as _};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The key's file, in the user's config dir.
pub const KEY_FILE: &str = "owner.key";

/// What a stamp is made over, besides the identities (bumped with its layout).
const STAMP_DOMAIN: &[u8] = b"ragbox data dir v1";
/// The stamp file's first word.
const STAMP_TAG: &str = "ragbox-owner-1";

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The user's key: 32 random bytes kept in their config dir, owner-only.
#[derive(Clone)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(…)")
    }
}

/// Why the key cannot be had.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "ragbox keeps a key in {path} to tell the indexes it made from ones a folder brought with it, \
     and cannot use it: {why}. Set RAGBOX_CONFIG_DIR to a folder you own and can write"
)]
pub struct KeyError {
    /// The key file.
    pub path: PathBuf,
    /// What went wrong.
    pub why: String,
}

impl Key {
    /// The key of this process's user (loaded, or made on first use).
    pub fn user() -> Result<Arc<Key>, KeyError> {
        static KEY: OnceLock<Result<Arc<Key>, KeyError>> = OnceLock::new();
        KEY.get_or_init(|| {
            let dir = crate::platform::user_config_dir().ok_or_else(|| KeyError {
                path: PathBuf::from(KEY_FILE),
                why: "no config dir is known for this user (HOME is unset)".into(),
            })?;
            Self::load_or_create(&dir).map(Arc::new)
        })
        .clone()
    }

    /// The key in `dir`, made there (with `dir`) when missing.
    pub fn load_or_create(dir: &Path) -> Result<Self, KeyError> {
        let path = dir.join(KEY_FILE);
        let fail = |why: String| KeyError { path: path.clone(), why };
        for _ in 0..3 {
            match read_key(&path) {
                Ok(Some(key)) => return Ok(key),
                Ok(None) => {}
                Err(why) => return Err(fail(why)),
            }
            create_key(dir, &path).map_err(|e| fail(e.to_string()))?;
        }
        Err(fail("it keeps changing while being read".into()))
    }

    /// A key for tests and tools that keep nothing.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// HMAC-SHA256 over `parts` (each length-prefixed, so no two lists of
    /// parts give the same input), not yet finished.
    fn hmac(&self, parts: &[&[u8]]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        for part in parts {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part);
        }
        mac
    }

    /// The stamp line for a data dir and store of these identities.
    pub fn stamp(&self, dir_id: FileId, store_id: FileId) -> String {
        let mac = self.hmac(&[STAMP_DOMAIN, &dir_id.to_bytes(), &store_id.to_bytes()]).finalize().into_bytes();
        format!("{STAMP_TAG} {}\n", hex::encode(mac))
    }

    /// Whether `stamp` (a stamp file's text) was made by this key for these
    /// identities (compared in constant time, by the hmac crate).
    pub fn verifies(&self, stamp: &str, dir_id: FileId, store_id: FileId) -> bool {
        let Some(mac) = stamp.trim().strip_prefix(STAMP_TAG).and_then(|m| hex::decode(m.trim()).ok()) else {
            return false;
        };
        self.hmac(&[STAMP_DOMAIN, &dir_id.to_bytes(), &store_id.to_bytes()]).verify_slice(&mac).is_ok()
    }

    /// A short name for `workspace` (a canonical path) that only this key
    /// gives it: what binds a workspace to its shared-store collection.
    pub fn workspace_id(&self, workspace: &Path) -> String {
        let mac =
            self.hmac(&[b"ragbox workspace v1", workspace.as_os_str().as_encoded_bytes()]).finalize().into_bytes();
        hex::encode(&mac[..16])
    }
}

/// The key in `path`; `None` when there is none yet.
fn read_key(path: &Path) -> Result<Option<Key>, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if !meta.is_file() {
        return Err("it is not a regular file; remove it (a new key is made, and indexes are rebuilt once)".into());
    }
    let mut text = String::new();
    std::fs::File::open(path).and_then(|f| f.take(256).read_to_string(&mut text)).map_err(|e| e.to_string())?;
    let bytes = hex::decode(text.trim()).ok().and_then(|b| <[u8; 32]>::try_from(b).ok());
    bytes.map(|b| Some(Key(b))).ok_or_else(|| {
        "it does not hold 64 hex digits; remove it (a new key is made, and indexes are rebuilt once)".into()
    })
}

/// Writes a fresh key to `path`, unless another process got there first:
/// written aside, then linked into place, which fails when a key exists.
fn create_key(dir: &Path, path: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    let mut tmp = tempfile::Builder::new().prefix(".owner-key-").tempfile_in(dir)?;
    // NamedTempFile is created owner-only (0600 on Unix).
    writeln!(tmp, "{}", hex::encode(bytes))?;
    tmp.as_file().sync_all()?;
    match std::fs::hard_link(tmp.path(), path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_per_user_and_stamps_bind_identities() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::load_or_create(dir.path()).unwrap();
        let again = Key::load_or_create(dir.path()).unwrap();
        assert_eq!(key.0, again.0, "made once, then read");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let id = |number, born_nanos| FileId::new(number, born_nanos);
        let stamp = key.stamp(id(7, 1), id(9, 1));
        assert!(key.verifies(&stamp, id(7, 1), id(9, 1)));
        assert!(!key.verifies(&stamp, id(7, 1), id(10, 1)), "another store file");
        assert!(!key.verifies(&stamp, id(7, 1), id(9, 2)), "a new store file given the old one's number");
        assert!(!key.verifies(&stamp, id(8, 1), id(9, 1)), "another data dir");
        let other = Key::from_bytes([1; 32]);
        assert!(!other.verifies(&stamp, id(7, 1), id(9, 1)), "another user's key");
        assert!(!key.verifies("", id(7, 1), id(9, 1)));
        assert_ne!(key.workspace_id(Path::new("/a/notes")), key.workspace_id(Path::new("/b/notes")));
        assert_ne!(key.workspace_id(Path::new("/a/notes")), other.workspace_id(Path::new("/a/notes")));

        std::fs::write(dir.path().join(KEY_FILE), "not hex\n").unwrap();
        let err = Key::load_or_create(dir.path()).unwrap_err().to_string();
        assert!(err.contains("64 hex digits") && err.contains("RAGBOX_CONFIG_DIR"), "{err}");
    }
}
