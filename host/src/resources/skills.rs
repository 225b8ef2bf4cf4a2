//! MCP's Skills extension (SEP-2640, `io.modelcontextprotocol/skills`) over
//! the served workspace: a folder holding a `SKILL.md` whose frontmatter
//! names it (an Agent Skills name, the folder's own) is a skill at
//! `skill://<folder>/SKILL.md`, and every file beneath it is a resource at
//! `skill://<folder>/<file>`, read as the other resources are.
//!
//! `skills/list` pages through the skills the index knows; `skills/get`,
//! directory reads and file reads take any skill of the workspace as it is
//! now, indexed or not. A skill's entry is read from its files at that moment:
//! its frontmatter as JSON and every file with its size and SHA-256. A skill
//! past the extension's limits (512 files, 16 MiB), or with a file larger than
//! a read returns, is not served: a listing names it with why, and a request
//! for it is answered with why.

use super::beneath::{Beneath, Child, MAX_READ_BYTES};
use super::{ResourceError, frontmatter, mime_of, skill_name};
use crate::corpus::Corpus;
use crate::index::Filter;
use ragbox_protocol::skill::{SCHEME, SKILL_FILE, decode, encode_path, skill_md_uri};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// Files a skill may have, its `SKILL.md` included (the extension's limit).
const MAX_FILES: usize = 512;
/// What a skill's files may add up to, in bytes (the extension's limit).
const MAX_BYTES: u64 = 16 << 20;
/// Folders a skill may have, so that looking one over stays bounded.
const MAX_FOLDERS: usize = 512;
/// Entries of any kind (links and FIFOs too) looked at in one skill.
const MAX_ENTRIES: usize = 4096;
/// Skills per `skills/list` page.
const PAGE: usize = 50;
/// Entries per `resources/directory/read` page.
const DIRECTORY_PAGE: usize = 200;
/// The media type of a directory resource.
const DIRECTORY_MIME: &str = "inode/directory";
/// The index's mark on a skill's document.
const MARKER: (&str, &str) = ("ragbox.index", "skill");

/// One skill as `skills/list` and `skills/get` give it.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its frontmatter, every field.
    pub frontmatter: Map<String, Value>,
    /// Every file of it, `SKILL.md` included, in path order.
    pub files: Vec<SkillFile>,
}

/// One file of a skill: what a client checks each read against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Its URI.
    pub uri: String,
    /// `sha256:` and the lowercase hex SHA-256 of its bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// A page of `skills/list`.
#[derive(Debug, Default)]
pub struct SkillPage {
    /// The skills served.
    pub skills: Vec<SkillEntry>,
    /// The indexed skills of this page that are not served, and why.
    pub not_served: Vec<NotServed>,
    /// The cursor for the next page, when there is one.
    pub next: Option<String>,
}

/// An indexed `SKILL.md` that is not served as a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotServed {
    /// Its workspace-relative path.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// A page of a directory's children.
#[derive(Debug, Default)]
pub struct DirectoryPage {
    /// Files and folders, by name.
    pub children: Vec<DirectoryChild>,
    /// The cursor for the next page, when there is one.
    pub next: Option<String>,
}

/// A file or folder in a skill's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryChild {
    /// Its URI.
    pub uri: String,
    /// Its name in the directory.
    pub name: String,
    /// Its media type; [`DIRECTORY_MIME`] for a folder.
    pub mime: &'static str,
    /// A file's size in bytes.
    pub size: Option<u64>,
}

/// A skill found servable: its frontmatter and its files' paths in it, not
/// yet read.
struct Found {
    frontmatter: Map<String, Value>,
    files: Vec<String>,
}

/// The served workspace's skills.
pub struct Skills<'a> {
    beneath: Beneath<'a>,
    corpus: &'a Corpus,
}

impl<'a> Skills<'a> {
    /// The skills of `workspace` (canonical), as `corpus` indexes them.
    pub fn new(workspace: &'a std::path::Path, corpus: &'a Corpus) -> Result<Self, ResourceError> {
        Ok(Self { beneath: Beneath::new(workspace)?, corpus })
    }

    /// A page of the indexed skills after `cursor` (the path of the previous
    /// page's last `SKILL.md`), each read as it is now.
    pub fn list(&self, cursor: Option<&str>) -> Result<SkillPage, ResourceError> {
        let filter = Filter { metadata: vec![(MARKER.0.into(), MARKER.1.into())], ..Filter::default() };
        let mut paths: Vec<String> =
            self.corpus.documents(&filter)?.into_iter().filter(|d| skill_name(d).is_some()).map(|d| d.path).collect();
        paths.sort();
        paths.dedup();
        let start = cursor.map_or(0, |c| paths.partition_point(|p| p.as_str() <= c));
        let end = paths.len().min(start + PAGE);
        let mut page = SkillPage { next: (end < paths.len()).then(|| paths[end - 1].clone()), ..SkillPage::default() };
        for path in &paths[start..end] {
            let Some(folder) = path.strip_suffix(SKILL_FILE).and_then(|f| f.strip_suffix('/')) else {
                let reason = format!("a {SKILL_FILE} at the workspace's root is not in a folder of its own");
                page.not_served.push(NotServed { path: path.clone(), reason });
                continue;
            };
            match self.entry(folder, &format!("{SCHEME}{}/", encode_path(folder))) {
                Ok(entry) => page.skills.push(entry),
                Err(reason) => page.not_served.push(NotServed { path: path.clone(), reason }),
            }
        }
        Ok(page)
    }

    /// The skill whose `SKILL.md` is at `uri`, as it is now; its files'
    /// URIs are spelt as `uri` is.
    pub fn get(&self, uri: &str) -> Result<SkillEntry, ResourceError> {
        let refused = |why: String| ResourceError::Invalid(format!("No skill is served at {uri}: {why}"));
        let Some(base) = uri.strip_suffix(SKILL_FILE).filter(|b| b.ends_with('/')) else {
            return Err(refused(format!("a skill's URI is skill://<skill-path>/{SKILL_FILE}")));
        };
        let names = decode(uri).map_err(refused)?;
        let folder = &names[..names.len() - 1];
        if folder.is_empty() {
            return Err(refused(format!("a skill's URI names its folder before /{SKILL_FILE}")));
        }
        self.entry(&folder.join("/"), base).map_err(refused)
    }

    /// The workspace-relative path of the file `uri` names in a skill this
    /// server serves.
    pub fn file(&self, uri: &str) -> Result<String, ResourceError> {
        let names = decode(uri).map_err(ResourceError::Invalid)?;
        let (_, folders) =
            names.split_last().ok_or_else(|| ResourceError::Invalid(format!("'{uri}' names nothing")))?;
        self.root_of(folders).map_err(|why| ResourceError::NotFound(format!("{uri} is not served: {why}")))?;
        Ok(names.join("/"))
    }

    /// A page of the children of the directory `uri` of a skill this server
    /// serves (its folder or one beneath it), after the name `cursor`.
    pub fn directory(&self, uri: &str, cursor: Option<&str>) -> Result<DirectoryPage, ResourceError> {
        let refused = |why: String| ResourceError::Invalid(format!("No directory is served at {uri}: {why}"));
        let names = decode(uri).map_err(refused)?;
        let rel = names.join("/");
        let folder = match self.beneath.folder(&rel) {
            Ok(folder) => folder,
            Err(e) => {
                let (parent, last) = rel.rsplit_once('/').unwrap_or(("", &rel));
                let is_file = self.beneath.folder(parent).is_ok_and(|p| p.holds_file(last));
                return Err(match is_file {
                    true => ResourceError::Invalid(format!(
                        "{uri} is not a directory resource: read it with resources/read"
                    )),
                    false => refused(e.to_string()),
                });
            }
        };
        self.root_of(&names).map_err(refused)?;
        let listing = folder.children(&self.beneath, MAX_ENTRIES).map_err(|e| refused(e.to_string()))?;
        if listing.cut {
            return Err(refused(format!("it holds more than {MAX_ENTRIES} entries")));
        }
        let children = listing.children;
        let base = uri.strip_suffix('/').unwrap_or(uri);
        let after: Vec<&Child> = children.iter().filter(|c| cursor.is_none_or(|at| c.name() > at)).collect();
        let next = (after.len() > DIRECTORY_PAGE).then(|| after[DIRECTORY_PAGE - 1].name().to_string());
        let children = after
            .into_iter()
            .take(DIRECTORY_PAGE)
            .map(|child| {
                let uri = format!("{base}/{}", encode_path(child.name()));
                let name = child.name().to_string();
                match child {
                    Child::File(_, size) => DirectoryChild { uri, mime: mime_of(&name), name, size: Some(*size) },
                    Child::Folder(_) => DirectoryChild { uri, mime: DIRECTORY_MIME, name, size: None },
                }
            })
            .collect();
        Ok(DirectoryPage { children, next })
    }

    /// The folder of the nearest skill served that holds the folder `names`
    /// (or is it), or why there is none.
    fn root_of(&self, names: &[String]) -> Result<String, String> {
        let mut why = None;
        for depth in (1..=names.len()).rev() {
            let folder = names[..depth].join("/");
            if !self.beneath.folder(&folder).is_ok_and(|f| f.holds_file(SKILL_FILE)) {
                continue;
            }
            match self.find(&folder) {
                Ok(_) => return Ok(folder),
                // A nested SKILL.md that is no skill is a file of the skill around it.
                Err(reason) => why = why.or(Some(format!("{folder}: {reason}"))),
            }
        }
        Err(why.unwrap_or_else(|| format!("it is not in a folder holding a {SKILL_FILE}")))
    }

    /// The entry of the skill in `folder`, its files' URIs under `base`
    /// (`skill://<skill-path>/`), or why it is not served.
    fn entry(&self, folder: &str, base: &str) -> Result<SkillEntry, String> {
        let found = self.find(folder)?;
        let mut files = Vec::with_capacity(found.files.len());
        let mut total = 0u64;
        for rel in &found.files {
            let bytes = self.beneath.read(&format!("{folder}/{rel}")).map_err(|e| e.to_string())?;
            total += bytes.len() as u64;
            if total > MAX_BYTES {
                return Err(too_large());
            }
            let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
            files.push(SkillFile { uri: format!("{base}{}", encode_path(rel)), digest, size: bytes.len() as u64 });
        }
        Ok(SkillEntry { uri: format!("{base}{SKILL_FILE}"), frontmatter: found.frontmatter, files })
    }

    /// The skill in `folder` if it is one this server serves: its `SKILL.md`
    /// has a name (the folder's, an Agent Skills name) and a description, and
    /// its files are within the limits.
    fn find(&self, folder: &str) -> Result<Found, String> {
        let bytes = self.beneath.read(&format!("{folder}/{SKILL_FILE}")).map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes).map_err(|_| format!("its {SKILL_FILE} is not UTF-8 text"))?;
        let frontmatter = frontmatter::parse(&text)?;
        let field = |key: &str| frontmatter.get(key).and_then(Value::as_str);
        let name =
            field("name").ok_or("its frontmatter has no name (a string), which the Agent Skills spec requires")?;
        field("description")
            .filter(|d| !d.trim().is_empty())
            .ok_or("its frontmatter has no description (a string), which the Agent Skills spec requires")?;
        skill_md_uri(&format!("{folder}/{SKILL_FILE}"), name)?;
        let files = self.files_of(folder)?;
        Ok(Found { frontmatter, files })
    }

    /// The regular files beneath `folder`, relative to it, in path order; or
    /// why they are past what a skill may hold.
    fn files_of(&self, folder: &str) -> Result<Vec<String>, String> {
        let (mut files, mut folders, mut seen, mut total) = (Vec::new(), 0usize, 0usize, 0u64);
        let mut pending = vec![String::new()];
        while let Some(sub) = pending.pop() {
            let rel = if sub.is_empty() { folder.to_string() } else { format!("{folder}/{sub}") };
            let here = self.beneath.folder(&rel).map_err(|e| e.to_string())?;
            let listing = here.children(&self.beneath, MAX_ENTRIES - seen).map_err(|e| e.to_string())?;
            seen += listing.seen;
            for child in listing.children {
                let path = if sub.is_empty() { child.name().to_string() } else { format!("{sub}/{}", child.name()) };
                match child {
                    Child::Folder(_) => {
                        folders += 1;
                        if folders > MAX_FOLDERS {
                            return Err(format!("it has more than {MAX_FOLDERS} folders"));
                        }
                        pending.push(path);
                    }
                    Child::File(_, size) => {
                        if files.len() == MAX_FILES {
                            return Err(format!(
                                "it has more than {MAX_FILES} files, the most a skill may have under MCP's Skills \
                                 extension: read them by their file:// URIs, or split the skill"
                            ));
                        }
                        if size > MAX_READ_BYTES {
                            return Err(format!(
                                "{path} has {size} bytes, more than a resource read returns ({} MiB)",
                                MAX_READ_BYTES >> 20
                            ));
                        }
                        total += size;
                        if total > MAX_BYTES {
                            return Err(too_large());
                        }
                        files.push(path);
                    }
                }
            }
            // Past the files limit above, if it is files that fill it.
            if listing.cut {
                return Err(format!("it holds more than {MAX_ENTRIES} entries (files, folders, links, …)"));
            }
        }
        files.sort();
        Ok(files)
    }
}

/// Whether any of `paths` (workspace-relative, changed files or folders)
/// is a `SKILL.md` or lies in a folder holding one: a skill's entry (its
/// files, their digests) may have changed even where the index did not.
pub fn touches_skill<'p>(workspace: &std::path::Path, paths: impl IntoIterator<Item = &'p String>) -> bool {
    let mut looked = std::collections::HashSet::new();
    paths.into_iter().any(|path| {
        let mut folder = path.as_str();
        loop {
            if folder.rsplit('/').next() == Some(SKILL_FILE) {
                return true;
            }
            // Each folder once: a batch's paths share their parents. (Only
            // whether to tell the clients: nothing is read.)
            if looked.insert(folder)
                && std::fs::symlink_metadata(workspace.join(folder).join(SKILL_FILE)).is_ok_and(|m| m.is_file())
            {
                return true;
            }
            match folder.rsplit_once('/') {
                Some((parent, _)) => folder = parent,
                None => return false,
            }
        }
    })
}

/// Why a skill whose files pass the size limit is not served.
fn too_large() -> String {
    format!(
        "its files add up to more than {} MiB, the most a skill may hold under MCP's Skills extension: read them by \
         their file:// URIs, or split the skill",
        MAX_BYTES >> 20
    )
}
