//! `ragbox doctor`: checks the model, the store and the derived indexes of a
//! workspace and says how to fix what is wrong; `--reset` deletes the index
//! (after a warning) so it can be built again.

use crate::corpus::Corpus;
use crate::corpus::Options;
use crate::datadir::{DATA_DIR, DataDir, KEYWORD_DIR, SHARED_DIR, STORE_FILE, VECTORS_DIR};
use crate::embed::ModelInfo;
use crate::index::Filter;
use crate::postgres::Collection;
use crate::setup::{StoreArgs, open};
use crate::store::{Keep, Store};
use anyhow::bail;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

/// Checks `workspace` and prints one line per part; fails when something is broken.
pub fn check(workspace: &Path, store: &StoreArgs) -> anyhow::Result<()> {
    let runner = open(workspace, store, Options::default())?;
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

    match crate::service::status() {
        crate::service::Status::Running { socket, log } => {
            say!("ok      service running at {} (its log: {})", socket.display(), log.display());
        }
        crate::service::Status::Stopped { socket } => {
            say!("ok      service none running; the next stdio `ragbox serve` starts one at {}", socket.display());
        }
        crate::service::Status::Alone(why) => say!("note    service every stdio `ragbox serve` serves alone: {why}"),
    }

    let cache = corpus.embedder().cache();
    match cache.path().map(|_| cache.stats()) {
        None => {
            say!("note    cache   off: every chunk is embedded (RAGBOX_EMBEDDING_CACHE=off or [cache] enabled = false)")
        }
        Some(Ok(stats)) => say!("ok      cache   {} in {}", super::cache::summary(&stats), stats.path.display()),
        // The cache is optional: a fault in it leaves every index working (chunks are embedded).
        Some(Err(e)) => say!("note    cache   {e}; chunks are embedded without it meanwhile"),
    }

    if let Some(collection) = corpus.collection() {
        broken += check_shared(&corpus, collection, model.as_ref());
    } else {
        broken += check_local(&corpus, &served, model.as_ref());
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

/// Checks the local store and the indexes derived from it; returns the problems found.
fn check_local(corpus: &Corpus, served: &Path, model: Option<&ModelInfo>) -> usize {
    let data_dir = served.join(DATA_DIR);
    let data = match DataDir::open(served) {
        Ok(Some(data)) => Arc::new(data),
        Ok(None) => {
            println!("ok      index   nothing embedded yet in {} (run `ragbox index`)", data_dir.display());
            return 0;
        }
        Err(e) => {
            say!("BROKEN  data    {e}");
            return 1;
        }
    };
    match data.is_vouched() {
        Ok(true) => {}
        Ok(false) => {
            say!(
                "note    index   {} was not made by ragbox for you on this machine (it came with the folder, from a \
                 copy, or from an earlier ragbox): it is never read, and `ragbox index` builds the index again",
                data_dir.display()
            );
            return 0;
        }
        Err(e) => {
            say!("BROKEN  data    {e}");
            return 1;
        }
    }
    let stats = match Store::open_existing(&data, Keep::UntilDropped).and_then(|s| s.map(|s| s.stats()).transpose()) {
        Ok(Some(stats)) => stats,
        Ok(None) => {
            println!("ok      index   nothing embedded yet in {} (run `ragbox index`)", data_dir.display());
            return 0;
        }
        Err(e) => {
            say!("BROKEN  store   {e}");
            return 1;
        }
    };
    let mut broken = 0;
    println!(
        "ok      store   {} documents, {} chunks, generation {} in {}",
        stats.documents,
        stats.chunks,
        stats.generation,
        data_dir.join(STORE_FILE).display()
    );
    if let (Some(stored), Some(current)) = (&stats.model_id, model)
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
    let mut probe = vec![0.0; model.map_or(384, |m| m.dimension)];
    probe[0] = 1.0; // a unit vector: any query will do
    match corpus.search_vectors(&probe, 1, &Filter::default()) {
        Ok(_) => println!("ok      vectors {}", describe_vectors(&data)),
        Err(e) => {
            broken += 1;
            say!("BROKEN  vectors {e}");
        }
    }
    match corpus.search_fulltext("ragbox", 1, &Filter::default()) {
        Ok(_) => println!("ok      keyword BM25 index in {}", data_dir.join(KEYWORD_DIR).display()),
        Err(e) => {
            broken += 1;
            say!("BROKEN  keyword {e}");
        }
    }
    broken
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
        Ok(_) => {
            println!("ok      keyword BM25 index kept locally in {}", corpus.data_dir().join(SHARED_DIR).display())
        }
        Err(e) => {
            broken += 1;
            println!("BROKEN  keyword {e}");
        }
    }
    broken
}

fn describe_vectors(data: &DataDir) -> String {
    let dir = data.path().join(VECTORS_DIR);
    let files = data.file_sizes(VECTORS_DIR).unwrap_or_default();
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
/// and a confirmation (`yes`, or an answer on a terminal); links and special
/// files where ragbox keeps something go too, whatever they point at.
pub fn reset(workspace: &Path, yes: bool, store: &StoreArgs) -> anyhow::Result<()> {
    let workspace = &crate::platform::canonical(workspace)
        .map_err(|e| anyhow::anyhow!("workspace {} cannot be opened: {e}", workspace.display()))?;
    // A data dir too broken to read its config from is reset locally: what
    // is broken is here, whatever store the user's config names.
    match crate::config::Config::load(workspace) {
        Ok(config) => {
            if let Some(collection) = crate::setup::shared_collection(&config, workspace, store)? {
                return reset_shared(workspace, &collection, yes);
            }
        }
        Err(e) => eprintln!("{}", crate::text::for_terminal(&format!("(the config cannot be read: {e})"))),
    }
    let data_dir = workspace.join(DATA_DIR);
    let targets = match DataDir::open(workspace) {
        Ok(Some(data)) => data.index_names().into_iter().map(|n| data_dir.join(n)).collect(),
        Ok(None) => Vec::new(),
        // The data dir itself is a link or special file: that is what goes.
        Err(_) => vec![data_dir.clone()],
    };
    if targets.is_empty() {
        println!("nothing to reset: no index in {}", data_dir.display());
        return Ok(());
    }
    let documents = DataDir::open(workspace)
        .ok()
        .flatten()
        .filter(|data| data.is_vouched().unwrap_or(false))
        .and_then(|data| Store::open_existing(&Arc::new(data), Keep::UntilDropped).ok().flatten())
        .and_then(|s| s.stats().ok())
        .map_or_else(|| "all".to_string(), |s| s.documents.to_string());
    eprintln!("This deletes the index of {}:", workspace.display());
    for t in &targets {
        eprintln!("  {}", crate::text::for_terminal(&t.display().to_string()));
    }
    eprintln!("The embeddings of {documents} documents are lost; `ragbox index` makes them again.");
    eprintln!("A plain config.toml and tools folder in {} are kept.", data_dir.display());
    if !confirmed(yes)? {
        return Ok(());
    }
    crate::datadir::reset(workspace)?;
    println!("index deleted; run `ragbox index` to embed the workspace again");
    Ok(())
}

/// Drops the shared collection of `workspace` (every machine's index of it)
/// after a confirmation, and this workspace's local keyword indexes of
/// shared collections (a link there goes itself, never its target).
fn reset_shared(workspace: &Path, collection: &Collection, yes: bool) -> anyhow::Result<()> {
    match collection.row()? {
        None => {
            println!("no collection {:?} at {}", collection.name(), collection.target().shown());
        }
        Some(row) => {
            eprintln!("This drops the shared collection {:?} at {}:", collection.name(), collection.target().shown());
            eprintln!(
                "{} documents and {} chunks, for every machine that indexes into it; `ragbox index` makes them again.",
                row.documents, row.chunks
            );
            if !confirmed(yes)? {
                return Ok(());
            }
            collection.drop_collection()?;
            println!("collection dropped; run `ragbox index` to embed the workspace again");
        }
    }
    match DataDir::open(workspace) {
        Ok(Some(data)) => data.remove_index_dir(SHARED_DIR)?,
        Ok(None) => {}
        // The data dir itself a link or special file: that goes.
        Err(_) => {
            crate::datadir::reset(workspace)?;
        }
    }
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
