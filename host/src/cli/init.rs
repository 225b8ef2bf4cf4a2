//! `ragbox init`: writes the MCP config each coding agent reads, so it starts
//! `ragbox serve --watch` for this workspace, and keeps `.ragbox/` out of git.
//!
//! Project files (`.mcp.json`, `.cursor/mcp.json`, ...) are often committed,
//! so they name the workspace as `.` or `${workspaceFolder}` wherever the
//! agent resolves that to the workspace. User-level files (Windsurf, Claude
//! Desktop) are written only when their agent is named. Existing files are
//! merged, never replaced: their other entries stay, and a file that cannot
//! be parsed, or whose comments a rewrite would lose, is left alone with the
//! entry to add by hand.

use crate::config::DATA_DIR;
use crate::mcp::http::TOKEN_FILE;
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The server's name in every project file.
const SERVER_NAME: &str = "ragbox";

/// A coding agent whose MCP config `init` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: `.mcp.json`.
    Claude,
    /// Gemini CLI: `.gemini/settings.json`.
    Gemini,
    /// OpenCode: `opencode.json` (or the `opencode.jsonc` already there).
    Opencode,
    /// Codex: `.codex/config.toml`.
    Codex,
    /// Cursor: `.cursor/mcp.json`.
    Cursor,
    /// VS Code (Copilot Chat): `.vscode/mcp.json`.
    Vscode,
    /// Windsurf: your user file `~/.codeium/windsurf/mcp_config.json` (only when named).
    Windsurf,
    /// Claude Desktop: your user file `claude_desktop_config.json` (only when named).
    ClaudeDesktop,
    /// Every agent with a project file: all but Windsurf and Claude Desktop.
    All,
}

/// Where an agent's config file lives.
enum Place {
    /// In the workspace, at this relative path.
    Workspace(&'static str),
    /// Under the user's home folder.
    Home(&'static str),
    /// Under the user's config folder: `~/.config`, `~/Library/Application Support` or `%APPDATA%`.
    Config(&'static str),
}

impl Agent {
    /// The agents `all` stands for: those whose file is the workspace's.
    const PROJECT: [Agent; 6] =
        [Agent::Claude, Agent::Gemini, Agent::Opencode, Agent::Codex, Agent::Cursor, Agent::Vscode];

    fn name(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Gemini => "Gemini CLI",
            Agent::Opencode => "OpenCode",
            Agent::Codex => "Codex",
            Agent::Cursor => "Cursor",
            Agent::Vscode => "VS Code",
            Agent::Windsurf => "Windsurf",
            Agent::ClaudeDesktop => "Claude Desktop",
            Agent::All => "all agents",
        }
    }

    fn place(self) -> Place {
        match self {
            Agent::Claude => Place::Workspace(".mcp.json"),
            Agent::Gemini => Place::Workspace(".gemini/settings.json"),
            Agent::Opencode => Place::Workspace("opencode.json"),
            Agent::Codex => Place::Workspace(".codex/config.toml"),
            Agent::Cursor => Place::Workspace(".cursor/mcp.json"),
            Agent::Vscode => Place::Workspace(".vscode/mcp.json"),
            Agent::Windsurf => Place::Home(".codeium/windsurf/mcp_config.json"),
            Agent::ClaudeDesktop => Place::Config("Claude/claude_desktop_config.json"),
            Agent::All => unreachable!("expanded before use"),
        }
    }

    /// Whether the file is the user's, shared by all their workspaces.
    fn user_level(self) -> bool {
        matches!(self, Agent::Windsurf | Agent::ClaudeDesktop)
    }

    /// Files or folders whose presence says the workspace uses this agent.
    fn markers(self) -> &'static [&'static str] {
        match self {
            Agent::Claude => &[".mcp.json", ".claude", "CLAUDE.md"],
            Agent::Gemini => &[".gemini", "GEMINI.md"],
            Agent::Opencode => &["opencode.json", "opencode.jsonc", ".opencode"],
            Agent::Codex => &[".codex", "AGENTS.md"],
            Agent::Cursor => &[".cursor"],
            Agent::Vscode => &[".vscode"],
            Agent::Windsurf | Agent::ClaudeDesktop | Agent::All => &[],
        }
    }

    /// The key of the file's table of servers.
    fn section(self) -> &'static str {
        match self {
            Agent::Opencode => "mcp",
            Agent::Vscode => "servers",
            _ => "mcpServers",
        }
    }

    /// Whether the agent reads its JSON file with comments (and trailing commas) allowed.
    fn reads_jsonc(self) -> bool {
        matches!(self, Agent::Gemini | Agent::Opencode | Agent::Cursor | Agent::Vscode)
    }

    /// The server's `--workspace` as this agent's file names it: no path of
    /// this machine where the agent resolves one, so the file can be committed.
    fn workspace_arg(self, workspace: &Path) -> String {
        match self {
            // They start servers in the folder they were started in: the workspace, when started there.
            Agent::Claude | Agent::Gemini | Agent::Opencode => ".".into(),
            Agent::Cursor | Agent::Vscode => "${workspaceFolder}".into(),
            // Codex starts servers in its own process's folder, which for its IDE extension
            // and app is not the project; its `cwd` key is not resolved against the file
            // either. User files serve one folder wherever the app runs.
            Agent::Codex | Agent::Windsurf | Agent::ClaudeDesktop | Agent::All => workspace.display().to_string(),
        }
    }
}

/// The environment variable agents read the HTTP server's bearer token from,
/// so no config file (often committed) holds the secret.
const TOKEN_VAR: &str = "RAGBOX_TOKEN";

/// The VS Code input that asks for the token: a GUI editor rarely sees a
/// variable exported in a shell, and VS Code keeps the answer in its secret store.
const VSCODE_TOKEN_INPUT: &str = "ragbox-token";

/// How an agent reaches the server.
enum Launch {
    /// It starts the binary and speaks MCP over its stdio.
    Spawn(Spawn),
    /// It connects to a running `ragbox serve --http` at this URL.
    Remote { url: String },
}

/// What an agent needs to start the server.
struct Spawn {
    /// This binary's absolute path.
    exe: String,
    /// Whether `ragbox` on PATH is this binary.
    on_path: bool,
    /// The workspace, canonical.
    workspace: PathBuf,
    /// `--store URL` and `--collection NAME`, when this command line named them.
    store: Vec<String>,
    /// `--tools PROFILE`, when this command line named one.
    tools: Option<String>,
}

impl Spawn {
    /// `ragbox` in project files when PATH finds this binary; else, and in
    /// user files always, the binary's path: a desktop app started from a
    /// dock or menu does not get the shell's PATH.
    fn command(&self, agent: Agent) -> String {
        if self.on_path && !agent.user_level() { "ragbox".into() } else { self.exe.clone() }
    }

    /// Serve the workspace and keep its index fresh as files change.
    fn args(&self, agent: Agent) -> Vec<String> {
        let mut args =
            vec!["serve".into(), "--workspace".into(), agent.workspace_arg(&self.workspace), "--watch".into()];
        args.extend(self.store.iter().cloned());
        if let Some(profile) = &self.tools {
            args.extend(["--tools".to_string(), profile.clone()]);
        }
        args
    }
}

/// Where user-level config files live; tests point it at a temporary folder.
struct UserDirs {
    /// The user's home folder (Windsurf's `~/.codeium`).
    home: Option<PathBuf>,
    /// The user's config folder, per OS (Claude Desktop's).
    config: Option<PathBuf>,
}

impl UserDirs {
    /// This user's folders, as the OS names them.
    fn of_this_user() -> Self {
        let base = directories::BaseDirs::new();
        UserDirs {
            home: base.as_ref().map(|b| b.home_dir().to_path_buf()),
            config: base.as_ref().map(|b| b.config_dir().to_path_buf()),
        }
    }
}

/// Why a config file was not merged.
#[derive(Debug)]
enum Refusal {
    /// It does not parse, or its shape is not the agent's.
    Invalid(String),
    /// It has comments, which rewriting it would lose.
    Comments,
    /// The agent cannot connect to a server by URL.
    NoRemote,
}

/// One config file's new text.
struct Edit {
    agent: Agent,
    path: PathBuf,
    /// The file as the output names it.
    shown: String,
    /// The entry's name in it.
    entry: String,
    existing: Option<String>,
    text: String,
}

impl Edit {
    fn changed(&self) -> bool {
        self.existing.as_deref() != Some(self.text.as_str())
    }
}

/// Writes the configs for `agents` (detected from the workspace when empty).
pub fn run(workspace: &Path, agents: &[Agent], how: &How) -> anyhow::Result<()> {
    run_in(workspace, agents, how, &UserDirs::of_this_user()).map(|_| ())
}

/// How the agents reach ragbox: a running HTTP server, or a server each starts with these tools.
#[derive(Debug, Default)]
pub struct How {
    /// The URL of a running `ragbox serve --http`.
    pub http: Option<String>,
    /// The `--tools` profile the servers the agents start offer (theirs by default: all).
    pub tools: Option<crate::mcp::Profile>,
    /// The shared store named on this command line: it goes with the server
    /// (a URL holds no password).
    pub store: crate::setup::StoreArgs,
}

/// [`run`] with the user's folders given; the number of files written.
fn run_in(workspace: &Path, agents: &[Agent], how: &How, dirs: &UserDirs) -> anyhow::Result<usize> {
    let workspace = crate::platform::canonical(workspace)
        .with_context(|| format!("workspace {} does not exist", workspace.display()))?;
    let launch = match &how.http {
        Some(url) => Launch::Remote { url: checked_url(url)? },
        None => launch(&workspace, how)?,
    };
    // Every edit is prepared before anything is written: one bad file stops all.
    let mut edits = Vec::new();
    let mut skipped = Vec::new();
    for agent in choose(&workspace, agents) {
        let (path, shown) = config_file(agent, &workspace, dirs)?;
        let existing = read_text(&path)?;
        let entry = entry_name(agent, &workspace);
        match merge(agent, existing.as_deref(), &launch, &entry) {
            Ok(text) => edits.push(Edit { agent, path, shown, entry, existing, text }),
            Err(Refusal::NoRemote) => skipped.push(agent),
            Err(refusal) => return Err(refused(agent, &path, refusal, &launch, &entry)),
        }
    }
    let gitignore = ignore_data_dir(&workspace)?;
    let mut written = 0;
    for edit in &edits {
        let verb = match edit.existing {
            _ if !edit.changed() => "unchanged",
            Some(_) => "updated",
            None => "created",
        };
        if edit.changed() {
            write_atomically(&edit.path, &edit.text)?;
            written += 1;
        }
        if edit.agent.user_level() {
            say!("{verb} {} ({}, your user config: entry {})", edit.shown, edit.agent.name(), edit.entry);
        } else {
            say!("{verb} {} ({})", edit.shown, edit.agent.name());
        }
    }
    if let Some((path, text)) = gitignore {
        write_atomically(&path, &text)?;
        written += 1;
        println!("added {DATA_DIR}/ to .gitignore");
    }
    for agent in skipped {
        println!(
            "skipped {}: its config file takes only servers it starts itself, not a URL. \
             Run `ragbox init --agent claude-desktop` without --http to have it start its own.",
            agent.name()
        );
    }
    print_next_steps(&edits, &launch);
    if written == 0 {
        println!("Nothing changed: every file already had this entry.");
    }
    Ok(written)
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

/// The agents asked for (`all`: every project agent); without any, those the
/// workspace shows signs of, else Claude Code. User-level agents only by name.
fn choose(workspace: &Path, agents: &[Agent]) -> Vec<Agent> {
    let mut out: Vec<Agent> = Vec::new();
    for agent in agents {
        let each = if *agent == Agent::All { &Agent::PROJECT[..] } else { std::slice::from_ref(agent) };
        for a in each {
            if !out.contains(a) {
                out.push(*a);
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    let found: Vec<Agent> =
        Agent::PROJECT.into_iter().filter(|a| a.markers().iter().any(|m| workspace.join(m).exists())).collect();
    if found.is_empty() { vec![Agent::Claude] } else { found }
}

/// How the agents start the server: `ragbox` when the first of that name on
/// PATH is this program, else this binary's path; the workspace as each agent names it.
fn launch(workspace: &Path, how: &How) -> anyhow::Result<Launch> {
    let exe = std::env::current_exe().context("cannot tell where the ragbox binary is")?;
    let exe = crate::platform::canonical(&exe).unwrap_or(exe);
    // What a bare `ragbox` runs: the first on PATH.
    let name = format!("ragbox{}", std::env::consts::EXE_SUFFIX);
    let on_path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join(&name)).find(|found| found.is_file()))
        .is_some_and(|found| same_program(&found, &exe));
    let mut store = Vec::new();
    for (flag, value) in [("--store", how.store.url.clone()), ("--collection", how.store.collection.clone())] {
        if let Some(value) = value {
            store.extend([flag.to_string(), value]);
        }
    }
    let tools = how.tools.as_ref().map(ToString::to_string);
    Ok(Launch::Spawn(Spawn {
        exe: exe.display().to_string(),
        on_path,
        workspace: workspace.to_path_buf(),
        store,
        tools,
    }))
}

/// Whether `found` runs what `exe` (canonical) runs: the same file, or a
/// copy of its bytes (`make install` copies the build onto PATH).
fn same_program(found: &Path, exe: &Path) -> bool {
    if crate::platform::canonical(found).is_ok_and(|found| found == exe) {
        return true;
    }
    let (Ok(mut a), Ok(mut b)) = (std::fs::File::open(found), std::fs::File::open(exe)) else { return false };
    let size = |f: &std::fs::File| f.metadata().map(|m| m.len()).ok();
    if size(&a).is_none() || size(&a) != size(&b) {
        return false;
    }
    let (mut left, mut right) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        match (read_full(&mut a, &mut left), read_full(&mut b, &mut right)) {
            (Ok(0), Ok(0)) => return true,
            (Ok(n), Ok(m)) if n == m && left[..n] == right[..m] => {}
            _ => return false,
        }
    }
}

/// Fills `buf` from `file` as far as it goes; the bytes read (0 at its end).
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read as _;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The agent's config file and its name for the output. A workspace file is
/// resolved by [`inside`]; a user file's own links (a dotfiles repository)
/// are followed, so that a link stays a link.
fn config_file(agent: Agent, workspace: &Path, dirs: &UserDirs) -> anyhow::Result<(PathBuf, String)> {
    let (base, rel, what) = match agent.place() {
        Place::Workspace(rel) => {
            // OpenCode reads both: a new opencode.json beside an opencode.jsonc would shadow its settings.
            let jsonc = agent == Agent::Opencode
                && std::fs::symlink_metadata(workspace.join("opencode.json")).is_err()
                && std::fs::symlink_metadata(workspace.join("opencode.jsonc")).is_ok();
            let rel = if jsonc { "opencode.jsonc" } else { rel };
            return Ok((inside(workspace, rel)?, rel.to_string()));
        }
        Place::Home(rel) => (&dirs.home, rel, "home"),
        Place::Config(rel) => (&dirs.config, rel, "config"),
    };
    let Some(base) = base else {
        bail!("no {what} folder is known for this user (HOME is unset), so {} cannot be configured", agent.name())
    };
    let path = base.join(rel);
    let path = crate::platform::canonical(&path).unwrap_or(path);
    let shown = path.display().to_string();
    Ok((path, shown))
}

/// The entry's name: `ragbox` in a project file; in a user file, which all
/// the user's workspaces share, `ragbox-<folder>`, so that setting up one
/// workspace does not repoint the entry of another.
fn entry_name(agent: Agent, workspace: &Path) -> String {
    if !agent.user_level() {
        return SERVER_NAME.into();
    }
    let folder = workspace.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let folder: String =
        folder.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    let folder = folder.trim_matches('-');
    if folder.is_empty() { SERVER_NAME.into() } else { format!("{SERVER_NAME}-{folder}") }
}

/// The error for a file that is left alone, with the entry to add by hand.
fn refused(agent: Agent, path: &Path, refusal: Refusal, launch: &Launch, entry: &str) -> anyhow::Error {
    let by_hand = merge(agent, None, launch, entry).unwrap_or_default();
    let format = if agent == Agent::Codex { "TOML" } else { "JSON" };
    let why = match refusal {
        Refusal::Invalid(e) => format!("is not valid {format}: {e}\nNothing was written. Fix the file, or"),
        Refusal::Comments => "has comments, which rewriting it would lose.\nNothing was written:".to_string(),
        Refusal::NoRemote => format!("cannot name a server by URL for {}.\nNothing was written:", agent.name()),
    };
    anyhow::anyhow!("{} {why} add this entry by hand:\n{by_hand}", path.display())
}

/// The config file's new text: `existing` with the entry `name` set; the
/// very text of `existing` when that changes nothing in it.
fn merge(agent: Agent, existing: Option<&str>, launch: &Launch, name: &str) -> Result<String, Refusal> {
    if agent == Agent::Codex {
        return merge_codex(existing, launch, name).map_err(Refusal::Invalid);
    }
    let entry = entry(agent, launch)?;
    let original = match existing.filter(|t| !t.trim().is_empty()) {
        Some(text) => Some(parse_json(agent, text)?),
        None => None,
    };
    let mut root = match &original {
        Some(root) => root.clone(),
        None if agent == Agent::Opencode => json!({ "$schema": "https://opencode.ai/config.json" }),
        None => json!({}),
    };
    let Some(object) = root.as_object_mut() else {
        return Err(Refusal::Invalid("the top level is not an object".into()));
    };
    let section = agent.section();
    let servers = object.entry(section).or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return Err(Refusal::Invalid(format!("\"{section}\" is not an object")));
    };
    servers.insert(name.to_string(), entry);
    if agent == Agent::Vscode && matches!(launch, Launch::Remote { .. }) {
        add_token_input(object)?;
    }
    match (existing, original) {
        // The same settings: the user's layout and key order stay.
        (Some(text), Some(original)) if original == root => Ok(text.to_string()),
        _ => serde_json::to_string_pretty(&root).map(|s| s + "\n").map_err(|e| Refusal::Invalid(e.to_string())),
    }
}

/// The agent's entry for the server (Codex's aside).
fn entry(agent: Agent, launch: &Launch) -> Result<Value, Refusal> {
    // Each agent expands environment variables in its own syntax.
    let bearer = |token: String| json!({ "Authorization": format!("Bearer {token}") });
    Ok(match (agent, launch) {
        (Agent::Opencode, Launch::Spawn(spawn)) => {
            let mut line = vec![spawn.command(agent)];
            line.extend(spawn.args(agent));
            json!({ "type": "local", "command": line, "enabled": true })
        }
        (Agent::Claude | Agent::Vscode, Launch::Spawn(spawn)) => {
            json!({ "type": "stdio", "command": spawn.command(agent), "args": spawn.args(agent) })
        }
        (_, Launch::Spawn(spawn)) => json!({ "command": spawn.command(agent), "args": spawn.args(agent) }),
        (Agent::Claude, Launch::Remote { url }) => {
            json!({ "type": "http", "url": url, "headers": bearer(format!("${{{TOKEN_VAR}}}")) })
        }
        (Agent::Gemini, Launch::Remote { url }) => {
            json!({ "httpUrl": url, "headers": bearer(format!("${TOKEN_VAR}")) })
        }
        (Agent::Opencode, Launch::Remote { url }) => json!({
            "type": "remote", "url": url, "enabled": true, "headers": bearer(format!("{{env:{TOKEN_VAR}}}"))
        }),
        (Agent::Cursor, Launch::Remote { url }) => {
            json!({ "url": url, "headers": bearer(format!("${{env:{TOKEN_VAR}}}")) })
        }
        (Agent::Vscode, Launch::Remote { url }) => json!({
            "type": "http", "url": url, "headers": bearer(format!("${{input:{VSCODE_TOKEN_INPUT}}}"))
        }),
        (Agent::Windsurf, Launch::Remote { url }) => {
            json!({ "serverUrl": url, "headers": bearer(format!("${{env:{TOKEN_VAR}}}")) })
        }
        (Agent::ClaudeDesktop, Launch::Remote { .. }) => return Err(Refusal::NoRemote),
        (Agent::Codex | Agent::All, Launch::Remote { .. }) => unreachable!("handled before"),
    })
}

/// Adds (or replaces) the VS Code input that asks for the token.
fn add_token_input(root: &mut serde_json::Map<String, Value>) -> Result<(), Refusal> {
    let inputs = root.entry("inputs").or_insert_with(|| json!([]));
    let Some(inputs) = inputs.as_array_mut() else { return Err(Refusal::Invalid("\"inputs\" is not a list".into())) };
    let input = json!({
        "type": "promptString", "id": VSCODE_TOKEN_INPUT, "password": true,
        "description": "ragbox HTTP bearer token (the content of the server's http-token file)"
    });
    // In its place when it is there, so that a re-run changes nothing.
    match inputs.iter_mut().find(|old| old["id"] == VSCODE_TOKEN_INPUT) {
        Some(old) => *old = input,
        None => inputs.push(input),
    }
    Ok(())
}

/// The file's JSON; a JSONC file without comments is read with its trailing
/// commas, one with comments refused: rewriting it would lose them.
fn parse_json(agent: Agent, text: &str) -> Result<Value, Refusal> {
    let invalid = |e: serde_json::Error| Refusal::Invalid(e.to_string());
    if !agent.reads_jsonc() {
        return serde_json::from_str(text).map_err(invalid);
    }
    let (plain, comments) = strip_jsonc(text).map_err(Refusal::Invalid)?;
    if comments {
        return Err(Refusal::Comments);
    }
    serde_json::from_str(&plain).map_err(invalid)
}

/// `text` (JSON with comments) without its `//` and `/* */` comments and its
/// trailing commas, and whether it had comments.
fn strip_jsonc(text: &str) -> Result<(String, bool), String> {
    let mut out = String::with_capacity(text.len());
    let mut comments = false;
    // Where the last comma went in `out`, while only blanks followed it.
    let mut comma: Option<usize> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                comma = None;
                out.push(c);
                // A string is copied as it is, through its closing quote.
                while let Some(s) = chars.next() {
                    out.push(s);
                    match s {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                comments = true;
                while chars.next_if(|&c| c != '\n').is_some() {}
            }
            '/' if chars.peek() == Some(&'*') => {
                comments = true;
                chars.next();
                let mut last = ' ';
                loop {
                    match chars.next() {
                        None => return Err("a /* comment is not closed".into()),
                        Some('/') if last == '*' => break,
                        Some(c) => last = c,
                    }
                }
                out.push(' ');
            }
            ',' => {
                comma = Some(out.len());
                out.push(c);
            }
            '}' | ']' => {
                if let Some(at) = comma.take() {
                    out.remove(at);
                }
                out.push(c);
            }
            c if c.is_whitespace() => out.push(c),
            c => {
                comma = None;
                out.push(c);
            }
        }
    }
    Ok((out, comments))
}

/// Codex's `config.toml` with `[mcp_servers.<name>]` set, comments kept; the
/// very text of `existing` when that changes nothing in it.
fn merge_codex(existing: Option<&str>, launch: &Launch, name: &str) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = existing.unwrap_or("").parse().map_err(|e| format!("{e}"))?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let Some(servers) = servers.as_table_like_mut() else { return Err("mcp_servers is not a table".into()) };
    let mut entry = toml_edit::Table::new();
    match launch {
        Launch::Spawn(spawn) => {
            entry.insert("command", toml_edit::value(spawn.command(Agent::Codex)));
            let args: toml_edit::Array = spawn.args(Agent::Codex).into_iter().collect();
            entry.insert("args", toml_edit::value(args));
            // Codex's 10 s default; the first start compiles the tool components.
            entry.insert("startup_timeout_sec", toml_edit::value(60_i64));
        }
        Launch::Remote { url } => {
            entry.insert("url", toml_edit::value(url.as_str()));
            entry.insert("bearer_token_env_var", toml_edit::value(TOKEN_VAR));
        }
    }
    // Codex cuts a tool call off after 60 s by default; a first embed_workspace takes minutes.
    entry.insert("tool_timeout_sec", toml_edit::value(600_i64));
    servers.insert(name, toml_edit::Item::Table(entry));
    let text = doc.to_string();
    let same =
        |a: &str, b: &str| toml::from_str::<toml::Table>(a).is_ok_and(|a| toml::from_str(b).is_ok_and(|b| a == b));
    match existing {
        Some(old) if same(old, &text) => Ok(old.to_string()),
        _ => Ok(text),
    }
}

/// What to do next, per agent written, and what the files hold.
fn print_next_steps(edits: &[Edit], launch: &Launch) {
    let agents: Vec<Agent> = edits.iter().map(|e| e.agent).collect();
    let has = |a: Agent| agents.contains(&a);
    match launch {
        Launch::Spawn(spawn) => {
            if !spawn.on_path && agents.iter().any(|a| !a.user_level()) {
                say!(
                    "The command is this binary's path, {}: the `ragbox` on PATH is not this binary (or there is \
                     none). Put it on PATH (from a clone, `make install` copies it there) and run init again for \
                     files that work on other machines too.",
                    spawn.exe
                );
            }
            let relative: Vec<&str> = [Agent::Claude, Agent::Gemini, Agent::Opencode]
                .into_iter()
                .filter(|a| has(*a))
                .map(Agent::name)
                .collect();
            if !relative.is_empty() {
                println!(
                    "{}: the server serves `.`, the folder the agent starts in, so start the agent in this \
                     workspace's root (Claude Code and OpenCode also read their file from a subfolder, and would \
                     then serve only that).",
                    relative.join(", ")
                );
            }
            if has(Agent::Codex) {
                say!(
                    "Codex's entry names this workspace by its path here, {}: Codex does not start servers in \
                     the project folder. On another machine, run `ragbox init --agent codex` again.",
                    spawn.workspace.display()
                );
            }
        }
        Launch::Remote { url } => say!(
            "The agents connect to {url}. Before starting them, give them the server's token:\n  \
             export {TOKEN_VAR}=$(cat {})\n\
             (the server's token file: this one unless it was started with --token-file).",
            crate::config::user_config_dir()
                .map_or_else(|| "~/.config/ragbox/http-token".into(), |d| d.join(TOKEN_FILE).display().to_string())
        ),
    }
    for agent in agents {
        println!("- {}", next_step(agent, launch));
    }
    if matches!(launch, Launch::Spawn(_)) && !edits.is_empty() {
        println!(
            "Then run `ragbox index` to embed the workspace before the first search (the first embed can \
             take minutes); else the agent's first `embed_workspace` call does it. The servers run with \
             --watch, so the index follows every change after that."
        );
    }
}

/// What `agent` needs before its first use of the server.
fn next_step(agent: Agent, launch: &Launch) -> String {
    let remote = matches!(launch, Launch::Remote { .. });
    match agent {
        Agent::Claude => "Claude Code asks you to approve the project's servers from .mcp.json when it starts; \
                          `claude mcp list` shows them."
            .into(),
        Agent::Gemini => "Gemini CLI starts it with its next session; `/mcp` lists it.".into(),
        Agent::Opencode => "OpenCode starts it with its next session.".into(),
        Agent::Codex => format!(
            "Codex reads .codex/config.toml only in a trusted project: trust this folder when Codex asks. The \
             entry sets tool_timeout_sec = 600, so that a first embed_workspace is not cut off at Codex's 60 s{}.",
            if remote { "" } else { ", and startup_timeout_sec = 60 for a first start, which compiles the tools" }
        ),
        Agent::Cursor => "Cursor: enable the server in Cursor Settings → MCP (Tools & MCP).".into(),
        Agent::Vscode if remote => "VS Code: start it from `MCP: List Servers` or the Chat view's tools picker; it \
                                    asks once for the token (the token file's content) and keeps it."
            .into(),
        Agent::Vscode => "VS Code: start it from `MCP: List Servers` or the Chat view's tools picker.".into(),
        Agent::Windsurf if remote => format!(
            "Windsurf: refresh the servers in Cascade's MCP settings, or restart Windsurf; it reads {TOKEN_VAR} \
             from the environment it was started in."
        ),
        Agent::Windsurf => "Windsurf: refresh the servers in Cascade's MCP settings, or restart Windsurf.".into(),
        Agent::ClaudeDesktop => "Claude Desktop: quit and restart the app to load the server.".into(),
        Agent::All => String::new(),
    }
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
        let target = crate::platform::canonical(&next).map_err(|_| {
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

    fn spawn() -> Launch {
        Launch::Spawn(Spawn {
            exe: "/opt/bin/ragbox".into(),
            on_path: true,
            workspace: PathBuf::from("/w"),
            store: Vec::new(),
            tools: None,
        })
    }

    fn remote() -> Launch {
        Launch::Remote { url: "http://127.0.0.1:8765/mcp".into() }
    }

    #[test]
    fn every_file_init_writes_in_a_workspace_is_one_the_walk_never_lists() {
        let mut written: Vec<&str> = Agent::PROJECT
            .into_iter()
            .map(|a| match a.place() {
                Place::Workspace(rel) => rel,
                _ => panic!("{a:?} writes outside the workspace"),
            })
            .collect();
        written.push("opencode.jsonc");
        written.sort_unstable();
        let mut skipped = ragbox_protocol::walk::AGENT_CONFIG_FILES.to_vec();
        skipped.sort_unstable();
        assert_eq!(written, skipped);
    }

    /// `agent`'s new file, parsed.
    fn fresh(agent: Agent, launch: &Launch) -> Value {
        serde_json::from_str(&merge(agent, None, launch, "ragbox").unwrap()).unwrap()
    }

    /// A workspace and a home folder, both temporary.
    struct Folders {
        _root: tempfile::TempDir,
        ws: PathBuf,
        dirs: UserDirs,
    }

    fn folders() -> Folders {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("my project");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let dirs = UserDirs { home: Some(root.path().join("home")), config: Some(root.path().join("home/.config")) };
        Folders { _root: root, ws, dirs }
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
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

    #[test]
    fn remote_entries_name_the_url_and_the_token_variable_only() {
        let entry = |agent| fresh(agent, &remote())[agent.section()]["ragbox"].clone();
        let url = "http://127.0.0.1:8765/mcp";
        assert_eq!(
            entry(Agent::Claude),
            json!({"type": "http", "url": url, "headers": {"Authorization": "Bearer ${RAGBOX_TOKEN}"}})
        );
        assert_eq!(entry(Agent::Gemini), json!({"httpUrl": url, "headers": {"Authorization": "Bearer $RAGBOX_TOKEN"}}));
        assert_eq!(
            entry(Agent::Opencode),
            json!({"type": "remote", "url": url, "enabled": true,
                   "headers": {"Authorization": "Bearer {env:RAGBOX_TOKEN}"}})
        );
        assert_eq!(
            entry(Agent::Cursor),
            json!({"url": url, "headers": {"Authorization": "Bearer ${env:RAGBOX_TOKEN}"}})
        );
        assert_eq!(
            entry(Agent::Windsurf),
            json!({"serverUrl": url, "headers": {"Authorization": "Bearer ${env:RAGBOX_TOKEN}"}})
        );
        // VS Code asks for the token through an input it keeps secret.
        let vscode = fresh(Agent::Vscode, &remote());
        assert_eq!(
            vscode["servers"]["ragbox"],
            json!({"type": "http", "url": url, "headers": {"Authorization": "Bearer ${input:ragbox-token}"}})
        );
        assert_eq!(
            (&vscode["inputs"][0]["id"], &vscode["inputs"][0]["password"]),
            (&json!("ragbox-token"), &json!(true))
        );
        let again = serde_json::to_string(&vscode).unwrap();
        assert_eq!(merge(Agent::Vscode, Some(&again), &remote(), "ragbox").unwrap(), again, "one input, kept");
        assert!(matches!(merge(Agent::ClaudeDesktop, None, &remote(), "ragbox"), Err(Refusal::NoRemote)));
        let parsed: toml::Table = toml::from_str(&merge_codex(None, &remote(), "ragbox").unwrap()).unwrap();
        assert_eq!(parsed["mcp_servers"]["ragbox"]["url"].as_str(), Some(url));
        assert_eq!(parsed["mcp_servers"]["ragbox"]["bearer_token_env_var"].as_str(), Some("RAGBOX_TOKEN"));
        assert!(checked_url("127.0.0.1:8765").is_err());
        assert!(checked_url("http://").is_err());
        assert_eq!(checked_url(" http://localhost:1/mcp ").unwrap(), "http://localhost:1/mcp");
    }

    #[test]
    fn the_new_agents_files_have_their_shape() {
        let cursor = fresh(Agent::Cursor, &spawn());
        assert_eq!(
            cursor["mcpServers"]["ragbox"],
            json!({"command": "ragbox", "args": ["serve", "--workspace", "${workspaceFolder}", "--watch"]})
        );
        let vscode = fresh(Agent::Vscode, &spawn());
        assert_eq!(
            vscode.as_object().map(|o| o.keys().map(String::as_str).collect::<Vec<_>>()),
            Some(vec!["servers"]),
            "{vscode}"
        );
        assert_eq!(
            vscode["servers"]["ragbox"],
            json!({"type": "stdio", "command": "ragbox", "args": ["serve", "--workspace", "${workspaceFolder}", "--watch"]})
        );
        // User files: the binary's path (a desktop app has no shell PATH) and the workspace's.
        for agent in [Agent::Windsurf, Agent::ClaudeDesktop] {
            assert_eq!(
                fresh(agent, &spawn())["mcpServers"]["ragbox"],
                json!({"command": "/opt/bin/ragbox", "args": ["serve", "--workspace", "/w", "--watch"]}),
                "{agent:?}"
            );
        }
    }

    #[test]
    fn json_configs_keep_other_servers_and_settings() {
        let existing = r#"{"theme": "dark", "mcpServers": {"other": {"command": "x"}}}"#;
        let merged = merge(Agent::Gemini, Some(existing), &spawn(), "ragbox").unwrap();
        let out: Value = serde_json::from_str(&merged).unwrap();
        assert_eq!(out["theme"], "dark");
        assert_eq!(out["mcpServers"]["other"]["command"], "x");
        assert_eq!(out["mcpServers"]["ragbox"]["args"], json!(["serve", "--workspace", ".", "--watch"]));
        assert_eq!(
            fresh(Agent::Opencode, &spawn())["mcp"]["ragbox"],
            json!({"type": "local", "command": ["ragbox", "serve", "--workspace", ".", "--watch"], "enabled": true})
        );
        let invalid = |agent, text| matches!(merge(agent, Some(text), &spawn(), "ragbox"), Err(Refusal::Invalid(_)));
        assert!(invalid(Agent::Claude, "{ not json"));
        assert!(invalid(Agent::Claude, "[1]"));
        assert!(invalid(Agent::Claude, r#"{"mcpServers": 3}"#));
        assert!(
            merge(Agent::Vscode, Some(r#"{"inputs": 1}"#), &spawn(), "ragbox").is_ok(),
            "only --http adds an input"
        );
        assert!(matches!(
            merge(Agent::Vscode, Some(r#"{"inputs": 1}"#), &remote(), "ragbox"),
            Err(Refusal::Invalid(_))
        ));
        // Claude Code reads strict JSON: a comment there is an error, not JSONC.
        assert!(invalid(Agent::Claude, "{ // c\n }"));
    }

    #[test]
    fn codex_toml_keeps_comments_and_other_tables_and_sets_timeouts() {
        let existing = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
        let out = merge_codex(Some(existing), &spawn(), "ragbox").unwrap();
        assert!(out.starts_with("# my settings\nmodel = \"o3\"\n"), "{out}");
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        let ragbox = &parsed["mcp_servers"]["ragbox"];
        assert_eq!(parsed["mcp_servers"]["docs"]["command"].as_str(), Some("docs-mcp"));
        assert_eq!(ragbox["command"].as_str(), Some("ragbox"));
        let args: Vec<&str> = ragbox["args"].as_array().unwrap().iter().filter_map(|a| a.as_str()).collect();
        assert_eq!(args, ["serve", "--workspace", "/w", "--watch"], "Codex keeps the absolute path");
        assert_eq!(ragbox["tool_timeout_sec"].as_integer(), Some(600));
        assert_eq!(ragbox["startup_timeout_sec"].as_integer(), Some(60));
        assert!(merge_codex(Some("mcp_servers = 1"), &spawn(), "ragbox").is_err());
        assert!(merge_codex(Some("[broken"), &spawn(), "ragbox").is_err());
    }

    #[test]
    fn project_files_hold_no_path_of_this_machine_but_codex() {
        let f = folders();
        assert!(run_in(&f.ws, &[Agent::All], &How::default(), &f.dirs).unwrap() >= 7, "six configs and .gitignore");
        let ws = f.ws.display().to_string();
        for file in [".mcp.json", ".gemini/settings.json", "opencode.json", ".cursor/mcp.json", ".vscode/mcp.json"] {
            let text = read(&f.ws.join(file));
            assert!(!text.contains(&ws), "{file} names {ws}: {text}");
            assert!(text.contains("\"--watch\""), "{file}: {text}");
        }
        let claude: Value = serde_json::from_str(&read(&f.ws.join(".mcp.json"))).unwrap();
        assert_eq!(claude["mcpServers"]["ragbox"]["args"], json!(["serve", "--workspace", ".", "--watch"]));
        let vscode: Value = serde_json::from_str(&read(&f.ws.join(".vscode/mcp.json"))).unwrap();
        assert_eq!(vscode["servers"]["ragbox"]["args"][2], "${workspaceFolder}");
        let codex: toml::Table = toml::from_str(&read(&f.ws.join(".codex/config.toml"))).unwrap();
        assert_eq!(codex["mcp_servers"]["ragbox"]["args"][2].as_str(), Some(ws.as_str()));
        assert!(!f.dirs.home.as_ref().unwrap().exists(), "`all` writes no user file");
    }

    #[test]
    fn a_rerun_that_changes_nothing_writes_nothing() {
        let f = folders();
        let agents = [Agent::Claude, Agent::Codex, Agent::Vscode];
        assert_eq!(run_in(&f.ws, &agents, &How::default(), &f.dirs).unwrap(), 4);
        let before = read(&f.ws.join(".codex/config.toml"));
        assert_eq!(run_in(&f.ws, &agents, &How::default(), &f.dirs).unwrap(), 0);
        assert_eq!(read(&f.ws.join(".codex/config.toml")), before);
        // The same settings in the user's own layout and key order are left as they are.
        let mine = "{\"mcpServers\":{\"ragbox\":{\"args\":[\"serve\",\"--workspace\",\".\",\"--watch\"],\
                    \"command\":\"ragbox\",\"type\":\"stdio\"}}}";
        assert_eq!(merge(Agent::Claude, Some(mine), &spawn(), "ragbox").unwrap(), mine);
        // A changed entry is written.
        std::fs::write(f.ws.join(".mcp.json"), r#"{"mcpServers": {"ragbox": {"command": "old"}}}"#).unwrap();
        assert_eq!(run_in(&f.ws, &[Agent::Claude], &How::default(), &f.dirs).unwrap(), 1);
        assert!(!read(&f.ws.join(".mcp.json")).contains("old"));
    }

    #[test]
    fn jsonc_loses_its_trailing_commas_and_never_its_comments() {
        let (plain, comments) = strip_jsonc("{\"url\": \"https://x//y/*z*/\", \"a\": [1, 2, ], }").unwrap();
        assert!(!comments);
        assert_eq!(serde_json::from_str::<Value>(&plain).unwrap(), json!({"url": "https://x//y/*z*/", "a": [1, 2]}));
        let (plain, comments) = strip_jsonc("{ // one\n \"a\": \"\\\"\", /* two, */ }").unwrap();
        assert!(comments);
        assert_eq!(serde_json::from_str::<Value>(&plain).unwrap(), json!({"a": "\""}));
        assert!(strip_jsonc("{ /* open").is_err());

        // opencode.jsonc is edited, not shadowed by a new opencode.json.
        let f = folders();
        let jsonc = f.ws.join("opencode.jsonc");
        std::fs::write(
            &jsonc,
            "{\n  \"model\": \"anthropic/claude\",\n  \"mcp\": {\"fs\": {\"type\": \"local\"},},\n}\n",
        )
        .unwrap();
        run_in(&f.ws, &[Agent::Opencode], &How::default(), &f.dirs).unwrap();
        assert!(!f.ws.join("opencode.json").exists());
        let out: Value = serde_json::from_str(&read(&jsonc)).unwrap();
        assert_eq!((&out["model"], &out["mcp"]["fs"]["type"]), (&json!("anthropic/claude"), &json!("local")));
        assert_eq!(out["mcp"]["ragbox"]["type"], "local");
        assert_eq!(out["mcp"]["ragbox"]["command"][3], ".");

        // One with comments is left alone, and the entry shown.
        let commented = "{\n  // my model\n  \"model\": \"x\"\n}\n";
        std::fs::write(&jsonc, commented).unwrap();
        let err = run_in(&f.ws, &[Agent::Opencode], &How::default(), &f.dirs).unwrap_err().to_string();
        assert!(err.contains("opencode.jsonc has comments") && err.contains("add this entry by hand"), "{err}");
        assert!(err.contains("\"mcp\""), "shows the entry: {err}");
        assert_eq!(read(&jsonc), commented);
        assert!(!f.ws.join("opencode.json").exists());
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
            assert_eq!((mode("old.json"), read(&path).as_str()), (old, "{\"a\": 1}\n"));
        }
    }

    #[test]
    fn user_files_are_written_when_named_and_only_under_the_user_folders() {
        let f = folders();
        let home = f.dirs.home.clone().unwrap();
        let windsurf = home.join(".codeium/windsurf/mcp_config.json");
        let desktop = home.join(".config/Claude/claude_desktop_config.json");
        std::fs::create_dir_all(windsurf.parent().unwrap()).unwrap();
        std::fs::write(&windsurf, r#"{"mcpServers": {"github": {"serverUrl": "https://example.com"}}}"#).unwrap();
        run_in(&f.ws, &[Agent::Windsurf, Agent::ClaudeDesktop], &How::default(), &f.dirs).unwrap();
        let ws = f.ws.display().to_string();
        for file in [&windsurf, &desktop] {
            let out: Value = serde_json::from_str(&read(file)).unwrap();
            // Named after the folder ("my project"), so other workspaces' entries stay.
            assert_eq!(out["mcpServers"]["ragbox-my-project"]["args"], json!(["serve", "--workspace", ws, "--watch"]));
        }
        let out: Value = serde_json::from_str(&read(&windsurf)).unwrap();
        assert_eq!(out["mcpServers"]["github"]["serverUrl"], "https://example.com");
        assert!(!f.ws.join(".mcp.json").exists(), "only the agents named");
        // Claude Desktop cannot take a URL: skipped, its file untouched.
        let before = read(&desktop);
        run_in(
            &f.ws,
            &[Agent::ClaudeDesktop, Agent::Windsurf],
            &How { http: Some("http://127.0.0.1:8765/mcp".into()), tools: None, store: Default::default() },
            &f.dirs,
        )
        .unwrap();
        assert_eq!(read(&desktop), before);
        let out: Value = serde_json::from_str(&read(&windsurf)).unwrap();
        assert_eq!(out["mcpServers"]["ragbox-my-project"]["serverUrl"], "http://127.0.0.1:8765/mcp");
        assert_eq!(entry_name(Agent::Claude, &f.ws), "ragbox");
    }

    #[test]
    fn all_means_the_project_agents_and_detection_finds_cursor_and_vscode() {
        let f = folders();
        assert_eq!(choose(&f.ws, &[Agent::All, Agent::Windsurf]).len(), 7);
        assert!(!choose(&f.ws, &[Agent::All]).contains(&Agent::ClaudeDesktop));
        assert_eq!(choose(&f.ws, &[]), [Agent::Claude]);
        std::fs::create_dir_all(f.ws.join(".cursor")).unwrap();
        std::fs::create_dir_all(f.ws.join(".vscode")).unwrap();
        assert_eq!(choose(&f.ws, &[]), [Agent::Cursor, Agent::Vscode]);
    }
}
