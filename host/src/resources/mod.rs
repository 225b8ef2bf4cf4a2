//! The served workspace as MCP resources, for agents that read without a
//! tool call: every indexed document as `file:///…` and every indexed skill
//! as `skill://NAME` (its whole SKILL.md).
//!
//! The list comes from the index (what ragbox knows as documents, a page at a
//! time in path order); a read comes from the file as it is now. A read's URI
//! is the client's, so it is resolved as a tool's path is: beneath the
//! served workspace only, one name at a time through held folder handles,
//! never through a link, never into a data dir, a version-control folder or
//! the user's config dir, and only a regular file of at most
//! [`MAX_READ_BYTES`].

use crate::corpus::Corpus;
use crate::index::Filter;
use crate::platform;
use crate::store::DocumentRecord;
use cap_fs_ext::DirExt as _;
use cap_std::fs::{Dir, OpenOptions};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

/// Documents listed per `resources/list` page.
pub const PAGE: usize = 200;
/// The largest file a read returns; larger ones are refused with the reason.
pub const MAX_READ_BYTES: u64 = 8 << 20;
/// The scheme of a skill's URI.
const SKILL_SCHEME: &str = "skill://";
/// The file that makes a folder a skill.
const SKILL_FILE: &str = "SKILL.md";
/// Bytes kept as they are in a skill name inside its URI (RFC 3986's unreserved).
const NAME_KEEPS: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Why a resource cannot be listed or read.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    /// The URI is not one this server offers.
    #[error("{0}")]
    Invalid(String),
    /// Nothing is there (or nothing a client may read).
    #[error("{0}")]
    NotFound(String),
    /// The index could not be read.
    #[error(transparent)]
    Corpus(#[from] crate::corpus::CorpusError),
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// One listed resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `file:///…` or `skill://NAME`.
    pub uri: String,
    /// Workspace-relative path, or the skill's name.
    pub name: String,
    /// The document's title, when it has one.
    pub title: Option<String>,
    /// Media type.
    pub mime: &'static str,
    /// Size in bytes, as indexed.
    pub size: u64,
}

/// A page of the list, and where the next one starts.
#[derive(Debug, Default)]
pub struct Page {
    /// The resources on this page.
    pub entries: Vec<Entry>,
    /// The cursor for the next page, when there is one.
    pub next: Option<String>,
}

/// What a read returns.
#[derive(Debug, PartialEq, Eq)]
pub struct Contents {
    /// The URI as asked.
    pub uri: String,
    /// Media type.
    pub mime: &'static str,
    /// The file's bytes: text when they are UTF-8.
    pub body: Body,
}

/// A file's content.
#[derive(Debug, PartialEq, Eq)]
pub enum Body {
    /// UTF-8 text.
    Text(String),
    /// Anything else.
    Binary(Vec<u8>),
}

/// The served workspace's resources.
pub struct Resources<'a> {
    /// The served workspace, canonical.
    workspace: &'a Path,
    /// Its index.
    corpus: &'a Corpus,
}

impl<'a> Resources<'a> {
    /// The resources of `workspace` (canonical) as `corpus` indexes it.
    pub fn new(workspace: &'a Path, corpus: &'a Corpus) -> Self {
        Self { workspace, corpus }
    }

    /// A page of documents after `cursor` (a path from the previous page),
    /// each skill listed once more by name right after its file.
    pub fn list(&self, cursor: Option<&str>) -> Result<Page, ResourceError> {
        let docs = self.corpus.documents_after(cursor, PAGE)?;
        let next = if docs.len() == PAGE { docs.last().map(|d| d.path.clone()) } else { None };
        let mut entries = Vec::with_capacity(docs.len());
        for doc in &docs {
            let Ok(uri) = url::Url::from_file_path(self.workspace.join(&doc.path)) else { continue };
            entries.push(Entry {
                uri: uri.to_string(),
                name: doc.path.clone(),
                title: doc.title.clone(),
                mime: mime_of(&doc.path),
                size: doc.size,
            });
            if let Some(name) = skill_name(doc) {
                entries.push(Entry {
                    uri: skill_uri(name),
                    name: name.to_string(),
                    title: doc.title.clone(),
                    mime: "text/markdown",
                    size: doc.size,
                });
            }
        }
        Ok(Page { entries, next })
    }

    /// The contents behind `uri`: a file of the workspace, or a skill's SKILL.md.
    pub fn read(&self, uri: &str) -> Result<Contents, ResourceError> {
        let (path, mime) = if let Some(name) = uri.strip_prefix(SKILL_SCHEME) {
            (self.skill_path(name)?, "text/markdown")
        } else {
            let path = self.relative(uri)?;
            let mime = mime_of(&path);
            (path, mime)
        };
        let bytes = read_beneath(self.workspace, &path)?;
        // Text is UTF-8 without control characters other than whitespace:
        // no text file holds NUL (git's rule), and JSON would write each
        // other one six bytes long.
        let body = match String::from_utf8(bytes) {
            Ok(text) if !text.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c')) => {
                Body::Text(text)
            }
            Ok(text) => Body::Binary(text.into_bytes()),
            Err(e) => Body::Binary(e.into_bytes()),
        };
        let mime = if matches!(body, Body::Binary(_)) { "application/octet-stream" } else { mime };
        Ok(Contents { uri: uri.to_string(), mime, body })
    }

    /// The workspace-relative path of the indexed skill called `name`; a
    /// name more than one skill has is refused, naming their files.
    fn skill_path(&self, name: &str) -> Result<String, ResourceError> {
        let name = percent_decode_str(name.trim_end_matches('/'))
            .decode_utf8()
            .map_err(|_| ResourceError::Invalid(format!("skill://{name}: the name is not UTF-8")))?;
        let filter = Filter {
            metadata: vec![("ragbox.index".into(), "skill".into()), ("name".into(), name.to_string())],
            ..Filter::default()
        };
        let found: Vec<String> =
            self.corpus.documents(&filter)?.into_iter().filter(|d| skill_name(d).is_some()).map(|d| d.path).collect();
        match found.as_slice() {
            [path] => Ok(path.clone()),
            [] => Err(ResourceError::NotFound(format!(
                "no indexed skill is called '{name}': resources/list names the skills (skill://…), \
                 and embed_workspace indexes new ones"
            ))),
            // One could shadow the other: say which, and let the client pick by file.
            many => Err(ResourceError::Invalid(format!(
                "{} skills are called '{name}' ({}): read the one you mean by its file:// URI",
                many.len(),
                many.join(", ")
            ))),
        }
    }

    /// The workspace-relative, `/`-separated path a `file:` URI names.
    fn relative(&self, uri: &str) -> Result<String, ResourceError> {
        let parsed = url::Url::parse(uri).map_err(|e| {
            ResourceError::Invalid(format!("'{uri}' is not a URI ({e}): give file:///… or skill://NAME"))
        })?;
        if parsed.scheme() != "file" {
            return Err(ResourceError::Invalid(format!(
                "'{uri}': this server offers file:// URIs under {} and skill://NAME",
                self.workspace.display()
            )));
        }
        let path =
            parsed.to_file_path().map_err(|()| ResourceError::Invalid(format!("'{uri}' is not a local file path")))?;
        let outside = || {
            ResourceError::NotFound(format!(
                "'{uri}' is not in the served workspace {}: only its files are resources",
                self.workspace.display()
            ))
        };
        let rel = path.strip_prefix(self.workspace).map_err(|_| outside())?;
        let mut names = Vec::new();
        for part in rel.components() {
            match part {
                Component::Normal(name) => names.push(name.to_str().ok_or_else(outside)?.to_string()),
                Component::CurDir => {}
                _ => return Err(outside()),
            }
        }
        if names.is_empty() {
            return Err(ResourceError::NotFound(format!("'{uri}' is the workspace folder, not a file")));
        }
        Ok(names.join("/"))
    }
}

/// The `skill://` URI of a skill.
fn skill_uri(name: &str) -> String {
    format!("{SKILL_SCHEME}{}", utf8_percent_encode(name, NAME_KEEPS))
}

/// The name of an indexed skill: a `SKILL.md` the indexer read as one (its
/// metadata alone could come from any file's frontmatter).
fn skill_name(doc: &DocumentRecord) -> Option<&str> {
    let is_skill_file = doc.path.rsplit('/').next() == Some(SKILL_FILE);
    if !is_skill_file || doc.kind != "skill" || doc.metadata.get("ragbox.index") != Some("skill") {
        return None;
    }
    doc.metadata.get("name").filter(|n| !n.is_empty())
}

/// A media type from a path's extension; text for what the indexer takes.
fn mime_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" | "mdx" => "text/markdown",
        "html" | "htm" => "text/html",
        "json" | "ipynb" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "csv" => "text/csv",
        _ => "text/plain",
    }
}

/// Whether a folder name is one no resource lies in: a data dir, a version
/// control folder (without regard to case, for case-insensitive filesystems).
fn is_closed_dir(name: &str) -> bool {
    ragbox_protocol::walk::SKIPPED_DIRS.iter().any(|d| name.eq_ignore_ascii_case(d))
}

/// Reads the regular file at `rel` beneath `workspace`, opening one name at
/// a time without following a link.
fn read_beneath(workspace: &Path, rel: &str) -> Result<Vec<u8>, ResourceError> {
    let gone = || ResourceError::NotFound(format!("{rel}: no such file in the workspace (it may have been removed)"));
    let io = |source| ResourceError::Io { path: rel.to_string(), source };
    let mut names: Vec<&str> = rel.split('/').collect();
    // Stored paths (a skill's) come this way too: each must be one plain name.
    if names.iter().any(|n| n.is_empty() || *n == "." || *n == ".." || !platform::is_plain_name(n)) {
        return Err(ResourceError::Invalid(format!("{rel:?} is not a path of plain names inside the workspace")));
    }
    let last = names.pop().ok_or_else(gone)?;
    if names.iter().chain([&last]).any(|n| is_closed_dir(n)) {
        return Err(ResourceError::NotFound(format!(
            "{rel}: ragbox's data and version-control folders are not resources"
        )));
    }
    let config = hidden_dir();
    let config_refused = || ResourceError::NotFound(format!("{rel}: ragbox's config folder is not a resource"));
    if config.as_ref().is_some_and(|(path, _)| workspace.starts_with(path)) {
        return Err(config_refused());
    }
    if platform::in_process_folder(&workspace.join(rel)) {
        return Err(ResourceError::NotFound(format!("{rel}: a process's folder in /proc is not a resource")));
    }
    let mut dir = Dir::open_ambient_dir(workspace, cap_std::ambient_authority()).map_err(io)?;
    let mut real = workspace.to_path_buf();
    for name in names {
        let next = dir.open_dir_nofollow(name).map_err(|e| not_followed(rel, e))?;
        let id = next.dir_metadata().map(|m| platform::file_id(&m)).unwrap_or(platform::FileId::NONE);
        // The data dir under another name for it (a Windows short name, an
        // HFS+ spelling): known by its identity, as the sandbox's guard knows it.
        if id != platform::FileId::NONE && platform::dir_identity(&dir, crate::datadir::DATA_DIR) == Some(id) {
            return Err(ResourceError::NotFound(format!("{rel}: ragbox's data folder is not a resource")));
        }
        real.push(name);
        if config.as_ref().is_some_and(|(path, config_id)| real.starts_with(path) || id == *config_id) {
            return Err(config_refused());
        }
        dir = next;
    }
    let kind = dir.symlink_metadata(last).map_err(|e| not_followed(rel, e))?.file_type();
    if kind.is_symlink() {
        return Err(ResourceError::NotFound(format!("{rel} is a link: links are not followed")));
    }
    if !kind.is_file() {
        return Err(ResourceError::NotFound(format!("{rel} is not a regular file")));
    }
    let mut options = OpenOptions::new();
    options.read(true);
    let file = dir.open_with(last, platform::no_follow_no_block(&mut options)).map_err(|e| not_followed(rel, e))?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ResourceError::NotFound(format!("{rel} is not a regular file")));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(ResourceError::Invalid(format!(
            "{rel} has {} bytes, more than a resource read returns ({} MiB): search it with get_context instead",
            meta.len(),
            MAX_READ_BYTES >> 20
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow after its size was read: take no more than the cap.
    file.into_std().take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(ResourceError::Invalid(format!("{rel} grew past {} MiB while it was read", MAX_READ_BYTES >> 20)));
    }
    Ok(bytes)
}

/// The user's config dir (its key, the HTTP token) and its identity, never a resource.
fn hidden_dir() -> Option<(PathBuf, platform::FileId)> {
    let path = platform::canonical(&crate::config::user_config_dir()?).ok()?;
    let dir = Dir::open_ambient_dir(&path, cap_std::ambient_authority()).ok()?;
    let id = platform::file_id(&dir.dir_metadata().ok()?);
    Some((path, id))
}

/// An open that failed on the way to `rel`: a link met, or nothing there.
fn not_followed(rel: &str, e: std::io::Error) -> ResourceError {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            ResourceError::NotFound(format!("{rel}: no such file in the workspace (it may have been removed)"))
        }
        _ => ResourceError::NotFound(format!("{rel} cannot be opened without following a link ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_names_round_trip_through_their_uri() {
        assert_eq!(skill_uri("restart-pods"), "skill://restart-pods");
        assert_eq!(skill_uri("a b/c"), "skill://a%20b%2Fc");
        assert_eq!(percent_decode_str("a%20b%2Fc").decode_utf8().unwrap(), "a b/c");
    }

    #[test]
    fn reads_stay_beneath_the_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = platform::canonical(tmp.path()).unwrap();
        std::fs::create_dir_all(ws.join("notes")).unwrap();
        std::fs::create_dir_all(ws.join(".ragbox")).unwrap();
        std::fs::write(ws.join("notes/a.md"), "# A\n").unwrap();
        std::fs::write(ws.join(".ragbox/key"), "secret").unwrap();
        std::fs::write(ws.join("bin.dat"), [0xff, 0xfe, 0]).unwrap();
        assert_eq!(read_beneath(&ws, "notes/a.md").unwrap(), b"# A\n");
        assert!(matches!(read_beneath(&ws, ".ragbox/key"), Err(ResourceError::NotFound(_))));
        assert!(matches!(read_beneath(&ws, ".RAGBOX/key"), Err(ResourceError::NotFound(_))));
        assert!(matches!(read_beneath(&ws, "notes/missing.md"), Err(ResourceError::NotFound(_))));
        assert!(matches!(read_beneath(&ws, "notes"), Err(ResourceError::NotFound(_))));
        assert_eq!(read_beneath(&ws, "bin.dat").unwrap(), vec![0xff, 0xfe, 0]);
        for odd in ["notes/../notes/a.md", "notes//a.md", "./notes/a.md", ""] {
            assert!(matches!(read_beneath(&ws, odd), Err(ResourceError::Invalid(_))), "{odd:?}");
        }
        let in_proc = |p: &str| platform::in_process_folder(Path::new(p));
        assert!(in_proc("/proc/self/environ") && in_proc("/proc/1/mem"));
        assert!(!in_proc("/proc/cpuinfo") && !in_proc("/work/proc/1"));
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("secret.md"), "outside").unwrap();
            std::os::unix::fs::symlink(outside.path(), ws.join("linked")).unwrap();
            std::os::unix::fs::symlink(outside.path().join("secret.md"), ws.join("file-link.md")).unwrap();
            assert!(read_beneath(&ws, "linked/secret.md").is_err(), "a linked folder is not followed");
            assert!(read_beneath(&ws, "file-link.md").is_err(), "a linked file is not followed");
            // What a clone can ship: a link to a device, a FIFO (whose open
            // would wait for a writer), a data dir that is a link out.
            std::os::unix::fs::symlink("/dev/zero", ws.join("zero.md")).unwrap();
            assert!(read_beneath(&ws, "zero.md").is_err(), "a link to /dev/zero is not followed");
            let fifo = std::ffi::CString::new(ws.join("pipe.md").into_os_string().into_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
            let started = std::time::Instant::now();
            assert!(
                matches!(read_beneath(&ws, "pipe.md"), Err(ResourceError::NotFound(m)) if m.contains("not a regular file"))
            );
            assert!(started.elapsed() < std::time::Duration::from_secs(1), "a FIFO is not waited on");
            let shipped = tempfile::tempdir().unwrap();
            let elsewhere = platform::canonical(shipped.path()).unwrap();
            std::fs::create_dir_all(elsewhere.join("sub/.ragbox")).unwrap();
            std::fs::write(elsewhere.join("sub/.ragbox/owner"), "made elsewhere").unwrap();
            std::os::unix::fs::symlink(elsewhere.join("sub/.ragbox"), ws.join("notes/.ragbox")).unwrap();
            assert!(read_beneath(&ws, "notes/.ragbox/owner").is_err(), "a data dir that links out");
            // A file made elsewhere and hard-linked in is the workspace's file, as it is to tools.
            std::fs::write(elsewhere.join("made.md"), "made elsewhere").unwrap();
            if std::fs::hard_link(elsewhere.join("made.md"), ws.join("notes/made.md")).is_ok() {
                assert_eq!(read_beneath(&ws, "notes/made.md").unwrap(), b"made elsewhere");
            }
        }
    }
}
