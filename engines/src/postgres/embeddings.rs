//! The team's embedding cache: one content-addressed table per database
//! (`ragbox_embedding_cache`), shared by every collection in it, so that a
//! teammate who indexes the same commit embeds almost nothing. Keys are the
//! local cache's ([`crate::embed::Embedder::cache_key`]); values are unit
//! vectors as little-endian f32s.
//!
//! Anyone who may write the database may write this table, so what it gives
//! can change a ranking, never a text shown (texts come from the workspace's
//! own files): a vector read here is used only when it has the model's
//! length, finite values and unit length, and it is never copied into the
//! user's own cache. A table that cannot be used (no right to create it, a
//! read-only replica) is left alone with one warning, for a while.

use super::Collection;
use super::schema;
use crate::embed_cache::Key;
use crate::records::StoreError;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a table that failed is left alone before it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(60);

/// Bounds set in each transaction on the table during an index: a
/// teammate's `LOCK TABLE` or a view that sleeps must not hold every
/// index up; a timeout is the table failing (said once, embedding goes on).
pub(super) const TEAM_TIMEOUTS: &str = "SET LOCAL lock_timeout = '2s'; SET LOCAL statement_timeout = '10s'";

/// Entries unused for this many days go at `ragbox cache prune`.
pub const TEAM_KEEP_DAYS: i32 = 90;

/// What the table holds for one key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cached {
    /// The key has an entry.
    pub present: bool,
    /// Its vector, when asked for and usable.
    pub vector: Option<Vec<f32>>,
}

/// The team's table, for `ragbox cache`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TeamStats {
    /// Entries.
    pub entries: i64,
    /// The table's size with its index, in bytes.
    pub bytes: i64,
}

/// Whether the team's table is used, and since when it failed.
#[derive(Debug, Default)]
pub(super) struct TeamState {
    /// On unless the user's config turned it off.
    pub(super) off: bool,
    /// The table is known to exist.
    pub(super) ready: bool,
    /// When it last failed (it is left alone for [`RETRY_AFTER`]).
    pub(super) failed: Option<Instant>,
    /// Whether this process has said it failed (said once).
    pub(super) warned: bool,
}

impl Collection {
    /// This collection with the team's cache table turned off (`[cache] team = false`).
    pub fn without_team_cache(self) -> Self {
        *self.team.lock().unwrap_or_else(|p| p.into_inner()) = TeamState { off: true, ..TeamState::default() };
        self
    }

    /// Whether this collection's database shares vectors through the team's table.
    pub fn shares_vectors(&self) -> bool {
        !self.team.lock().unwrap_or_else(|p| p.into_inner()).off
    }

    /// What the table holds for each of `keys`: whether it has an entry and,
    /// where `fetch` says so, its vector when usable (of `dimension` finite
    /// values, of unit length). Never fails: a table that cannot be read
    /// holds nothing. Entries found are stamped as used today.
    pub fn cached_vectors(&self, keys: &[Key], fetch: &[bool], dimension: usize) -> Vec<Cached> {
        let mut out = vec![Cached::default(); keys.len()];
        if keys.is_empty() || !self.team_ready() {
            return out;
        }
        // Each key once, with every position it has (a batch may hold one text twice).
        let mut at: HashMap<&[u8], Vec<usize>> = HashMap::new();
        for (i, key) in keys.iter().enumerate() {
            at.entry(key.as_slice()).or_default().push(i);
        }
        let asked: Vec<&[u8]> = at.keys().copied().collect();
        let wanted: Vec<bool> = asked.iter().map(|k| at[k].iter().any(|&i| fetch.get(i) == Some(&true))).collect();
        // Only a vector of the model's length leaves the server: a huge value cannot fill this process.
        let length = i32::try_from(dimension * 4).unwrap_or(i32::MAX);
        let found = self.pool.run(|c| {
            let mut txn = c.transaction().map_err(|e| self.err(e))?;
            txn.batch_execute(TEAM_TIMEOUTS).map_err(|e| self.err(e))?;
            let rows = txn
                .query(
                    "SELECT w.key, CASE WHEN w.wanted AND octet_length(e.vector) = $3 THEN e.vector END,
                            e.used_on < current_date
                     FROM unnest($1::bytea[], $2::bool[]) AS w(key, wanted)
                     JOIN ragbox_embedding_cache e ON e.key = w.key",
                    &[&asked, &wanted, &length],
                )
                .map_err(|e| self.err(e))?;
            let stale: Vec<&[u8]> = rows.iter().filter(|r| r.get::<_, bool>(2)).map(|r| r.get(0)).collect();
            if !stale.is_empty() {
                txn.execute(
                    "UPDATE ragbox_embedding_cache SET used_on = current_date
                     WHERE key = ANY($1) AND used_on < current_date",
                    &[&stale],
                )
                .map_err(|e| self.err(e))?;
            }
            txn.commit().map_err(|e| self.err(e))?;
            Ok(rows)
        });
        match found {
            Ok(rows) => {
                for row in &rows {
                    let Some(positions) = at.get(row.get::<_, &[u8]>(0)) else { continue };
                    let vector = row.get::<_, Option<&[u8]>>(1).and_then(|b| crate::embed_cache::decode(b, dimension));
                    for &i in positions {
                        let vector = vector.clone().filter(|_| fetch.get(i) == Some(&true));
                        out[i] = Cached { present: true, vector };
                    }
                }
            }
            Err(e) => self.team_failed(e),
        }
        out
    }

    /// Adds `entries` (vectors this user's ragbox made) to the table; an
    /// entry already there stays as it is. Never fails: a table that cannot
    /// be written keeps nothing.
    pub fn keep_vectors(&self, entries: &[(Key, &[f32])]) {
        if entries.is_empty() || !self.team_ready() {
            return;
        }
        let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_slice()).collect();
        let vectors: Vec<Vec<u8>> = entries.iter().map(|(_, v)| crate::records::encode_vector(v)).collect();
        let written = self.pool.run(|c| {
            let mut txn = c.transaction().map_err(|e| self.err(e))?;
            txn.batch_execute(TEAM_TIMEOUTS).map_err(|e| self.err(e))?;
            txn.execute(
                "INSERT INTO ragbox_embedding_cache (key, vector)
                 SELECT * FROM unnest($1::bytea[], $2::bytea[]) ON CONFLICT (key) DO NOTHING",
                &[&keys, &vectors],
            )
            .map_err(|e| self.err(e))?;
            txn.commit().map_err(|e| self.err(e))
        });
        if let Err(e) = written {
            self.team_failed(e);
        }
    }

    /// The table's entries and size (`None` when there is no table yet).
    pub fn team_stats(&self) -> Result<Option<TeamStats>, StoreError> {
        self.pool.run(|c| {
            let row = c
                .query_one(
                    "SELECT to_regclass('ragbox_embedding_cache') IS NOT NULL,
                            CASE WHEN to_regclass('ragbox_embedding_cache') IS NOT NULL
                                 THEN pg_total_relation_size('ragbox_embedding_cache') END",
                    &[],
                )
                .map_err(|e| self.err(e))?;
            if !row.get::<_, bool>(0) {
                return Ok(None);
            }
            let entries =
                c.query_one("SELECT count(*) FROM ragbox_embedding_cache", &[]).map_err(|e| self.err(e))?.get(0);
            Ok(Some(TeamStats { entries, bytes: row.get::<_, Option<i64>>(1).unwrap_or(0) }))
        })
    }

    /// Removes the table's entries unused for `days` days; how many went.
    pub fn prune_team(&self, days: i32) -> Result<u64, StoreError> {
        if self.team_stats()?.is_none() {
            return Ok(0);
        }
        self.pool.run(|c| {
            c.execute("DELETE FROM ragbox_embedding_cache WHERE used_on < current_date - $1::int4", &[&days])
                .map_err(|e| self.err(e))
        })
    }

    /// Empties the table; how many entries went.
    pub fn clear_team(&self) -> Result<u64, StoreError> {
        if self.team_stats()?.is_none() {
            return Ok(0);
        }
        self.pool.run(|c| c.execute("DELETE FROM ragbox_embedding_cache", &[]).map_err(|e| self.err(e)))
    }

    /// Whether the table may be used now: on, made if missing, not failed lately.
    fn team_ready(&self) -> bool {
        {
            let state = self.team.lock().unwrap_or_else(|p| p.into_inner());
            if state.off || state.failed.is_some_and(|at| at.elapsed() < RETRY_AFTER) {
                return false;
            }
            if state.ready {
                return true;
            }
        }
        let shown = self.target().shown().to_string();
        match self.pool.run(|c| schema::ensure_cache_table(c, &shown)) {
            Ok(()) => {
                let mut state = self.team.lock().unwrap_or_else(|p| p.into_inner());
                (state.ready, state.failed) = (true, None);
                true
            }
            Err(e) => {
                self.team_failed(e);
                false
            }
        }
    }

    /// Leaves the table alone for a while after `e`, said once.
    fn team_failed(&self, e: StoreError) {
        let mut state = self.team.lock().unwrap_or_else(|p| p.into_inner());
        state.failed = Some(Instant::now());
        if std::mem::replace(&mut state.warned, true) {
            tracing::debug!("the team's embedding cache: {e}");
        } else {
            tracing::warn!(
                "the team's embedding cache in the shared store is not used for now ({e}); chunks are embedded \
                 without it ([cache] team = false in your config turns it off)"
            );
        }
    }
}
