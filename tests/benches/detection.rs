//! How often the keyword index tells a text's language right, by the text's
//! length, and what telling it costs: `cargo bench -p ragbox-tests --bench
//! detection`. Reads the Debian Reference's sections as bench/languages.py
//! lays them out (run it first), English, German and French (the sections a
//! translation left in English are left out), cuts each section's opening to
//! a length and tells its Latin-script language with the analyzer's own
//! `ragbox::fulltext::language::detect`. Writes bench/results/detection.md.

use ragbox::fulltext::language::{Language, detect};
use ragbox_tests::{cpu_flags, cpu_model, repo_root, report_head};
use std::fmt::Write as _;
use std::time::Instant;

/// Lengths of the opening told, in characters (`None`: the whole section).
const LENGTHS: [Option<usize>; 7] = [Some(40), Some(80), Some(150), Some(300), Some(600), Some(1200), None];

fn main() {
    let root = repo_root().join("bench/.cache/languages/ws");
    let mut report = report_head(
        "Telling a text's language, for the keyword index's stemmer",
        "`cargo test -p ragbox-tests --bench detection` (after `bench/languages.py`).",
    );
    writeln!(
        report,
        "Machine: {}; CPU flags: {}. The dev profile's build (whatlang optimised). Texts: the Debian \
         Reference's sections in English, German and French (translated ones only), each cut to its first \
         characters; told by `ragbox::fulltext::language::detect` (whatlang among the 14 Latin-script \
         languages stemmed; below 200 bytes of words, or below confidence 0.5, a text keeps English).\n",
        cpu_model(),
        cpu_flags()
    )
    .unwrap();
    writeln!(report, "Share told right, by the length of the text:\n").unwrap();
    let header: Vec<String> = LENGTHS.iter().map(|l| l.map_or("whole".to_string(), |n| format!("{n} chars"))).collect();
    writeln!(report, "| language | sections | {} |", header.join(" | ")).unwrap();
    writeln!(report, "|---|---|{}", "---|".repeat(LENGTHS.len())).unwrap();
    let (mut bytes, mut seconds, mut sections) = (0usize, 0f64, 0usize);
    for (code, language) in [("en", Language::English), ("de", Language::German), ("fr", Language::French)] {
        let Ok(list) = std::fs::read_to_string(root.join(format!("{code}.translated"))) else {
            panic!("{} is missing: run bench/languages.py first", root.join(format!("{code}.translated")).display());
        };
        let texts: Vec<String> =
            list.lines().filter_map(|name| std::fs::read_to_string(root.join(code).join(name)).ok()).collect();
        let mut cells = Vec::new();
        for length in LENGTHS {
            let right = texts
                .iter()
                .filter(|text| {
                    let cut: String = match length {
                        Some(n) => text.chars().take(n).collect(),
                        None => text.to_string(),
                    };
                    detect(&cut).latin == language
                })
                .count();
            cells.push(format!("{:.2}", right as f64 / texts.len() as f64));
        }
        writeln!(report, "| {code} | {} | {} |", texts.len(), cells.join(" | ")).unwrap();
        // Cost: every whole section told, best of 5 rounds.
        let best = (0..5)
            .map(|_| {
                let started = Instant::now();
                for text in &texts {
                    std::hint::black_box(detect(text));
                }
                started.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        bytes += texts.iter().map(String::len).sum::<usize>();
        sections += texts.len();
        seconds += best;
    }
    writeln!(
        report,
        "\nCost: {:.0} MB/s of whole sections ({:.1} µs a section of {:.1} KB on average; a text's first 64 KB \
         are scanned, at most 2 KB of its words told), on one thread.",
        bytes as f64 / seconds / 1e6,
        seconds * 1e6 / sections as f64,
        bytes as f64 / sections as f64 / 1e3
    )
    .unwrap();
    print!("{report}");
    let out = repo_root().join("bench/results/detection.md");
    std::fs::write(&out, report).expect("write bench/results/detection.md");
    eprintln!("wrote {}", out.display());
}
