//! Keyword search in the languages people write notes in: CJK text read in
//! character pairs, each Latin-script language stemmed in its own language,
//! over a few real sections of the Debian Reference in its translations
//! (`data/languages/`, licence in its README); and text no stemmer knows or
//! no decoder reads, indexed without error and with memory bounded.

use ragbox_tests::{Client, Fixture, Raw, ok, peak_mib, repo_root};
use serde_json::{Value, json};
use std::time::Duration;

/// A workspace holding every sample section, `<language>/<section>.md`.
fn translations() -> Fixture {
    let f = Fixture::empty();
    let data = repo_root().join("tests/e2e/data/languages");
    for language in ["en", "ja", "zh-cn", "de", "fr"] {
        for entry in std::fs::read_dir(data.join(language)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            f.write(&format!("{language}/{name}"), &std::fs::read_to_string(&path).unwrap());
        }
    }
    f
}

/// The files of `query`'s hits in `mode`, best first.
async fn files(client: &Client, query: &str, mode: &str) -> Vec<String> {
    let r = ok(client, "search", json!({ "query": query, "search_type": mode, "limit": 5 })).await;
    r["results"].as_array().unwrap().iter().map(|h| h["source"]["filepath"].as_str().unwrap().to_string()).collect()
}

/// Questions a reader of each edition would ask, and the section answering
/// each. None is a section's title as written: every CJK one is part of a
/// longer run of its text, which the index once kept as one word (or dropped
/// past 40 bytes); the German and French ones are other forms of the text's
/// words, which only their own language's stemmer brings together.
const ASKED: [(&str, &str); 10] = [
    ("シャットダウン手順", "ja/shutdown.md"),
    ("コンソールの復元", "ja/console.md"),
    ("关闭系统", "zh-cn/shutdown.md"),
    ("屏幕发狂", "zh-cn/console.md"),
    ("vollqualifizierter Domänenname", "de/hostname.md"),
    ("Konsolen wiederherstellen", "de/console.md"),
    ("arrêt propre du système", "fr/shutdown.md"),
    ("récupération de la console", "fr/console.md"),
    ("shutting down properly", "en/shutdown.md"),
    ("recovered console", "en/console.md"),
];

async fn each_edition_answers_its_own_questions(client: &Client) {
    let r = ok(client, "embed_workspace", json!({})).await;
    assert_eq!(r["embedded"], 20, "{r}");
    for mode in ["fulltext", "hybrid"] {
        for (query, want) in ASKED {
            let found = files(client, query, mode).await;
            assert_eq!(found.first().map(String::as_str), Some(want), "{mode} {query}: {found:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_edition_answers_its_own_questions_through_the_service() {
    let f = translations();
    let client = f.connect().await;
    each_edition_answers_its_own_questions(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn each_edition_answers_its_own_questions_standalone() {
    let f = translations();
    let client = f.connect_with(&["serve", "--standalone"]).await;
    each_edition_answers_its_own_questions(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn three_han_characters_find_the_line_and_the_file_holding_them() {
    let f = translations();
    f.write("notes/config.md", "# メモ\n\nこの設定ファイル_v2を開いてから、管理者に連絡する。\n");
    let client = f.connect().await;
    ok(&client, "embed_workspace", json!({})).await;
    // Line search: the line of the Chinese section holding the three characters.
    let lines = ok(&client, "search_workspace", json!({ "query": "控制台" })).await;
    let held: Vec<(&str, u64)> = lines["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["path"].as_str().unwrap(), m["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(held, [("zh-cn/console.md", 1)], "{lines}");
    // Keyword search: three characters inside a longer run.
    assert_eq!(files(&client, "管理者", "fulltext").await.first().map(String::as_str), Some("notes/config.md"));
    // The exact lookup: an identifier written inside a CJK run, and three quoted characters.
    for query in ["設定ファイル_v2", "\"正常的\""] {
        let found = ok(&client, "search", json!({ "query": query, "search_type": "semantic", "limit": 3 })).await;
        let first = &found["results"][0];
        let want = if query.contains('_') { "notes/config.md" } else { "zh-cn/console.md" };
        assert_eq!(first["source"]["filepath"], want, "{query}: {found}");
        let quoted = query.trim_matches('"');
        assert!(first["content"].as_str().unwrap().contains(quoted), "{query}: {first}");
    }
    client.cancel().await.unwrap();
}

fn error_for<'a>(report: &'a Value, path: &str) -> Option<&'a str> {
    report["errors"].as_array()?.iter().find(|e| e["path"] == path).and_then(|e| e["error"].as_str())
}

#[test]
fn text_no_stemmer_knows_is_indexed_as_words_with_memory_bounded() {
    let f = Fixture::empty();
    // A first note, indexed first: the model, the tools and the indexes are then loaded,
    // and the peak that follows is the hostile files' own.
    f.write("first.md", "# Notes\n\nA first note, in English.\n");
    let mut raw = Raw::start_standalone(&f);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"embed_workspace","arguments":{}}}"#);
    let first = raw.recv_within(Duration::from_secs(300));
    assert_eq!(first["result"]["structuredContent"]["embedded"], 1, "{first}");
    let baseline = peak_mib(raw.pid());
    // Scripts mixed within a word.
    f.write("mixed.md", "日本語textСловоλόγοςمرحبا mixedスクリプト\n");
    // A 1 MB line of one Han character.
    f.write("han.txt", &format!("{}\n", "日".repeat(350_000)));
    // Shift-JIS (not UTF-8) and a UTF-8 character cut short.
    f.write_bytes("sjis.txt", b"\x93\xfa\x96\x7b\x8c\xea shiftjis notes\n\xe6\x97\xa5\xe6\x9c");
    // Thai (no spaces between words, vowel and tone marks) and Arabic: no stemmer here.
    f.write("thai.md", "# บันทึก\n\nระบบจัดการแพ็กเกจ ติดตั้งโปรแกรม และอัปเดตที่นี่\n");
    f.write("arabic.md", "# ملاحظات\n\nنظام إدارة الحزم يثبت البرامج ويحدثها\n");
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"embed_workspace","arguments":{}}}"#);
    let indexed = raw.recv_within(Duration::from_secs(300));
    let report = &indexed["result"]["structuredContent"];
    assert_eq!(report["embedded"], 5, "{indexed}");
    for path in ["mixed.md", "han.txt", "sjis.txt", "thai.md", "arabic.md"] {
        assert_eq!(error_for(report, path), None, "{indexed}");
    }
    let grew = peak_mib(raw.pid()).saturating_sub(baseline);
    // Measured: 46 to 55 MiB (15 without the Han line), from a peak of 60 after the first note.
    assert!(grew < 200, "indexing grew the server's peak memory by {grew} MiB");
    for (id, (query, want)) in [
        ("ติดตั้งโปรแกรม", "thai.md"),
        ("الحزم", "arabic.md"),
        ("Слово", "mixed.md"),
        ("スクリプト", "mixed.md"),
        ("text", "mixed.md"),
        ("日日", "han.txt"),
        ("shiftjis", "sjis.txt"),
    ]
    .into_iter()
    .enumerate()
    {
        let call = json!({"jsonrpc": "2.0", "id": 10 + id, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": query, "search_type": "fulltext", "limit": 3}}});
        raw.send(&call.to_string());
        let reply = raw.recv_within(Duration::from_secs(60));
        let first = &reply["result"]["structuredContent"]["results"][0]["source"]["filepath"];
        assert_eq!(first, want, "{query}: {reply}");
    }
}
