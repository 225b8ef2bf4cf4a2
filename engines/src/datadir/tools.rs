//! The workspace's own tool components, `tools/*.wasm` in its data dir:
//! kept by a reset, but loaded only once the user trusts their bytes, so
//! bytes nobody trusted are hashed as they stream past and never held.

use super::{DataDir, DataDirError, Kind, TOOLS_DIR};
use cap_fs_ext::DirExt as _;
use cap_std::fs::Dir;
use std::io::{Read as _, Seek as _};
use std::path::{Path, PathBuf};

/// Largest component file read.
pub const MAX_COMPONENT_BYTES: u64 = 64 << 20;

/// Components read from a workspace's `tools/`, at most.
pub const MAX_TOOL_FILES: usize = 64;

/// A component file of a workspace's `tools/`.
pub enum ToolFile {
    /// Its bytes: their sha256 is trusted.
    Trusted(Vec<u8>),
    /// Its sha256 only: nobody trusted these bytes, so they were not kept.
    Untrusted(String),
}

/// The components of a workspace's `tools/`: each file's path, and what was read or why not.
pub type ToolFiles = Vec<(PathBuf, Result<ToolFile, String>)>;

impl DataDir {
    /// The `*.wasm` files in the workspace's `tools/` (at most
    /// [`MAX_TOOL_FILES`]), in name order, each with its bytes when
    /// `trusted` says yes to their sha256, else only that sha256: bytes
    /// nobody trusted are hashed as they stream past, never held.
    pub fn tool_components(&self, trusted: &dyn Fn(&str) -> bool) -> Result<ToolFiles, DataDirError> {
        if self.kind(TOOLS_DIR)? != Kind::Folder {
            return Ok(Vec::new());
        }
        let tools = self.dir.open_dir_nofollow(TOOLS_DIR).map_err(self.io(TOOLS_DIR))?;
        let mut names = Vec::new();
        for entry in tools.entries().map_err(self.io(TOOLS_DIR))? {
            let name = entry.map_err(self.io(TOOLS_DIR))?.file_name();
            if let Some(name) = name.to_str().filter(|n| n.ends_with(".wasm")) {
                names.push(name.to_string());
            }
        }
        names.sort();
        let mut out = Vec::new();
        for (i, name) in names.into_iter().enumerate() {
            let shown = Path::new(TOOLS_DIR).join(&name);
            let read = if i < MAX_TOOL_FILES {
                self.tool_file(&tools, &name, &shown, trusted)
            } else {
                Err(format!(
                    "a workspace's tools folder is read up to {MAX_TOOL_FILES} components; this one is past them"
                ))
            };
            out.push((self.path.join(shown), read));
        }
        Ok(out)
    }

    /// One component of `tools/` (see [`Self::tool_components`]).
    fn tool_file(
        &self,
        dir: &Dir,
        name: &str,
        shown: &Path,
        trusted: &dyn Fn(&str) -> bool,
    ) -> Result<ToolFile, String> {
        use sha2::Digest as _;
        let (mut file, _) = self.open_plain(dir, name, shown).map_err(|e| match e {
            DataDirError::NotPlain { kind, .. } => {
                format!("it is {kind}; a workspace's components are plain files, never followed links")
            }
            other => other.to_string(),
        })?;
        let too_large = || format!("over the {} MiB a component may have", MAX_COMPONENT_BYTES >> 20);
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if total > MAX_COMPONENT_BYTES {
                return Err(too_large());
            }
            hasher.update(&buf[..n]);
        }
        let sha256 = hex::encode(hasher.finalize());
        if !trusted(&sha256) {
            return Ok(ToolFile::Untrusted(sha256));
        }
        // Trusted bytes: read them again, and make sure they are still those.
        file.seek(std::io::SeekFrom::Start(0)).map_err(|e| e.to_string())?;
        let mut bytes = Vec::with_capacity(total as usize);
        file.take(MAX_COMPONENT_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        if hex::encode(sha2::Sha256::digest(&bytes)) != sha256 {
            return Err("it changed while being read; try again".into());
        }
        Ok(ToolFile::Trusted(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datadir::testing::made;
    use sha2::Digest as _;

    fn sha256(bytes: &[u8]) -> String {
        hex::encode(sha2::Sha256::digest(bytes))
    }

    /// What was read of each component, or why not.
    fn read(found: &ToolFiles) -> Vec<Result<&ToolFile, &str>> {
        found.iter().map(|(_, read)| read.as_ref().map_err(String::as_str)).collect()
    }

    #[test]
    fn components_come_in_name_order_trusted_bytes_read_untrusted_only_hashed() {
        let (_ws, data) = made();
        assert!(data.tool_components(&|_| true).unwrap().is_empty(), "no tools folder: none");
        let tools = data.path().join(TOOLS_DIR);
        std::fs::create_dir(&tools).unwrap();
        for (name, bytes) in [("b.wasm", "bee"), ("a.wasm", "ay"), ("notes.txt", "not a component")] {
            std::fs::write(tools.join(name), bytes).unwrap();
        }
        let found = data.tool_components(&|sha| sha == sha256(b"ay")).unwrap();
        let paths: Vec<_> = found.iter().map(|(path, _)| path.clone()).collect();
        assert_eq!(paths, [tools.join("a.wasm"), tools.join("b.wasm")]);
        assert!(matches!(read(&found)[0], Ok(ToolFile::Trusted(bytes)) if bytes == b"ay"));
        assert!(matches!(read(&found)[1], Ok(ToolFile::Untrusted(sha)) if *sha == sha256(b"bee")));
    }

    #[test]
    fn a_component_over_its_cap_or_past_the_first_ones_is_not_read() {
        let (_ws, data) = made();
        let tools = data.path().join(TOOLS_DIR);
        std::fs::create_dir(&tools).unwrap();
        std::fs::File::create(tools.join("large.wasm")).unwrap().set_len(MAX_COMPONENT_BYTES + 1).unwrap();
        let found = data.tool_components(&|_| true).unwrap();
        assert!(matches!(read(&found)[..], [Err(why)] if why.contains("over the 64 MiB")));

        std::fs::remove_file(tools.join("large.wasm")).unwrap();
        for i in 0..=MAX_TOOL_FILES {
            std::fs::write(tools.join(format!("{i:03}.wasm")), "x").unwrap();
        }
        let found = data.tool_components(&|_| false).unwrap();
        let read = read(&found);
        assert_eq!(read.len(), MAX_TOOL_FILES + 1, "each one is told about");
        assert!(read[..MAX_TOOL_FILES].iter().all(Result::is_ok));
        assert!(matches!(read[MAX_TOOL_FILES], Err(why) if why.contains("past them")));
    }

    #[test]
    #[cfg(unix)]
    fn a_link_or_fifo_among_the_components_is_never_opened() {
        let (ws, data) = made();
        let tools = data.path().join(TOOLS_DIR);
        std::fs::create_dir(&tools).unwrap();
        std::fs::write(ws.path().join("outside.wasm"), "theirs").unwrap();
        std::os::unix::fs::symlink(ws.path().join("outside.wasm"), tools.join("link.wasm")).unwrap();
        crate::datadir::testing::fifo(&tools.join("fifo.wasm"));
        let found = data.tool_components(&|_| true).unwrap();
        for read in read(&found) {
            assert!(matches!(read, Err(why) if why.contains("never followed links")));
        }
        assert_eq!(found.len(), 2);
    }
}
