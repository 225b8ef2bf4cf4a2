//! Skills (`SKILL.md` with YAML frontmatter) are indexed parent-child, as the
//! Librarian skill's search backend does: the vector is made from the skill's
//! intent — name, description, and intent and tags when present — while the
//! stored text is the whole SKILL.md, so a search returns complete skills,
//! never a slice of one.

use crate::indexing::document::{frontmatter, parse_yaml};

pub use ragbox_protocol::skill::SKILL_FILE;

/// Metadata that marks a parent-child skill document in the index.
pub const MARKER: (&str, &str) = ("ragbox.index", "skill");
/// Other files of a skill folder listed in its metadata, at most.
const MAX_FILES: usize = 200;

/// A parsed skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Frontmatter `name`.
    pub name: String,
    /// Frontmatter `description`.
    pub description: String,
    /// Frontmatter `intent`, when present.
    pub intent: Option<String>,
    /// Frontmatter `tags`, when present.
    pub tags: Vec<String>,
    /// Frontmatter `risk_level`, else "unknown".
    pub risk_level: String,
}

/// True for a `SKILL.md` file.
pub fn is_skill(path: &str) -> bool {
    path.rsplit('/').next() == Some(SKILL_FILE)
}

/// Parses a SKILL.md; the error says why it is skipped.
pub fn parse(text: &str) -> Result<Skill, String> {
    let (yaml, _) =
        frontmatter(text).ok_or("skipped: SKILL.md has no YAML frontmatter (a --- block with name and description)")?;
    let fields = parse_yaml(yaml).map_err(|e| format!("skipped: {e}"))?;
    let get =
        |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.trim().to_string()).filter(|v| !v.is_empty());
    let name = get("name").ok_or("skipped: SKILL.md frontmatter has no name")?;
    Ok(Skill {
        description: get("description").unwrap_or_default(),
        intent: get("intent"),
        tags: get("tags")
            .map(|t| t.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default(),
        risk_level: get("risk_level").unwrap_or_else(|| "unknown".to_string()),
        name,
    })
}

impl Skill {
    /// The text whose vector finds the skill: what it is for, not how.
    pub fn intent_text(&self) -> String {
        let tags = self.tags.join(" ");
        [self.name.as_str(), self.description.as_str(), self.intent.as_deref().unwrap_or(""), tags.as_str()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// Metadata stored with the skill: name, tags, risk level and the folder's other files.
    pub fn metadata(&self, files: &[String]) -> Vec<(String, String)> {
        vec![
            (MARKER.0.to_string(), MARKER.1.to_string()),
            ("name".into(), self.name.clone()),
            ("tags".into(), self.tags.join(", ")),
            ("risk_level".into(), self.risk_level.clone()),
            ("files".into(), files.join(", ")),
        ]
    }
}

/// The other files of the skill folder holding `skill_path`, relative to that
/// folder, sorted (listed, not inlined).
pub fn sibling_files(skill_path: &str) -> Vec<String> {
    let dir = skill_path.rsplit_once('/').map_or(".", |(d, _)| d);
    let mut out = Vec::new();
    let mut stack = vec![(std::path::PathBuf::from(dir), String::new())];
    while let Some((path, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = format!("{prefix}{name}");
            match entry.file_type() {
                Ok(t) if t.is_dir() && !name.starts_with('.') => stack.push((entry.path(), format!("{rel}/"))),
                Ok(t) if t.is_file() && rel != SKILL_FILE => out.push(rel),
                _ => {}
            }
        }
        if out.len() >= MAX_FILES {
            break;
        }
    }
    out.sort();
    out.truncate(MAX_FILES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intent_from_name_description_intent_and_tags() {
        let s = parse("---\nname: restart-pods\ndescription: >-\n  Restart stuck pods safely.\ntags: [k8s, ops]\nintent: recover a deployment\nrisk_level: high\n---\n# Body\n").unwrap();
        assert_eq!(s.intent_text(), "restart-pods | Restart stuck pods safely. | recover a deployment | k8s ops");
        assert_eq!(s.risk_level, "high");
        let s = parse("---\nname: x\ndescription: Does x.\n---\n").unwrap();
        assert_eq!((s.intent_text().as_str(), s.risk_level.as_str()), ("x | Does x.", "unknown"));
        assert!(s.metadata(&[]).contains(&("risk_level".into(), "unknown".into())));
    }

    #[test]
    fn broken_skills_say_why() {
        assert!(parse("# No frontmatter\n").unwrap_err().contains("no YAML frontmatter"));
        assert!(parse("---\nname: [unclosed\n---\n").unwrap_err().starts_with("skipped: invalid YAML"));
        assert!(parse("---\ndescription: nameless\n---\n").unwrap_err().contains("no name"));
        assert!(is_skill("a/b/SKILL.md") && is_skill("SKILL.md") && !is_skill("a/skill.md"));
    }
}
