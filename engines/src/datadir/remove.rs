//! Removing what ragbox keeps in the data dir, and nothing else: a link
//! goes itself, never its target, and a tree of any depth is taken apart
//! beside the data dir's own entries, without recursing.

use super::{DISCARD_PREFIX, DataDir, DataDirError, Kind};
use crate::platform;
use cap_fs_ext::DirExt as _;
use cap_std::fs::Dir;

impl DataDir {
    /// Removes `name` whatever it is (a link itself, never its target).
    pub(super) fn unlink_anything(&self, name: &str) -> Result<(), DataDirError> {
        match self.dir.symlink_metadata(name) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io(name)(e)),
            Ok(meta) if meta.is_dir() => self.remove_in(&self.dir, "", name),
            Ok(_) => self.dir.remove_file_or_symlink(name).map_err(self.io(name)),
        }
    }

    /// Removes the index entry `name` when present: a file or a folder
    /// and all in it; a link or special file is an error (it is for the
    /// user to look at, or for `doctor --reset`).
    pub(super) fn remove_entry(&self, name: &str) -> Result<(), DataDirError> {
        match self.kind(name)? {
            Kind::Missing => Ok(()),
            Kind::File => self.dir.remove_file(name).map_err(self.io(name)),
            Kind::Folder => self.remove_in(&self.dir, "", name),
        }
    }

    /// Removes `name` in `parent` (`shown` from the data dir), a folder with
    /// everything in it, never following a link (a link goes itself). Each
    /// sub-folder is first moved up next to the data dir's own entries, so
    /// however deep a tree a clone ships, no more than two folders are open
    /// at a time and nothing recurses.
    pub(super) fn remove_in(&self, parent: &Dir, shown: &str, name: &str) -> Result<(), DataDirError> {
        let path = self.path.join(shown).join(name);
        let io = |source| DataDirError::Io { path: path.clone(), source };
        let first = format!("{DISCARD_PREFIX}{:016x}", platform::random_u64());
        match parent.rename(name, &self.dir, &first) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(e)),
        }
        let mut queue = vec![first];
        while let Some(doomed) = queue.pop() {
            if !self.dir.symlink_metadata(&doomed).map_err(io)?.is_dir() {
                self.dir.remove_file_or_symlink(&doomed).map_err(io)?;
                continue;
            }
            let dir = self.dir.open_dir_nofollow(&doomed).map_err(io)?;
            for entry in dir.entries().map_err(io)? {
                let entry = entry.map_err(io)?;
                if entry.file_type().map_err(io)?.is_dir() {
                    let moved = format!("{DISCARD_PREFIX}{:016x}", platform::random_u64());
                    dir.rename(entry.file_name(), &self.dir, &moved).map_err(io)?;
                    queue.push(moved);
                } else {
                    dir.remove_file_or_symlink(entry.file_name()).map_err(io)?;
                }
            }
            drop(dir);
            self.dir.remove_dir(&doomed).map_err(io)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    use crate::datadir::DataDirError;
    use crate::datadir::testing::{made, names};

    #[test]
    fn a_deep_tree_or_a_file_is_removed_whole_and_nothing_is_left_beside_it() {
        let (_ws, data) = made();
        let before = names(data.path());
        let mut deep = data.path().join("keyword");
        for depth in 0..64 {
            deep.push(format!("d{depth}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("bottom"), "x").unwrap();
        std::fs::write(data.path().join("keyword/top"), "x").unwrap();
        data.remove_entry("keyword").unwrap();
        assert_eq!(names(data.path()), before, "no discarded folder left behind");
        data.remove_entry("keyword").unwrap();
        std::fs::write(data.path().join("store.redb"), "x").unwrap();
        data.remove_entry("store.redb").unwrap();
        assert_eq!(names(data.path()), before);
    }

    #[test]
    #[cfg(unix)]
    fn a_link_goes_itself_and_what_it_leads_to_stays() {
        let (ws, data) = made();
        let outside = crate::datadir::testing::outside(ws.path());
        // An index entry that is a link is the user's to look at...
        let link = data.path().join("vectors");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let refused = data.remove_entry("vectors").unwrap_err();
        assert!(matches!(refused, DataDirError::NotPlain { .. }), "{refused}");
        assert!(link.symlink_metadata().is_ok(), "left in place");
        // ...a folder holding one loses the link, not what it leads to...
        std::fs::create_dir(data.path().join("keyword")).unwrap();
        std::os::unix::fs::symlink(&outside, data.path().join("keyword/link")).unwrap();
        data.remove_entry("keyword").unwrap();
        // ...and removing anything takes the link itself.
        data.unlink_anything("vectors").unwrap();
        assert!(link.symlink_metadata().is_err());
        crate::datadir::testing::untouched(&outside);
    }
}
