//! Cortext workspace conventions: conversations live at
//! `<type>/<date>/<NNN-name>/…` (or the older `conversations/<type>/<date>/<NNN-name>/…`),
//! where the date folder is `YYYY-MM-DD` or `YYYY-MM`.

/// A Cortext tool's error result: `{"success": false, "error": message}`.
pub fn error_body(message: &str) -> String {
    serde_json::json!({ "success": false, "error": message }).to_string()
}

/// Where a file sits in the Cortext layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationPath {
    /// Conversation type: the folder above the date (`brainstorm`, `debug`, …).
    pub kind: String,
    /// The date folder as written: `YYYY-MM-DD` or `YYYY-MM`.
    pub date: String,
    /// The conversation folder, e.g. `001-auth-patterns`.
    pub conversation: String,
}

impl ConversationPath {
    /// Parses a workspace-relative path (`/`-separated); `None` when the path is
    /// not inside a conversation folder.
    pub fn parse(rel_path: &str) -> Option<Self> {
        let parts: Vec<&str> = rel_path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
        let parts = match parts.first() {
            Some(&"conversations") if parts.len() >= 5 => &parts[1..],
            _ => &parts[..],
        };
        // type / date / conversation / at least one file below it
        if parts.len() < 4 {
            return None;
        }
        let (kind, date, conversation) = (parts[0], parts[1], parts[2]);
        if kind == "conversations" || !is_type_name(kind) || !is_date_folder(date) {
            return None;
        }
        Some(Self { kind: kind.to_string(), date: date.to_string(), conversation: conversation.to_string() })
    }
}

fn is_type_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('.') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
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
        let p = ConversationPath::parse("brainstorm/2025-11-17/001-new-idea/conversation.md").unwrap();
        assert_eq!(
            (p.kind.as_str(), p.date.as_str(), p.conversation.as_str()),
            ("brainstorm", "2025-11-17", "001-new-idea")
        );
        let p = ConversationPath::parse("conversations/debug/2025-10-02/004-leak/notes/a.md").unwrap();
        assert_eq!((p.kind.as_str(), p.date.as_str(), p.conversation.as_str()), ("debug", "2025-10-02", "004-leak"));
        let p = ConversationPath::parse("brainstorm/2025-11/001-auth-patterns/conversation.md").unwrap();
        assert_eq!(p.date, "2025-11");
    }

    #[test]
    fn rejects_non_conversation_paths() {
        for path in [
            "README.md",
            "docs/guide/intro/page.md",
            "brainstorm/2025-11-17/001-new-idea",
            "brainstorm/2025-13-01/001-x/a.md",
            ".hidden/2025-11-17/001-x/a.md",
            "conversations/2025-11-17/001-x/a.md",
        ] {
            assert_eq!(ConversationPath::parse(path), None, "{path}");
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
