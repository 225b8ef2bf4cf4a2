//! What every listing of a workspace skips, host (`host.files`, the file
//! watch) and guests (a folder listed through WASI) alike: kept here so
//! the two sides cannot drift apart.
//!
//! A folder whose ignore file cannot be read (too large, not a regular file)
//! is not listed at all: its rules might exclude anything in it, so nothing is
//! taken from it (a clone could pad its `.gitignore` past the cap to get a
//! user's ignored `.env` indexed). And files that hold credentials by their
//! name ([`SECRET_FILES`]) are never indexed by default, whatever the ignore
//! files say; only the user's own config can let one in.

/// Names never walked: ragbox's data dir and version control's, folders or
/// files alike (a git worktree's or submodule's `.git` is a file pointing
/// at the repository).
pub const SKIPPED_DIRS: [&str; 4] = [".ragbox", ".git", ".hg", ".svn"];

/// Whether `name` is one of [`SKIPPED_DIRS`], in any case: on a
/// case-insensitive filesystem (macOS, Windows) `.GIT` is the same folder,
/// and the resource guard refuses it in any case too.
pub fn is_skipped(name: &str) -> bool {
    SKIPPED_DIRS.iter().any(|d| name.eq_ignore_ascii_case(d))
}

/// The ignore files read in each folder, weakest first: `.ignore` overrides
/// `.gitignore`, as in ripgrep.
pub const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// Largest ignore file whose rules are read (compiling rules costs ~10 µs a
/// byte and cannot be stopped halfway; real ignore files have a few KiB).
/// A folder with a larger one is not listed, and the listing says why.
pub const MAX_IGNORE_FILE_BYTES: u64 = 64 << 10;

/// Names of files that hold credentials: never indexed by default. A `*`
/// stands for any run of characters; case is ignored (as on macOS and
/// Windows). The list peers such as ck skip, and a few more of the same kind.
pub const SECRET_FILES: [&str; 24] = [
    // `.env`, `.env.local`, `.env-prod`, direnv's `.envrc`.
    ".env*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    // The AWS CLI's.
    "credentials",
    "credentials*.json",
    "*.tfstate",
    "*.tfstate.backup",
];

/// Why a file named like credentials was not indexed, where a listing was asked for it by name.
pub const SECRET_LEFT_OUT: &str = "not indexed: its name marks it a file of credentials, which ragbox never \
     indexes unless your own config lets it in (index_secrets = [\"PATH\"] in your config.toml)";

/// Whether a file called `name` (its last path component) is one of [`SECRET_FILES`].
pub fn is_secret(name: &str) -> bool {
    SECRET_FILES.iter().any(|pattern| matches_name(pattern, name))
}

/// Whether `name` matches `pattern`, at most one `*` in it, ASCII case ignored.
fn matches_name(pattern: &str, name: &str) -> bool {
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    match pattern.split_once('*') {
        None => same(pattern, name),
        Some((head, tail)) => {
            name.len() >= head.len() + tail.len()
                && name.get(..head.len()).is_some_and(|h| same(h, head))
                && name.get(name.len() - tail.len()..).is_some_and(|t| same(t, tail))
        }
    }
}

/// The MCP config files `ragbox init` writes for agents, by their last path
/// components: configuration, not content, so never listed for indexing or
/// search (they name ragbox's own command and flags, which every search for
/// servers, settings or costs would otherwise find).
pub const AGENT_CONFIG_FILES: [&str; 7] = [
    ".mcp.json",
    ".gemini/settings.json",
    "opencode.json",
    "opencode.jsonc",
    ".codex/config.toml",
    ".cursor/mcp.json",
    ".vscode/mcp.json",
];

/// Whether `path` (workspace-relative, `/`-separated) is one of
/// [`AGENT_CONFIG_FILES`], in any folder.
pub fn is_agent_config(path: &str) -> bool {
    AGENT_CONFIG_FILES
        .iter()
        .any(|name| path.strip_suffix(name).is_some_and(|before| before.is_empty() || before.ends_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_told_by_their_names() {
        for secret in [
            ".env",
            ".env.local",
            "prod.env",
            "server.PEM",
            "id_rsa",
            "id_ed25519.pub",
            ".npmrc",
            "credentials.json",
            "credentials-prod.json",
            "terraform.tfstate",
            "terraform.tfstate.backup",
            ".ENV",
            ".envrc",
            ".env-prod",
            "credentials",
        ] {
            assert!(is_secret(secret), "{secret}");
        }
        for plain in
            ["env.md", "README.md", "keys.md", "environment.ts", "credentials.md", "pem.rs", "a.keyboard", "id.txt"]
        {
            assert!(!is_secret(plain), "{plain}");
        }
        // A name shorter than the pattern's two ends is no match, and no panic on UTF-8.
        assert!(!is_secret("é.p"));
        assert!(!matches_name("ab*ba", "aba"));
    }

    #[test]
    fn agent_configs_are_known_in_any_folder_and_by_whole_names() {
        for path in [".mcp.json", "sub/.mcp.json", ".codex/config.toml", "a/b/.vscode/mcp.json", "opencode.jsonc"] {
            assert!(is_agent_config(path), "{path}");
        }
        for path in ["x.mcp.json", "codex/config.toml", ".codex/config.toml.bak", "notes/mcp.json", "my-opencode.json"]
        {
            assert!(!is_agent_config(path), "{path}");
        }
    }
}
