//! Which documents a search may return: Cortext type and date, path prefix,
//! file extensions and metadata key=value pairs. All given conditions must hold.

use crate::records::DocumentRecord;

/// A document filter; the default lets everything through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Cortext conversation type (case-insensitive).
    pub conversation_type: Option<String>,
    /// `YYYY-MM` or `YYYY-MM-DD`: conversations dated within it.
    pub date_range: Option<String>,
    /// Workspace-relative folder or path prefix, `/`-separated.
    pub path_prefix: Option<String>,
    /// File extensions without the dot (case-insensitive); any of them.
    pub extensions: Vec<String>,
    /// Metadata that must be present with exactly these values.
    pub metadata: Vec<(String, String)>,
}

impl Filter {
    /// True when `doc` passes every condition.
    pub fn matches(&self, doc: &DocumentRecord) -> bool {
        let type_ok = self
            .conversation_type
            .as_ref()
            .is_none_or(|want| doc.conversation_type.as_ref().is_some_and(|t| t.eq_ignore_ascii_case(want)));
        let date_ok =
            self.date_range.as_ref().is_none_or(|range| doc.date.as_deref().is_some_and(|d| in_range(d, range)));
        let path_ok = self.path_prefix.as_ref().is_none_or(|p| under(&doc.path, p));
        let ext_ok = self.extensions.is_empty() || {
            let ext = doc.path.rsplit_once('.').map(|(_, e)| e).filter(|e| !e.contains('/')).unwrap_or("");
            self.extensions.iter().any(|want| want.trim_start_matches('.').eq_ignore_ascii_case(ext))
        };
        let meta_ok = self.metadata.iter().all(|(k, v)| doc.metadata.get(k).is_some_and(|have| have == v.as_str()));
        type_ok && date_ok && path_ok && ext_ok && meta_ok
    }
}

/// A conversation date folder (`2025-11-17` or `2025-11`) within a range
/// (`2025-11` or `2025-11-17`); a month folder is not within a single day.
fn in_range(date: &str, range: &str) -> bool {
    date.starts_with(range) && (date.len() == range.len() || date.as_bytes().get(range.len()) == Some(&b'-'))
}

/// `path` is `prefix` or lies under it (`notes` matches `notes/a.md`, not `notesy.md`),
/// or starts with it when the prefix ends in `/` or names a partial file name.
fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_start_matches("./");
    if prefix.is_empty() {
        return true;
    }
    if prefix.ends_with('/') {
        return path.starts_with(prefix);
    }
    path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str, kind: Option<&str>, date: Option<&str>) -> DocumentRecord {
        DocumentRecord {
            path: path.into(),
            conversation_type: kind.map(Into::into),
            date: date.map(Into::into),
            metadata: [("author", "ana")].into_iter().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn each_condition() {
        let d = doc("brainstorm/2025-11-17/001-x/conversation.md", Some("brainstorm"), Some("2025-11-17"));
        assert!(Filter::default().matches(&d));
        let f = |f: Filter| f.matches(&d);
        assert!(f(Filter { conversation_type: Some("Brainstorm".into()), ..Default::default() }));
        assert!(!f(Filter { conversation_type: Some("debug".into()), ..Default::default() }));
        assert!(f(Filter { date_range: Some("2025-11".into()), ..Default::default() }));
        assert!(f(Filter { date_range: Some("2025-11-17".into()), ..Default::default() }));
        assert!(!f(Filter { date_range: Some("2025-11-1".into()), ..Default::default() }));
        assert!(!f(Filter { date_range: Some("2025-10".into()), ..Default::default() }));
        assert!(f(Filter { path_prefix: Some("brainstorm".into()), ..Default::default() }));
        assert!(f(Filter { path_prefix: Some("./brainstorm/".into()), ..Default::default() }));
        assert!(!f(Filter { path_prefix: Some("brain".into()), ..Default::default() }));
        assert!(f(Filter { extensions: vec!["MD".into(), "txt".into()], ..Default::default() }));
        assert!(f(Filter { extensions: vec![".md".into()], ..Default::default() }));
        assert!(!f(Filter { extensions: vec!["rs".into()], ..Default::default() }));
        assert!(f(Filter { metadata: vec![("author".into(), "ana".into())], ..Default::default() }));
        assert!(!f(Filter { metadata: vec![("author".into(), "bo".into())], ..Default::default() }));
        assert!(!f(Filter { metadata: vec![("tag".into(), "x".into())], ..Default::default() }));
    }

    #[test]
    fn documents_outside_cortext_fail_type_and_date_filters() {
        let d = doc("notes/a.md", None, None);
        assert!(!Filter { conversation_type: Some("plan".into()), ..Default::default() }.matches(&d));
        assert!(!Filter { date_range: Some("2025".into()), ..Default::default() }.matches(&d));
        let no_ext = doc("Makefile", None, None);
        assert!(!Filter { extensions: vec!["md".into()], ..Default::default() }.matches(&no_ext));
        let dotted_dir = doc("v1.2/readme", None, None);
        assert!(!Filter { extensions: vec!["2/readme".into()], ..Default::default() }.matches(&dotted_dir));
    }
}
