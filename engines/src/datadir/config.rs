//! The workspace's `config.toml` in its data dir: the workspace's own voice,
//! kept by a reset, read as text within a cap (it may only narrow what the
//! user's config allows; `crate::config` decides that).

use super::{CONFIG_FILE, DataDir, DataDirError};
use std::path::Path;

/// Largest config file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

impl DataDir {
    /// The workspace's `config.toml`, when there is one.
    pub fn read_config(&self) -> Result<Option<String>, DataDirError> {
        let fix = "a config holds a few settings; make it smaller";
        let shown = Path::new(CONFIG_FILE);
        let Some(bytes) = self.read_file(&self.dir, CONFIG_FILE, shown, MAX_CONFIG_BYTES, fix)? else {
            return Ok(None);
        };
        String::from_utf8(bytes).map(Some).map_err(|_| DataDirError::Io {
            path: self.path.join(CONFIG_FILE),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datadir::testing::key;

    #[test]
    fn the_workspaces_config_is_read_within_its_cap_and_as_text() {
        let ws = tempfile::tempdir().unwrap();
        let data = DataDir::create_with(ws.path(), Some(key())).unwrap();
        assert_eq!(data.read_config().unwrap(), None);
        std::fs::write(data.path().join(CONFIG_FILE), "[limits]\ntimeout_secs = 5\n").unwrap();
        assert_eq!(data.read_config().unwrap().as_deref(), Some("[limits]\ntimeout_secs = 5\n"));
        std::fs::write(data.path().join(CONFIG_FILE), vec![b'#'; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        assert!(matches!(data.read_config(), Err(DataDirError::TooLarge { .. })));
        std::fs::write(data.path().join(CONFIG_FILE), b"\xff\xfe").unwrap();
        assert!(data.read_config().unwrap_err().to_string().contains("not UTF-8"));
    }

    #[test]
    #[cfg(unix)]
    fn a_fifo_or_link_for_the_config_is_never_opened() {
        let ws = tempfile::tempdir().unwrap();
        let data = DataDir::create_with(ws.path(), Some(key())).unwrap();
        let config = data.path().join(CONFIG_FILE);
        crate::datadir::testing::fifo(&config);
        // A FIFO would block the read for ever: refused without opening it.
        assert!(matches!(data.read_config(), Err(DataDirError::NotPlain { .. })));
        std::fs::remove_file(&config).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &config).unwrap();
        assert!(matches!(data.read_config(), Err(DataDirError::NotPlain { .. })));
    }
}
