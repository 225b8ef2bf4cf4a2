//! The served workspace as MCP resources, for agents that read without a
//! tool call: every indexed document as `file:///…`, and every skill's files
//! as `skill://<skill-path>/<file>` under MCP's Skills extension (`skills`).
//!
//! The list comes from the index (what ragbox knows as documents, a page at a
//! time in path order); a read comes from the file as it is now. A read's URI
//! is the client's, so it is resolved as a tool's path is (`beneath`):
//! beneath the served workspace only, one name at a time through held folder
//! handles, never through a link, never into a data dir, a version-control
//! folder or the user's config dir, and only a regular file of at most
//! 8 MiB.

mod beneath;
mod frontmatter;
pub mod skills;

use crate::corpus::Corpus;
use crate::index::Filter;
use crate::records::DocumentRecord;
use beneath::Beneath;
use ragbox_protocol::skill::{SCHEME, SKILL_FILE, decode, skill_md_uri};
use skills::Skills;
use std::path::{Component, Path};

/// Documents listed per `resources/list` page.
pub const PAGE: usize = 200;

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
    /// `file:///…` or `skill://<skill-path>/SKILL.md`.
    pub uri: String,
    /// Workspace-relative path, or the skill's name.
    pub name: String,
    /// The document's title, when it has one.
    pub title: Option<String>,
    /// A skill's description.
    pub description: Option<String>,
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
    /// each skill served listed once more by its `SKILL.md` URI, right before
    /// its file (a client that takes the first `…/SKILL.md` it sees for the
    /// skill then finds its name and description).
    pub fn list(&self, cursor: Option<&str>) -> Result<Page, ResourceError> {
        let docs = self.corpus.documents_after(cursor, PAGE)?;
        let next = if docs.len() == PAGE { docs.last().map(|d| d.path.clone()) } else { None };
        let mut entries = Vec::with_capacity(docs.len());
        for doc in &docs {
            let Ok(uri) = url::Url::from_file_path(self.workspace.join(&doc.path)) else { continue };
            // As the index knows it: `skills/list` reads each skill as it is now.
            if let Some((name, uri)) = skill_name(doc).and_then(|n| Some((n, skill_md_uri(&doc.path, n).ok()?))) {
                entries.push(Entry {
                    uri,
                    name: name.to_string(),
                    title: doc.title.clone(),
                    description: doc.metadata.get("description").map(str::to_string),
                    mime: "text/markdown",
                    size: doc.size,
                });
            }
            entries.push(Entry {
                uri: uri.to_string(),
                name: doc.path.clone(),
                title: doc.title.clone(),
                description: None,
                mime: mime_of(&doc.path),
                size: doc.size,
            });
        }
        Ok(Page { entries, next })
    }

    /// The contents behind `uri`: a file of the workspace, a file of a skill
    /// (`skill://<skill-path>/<file>`), or the `SKILL.md` of the indexed
    /// skill called NAME (`skill://NAME`, the URI ragbox gave skills before
    /// the Skills extension).
    pub fn read(&self, uri: &str) -> Result<Contents, ResourceError> {
        let path = if uri.starts_with(SCHEME) {
            match decode(uri).map_err(ResourceError::Invalid)?.as_slice() {
                [name] => self.skill_path(name)?,
                _ => Skills::new(self.workspace, self.corpus)?.file(uri)?,
            }
        } else {
            self.relative(uri)?
        };
        let mime = mime_of(&path);
        let bytes = Beneath::new(self.workspace)?.read(&path)?;
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
        let mime = if matches!(body, Body::Binary(_)) && is_text(mime) { "application/octet-stream" } else { mime };
        Ok(Contents { uri: uri.to_string(), mime, body })
    }

    /// The workspace-relative path of the indexed skill called `name`; a
    /// name more than one skill has is refused, naming their files.
    fn skill_path(&self, name: &str) -> Result<String, ResourceError> {
        let filter = Filter {
            metadata: vec![("ragbox.index".into(), "skill".into()), ("name".into(), name.to_string())],
            ..Filter::default()
        };
        let found: Vec<String> =
            self.corpus.documents(&filter)?.into_iter().filter(|d| skill_name(d).is_some()).map(|d| d.path).collect();
        match found.as_slice() {
            [path] => Ok(path.clone()),
            [] => Err(ResourceError::NotFound(format!(
                "no indexed skill is called '{name}': skills/list and resources/list name the skills \
                 (skill://<skill-path>/SKILL.md), and embed_workspace indexes new ones"
            ))),
            // One could shadow the other: say which, and let the client pick by URI.
            many => Err(ResourceError::Invalid(format!(
                "{} skills are called '{name}' ({}): read the one you mean by its skill://<folder>/SKILL.md or \
                 file:// URI",
                many.len(),
                many.join(", ")
            ))),
        }
    }

    /// The workspace-relative, `/`-separated path a `file:` URI names.
    fn relative(&self, uri: &str) -> Result<String, ResourceError> {
        let parsed = url::Url::parse(uri)
            .map_err(|e| ResourceError::Invalid(format!("'{uri}' is not a URI ({e}): give file:///… or skill://…")))?;
        if parsed.scheme() != "file" {
            return Err(ResourceError::Invalid(format!(
                "'{uri}': this server offers file:// URIs under {} and skill:// URIs",
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

/// The name of an indexed skill: a `SKILL.md` the indexer read as one (its
/// metadata alone could come from any file's frontmatter).
fn skill_name(doc: &DocumentRecord) -> Option<&str> {
    let is_skill_file = doc.path.rsplit('/').next() == Some(SKILL_FILE);
    if !is_skill_file || doc.kind != "skill" || doc.metadata.get("ragbox.index") != Some("skill") {
        return None;
    }
    doc.metadata.get("name").filter(|n| !n.is_empty())
}

/// A media type from a path's extension: text for what the indexer takes,
/// else the common binary files a skill ships (images, fonts, archives).
fn mime_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" | "mdx" => "text/markdown",
        "html" | "htm" => "text/html",
        "json" | "ipynb" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "csv" => "text/csv",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "woff2" => "font/woff2",
        _ => "text/plain",
    }
}

/// Whether `mime` promises text: bytes that are not say otherwise.
fn is_text(mime: &str) -> bool {
    mime.starts_with("text/") || matches!(mime, "application/json" | "application/yaml" | "application/toml")
}
