//! Builds the `guest-tools` workspace for wasm32-wasip2 and embeds every tool
//! component in the `ragbox` binary, so the binary is one self-contained file.

use sha2::{Digest as _, Sha256};
use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.parent().expect("host/ sits in the repository root").to_path_buf();
    let guests = root.join("guest-tools");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));

    println!("cargo:rerun-if-changed={}", root.join("wit").display());
    println!("cargo:rerun-if-changed={}", guests.join("Cargo.toml").display());
    println!("cargo:rerun-if-changed={}", guests.join("Cargo.lock").display());
    // The result shapes the guests build (and their output schemas) live outside guest-tools/.
    println!("cargo:rerun-if-changed={}", root.join("protocol").join("src").display());
    println!("cargo:rerun-if-changed={}", root.join("protocol").join("Cargo.toml").display());

    let tools = tool_crates(&guests);
    for dir in tools.iter().map(|(_, dir)| dir).chain([&guests.join("sdk")]) {
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        println!("cargo:rerun-if-changed={}", dir.join("Cargo.toml").display());
    }

    // A separate target dir: the outer cargo holds a lock on its own.
    let target_dir = root.join("target").join("guest-tools");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&guests).args(["build", "--release", "--target", "wasm32-wasip2", "--target-dir"]).arg(&target_dir);
    // The outer build's flags and target settings are for the host, not for wasm.
    for var in
        ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "CARGO_TARGET_DIR", "RUSTC_WORKSPACE_WRAPPER"]
    {
        cmd.env_remove(var);
    }
    // So are its profile overrides (`CARGO_PROFILE_RELEASE_STRIP=false` would
    // embed unstripped guests, 33 MB more); guest-tools/Cargo.toml sets theirs.
    for (var, _) in env::vars_os().filter(|(var, _)| var.to_string_lossy().starts_with("CARGO_PROFILE_")) {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("failed to run cargo for guest-tools");
    if !status.success() {
        panic!(
            "building guest-tools for wasm32-wasip2 failed (see above). \
             If the target is missing: `rustup target add wasm32-wasip2` (or `make setup`)."
        );
    }

    // Extractor crates are named extract-*; the rest are tools.
    let mut generated = String::new();
    for (konst, doc, extractors) in [
        ("BUILTIN_TOOLS", "Tool components built from `guest-tools/`", false),
        ("BUILTIN_EXTRACTORS", "Extractor components (`extract-*`) built from `guest-tools/`", true),
    ] {
        writeln!(generated, "/// {doc}.").expect("write to String");
        writeln!(generated, "pub const {konst}: &[Builtin] = &[").expect("write to String");
        for (name, _) in tools.iter().filter(|(name, _)| name.starts_with("extract-") == extractors) {
            let wasm = target_dir.join("wasm32-wasip2/release").join(format!("{}.wasm", name.replace('-', "_")));
            let bytes = std::fs::read(&wasm)
                .unwrap_or_else(|e| panic!("expected {} after building guest-tools: {e}", wasm.display()));
            // Hashed here, not at every start: 13 MB of components took ~10 ms of each.
            // The compile cache finds compiled code by this digest, so it must be of
            // the bytes embedded: those of a copy only this script writes. (Watching
            // the guest build's own file instead reran this script, and rebuilt the
            // host, on the next cargo call: the file is newer than the script's run.)
            let sha256 = hex::encode(Sha256::digest(&bytes));
            let copy = out_dir.join(format!("{name}.wasm"));
            std::fs::write(&copy, &bytes).unwrap_or_else(|e| panic!("write {}: {e}", copy.display()));
            let path = copy.display().to_string();
            writeln!(
                generated,
                "    Builtin {{ name: {name:?}, bytes: include_bytes!({path:?}), sha256: {sha256:?} }},"
            )
            .expect("write to String");
        }
        generated.push_str("];\n");
    }
    std::fs::write(out_dir.join("builtin_tools.rs"), generated).expect("write builtin_tools.rs");
}

/// The component crates of the guest workspace (tools and extractors): every
/// member folder except `sdk` (the shared library) and `fuzz` (cargo fuzz
/// targets, outside the workspace).
fn tool_crates(guests: &Path) -> Vec<(String, PathBuf)> {
    let mut tools: Vec<(String, PathBuf)> = std::fs::read_dir(guests)
        .expect("read guest-tools/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").exists() && p.file_name().is_some_and(|n| n != "sdk" && n != "fuzz"))
        .map(|p| (p.file_name().expect("has a name").to_string_lossy().into_owned(), p))
        .collect();
    tools.sort();
    tools
}
