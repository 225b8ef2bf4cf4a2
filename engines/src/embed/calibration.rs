//! The text an encoder runs once, in f32, when it is packed for a path with
//! int8 products: how far each input channel of those products reaches on it
//! decides how the channels are smoothed (`bert.rs`). A model's wide channels
//! are its own, not the text's, so a few kinds of text suffice; none of it is
//! from the benchmarks' corpora, so their figures do not grade it.

use super::EmbedError;
use super::tokenizer::TextTokenizer;

/// Prose, code, commands, chat, data and the shortest texts, as a workspace holds them.
const TEXTS: &[&str] = &[
    "",
    "x",
    "how do I undo the last commit?",
    "Where is the retry policy for failed uploads configured?",
    "# Release checklist\n\n1. Bump the version in `Cargo.toml` and update CHANGELOG.md.\n2. Tag the commit \
     (`git tag -s v1.4.0`) and push the tag.\n3. Wait for the pipeline to publish the binaries, then announce \
     the release on the mailing list.\n\n| platform | artifact |\n|---|---|\n| Linux | tar.gz |\n| macOS | zip |",
    "The committee met on Tuesday to review the budget for the coming year. Most of the discussion concerned the \
     cost of repairing the old bridge over the river, which engineers say has been closed to heavy traffic since \
     the spring floods. Residents asked why the work had been delayed twice, and the chair promised a public \
     report before the end of the month.",
    "fn parse_header(line: &str) -> Result<(String, String), ParseError> {\n    let (name, value) = line\n        \
     .split_once(':')\n        .ok_or_else(|| ParseError::Malformed(line.to_string()))?;\n    \
     Ok((name.trim().to_ascii_lowercase(), value.trim().to_string()))\n}",
    "def load_config(path):\n    \"\"\"Read the YAML file at path and merge it over the defaults.\"\"\"\n    \
     with open(path) as f:\n        user = yaml.safe_load(f) or {}\n    return {**DEFAULTS, **user}\n",
    "tar -xzf archive.tar.gz -C /tmp/out && find /tmp/out -name '*.log' -mtime +7 -delete\n\
     curl -sSL https://example.com/install.sh | sh -s -- --prefix ~/.local",
    "user: the tests pass locally but fail in CI with `connection refused` on port 5432\n\
     assistant: CI starts the database after the test step; move the service block above it, or wait for the \
     port before running the suite.",
    "{\"id\": 4182, \"name\": \"sensor-7\", \"readings\": [21.4, 21.9, 22.3], \"status\": \"ok\", \
     \"updated\": \"2025-03-14T09:26:53Z\"}",
    "Photosynthesis converts light energy into chemical energy stored in glucose. In the light-dependent \
     reactions, water is split and oxygen released, while ATP and NADPH are produced; the Calvin cycle then uses \
     them to fix carbon dioxide. Temperature, light intensity and CO2 concentration all limit its rate.",
];

/// [`TEXTS`] as the model reads them (special tokens included), those that
/// fit its `max` positions: all of them for any BERT this runs.
pub(super) fn ids(tokenizer: &TextTokenizer, max: usize) -> Result<Vec<Vec<u32>>, EmbedError> {
    let texts = TEXTS.iter().map(|t| t.to_string()).collect();
    Ok(tokenizer.ids_batch(texts)?.into_iter().filter(|ids| ids.len() <= max).collect())
}
