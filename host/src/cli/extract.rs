//! `ragbox extract FILE...`: a document's text as the index sees it, read by
//! the same sandboxed extractor the indexer uses: to check what a PDF or a
//! deck yields, and to time extraction.

use crate::setup::catalog;
use anyhow::Context as _;
use serde_json::json;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Largest file read (as the indexer's limit for documents).
const MAX_BYTES: u64 = 64 << 20;

/// Prints the text of each of `files` (parts labelled), or one JSON object a
/// line with `--json`; fails when any file could not be read.
pub fn run(files: &[PathBuf], workspace: &Path, as_json: bool) -> anyhow::Result<()> {
    let extractors = catalog(workspace)?.extractors();
    let mut failed = 0;
    let mut out = std::io::stdout().lock();
    for file in files {
        let started = Instant::now();
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let read = read(file).and_then(|bytes| {
            extractors.extract(&name, &bytes, Duration::MAX, CancellationToken::new()).map_err(anyhow::Error::from)
        });
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let shown = file.display().to_string();
        match read {
            Ok(doc) if as_json => {
                let parts: Vec<_> = doc.parts.iter().map(|p| json!({ "label": p.label, "text": p.text })).collect();
                let metadata: serde_json::Map<_, _> = doc.metadata.into_iter().map(|(k, v)| (k, v.into())).collect();
                let line = json!({ "path": shown, "title": doc.title, "metadata": metadata, "parts": parts, "ms": ms });
                writeln!(out, "{line}")?;
            }
            Ok(doc) => {
                let chars: usize = doc.parts.iter().map(|p| p.text.chars().count()).sum();
                say!("== {shown}: {} parts, {chars} characters, {ms:.1} ms", doc.parts.len());
                if let Some(title) = &doc.title {
                    say!("title: {title}");
                }
                for (key, value) in &doc.metadata {
                    say!("{key}: {value}");
                }
                for part in &doc.parts {
                    say!("--- {}", part.label.as_deref().unwrap_or("(part)"));
                    say!("{}", part.text);
                }
            }
            Err(e) => {
                failed += 1;
                if as_json {
                    writeln!(out, "{}", json!({ "path": shown, "error": format!("{e:#}"), "ms": ms }))?;
                } else {
                    eprintln!(
                        "ragbox: {}: {}",
                        crate::text::for_terminal(&shown),
                        crate::text::for_terminal(&format!("{e:#}"))
                    );
                }
            }
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} of {} files could not be read", files.len());
    }
    Ok(())
}

/// A regular file's bytes, within the limit.
fn read(file: &Path) -> anyhow::Result<Vec<u8>> {
    let meta = std::fs::metadata(file).with_context(|| format!("cannot read {}", file.display()))?;
    anyhow::ensure!(meta.is_file(), "{} is not a regular file", file.display());
    anyhow::ensure!(
        meta.len() <= MAX_BYTES,
        "{} is {:.1} MiB, over the {} MiB limit for a document",
        file.display(),
        meta.len() as f64 / (1 << 20) as f64,
        MAX_BYTES >> 20
    );
    std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))
}
