//! The per-user embedding cache (issue 72): a second workspace holding the
//! same files (a git worktree, a clone) embeds nothing; a changed model,
//! prefix or chunk text embeds again; a cache file that is a link, a FIFO or
//! another user's is refused with its path and the fix; a read-only or full
//! cache folder degrades to embedding with one warning; a kill mid-write
//! and two writers at once leave it whole; the cap holds; a workspace's
//! `.ragbox/` is never read as a cache. Every fixture's cache is its own
//! folder (`Fixture::cache_dir`), never the user's.

use ragbox_tests::{ChunkSources, Fixture, chunk_sources, ok, shared_data};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where one `ragbox index` run's chunk vectors came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chunks {
    embedded: u64,
    from_cache: u64,
}

/// `ragbox index --json --timings` in `f`: its report, where its chunks' vectors came from, and its stderr.
fn index(f: &Fixture) -> (Value, Chunks, String) {
    let out = f.command(&["index", "--json", "--timings"]).stdin(Stdio::null()).output().expect("run ragbox index");
    indexed(out)
}

/// The report, the vectors' sources and the stderr of a finished `ragbox index --json --timings`.
fn indexed(out: Output) -> (Value, Chunks, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ragbox index failed: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("the report is JSON");
    let ChunkSources { embedded, from_cache, .. } = chunk_sources(&stderr);
    (report, Chunks { embedded, from_cache }, stderr)
}

/// `ragbox cache --json` in `f`.
fn cache_json(f: &Fixture) -> Value {
    let out = f.command(&["cache", "--json"]).output().expect("run ragbox cache");
    assert!(out.status.success(), "ragbox cache failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("ragbox cache --json prints JSON")
}

/// Says that a case needing root (chown, a mount namespace) is left out here;
/// fails instead where `RAGBOX_TEST_PRIVILEGED=1` demands it (`make test` as root sets it).
fn left_out(why: &str) {
    assert!(std::env::var_os("RAGBOX_TEST_PRIVILEGED").is_none_or(|v| v != "1"), "RAGBOX_TEST_PRIVILEGED=1, but {why}");
    eprintln!("{why} is left out (RAGBOX_TEST_PRIVILEGED=1 makes this a failure)");
}

/// A workspace holding the first `n` tldr pages, sharing `with`'s embedding cache.
fn sharing(with: &Fixture, n: usize) -> Fixture {
    let mut f = Fixture::tldr(n);
    f.cache_dir = with.cache_dir.clone();
    f
}

/// The cache file in `f`'s cache folder.
fn cache_file(f: &Fixture) -> PathBuf {
    f.cache_dir.join("embeddings.redb")
}

/// `ragbox search QUERY --semantic --json` in `f`, with the workspace's own path taken out.
fn semantic(f: &Fixture, query: &str) -> String {
    let out = f.command(&["search", query, "--semantic", "--json", "-n", "10"]).output().expect("run ragbox search");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).replace(&f.workspace.display().to_string(), "WS")
}

/// Lines of `stderr` that warn about the embedding cache.
fn cache_warnings(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("WARN") && l.contains("embedding cache")).collect()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A `git worktree add` of a repository indexed first embeds nothing: every
/// chunk's vector is found in the cache, its `.git` file (a pointer to the
/// main repository) is not indexed, and its semantic answers are the
/// first checkout's, score for score.
#[test]
fn a_worktree_of_an_indexed_repository_embeds_nothing() {
    let main = Fixture::tldr(40);
    main.write(".gitignore", ".ragbox/\n");
    git(&main.workspace, &["init", "-q"]);
    git(&main.workspace, &["add", "-A"]);
    git(&main.workspace, &["commit", "-qm", "pages"]);
    let (first, cold, _) = index(&main);
    assert_eq!(cold.from_cache, 0, "{cold:?}");
    assert!(cold.embedded > 0 && cold.embedded == first["chunks"].as_u64().unwrap(), "{cold:?} {first}");

    let mut tree = Fixture::empty();
    tree.cache_dir = main.cache_dir.clone();
    std::fs::remove_dir(&tree.workspace).unwrap();
    git(&main.workspace, &["worktree", "add", "-q", tree.workspace.to_str().unwrap()]);
    assert!(tree.workspace.join(".git").is_file(), "a worktree's .git is a file");
    let (report, warm, stderr) = index(&tree);
    assert_eq!(report["chunks"], first["chunks"], "{report}");
    assert_eq!(warm, Chunks { embedded: 0, from_cache: cold.embedded }, "{stderr}");
    let paths: Vec<String> = tree.store().documents().unwrap().into_iter().map(|d| d.path).collect();
    assert!(!paths.iter().any(|p| p.ends_with(".git") || p.contains(".git/")), "{paths:?}");
    assert_eq!(paths.len(), 41, "40 pages and .gitignore: {paths:?}");
    for query in ["extract an archive", "list files sorted by size"] {
        assert_eq!(semantic(&tree, query), semantic(&main, query), "{query}");
    }
    let stats = cache_json(&tree);
    assert_eq!((stats["entries"].as_u64(), stats["hits"].as_u64()), (Some(cold.embedded), Some(cold.embedded)));
}

/// Through the per-user service: a session in a second workspace with the
/// same files has `embed_workspace` find every vector in the cache that a
/// standalone `ragbox index` filled.
#[tokio::test]
async fn a_session_of_the_service_finds_what_a_standalone_index_kept() {
    let first = Fixture::tldr(30);
    let (_, cold, _) = index(&first);
    let second = sharing(&first, 30);
    let client = second.connect().await;
    let report = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!(report["embedded"], 30, "{report}");
    client.cancel().await.expect("the session ends");
    // The service counts its lookups in the file once its last session has gone.
    let deadline = Instant::now() + Duration::from_secs(20);
    while cache_json(&second)["hits"].as_u64() != Some(cold.embedded) {
        assert!(Instant::now() < deadline, "hits never counted: {}", cache_json(&second));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(cache_json(&second)["entries"].as_u64(), Some(cold.embedded), "nothing new was embedded");
}

/// A model folder beside the real one: its files linked, its config files
/// written as `configs` says (name, text).
fn model_copy(f: &Fixture, name: &str, configs: &[(&str, &str)]) -> PathBuf {
    let real = ragbox::embed::default_model_dir().expect("the model folder");
    let copy = f.dir.path().join(name);
    for entry in std::fs::read_dir(&real).unwrap().flatten() {
        let to = copy.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
            for inner in std::fs::read_dir(entry.path()).unwrap().flatten() {
                std::fs::copy(inner.path(), to.join(inner.file_name())).unwrap();
            }
        } else {
            std::fs::create_dir_all(&copy).unwrap();
            std::fs::hard_link(entry.path(), &to).unwrap();
        }
    }
    for (file, text) in configs {
        let _ = std::fs::remove_file(copy.join(file));
        std::fs::write(copy.join(file), text).unwrap();
    }
    copy
}

/// The key is the model and the exact text the encoder reads: a renamed
/// copy of the model finds every vector, a different token limit or passage
/// prefix finds none, and an edited file embeds only its changed chunk.
#[test]
fn a_changed_model_prefix_or_text_embeds_again() {
    let first = Fixture::tldr(12);
    let (_, cold, _) = index(&first);
    // (the copy's name, its config files written anew, whether its vectors are the first model's)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
    let cases: [Case; 3] = [
        ("renamed", &[], true),
        ("max-128", &[("sentence_bert_config.json", r#"{"max_seq_length": 128, "do_lower_case": false}"#)], false),
        ("prefixed", &[("config_sentence_transformers.json", r#"{"prompts": {"passage": "passage: "}}"#)], false),
    ];
    for (name, configs, hits) in cases {
        let f = sharing(&first, 12);
        let model = model_copy(&f, name, configs);
        f.write_user_config(&format!("model = {:?}\n", model.display().to_string()));
        let (_, warm, stderr) = index(&f);
        if hits {
            assert_eq!(warm, Chunks { embedded: 0, from_cache: cold.embedded }, "{name}: {stderr}");
        } else {
            // (A lower token limit also cuts the pages into more chunks.)
            assert!(warm.from_cache == 0 && warm.embedded >= cold.embedded, "{name}: {warm:?} {stderr}");
        }
    }

    // A page with a new last paragraph: its other chunks are found, the new one is embedded.
    let f = sharing(&first, 12);
    let long = shared_data().join("tldr/common");
    let mut text = String::new();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&long).unwrap().flatten().map(|e| e.path()).collect();
    pages.sort();
    for page in pages.iter().skip(200).take(30) {
        text.push_str(&std::fs::read_to_string(page).unwrap());
        text.push('\n');
    }
    f.write("long.md", &text);
    let (_, before, _) = index(&f);
    assert!(before.embedded >= 3, "long.md is several chunks: {before:?}");
    f.write("long.md", &format!("{text}\n## A new section\n\nPelicans keep their catch in a throat pouch.\n"));
    let (_, after, stderr) = index(&f);
    assert!(after.embedded >= 1 && after.embedded < before.embedded && after.from_cache >= 1, "{after:?} {stderr}");
}

/// A link, a FIFO or another user's file where the cache file belongs is
/// refused with its path and the fix, said once; indexing goes on, every
/// chunk embedded; what the link points at is untouched; `ragbox cache` and
/// `ragbox doctor` say what is wrong.
#[test]
fn a_cache_file_that_is_a_link_a_fifo_or_another_users_is_refused() {
    type Plant = fn(&Fixture, &Path);
    let mut cases: Vec<(&str, Plant)> = vec![
        ("a symbolic link", |f, elsewhere| {
            std::fs::create_dir_all(&f.cache_dir).unwrap();
            std::os::unix::fs::symlink(elsewhere, cache_file(f)).unwrap();
        }),
        ("a FIFO", |f, _| {
            std::fs::create_dir_all(&f.cache_dir).unwrap();
            assert!(Command::new("mkfifo").arg(cache_file(f)).status().unwrap().success());
        }),
    ];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cases.push(("another user", |f, _| {
            std::fs::create_dir_all(&f.cache_dir).unwrap();
            std::fs::write(cache_file(f), b"").unwrap();
            std::os::unix::fs::chown(cache_file(f), Some(65534), Some(65534)).unwrap();
        }));
    } else {
        left_out("not root: the case of another user's cache file needs chown");
    }
    for (kind, plant) in cases {
        let f = Fixture::tldr(6);
        // A real cache elsewhere, that a link would lead to.
        let other = Fixture::tldr(6);
        let (_, cold, _) = index(&other);
        let before = std::fs::read(cache_file(&other)).unwrap();
        plant(&f, &cache_file(&other));
        let (_, chunks, stderr) = index(&f);
        assert_eq!(chunks, Chunks { embedded: cold.embedded, from_cache: 0 }, "{kind}: {stderr}");
        let warned = cache_warnings(&stderr);
        assert_eq!(warned.len(), 1, "{kind}: one warning: {stderr}");
        let shown = cache_file(&f).display().to_string();
        assert!(warned[0].contains(&shown) && warned[0].contains(&format!("rm {shown}")), "{kind}: {}", warned[0]);
        let expected =
            if kind == "another user" { "belongs to another user".to_string() } else { format!("is {kind}") };
        assert!(warned[0].contains(&expected), "{kind}: {}", warned[0]);
        assert_eq!(std::fs::read(cache_file(&other)).unwrap(), before, "{kind}: the link's target was written");

        let out = f.command(&["cache"]).output().unwrap();
        assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains(&shown), "{kind}");
        let doctor = f.command(&["doctor"]).output().unwrap();
        let said = String::from_utf8_lossy(&doctor.stdout);
        // The cache is optional: a note, not a fault of the index.
        assert!(said.lines().any(|l| l.starts_with("note    cache") && l.contains(&shown)), "{kind}: {said}");
        assert!(!said.contains("BROKEN  cache"), "{kind}: {said}");
    }
}

/// Makes `dir` unwritable even for root (`chattr +i`), or for this user (mode 0555).
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn make(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert!(Command::new("chattr").arg("+i").arg(dir).status().expect("chattr runs").success());
        } else {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        assert!(std::fs::write(dir.join("probe"), b"").is_err(), "{} is still writable", dir.display());
        Self(dir.to_path_buf())
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
        use std::os::unix::fs::PermissionsExt as _;
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

/// A read-only cache folder: `ragbox index` and a session of the service
/// embed every chunk, with one warning that names the folder and the fix.
#[tokio::test]
async fn a_read_only_cache_folder_degrades_to_embedding_with_one_warning() {
    let f = Fixture::tldr(20);
    let _read_only = ReadOnly::make(&f.cache_dir);
    let (report, chunks, stderr) = index(&f);
    assert_eq!(chunks.from_cache, 0);
    assert_eq!(chunks.embedded, report["chunks"].as_u64().unwrap(), "{stderr}");
    let warned = cache_warnings(&stderr);
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(
        warned[0].contains(&f.cache_dir.display().to_string()) && warned[0].contains("enabled = false"),
        "{}",
        warned[0]
    );

    let second = sharing(&f, 20);
    let client = second.connect().await;
    let report = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!(report["embedded"], 20, "{report}");
    let found = ok(&client, "search", json!({ "query": "compress files", "search_type": "semantic" })).await;
    assert!(found.to_string().contains("pages/"), "{found}");
}

/// A full disk under the cache (a 256 KiB tmpfs, in a mount namespace of
/// its own): `ragbox index` embeds every chunk, with one warning.
#[test]
fn a_full_cache_disk_degrades_to_embedding_with_one_warning() {
    let probe = Command::new("unshare").args(["-m", "--", "mount", "-t", "tmpfs", "tmpfs", "/mnt"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return left_out("no mount namespace to be had here (needs root): the full-disk case");
    }
    let f = Fixture::tldr(60);
    std::fs::create_dir_all(&f.cache_dir).unwrap();
    let cmd = f.command(&["index", "--json", "--timings"]);
    let inner = format!("mount -t tmpfs -o size=256k tmpfs {dir} && exec \"$0\" \"$@\"", dir = f.cache_dir.display());
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let mut wrapped = Command::new("unshare");
    wrapped.args(["-m", "--", "sh", "-c", &inner]).arg(program).args(args);
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped.current_dir(&f.workspace).stdin(Stdio::null());
    let (report, chunks, stderr) = indexed(wrapped.output().unwrap());
    assert_eq!(chunks.embedded, report["chunks"].as_u64().unwrap(), "{stderr}");
    let warned = cache_warnings(&stderr);
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(warned[0].contains("No space left on device") || warned[0].contains("os error 28"), "{}", warned[0]);
}

/// `ragbox index` killed with SIGKILL while it writes, four times: each time
/// once the cache holds a new batch, at the next change to the file (polled
/// every half millisecond, so the kill lands in a commit's writes): the cache
/// opens whole afterwards, with no warning, and what it kept is found by the
/// next workspace.
#[test]
fn a_kill_mid_write_loses_at_most_that_batch() {
    let first = Fixture::tldr(400);
    let modified = |f: &Fixture| std::fs::metadata(cache_file(f)).and_then(|m| m.modified()).ok();
    for _ in 0..4 {
        let mut child =
            first.command(&["index"]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let kept_before = if cache_file(&first).exists() { cache_json(&first)["entries"].as_u64().unwrap() } else { 0 };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !cache_file(&first).exists() || cache_json(&first)["entries"].as_u64().unwrap() <= kept_before {
            assert!(Instant::now() < deadline && child.try_wait().unwrap().is_none(), "no batch was kept");
            std::thread::sleep(Duration::from_millis(50));
        }
        let seen = modified(&first);
        while modified(&first) == seen {
            assert!(Instant::now() < deadline && child.try_wait().unwrap().is_none(), "no other write came");
            std::thread::sleep(Duration::from_micros(500));
        }
        // SAFETY: kill with the pid of a child this test spawned and has not reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        std::fs::remove_dir_all(first.workspace.join(".ragbox")).unwrap();
    }
    let kept = cache_json(&first)["entries"].as_u64().unwrap();
    let second = sharing(&first, 400);
    let (report, chunks, stderr) = index(&second);
    assert!(kept > 0 && chunks.from_cache >= kept, "{chunks:?} of {kept} kept: {stderr}");
    assert_eq!(chunks.from_cache + chunks.embedded, report["chunks"].as_u64().unwrap(), "{stderr}");
    assert!(cache_warnings(&stderr).is_empty(), "{stderr}");
}

/// Two `ragbox index` at once on workspaces with the same files write the
/// same keys into one cache: both finish without a word about the cache,
/// it holds one entry per text, and a third workspace embeds nothing.
#[test]
fn two_processes_writing_the_same_keys_are_fine() {
    let a = Fixture::tldr(120);
    let b = sharing(&a, 120);
    let spawn = |f: &Fixture| f.command(&["index", "--json", "--timings"]).stdin(Stdio::null()).output();
    let (ra, rb) = std::thread::scope(|s| {
        let ja = s.spawn(|| spawn(&a));
        let jb = s.spawn(|| spawn(&b));
        (ja.join().unwrap().unwrap(), jb.join().unwrap().unwrap())
    });
    let (report, ca, ea) = indexed(ra);
    let (_, cb, eb) = indexed(rb);
    assert!(cache_warnings(&ea).is_empty() && cache_warnings(&eb).is_empty(), "{ea}\n{eb}");
    let chunks = report["chunks"].as_u64().unwrap();
    assert_eq!(ca.from_cache + ca.embedded, chunks);
    assert_eq!(cb.from_cache + cb.embedded, chunks);
    let c = sharing(&a, 120);
    let (_, cc, _) = index(&c);
    assert_eq!(cc, Chunks { embedded: 0, from_cache: chunks });
    let stats = cache_json(&c);
    assert!(stats["entries"].as_u64().unwrap() <= chunks, "{stats}");
}

/// `[cache] max_mib` in the user's config caps the cache: past it the
/// least recently used entries go, and `ragbox cache prune` after the cap
/// is lowered removes more and gives the file's space back.
#[test]
fn the_cap_holds_and_prune_gives_space_back() {
    let a = Fixture::tldr(600);
    a.write_user_config("[cache]\nmax_mib = 1\n");
    let (report, chunks, stderr) = index(&a);
    assert!(chunks.embedded > 600, "enough chunks to pass 1 MiB: {report}");
    let stats = cache_json(&a);
    assert!(stats["bytes"].as_u64().unwrap() <= 1 << 20, "{stats} {stderr}");
    let kept = stats["entries"].as_u64().unwrap();
    assert!(kept > 0 && kept < chunks.embedded, "{stats}");
    // The least recently used went: the first pages indexed (in path order) are gone, and
    // every entry kept is found again (both under the default cap, so that they evict nothing).
    let (_, oldest, _) = index(&sharing(&a, 100));
    assert_eq!(oldest.from_cache, 0, "the first pages indexed went first: {oldest:?}");
    let (_, again, _) = index(&sharing(&a, 600));
    assert_eq!(again.from_cache, kept + oldest.embedded, "what was kept, and what the first pages put back: {again:?}");

    a.write_user_config("[cache]\nmax_mib = 0\n");
    let before = std::fs::metadata(cache_file(&a)).unwrap().len();
    let out = a.command(&["cache", "prune", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pruned: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(pruned["removed"].as_u64().unwrap() > 0 && pruned["compacted"] == true, "{pruned}");
    assert_eq!(cache_json(&a)["entries"], 0);
    assert!(std::fs::metadata(cache_file(&a)).unwrap().len() < before, "{pruned}");
}

/// `ragbox cache` shows the file, the entries, the size and the hit rate;
/// `clear` removes it, and the next index embeds again; `ragbox doctor` has a line for it.
#[test]
fn ragbox_cache_shows_prunes_and_clears() {
    let a = Fixture::tldr(10);
    let out = a.command(&["cache"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("nothing yet"), "{said}");
    assert!(!cache_file(&a).exists(), "looking made a file");
    let (_, cold, _) = index(&a);
    let b = sharing(&a, 10);
    index(&b);
    let out = a.command(&["cache"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let shown = cache_file(&a).display().to_string();
    assert!(said.contains(&shown), "{said}");
    assert!(said.contains(&format!("{} vectors", cold.embedded)), "{said}");
    assert!(said.contains("50.0 % hit rate"), "{said}");
    let doctor = String::from_utf8_lossy(&a.command(&["doctor"]).output().unwrap().stdout).into_owned();
    assert!(doctor.lines().any(|l| l.starts_with("ok      cache") && l.contains(&shown)), "{doctor}");

    let out = a.command(&["cache", "clear"]).output().unwrap();
    assert!(out.status.success() && !cache_file(&a).exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = sharing(&a, 10);
    let (_, chunks, _) = index(&c);
    assert_eq!(chunks, Chunks { embedded: cold.embedded, from_cache: 0 });

    a.write_user_config("[cache]\nenabled = false\n");
    let d = sharing(&a, 10);
    d.write_user_config("[cache]\nenabled = false\n");
    let (_, off, _) = index(&d);
    assert_eq!(off, Chunks { embedded: cold.embedded, from_cache: 0 }, "a cache turned off is not read");
    let said = String::from_utf8_lossy(&d.command(&["cache"]).output().unwrap().stdout).into_owned();
    assert!(said.contains("[cache] enabled = false"), "{said}");
}

/// A workspace's `.ragbox/` is never read as a cache: a clone that ships a
/// full cache file there (or names one in its own config) gets every chunk
/// embedded, and the cache its config names is ignored and reported.
#[test]
fn a_workspace_cache_is_never_read() {
    let a = Fixture::tldr(10);
    let (_, cold, _) = index(&a);
    let clone = Fixture::tldr(10);
    std::fs::create_dir_all(clone.workspace.join(".ragbox")).unwrap();
    std::fs::copy(cache_file(&a), clone.workspace.join(".ragbox/embeddings.redb")).unwrap();
    clone.write(".ragbox/config.toml", "[cache]\nmax_mib = 1\n");
    let (_, chunks, stderr) = index(&clone);
    assert_eq!(chunks, Chunks { embedded: cold.embedded, from_cache: 0 }, "{stderr}");
    assert!(stderr.contains("ignored [cache]"), "{stderr}");
    assert_eq!(cache_json(&clone)["max_bytes"], 1024u64 << 20, "the workspace does not size the user's cache");
}

/// A text a client sends (search_similar's reference text) is embedded as it
/// comes: it is never kept in the cache, which holds only what an index embedded.
#[test]
fn a_clients_reference_text_is_never_kept() {
    let f = Fixture::tldr(5);
    index(&f);
    let before = cache_json(&f)["entries"].as_u64().unwrap();
    let args = json!({ "reference_text": "a sentence this client wrote, in no page at all" });
    let out = f.command(&["tools", "call", "search_similar", &args.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(cache_json(&f)["entries"].as_u64().unwrap(), before, "the client's text was kept");
}

/// `ragbox cache clear --team` without a shared store is refused before
/// anything is removed: this user's cache is left whole.
#[test]
fn clear_team_without_a_shared_store_removes_nothing() {
    let f = Fixture::tldr(3);
    index(&f);
    let before = cache_json(&f)["entries"].as_u64().unwrap();
    let out = f.command(&["cache", "clear", "--team", "--yes"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("no shared store"), "{said}");
    assert_eq!(cache_json(&f)["entries"].as_u64().unwrap(), before, "the local cache was cleared anyway");
}

/// `ragbox cache clear` removes a cache file it cannot read (damaged), as it is there for.
#[test]
fn clear_removes_a_damaged_file() {
    let f = Fixture::tldr(1);
    std::fs::create_dir_all(&f.cache_dir).unwrap();
    std::fs::write(cache_file(&f), vec![0x5a; 64 << 10]).unwrap();
    let out = f.command(&["cache", "clear"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!cache_file(&f).exists());
}
