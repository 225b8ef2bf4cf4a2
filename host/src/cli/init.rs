//! `ragbox init`: writes the workspace-local MCP config each coding agent
//! reads, so it starts `ragbox serve` for this workspace, and keeps `.ragbox/`
//! out of git. Existing config files are merged, never replaced: their other
//! entries stay, and a file that cannot be parsed is left alone with the entry
//! to add by hand.

use crate::config::DATA_DIR;
use crate::mcp::http::TOKEN_FILE;
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The server's name in every agent's config.
const SERVER_NAME: &str = "ragbox";

/// A coding agent whose MCP config `init` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: `.mcp.json`.
    Claude,
    /// Gemini CLI: `.gemini/settings.json`.
    Gemini,
    /// OpenCode: `opencode.json`.
    Opencode,
    /// Codex: `.codex/config.toml`.
    Codex,
    /// All of the above.
    All,
}

impl Agent {
    const EACH: [Agent; 4] = [Agent::Claude, Agent::Gemini, Agent::Opencode, Agent::Codex];

    fn name(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Gemini => "Gemini CLI",
            Agent::Opencode => "OpenCode",
            Agent::Codex => "Codex",
            Agent::All => "all agents",
        }
    }

    /// The config file, workspace-relative.
    fn config_file(self) -> &'static str {
        match self {
            Agent::Claude => ".mcp.json",
            Agent::Gemini => ".gemini/settings.json",
            Agent::Opencode => "opencode.json",
            Agent::Codex => ".codex/config.toml",
            Agent::All => unreachable!("expanded before use"),
        }
    }

    /// Files or folders whose presence says the workspace uses this agent.
    fn markers(self) -> &'static [&'static str] {
        match self {
            Agent::Claude => &[".mcp.json", ".claude", "CLAUDE.md"],
            Agent::Gemini => &[".gemini", "GEMINI.md"],
            Agent::Opencode => &["opencode.json", "opencode.jsonc", ".opencode"],
            Agent::Codex => &[".codex", "AGENTS.md"],
            Agent::All => &[],
        }
    }
}

/// The environment variable agents read the HTTP server's bearer token from,
/// so no config file (often committed) holds the secret.
const TOKEN_VAR: &str = "RAGBOX_TOKEN";

/// How an agent reaches the server.
enum Launch {
    /// It starts `command args` and speaks MCP over its stdio.
    Spawn { command: String, args: Vec<String> },
    /// It connects to a running `ragbox serve --http` at this URL.
    Remote { url: String },
}

/// Writes the configs for `agents` (detected from the workspace when empty).
pub fn run(workspace: &Path, agents: &[Agent], http: Option<&str>) -> anyhow::Result<()> {
    let workspace = std::fs::canonicalize(workspace)
        .with_context(|| format!("workspace {} does not exist", workspace.display()))?;
    let chosen = choose(&workspace, agents);
    let launch = match http {
        Some(url) => Launch::Remote { url: checked_url(url)? },
        None => launch(&workspace)?,
    };
    // Every edit is prepared before anything is written: one bad file stops all.
    let mut edits = Vec::new();
    for agent in &chosen {
        let path = inside(&workspace, agent.config_file())?;
        let existing = read_text(&path)?;
        let text = merge(*agent, existing.as_deref(), &launch).map_err(|e| {
            anyhow::anyhow!(
                "{} is not valid {}: {e}\nNothing was written. Fix the file, or add this entry by hand:\n{}",
                path.display(),
                if *agent == Agent::Codex { "TOML" } else { "JSON" },
                merge(*agent, None, &launch).unwrap_or_default()
            )
        })?;
        edits.push((*agent, path, existing.is_some(), text));
    }
    let gitignore = ignore_data_dir(&workspace)?;
    for (agent, path, existed, text) in edits {
        write_atomically(&path, &text)?;
        let verb = if existed { "updated" } else { "created" };
        println!("{verb} {} ({})", agent.config_file(), agent.name());
    }
    if let Some((path, text)) = gitignore {
        write_atomically(&path, &text)?;
        println!("added {DATA_DIR}/ to .gitignore");
    }
    match &launch {
        Launch::Spawn { command, args } => println!(
            "The agents start `{command} {}` in this workspace. Next: `ragbox index` to embed it.",
            args.join(" ")
        ),
        Launch::Remote { url } => println!(
            "The agents connect to {url}. Before starting them, give them the server's token:\n  \
             export {TOKEN_VAR}=$(cat {})\n\
             (the server's token file: this one unless it was started with --token-file).",
            crate::config::user_config_dir()
                .map_or_else(|| "~/.config/ragbox/http-token".into(), |d| d.join(TOKEN_FILE).display().to_string())
        ),
    }
    Ok(())
}

/// `url` when it is an http(s) URL, else an error that shows the expected form.
fn checked_url(url: &str) -> anyhow::Result<String> {
    let url = url.trim();
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(url.to_string()),
        _ => bail!("--http takes the server's URL, e.g. http://127.0.0.1:8765/mcp (got {url:?})"),
    }
}

/// The agents asked for; without any, those the workspace shows signs of, else Claude Code.
fn choose(workspace: &Path, agents: &[Agent]) -> Vec<Agent> {
    if agents.contains(&Agent::All) {
        return Agent::EACH.to_vec();
    }
    if !agents.is_empty() {
        let mut out: Vec<Agent> = Vec::new();
        for a in agents {
            if !out.contains(a) {
                out.push(*a);
            }
        }
        return out;
    }
    let found: Vec<Agent> =
        Agent::EACH.into_iter().filter(|a| a.markers().iter().any(|m| workspace.join(m).exists())).collect();
    if found.is_empty() { vec![Agent::Claude] } else { found }
}

/// `ragbox` when that name on PATH is this binary, else this binary's path.
fn launch(workspace: &Path) -> anyhow::Result<Launch> {
    let exe = std::env::current_exe().context("cannot tell where the ragbox binary is")?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths)
            .any(|dir| std::fs::canonicalize(dir.join("ragbox")).is_ok_and(|found| found == exe))
    });
    let command = if on_path { "ragbox".to_string() } else { exe.display().to_string() };
    // An explicit workspace: agents differ in the folder they start servers in.
    let mut args = vec!["serve".to_string(), "--workspace".to_string(), workspace.display().to_string()];
    // A shared store named on this command line goes with the server (a URL holds no password).
    let store = super::open::store_args();
    for (flag, value) in [("--store", store.url), ("--collection", store.collection)] {
        if let Some(value) = value {
            args.extend([flag.to_string(), value]);
        }
    }
    Ok(Launch::Spawn { command, args })
}

/// The config file's new text: `existing` with the ragbox entry set.
fn merge(agent: Agent, existing: Option<&str>, launch: &Launch) -> Result<String, String> {
    if agent == Agent::Codex {
        return merge_codex(existing, launch);
    }
    let mut root: Value = match existing.filter(|t| !t.trim().is_empty()) {
        Some(text) => serde_json::from_str(text).map_err(|e| e.to_string())?,
        None if agent == Agent::Opencode => json!({ "$schema": "https://opencode.ai/config.json" }),
        None => json!({}),
    };
    let Some(object) = root.as_object_mut() else { return Err("the top level is not an object".into()) };
    // Each agent expands environment variables in its own syntax.
    let section = if agent == Agent::Opencode { "mcp" } else { "mcpServers" };
    let entry = match (agent, launch) {
        (Agent::Claude, Launch::Spawn { command, args }) => {
            json!({ "type": "stdio", "command": command, "args": args })
        }
        (Agent::Gemini, Launch::Spawn { command, args }) => json!({ "command": command, "args": args }),
        (Agent::Opencode, Launch::Spawn { command, args }) => {
            let mut line = vec![command.clone()];
            line.extend(args.iter().cloned());
            json!({ "type": "local", "command": line, "enabled": true })
        }
        (Agent::Claude, Launch::Remote { url }) => json!({
            "type": "http", "url": url, "headers": { "Authorization": format!("Bearer ${{{TOKEN_VAR}}}") }
        }),
        (Agent::Gemini, Launch::Remote { url }) => json!({
            "httpUrl": url, "headers": { "Authorization": format!("Bearer ${TOKEN_VAR}") }
        }),
        (Agent::Opencode, Launch::Remote { url }) => json!({
            "type": "remote", "url": url, "enabled": true,
            "headers": { "Authorization": format!("Bearer {{env:{TOKEN_VAR}}}") }
        }),
        (Agent::Codex | Agent::All, _) => unreachable!("handled above"),
    };
    let servers = object.entry(section).or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else { return Err(format!("\"{section}\" is not an object")) };
    servers.insert(SERVER_NAME.to_string(), entry);
    serde_json::to_string_pretty(&root).map(|s| s + "\n").map_err(|e| e.to_string())
}

/// Codex's `config.toml` with `[mcp_servers.ragbox]` set, comments kept.
fn merge_codex(existing: Option<&str>, launch: &Launch) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = existing.unwrap_or("").parse().map_err(|e| format!("{e}"))?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let Some(servers) = servers.as_table_like_mut() else { return Err("mcp_servers is not a table".into()) };
    let mut entry = toml_edit::Table::new();
    match launch {
        Launch::Spawn { command, args } => {
            entry.insert("command", toml_edit::value(command.as_str()));
            let args: toml_edit::Array = args.iter().map(String::as_str).collect();
            entry.insert("args", toml_edit::value(args));
        }
        Launch::Remote { url } => {
            entry.insert("url", toml_edit::value(url.as_str()));
            entry.insert("bearer_token_env_var", toml_edit::value(TOKEN_VAR));
        }
    }
    servers.insert(SERVER_NAME, toml_edit::Item::Table(entry));
    Ok(doc.to_string())
}

/// The workspace's `.gitignore` with `.ragbox/` added, unless it is there
/// already (`None`); nothing is written here, so a refusal comes before any write.
fn ignore_data_dir(workspace: &Path) -> anyhow::Result<Option<(PathBuf, String)>> {
    let path = inside(workspace, ".gitignore")?;
    let text = read_text(&path)?.unwrap_or_default();
    let already = text.lines().map(str::trim).any(|l| {
        let l = l.trim_start_matches('/').trim_end_matches('/');
        l == DATA_DIR
    });
    if already {
        return Ok(None);
    }
    let mut new = text.clone();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(&format!("# ragbox's index (rebuilt by `ragbox index`)\n{DATA_DIR}/\n"));
    Ok(Some((path, new)))
}

/// The text of the file at `path` (resolved by [`inside`]); `None` when
/// there is none. A FIFO or device (which could block or never end) or a
/// file over 4 MiB is refused: nothing is written then.
fn read_text(path: &Path) -> anyhow::Result<Option<String>> {
    use std::io::Read as _;
    const MAX_BYTES: u64 = 4 << 20;
    let refuse = |why: &str| anyhow::anyhow!("cannot read {}: {why}; nothing was written", path.display());
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(&e.to_string())),
        Ok(meta) if !meta.is_file() => return Err(refuse("it is not a regular file")),
        Ok(meta) if meta.len() > MAX_BYTES => return Err(refuse("it is larger than 4 MiB")),
        Ok(_) => {}
    }
    let mut text = String::new();
    let file = std::fs::File::open(path).map_err(|e| refuse(&e.to_string()))?;
    file.take(MAX_BYTES).read_to_string(&mut text).map_err(|e| refuse(&e.to_string()))?;
    Ok(Some(text))
}

/// `rel` under `workspace` (canonical) with every symlink on the way
/// resolved; refused when one leads outside the workspace or nowhere. A
/// cloned repository's `.codex -> ~/.codex` must not get `init` to edit the
/// user's own config, nor `.mcp.json -> ~/secret` to copy a file in.
fn inside(workspace: &Path, rel: &str) -> anyhow::Result<PathBuf> {
    let mut real = workspace.to_path_buf();
    let mut walked = PathBuf::new();
    for part in Path::new(rel).components() {
        walked.push(part);
        let next = real.join(part);
        let is_link = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            real = next;
            continue;
        }
        let refuse = |why: String| {
            anyhow::anyhow!(
                "refusing to use {}: it is a symbolic link {why}. `ragbox init` never reads or writes through \
                 a link that leaves the workspace; nothing was written. Replace the link with a file or folder, \
                 or add the entry by hand",
                walked.display()
            )
        };
        let target = std::fs::canonicalize(&next).map_err(|_| {
            let to = std::fs::read_link(&next).map(|t| t.display().to_string()).unwrap_or_default();
            refuse(format!("to {to}, which does not exist"))
        })?;
        if !target.starts_with(workspace) {
            return Err(refuse(format!("to {}, outside the workspace", target.display())));
        }
        real = target;
    }
    Ok(real)
}

/// Writes `text` to `path` through a temporary file, so a crash leaves the
/// old file or the new one. A new file gets the mode any new file gets; an
/// old one keeps its own (a config may be private).
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir: PathBuf = path.parent().map(Path::to_path_buf).unwrap_or_default();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let old = std::fs::metadata(path).ok().map(|meta| meta.permissions());
    let mut tmp = crate::platform::temp_file_in(&dir, old.as_ref())
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    // Exactly the old mode, which the umask may have narrowed at creation.
    if let Some(old) = old {
        let _ = std::fs::set_permissions(tmp.path(), old);
    }
    tmp.persist(path).map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch::Spawn { command: "ragbox".into(), args: vec!["serve".into(), "--workspace".into(), "/w".into()] }
    }

    #[cfg(unix)]
    #[test]
    fn links_out_of_the_workspace_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(ws.join("real")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let ws = ws.canonicalize().unwrap();
        std::os::unix::fs::symlink(&outside, ws.join(".codex")).unwrap();
        std::os::unix::fs::symlink(ws.join("real"), ws.join(".gemini")).unwrap();
        std::os::unix::fs::symlink(root.path().join("nowhere"), ws.join(".mcp.json")).unwrap();
        let err = inside(&ws, ".codex/config.toml").unwrap_err().to_string();
        assert!(err.contains(".codex") && err.contains("outside the workspace"), "{err}");
        assert!(inside(&ws, ".mcp.json").unwrap_err().to_string().contains("does not exist"));
        assert_eq!(inside(&ws, ".gemini/settings.json").unwrap(), ws.join("real/settings.json"));
        assert_eq!(inside(&ws, "opencode.json").unwrap(), ws.join("opencode.json"));
    }

    #[cfg(unix)]
    #[test]
    fn new_files_get_the_usual_mode_and_old_ones_keep_theirs() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let mode = |name: &str| std::fs::metadata(dir.path().join(name)).unwrap().permissions().mode() & 0o777;
        // What the umask gives any new file here.
        std::fs::File::create(dir.path().join("probe")).unwrap();
        write_atomically(&dir.path().join("sub/new.json"), "{}\n").unwrap();
        assert_eq!(mode("sub/new.json"), mode("probe"), "not tempfile's 0600");
        for old in [0o600, 0o640, 0o664] {
            let path = dir.path().join("old.json");
            std::fs::write(&path, "{}").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(old)).unwrap();
            write_atomically(&path, "{\"a\": 1}\n").unwrap();
            assert_eq!((mode("old.json"), std::fs::read_to_string(&path).unwrap().as_str()), (old, "{\"a\": 1}\n"));
        }
    }

    #[test]
    fn remote_entries_name_the_url_and_the_token_variable_only() {
        let remote = Launch::Remote { url: "http://127.0.0.1:8765/mcp".into() };
        let entry = |agent| {
            let out: Value = serde_json::from_str(&merge(agent, None, &remote).unwrap()).unwrap();
            let section = if agent == Agent::Opencode { "mcp" } else { "mcpServers" };
            out[section]["ragbox"].clone()
        };
        assert_eq!(
            entry(Agent::Claude),
            json!({"type": "http", "url": "http://127.0.0.1:8765/mcp",
                   "headers": {"Authorization": "Bearer ${RAGBOX_TOKEN}"}})
        );
        assert_eq!(
            entry(Agent::Gemini),
            json!({"httpUrl": "http://127.0.0.1:8765/mcp", "headers": {"Authorization": "Bearer $RAGBOX_TOKEN"}})
        );
        assert_eq!(
            entry(Agent::Opencode),
            json!({"type": "remote", "url": "http://127.0.0.1:8765/mcp", "enabled": true,
                   "headers": {"Authorization": "Bearer {env:RAGBOX_TOKEN}"}})
        );
        let parsed: toml::Table = toml::from_str(&merge_codex(None, &remote).unwrap()).unwrap();
        assert_eq!(parsed["mcp_servers"]["ragbox"]["url"].as_str(), Some("http://127.0.0.1:8765/mcp"));
        assert_eq!(parsed["mcp_servers"]["ragbox"]["bearer_token_env_var"].as_str(), Some("RAGBOX_TOKEN"));
        assert!(checked_url("127.0.0.1:8765").is_err());
        assert!(checked_url("http://").is_err());
        assert_eq!(checked_url(" http://localhost:1/mcp ").unwrap(), "http://localhost:1/mcp");
    }

    #[test]
    fn json_configs_keep_other_servers_and_settings() {
        let existing = r#"{"theme": "dark", "mcpServers": {"other": {"command": "x"}}}"#;
        let out: Value = serde_json::from_str(&merge(Agent::Gemini, Some(existing), &launch()).unwrap()).unwrap();
        assert_eq!(out["theme"], "dark");
        assert_eq!(out["mcpServers"]["other"]["command"], "x");
        assert_eq!(out["mcpServers"]["ragbox"]["args"], json!(["serve", "--workspace", "/w"]));
        let out: Value = serde_json::from_str(&merge(Agent::Opencode, None, &launch()).unwrap()).unwrap();
        assert_eq!(
            out["mcp"]["ragbox"],
            json!({"type": "local", "command": ["ragbox", "serve", "--workspace", "/w"], "enabled": true})
        );
        assert!(merge(Agent::Claude, Some("{ not json"), &launch()).is_err());
        assert!(merge(Agent::Claude, Some("[1]"), &launch()).is_err());
        assert!(merge(Agent::Claude, Some(r#"{"mcpServers": 3}"#), &launch()).is_err());
    }

    #[test]
    fn codex_toml_keeps_comments_and_other_tables() {
        let existing = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
        let out = merge_codex(Some(existing), &launch()).unwrap();
        assert!(out.starts_with("# my settings\nmodel = \"o3\"\n"), "{out}");
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(parsed["mcp_servers"]["docs"]["command"].as_str(), Some("docs-mcp"));
        assert_eq!(parsed["mcp_servers"]["ragbox"]["command"].as_str(), Some("ragbox"));
        assert_eq!(parsed["mcp_servers"]["ragbox"]["args"].as_array().map(Vec::len), Some(3));
        assert!(merge_codex(Some("mcp_servers = 1"), &launch()).is_err());
        assert!(merge_codex(Some("[broken"), &launch()).is_err());
    }
}
