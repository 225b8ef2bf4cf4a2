//! Where a Markdown file's YAML frontmatter is: the indexer reads its fields
//! and the host serves a skill's as JSON, so both find it the same way.

/// The YAML between a leading `---` line and the next `---` (or `...`) line,
/// and the byte offset just after the closing line.
pub fn split(text: &str) -> Option<(&str, usize)> {
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
