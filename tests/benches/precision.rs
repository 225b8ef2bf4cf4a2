//! The encoder's kernel paths on one corpus: each path's throughput, its share
//! of the path's own multiply-add peak, and how far its vectors lie from the
//! f32 path's (worst and mean cosine): `cargo bench -p ragbox-tests --bench
//! precision [-- DOCS]` (`make bench`). Embeds SciFact's abstracts as the
//! benchmarks index them (`# title` + text, cut at the model's 256 tokens) and
//! writes bench/results/precision.md; the titles alone are embedded too, as
//! short texts (a query's length) are where low precision shows most. A path
//! is kept only if its worst cosine to f32 stays at least 0.999 on both (issue 38).

use ragbox::embed::{EmbedKind, Embedder, Isa, ModelDir, cpu_features, default_model_dir};
use std::fmt::Write as _;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// all-MiniLM-L6-v2 per token: 6 layers of QKV, output and FFN products.
const MATMUL_FLOP_PER_TOKEN: f64 = 6.0 * 2.0 * (4.0 * 384.0 * 384.0 + 2.0 * 384.0 * 1536.0);
/// Attention's two products per token and per position it attends to.
const ATTN_FLOP_PER_TOKEN_PER_POS: f64 = 6.0 * 2.0 * 2.0 * 384.0;

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let norm = |v: &[f32]| v.iter().map(|x| *x as f64 * *x as f64).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

type Vectors = Vec<Vec<f32>>;

/// Rounds of the paths in turn; each path's best time is reported.
const ROUNDS: usize = 2;

/// The least cosine between two sets of vectors, where it is, and the mean.
#[derive(Default)]
struct Worst {
    cosine: f64,
    at: usize,
    mean: f64,
}

impl Worst {
    fn of(got: &[Vec<f32>], reference: &[Vec<f32>]) -> Self {
        let mut worst = Self { cosine: 1.0, at: 0, mean: 0.0 };
        for (i, (a, b)) in got.iter().zip(reference).enumerate() {
            let c = cosine(a, b);
            worst.mean += c / got.len() as f64;
            if c < worst.cosine {
                (worst.cosine, worst.at) = (c, i);
            }
        }
        worst
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let limit: usize = args.first().and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let data = std::env::var_os("RAGBOX_DATA").map_or_else(|| root.join("../shared/data"), Into::into);
    let corpus = std::fs::read_to_string(data.join("scifact/corpus.jsonl")).expect("SciFact in ../shared/data");
    let docs: Vec<serde_json::Value> =
        corpus.lines().take(limit).map(|line| serde_json::from_str(line).expect("a JSON line")).collect();
    let field = |doc: &serde_json::Value, name: &str| doc[name].as_str().unwrap_or("").to_string();
    let texts: Vec<String> =
        docs.iter().map(|doc| format!("# {}\n\n{}\n", field(doc, "title"), field(doc, "text"))).collect();
    let titles: Vec<String> = docs.iter().map(|doc| field(doc, "title")).collect();
    let dir =
        ModelDir::open(&default_model_dir().expect("a home folder or RAGBOX_MODEL")).unwrap_or_else(|e| panic!("{e}"));

    // The portable path takes minutes per thousand texts: only when asked for.
    let paths: Vec<Isa> = Isa::available()
        .into_iter()
        .filter(|isa| *isa != Isa::Portable || std::env::var_os("RAGBOX_BENCH_PORTABLE").is_some())
        .collect();
    let embedders: Vec<Embedder> =
        paths.iter().map(|&isa| Embedder::load_on(&dir, isa).expect("load the model")).collect();
    // Sequence lengths as the model sees them, for the FLOP count.
    let lengths: Vec<f64> = texts
        .iter()
        .map(|t| (embedders[0].token_offsets_until(t, || false).expect("tokenize").len() + 2).min(256) as f64)
        .collect();
    let tokens: f64 = lengths.iter().sum();
    let flop: f64 =
        lengths.iter().map(|n| MATMUL_FLOP_PER_TOKEN * n + ATTN_FLOP_PER_TOKEN_PER_POS * n * n).sum::<f64>();
    // The paths take turns, each timed at its best of the rounds: the machine is shared, and
    // one run of each after the other let a busy minute decide which path looked faster.
    let mut best = vec![f64::INFINITY; paths.len()];
    let mut first: Vec<Vectors> = Vec::new();
    for round in 0..ROUNDS {
        for (i, embedder) in embedders.iter().enumerate() {
            embedder.embed(&texts[..texts.len().min(16)], EmbedKind::Passage).expect("warm-up");
            let started = Instant::now();
            let vectors = embedder.embed(&texts, EmbedKind::Passage).expect("embed");
            best[i] = best[i].min(started.elapsed().as_secs_f64());
            if round == 0 {
                first.push(vectors);
            }
        }
    }
    let mut rows = Vec::new();
    // The f32 path (the first one run that is not bf16) is what the others are measured against.
    let reference_path = paths.iter().copied().find(|isa| !isa.has_bf16());
    // Its vectors of the abstracts and of the titles.
    let mut reference: Option<(Vectors, Vectors)> = None;
    for ((&isa, embedder), (vectors, seconds)) in paths.iter().zip(&embedders).zip(first.into_iter().zip(best)) {
        let peak = ragbox_kernels::peak::gflops(isa) * 1e9;
        let short = embedder.embed(&titles, EmbedKind::Passage).expect("embed the titles");
        let (mut worst, mut worst_title) = (Worst::default(), Worst::default());
        if let Some((reference, reference_titles)) = &reference {
            worst = Worst::of(&vectors, reference);
            worst_title = Worst::of(&short, reference_titles);
        }
        eprintln!(
            "{}: {seconds:.1} s, {:.0} tokens/s, worst cosine {:.6}, on titles {:.6}",
            isa.name(),
            tokens / seconds,
            worst.cosine,
            worst_title.cosine
        );
        rows.push((isa, seconds, tokens / seconds, flop / seconds, peak, worst, worst_title));
        if Some(isa) == reference_path {
            reference = Some((vectors, short));
        }
    }

    let mut out = String::new();
    let _ = writeln!(out, "# The encoder's kernel paths: speed and distance from f32\n");
    let _ = writeln!(out, "- command: `cargo bench -p ragbox-tests --bench precision` (in `make bench`)");
    let _ = writeln!(out, "- CPU features: {}; threads: {}", cpu_features().join(" "), rayon::current_num_threads());
    let _ = writeln!(
        out,
        "- texts: {} SciFact abstracts as `# title` + text, one call, cut at the model's 256 tokens (all-MiniLM-L6-v2); \
         their titles alone as short texts (timed: the abstracts, each path's best of {ROUNDS} rounds taken in turn)",
        texts.len()
    );
    let _ = writeln!(
        out,
        "- peak: each path's widest multiply-add (AVX2 FMA, `vdpbf16ps` or `vpdpbusd`) in independent register-only chains on every thread\n"
    );
    let _ = writeln!(
        out,
        "| path | products in | chosen unasked | seconds | tokens/s | GFLOP/s (model FLOPs ÷ time) | path's peak GFLOP/s | share of peak | worst cosine to f32 | mean cosine to f32 | worst cosine, titles alone |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|");
    // What `Isa::detect` picks unasked (whatever RAGBOX_KERNELS says for this run).
    let chosen = Isa::available().last().copied();
    for (isa, seconds, rate, flops, peak, worst, worst_title) in &rows {
        let precision = if isa.has_int8() {
            "bf16 × bf16 → f32 (attention too), attention's input product and the first feed-forward one u8 × s8 → i32 (their inputs smoothed by calibrated ranges)"
        } else if isa.has_bf16() {
            "bf16 × bf16 → f32 (attention too: scores and softmax f32)"
        } else {
            "f32"
        };
        let (worst, mean, title) = if Some(*isa) != reference_path {
            (
                format!("{:.6} (abstract {})", worst.cosine, worst.at),
                format!("{:.7}", worst.mean),
                format!("{:.6} (title {})", worst_title.cosine, worst_title.at),
            )
        } else {
            ("(the reference)".into(), "—".into(), "—".into())
        };
        let _ = writeln!(
            out,
            "| {} | {precision} | {} | {seconds:.1} | {rate:.0} | {:.0} | {:.0} | {:.0} % | {worst} | {mean} | {title} |",
            isa.name(),
            if Some(*isa) == chosen { "yes" } else { "no" },
            flops / 1e9,
            peak / 1e9,
            flops / peak * 100.0
        );
    }
    if let Some((f32_isa, f32_s, ..)) = rows.iter().find(|r| r.0 == Isa::Avx2Fma) {
        for (isa, seconds, ..) in rows.iter().filter(|r| r.0.has_bf16()) {
            let _ = writeln!(
                out,
                "\n{} embeds the same texts {:.2}× as fast as {}.",
                isa.name(),
                f32_s / seconds,
                f32_isa.name()
            );
        }
    }
    print!("{out}");
    if limit == usize::MAX {
        let file = root.join("bench/results/precision.md");
        std::fs::write(&file, out).expect("write bench/results/precision.md");
        eprintln!("written to {}", file.display());
    }
}
