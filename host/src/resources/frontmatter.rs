//! A skill's `SKILL.md` frontmatter as the JSON object MCP's Skills extension
//! serves: every field the author wrote, as YAML reads it (a client compares
//! it field by field with its own reading of the file).

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// Deepest nesting served: a client's JSON reader stops near 128 levels, and
/// no skill's fields nest like that.
const MAX_DEPTH: usize = 32;

/// The frontmatter of `text` (a `SKILL.md`), or why it has none to serve.
pub fn parse(text: &str) -> Result<Map<String, Value>, String> {
    let (yaml, _) = ragbox_protocol::frontmatter::split(text)
        .ok_or("its SKILL.md has no YAML frontmatter (a --- block with name and description)")?;
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| format!("its frontmatter is not valid YAML: {e}"))?;
    match docs.first() {
        Some(map @ Yaml::Hash(_)) => match json(map, 0)? {
            Value::Object(fields) => Ok(fields),
            _ => Err("its frontmatter is not a mapping of fields".into()),
        },
        _ => Err("its frontmatter is not a mapping of fields".into()),
    }
}

/// The JSON value of a YAML node: scalars as YAML typed them, a key written
/// as a number or a boolean as its text.
fn json(yaml: &Yaml, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("its frontmatter nests deeper than {MAX_DEPTH} levels"));
    }
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        // `.inf` and `.nan` have no JSON number: kept as written.
        Yaml::Real(text) => match yaml.as_f64().and_then(Number::from_f64) {
            Some(n) => Value::Number(n),
            None => Value::String(text.clone()),
        },
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(items.iter().map(|i| json(i, depth + 1)).collect::<Result<_, _>>()?),
        Yaml::Hash(map) => {
            let mut fields = Map::with_capacity(map.len());
            for (key, value) in map {
                let key = match key {
                    Yaml::String(s) | Yaml::Real(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Null => "null".to_string(),
                    _ => return Err("its frontmatter has a key that is not a plain value".into()),
                };
                fields.insert(key, json(value, depth + 1)?);
            }
            Value::Object(fields)
        }
        Yaml::Alias(_) | Yaml::BadValue => return Err("its frontmatter uses an alias it does not define".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_field_as_yaml_types_it() {
        let text = "---\r\nname: pdf\r\ndescription: >-\r\n  Fill forms.\r\nversion: 1.5\r\nn: 3\r\nok: true\r\nnone:\r\n\
                    metadata:\r\n  author: me\r\n  tags: [a, b]\r\n  io.modelcontextprotocol/x: 1\r\n1: one\r\n\
                    big: .inf\r\n---\r\n# Body\r\n";
        let fields = parse(text).unwrap();
        assert_eq!(
            Value::Object(fields),
            json!({"name": "pdf", "description": "Fill forms.", "version": 1.5, "n": 3, "ok": true, "none": null,
                   "metadata": {"author": "me", "tags": ["a", "b"], "io.modelcontextprotocol/x": 1}, "1": "one",
                   "big": ".inf"})
        );
    }

    #[test]
    fn what_cannot_be_served_says_why() {
        assert!(parse("# no frontmatter\n").unwrap_err().contains("no YAML frontmatter"));
        assert!(parse("---\nname: [unclosed\n---\n").unwrap_err().contains("not valid YAML"));
        assert!(parse("---\n- a list\n---\n").unwrap_err().contains("not a mapping"));
        assert!(parse("---\n? [a, b]\n: x\n---\n").unwrap_err().contains("not a plain value"));
        let deep = format!("---\nname: x\nd: {}1{}\n---\n", "[".repeat(40), "]".repeat(40));
        assert!(parse(&deep).unwrap_err().contains("deeper than"));
        // Deeper than the YAML reader goes: refused by it, not a crash.
        let deeper = format!("---\nd: {}1{}\n---\n", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(&deeper).is_err());
    }
}
