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
    /// The text to chunk when it is not the file's own text from `body_start`:
    /// HTML's visible text. Chunk byte ranges then refer to this text.
    pub extracted: Option<String>,
}

/// Binary document formats that are recognised but not indexed, with what to do.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("pdf", "PDF"),
    ("docx", "Word"),
    ("doc", "Word"),
    ("odt", "OpenDocument text"),
    ("rtf", "RTF"),
    ("epub", "EPUB"),
    ("pptx", "PowerPoint"),
    ("xlsx", "Excel"),
];

/// Why a binary file at `path` is not indexed, when it is a document format
/// someone would expect to be (PDF, Word, …); `None` for other binary files.
pub fn unsupported(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    let (_, format) = UNSUPPORTED.iter().find(|(e, _)| *e == ext)?;
    Some(format!(
        "unsupported file type: {format} ({ext}); ragbox indexes text, Markdown, JSON, CSV, HTML and code. \
         Save it as text or Markdown to index it"
    ))
}

/// The visible text of an HTML page: tags, scripts and styles dropped, headings
/// kept as `#` lines, entities decoded. `None` when it cannot be parsed.
pub fn html_text(html: &str) -> Option<String> {
    let text = html2text::config::plain().string_from_read(html.as_bytes(), 200).ok()?;
    (!text.trim().is_empty()).then_some(text)
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
    // `ragbox.*` keys are the indexer's own bookkeeping (a skill's marker, a
    // code file's cut): a file's frontmatter does not get to set them.
    metadata.retain(|(key, _)| !key.starts_with("ragbox."));
    let extracted = if kind == "html" { html_text(text) } else { None };
    let mut title = metadata.iter().find(|(k, _)| k == "title").map(|(_, v)| v.clone());
    if title.is_none() && kind == "html" {
        title = html_title(text).or_else(|| extracted.as_deref().and_then(first_heading));
    }
    if title.is_none() && kind == "markdown" {
        title = first_heading(&text[body_start..]);
    }
    if let Some(c) = &conversation {
        metadata.push(("conversation".into(), c.conversation.clone()));
    }
    Prepared { kind, title, metadata, conversation, body_start, frontmatter_error, extracted }
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

/// The `<title>` of an HTML page, entities left as written.
fn html_title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let end = open_end + lower[open_end..].find("</title")?;
    let title = html[open_end..end].split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
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
        let forged = prepare("notes/deploy.md", "---\nname: deploy\nragbox.index: skill\n---\n# Deploy\n");
        assert!(!forged.metadata.iter().any(|(k, _)| k.starts_with("ragbox.")), "{:?}", forged.metadata);
        assert_eq!(p.conversation.unwrap().kind, "brainstorm");
    }

    #[test]
    fn html_is_read_for_its_visible_text() {
        let html = "<html><head><title>Deploy guide</title><style>p{color:red}</style>\
            <script>var x = 'hidden';</script></head><body><h1>Deploying</h1>\
            <p>Run <code>make release</code> &amp; copy the binary.</p></body></html>";
        let p = prepare("docs/deploy.html", html);
        assert_eq!(p.title.as_deref(), Some("Deploy guide"));
        let text = p.extracted.unwrap();
        assert!(text.contains("Deploying") && text.contains("`make release` & copy the binary"), "{text}");
        assert!(!text.contains("hidden") && !text.contains("color:red") && !text.contains("<p>"), "{text}");
        assert_eq!(prepare("a.md", "# x").extracted, None);
    }

    #[test]
    fn document_formats_that_are_not_indexed_say_so() {
        assert!(unsupported("papers/study.PDF").unwrap().starts_with("unsupported file type: PDF (pdf)"));
        assert!(unsupported("a/b.docx").is_some());
        assert_eq!(unsupported("image.png"), None);
        assert_eq!(unsupported("noext"), None);
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
