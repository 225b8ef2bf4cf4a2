//! Starting over: `ragbox doctor --reset` removes the index and every link
//! or special file where ragbox keeps something, and keeps the workspace's
//! own plain `config.toml` and `tools/`.

use super::{
    CONFIG_FILE, DATA_DIR, DISCARD_PREFIX, DataDir, DataDirError, INDEX_ENTRIES, LOCK_FILE, OLD_ENTRIES, OWNER_FILE,
    TOOLS_DIR, open_workspace,
};
use cap_fs_ext::DirExt as _;
use std::path::{Path, PathBuf};

impl DataDir {
    /// What [`reset`] would remove here, by name.
    pub fn index_names(&self) -> Vec<String> {
        let mut names: Vec<String> = INDEX_ENTRIES
            .iter()
            .chain(OLD_ENTRIES)
            .filter(|name| **name != OWNER_FILE && self.dir.symlink_metadata(name).is_ok())
            .map(|n| n.to_string())
            .collect();
        // Kept when plain; a link or special file goes.
        for name in [OWNER_FILE, LOCK_FILE, CONFIG_FILE, TOOLS_DIR] {
            if self.kind(name).is_err() {
                names.push(name.to_string());
            }
        }
        names
    }

    /// Removes the index, links and special files where ragbox keeps
    /// something, and anything half-removed before; keeps a plain
    /// `config.toml` and `tools/`.
    fn clear(&self) -> Result<(), DataDirError> {
        for name in INDEX_ENTRIES.iter().chain(OLD_ENTRIES).chain(&[LOCK_FILE]) {
            self.unlink_anything(name)?;
        }
        for name in [CONFIG_FILE, TOOLS_DIR] {
            if self.kind(name).is_err() {
                self.unlink_anything(name)?;
            }
        }
        Ok(())
    }

    /// Removes what an interrupted removal left behind.
    fn sweep_discards(&self) -> Result<(), DataDirError> {
        let mut leftovers = Vec::new();
        for entry in self.dir.entries().map_err(self.io(""))? {
            let name = entry.map_err(self.io(""))?.file_name();
            if let Some(name) = name.to_str().filter(|n| n.starts_with(DISCARD_PREFIX)) {
                leftovers.push(name.to_string());
            }
        }
        for name in leftovers {
            self.unlink_anything(&name)?;
        }
        Ok(())
    }
}

/// Removes the index of `workspace` (store, keyword and vector indexes,
/// caches of shared collections), and every link or special file where
/// ragbox keeps something, the data dir itself when it is one; keeps a
/// plain `config.toml` and `tools/`. Returns what it removed, for the user.
pub fn reset(workspace: &Path) -> Result<Vec<PathBuf>, DataDirError> {
    let ws = open_workspace(workspace)?;
    let path = workspace.join(DATA_DIR);
    match ws.symlink_metadata(DATA_DIR) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(DataDirError::Io { path, source }),
        Ok(meta) if !meta.is_dir() => {
            ws.remove_file_or_symlink(DATA_DIR).map_err(|source| DataDirError::Io { path: path.clone(), source })?;
            return Ok(vec![path]);
        }
        Ok(_) => {}
    }
    let data = DataDir::held(&ws, DATA_DIR, path)?;
    let removed = data.index_names().iter().map(|n| data.path.join(n)).collect();
    data.sweep_discards()?;
    data.clear()?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datadir::testing::{made, names};
    use crate::datadir::{KEYWORD_DIR, SHARED_DIR, STORE_FILE, VECTORS_DIR};

    #[test]
    fn reset_removes_the_index_and_keeps_the_workspaces_own_plain_files() {
        let (ws, data) = made();
        data.store_file(true).unwrap().unwrap();
        data.index_dir(KEYWORD_DIR).unwrap();
        data.index_dir("shared/a").unwrap();
        data.vectors_dir().unwrap();
        std::fs::create_dir_all(data.path().join(format!("{DISCARD_PREFIX}0123/a"))).unwrap();
        std::fs::create_dir(data.path().join(TOOLS_DIR)).unwrap();
        for file in ["fulltext", "http-token", CONFIG_FILE, "tools/a.wasm", "notes"] {
            std::fs::write(data.path().join(file), "x").unwrap();
        }
        let index = [STORE_FILE, KEYWORD_DIR, VECTORS_DIR, SHARED_DIR, "fulltext", "http-token"];
        assert_eq!(data.index_names(), index);
        assert_eq!(reset(ws.path()).unwrap(), index.map(|name| data.path().join(name)));
        assert_eq!(names(data.path()), [CONFIG_FILE, "notes", TOOLS_DIR], "only ragbox's own entries go");
        assert_eq!(names(&data.path().join(TOOLS_DIR)), ["a.wasm"]);
        assert!(reset(ws.path()).unwrap().is_empty(), "nothing left to remove");
        let bare = tempfile::tempdir().unwrap();
        assert!(reset(bare.path()).unwrap().is_empty(), "no data dir: nothing to do");
    }

    #[test]
    #[cfg(unix)]
    fn reset_takes_links_and_fifos_themselves_never_what_they_lead_to() {
        let (ws, data) = made();
        let outside = crate::datadir::testing::outside(ws.path());
        for name in [CONFIG_FILE, TOOLS_DIR] {
            std::os::unix::fs::symlink(&outside, data.path().join(name)).unwrap();
        }
        std::fs::remove_file(data.path().join(LOCK_FILE)).unwrap();
        crate::datadir::testing::fifo(&data.path().join(LOCK_FILE));
        let removed = reset(ws.path()).unwrap();
        assert_eq!(removed, [LOCK_FILE, CONFIG_FILE, TOOLS_DIR].map(|name| data.path().join(name)));
        assert!(names(data.path()).is_empty());
        crate::datadir::testing::untouched(&outside);

        // The data dir itself a link: the link goes.
        std::fs::remove_dir(data.path()).unwrap();
        std::os::unix::fs::symlink(&outside, data.path()).unwrap();
        assert_eq!(reset(ws.path()).unwrap(), [data.path()]);
        assert!(data.path().symlink_metadata().is_err());
        crate::datadir::testing::untouched(&outside);
    }
}
