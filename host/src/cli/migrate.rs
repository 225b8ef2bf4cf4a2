//! `ragbox migrate --to URL`: copies a workspace's local index (documents,
//! chunks and their vectors, as stored) into a shared collection, so a team
//! can move to PostgreSQL without embedding anything again.

use crate::config::{Config, DATA_DIR};
use crate::datadir::DataDir;
use crate::records::{NewChunk, NewDocument};
use crate::setup::{StoreArgs, shared_collection_at};
use crate::store::{Keep, Store};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::Path;

/// Documents written per transaction.
const BATCH: usize = 256;

/// Copies `workspace`'s `.ragbox/store.redb` into the collection at `url`
/// (documents already there under the same paths are replaced; others stay).
pub fn run(workspace: &Path, url: &str, as_json: bool, named: &StoreArgs) -> anyhow::Result<()> {
    let workspace = crate::platform::canonical(workspace)
        .map_err(|e| anyhow::anyhow!("workspace {} cannot be opened: {e}", workspace.display()))?;
    let config = Config::load(&workspace)?;
    let collection = shared_collection_at(&config, &workspace, url, named.collection.clone())?;
    let data_dir = workspace.join(DATA_DIR);
    let data = DataDir::open(&workspace)?.map(std::sync::Arc::new);
    let Some(store) = data.map(|data| Store::open_existing(&data, Keep::UntilDropped)).transpose()?.flatten() else {
        anyhow::bail!("nothing to migrate: {} holds no index (run `ragbox index` first)", data_dir.display());
    };
    let stats = store.stats()?;
    let bar = ProgressBar::new(stats.documents);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} documents ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    if as_json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let started = std::time::Instant::now();
    let (mut documents, mut chunks, mut dimension) = (0u64, 0u64, 0usize);
    // Stored for keyword search while `ragbox index` was still embedding them: no vectors to copy.
    let mut unembedded = 0u64;
    let mut after: Option<String> = None;
    loop {
        let page = store.documents_after(after.as_deref(), BATCH)?;
        let Some(last) = page.last() else { break };
        after = Some(last.path.clone());
        let mut batch = Vec::with_capacity(page.len());
        for record in page {
            if !record.embedded() {
                unembedded += 1;
                continue;
            }
            let stored = store.chunks(&record.path)?;
            if let Some((_, vector)) = stored.first() {
                dimension = vector.len();
            }
            chunks += stored.len() as u64;
            let chunks = stored.into_iter().map(|(record, vector)| NewChunk { record, vector }).collect();
            batch.push(NewDocument { record, dimension: 0, chunks });
        }
        // Every document carries the store's one vector length (one without chunks too).
        for doc in &mut batch {
            doc.dimension = dimension;
        }
        documents += batch.len() as u64;
        collection.put_documents(&batch)?;
        bar.set_position(documents + unembedded);
    }
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    let target = format!("postgres://{}#{}", collection.target().shown(), collection.name());
    if as_json {
        let report = serde_json::json!({
            "documents": documents, "chunks": chunks, "seconds": seconds, "to": target, "not_embedded": unembedded,
        });
        println!("{report}");
    } else {
        println!("copied {documents} documents ({chunks} chunks, vectors included) to {target} in {seconds:.1} s");
        if unembedded > 0 {
            println!(
                "{unembedded} documents were not embedded yet (stored for keyword search only) and were not copied: \
                 `ragbox index --store {url}` embeds them into the collection"
            );
        }
        println!("serve from it with `ragbox serve --store {url}` (or [store] url in your config.toml)");
    }
    Ok(())
}
