//! The Cortext workspace layout: conversations live at
//! `<type folder>/<date>/<NNN-name>/…` (or the older
//! `conversations/<type>/<date>/<NNN-name>/…`), where the date folder is
//! `YYYY-MM-DD` or `YYYY-MM` and the types come from `.workspace/registry.json`.
//! The indexer records each file's type and date from it; searches filter by them.

/// The conversation types Cortext uses when a workspace has no registry.
pub const DEFAULT_TYPES: [&str; 6] = ["brainstorm", "debug", "learn", "meeting", "plan", "review"];

/// Where the registry of conversation types lives, workspace-relative.
pub const REGISTRY_PATH: &str = ".workspace/registry.json";

/// Where a file sits in the Cortext layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationPath {
    /// Conversation type (`brainstorm`, `debug`, … or a registry type).
    pub kind: String,
    /// The date folder as written: `YYYY-MM-DD` or `YYYY-MM`.
    pub date: String,
    /// The conversation folder, e.g. `001-auth-patterns`.
    pub conversation: String,
    /// The conversation folder's workspace-relative path.
    pub folder: String,
}

/// A workspace's conversation types and the folders that hold them: from
/// `.workspace/registry.json` (`conversation_types.<id>.folder`) when present,
/// else [`DEFAULT_TYPES`], each in a folder of its own name. The older layout
/// `conversations/<type>/…` is understood for every type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// (type, folder prefix ending in `/`), longest prefix first.
    prefixes: Vec<(String, String)>,
    types: Vec<String>,
}

impl Layout {
    /// The default types, without a registry.
    pub fn defaults() -> Self {
        Self::new(DEFAULT_TYPES.iter().map(|t| (t.to_string(), t.to_string())).collect())
    }

    /// The layout a registry file describes. Folders must be workspace-relative
    /// with no `..`; a type without one uses its own name, as Cortext does.
    pub fn from_registry(json: &str) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("{REGISTRY_PATH}: {e}"))?;
        let types = value
            .get("conversation_types")
            .and_then(|t| t.as_object())
            .ok_or_else(|| format!("{REGISTRY_PATH}: no \"conversation_types\" object"))?;
        let mut out = Vec::new();
        for (id, config) in types {
            let folder = config.get("folder").and_then(|f| f.as_str()).unwrap_or(id);
            let folder = folder.trim_start_matches("./").trim_end_matches('/');
            if folder.is_empty() || folder.starts_with('/') || folder.split('/').any(|p| p == "..") {
                return Err(format!(
                    "{REGISTRY_PATH}: type {id:?} has folder {folder:?}: it must be inside the workspace"
                ));
            }
            out.push((id.clone(), folder.to_string()));
        }
        Ok(Self::new(out))
    }

    /// The layout of the workspace the guest sees (its current directory). A
    /// registry that cannot be read is logged and the defaults are used.
    pub fn load() -> Self {
        match std::fs::read_to_string(REGISTRY_PATH) {
            Ok(json) => Self::from_registry(&json).unwrap_or_else(|e| {
                crate::tool::log::warn(&format!("{e}; using the default conversation types"));
                Self::defaults()
            }),
            Err(_) => Self::defaults(),
        }
    }

    /// [`Self::load`], once per call.
    pub fn current() -> &'static Self {
        static LAYOUT: std::sync::OnceLock<Layout> = std::sync::OnceLock::new();
        LAYOUT.get_or_init(Self::load)
    }

    fn new(types: Vec<(String, String)>) -> Self {
        let mut prefixes = Vec::new();
        for (id, folder) in &types {
            for prefix in [format!("{folder}/"), format!("{id}/"), format!("conversations/{id}/")] {
                if !prefixes.iter().any(|(_, p)| *p == prefix) {
                    prefixes.push((id.clone(), prefix));
                }
            }
        }
        prefixes.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.1.cmp(&b.1)));
        Self { prefixes, types: types.into_iter().map(|(id, _)| id).collect() }
    }

    /// The type names, as the registry (or the defaults) give them.
    pub fn types(&self) -> &[String] {
        &self.types
    }

    /// The type named `name` (case-insensitive), as the layout spells it.
    pub fn find_type(&self, name: &str) -> Option<&str> {
        self.types.iter().find(|t| t.eq_ignore_ascii_case(name)).map(String::as_str)
    }

    /// Where a workspace-relative path (`/`-separated) sits: `None` unless it is
    /// a file inside `<type folder>/<date>/<conversation>/`.
    pub fn parse(&self, rel_path: &str) -> Option<ConversationPath> {
        let path = rel_path.trim_start_matches("./");
        for (kind, prefix) in &self.prefixes {
            let Some(rest) = path.strip_prefix(prefix.as_str()) else { continue };
            let parts: Vec<&str> = rest.split('/').collect();
            // date / conversation / at least one file below it
            if parts.len() < 3 || parts.iter().any(|p| p.is_empty()) || !is_date_folder(parts[0]) {
                continue;
            }
            return Some(ConversationPath {
                kind: kind.clone(),
                date: parts[0].to_string(),
                conversation: parts[1].to_string(),
                folder: format!("{prefix}{}/{}", parts[0], parts[1]),
            });
        }
        None
    }
}

fn is_date_folder(s: &str) -> bool {
    DateRange::parse(s).is_ok()
}

/// A `date_range` argument: a month (`YYYY-MM`) or a day (`YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateRange(String);

impl DateRange {
    /// Parses and validates `YYYY-MM` or `YYYY-MM-DD` (month 01–12, day 01–31).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid date_range {s:?}: expected YYYY-MM or YYYY-MM-DD, e.g. 2025-11 or 2025-11-17");
        let b = s.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
        match b.len() {
            7 if digits(0..4) && b[4] == b'-' && digits(5..7) => {
                if !(1..=12).contains(&num(5..7)) {
                    return Err(bad());
                }
            }
            10 if digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10) => {
                if !(1..=12).contains(&num(5..7)) || !(1..=31).contains(&num(8..10)) {
                    return Err(bad());
                }
            }
            _ => return Err(bad()),
        }
        Ok(Self(s.to_string()))
    }

    /// True when a conversation dated `date` (a date folder) falls in the range.
    /// A month-only folder matches a month range but not a single day.
    pub fn contains(&self, date: &str) -> bool {
        date.starts_with(&self.0) && (date.len() == self.0.len() || date.as_bytes().get(self.0.len()) == Some(&b'-'))
    }

    /// The range as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_current_and_legacy_layouts() {
        let l = Layout::defaults();
        let p = l.parse("brainstorm/2025-11-17/001-new-idea/conversation.md").unwrap();
        assert_eq!(
            (p.kind.as_str(), p.date.as_str(), p.conversation.as_str(), p.folder.as_str()),
            ("brainstorm", "2025-11-17", "001-new-idea", "brainstorm/2025-11-17/001-new-idea")
        );
        let p = l.parse("conversations/debug/2025-10-02/004-leak/notes/a.md").unwrap();
        assert_eq!((p.kind.as_str(), p.date.as_str(), p.conversation.as_str()), ("debug", "2025-10-02", "004-leak"));
        let p = l.parse("brainstorm/2025-11/001-auth-patterns/conversation.md").unwrap();
        assert_eq!(p.date, "2025-11");
    }

    #[test]
    fn rejects_non_conversation_paths() {
        let l = Layout::defaults();
        for path in [
            "README.md",
            "docs/guide/intro/page.md",
            "brainstorm/2025-11-17/001-new-idea",
            "brainstorm/2025-13-01/001-x/a.md",
            ".hidden/2025-11-17/001-x/a.md",
            "conversations/2025-11-17/001-x/a.md",
            "notes/2025-11-17/001-x/a.md",
            "brainstorm//001-x/a.md",
        ] {
            assert_eq!(l.parse(path), None, "{path}");
        }
    }

    #[test]
    fn registry_types_and_folders() {
        let l = Layout::from_registry(
            r#"{"version":"1.0","conversation_types":{
                "brainstorm":{"name":"Brainstorm","folder":"conversations/brainstorm"},
                "book-notes":{"folder":"reading/books/"},
                "standup":{}}}"#,
        )
        .unwrap();
        assert_eq!(l.types().len(), 3);
        assert_eq!(l.find_type("BOOK-NOTES"), Some("book-notes"));
        assert_eq!(l.find_type("debug"), None, "only the registry's types");
        let p = l.parse("reading/books/2025-11-02/001-dune/notes.md").unwrap();
        assert_eq!((p.kind.as_str(), p.conversation.as_str()), ("book-notes", "001-dune"));
        assert_eq!(l.parse("standup/2025-11-03/007-mon/c.md").unwrap().kind, "standup");
        assert_eq!(l.parse("conversations/brainstorm/2025-11-03/001-x/c.md").unwrap().kind, "brainstorm");
        assert_eq!(l.parse("debug/2025-11-03/001-x/c.md"), None);
        for bad in [
            r#"{"conversation_types":{"x":{"folder":"../up"}}}"#,
            r#"{"conversation_types":{"x":{"folder":"/abs"}}}"#,
            r#"{"types":{}}"#,
            "not json",
        ] {
            assert!(Layout::from_registry(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn date_ranges_validate_and_match() {
        let month = DateRange::parse("2025-11").unwrap();
        assert!(month.contains("2025-11-17"));
        assert!(month.contains("2025-11"));
        assert!(!month.contains("2025-12-01"));
        assert!(!month.contains("2025-1"));
        let day = DateRange::parse("2025-11-17").unwrap();
        assert!(day.contains("2025-11-17"));
        assert!(!day.contains("2025-11-18"));
        assert!(!day.contains("2025-11"));
        for bad in ["2025", "2025-1", "2025-00", "2025-11-32", "25-11-01", "2025/11", "2025-11-1x", "é025-11"] {
            assert!(DateRange::parse(bad).is_err(), "{bad}");
        }
    }
}
