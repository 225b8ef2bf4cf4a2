//! The README's commands: every shell block in it says what runs it, and the
//! blocks this file runs run as written, in a fresh home with this build's
//! `ragbox` first on the PATH.

use ragbox_tests::{Fixture, repo_root};
use serde_json::{Value, json};

/// Where a block says it is run: the comment line just before its fence.
const MARK: &str = "<!-- readme: ";
/// The mark of the blocks this file runs.
const RUN_HERE: &str = "run by tests/e2e/readme.rs";

/// Every ```sh block of `text`, with the mark above it (if any).
fn shell_blocks(text: &str) -> Vec<(Option<&str>, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] == "```sh" {
            let mark = i
                .checked_sub(1)
                .map(|j| lines[j])
                .and_then(|l| l.strip_prefix(MARK))
                .map(|m| m.trim_end_matches(" -->"));
            let body: Vec<&str> = lines[i + 1..].iter().take_while(|l| **l != "```").copied().collect();
            i += body.len() + 1;
            blocks.push((mark, body.join("\n")));
        }
        i += 1;
    }
    blocks
}

#[test]
fn every_command_in_the_readme_says_what_runs_it() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let blocks = shell_blocks(&readme);
    assert!(blocks.len() >= 3, "the README's shell blocks: {blocks:?}");
    for (mark, block) in &blocks {
        let mark = mark.unwrap_or_else(|| panic!("this README block says nothing of what runs it:\n{block}"));
        assert!(mark.starts_with("run by ") || mark.starts_with("not run ("), "{mark}");
        // A script or test named as the runner exists.
        for named in mark.split(['`', ' ', ';', ',']).filter(|w| w.contains('/') && w.contains('.')) {
            assert!(repo_root().join(named).is_file(), "{named}, named in the README, is not a file");
        }
    }
    assert!(blocks.iter().any(|(mark, _)| *mark == Some(RUN_HERE)), "no block is run here");
}

#[cfg(unix)]
#[test]
fn the_readme_first_steps_run_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let f = Fixture::empty();
    let home = f.dir.path().join("home");
    let project = home.join("my-project");
    copy_tree(&repo_root().join("examples/workspace"), &project);
    let bin = ragbox_tests::ragbox_bin().parent().unwrap().to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&path))).unwrap();
    // The model is where this machine keeps it; the home is new.
    let model = ragbox::embed::default_model_dir().expect("a model folder");
    for (_, block) in shell_blocks(&readme).into_iter().filter(|(mark, _)| *mark == Some(RUN_HERE)) {
        let out = std::process::Command::new("sh")
            .args(["-eu", "-c", &block])
            .current_dir(&home)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", &home)
            .env("RAGBOX_MODEL", &model)
            .env("RAGBOX_COMPILE_CACHE", ragbox_tests::shared_cache_dir())
            .env("RAGBOX_PACKED_CACHE", ragbox_tests::shared_packed_dir())
            .env("RAGBOX_SERVICE_DIR", f.service_dir())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run sh");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{block}\n{stdout}\n{stderr}");
        assert!(stdout.contains("created .mcp.json (Claude Code)"), "{stdout}");
        assert!(stdout.contains("by keyword for \"idle timeout\":"), "{stdout}");
    }
    let mcp: Value = serde_json::from_str(&std::fs::read_to_string(project.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(
        mcp["mcpServers"]["ragbox"],
        json!({"type": "stdio", "command": "ragbox", "args": ["serve", "--workspace", ".", "--watch", "--tools", "core"]})
    );
    assert!(project.join(".ragbox/store.redb").is_file(), "ragbox index made the index");
}

/// Copies the folder `from` to `to`, files and folders only.
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
