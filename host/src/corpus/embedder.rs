//! The embedding model, loaded once per process on first use and shared by
//! every workspace and call, with the per-user embedding cache in front of
//! it. A missing model is not remembered: fetching it while a server runs
//! makes the next call work.

use crate::embed::{EmbedError, EmbedKind, Embedder, ModelDir};
use crate::embed_cache::{Cache, Key};
use crate::postgres::Collection;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The model folder and, once loaded, the model; the embedding cache.
pub struct SharedEmbedder {
    dir: PathBuf,
    loaded: Mutex<Option<Arc<Embedder>>>,
    cache: Cache,
}

/// Where one call's passage vectors came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Passages {
    /// Found in this user's embedding cache.
    pub cached: u64,
    /// Found in the shared store's cache table (a teammate's, or this user's from another machine).
    pub team: u64,
    /// Run through the model.
    pub embedded: u64,
}

impl std::ops::AddAssign for Passages {
    fn add_assign(&mut self, other: Self) {
        self.cached += other.cached;
        self.team += other.team;
        self.embedded += other.embedded;
    }
}

impl SharedEmbedder {
    /// The model in `dir`, not loaded yet, without an embedding cache.
    pub fn new(dir: PathBuf) -> Self {
        Self::with_cache(dir, Cache::new(None, Default::default()))
    }

    /// The model in `dir`, not loaded yet, with the embedding cache `cache`.
    pub fn with_cache(dir: PathBuf, cache: Cache) -> Self {
        Self { dir, loaded: Mutex::new(None), cache }
    }

    /// The model folder.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The embedding cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The loaded model, loading it now if needed.
    pub fn get(&self) -> Result<Arc<Embedder>, EmbedError> {
        let mut slot = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(embedder) = slot.as_ref() {
            return Ok(embedder.clone());
        }
        let started = std::time::Instant::now();
        let embedder = Arc::new(Embedder::load(&ModelDir::open(&self.dir)?)?);
        tracing::info!(model = %embedder.info().id, ms = started.elapsed().as_millis() as u64, "embedding model loaded");
        *slot = Some(embedder.clone());
        Ok(embedder)
    }

    /// One vector per passage in `texts`, in order: each found in the
    /// embedding cache, else in `team`'s cache table, else embedded (once
    /// per distinct text, asking `stop` between batches). What the model
    /// makes is kept in both; what the team's table gave is not kept in
    /// this user's cache, which holds only vectors this user's ragbox made.
    pub fn embed_passages(
        &self,
        texts: &[String],
        team: Option<&Collection>,
        stop: impl Fn() -> bool,
    ) -> Result<(Vec<Vec<f32>>, Passages), EmbedError> {
        let embedder = self.get()?;
        let dimension = embedder.info().dimension;
        let keys: Vec<Key> = texts.iter().map(|t| embedder.cache_key(t, EmbedKind::Passage)).collect();
        let mut vectors = self.cache.get(&keys, dimension);
        let mut counts = Passages { cached: vectors.iter().flatten().count() as u64, ..Passages::default() };
        // Which keys the team's table holds: those it lacks get this user's vectors.
        let mut in_team = vec![false; texts.len()];
        if let Some(team) = team {
            let wanted: Vec<bool> = vectors.iter().map(Option::is_none).collect();
            for ((slot, held), found) in
                vectors.iter_mut().zip(&mut in_team).zip(team.cached_vectors(&keys, &wanted, dimension))
            {
                *held = found.present;
                if slot.is_none() && found.vector.is_some() {
                    *slot = found.vector;
                    counts.team += 1;
                }
            }
        }
        // The rest, each distinct text once (a license header in every file is one).
        let mut missing: HashMap<Key, usize> = HashMap::new();
        for (i, key) in keys.iter().enumerate().filter(|(i, _)| vectors[*i].is_none()) {
            missing.entry(*key).or_insert(i);
        }
        if !missing.is_empty() {
            let mut order: Vec<(Key, usize)> = missing.into_iter().collect();
            order.sort_unstable_by_key(|(_, i)| *i);
            let inputs: Vec<String> = order.iter().map(|(_, i)| texts[*i].clone()).collect();
            let made = embedder.embed_until(&inputs, EmbedKind::Passage, stop)?;
            counts.embedded = made.len() as u64;
            let made: HashMap<Key, Vec<f32>> = order.into_iter().map(|(key, _)| key).zip(made).collect();
            self.cache.put(&made.iter().map(|(k, v)| (*k, v.as_slice())).collect::<Vec<_>>());
            for (slot, key) in vectors.iter_mut().zip(&keys) {
                if slot.is_none() {
                    *slot = made.get(key).cloned();
                }
            }
        }
        if let Some(team) = team {
            // This user's own vectors (made now, or kept from before) that the table lacks.
            let ours: HashMap<Key, &[f32]> = (0..texts.len())
                .filter(|&i| !in_team[i])
                .filter_map(|i| vectors[i].as_deref().map(|v| (keys[i], v)))
                .collect();
            team.keep_vectors(&ours.into_iter().collect::<Vec<_>>());
        }
        let vectors = vectors.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| {
            EmbedError::Input("a passage's vector was neither found nor made (a bug in ragbox)".into())
        })?;
        Ok((vectors, counts))
    }
}
