//! MCP's Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): a
//! workspace's skills served through `skills/list`, `skills/get`,
//! `resources/directory/read` and `resources/read`, held to the
//! specification's MUSTs with raw JSON-RPC over stdio (2025-06-18) and over
//! HTTP (2026-07-28, with its caching attributes) on the real skills libraries
//! (`../shared/data/skills`), every digest recomputed from the files; loaded
//! and verified by the official Rust SDK's client; refused with the reason
//! for hostile folders; and told to a `--watch` client as skills change.

use crate::skills::{library, matches};
use ragbox_tests::{Fixture, Raw};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

const EXTENSION: &str = "io.modelcontextprotocol/skills";
const DIRECTORY: &str = "inode/directory";
const NOT_SERVED: &str = "ragbox/notServed";
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// A client speaking raw JSON-RPC.
trait Rpc {
    /// The reply to `method` with `params` (its `result` or its `error`).
    fn call(&mut self, method: &str, params: Value) -> Value;
    /// Whether it speaks a revision that defines `resultType`, `ttlMs` and `cacheScope` (2026-07-28).
    fn caches(&self) -> bool;
}

/// `ragbox serve` over stdio, a 2025-06-18 client after `initialize`.
struct Stdio {
    raw: Raw,
    id: u64,
}

impl Stdio {
    /// Starts `ragbox` with `args` on `f`; the server and its `initialize` result.
    fn start(f: &Fixture, args: &[&str]) -> (Self, Value) {
        let mut raw = Raw::spawn(f, args);
        raw.send(INITIALIZE);
        let init = raw.recv();
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        (Self { raw, id: 0 }, init["result"].clone())
    }
}

impl Rpc for Stdio {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.raw.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        loop {
            let reply = self.raw.recv_within(Duration::from_secs(120));
            if reply["id"] == id {
                return reply;
            }
        }
    }

    fn caches(&self) -> bool {
        false
    }
}

/// `ragbox serve --http`, a 2026-07-28 client: no session, each request on its own.
impl Rpc for &ragbox_tests::HttpServer {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.request(method, params)
    }

    fn caches(&self) -> bool {
        true
    }
}

/// The result of a reply that must succeed.
fn result(reply: Value) -> Value {
    assert!(reply.get("error").is_none() && reply["result"].is_object(), "{reply:.2000}");
    reply["result"].clone()
}

/// The message of a reply that must fail with -32602 (Invalid params).
fn invalid(reply: &Value) -> String {
    assert_eq!(reply["error"]["code"], -32602, "{reply:.2000}");
    reply["error"]["message"].as_str().unwrap_or_default().to_string()
}

/// The caching attributes: on a revision that defines them, present (a
/// complete result, how long it is fresh, who may cache it); else absent.
fn check_caching(result: &Value, caches: bool) {
    if caches {
        assert_eq!(result["resultType"], "complete", "{result:.300}");
        assert!(result["ttlMs"].is_u64(), "{result:.300}");
        assert!(matches!(result["cacheScope"].as_str(), Some("public" | "private")), "{result:.300}");
    } else {
        for absent in ["resultType", "ttlMs", "cacheScope"] {
            assert!(result.get(absent).is_none(), "{absent} on a 2025-06-18 result: {result:.300}");
        }
    }
}

/// Every `skills/list` page, walked to the end: the entries, what the pages
/// named as not served, and how many pages there were.
fn list_all(rpc: &mut dyn Rpc) -> (Vec<Value>, Vec<Value>, usize) {
    let (mut entries, mut not_served, mut pages) = (Vec::new(), Vec::new(), 0);
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let page = result(rpc.call("skills/list", params));
        check_caching(&page, rpc.caches());
        pages += 1;
        assert!(pages < 100, "skills/list does not end");
        entries.extend(page["skills"].as_array().expect("skills").iter().cloned());
        not_served.extend(page["_meta"][NOT_SERVED].as_array().into_iter().flatten().cloned());
        match page["nextCursor"].as_str() {
            Some(next) => {
                assert_ne!(cursor.as_deref(), Some(next), "the cursor moves on");
                cursor = Some(next.to_string());
            }
            None => return (entries, not_served, pages),
        }
    }
}

/// The workspace-relative path a `skill://` URI names, as this test decodes it.
fn path_of(uri: &str) -> String {
    let rest = uri.strip_prefix("skill://").unwrap_or_else(|| panic!("not a skill:// URI: {uri}"));
    let decode = |name: &str| {
        let mut bytes = Vec::new();
        let mut rest = name.as_bytes();
        while let Some((&b, tail)) = rest.split_first() {
            if b == b'%' {
                let hex = std::str::from_utf8(&tail[..2]).expect("hex");
                bytes.push(u8::from_str_radix(hex, 16).expect("hex"));
                rest = &tail[2..];
            } else {
                bytes.push(b);
                rest = tail;
            }
        }
        String::from_utf8(bytes).expect("UTF-8")
    };
    rest.split('/').map(decode).collect::<Vec<_>>().join("/")
}

/// The regular files beneath `dir`, relative to it, with their bytes: no
/// link followed, no data or version-control folder.
fn files_on_disk(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![String::new()];
    while let Some(sub) = pending.pop() {
        for entry in std::fs::read_dir(dir.join(&sub)).expect("read folder").flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if sub.is_empty() { name.clone() } else { format!("{sub}/{name}") };
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() && ![".git", ".ragbox", ".hg", ".svn"].contains(&name.to_ascii_lowercase().as_str()) {
                pending.push(rel);
            } else if kind.is_file() {
                files.insert(rel, std::fs::read(entry.path()).expect("read file"));
            }
        }
    }
    files
}

/// A frontmatter's top-level keys and their one-line values, read line by line.
fn frontmatter_lines(text: &str) -> BTreeMap<String, String> {
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
    assert_eq!(lines.next(), Some("---"), "a frontmatter first");
    lines
        .take_while(|l| *l != "---")
        .filter(|l| !l.starts_with([' ', '\t', '#', '-']) && l.contains(':'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().trim_matches(['"', '\'']).to_string(), v.trim().trim_matches(['"', '\'']).to_string()))
        .collect()
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// The bytes a `resources/read` result carries.
fn read_bytes(result: &Value) -> Vec<u8> {
    let content = &result["contents"][0];
    match (content["text"].as_str(), content["blob"].as_str()) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (_, Some(blob)) => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(blob).expect("base64")
        }
        _ => panic!("no content: {result:.300}"),
    }
}

/// Checks one entry against the files it describes: every MUST the
/// specification puts on an entry. The skill's folder.
fn check_entry(ws: &Path, entry: &Value) -> String {
    let uri = entry["uri"].as_str().expect("uri");
    let root = uri.strip_suffix("SKILL.md").filter(|r| r.ends_with('/')).expect("the URI of a SKILL.md");
    let folder = path_of(root.trim_end_matches('/'));
    // The final segment of the skill path is the frontmatter's name.
    let name = entry["frontmatter"]["name"].as_str().expect("a name");
    assert_eq!(root.trim_end_matches('/').rsplit('/').next(), Some(name), "{uri}");
    assert!(entry["frontmatter"]["description"].is_string(), "{uri}");
    // Every field the author wrote, and no other.
    let text = std::fs::read_to_string(ws.join(&folder).join("SKILL.md")).expect("the SKILL.md");
    let lines = frontmatter_lines(&text);
    let keys: BTreeSet<&String> = entry["frontmatter"].as_object().expect("an object").keys().collect();
    assert_eq!(keys, lines.keys().collect(), "{uri}: the frontmatter's fields");
    assert_eq!(Some(name), lines.get("name").map(String::as_str), "{uri}");
    // The files: complete, each once, within the skill, with their size and SHA-256.
    let resources = entry["resources"].as_array().expect("a manifest, not \"dynamic\"");
    let mut listed = BTreeMap::new();
    for file in resources {
        let file_uri = file["uri"].as_str().expect("uri");
        let rel = file_uri.strip_prefix(root).unwrap_or_else(|| panic!("{file_uri} is not within {root}"));
        let digest = file["digest"].as_str().expect("digest");
        let hex = digest.strip_prefix("sha256:").expect("sha256:");
        assert!(hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{digest}");
        let size = file["size"].as_u64().expect("size");
        assert!(
            listed.insert(path_of(&format!("skill://{rel}")), (digest.to_string(), size)).is_none(),
            "{file_uri} twice"
        );
    }
    let on_disk = files_on_disk(&ws.join(&folder));
    assert_eq!(listed.keys().collect::<Vec<_>>(), on_disk.keys().collect::<Vec<_>>(), "{uri}: every file");
    for (rel, bytes) in &on_disk {
        assert_eq!(listed[rel], (digest(bytes), bytes.len() as u64), "{uri}: {rel}");
    }
    assert!(listed.contains_key("SKILL.md"), "{uri} lists its SKILL.md");
    assert!(resources.len() <= 512 && listed.values().map(|(_, s)| s).sum::<u64>() <= 16 << 20, "{uri}");
    folder
}

/// Every file beneath the directory `uri`, by directory reads alone.
fn files_by_directory(rpc: &mut dyn Rpc, uri: &str) -> BTreeSet<String> {
    let (mut files, mut pending) = (BTreeSet::new(), vec![uri.to_string()]);
    while let Some(dir) = pending.pop() {
        let mut cursor: Option<String> = None;
        loop {
            let mut params = json!({"uri": dir});
            if let Some(c) = &cursor {
                params["cursor"] = json!(c);
            }
            let page = result(rpc.call("resources/directory/read", params));
            for child in page["resources"].as_array().expect("resources") {
                let child_uri = child["uri"].as_str().expect("uri");
                let name = child["name"].as_str().expect("name");
                // Direct children only, named as in their folder.
                assert_eq!(child_uri.strip_prefix(&format!("{dir}/")).map(path_of_name), Some(name.to_string()));
                if child["mimeType"] == DIRECTORY {
                    pending.push(child_uri.to_string());
                } else {
                    files.insert(child_uri.to_string());
                }
            }
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
    }
    files
}

/// One name of a URI, decoded.
fn path_of_name(name: &str) -> String {
    path_of(&format!("skill://{name}"))
}

/// The skill folders of `dir` (workspace `ws`) whose SKILL.md names them as
/// the Agent Skills specification wants.
fn conforming(ws: &Path, dir: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut pending = vec![ws.join(dir)];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if entry.file_name() == "SKILL.md" {
                let lines = frontmatter_lines(&std::fs::read_to_string(&path).expect("read"));
                let folder = path.parent().expect("folder").strip_prefix(ws).expect("in the workspace");
                let folder = folder.to_string_lossy().replace('\\', "/");
                if lines.get("name").is_some_and(|n| folder.rsplit('/').next() == Some(n.as_str())) {
                    out.insert(folder);
                }
            }
        }
    }
    out
}

/// Indexes `f` with `ragbox index`.
fn index(f: &Fixture) {
    let out = f.command(&["index"]).output().expect("ragbox index");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Writes a skill called `name` in `folder`, with `files` beside its SKILL.md.
fn skill(f: &Fixture, folder: &str, name: &str, files: &[(&str, &[u8])]) {
    f.write(
        &format!("{folder}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: The {name} skill.\n---\n# {name}\n"),
    );
    for (rel, bytes) in files {
        f.write_bytes(&format!("{folder}/{rel}"), bytes);
    }
}

/// Every MUST, on one transport: the listing walked to the end, each entry
/// checked against its files and fetched again with skills/get, every file
/// read and checked against its digest, every directory read, and the errors.
fn check_library(rpc: &mut dyn Rpc, ws: &Path, expected: &BTreeSet<String>) {
    let (entries, not_served, pages) = list_all(rpc);
    assert!(pages >= 7, "339 indexed skills, 50 a page: {pages} pages");
    // An entry is atomic: no skill on two pages.
    let folders: BTreeSet<String> = entries.iter().map(|e| check_entry(ws, e)).collect();
    assert_eq!(folders.len(), entries.len(), "a skill listed twice");
    assert_eq!(&folders, expected, "every skill whose folder is named as the skill");
    // The indexed SKILL.md whose folder is named otherwise are named, with why.
    let named: BTreeMap<&str, &str> =
        not_served.iter().map(|n| (n["path"].as_str().expect("path"), n["reason"].as_str().expect("reason"))).collect();
    assert_eq!(
        named.keys().copied().collect::<Vec<_>>(),
        [
            "skills/anthropics+skills/template/SKILL.md",
            "skills/wshobson+agents/plugins/database-design/skills/postgresql/SKILL.md"
        ]
    );
    assert!(named.values().all(|why| why.contains("rename one")), "{named:?}");
    // A name is a label: the two skill-creator skills are both listed, by their URIs.
    let creators: Vec<&str> = entries
        .iter()
        .filter(|e| e["frontmatter"]["name"] == "skill-creator")
        .filter_map(|e| e["uri"].as_str())
        .collect();
    assert_eq!(creators.len(), 2, "{creators:?}");

    for entry in &entries {
        let uri = entry["uri"].as_str().expect("uri");
        let got = result(rpc.call("skills/get", json!({"uri": uri})));
        check_caching(&got, rpc.caches());
        assert!(got.get("nextCursor").is_none(), "skills/get carries no cursor");
        assert_eq!(&got["skill"], entry, "skills/get gives the listed entry");
        let mut manifest = BTreeSet::new();
        for file in entry["resources"].as_array().expect("files") {
            let file_uri = file["uri"].as_str().expect("uri");
            let read = result(rpc.call("resources/read", json!({"uri": file_uri})));
            let bytes = read_bytes(&read);
            assert_eq!(
                (digest(&bytes), bytes.len() as u64),
                (file["digest"].as_str().expect("digest").to_string(), file["size"].as_u64().expect("size")),
                "{file_uri}"
            );
            if file_uri == uri {
                assert_eq!(read["contents"][0]["mimeType"], "text/markdown");
            }
            manifest.insert(file_uri.to_string());
        }
        let root = uri.strip_suffix("/SKILL.md").expect("a SKILL.md URI");
        assert_eq!(files_by_directory(rpc, root), manifest, "{root}: directory reads reach every file");
    }

    // A skill written after the index was made: served by its URI, not listed.
    let late = result(rpc.call("skills/get", json!({"uri": "skill://late/late-skill/SKILL.md"})));
    assert_eq!(check_entry(ws, &late["skill"]), "late/late-skill");
    assert!(!folders.contains("late/late-skill"));

    // What is not a skill served is -32602, with why.
    let postgres = "skill://skills/wshobson+agents/plugins/database-design/skills/postgresql/SKILL.md";
    for (uri, why) in [
        ("skill://skills/no-such-skill/SKILL.md", "No skill is served at skill://skills/no-such-skill/SKILL.md"),
        (postgres, "its folder is called 'postgresql' but its name is 'postgresql-table-design'"),
        ("skill://broken/SKILL.md", "not valid YAML"),
        ("skill://plain/SKILL.md", "no YAML frontmatter"),
        ("skill://skills/anthropics+skills/skills/canvas-design", "SKILL.md"),
        ("skill://skills/anthropics+skills/skills/canvas-design/../pptx/SKILL.md", "'..'"),
    ] {
        let message = invalid(&rpc.call("skills/get", json!({"uri": uri})));
        assert!(message.contains(why), "{uri}: {message}");
    }
    let canvas = "skill://skills/anthropics+skills/skills/canvas-design";
    for (uri, why) in [
        (format!("{canvas}/SKILL.md"), "not a directory resource"),
        (format!("{canvas}/no-such-folder"), "No directory is served"),
        ("skill://skills/anthropics+skills".to_string(), "not in a folder holding a SKILL.md"),
    ] {
        let message = invalid(&rpc.call("resources/directory/read", json!({"uri": uri})));
        assert!(message.contains(why), "{uri}: {message}");
    }
    // A file outside every skill is no skill's file.
    let outside = rpc.call("resources/read", json!({"uri": "skill://skills/README.md"}));
    let code = if rpc.caches() { -32602 } else { -32002 };
    assert_eq!(outside["error"]["code"], code, "{outside}");
    assert!(outside["error"]["message"].as_str().is_some_and(|m| m.contains("not in a folder holding a SKILL.md")));
}

/// The real libraries, 339 skills: every MUST over stdio (2025-06-18) and
/// over HTTP (2026-07-28); the SHOULDs of `resources/list`; `search_skills`
/// hits carrying the URI the extension serves; the URI ragbox gave skills
/// before (`skill://NAME`) still read.
#[test]
fn the_skills_libraries_are_served_through_the_extension() {
    let f = library();
    index(&f);
    f.write("late/late-skill/SKILL.md", "---\nname: late-skill\ndescription: Written after indexing.\n---\n# Late\n");
    let ws = std::fs::canonicalize(&f.workspace).expect("canonical");
    let expected = conforming(&ws, "skills");
    assert_eq!(expected.len(), 337, "339 skills, two in folders named otherwise");

    let (mut stdio, init) = Stdio::start(&f, &["serve"]);
    // The extension with its one setting, beside the resources it serves through.
    assert_eq!(init["capabilities"]["extensions"][EXTENSION], json!({"directoryRead": true}), "{init}");
    assert!(init["capabilities"]["resources"].is_object(), "{init}");
    check_library(&mut stdio, &ws, &expected);

    // resources/list names each SKILL.md by its URI, with the frontmatter's name and description.
    let (mut cursor, mut skills) = (None::<String>, Vec::new());
    loop {
        let page = result(stdio.call("resources/list", cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}))));
        skills.extend(
            page["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .filter(|r| r["uri"].as_str().is_some_and(|u| u.starts_with("skill://")))
                .cloned(),
        );
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(skills.len(), 337);
    let dask = "skill://skills/K-Dense-AI+claude-scientific-skills/scientific-skills/dask/SKILL.md";
    let listed = skills.iter().find(|r| r["uri"] == dask).unwrap_or_else(|| panic!("{dask} in resources/list"));
    let lines = frontmatter_lines(&std::fs::read_to_string(ws.join(path_of(dask))).expect("read"));
    assert_eq!((listed["name"].as_str(), listed["mimeType"].as_str()), (Some("dask"), Some("text/markdown")));
    assert_eq!(listed["description"].as_str(), lines.get("description").map(String::as_str));

    // search_skills: each hit's URI is the skill the extension serves, byte for byte.
    let search = |rpc: &mut Stdio, query: &str| {
        let reply = result(rpc.call("tools/call", json!({"name": "search_skills", "arguments": {"query": query}})));
        reply["content"][0]["text"].as_str().expect("text").to_string()
    };
    let answer = search(&mut stdio, "spread dataframe work that does not fit in memory across a cluster");
    let uris: Vec<String> = answer.lines().filter_map(|l| l.strip_prefix("**URI**: ")).map(str::to_string).collect();
    assert_eq!(uris.len(), matches(&answer).len(), "one URI a hit: {answer:.600}");
    assert!(uris.iter().any(|u| u == dask), "{uris:?}");
    for (uri, (path, content)) in uris.iter().zip(matches(&answer)) {
        assert_eq!(format!("{}/SKILL.md", path_of(uri.trim_end_matches("/SKILL.md"))), path);
        let got = result(stdio.call("skills/get", json!({"uri": uri})));
        assert_eq!(got["skill"]["uri"], uri.as_str());
        let read = result(stdio.call("resources/read", json!({"uri": uri})));
        assert_eq!(read_bytes(&read), content.as_bytes(), "{uri}");
    }
    let answer = search(&mut stdio, "choose column types, indexes and constraints for a Postgres schema");
    let block = answer.split("\n## Match ").find(|m| m.contains("/postgresql/SKILL.md")).expect("the Postgres skill");
    assert!(block.contains("**URI**: none: its folder is called 'postgresql'"), "{block:.400}");

    // The URI skills had before: the name's SKILL.md, a shared name refused naming both.
    let read = result(stdio.call("resources/read", json!({"uri": "skill://dask"})));
    assert_eq!(read_bytes(&read), std::fs::read(ws.join(path_of(dask))).expect("read"));
    let shared = invalid(&stdio.call("resources/read", json!({"uri": "skill://skill-creator"})));
    assert!(shared.starts_with("2 skills are called 'skill-creator'"), "{shared}");
    drop(stdio);

    let server = f.serve_http();
    check_library(&mut &server, &ws, &expected);
}

/// Links, FIFOs, data folders, huge files, 10,000 files, names the Agent
/// Skills specification refuses, broken or too deep frontmatter, a SKILL.md
/// at the root, nested skills and URIs that climb: each refused with why (or
/// served as the specification says), nothing followed, nothing waited on.
#[test]
fn hostile_skills_are_refused_with_the_reason() {
    let f = Fixture::empty();
    // Only the SKILL.md files are indexed: the rest is the skills' own.
    f.write(".gitignore", "*\n!*/\n!SKILL.md\n");
    skill(
        &f,
        "skills/plain-ok",
        "plain-ok",
        &[("scripts/run.py", b"print('ok')\n"), ("assets/logo.png", &[0x89, b'P', b'N', b'G', 0, 1, 2])],
    );
    skill(&f, "skills/linked", "linked", &[(".git/config", b"[core]\n"), (".ragbox/owner", b"not a resource\n")]);
    skill(&f, "skills/huge", "huge", &[]);
    std::fs::File::create(f.workspace.join("skills/huge/data.bin"))
        .and_then(|file| file.set_len(9 << 20))
        .expect("a 9 MiB file");
    skill(&f, "skills/heavy", "heavy", &[]);
    for part in ["a.bin", "b.bin", "c.bin"] {
        std::fs::File::create(f.workspace.join("skills/heavy").join(part))
            .and_then(|file| file.set_len(6 << 20))
            .expect("6 MiB");
    }
    skill(&f, "skills/many", "many", &[]);
    std::fs::create_dir_all(f.workspace.join("skills/many/data")).expect("folder");
    for i in 0..10_000 {
        std::fs::write(f.workspace.join(format!("skills/many/data/f{i}.txt")), "x").expect("write");
    }
    skill(&f, "skills/Bad_Name", "Bad_Name", &[]);
    skill(&f, "skills/outer", "outer", &[("notes.md", b"outer notes\n")]);
    skill(&f, "skills/outer/inner", "inner", &[("inner.md", b"inner notes\n")]);
    f.write("SKILL.md", "---\nname: root\ndescription: At the workspace's root.\n---\n# Root\n");
    let deep = format!("---\nname: deep\ndescription: Deep.\nd: {}1{}\n---\n", "[".repeat(40), "]".repeat(40));
    f.write("skills/deep/SKILL.md", &deep);
    skill(&f, "skills/later-broken", "later-broken", &[]);
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.md"), "outside the workspace\n").expect("write");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path().join("secret.md"), f.workspace.join("skills/linked/secret.md"))
            .expect("link");
        std::os::unix::fs::symlink(outside.path(), f.workspace.join("skills/linked/up")).expect("link");
        let fifo =
            std::ffi::CString::new(f.workspace.join("skills/linked/pipe.md").into_os_string().into_encoded_bytes())
                .expect("path");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    }
    index(&f);
    f.write("skills/later-broken/SKILL.md", "---\nname: [unclosed\n---\n# Broken after indexing\n");

    let ws = std::fs::canonicalize(&f.workspace).expect("canonical");
    let (mut rpc, _) = Stdio::start(&f, &["serve"]);
    let (entries, not_served, _) = list_all(&mut rpc);
    let folders: BTreeSet<String> = entries.iter().map(|e| check_entry(&ws, e)).collect();
    assert_eq!(
        folders,
        BTreeSet::from(["skills/plain-ok", "skills/linked", "skills/outer", "skills/outer/inner"].map(String::from))
    );
    let manifest = |folder: &str| -> Vec<String> {
        let entry = entries
            .iter()
            .find(|e| path_of(e["uri"].as_str().unwrap_or_default()) == format!("{folder}/SKILL.md"))
            .expect("listed");
        entry["resources"]
            .as_array()
            .expect("files")
            .iter()
            .map(|r| path_of(r["uri"].as_str().unwrap_or_default()))
            .collect()
    };
    // No link, FIFO, version-control or data folder is a file of a skill.
    assert_eq!(manifest("skills/linked"), ["skills/linked/SKILL.md"]);
    // A nested skill's files are the outer skill's too.
    assert_eq!(
        manifest("skills/outer"),
        [
            "skills/outer/SKILL.md",
            "skills/outer/inner/SKILL.md",
            "skills/outer/inner/inner.md",
            "skills/outer/notes.md"
        ]
    );

    let reasons: BTreeMap<&str, &str> = not_served
        .iter()
        .map(|n| (n["path"].as_str().unwrap_or_default(), n["reason"].as_str().unwrap_or_default()))
        .collect();
    let refused = [
        ("skills/huge/SKILL.md", "data.bin has 9437184 bytes, more than a resource read returns (8 MiB)"),
        ("skills/heavy/SKILL.md", "its files add up to more than 16 MiB"),
        ("skills/many/SKILL.md", "it has more than 512 files"),
        ("skills/Bad_Name/SKILL.md", "its name 'Bad_Name' is not an Agent Skills name"),
        ("skills/deep/SKILL.md", "nests deeper than 32 levels"),
        ("skills/later-broken/SKILL.md", "its frontmatter is not valid YAML"),
        ("SKILL.md", "not in a folder of its own"),
    ];
    assert_eq!(reasons.len(), refused.len(), "{reasons:#?}");
    for (path, why) in refused {
        assert!(reasons.get(path).is_some_and(|r| r.contains(why)), "{path}: {reasons:#?}");
        if let Some(folder) = path.strip_suffix("/SKILL.md") {
            let message = invalid(&rpc.call("skills/get", json!({"uri": format!("skill://{folder}/SKILL.md")})));
            assert!(message.contains(why), "{path}: {message}");
        }
    }
    // The files of a skill not served are not served under skill://; their file:// URIs still read.
    let many = rpc.call("resources/read", json!({"uri": "skill://skills/many/data/f1.txt"}));
    assert!(many["error"]["message"].as_str().is_some_and(|m| m.contains("more than 512 files")), "{many}");
    let file = url::Url::from_file_path(ws.join("skills/many/data/f1.txt")).expect("file URL").to_string();
    assert_eq!(read_bytes(&result(rpc.call("resources/read", json!({"uri": file})))), b"x");

    // Reads and directory reads inside a served skill: no link followed, no FIFO waited on.
    let started = Instant::now();
    for (name, why) in [
        ("secret.md", "is a link"),
        ("up/secret.md", "without following a link"),
        ("pipe.md", "not a regular file"),
        (".git/config", "not resources"),
        (".ragbox/owner", "not resources"),
    ] {
        let reply = rpc.call("resources/read", json!({"uri": format!("skill://skills/linked/{name}")}));
        assert!(reply["error"]["message"].as_str().is_some_and(|m| m.contains(why)), "{name}: {reply}");
    }
    assert!(started.elapsed() < Duration::from_secs(60), "nothing waited on");
    assert_eq!(
        files_by_directory(&mut rpc, "skill://skills/linked"),
        BTreeSet::from(["skill://skills/linked/SKILL.md".to_string()])
    );
    for uri in ["skill://skills/linked/up", "skill://skills/linked/.git", "skill://skills/linked/pipe.md"] {
        invalid(&rpc.call("resources/directory/read", json!({"uri": uri})));
    }
    // URIs that climb, hide a separator or carry a query name nothing.
    for uri in [
        "skill://skills/plain-ok/../linked/SKILL.md",
        "skill://skills/plain-ok/%2E%2E/linked/SKILL.md",
        "skill://skills%2Fplain-ok/SKILL.md",
        "skill://skills//plain-ok/SKILL.md",
        "skill://skills/plain-ok/SKILL.md?x=1",
        "skill://skills/plain-ok/SKILL.md#top",
        "skill://skills/plain-ok/%ZZ/SKILL.md",
    ] {
        let message = invalid(&rpc.call("skills/get", json!({"uri": uri})));
        assert!(!message.is_empty(), "{uri}");
        let read = rpc.call("resources/read", json!({"uri": uri}));
        assert!(read.get("error").is_some(), "{uri}: {read}");
        let dir = uri.trim_end_matches("/SKILL.md");
        assert!(rpc.call("resources/directory/read", json!({"uri": dir})).get("error").is_some(), "{dir}");
    }
    // Arguments of the wrong type: refused as such, not as an unknown method.
    for (method, params) in [
        ("skills/get", json!({"uri": 5})),
        ("skills/get", json!({})),
        ("resources/directory/read", json!({"uri": null})),
        ("resources/directory/read", json!({"uri": "skill://skills/linked", "cursor": ["x"]})),
    ] {
        let message = invalid(&rpc.call(method, params.clone()));
        assert!(message.starts_with(&format!("{method}: its params cannot be read")), "{method} {params}: {message}");
    }
    // Still serving after all that.
    assert_eq!(
        result(rpc.call("skills/get", json!({"uri": "skill://skills/plain-ok/SKILL.md"})))["skill"]["frontmatter"]["name"],
        "plain-ok"
    );
}

/// The official Rust SDK's client (rmcp's SEP-2640 support) lists the
/// skills, fetches each, reads every file and verifies it with the SDK's own
/// check, and walks the directories.
#[tokio::test]
async fn the_official_rust_sdk_loads_and_verifies_skills() {
    use rmcp::model::{
        GetSkillRequestParams, ReadResourceDirectoryRequestParams, ReadResourceRequestParams, ResourceContents,
        SkillResources,
    };
    let f = Fixture::empty();
    skill(
        &f,
        "skills/pdf-forms",
        "pdf-forms",
        &[("references/FORMS.md", b"# Forms\n"), ("assets/logo.png", &[0x89, b'P', b'N', b'G', 0, 0xff])],
    );
    skill(
        &f,
        "team/ops/restart-pods",
        "restart-pods",
        &[("scripts/restart.sh", b"#!/bin/sh\nkubectl rollout restart\n")],
    );
    index(&f);
    let client = f.connect().await;
    let info = client.peer_info().expect("the server's info");
    assert!(info.capabilities.supports_skills() && info.capabilities.supports_directory_read());
    let skills = client.list_all_skills().await.expect("skills/list");
    assert_eq!(skills.len(), 2);
    for skill in &skills {
        skill.validate().expect("an entry the SDK accepts");
        let got = client.get_skill(GetSkillRequestParams::new(skill.uri.clone())).await.expect("skills/get");
        assert_eq!(&got.skill, skill);
        let SkillResources::Files(files) = &skill.resources else { panic!("a manifest") };
        for file in files {
            let read =
                client.read_resource(ReadResourceRequestParams::new(file.uri.clone())).await.expect("resources/read");
            let bytes = match read.contents.into_iter().next().expect("content") {
                ResourceContents::TextResourceContents { text, .. } => text.into_bytes(),
                ResourceContents::BlobResourceContents { blob, .. } => {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.decode(blob).expect("base64")
                }
                other => panic!("{other:?}"),
            };
            file.verify(&bytes).expect("the bytes the manifest promises");
        }
        let root = skill.uri.trim_end_matches("/SKILL.md");
        let children =
            client.read_resource_directory(ReadResourceDirectoryRequestParams::new(root)).await.expect("directory");
        assert!(children.resources.iter().any(|r| r.is_directory()), "{root}: {children:?}");
    }
    client.cancel().await.expect("close");
}

/// Under `--watch`, a client is told (`notifications/resources/list_changed`)
/// when a skill is added, when a file of it changes that the index does not
/// keep (an image), and when it is removed; each time the skills read as
/// they now are.
#[test]
fn a_watching_server_tells_clients_when_a_skill_changes() {
    let f = Fixture::empty();
    skill(&f, "skills/first", "first", &[("assets/logo.png", &[0x89, b'P', b'N', b'G', 0, 1])]);
    index(&f);
    let (mut rpc, _) = Stdio::start(&f, &["serve", "--watch"]);
    rpc.raw.skip_resource_notices = false;
    let told = |rpc: &mut Stdio, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while rpc.raw.recv_within(Duration::from_secs(60))["method"] != "notifications/resources/list_changed" {
            assert!(Instant::now() < deadline, "not told when {what}");
        }
    };
    let listed = |rpc: &mut Stdio| -> Vec<String> {
        list_all(rpc).0.iter().map(|e| e["uri"].as_str().unwrap_or_default().to_string()).collect()
    };
    assert_eq!(listed(&mut rpc), ["skill://skills/first/SKILL.md"]);

    skill(&f, "skills/second", "second", &[]);
    told(&mut rpc, "a skill was added");
    assert_eq!(listed(&mut rpc), ["skill://skills/first/SKILL.md", "skill://skills/second/SKILL.md"]);

    let logo = [0x89, b'P', b'N', b'G', 0, 9, 9, 9];
    f.write_bytes("skills/first/assets/logo.png", &logo);
    told(&mut rpc, "a skill's image changed");
    let first = result(rpc.call("skills/get", json!({"uri": "skill://skills/first/SKILL.md"})));
    let files = first["skill"]["resources"].as_array().expect("files");
    assert!(files.iter().any(|r| r["digest"] == digest(&logo)), "{first}");

    std::fs::remove_dir_all(f.workspace.join("skills/second")).expect("remove");
    told(&mut rpc, "a skill was removed");
    assert_eq!(listed(&mut rpc), ["skill://skills/first/SKILL.md"]);
}
