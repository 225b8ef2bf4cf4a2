//! What a workspace file is, as the index records it: its kind, title and
//! frontmatter metadata, and where Cortext places it.

use crate::indexing::layout::{ConversationPath, Layout};
/// Where a file's YAML frontmatter is (shared with the host, which serves a skill's).
pub use ragbox_protocol::frontmatter::split as frontmatter;
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

/// Document formats someone would expect to be searchable, by name: what an
/// error says when no extractor reads one (old binary Office files, or a
/// format whose extractor the user disabled).
const DOCUMENT_FORMATS: &[(&str, &str)] = &[
    ("pdf", "PDF"),
    ("docx", "Word"),
    ("doc", "Word 97-2003"),
    ("odt", "OpenDocument text"),
    ("ods", "OpenDocument spreadsheet"),
    ("odp", "OpenDocument presentation"),
    ("rtf", "RTF"),
    ("epub", "EPUB"),
    ("pptx", "PowerPoint"),
    ("ppt", "PowerPoint 97-2003"),
    ("xlsx", "Excel"),
    ("xls", "Excel 97-2003"),
];

/// Why a binary file at `path` is not indexed, when it is a document format
/// someone would expect to be (PDF, Word, …) that no extractor reads;
/// `None` for other binary files. `readable` lists the formats extractors read.
pub fn unsupported(path: &str, readable: &[String]) -> Option<String> {
    let ext = extension(path);
    let (_, format) = DOCUMENT_FORMATS.iter().find(|(e, _)| *e == ext)?;
    let alternatives = match readable.iter().map(|f| format!(".{f}")).collect::<Vec<_>>() {
        r if r.is_empty() => {
            "no document formats are read (is the extract-documents extractor disabled in your config?)".to_string()
        }
        r => format!("documents are read as {}", r.join(", ")),
    };
    Some(format!(
        "unsupported file type: {format} (.{ext}); ragbox indexes text, Markdown, JSON, CSV, HTML and code, and \
         {alternatives}. Save it in one of those formats to index it"
    ))
}

/// The lowercase extension of the file at `path` ("" when none; `.bashrc` has none).
pub fn extension(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.')
        .map(|(stem, e)| if stem.is_empty() { String::new() } else { e.to_ascii_lowercase() })
        .unwrap_or_default()
}

/// The metadata key under which a document read by an extractor keeps where
/// each of its labelled parts (pages, slides, sheets) starts in its text: one
/// line `offset<TAB>label` each. Present, maybe empty, on every such document.
pub const PARTS: &str = "ragbox.parts";

/// Whether `doc`'s text came from an extractor (its chunks' ranges are then
/// in that text, not in the file's bytes).
pub fn is_extracted(metadata: &[(String, String)]) -> bool {
    metadata.iter().any(|(k, _)| k == PARTS)
}

/// A document's text as an extractor gave it: its parts joined by blank
/// lines, and where each labelled part starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    /// The text to chunk.
    pub text: String,
    /// Byte offset in `text` and label of each labelled part, in order.
    pub parts: Vec<(usize, String)>,
}

/// Joins `parts` (label, text) into one text, keeping where each labelled one starts.
pub fn assemble<'a>(parts: impl IntoIterator<Item = (Option<&'a str>, &'a str)>) -> Assembled {
    let mut text = String::new();
    let mut labels = Vec::new();
    for (label, part) in parts {
        let part = part.trim_matches(['\n', '\r']);
        if part.trim().is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        if let Some(label) = label {
            labels.push((text.len(), label.to_string()));
        }
        text.push_str(part);
    }
    // Every hit carries its document's part list: a document of more parts than a reader
    // could be pointed through (200,000 sheets, say) is pointed into by none.
    if labels.len() > MAX_LABELLED_PARTS {
        labels.clear();
    }
    Assembled { text, parts: labels }
}

/// The most labelled parts a document keeps (a 10,000-page PDF keeps its pages).
pub const MAX_LABELLED_PARTS: usize = 10_000;

/// The [`PARTS`] value for `parts`.
pub fn encode_parts(parts: &[(usize, String)]) -> String {
    parts.iter().map(|(at, label)| format!("{at}\t{}", label.replace(['\t', '\n'], " "))).collect::<Vec<_>>().join("\n")
}

/// The parts a [`PARTS`] value lists (lines that do not parse are skipped).
pub fn decode_parts(value: &str) -> Vec<(usize, String)> {
    value
        .lines()
        .filter_map(|line| {
            let (at, label) = line.split_once('\t')?;
            Some((at.parse().ok()?, label.to_string()))
        })
        .collect()
}

/// What a reader calls the place of bytes `start..end` of a document with
/// `parts`: `p. 3`, or `p. 3–4` across two parts of one kind, `sheet A – sheet
/// B` across others; `None` when no labelled part holds it.
pub fn part_span(parts: &[(usize, String)], start: usize, end: usize) -> Option<String> {
    let at = |offset: usize| parts.partition_point(|(s, _)| *s <= offset).checked_sub(1);
    let first = at(start)?;
    let last = at(end.saturating_sub(1).max(start)).unwrap_or(first);
    let (a, b) = (&parts[first].1, &parts[last].1);
    if first == last || a == b {
        return Some(a.clone());
    }
    // "p. 3" and "p. 4" share their kind: "p. 3–4".
    match (a.rsplit_once(' '), b.rsplit_once(' ')) {
        (Some((kind_a, n)), Some((kind_b, m)))
            if kind_a == kind_b && n.parse::<u64>().is_ok() && m.parse::<u64>().is_ok() =>
        {
            Some(format!("{kind_a} {n}\u{2013}{m}"))
        }
        _ => Some(format!("{a} \u{2013} {b}")),
    }
}

/// The kind a document read by an extractor is recorded as: its format.
fn document_kind(path: &str) -> &'static str {
    match extension(path).as_str() {
        "pdf" => "pdf",
        "docx" => "docx",
        "pptx" => "pptx",
        "xlsx" => "xlsx",
        "odt" => "odt",
        "ods" => "ods",
        "odp" => "odp",
        "epub" => "epub",
        "rtf" => "rtf",
        "ipynb" => "notebook",
        _ => "document",
    }
}

/// What the index keeps about a document at `path` that an extractor read:
/// its title and metadata as the extractor gave them, and its assembled text to chunk.
pub fn prepare_extracted(
    path: &str,
    title: Option<String>,
    mut metadata: Vec<(String, String)>,
    assembled: Assembled,
) -> Prepared {
    let conversation = Layout::current().parse(path);
    metadata.retain(|(key, _)| !key.starts_with("ragbox."));
    metadata.push((PARTS.to_string(), encode_parts(&assembled.parts)));
    if let Some(c) = &conversation {
        metadata.push(("conversation".into(), c.conversation.clone()));
    }
    let title = title.or_else(|| first_heading(&assembled.text));
    Prepared {
        kind: document_kind(path),
        title,
        metadata,
        conversation,
        body_start: 0,
        frontmatter_error: None,
        extracted: Some(assembled.text),
    }
}

/// The visible text of an HTML page: tags, scripts and styles dropped, headings
/// kept as `#` lines, entities decoded. `None` when it cannot be parsed.
pub fn html_text(html: &str) -> Option<String> {
    let text = html2text::config::plain().string_from_read(html.as_bytes(), 200).ok()?;
    (!text.trim().is_empty()).then_some(text)
}

/// The kind of file at `path`, from its extension.
pub fn kind_of(path: &str) -> &'static str {
    match extension(path).as_str() {
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
    fn document_formats_no_extractor_reads_say_so() {
        let readable = vec!["pdf".to_string(), "docx".to_string()];
        let old_word = unsupported("a/b.DOC", &readable).unwrap();
        assert!(old_word.starts_with("unsupported file type: Word 97-2003 (.doc)"), "{old_word}");
        assert!(old_word.contains("read as .pdf, .docx"), "{old_word}");
        assert!(unsupported("papers/study.pdf", &[]).unwrap().contains("disabled"));
        assert_eq!(unsupported("image.png", &readable), None);
        assert_eq!(unsupported("noext", &readable), None);
    }

    #[test]
    fn an_extracted_document_keeps_where_each_part_starts() {
        let doc =
            assemble([(Some("p. 1"), "One.\n"), (Some("p. 2"), "  \n"), (Some("p. 3"), "Three."), (None, "Tail.")]);
        assert_eq!(doc.text, "One.\n\nThree.\n\nTail.");
        assert_eq!(doc.parts, vec![(0, "p. 1".to_string()), (6, "p. 3".to_string())]);
        assert_eq!(decode_parts(&encode_parts(&doc.parts)), doc.parts);
        assert_eq!(decode_parts("x\tbad\n12"), vec![]);
        assert_eq!(part_span(&doc.parts, 0, 4).as_deref(), Some("p. 1"));
        assert_eq!(part_span(&doc.parts, 2, 10).as_deref(), Some("p. 1\u{2013}3"));
        assert_eq!(part_span(&doc.parts, 6, 6).as_deref(), Some("p. 3"));
        let sheets = vec![(0, "sheet Q1".to_string()), (10, "sheet Costs".to_string())];
        assert_eq!(part_span(&sheets, 5, 15).as_deref(), Some("sheet Q1 \u{2013} sheet Costs"));
        assert_eq!(part_span(&[(5, "p. 2".to_string())], 0, 3), None);
        let many: Vec<String> = (0..=MAX_LABELLED_PARTS).map(|i| format!("sheet {i}")).collect();
        assert!(assemble(many.iter().map(|l| (Some(l.as_str()), "x"))).parts.is_empty());
        let p = prepare_extracted("papers/a.pdf", None, vec![("ragbox.index".into(), "skill".into())], doc);
        assert_eq!((p.kind, p.title.as_deref()), ("pdf", None));
        assert!(is_extracted(&p.metadata) && !p.metadata.iter().any(|(k, _)| k == "ragbox.index"));
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
