//! `ragbox tools`: what is loaded, from where, with which grants;
//! `ragbox tools inspect FILE`: what a component is and what it would get;
//! `ragbox tools trust FILE`: pin its bytes in the user's own config;
//! `ragbox tools call NAME JSON`: run one tool once, as under `serve`.

use super::calls;
use crate::builtins;
use crate::config::{CONFIG_FILE, Config, DATA_DIR, Grants, Origin, user_config_dir};
use crate::corpus::Options;
use crate::runtime::{
    Catalog, CompileCache, History, Loaded, LoadedTool, Source, describe_limits, load_component, new_engine,
    read_component,
};
use crate::setup::{StoreArgs, open};
use anyhow::Context;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Instant;

/// The grants as `ragbox tools` names them.
fn grant_names(grants: &Grants) -> Vec<String> {
    let mut names = vec!["workspace:read".to_string(), "index:read".to_string()];
    if grants.corpus_write {
        names.push("corpus-write".into());
    }
    names.extend(grants.read_dirs.iter().map(|d| format!("read:{}", d.display())));
    names
}

/// Prints the loaded and rejected components.
pub fn run(workspace: &Path, as_json: bool) -> anyhow::Result<()> {
    let setup = open(workspace, &StoreArgs::default(), Options::default())?.setup();
    let catalog = &setup.catalog;
    if as_json {
        let tools: Vec<_> = catalog
            .tools()
            .iter()
            .map(|t| {
                json!({"name": t.name(), "source": t.source.to_string(), "sha256": t.sha256,
                       "grants": grant_names(&setup.grants(t))})
            })
            .collect();
        let extractors: Vec<_> = catalog
            .extractors()
            .loaded()
            .iter()
            .map(|x| json!({"name": x.name(), "formats": x.formats(), "source": x.source.to_string(), "sha256": x.sha256}))
            .collect();
        let rejected: Vec<_> =
            catalog.rejected().iter().map(|r| json!({"source": r.source.to_string(), "reason": r.reason})).collect();
        let all = json!({"tools": tools, "extractors": extractors, "rejected": rejected});
        return super::print_json(&all);
    }
    let width = catalog.tools().iter().map(|t| t.name().len()).max().unwrap_or(4).max(4);
    say!("{:width$}  {:64}  {:40}  SOURCE", "NAME", "SHA256", "GRANTS");
    for t in catalog.tools() {
        say!("{:width$}  {:64}  {:40}  {}", t.name(), t.sha256, grant_names(&setup.grants(t)).join(","), t.source);
    }
    for x in catalog.extractors().loaded() {
        let formats = x.formats().iter().map(|f| format!(".{f}")).collect::<Vec<_>>().join(" ");
        say!("extractor {} ({}) reads {formats}: {}", x.name(), x.sha256, x.source);
    }
    for r in catalog.rejected() {
        say!("rejected: {}: {}", r.source, r.reason);
    }
    Ok(())
}

/// Shows a component file's imports, exports, description and schemas, and
/// what `workspace` would make of it: loaded or refused (and why), its grants
/// and limits, and the pin to add.
pub fn inspect(file: &Path, workspace: &Path, as_json: bool) -> anyhow::Result<()> {
    let bytes = read_component(file)?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let engine = new_engine()?;
    let cache = CompileCache::new(&engine, CompileCache::default_dir());
    let name = file.display().to_string();
    let component =
        cache.load(&engine, &bytes, &sha256, &name).with_context(|| format!("{name} is not a component"))?;
    let ty = component.component_type();
    let imports: Vec<String> = ty.imports(&engine).map(|(n, _)| n.to_string()).collect();
    let exports: Vec<String> = ty.exports(&engine).map(|(n, _)| n.to_string()).collect();

    // What a start costs: compiling the bytes (a first load, or a new
    // ragbox), and a start from the compile cache (load, instantiate, describe).
    let started = Instant::now();
    // It compiled once already (the cache's load above), so this cannot fail.
    let _ = wasmtime::component::Component::new(&engine, &bytes);
    let compile_ms = started.elapsed().as_secs_f64() * 1e3;
    let setup = open(workspace, &StoreArgs::default(), Options::default())?.setup();
    let started = Instant::now();
    let tool = describe(&engine, &cache, file, &bytes, &sha256)
        .map_err(|e| anyhow::anyhow!("{e}\n(imports: {})", imports.join(", ")))?;
    let start_ms = started.elapsed().as_secs_f64() * 1e3;
    let info = &tool.info;
    // As the file stands: in the user's tools folder it is the user's own;
    // anywhere else it is judged as a workspace's component would be.
    let user_tools = user_config_dir().map(|d| d.join("tools"));
    let origin = match (crate::platform::canonical(file), user_tools.and_then(|d| crate::platform::canonical(&d).ok()))
    {
        (Ok(f), Some(d)) if f.starts_with(&d) => Origin::User,
        _ => Origin::Workspace,
    };
    let admit = |tool: &str, sha256: &str, origin| setup.config.admits(tool, sha256, origin);
    let verdict = setup.catalog.verdict(&tool, origin, &admit);
    let grants = setup.grants(&tool);
    let call_limits = setup.limits(&tool);
    let narrowed = setup.config.narrowed_by_workspace(tool.name(), tool.indexing(), &tool.default_grants());
    // What these bytes cost as they were called (by any agent, or `tools call`), oldest first.
    let calls = History::new(History::default_dir()).last(tool.name(), &sha256);
    let mut ms: Vec<f64> = calls.iter().map(|c| c.ms).collect();
    ms.sort_by(f64::total_cmp);
    let p50 = ms.get(ms.len() / 2).copied();
    let schema = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::String(s.to_string()));
    let a = &info.annotations;
    let report = json!({
        "file": name,
        "sha256": sha256,
        "bytes": bytes.len(),
        "imports": imports,
        "exports": exports,
        "tool": {
            "name": info.name,
            "title": info.title,
            "description": info.description,
            "input_schema": schema(&info.input_schema),
            "output_schema": info.output_schema.as_deref().map(schema),
            "annotations": { "read_only": a.read_only, "destructive": a.destructive,
                             "idempotent": a.idempotent, "open_world": a.open_world },
        },
        "workspace": setup.workspaces.served().display().to_string(),
        "would_load": verdict.is_ok(),
        "refused_because": verdict.as_ref().err(),
        "grants": grant_names(&grants),
        "limits": {
            "timeout_secs": call_limits.timeout.as_secs(),
            "memory_mib": call_limits.memory_bytes >> 20,
            "max_output_mib": call_limits.max_output_bytes >> 20,
        },
        "narrowed_by_workspace": narrowed,
        "last_calls": calls,
        "last_calls_ms": { "count": ms.len(), "p50": p50, "max": ms.last() },
        "pin": format!("[tools.{}]\nsha256 = \"{sha256}\"", info.name),
        "timings_ms": {
            "compile": (compile_ms * 10.0).round() / 10.0,
            "cached_start": (start_ms * 10.0).round() / 10.0,
        },
    });
    if as_json {
        return super::print_json(&report);
    }
    say!("component   {name} ({} bytes)", bytes.len());
    say!("sha256      {sha256}");
    say!("tool        {}{}", info.name, info.title.as_deref().map(|t| format!(" — {t}")).unwrap_or_default());
    say!("description {}", info.description);
    let flags: Vec<&str> = [
        (a.read_only, "read-only"),
        (a.destructive, "destructive"),
        (a.idempotent, "idempotent"),
        (a.open_world, "open-world"),
    ]
    .into_iter()
    .filter_map(|(on, n)| on.then_some(n))
    .collect();
    say!("annotations {}", if flags.is_empty() { "none".to_string() } else { flags.join(", ") });
    say!("imports     {}", imports.join("\n            "));
    say!("exports     {}", exports.join(", "));
    say!(
        "start       compiled in {compile_ms:.0} ms (first load, once per version); from the cache, loaded, instantiated and described in {start_ms:.1} ms"
    );
    say!("input       {}", report["tool"]["input_schema"]);
    if let Some(out) = report["tool"]["output_schema"].as_object() {
        say!("output      {}", Value::Object(out.clone()));
    }
    say!();
    say!("in {}:", report["workspace"].as_str().unwrap_or_default());
    match &verdict {
        Ok(()) => say!("  would load, granted {}", grant_names(&grants).join(", ")),
        Err(reason) => say!("  would be refused: {reason}"),
    }
    say!(
        "  limits: {} s, {} MiB memory, {} MiB output",
        call_limits.timeout.as_secs(),
        call_limits.memory_bytes >> 20,
        call_limits.max_output_bytes >> 20
    );
    match (p50, ms.last()) {
        (Some(p50), Some(max)) => say!(
            "  its last {} calls: {p50:.1} ms p50, {max:.1} ms at most (last: {})",
            ms.len(),
            calls.last().map_or("", |c| c.outcome.as_str())
        ),
        _ => say!("  no calls of these bytes yet (`ragbox tools call` or an agent's calls are kept)"),
    }
    for change in &narrowed {
        say!("  warning: this workspace's {DATA_DIR}/{CONFIG_FILE} narrows it: {change}");
    }
    say!(
        "  to use it, copy it into your tools folder, or into {}/{DATA_DIR}/tools/ and trust its bytes \
         with `ragbox tools trust {}`, which adds to your config:",
        report["workspace"].as_str().unwrap_or_default(),
        file.display()
    );
    for line in report["pin"].as_str().unwrap_or_default().lines() {
        say!("    {line}");
    }
    Ok(())
}

/// Loads `file` far enough to ask its tool name (`describe()`, in a sandbox).
fn describe(
    engine: &wasmtime::Engine,
    cache: &CompileCache,
    file: &Path,
    bytes: &[u8],
    sha256: &str,
) -> Result<LoadedTool, String> {
    let source = Source::File(file.to_path_buf());
    match load_component(engine, cache, source.clone(), bytes, sha256, &describe_limits())? {
        Loaded::Tool(tool) => Ok(tool),
        Loaded::Extractor(_) => Err(format!("{source} is an extractor component, not a tool")),
    }
}

/// The built-in components, described (from the compile cache where it is warm).
fn shipped(engine: &wasmtime::Engine, cache: &CompileCache) -> Catalog {
    Catalog::load(engine, cache, &builtins::components(), Vec::new(), &describe_limits(), &|_, _, _| Ok(()), &|_| true)
}

/// Refuses a built-in's name for a new tool (`ragbox tools new`): it could never load.
pub fn refuse_builtin_name(name: &str) -> anyhow::Result<()> {
    let engine = new_engine()?;
    let cache = CompileCache::new(&engine, CompileCache::default_dir());
    if shipped(&engine, &cache).is_builtin_name(name) {
        anyhow::bail!("'{name}' is a built-in tool's name, and built-ins are never replaced: pick another name");
    }
    Ok(())
}

/// Records `file`'s sha256 under its tool name in the user's config. Grants
/// belong to the bytes they were given to: a name that is already another
/// component's (a built-in; a tool in the user's tools folder; one that
/// `[tools.NAME]` pins other bytes for or gives grants) is refused, since
/// these bytes would take its place and what it was given. With `replace`,
/// the pin is written after every such thing is printed.
pub fn trust(file: &Path, replace: bool) -> anyhow::Result<()> {
    let bytes = read_component(file)?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let engine = new_engine()?;
    let cache = CompileCache::new(&engine, CompileCache::default_dir());
    let loaded = load_component(&engine, &cache, Source::File(file.to_path_buf()), &bytes, &sha256, &describe_limits())
        .map_err(anyhow::Error::msg)?;
    let shipped = shipped(&engine, &cache);
    let (name, what) = match &loaded {
        Loaded::Tool(tool) => {
            // Pinned or not, a built-in's name is never another component's.
            if let Err(reason) = shipped.verdict(tool, Origin::User, &|_, _, _| Ok(())) {
                anyhow::bail!("{}: {reason}", file.display());
            }
            (tool.name().to_string(), "tool")
        }
        Loaded::Extractor(extractor) => {
            // Its pin lives under [tools.NAME]: a built-in's name would disable or pin that built-in too.
            if shipped.is_builtin_name(extractor.name()) {
                anyhow::bail!("{}: '{}' is a built-in tool's name; rename the file", file.display(), extractor.name());
            }
            (extractor.name().to_string(), "extractor")
        }
    };
    let config = Config::user_only().context("cannot read your config")?;
    let given = config.user_tool(&name).cloned().unwrap_or_default();
    if given.sha256.as_deref() == Some(sha256.as_str()) {
        say!("{what} '{name}' ({sha256}) is trusted already");
        return Ok(());
    }
    let taken = taken(&engine, &cache, &name, &sha256, &given);
    if !taken.is_empty() && !replace {
        anyhow::bail!(
            "{}: it calls itself '{name}', and that name is already {}. Trusting it would give these bytes that \
             component's place and everything granted to '{name}'. Rename the component, or, if it is meant to \
             replace that one, run `ragbox tools trust --replace {}` (which prints what it takes over)",
            file.display(),
            taken.join("; "),
            file.display()
        );
    }
    for line in &taken {
        say!("'{name}' replaces what is {line}");
    }
    if let Some(limits) = configured_limits(&given) {
        say!("'{name}' runs under {limits} ([tools.{name}] in your config)");
    }
    let dir = user_config_dir().context("no config dir for this user: set RAGBOX_CONFIG_DIR")?;
    let path = dir.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut =
        text.parse().with_context(|| format!("{} is not valid TOML; fix it first", path.display()))?;
    let tools = doc.entry("tools").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let table = tools
        .as_table_mut()
        .context("`tools` in your config is not a table")?
        .entry(&name)
        .or_insert_with(toml_edit::table)
        .as_table_mut()
        .with_context(|| format!("[tools.{name}] in your config is not a table"))?;
    table.insert("sha256", toml_edit::value(&sha256));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(&path, doc.to_string()).with_context(|| format!("cannot write {}", path.display()))?;
    say!("trusted {what} '{name}' ({sha256}) in {}", path.display());
    if taken.is_empty() {
        say!(
            "it loads from a workspace's {DATA_DIR}/tools/ while its bytes stay these; grants are still yours to give"
        );
    }
    Ok(())
}

/// Whose `name` is, besides the component with bytes `sha256`: a tool in
/// the user's tools folder, and what `[tools.NAME]` (`given`) pins or grants.
fn taken(
    engine: &wasmtime::Engine,
    cache: &CompileCache,
    name: &str,
    sha256: &str,
    given: &crate::config::ToolOverrides,
) -> Vec<String> {
    let mut taken = Vec::new();
    for path in user_config_dir().map(|d| crate::runtime::wasm_files(&d.join("tools"))).unwrap_or_default() {
        let Ok(bytes) = read_component(&path) else { continue };
        let theirs = hex::encode(Sha256::digest(&bytes));
        if theirs == sha256 {
            continue; // these very bytes, copied there
        }
        // A tool's name or an extractor's: both are keys of `[tools.NAME]`.
        match load_component(engine, cache, Source::File(path.clone()), &bytes, &theirs, &describe_limits()) {
            Ok(Loaded::Tool(tool)) if tool.name() == name => {
                taken.push(format!("the name of your tool {}", path.display()));
            }
            Ok(Loaded::Extractor(extractor)) if extractor.name() == name => {
                taken.push(format!("the name of your extractor {}", path.display()));
            }
            _ => {}
        }
    }
    if let Some(pin) = &given.sha256 {
        taken.push(format!("pinned to other bytes ({pin}) by [tools.{name}] sha256 in your config"));
    }
    if let Some(grants) = given.grants.as_ref().filter(|g| !g.is_empty()) {
        let names: Vec<&str> = grants.iter().map(|g| g.name()).collect();
        taken.push(format!("granted {} by [tools.{name}] grants in your config", names.join(", ")));
    }
    if !given.read_dirs.is_empty() {
        let dirs: Vec<String> = given.read_dirs.iter().map(|d| d.display().to_string()).collect();
        taken.push(format!("allowed to read {} by [tools.{name}] read_dirs in your config", dirs.join(", ")));
    }
    taken
}

/// The limits `[tools.NAME]` (`given`) sets, which the trusted bytes run under too.
fn configured_limits(given: &crate::config::ToolOverrides) -> Option<String> {
    let limits: Vec<String> = [
        given.timeout_secs.map(|s| format!("timeout_secs = {s}")),
        given.memory_mib.map(|m| format!("memory_mib = {m}")),
        given.max_output_mib.map(|m| format!("max_output_mib = {m}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!limits.is_empty()).then(|| limits.join(", "))
}

/// Runs the tool `name` once in `workspace` on `arguments` (a JSON object;
/// `-` reads it from stdin; none is `{}`) and prints its result as JSON. A
/// tool error is this command's error, in the tool's own words.
pub fn call(workspace: &Path, name: &str, arguments: Option<&str>, store: &StoreArgs) -> anyhow::Result<()> {
    let text = match arguments {
        Some("-") => std::io::read_to_string(std::io::stdin()).context("cannot read the arguments from stdin")?,
        Some(text) => text.to_string(),
        None => "{}".to_string(),
    };
    let arguments: Value = serde_json::from_str(&text).with_context(|| {
        format!("the arguments are not JSON: give one object, e.g. '{{\"query\": \"tar\"}}' (got {})", shown(&text))
    })?;
    if !arguments.is_object() {
        anyhow::bail!("the arguments must be a JSON object, e.g. '{{\"query\": \"tar\"}}' (got {})", shown(&text));
    }
    let runner = open(workspace, store, Options::default())?;
    let body = match calls::call(&runner, name, arguments, crate::runtime::Request::default())? {
        crate::runtime::Outcome::Ok(json) => json,
        crate::runtime::Outcome::ToolError { body, .. } => {
            anyhow::bail!("tool '{name}' answered with an error: {}", ragbox_protocol::describe_error(&body))
        }
        crate::runtime::Outcome::Failed(failure) => anyhow::bail!("{failure}"),
    };
    // A tool's result is JSON text (checked by the host); printed as it came when it is not.
    match serde_json::from_str::<Value>(&body) {
        Ok(value) => super::print_json(&value)?,
        Err(_) => println!("{body}"),
    }
    Ok(())
}

/// The start of a command-line argument, for an error message.
fn shown(text: &str) -> String {
    let first: String = text.chars().take(60).collect();
    if first.len() < text.len() { format!("{first:?}…") } else { format!("{first:?}") }
}
