//! `ragbox tools`: what is loaded, from where, with which grants.

use super::open::open;
use serde_json::json;
use std::path::Path;

/// Prints the loaded and rejected components.
pub fn run(workspace: &Path, as_json: bool) -> anyhow::Result<()> {
    let opened = open(workspace)?;
    let catalog = &opened.catalog;
    let grants = |t: &crate::runtime::LoadedTool| {
        let mut g = vec!["workspace:read", "index:read"];
        if opened.config.grants_for(t.name(), t.default_grants()).corpus_write {
            g.push("corpus-write");
        }
        g
    };
    if as_json {
        let tools: Vec<_> = catalog
            .tools()
            .iter()
            .map(|t| json!({"name": t.name(), "source": t.source.to_string(), "sha256": t.sha256, "grants": grants(t)}))
            .collect();
        let rejected: Vec<_> =
            catalog.rejected().iter().map(|r| json!({"source": r.source.to_string(), "reason": r.reason})).collect();
        println!("{}", serde_json::to_string_pretty(&json!({"tools": tools, "rejected": rejected}))?);
        return Ok(());
    }
    let width = catalog.tools().iter().map(|t| t.name().len()).max().unwrap_or(4).max(4);
    println!("{:width$}  {:64}  {:40}  SOURCE", "NAME", "SHA256", "GRANTS");
    for t in catalog.tools() {
        println!("{:width$}  {:64}  {:40}  {}", t.name(), t.sha256, grants(t).join(","), t.source);
    }
    for r in catalog.rejected() {
        println!("rejected: {}: {}", r.source, r.reason);
    }
    Ok(())
}
