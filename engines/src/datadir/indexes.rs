//! The folders of the derived indexes (keyword, vectors, shared
//! collections' keyword indexes): made owner-only, used only once the stamp
//! vouches for them, and checked before tantivy is let in (no link or special
//! file, no deeper nesting than ragbox makes, no `.managed.json` naming a
//! file outside its folder, which tantivy would delete).

use super::{DataDir, DataDirError, Kind, VECTORS_DIR, kind_of};
use crate::platform;
use cap_fs_ext::DirExt as _;
use cap_std::fs::Dir;
use std::path::{Path, PathBuf};

/// Largest file of the keyword index that tantivy reads whole (`meta.json`,
/// `.managed.json`); its segment files are mapped, not read.
const MAX_KEYWORD_META_BYTES: u64 = 16 << 20;
/// tantivy's list of the files it manages (and may delete).
const MANAGED_FILE: &str = ".managed.json";
/// Folders deeper than this inside an index folder are not ragbox's.
const MAX_INDEX_DEPTH: usize = 3;

impl DataDir {
    /// The folder `rel` (`keyword`, `shared/<name>`) checked and made, for a
    /// tantivy index: every entry in it a plain file or folder, the files
    /// tantivy reads whole within their cap. Returns it held open, and its path
    /// (for messages: the index is reached through the handle alone).
    pub fn index_dir(&self, rel: &str) -> Result<(Dir, PathBuf), DataDirError> {
        self.vouch()?;
        let mut dir = self.dir.try_clone().map_err(self.io(""))?;
        let mut shown = PathBuf::new();
        for part in rel.split('/') {
            shown.push(part);
            let path = self.path.join(&shown);
            if kind_of(&dir, Path::new(part), &path)? == Kind::Missing {
                match dir.create_dir_with(part, &platform::private_dir()) {
                    Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                        return Err(DataDirError::Io { path, source: e });
                    }
                    _ => {}
                }
            }
            dir = dir.open_dir_nofollow(part).map_err(|source| DataDirError::Io { path, source })?;
        }
        self.check_tree(&dir, &shown, 0)?;
        Ok((dir, self.path.join(shown)))
    }

    /// Refuses a link or special file anywhere in `dir` (`shown` from the
    /// data dir), a folder nested deeper than ragbox makes them, and a
    /// tantivy metadata file over its cap.
    fn check_tree(&self, dir: &Dir, shown: &Path, depth: usize) -> Result<(), DataDirError> {
        for entry in dir.entries().map_err(self.io(shown))? {
            let entry = entry.map_err(self.io(shown))?;
            let name = entry.file_name();
            let path = self.path.join(shown).join(&name);
            let kind = entry.file_type().map_err(|source| DataDirError::Io { path: path.clone(), source })?;
            if let Some(kind) = platform::special_kind(&kind) {
                return Err(DataDirError::NotPlain { path, kind });
            }
            if kind.is_dir() {
                if depth + 1 >= MAX_INDEX_DEPTH {
                    let deep = std::io::Error::other("folders nested deeper than ragbox makes them");
                    return Err(DataDirError::Io { path, source: deep });
                }
                let sub = dir.open_dir_nofollow(&name).map_err(|source| DataDirError::Io { path, source })?;
                self.check_tree(&sub, &shown.join(&name), depth + 1)?;
            } else if name.to_str().is_some_and(|n| n.ends_with(".json")) {
                let len = entry.metadata().map_err(|source| DataDirError::Io { path: path.clone(), source })?.len();
                let fix = "the keyword index is damaged; run `ragbox doctor --reset`";
                if len > MAX_KEYWORD_META_BYTES {
                    return Err(DataDirError::TooLarge { path, size: len, max: MAX_KEYWORD_META_BYTES, fix });
                }
                if name == MANAGED_FILE {
                    self.check_managed(dir, &shown.join(&name))?;
                }
            }
        }
        Ok(())
    }

    /// Refuses a tantivy `.managed.json` (the files tantivy may delete) that
    /// names anything but plain files in its own folder: tantivy joins each
    /// name to the folder, so `/home/you/x` or `../x` would be deleted.
    fn check_managed(&self, dir: &Dir, shown: &Path) -> Result<(), DataDirError> {
        let path = self.path.join(shown);
        let bytes = self
            .read_file(dir, MANAGED_FILE, shown, MAX_KEYWORD_META_BYTES, "the keyword index is damaged")?
            .unwrap_or_default();
        let names: Vec<String> = match serde_json::from_slice(&bytes) {
            Ok(names) => names,
            Err(_) if bytes.is_empty() => Vec::new(),
            Err(_) => {
                let why = std::io::Error::other("not a list of file names; run `ragbox doctor --reset`");
                return Err(DataDirError::Io { path, source: why });
            }
        };
        let plain = |n: &str| {
            let mut parts = Path::new(n).components();
            matches!((parts.next(), parts.next()), (Some(std::path::Component::Normal(_)), None))
                && !n.contains(['/', '\\'])
        };
        if let Some(bad) = names.iter().find(|n| !plain(n)) {
            let why = format!(
                "names {:?}, which is not a file in its folder: it was not written by ragbox; run `ragbox doctor --reset`",
                crate::text::for_terminal(bad)
            );
            return Err(DataDirError::Io { path, source: std::io::Error::other(why) });
        }
        Ok(())
    }

    /// Removes `rel` (a derived index that is rebuilt, e.g. `shared` or
    /// `shared/<name>`) and what is in it, when it is there; a link there goes
    /// itself, never its target.
    pub fn remove_index_dir(&self, rel: &str) -> Result<(), DataDirError> {
        match rel.rsplit_once('/') {
            None => self.unlink_anything(rel),
            Some((parent, name)) => {
                if self.kind(parent.split('/').next().unwrap_or(parent))? != Kind::Folder {
                    return Ok(());
                }
                let dir = self.dir.open_dir_nofollow(parent).map_err(self.io(parent))?;
                self.remove_in(&dir, parent, name)
            }
        }
    }

    /// The entries of the folder `rel` (e.g. `shared`), when it is there.
    pub fn index_entries(&self, rel: &str) -> Result<Vec<String>, DataDirError> {
        self.vouch()?;
        if self.kind(rel)? != Kind::Folder {
            return Ok(Vec::new());
        }
        let dir = self.dir.open_dir_nofollow(rel).map_err(self.io(rel))?;
        let mut names = Vec::new();
        for entry in dir.entries().map_err(self.io(rel))? {
            if let Some(name) = entry.map_err(self.io(rel))?.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    /// The plain files in the folder `rel` with their sizes (for `doctor`);
    /// nothing is opened but the folder.
    pub fn file_sizes(&self, rel: &str) -> Result<Vec<(String, u64)>, DataDirError> {
        if self.kind(rel)? != Kind::Folder {
            return Ok(Vec::new());
        }
        let dir = self.dir.open_dir_nofollow(rel).map_err(self.io(rel))?;
        let mut files = Vec::new();
        for entry in dir.entries().map_err(self.io(rel))? {
            let entry = entry.map_err(self.io(rel))?;
            let meta = entry.metadata().map_err(self.io(rel))?;
            if let (true, Some(name)) = (meta.is_file(), entry.file_name().to_str()) {
                files.push((name.to_string(), meta.len()));
            }
        }
        Ok(files)
    }

    /// The folder of the saved vector index, made when missing.
    pub fn vectors_dir(&self) -> Result<Dir, DataDirError> {
        self.vouch()?;
        match self.kind(VECTORS_DIR)? {
            Kind::Folder => {}
            Kind::File => return Err(self.io(VECTORS_DIR)(std::io::Error::other("a file where a folder belongs"))),
            Kind::Missing => match self.dir.create_dir_with(VECTORS_DIR, &platform::private_dir()) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(self.io(VECTORS_DIR)(e)),
                _ => {}
            },
        }
        self.dir.open_dir_nofollow(VECTORS_DIR).map_err(self.io(VECTORS_DIR))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datadir::testing::made;
    use crate::datadir::{KEYWORD_DIR, SHARED_DIR};

    #[test]
    fn index_folders_are_made_owner_only_held_and_listed() {
        let (_ws, data) = made();
        let (dir, path) = data.index_dir("shared/abc").unwrap();
        assert_eq!(path, data.path().join("shared/abc"));
        dir.write("probe", "x").unwrap();
        assert!(path.join("probe").is_file(), "the handle is that folder");
        data.vectors_dir().unwrap().write("probe", "xy").unwrap();
        assert!(data.path().join("vectors/probe").is_file());
        #[cfg(unix)]
        for rel in ["shared", "shared/abc", "vectors"] {
            assert_eq!(crate::datadir::testing::mode(&data.path().join(rel)), 0o700, "{rel}");
        }
        assert_eq!(data.index_entries(SHARED_DIR).unwrap(), ["abc"]);
        assert!(data.index_entries("absent").unwrap().is_empty());
        std::fs::create_dir(path.join("folder")).unwrap();
        assert_eq!(data.file_sizes("vectors").unwrap(), [("probe".to_string(), 2)], "plain files only");
        assert_eq!(data.file_sizes("shared/abc").unwrap(), [("probe".to_string(), 1)]);
        assert!(data.file_sizes("absent").unwrap().is_empty());

        std::fs::remove_dir_all(data.path().join("vectors")).unwrap();
        std::fs::write(data.path().join("vectors"), "x").unwrap();
        let refused = data.vectors_dir().unwrap_err();
        assert!(refused.to_string().contains("a file where a folder belongs"), "{refused}");
    }

    #[test]
    fn an_index_nested_deeper_than_ragbox_makes_or_naming_files_elsewhere_is_refused() {
        let (_ws, data) = made();
        let keyword = data.path().join(KEYWORD_DIR);
        std::fs::create_dir_all(keyword.join("a/b")).unwrap();
        data.index_dir(KEYWORD_DIR).unwrap();
        std::fs::create_dir(keyword.join("a/b/c")).unwrap();
        let deep = data.index_dir(KEYWORD_DIR).unwrap_err();
        assert!(deep.to_string().contains("nested deeper than ragbox makes them"), "{deep}");
        std::fs::remove_dir(keyword.join("a/b/c")).unwrap();

        // tantivy deletes what its `.managed.json` names, joined to the folder.
        let managed = keyword.join(MANAGED_FILE);
        for (names, ok) in [
            (r#"["meta.json", "a.idx"]"#, true),
            ("", true),
            (r#"["../x"]"#, false),
            (r#"["/etc/passwd"]"#, false),
            (r#"["a/b"]"#, false),
            (r#"["a\\b"]"#, false),
            ("{not a list", false),
        ] {
            std::fs::write(&managed, names).unwrap();
            assert_eq!(data.index_dir(KEYWORD_DIR).is_ok(), ok, "{names}");
        }
        std::fs::remove_file(&managed).unwrap();

        let meta = std::fs::File::create(keyword.join("meta.json")).unwrap();
        meta.set_len(MAX_KEYWORD_META_BYTES + 1).unwrap();
        assert!(matches!(data.index_dir(KEYWORD_DIR), Err(DataDirError::TooLarge { .. })));
    }

    #[test]
    #[cfg(unix)]
    fn a_link_or_fifo_anywhere_in_an_index_folder_is_refused() {
        let (ws, data) = made();
        let inner = data.path().join("keyword/a");
        std::fs::create_dir_all(&inner).unwrap();
        std::os::unix::fs::symlink(ws.path(), inner.join("link")).unwrap();
        assert!(matches!(data.index_dir(KEYWORD_DIR), Err(DataDirError::NotPlain { .. })));
        std::fs::remove_file(inner.join("link")).unwrap();
        crate::datadir::testing::fifo(&inner.join("fifo"));
        assert!(matches!(data.index_dir(KEYWORD_DIR), Err(DataDirError::NotPlain { .. })));
    }

    #[test]
    fn removing_an_index_folder_takes_only_what_it_names() {
        let (_ws, data) = made();
        for rel in ["shared/a", "shared/b"] {
            data.index_dir(rel).unwrap().0.write("f", "x").unwrap();
        }
        data.remove_index_dir("shared/a").unwrap();
        assert_eq!(data.index_entries(SHARED_DIR).unwrap(), ["b"]);
        data.remove_index_dir("shared/absent").unwrap();
        data.remove_index_dir(SHARED_DIR).unwrap();
        assert!(!data.path().join(SHARED_DIR).exists());
        data.remove_index_dir("shared/b").unwrap();
    }

    #[test]
    #[cfg(unix)]
    fn removing_an_index_folder_that_is_a_link_takes_the_link_alone() {
        let (ws, data) = made();
        let outside = crate::datadir::testing::outside(ws.path());
        std::os::unix::fs::symlink(&outside, data.path().join(SHARED_DIR)).unwrap();
        data.remove_index_dir(SHARED_DIR).unwrap();
        assert!(data.path().join(SHARED_DIR).symlink_metadata().is_err());
        crate::datadir::testing::untouched(&outside);
    }
}
