//! What a workspace file is, as the index records it: its kind, title and
//! frontmatter metadata, and where Cortext places it.

use crate::cortext::{ConversationPath, Layout};
use yaml_rust2::{Yaml, YamlLoader};

/// The metadata and text of one file, ready to chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// `markdown`, `text`, `code`, `json`, `csv`, `html`, `config`, …
    pub kind: &'static str,
    /// Frontmatter `title`, else the first Markdown heading.
    pub title: Option<String>,
    /// Frontmatter fields (lists joined with ", "), plus `conversation` for Cortext files.
    pub metadata: Vec<(String, String)>,
    /// Cortext conversation type and date, from the path.
    pub conversation: Option<ConversationPath>,
    /// Byte offset where the text worth embedding starts (after frontmatter).
    pub body_start: usize,
    /// Why frontmatter was ignored, when it could not be read.
    pub frontmatter_error: Option<String>,
}

/// The kind of file at `path`, from its extension.
pub fn kind_of(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" | "mdx" => "markdown",
        "txt" | "text" | "rst" | "org" | "adoc" | "log" | "" => "text",
        "json" | "jsonl" | "ndjson" => "json",
        "csv" | "tsv" => "csv",
        "html" | "htm" | "xhtml" => "html",
        "toml" | "yaml" | "yml" | "ini" | "cfg" | "conf" | "xml" => "config",
        "rs" | "py" | "js" | "mjs" | "ts" | "tsx" | "jsx" | "go" | "java" | "kt" | "c" | "h" | "cc" | "cpp" | "hpp"
        | "cs" | "rb" | "php" | "swift" | "scala" | "sh" | "bash" | "zsh" | "fish" | "lua" | "sql" | "r" | "jl"
        | "ex" | "exs" | "hs" | "ml" | "zig" | "dart" | "vue" | "svelte" | "css" | "scss" | "proto" => "code",
        _ => "text",
    }
}

/// Reads what the index keeps about the file at `path` with content `text`.
pub fn prepare(path: &str, text: &str) -> Prepared {
    let kind = kind_of(path);
    let conversation = Layout::current().parse(path);
    let front = if matches!(kind, "markdown" | "text") { frontmatter(text) } else { None };
    let (mut metadata, body_start, frontmatter_error) = match front {
        Some((yaml, body_start)) => match parse_yaml(yaml) {
            Ok(fields) => (fields, body_start, None),
            Err(e) => (Vec::new(), body_start, Some(e)),
        },
        None => (Vec::new(), 0, None),
    };
    let mut title = metadata.iter().find(|(k, _)| k == "title").map(|(_, v)| v.clone());
    if title.is_none() && kind == "markdown" {
        title = first_heading(&text[body_start..]);
    }
    if let Some(c) = &conversation {
        metadata.push(("conversation".into(), c.conversation.clone()));
    }
    Prepared { kind, title, metadata, conversation, body_start, frontmatter_error }
}

/// The YAML between a leading `---` line and the next `---` line, and the
/// byte offset just after the closing line.
pub fn frontmatter(text: &str) -> Option<(&str, usize)> {
    let text_start = text.strip_prefix('\u{feff}').map_or(0, |_| 3);
    let rest = &text[text_start..];
    let first = rest.split_inclusive('\n').next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let yaml_start = text_start + first.len();
    let mut offset = yaml_start;
    for line in text[yaml_start..].split_inclusive('\n') {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            return Some((&text[yaml_start..offset], offset + line.len()));
        }
        offset += line.len();
    }
    None
}

/// Top-level YAML mapping fields as strings; nested mappings are skipped.
pub fn parse_yaml(yaml: &str) -> Result<Vec<(String, String)>, String> {
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| format!("invalid YAML frontmatter: {e}"))?;
    let Some(doc) = docs.into_iter().next() else { return Ok(Vec::new()) };
    let Yaml::Hash(map) = doc else {
        return Err("frontmatter is not a YAML mapping of fields".into());
    };
    let mut fields = Vec::new();
    for (key, value) in map {
        let Some(key) = scalar(&key) else { continue };
        let value = match &value {
            Yaml::Array(items) => Some(items.iter().filter_map(scalar).collect::<Vec<_>>().join(", ")),
            other => scalar(other),
        };
        if let Some(value) = value {
            fields.push((key, value));
        }
    }
    Ok(fields)
}

fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn first_heading(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with("# "))
        .map(|l| l[2..].trim().to_string())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_extension() {
        assert_eq!(kind_of("notes/a.MD"), "markdown");
        assert_eq!(kind_of("src/main.rs"), "code");
        assert_eq!(kind_of("data/x.csv"), "csv");
        assert_eq!(kind_of("Makefile"), "text");
        assert_eq!(kind_of("v1.2/readme"), "text");
    }

    #[test]
    fn frontmatter_title_and_cortext_path() {
        let text =
            "---\ntitle: Auth patterns\ntags: [jwt, oauth]\nstatus: draft\nnested: {a: 1}\n---\n# Heading\nBody\n";
        let p = prepare("brainstorm/2025-11-17/001-auth/conversation.md", text);
        assert_eq!(p.title.as_deref(), Some("Auth patterns"));
        assert_eq!(&text[p.body_start..], "# Heading\nBody\n");
        assert!(p.metadata.contains(&("tags".into(), "jwt, oauth".into())));
        assert!(p.metadata.contains(&("status".into(), "draft".into())));
        assert!(p.metadata.contains(&("conversation".into(), "001-auth".into())));
        assert!(!p.metadata.iter().any(|(k, _)| k == "nested"));
        assert_eq!(p.conversation.unwrap().kind, "brainstorm");
    }

    #[test]
    fn broken_or_missing_frontmatter() {
        let p = prepare("a.md", "---\ntitle: [unclosed\n---\n# Real title\n");
        assert!(p.frontmatter_error.is_some());
        assert_eq!(p.title.as_deref(), Some("Real title"));
        let p = prepare("a.md", "---\nno closing line\n");
        assert_eq!((p.body_start, p.frontmatter_error), (0, None));
        let p = prepare("a.md", "plain\n---\n");
        assert_eq!(p.body_start, 0);
    }
}
