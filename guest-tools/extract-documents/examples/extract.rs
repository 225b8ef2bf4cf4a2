//! Prints what the extractor reads out of files, and how long it took:
//! `cargo run --release --example extract --target x86_64-unknown-linux-gnu -- FILE... [--quiet]`.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quiet = args.iter().any(|a| a == "--quiet");
    for path in args.iter().filter(|a| !a.starts_with("--")) {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let start = Instant::now();
        let result = extract_documents::extract(path, &bytes);
        let secs = start.elapsed().as_secs_f64();
        match result {
            Ok(ex) => {
                let chars: usize = ex.parts.iter().map(|p| p.text.len()).sum();
                println!(
                    "== {path}: {} parts, {chars} bytes of text in {:.1} ms; title {:?}; {:?}",
                    ex.parts.len(),
                    secs * 1e3,
                    ex.title,
                    ex.metadata
                );
                if !quiet {
                    for p in &ex.parts {
                        println!("--- [{}]\n{}", p.label.as_deref().unwrap_or("-"), p.text);
                    }
                }
            }
            Err(e) => println!("== {path}: {e} ({:.1} ms)", secs * 1e3),
        }
    }
}
