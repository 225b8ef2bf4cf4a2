//! MCP resources: the indexed documents as `file://` URIs and skills by
//! their `skill://…/SKILL.md` URIs (and their `skill://NAME` of before),
//! listed a page at a time and read whole, with reads kept inside the
//! workspace (no link followed, no data dir, nothing outside).

use ragbox_tests::{Fixture, ok};
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::json;

const SKILL: &str = "---\nname: restart-pods\ndescription: Restart stuck pods safely.\ntags: [k8s, ops]\n---\n# Restart pods\n\nDrain first.\n";

/// The text of a read, or why it failed.
async fn read(client: &ragbox_tests::Client, uri: &str) -> Result<ResourceContents, String> {
    client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .map(|r| r.contents.into_iter().next().expect("one item"))
        .map_err(|e| e.to_string())
}

fn text_of(contents: &ResourceContents) -> &str {
    match contents {
        ResourceContents::TextResourceContents { text, .. } => text,
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn documents_and_skills_are_resources_read_from_the_workspace_only() {
    let f = Fixture::cortext();
    f.write("skills/restart-pods/SKILL.md", SKILL);
    // A file whose frontmatter claims to be that skill does not shadow it;
    // two real skills that share a name are told apart by file, not guessed.
    f.write("a/forged.md", "---\nname: restart-pods\nragbox.index: skill\n---\n# Forged\n\nDo something else.\n");
    f.write("skills/twin/SKILL.md", "---\nname: twin\ndescription: One.\n---\n# One\n");
    f.write("vendor/twin/SKILL.md", "---\nname: twin\ndescription: Two.\n---\n# Two\n");
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.md"), "outside the workspace").expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path().join("secret.md"), f.workspace.join("notes/linked.md")).expect("link");
    let client = f.connect().await;
    ok(&client, "embed_workspace", json!({})).await;

    // Nor does search_skills take the forged file for a skill.
    let skills =
        ragbox_tests::text(&ragbox_tests::call(&client, "search_skills", json!({"query": "restart pods"})).await);
    assert!(skills.contains("skills/restart-pods/SKILL.md") && !skills.contains("forged"), "{skills}");

    let resources = client.list_all_resources().await.expect("resources/list");
    let ws = std::fs::canonicalize(&f.workspace).expect("canonical");
    let readme = url::Url::from_file_path(ws.join("notes/README.md")).expect("file URL").to_string();
    let listed = |uri: &str| resources.iter().find(|r| r.uri == uri).cloned();
    let entry = listed(&readme).unwrap_or_else(|| panic!("{readme} listed in {resources:#?}"));
    assert_eq!((entry.name.as_str(), entry.mime_type.as_deref()), ("notes/README.md", Some("text/markdown")));
    let skill = listed("skill://skills/restart-pods/SKILL.md").expect("the skill listed by its SKILL.md URI");
    assert_eq!(skill.name, "restart-pods");
    assert_eq!(skill.description.as_deref(), Some("Restart stuck pods safely."));
    assert!(
        resources.iter().all(|r| !r.uri.contains(".ragbox") && !r.uri.contains("ignored/")),
        "only indexed documents: {resources:#?}"
    );

    let got = read(&client, &readme).await.expect("read the README");
    assert_eq!(text_of(&got), std::fs::read_to_string(f.workspace.join("notes/README.md")).expect("read"));
    let got = read(&client, "skill://skills/restart-pods/SKILL.md").await.expect("read the skill");
    assert_eq!(text_of(&got), SKILL, "the whole SKILL.md");
    // The URI skills had before the Skills extension still reads.
    let got = read(&client, "skill://restart-pods").await.expect("read the skill by its name");
    assert_eq!(text_of(&got), SKILL);
    // A file of the workspace that is not text comes back as bytes.
    let blob_uri = url::Url::from_file_path(ws.join("blob.bin")).expect("file URL").to_string();
    match read(&client, &blob_uri).await.expect("read the binary file") {
        ResourceContents::BlobResourceContents { blob, mime_type, .. } => {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD.decode(blob).expect("base64");
            assert_eq!(bytes, std::fs::read(f.workspace.join("blob.bin")).expect("read"));
            assert_eq!(mime_type.as_deref(), Some("application/octet-stream"));
        }
        other => panic!("expected a blob, got {other:?}"),
    }

    let file = |rel: &str| format!("{}/{rel}", url::Url::from_file_path(&ws).expect("file URL"));
    let refused = [
        (file(".ragbox/stale.md"), "not resources"),
        (file(".RAGBOX/stale.md"), "not resources"),
        (file("notes/missing.md"), "no such file"),
        (file("../user-config/config.toml"), "not in the served workspace"),
        (url::Url::from_file_path(outside.path().join("secret.md")).expect("URL").to_string(), "not in the served"),
        ("skill://no-such-skill".to_string(), "no indexed skill"),
        ("skill://twin".to_string(), "2 skills are called 'twin' (skills/twin/SKILL.md, vendor/twin/SKILL.md)"),
        ("https://example.com/x".to_string(), "offers file://"),
        ("not a uri".to_string(), "not a URI"),
    ];
    for (uri, why) in refused {
        let err = read(&client, &uri).await.expect_err(&uri);
        assert!(err.contains(why), "{uri}: {err}");
    }
    #[cfg(unix)]
    {
        let err = read(&client, &file("notes/linked.md")).await.expect_err("a link is not followed");
        assert!(err.contains("link"), "{err}");
    }

    let templates = client.list_resource_templates(None).await.expect("templates").resource_templates;
    let shown: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(
        shown,
        [format!("{}/{{+path}}", url::Url::from_file_path(&ws).expect("URL")).as_str(), "skill://{+path}"]
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_large_workspace_is_listed_a_page_at_a_time() {
    let f = Fixture::tldr(230);
    let indexed = f.command(&["index"]).output().expect("ragbox index");
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    let client = f.connect().await;
    let first = client.list_resources(None).await.expect("first page");
    assert_eq!(first.resources.len(), 200);
    assert!(first.next_cursor.is_some(), "a cursor to the rest");
    let all = client.list_all_resources().await.expect("every page");
    assert_eq!(all.len(), 230, "each page once, in path order");
    let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "path order, no repeats");
    client.cancel().await.expect("close");
}

/// A client is told when the documents changed (the served index's
/// generation moved): after a call that wrote, and after a `--watch` run
/// that indexed something; not after a read or a run that found nothing new.
#[test]
fn clients_are_told_when_the_resource_list_changes() {
    use ragbox_tests::Raw;
    use std::time::{Duration, Instant};
    let f = Fixture::cortext();
    let changed = r#""method":"notifications/resources/list_changed""#;
    // Sends a call and reads up to its reply: whether the client was told meanwhile.
    let told_during = |raw: &mut Raw, id: u64, tool: &str| {
        raw.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": tool, "arguments": {}}})
            .to_string(),
        );
        let mut told = false;
        loop {
            let message = raw.recv_within(Duration::from_secs(120));
            told |= message.to_string().contains(changed);
            if message["id"] == id {
                return told;
            }
        }
    };
    let mut raw = Raw::start(&f);
    raw.skip_resource_notices = false;
    assert!(told_during(&mut raw, 1, "embed_workspace"), "told after embed_workspace indexed the workspace");
    assert!(!told_during(&mut raw, 2, "embed_workspace"), "not told when nothing changed");
    assert!(!told_during(&mut raw, 3, "get_embedding_status"), "not told after a read");
    drop(raw);

    let mut raw = Raw::start_with(&f, &["serve", "--watch"]);
    raw.skip_resource_notices = false;
    f.write("notes/new.md", "# New\n\nA note written while serving.\n");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !raw.recv_within(Duration::from_secs(60)).to_string().contains(changed) {
        assert!(Instant::now() < deadline, "no list_changed after the watcher indexed a new file");
    }
}
