//! How a skill is named over MCP's Skills extension (SEP-2640,
//! `io.modelcontextprotocol/skills`): which `SKILL.md` can be served as a
//! skill, and the `skill://` URIs of its files. `search_skills` writes the URI
//! the host serves, so both build it here.

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// The scheme of a skill file's URI.
pub const SCHEME: &str = "skill://";
/// The longest name the Agent Skills specification allows.
const MAX_NAME: usize = 64;
/// Bytes kept as they are in a URI's names: RFC 3986's unreserved characters
/// and sub-delimiters, which a path segment and the authority (a `reg-name`)
/// both take as written.
const KEPT: &[u8] = b"-._~!$&'()*+,;=";

/// Why `name` is not an Agent Skills name, if it is not one: 1 to 64
/// lowercase ASCII letters, digits and hyphens, no hyphen at either end and
/// no two in a row. (The URI ends in the name as written, so it stays ASCII.)
pub fn name_problem(name: &str) -> Option<String> {
    let problem = if name.is_empty() {
        "it is empty"
    } else if name.len() > MAX_NAME {
        "it is longer than 64 characters"
    } else if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        "it holds a character other than a-z, 0-9 and -"
    } else if name.starts_with('-') || name.ends_with('-') {
        "it starts or ends with a hyphen"
    } else if name.contains("--") {
        "it has two hyphens in a row"
    } else {
        return None;
    };
    Some(format!("its name '{name}' is not an Agent Skills name ({problem})"))
}

/// The URI of the skill whose `SKILL.md` is at `path` (workspace-relative,
/// `/`-separated) and whose frontmatter calls it `name`, or why that
/// `SKILL.md` cannot be served as a skill: the extension wants its folder's
/// name to be the skill's name, an Agent Skills name.
pub fn skill_md_uri(path: &str, name: &str) -> Result<String, String> {
    let Some(folder) = path.strip_suffix(SKILL_FILE).and_then(|f| f.strip_suffix('/')).filter(|f| !f.is_empty()) else {
        return Err(format!(
            "{path} is not in a folder of its own: a skill is a folder holding a {SKILL_FILE}, named as the skill"
        ));
    };
    if let Some(problem) = name_problem(name) {
        return Err(problem);
    }
    let last = folder.rsplit('/').next().unwrap_or(folder);
    if last != name {
        return Err(format!(
            "its folder is called '{last}' but its name is '{name}': the Agent Skills specification wants them \
             equal, so rename one"
        ));
    }
    Ok(format!("{SCHEME}{}/{SKILL_FILE}", encode_path(folder)))
}

/// `rel` (`/`-separated names) with each name percent-encoded where a URI
/// needs it.
pub fn encode_path(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for b in rel.bytes() {
        if b == b'/' || b.is_ascii_alphanumeric() || KEPT.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The names a `skill://` URI walks, percent-decoded (a trailing `/` is
/// dropped), or why it names nothing a skill can hold: a query or fragment,
/// an empty name, `.` or `..`, a name holding `/`, NUL or bytes that are not
/// UTF-8.
pub fn decode(uri: &str) -> Result<Vec<String>, String> {
    let Some(rest) = uri.strip_prefix(SCHEME) else {
        return Err(format!("'{uri}' is not a {SCHEME} URI"));
    };
    if rest.contains(['?', '#']) {
        return Err(format!("'{uri}' has a query or a fragment: a skill's files have neither"));
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    rest.split('/').map(|raw| decode_name(raw).map_err(|why| format!("'{uri}': {why}"))).collect()
}

/// One percent-decoded name of a URI's path.
fn decode_name(raw: &str) -> Result<String, String> {
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b != b'%' {
            bytes.push(b);
            rest = tail;
            continue;
        }
        let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        let Some(byte) = hex else { return Err(format!("'{raw}' has a % not followed by two hex digits")) };
        bytes.push(byte);
        rest = &tail[2..];
    }
    let name = String::from_utf8(bytes).map_err(|_| format!("'{raw}' is not UTF-8 once decoded"))?;
    match name.as_str() {
        "" => Err("it has an empty name (//)".into()),
        "." | ".." => Err(format!("it has a '{name}' name: each name must be a file or folder")),
        _ if name.contains(['/', '\0']) => Err(format!("'{raw}' decodes to a name holding / or NUL")),
        _ => Ok(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for good in ["a", "pdf-processing", "1password", &"x".repeat(64)] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in ["", "PDF", "-pdf", "pdf-", "pdf--x", "pdf_x", "pdf x", "é", &"x".repeat(65)] {
            assert!(name_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn uris_end_in_the_folder_named_as_the_skill() {
        assert_eq!(skill_md_uri("skills/dask/SKILL.md", "dask"), Ok("skill://skills/dask/SKILL.md".into()));
        assert_eq!(skill_md_uri("dask/SKILL.md", "dask"), Ok("skill://dask/SKILL.md".into()));
        assert_eq!(
            skill_md_uri("a+b/.system/my skill/x/SKILL.md", "x"),
            Ok("skill://a+b/.system/my%20skill/x/SKILL.md".into())
        );
        assert!(skill_md_uri("SKILL.md", "x").unwrap_err().contains("folder of its own"));
        assert!(skill_md_uri("s/postgresql/SKILL.md", "postgresql-design").unwrap_err().contains("rename one"));
        assert!(skill_md_uri("s/Dask/SKILL.md", "Dask").unwrap_err().contains("not an Agent Skills name"));
    }

    #[test]
    fn uris_decode_to_plain_names_only() {
        let names = |uri: &str| decode(uri);
        assert_eq!(
            names("skill://a+b/my%20skill/SKILL.md"),
            Ok(vec!["a+b".into(), "my skill".into(), "SKILL.md".into()])
        );
        assert_eq!(names("skill://a%2Bb/x/"), Ok(vec!["a+b".into(), "x".into()]));
        assert_eq!(
            names(&format!("{SCHEME}{}", encode_path("ü/%/SKILL.md"))),
            Ok(vec!["ü".into(), "%".into(), "SKILL.md".into()])
        );
        for bad in [
            "file:///x",
            "skill://a/../b/SKILL.md",
            "skill://a/%2E%2E/SKILL.md",
            "skill://a/./SKILL.md",
            "skill://a//SKILL.md",
            "skill://a%2Fb/SKILL.md",
            "skill://a%00/SKILL.md",
            "skill://a%ff/SKILL.md",
            "skill://a%4/SKILL.md",
            "skill://a/SKILL.md?x=1",
            "skill://a/SKILL.md#top",
            "skill://",
        ] {
            assert!(names(bad).is_err(), "{bad}");
        }
    }
}
