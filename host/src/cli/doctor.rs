//! `ragbox doctor`: checks the model, the store and the derived indexes of a
//! workspace and says how to fix what is wrong; `--reset` deletes the index
//! (after a warning) so it can be built again.

use super::open::open;
use crate::config::DATA_DIR;
use crate::corpus::{Corpus, FULLTEXT_DIR, OLD_FULLTEXT_DIR, OLD_VECTORS_FILE, SHARED_KEYWORD_DIR, VECTORS_DIR};
use crate::embed::ModelInfo;
use crate::index::Filter;
use crate::postgres::Collection;
use crate::store::{STORE_FILE, Store};
use anyhow::bail;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

/// Checks `workspace` and prints one line per part; fails when something is broken.
pub fn check(workspace: &Path) -> anyhow::Result<()> {
    let runner = open(workspace)?;
    let setup = runner.setup();
    let served = setup.workspaces.served().to_path_buf();
    let corpus = runner.corpus(&served);
    let mut broken = 0;
    // Not broken, but the user should know the workspace asked for more than it got.
    for ignored in &setup.config.ignored {
        say!("note    config  {ignored}");
    }

    let model = match corpus.embedder().get() {
        Ok(embedder) => {
            let info = embedder.info();
            println!(
                "ok      model   {} ({}-d, {} tokens) in {}",
                info.id,
                info.dimension,
                info.max_tokens,
                corpus.embedder().dir().display()
            );
            Some(info.clone())
        }
        Err(e) => {
            broken += 1;
            println!("BROKEN  model   {e}");
            None
        }
    };

    let data_dir = served.join(DATA_DIR);
    if let Some(collection) = corpus.collection() {
        broken += check_shared(&corpus, collection, model.as_ref());
    } else if !data_dir.join(STORE_FILE).exists() {
        println!("ok      index   nothing embedded yet in {} (run `ragbox index`)", data_dir.display());
    } else {
        match Store::open_existing(&data_dir).and_then(|s| s.map(|s| s.stats()).transpose()) {
            Ok(Some(stats)) => {
                println!(
                    "ok      store   {} documents, {} chunks, generation {} in {}",
                    stats.documents,
                    stats.chunks,
                    stats.generation,
                    data_dir.join(STORE_FILE).display()
                );
                if let (Some(stored), Some(current)) = (&stats.model_id, &model)
                    && *stored != current.id
                {
                    broken += 1;
                    println!(
                        "BROKEN  model   the index was built with {stored}, the current model is {}: \
                         `ragbox doctor --reset` then `ragbox index` re-embeds with it",
                        current.id
                    );
                }
                // Loading the derived indexes brings them up to date, or says why not.
                let mut probe = vec![0.0; model.as_ref().map_or(384, |m| m.dimension)];
                probe[0] = 1.0; // a unit vector: any query will do
                match corpus.search_vectors(&probe, 1, &Filter::default()) {
                    Ok(_) => println!("ok      vectors {}", describe_vectors(&data_dir)),
                    Err(e) => {
                        broken += 1;
                        println!("BROKEN  vectors {e}");
                    }
                }
                match corpus.search_fulltext("ragbox", 1, &Filter::default()) {
                    Ok(_) => println!("ok      keyword BM25 index in {}", data_dir.join(FULLTEXT_DIR).display()),
                    Err(e) => {
                        broken += 1;
                        println!("BROKEN  keyword {e}");
                    }
                }
            }
            Ok(None) => println!("ok      index   nothing embedded yet"),
            Err(e) => {
                broken += 1;
                println!("BROKEN  store   {e}");
            }
        }
    }
    if broken > 0 {
        println!();
        println!("To fix: `ragbox model fetch` for a missing model; `ragbox doctor --reset` for a broken index");
        println!("(it deletes the embeddings; `ragbox index` makes them again).");
        bail!("{broken} problem{} found", if broken == 1 { "" } else { "s" });
    }
    println!("everything is in order");
    Ok(())
}

/// Checks the shared store: the server, pgvector, the schema, the
/// collection, its HNSW index, and a search of each kind; returns the
/// problems found.
fn check_shared(corpus: &Corpus, collection: &Collection, model: Option<&ModelInfo>) -> usize {
    let target = collection.target();
    let server = match collection.inspect() {
        Ok(server) => server,
        Err(e) => {
            println!("BROKEN  server  {e}");
            return 1;
        }
    };
    let (major, minor) = server.pgvector;
    let encrypted = if target.tls() { "TLS" } else { "not encrypted" };
    let role = if server.standby { ", a read-only replica" } else { "" };
    println!(
        "ok      server  PostgreSQL {} at {} ({encrypted}{role}), pgvector {major}.{minor}, ragbox schema {}",
        server.version,
        target.shown(),
        if server.schema == 0 { "not created yet".to_string() } else { server.schema.to_string() }
    );
    let mut broken = 0;
    if server.pgvector == (0, 0) {
        println!(
            "note    server  pgvector is available but not created in this database: ragbox creates it on the first write"
        );
    } else if server.pgvector < (0, 7) {
        broken += 1;
        println!(
            "BROKEN  server  pgvector {major}.{minor} is too old: ragbox needs 0.7 or newer (`ALTER EXTENSION vector UPDATE;`)"
        );
    }
    let row = match collection.row() {
        Ok(Some(row)) => row,
        Ok(None) => {
            println!("ok      index   nothing embedded yet in collection {:?} (run `ragbox index`)", collection.name());
            return broken;
        }
        Err(e) => {
            println!("BROKEN  store   {e}");
            return broken + 1;
        }
    };
    println!(
        "ok      store   collection {:?}: {} documents, {} chunks, generation {}",
        collection.name(),
        row.documents,
        row.chunks,
        row.generation
    );
    if let (Some(stored), Some(current)) = (&row.model_id, model)
        && *stored != current.id
    {
        broken += 1;
        println!(
            "BROKEN  model   the collection was built with {stored}, the current model is {}: \
             `ragbox doctor --reset` then `ragbox index` re-embeds with it (or use another --collection)",
            current.id
        );
    }
    match collection.has_vector_index() {
        Ok(Some(false)) => {
            broken += 1;
            println!(
                "BROKEN  vectors the collection's HNSW index is missing, so searches scan every chunk; make it again with \
                 `CREATE INDEX ragbox_chunks_hnsw_{id} ON ragbox_chunks USING hnsw \
                 ((embedding::vector({dimension})) vector_cosine_ops) WHERE collection = {id};`",
                id = row.id,
                dimension = row.dimension.unwrap_or(0),
            );
        }
        Ok(_) => {}
        Err(e) => {
            broken += 1;
            println!("BROKEN  vectors {e}");
        }
    }
    let mut probe = vec![0.0; row.dimension.map_or(384, |d| d as usize)];
    probe[0] = 1.0;
    match corpus.search_vectors(&probe, 1, &Filter::default()) {
        Ok(_) => println!("ok      vectors HNSW index (cosine) in PostgreSQL"),
        Err(e) => {
            broken += 1;
            println!("BROKEN  vectors {e}");
        }
    }
    match corpus.search_fulltext("ragbox", 1, &Filter::default()) {
        Ok(_) => println!(
            "ok      keyword BM25 index kept locally in {}",
            corpus.data_dir().join(SHARED_KEYWORD_DIR).display()
        ),
        Err(e) => {
            broken += 1;
            println!("BROKEN  keyword {e}");
        }
    }
    broken
}

fn describe_vectors(data_dir: &Path) -> String {
    let dir = data_dir.join(VECTORS_DIR);
    let files: Vec<(String, u64)> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| Some((e.file_name().to_str()?.to_string(), e.metadata().ok()?.len())))
                .collect()
        })
        .unwrap_or_default();
    let count = |suffix: &str| files.iter().filter(|(n, _)| n.ends_with(suffix)).count();
    let bytes: u64 = files.iter().map(|(_, len)| len).sum();
    if count(".codes") == 0 {
        return "exact search (built in memory from the store)".to_string();
    }
    format!(
        "{} segments ({} with their HNSW graph) saved in {} ({:.1} MiB)",
        count(".codes"),
        count(".graph"),
        dir.display(),
        bytes as f64 / 1048576.0
    )
}

/// Deletes the store and the derived indexes of `workspace`, after a warning
/// and a confirmation (`yes`, or an answer on a terminal).
pub fn reset(workspace: &Path, yes: bool) -> anyhow::Result<()> {
    let workspace = &std::fs::canonicalize(workspace)
        .map_err(|e| anyhow::anyhow!("workspace {} cannot be opened: {e}", workspace.display()))?;
    let config = crate::config::Config::load(workspace)?;
    if let Some(collection) = super::open::shared_collection(&config, workspace)? {
        return reset_shared(workspace, &collection, yes);
    }
    let data_dir = workspace.join(DATA_DIR);
    let targets: Vec<_> = [STORE_FILE, VECTORS_DIR, OLD_VECTORS_FILE, FULLTEXT_DIR, OLD_FULLTEXT_DIR]
        .iter()
        .map(|name| data_dir.join(name))
        .filter(|p| p.exists())
        .collect();
    if targets.is_empty() {
        println!("nothing to reset: no index in {}", data_dir.display());
        return Ok(());
    }
    let documents = Store::open_existing(&data_dir)
        .ok()
        .flatten()
        .and_then(|s| s.stats().ok())
        .map_or_else(|| "all".to_string(), |s| s.documents.to_string());
    eprintln!("This deletes the index of {}:", workspace.display());
    for t in &targets {
        eprintln!("  {}", t.display());
    }
    eprintln!("The embeddings of {documents} documents are lost; `ragbox index` makes them again.");
    eprintln!("The config and the tools folder in {} are kept.", data_dir.display());
    if !confirmed(yes)? {
        return Ok(());
    }
    for t in &targets {
        let removed = if t.is_dir() { std::fs::remove_dir_all(t) } else { std::fs::remove_file(t) };
        removed.map_err(|e| anyhow::anyhow!("cannot delete {}: {e}", t.display()))?;
    }
    println!("index deleted; run `ragbox index` to embed the workspace again");
    Ok(())
}

/// Drops the shared collection of `workspace` (every machine's index of it)
/// and this workspace's local keyword index of it, after a confirmation.
fn reset_shared(workspace: &Path, collection: &Collection, yes: bool) -> anyhow::Result<()> {
    let Some(row) = collection.row()? else {
        println!("nothing to reset: no collection {:?} at {}", collection.name(), collection.target().shown());
        return Ok(());
    };
    eprintln!("This drops the shared collection {:?} at {}:", collection.name(), collection.target().shown());
    eprintln!(
        "{} documents and {} chunks, for every machine that indexes into it; `ragbox index` makes them again.",
        row.documents, row.chunks
    );
    if !confirmed(yes)? {
        return Ok(());
    }
    collection.drop_collection()?;
    let local = workspace.join(DATA_DIR).join(SHARED_KEYWORD_DIR);
    if local.exists() {
        std::fs::remove_dir_all(&local).map_err(|e| anyhow::anyhow!("cannot delete {}: {e}", local.display()))?;
    }
    println!("collection dropped; run `ragbox index` to embed the workspace again");
    Ok(())
}

/// `yes`, or a "y" typed on a terminal; never a guess without one.
fn confirmed(yes: bool) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        bail!("not resetting without confirmation: run `ragbox doctor --reset --yes`");
    }
    eprint!("Delete the index? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        eprintln!("nothing deleted");
        return Ok(false);
    }
    Ok(true)
}
