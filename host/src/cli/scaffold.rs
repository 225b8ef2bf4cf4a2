//! `ragbox tools new NAME`: a tool component project, outside any checkout,
//! that builds with `make` and passes its own `make test`, in Rust, Python
//! (componentize-py) or JavaScript (componentize-js). It carries this binary's `wit/ragbox.wit`, so it fits
//! the host that made it.

use crate::runtime::WIT_VERSION;
use anyhow::Context;
use std::path::Path;

/// The language of a new tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// Rust, built for `wasm32-wasip2` with cargo.
    Rust,
    /// Python, built with componentize-py (pinned, installed into the project's `.venv`).
    Python,
    /// JavaScript, built with componentize-js (pinned, installed into `node_modules`).
    Js,
}

const WIT: &str = include_str!("../../../wit/ragbox.wit");
const README: &str = include_str!("scaffold/README.md.in");

/// A language's files: (path in the project, template).
fn files(lang: Lang) -> &'static [(&'static str, &'static str)] {
    match lang {
        Lang::Rust => &[
            ("Cargo.toml", include_str!("scaffold/rust/Cargo.toml.in")),
            ("Makefile", include_str!("scaffold/rust/Makefile.in")),
            (".gitignore", include_str!("scaffold/rust/gitignore.in")),
            ("src/lib.rs", include_str!("scaffold/rust/lib.rs.in")),
        ],
        Lang::Python => &[
            ("Makefile", include_str!("scaffold/python/Makefile.in")),
            (".gitignore", include_str!("scaffold/python/gitignore.in")),
            ("app.py", include_str!("scaffold/python/app.py.in")),
            ("logic.py", include_str!("scaffold/python/logic.py.in")),
            ("test_logic.py", include_str!("scaffold/python/test_logic.py.in")),
        ],
        Lang::Js => &[
            ("Makefile", include_str!("scaffold/js/Makefile.in")),
            (".gitignore", include_str!("scaffold/js/gitignore.in")),
            ("package.json", include_str!("scaffold/js/package.json.in")),
            ("app.js", include_str!("scaffold/js/app.js.in")),
            ("logic.js", include_str!("scaffold/js/logic.js.in")),
            ("test.js", include_str!("scaffold/js/test.js.in")),
        ],
    }
}

/// Writes a new tool named `name` in `lang` into `dir` (default `./NAME`),
/// which must not exist or be empty, and says how to build and try it.
pub fn new(name: &str, lang: Lang, dir: Option<&Path>) -> anyhow::Result<()> {
    check_name(name)?;
    let dir = dir.map_or_else(|| Path::new(name).to_path_buf(), Path::to_path_buf);
    if std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_some()) {
        anyhow::bail!("{} already holds files: give an empty or new folder with --dir", dir.display());
    }
    let user_tools = crate::config::user_config_dir()
        .map_or_else(|| "~/.config/ragbox/tools".to_string(), |d| d.join("tools").display().to_string());
    let (how, source) = match lang {
        Lang::Rust => ("Rust for wasm32-wasip2; the target is added if missing", "`src/lib.rs`"),
        Lang::Python => ("componentize-py, installed into .venv on first use", "`app.py` and `logic.py`"),
        Lang::Js => ("componentize-js, installed into node_modules on first use", "`app.js` and `logic.js`"),
    };
    let example = if lang == Lang::Js { "." } else { "README.md" };
    let readme = README.replace("{how}", how).replace("{source}", source).replace("{example}", example);
    let all = files(lang).iter().copied().chain([("README.md", readme.as_str()), ("wit/ragbox.wit", WIT)]);
    for (rel, template) in all {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let text = if rel.starts_with("wit/") { template.to_string() } else { fill(template, name, &user_tools) };
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    say!("made tool '{name}' in {} ({lang:?}, ragbox:tools@{WIT_VERSION})", dir.display());
    say!("  cd {} && make        # builds {name}.wasm; `make test` runs its tests", dir.display());
    say!("  cp {name}.wasm {user_tools}/ && ragbox tools call {name} '{{\"path\": \"{example}\"}}'");
    Ok(())
}

/// A tool name that is also a Cargo package name: a letter, then letters,
/// digits, `_` or `-`, at most 64.
fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        anyhow::bail!("{name:?} cannot name a tool: use a letter, then letters, digits, '_' or '-' (at most 64)");
    }
    Ok(())
}

/// `template` with its placeholders filled in.
fn fill(template: &str, name: &str, user_tools: &str) -> String {
    template
        .replace("{name}", name)
        .replace("{crate}", &name.replace('_', "-"))
        .replace("{lib}", &name.replace('-', "_"))
        .replace("{wit_version}", WIT_VERSION)
        .replace("{user_tools}", user_tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_filled_in() {
        for bad in ["", "9lives", "a b", "x/y", "ü"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        check_name("word_stats").unwrap();
        let text = fill("{crate} {lib} {name} {\"path\": 1} {wit_version}", "word_stats", "/t");
        assert_eq!(text, format!("word-stats word_stats word_stats {{\"path\": 1}} {WIT_VERSION}"));
    }

    #[test]
    fn a_folder_with_files_is_not_written_over() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
        let e = new("word_stats", Lang::Rust, Some(dir.path())).unwrap_err();
        assert!(e.to_string().contains("already holds files"), "{e}");
        let fresh = dir.path().join("new");
        new("word_stats", Lang::Rust, Some(&fresh)).unwrap();
        let lib = std::fs::read_to_string(fresh.join("src/lib.rs")).unwrap();
        assert!(lib.contains("name: \"word_stats\".into()") && !lib.contains("{name}"));
        assert!(std::fs::read_to_string(fresh.join("Cargo.toml")).unwrap().contains("name = \"word-stats\""));
        assert_eq!(
            std::fs::read_to_string(fresh.join("wit/ragbox.wit")).unwrap(),
            include_str!("../../../wit/ragbox.wit")
        );
    }
}
