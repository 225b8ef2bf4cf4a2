//! Decoding a tool's JSON arguments into a typed struct, with errors that name
//! the offending field.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

/// Decodes `json` (the MCP arguments object) into `T`.
///
/// Errors read like `argument 'limit': invalid type: string "ten", expected a
/// whole number`, so an agent can fix its call. A missing or `null` arguments
/// object is treated as `{}`.
pub fn parse<T: DeserializeOwned>(json: &str) -> Result<T, String> {
    let json = if json.trim().is_empty() || json.trim() == "null" { "{}" } else { json };
    if !json.trim_start().starts_with('{') {
        return Err("invalid arguments: expected a JSON object".to_string());
    }
    let mut de = serde_json::Deserializer::from_str(json);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(value) => Ok(value),
        Err(err) => {
            let path = err.path().to_string();
            // serde_json appends "at line 1 column 14": noise for a one-line object.
            let inner = err.into_inner().to_string();
            let inner = inner.split(" at line ").next().unwrap_or_default();
            if path.is_empty() || path == "." {
                Err(format!("invalid arguments: {inner}"))
            } else {
                Err(format!("argument '{path}': {inner}"))
            }
        }
    }
}

/// Deserializes an optional whole number that a client may have sent as `5` or
/// `5.0` (JSON Schema "number"); rejects fractions, negatives and other types.
pub fn optional_count<'de, D: Deserializer<'de>>(de: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(de)?;
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                return Ok(Some(u));
            }
            match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64 => Ok(Some(f as u64)),
                _ => Err(serde::de::Error::custom(format!("expected a whole number >= 0, got {n}"))),
            }
        }
        Some(other) => {
            Err(serde::de::Error::custom(format!("invalid type: {}, expected a whole number", describe(&other))))
        }
    }
}

/// A count argument: `value`, or `default` when absent, which must lie in
/// `range`. Out-of-range values are errors, not silently clamped.
pub fn count_in(
    name: &str,
    value: Option<u64>,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, String> {
    let n = value.unwrap_or(default);
    if !range.contains(&n) {
        return Err(format!("{name} must be between {} and {}, got {n}", range.start(), range.end()));
    }
    Ok(n)
}

/// A JSON value as an error message names it: `string "x"`, `boolean true`, `7`.
pub fn describe(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => format!("string {s:?}"),
        serde_json::Value::Bool(b) => format!("boolean {b}"),
        serde_json::Value::Array(_) => "array".to_string(),
        serde_json::Value::Object(_) => "object".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Args {
        query: String,
        #[serde(default, deserialize_with = "optional_count")]
        limit: Option<u64>,
    }

    #[test]
    fn accepts_integers_and_integral_floats() {
        let a: Args = parse(r#"{"query":"x","limit":5}"#).unwrap();
        assert_eq!((a.query.as_str(), a.limit), ("x", Some(5)));
        let a: Args = parse(r#"{"query":"x","limit":7.0}"#).unwrap();
        assert_eq!(a.limit, Some(7));
        let a: Args = parse(r#"{"query":"x","limit":null}"#).unwrap();
        assert_eq!(a.limit, None);
    }

    #[test]
    fn counts_have_defaults_and_ranges() {
        assert_eq!(count_in("limit", None, 5, 1..=10), Ok(5));
        assert_eq!(count_in("limit", Some(10), 5, 1..=10), Ok(10));
        assert_eq!(count_in("limit", Some(0), 5, 1..=10), Err("limit must be between 1 and 10, got 0".into()));
    }

    #[test]
    fn names_the_field_in_errors() {
        let e = parse::<Args>(r#"{"query":"x","limit":"ten"}"#).unwrap_err();
        assert!(e.starts_with("argument 'limit':"), "{e}");
        assert!(e.contains("string \"ten\""), "{e}");
        let e = parse::<Args>(r#"{"query":"x","limit":2.5}"#).unwrap_err();
        assert!(e.contains("whole number"), "{e}");
        let e = parse::<Args>(r#"{"query":3}"#).unwrap_err();
        assert!(e.starts_with("argument 'query':"), "{e}");
        let e = parse::<Args>("{}").unwrap_err();
        assert!(e.contains("missing field `query`"), "{e}");
        let e = parse::<Args>("[1,2]").unwrap_err();
        assert!(e.starts_with("invalid arguments"), "{e}");
    }
}
