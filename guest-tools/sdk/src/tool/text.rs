//! Small text helpers every layer uses: cutting to a size, telling a binary
//! file, writing a timestamp.

/// Cuts `s` to at most `max` bytes on a character boundary, adding `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// True when the bytes look like a binary file: a NUL byte in the first 8 KiB,
/// the same test git and ripgrep use.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0)
}

/// The first bytes [`looks_binary`] looks at.
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// Milliseconds since the epoch as RFC 3339 UTC (`2025-11-17T09:30:00.123Z`).
pub fn rfc3339(millis: i64) -> String {
    let nanos = i128::from(millis) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| millis.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_763_371_800_123), "2025-11-17T09:30:00.123Z");
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("hello", 10), "hello");
        assert_eq!(truncate("hello", 3), "hel…");
        // 'é' is two bytes: cutting inside it must back off.
        assert_eq!(truncate("héllo", 2), "h…");
    }

    #[test]
    fn detects_binary() {
        assert!(!looks_binary(b"plain text\n"));
        assert!(looks_binary(b"PK\x03\x04\x00\x00"));
    }
}
