//! Small text helpers shared by tools.

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
    bytes.iter().take(8192).any(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

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
