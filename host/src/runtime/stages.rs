//! Where one call's time went: each capability the guest called, and the
//! rest (the guest's own work: reading and hashing files, chunking,
//! building its answer). `ragbox index --timings` prints it; every call logs
//! it at debug level.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A capability's share of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Creating the sandbox and instantiating the component.
    Instantiate,
    /// `embedder.embed` and `embedder.model`: running the model, and loading it on first use.
    Embed,
    /// `embedder.token-offsets`: the tokenizer, for chunking.
    Tokenize,
    /// `corpus` writes (put, put-many, remove).
    StoreWrite,
    /// `corpus` reads (get, list, chunks, stats).
    StoreRead,
    /// `vectors` searches.
    VectorSearch,
    /// `fulltext` searches (with the keyword index's catch-up).
    KeywordSearch,
    /// `host.files`: listing the workspace.
    Walk,
    /// `extract.extract`: documents read by extractor components.
    Extract,
}

const STAGES: [(Stage, &str); 9] = [
    (Stage::Instantiate, "instantiate"),
    (Stage::Embed, "embed"),
    (Stage::Tokenize, "tokenize"),
    (Stage::StoreWrite, "store write"),
    (Stage::StoreRead, "store read"),
    (Stage::VectorSearch, "vector search"),
    (Stage::KeywordSearch, "keyword search"),
    (Stage::Walk, "walk"),
    (Stage::Extract, "extract"),
];

/// Time and calls per stage, and the call's whole time.
#[derive(Debug, Clone, Default)]
pub struct Stages {
    spent: [(Duration, u64); STAGES.len()],
    /// The whole call, sandbox to result.
    pub total: Duration,
    /// Tokens the model embedded for the call.
    pub tokens_embedded: u64,
    /// Where the call's passage vectors came from: the embedding cache or the model.
    pub passages: crate::corpus::Passages,
    /// Times the call opened the store file (exact only for one call at a time).
    pub store_opens: u64,
}

/// Receives a call's [`Stages`] when it ends.
pub type StagesSink = Arc<Mutex<Stages>>;

impl Stages {
    /// Adds the time since `started` and one call to `stage`.
    pub fn add(&mut self, stage: Stage, started: Instant) {
        self.record(stage, started.elapsed(), 1);
    }

    /// Adds `spent` and `calls` to `stage` (one capability call may span two stages).
    pub fn record(&mut self, stage: Stage, spent: Duration, calls: u64) {
        let slot = &mut self.spent[stage as usize];
        slot.0 += spent;
        slot.1 += calls;
    }

    /// Time spent in `stage`, and how many calls made it.
    pub fn get(&self, stage: Stage) -> (Duration, u64) {
        self.spent[stage as usize]
    }

    /// Capability calls the guest made (every stage but instantiation).
    pub fn host_calls(&self) -> u64 {
        STAGES.iter().filter(|(stage, _)| *stage != Stage::Instantiate).map(|(stage, _)| self.get(*stage).1).sum()
    }

    /// The call's time outside every capability: the guest's own work.
    pub fn guest(&self) -> Duration {
        self.total.saturating_sub(self.spent.iter().map(|(d, _)| *d).sum())
    }

    /// One line: `embed 12.310 s (81 calls), …, guest 3.200 s, total 16.020 s`;
    /// a search's stages in milliseconds (`vector search 0.41 ms (1 calls)`).
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = STAGES
            .iter()
            .filter(|(stage, _)| self.get(*stage) != (Duration::ZERO, 0))
            .map(|(stage, name)| {
                let (spent, calls) = self.get(*stage);
                // A stage reached only inside another capability (the query a search embeds) made no call.
                let mut about = if calls > 0 { vec![format!("{calls} calls")] } else { Vec::new() };
                if *stage == Stage::Embed && self.tokens_embedded > 0 {
                    about.push(format!("{} tokens", self.tokens_embedded));
                    let rate = self.tokens_embedded as f64 / spent.as_secs_f64().max(1e-9);
                    about.push(format!("{rate:.0} tokens/s"));
                }
                let p = self.passages;
                if *stage == Stage::Embed && p.cached + p.team > 0 {
                    let team = if p.team > 0 { format!(", {} from the team's", p.team) } else { String::new() };
                    about.push(format!(
                        "{} of {} chunks from the cache{team}",
                        p.cached + p.team,
                        p.cached + p.team + p.embedded
                    ));
                }
                format!("{name} {} ({})", shown(spent), about.join(", "))
            })
            .collect();
        parts.push(format!("guest {}", shown(self.guest())));
        parts.push(format!("{} capability calls, {} store opens", self.host_calls(), self.store_opens));
        parts.push(format!("total {}", shown(self.total)));
        parts.join(", ")
    }

    /// The same as JSON: seconds and calls per stage.
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for (stage, name) in STAGES {
            let (spent, calls) = self.get(stage);
            out.insert(name.into(), serde_json::json!({ "seconds": spent.as_secs_f64(), "calls": calls }));
        }
        out.insert("tokens_embedded".into(), self.tokens_embedded.into());
        let p = self.passages;
        out.insert(
            "chunks".into(),
            serde_json::json!({ "embedded": p.embedded, "from_cache": p.cached, "from_team_cache": p.team }),
        );
        out.insert("capability_calls".into(), self.host_calls().into());
        out.insert("store_opens".into(), self.store_opens.into());
        out.insert("guest".into(), serde_json::json!({ "seconds": self.guest().as_secs_f64() }));
        out.insert("total".into(), serde_json::json!({ "seconds": self.total.as_secs_f64() }));
        serde_json::Value::Object(out)
    }
}

/// A stage's time as read: seconds from one second up, else milliseconds
/// (a search's stages take a few each, which `0.003 s` hides).
fn shown(spent: Duration) -> String {
    if spent >= Duration::from_secs(1) {
        format!("{:.3} s", spent.as_secs_f64())
    } else {
        format!("{:.2} ms", spent.as_secs_f64() * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_gets_what_no_stage_took() {
        let mut s = Stages::default();
        let started = Instant::now() - Duration::from_millis(30);
        s.add(Stage::Embed, started);
        s.total = Duration::from_millis(100);
        let (embed, calls) = s.get(Stage::Embed);
        assert!(embed >= Duration::from_millis(30) && calls == 1);
        assert_eq!(s.guest(), Duration::from_millis(100) - embed);
        assert!(s.summary().starts_with("embed ") && s.summary().contains(" ms (1 calls)"), "{}", s.summary());
        assert!(s.summary().ends_with("total 100.00 ms"), "{}", s.summary());
        assert_eq!(shown(Duration::from_millis(16_020)), "16.020 s");
        assert_eq!(s.to_json()["embed"]["calls"], 1);
    }
}
