//! `ragbox cache`: what the per-user embedding cache holds (entries, size,
//! hit rate) and, with a shared store, the team's table; `prune` and `clear`.

use crate::config::{Config, user_config_shown};
use crate::embed_cache::{Cache, Stats};
use crate::postgres::{Collection, TEAM_KEEP_DAYS, TeamStats};
use crate::setup::{StoreArgs, shared_collection};
use crate::workspace::Workspaces;
use anyhow::Context;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// What `ragbox cache` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Show what the caches hold.
    Show,
    /// Remove the least recently used entries past the cap (and the team's unused ones).
    Prune,
    /// Remove every entry of this user's cache (`team`: of the team's table too).
    Clear {
        /// Empty the shared store's table as well.
        team: bool,
        /// The user confirmed `team` (it empties every teammate's vectors).
        yes: bool,
    },
}

/// The user's cache and, with a shared store, its team table, as `workspace`'s config sets them.
struct Caches {
    cache: Cache,
    /// Why the cache is off, when it is.
    off: Option<String>,
    team: Option<Arc<Collection>>,
}

impl Caches {
    fn of(workspace: &Path, store: &StoreArgs) -> anyhow::Result<Self> {
        let served = Workspaces::new(workspace, &[]).context("cannot open this workspace")?;
        let config = Config::load(served.served())?;
        let settings = config.cache();
        let dir = Cache::default_dir();
        let off = match (&dir, settings.enabled) {
            (None, _) => Some("off (RAGBOX_EMBEDDING_CACHE=off, or no home folder is known)".to_string()),
            (Some(_), false) => Some(format!("off ([cache] enabled = false in {})", user_config_shown())),
            _ => None,
        };
        // Shown and pruned even while turned off: its file may still take room.
        let cache = Cache::new(dir, crate::embed_cache::Settings { enabled: true, ..settings });
        let team = shared_collection(&config, served.served(), store)?.filter(|c| c.shares_vectors());
        Ok(Self { cache, off, team })
    }
}

/// Runs `ragbox cache [prune | clear]` for `workspace`'s config.
pub fn run(workspace: &Path, action: Action, as_json: bool, store: &StoreArgs) -> anyhow::Result<()> {
    let caches = Caches::of(workspace, store)?;
    match action {
        Action::Show => show(&caches, as_json),
        Action::Prune => {
            let pruned = caches.cache.prune()?;
            let team = caches.team.as_ref().map(|t| t.prune_team(TEAM_KEEP_DAYS)).transpose()?;
            if as_json {
                say!(
                    "{}",
                    json!({
                        "removed": pruned.removed,
                        "file_bytes_before": pruned.file_bytes.0,
                        "file_bytes_after": pruned.file_bytes.1,
                        "compacted": pruned.compacted,
                        "team_removed": team,
                    })
                );
                return Ok(());
            }
            say!(
                "removed {} least recently used vectors; the file went from {} to {}{}",
                pruned.removed,
                mib(pruned.file_bytes.0),
                mib(pruned.file_bytes.1),
                if pruned.compacted { "" } else { " (not compacted: another ragbox process was using it)" }
            );
            if let Some(removed) = team {
                say!("removed {removed} vectors unused for {TEAM_KEEP_DAYS} days from the team's table");
            }
            Ok(())
        }
        Action::Clear { team, yes } => {
            // Checked before anything is removed: a refused --team leaves this user's cache too.
            let team = match (&caches.team, team, yes) {
                (_, false, _) => None,
                (None, true, _) => {
                    anyhow::bail!("--team empties a shared store's table: this workspace has no shared store")
                }
                (Some(_), true, false) => anyhow::bail!(
                    "--team empties the team's table, every teammate's vectors (their next index embeds \
                     everything again): add --yes to do it"
                ),
                (Some(collection), true, true) => Some(collection),
            };
            // A file that cannot be read (damaged, a newer ragbox's) is removed all the same: that is what clear is for.
            let entries = caches.cache.stats().map_or(0, |s| s.entries);
            caches.cache.clear()?;
            let team_removed = team.map(|collection| collection.clear_team()).transpose()?;
            if as_json {
                say!("{}", json!({ "removed": entries, "team_removed": team_removed }));
                return Ok(());
            }
            let path = caches.cache.path().unwrap_or_default();
            say!("removed the embedding cache {} ({entries} vectors)", path.display());
            if let Some(removed) = team_removed {
                say!("removed {removed} vectors from the team's table");
            }
            Ok(())
        }
    }
}

fn show(caches: &Caches, as_json: bool) -> anyhow::Result<()> {
    let stats = caches.cache.stats()?;
    let team = caches.team.as_ref().map(|t| t.team_stats()).transpose()?.flatten();
    if as_json {
        let team = team.map(|t| json!({ "entries": t.entries, "bytes": t.bytes }));
        say!(
            "{}",
            json!({
                "path": stats.path,
                "enabled": caches.off.is_none(),
                "entries": stats.entries,
                "bytes": stats.bytes,
                "file_bytes": stats.file_bytes,
                "max_bytes": stats.max_bytes,
                "lookups": stats.lookups,
                "hits": stats.hits,
                "team": team,
            })
        );
        return Ok(());
    }
    say!("embedding cache  {}", stats.path.display());
    if let Some(off) = &caches.off {
        say!("                 {off}");
    }
    say!("holds            {}", summary(&stats));
    if let Some(collection) = &caches.team {
        say!("{}", team_line(collection, team));
    }
    Ok(())
}

/// The cache's entries, size and hit rate, as `ragbox cache` and `ragbox doctor` say them.
pub fn summary(stats: &Stats) -> String {
    if !stats.exists {
        return format!("nothing yet ({} cap)", mib(stats.max_bytes));
    }
    format!(
        "{} vectors, {} of a {} cap (file {}), {}",
        stats.entries,
        mib(stats.bytes),
        mib(stats.max_bytes),
        mib(stats.file_bytes),
        hit_rate(stats)
    )
}

fn team_line(collection: &Collection, team: Option<TeamStats>) -> String {
    let server = collection.target().shown();
    match team {
        Some(t) => format!("team cache       {} vectors ({}) in {server}", t.entries, mib(t.bytes.max(0) as u64)),
        None => format!("team cache       none yet in {server}"),
    }
}

fn hit_rate(stats: &Stats) -> String {
    match stats.lookups {
        0 => "no lookups yet".into(),
        n => format!("{:.1} % hit rate ({} of {n} lookups)", stats.hits as f64 * 100.0 / n as f64, stats.hits),
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}
