//! Which folders a tool call may run in: the served workspace, plus folders the
//! user's config allows. A tool never sees more than the one it runs for.

use std::path::{Path, PathBuf};

/// The argument name, on any tool, that asks for a workspace other than the default.
pub const WORKSPACE_ARG: &str = "workspace_path";

/// Errors opening the served workspace.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The folder does not exist or cannot be resolved.
    #[error("workspace folder {path} cannot be opened: {source}")]
    Open {
        /// The folder as given.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The path exists but is not a folder.
    #[error("workspace {0} is not a folder")]
    NotADirectory(PathBuf),
}

/// The served workspace and the other folders calls may name.
#[derive(Debug, Clone)]
pub struct Workspaces {
    served: PathBuf,
    allowed: Vec<PathBuf>,
}

impl Workspaces {
    /// Opens the served workspace; `allowed` are extra folders from config
    /// (relative ones are taken from the served workspace; missing ones are dropped).
    pub fn new(served: &Path, allowed: &[PathBuf]) -> Result<Self, WorkspaceError> {
        let served = crate::platform::canonical(served)
            .map_err(|source| WorkspaceError::Open { path: served.to_path_buf(), source })?;
        if !served.is_dir() {
            return Err(WorkspaceError::NotADirectory(served));
        }
        let allowed = allowed
            .iter()
            .filter_map(|p| {
                let p = served.join(p);
                match crate::platform::canonical(&p) {
                    Ok(c) if c.is_dir() => Some(c),
                    _ => {
                        tracing::warn!("allowed workspace {} is not an existing folder; ignored", p.display());
                        None
                    }
                }
            })
            .collect();
        Ok(Self { served, allowed })
    }

    /// The served workspace (canonical).
    pub fn served(&self) -> &Path {
        &self.served
    }

    /// The folder a call runs in: the served workspace when `requested` is
    /// absent or empty, else `requested` if it is the served one or allowed.
    /// The error is the message the tool shows the client.
    pub fn resolve(&self, requested: Option<&str>) -> Result<PathBuf, String> {
        let Some(requested) = requested.map(str::trim).filter(|r| !r.is_empty()) else {
            return Ok(self.served.clone());
        };
        let path = self.served.join(requested);
        let canonical = crate::platform::canonical(&path).map_err(|_| format!("Workspace not found: {requested}"))?;
        if canonical == self.served || self.allowed.contains(&canonical) {
            Ok(canonical)
        } else {
            Err(format!(
                "Workspace not allowed: {requested} (this server serves {}; list other folders under \
                 allowed_workspaces in your config, {})",
                self.served.display(),
                crate::config::user_config_shown()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_served_allowed_and_refuses_others() {
        let root = tempfile::tempdir().unwrap();
        let served = root.path().join("ws");
        let other = root.path().join("other");
        let secret = root.path().join("secret");
        for d in [&served, &other, &secret] {
            std::fs::create_dir(d).unwrap();
        }
        let ws = Workspaces::new(&served, &[PathBuf::from("../other")]).unwrap();
        let served_c = served.canonicalize().unwrap();
        assert_eq!(ws.resolve(None).unwrap(), served_c);
        assert_eq!(ws.resolve(Some("")).unwrap(), served_c);
        assert_eq!(ws.resolve(Some(served.to_str().unwrap())).unwrap(), served_c);
        assert_eq!(ws.resolve(Some(".")).unwrap(), served_c);
        assert_eq!(ws.resolve(Some(other.to_str().unwrap())).unwrap(), other.canonicalize().unwrap());
        let err = ws.resolve(Some(secret.to_str().unwrap())).unwrap_err();
        assert!(err.starts_with("Workspace not allowed:"), "{err}");
        let err = ws.resolve(Some("/no/such/dir")).unwrap_err();
        assert!(err.starts_with("Workspace not found:"), "{err}");
    }
}
