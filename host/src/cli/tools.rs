//! `ragbox tools`: what is loaded, from where, with which grants; and
//! `ragbox tools inspect FILE`: what a component is and what it would get.

use super::open::{Opened, open};
use crate::config::{DATA_DIR, Grants};
use crate::runtime::{CompileCache, LoadedTool, Source, load_one, new_engine, read_component};
use anyhow::Context;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

/// The grants as `ragbox tools` names them.
fn grant_names(grants: &Grants) -> Vec<String> {
    let mut names = vec!["workspace:read".to_string(), "index:read".to_string()];
    if grants.corpus_write {
        names.push("corpus-write".into());
    }
    names.extend(grants.read_dirs.iter().map(|d| format!("read:{}", d.display())));
    names
}

fn grants_of(opened: &Opened, tool: &LoadedTool) -> Grants {
    opened.config.grants_for(tool.name(), tool.default_grants())
}

/// Prints the loaded and rejected components.
pub fn run(workspace: &Path, as_json: bool) -> anyhow::Result<()> {
    let opened = open(workspace)?;
    let catalog = &opened.catalog;
    if as_json {
        let tools: Vec<_> = catalog
            .tools()
            .iter()
            .map(|t| {
                json!({"name": t.name(), "source": t.source.to_string(), "sha256": t.sha256,
                       "grants": grant_names(&grants_of(&opened, t))})
            })
            .collect();
        let rejected: Vec<_> =
            catalog.rejected().iter().map(|r| json!({"source": r.source.to_string(), "reason": r.reason})).collect();
        println!("{}", serde_json::to_string_pretty(&json!({"tools": tools, "rejected": rejected}))?);
        return Ok(());
    }
    let width = catalog.tools().iter().map(|t| t.name().len()).max().unwrap_or(4).max(4);
    println!("{:width$}  {:64}  {:40}  SOURCE", "NAME", "SHA256", "GRANTS");
    for t in catalog.tools() {
        println!(
            "{:width$}  {:64}  {:40}  {}",
            t.name(),
            t.sha256,
            grant_names(&grants_of(&opened, t)).join(","),
            t.source
        );
    }
    for r in catalog.rejected() {
        println!("rejected: {}: {}", r.source, r.reason);
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

    let opened = open(workspace)?;
    let mut limits = opened.config.limits_for("(describe)", false);
    limits.timeout = Duration::from_secs(5);
    limits.max_output_bytes = 1 << 20;
    let tool = load_one(&engine, &cache, Source::File(file.to_path_buf()), &bytes, &limits)
        .map_err(|e| anyhow::anyhow!("{e}\n(imports: {})", imports.join(", ")))?;
    let info = &tool.info;
    let verdict = match opened.config.admits(tool.name(), &sha256) {
        Err(reason) => Err(format!("tool '{}' {reason}", tool.name())),
        Ok(()) => match opened.catalog.get(tool.name()) {
            Some(other) if other.sha256 != sha256 => Err(format!(
                "tool name '{}' is already taken by {}; rename one of them or remove one",
                tool.name(),
                other.source
            )),
            _ => Ok(()),
        },
    };
    let grants = grants_of(&opened, &tool);
    let call_limits = opened.config.limits_for(tool.name(), !tool.read_only());
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
        "workspace": opened.workspaces.served().display().to_string(),
        "would_load": verdict.is_ok(),
        "refused_because": verdict.as_ref().err(),
        "grants": grant_names(&grants),
        "limits": {
            "timeout_secs": call_limits.timeout.as_secs(),
            "memory_mib": call_limits.memory_bytes >> 20,
            "max_output_mib": call_limits.max_output_bytes >> 20,
        },
        "pin": format!("[tools.{}]\nsha256 = \"{sha256}\"", info.name),
    });
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!("component   {name} ({} bytes)", bytes.len());
    println!("sha256      {sha256}");
    println!("tool        {}{}", info.name, info.title.as_deref().map(|t| format!(" — {t}")).unwrap_or_default());
    println!("description {}", info.description);
    let flags: Vec<&str> = [
        (a.read_only, "read-only"),
        (a.destructive, "destructive"),
        (a.idempotent, "idempotent"),
        (a.open_world, "open-world"),
    ]
    .into_iter()
    .filter_map(|(on, n)| on.then_some(n))
    .collect();
    println!("annotations {}", if flags.is_empty() { "none".to_string() } else { flags.join(", ") });
    println!("imports     {}", imports.join("\n            "));
    println!("exports     {}", exports.join(", "));
    println!("input       {}", report["tool"]["input_schema"]);
    if let Some(out) = report["tool"]["output_schema"].as_object() {
        println!("output      {}", Value::Object(out.clone()));
    }
    println!();
    println!("in {}:", report["workspace"].as_str().unwrap_or_default());
    match &verdict {
        Ok(()) => println!("  would load, granted {}", grant_names(&grants).join(", ")),
        Err(reason) => println!("  would be refused: {reason}"),
    }
    println!(
        "  limits: {} s, {} MiB memory, {} MiB output",
        call_limits.timeout.as_secs(),
        call_limits.memory_bytes >> 20,
        call_limits.max_output_bytes >> 20
    );
    println!(
        "  to use it, copy it into {}/{DATA_DIR}/tools/; to pin these bytes, add to {DATA_DIR}/config.toml:",
        report["workspace"].as_str().unwrap_or_default()
    );
    for line in report["pin"].as_str().unwrap_or_default().lines() {
        println!("    {line}");
    }
    Ok(())
}
