//! Cortext's retrieval tools on the real model (seeds 000 and 002):
//! search_semantic with its filters, get_similar, get_context,
//! get_decision_history, conversation types from the registry, and the
//! `ragbox search` / `ragbox similar` commands.

use ragbox_tests::{Client, Fixture, fails, ok};
use serde_json::{Value, json};

/// Conversations about three ways to authenticate, and about other things.
const CONVERSATIONS: [(&str, &str); 10] = [
    (
        "brainstorm/2025-11-18/001-jwt-auth",
        "# JWT authentication\n\nStateless authentication with signed JSON Web Tokens: the API checks the \
         token signature and expiry on every request, no session lookup. Short-lived access tokens, \
         refresh tokens to renew them.",
    ),
    (
        "plan/2025-11-20/002-oauth-login",
        "# OAuth login\n\nLet users sign in with their Google or GitHub account: the OAuth 2.0 authorization \
         code flow with PKCE, then we issue our own credentials to the client after the identity provider \
         authenticates the user.",
    ),
    (
        "review/2025-10-14/003-session-auth",
        "# Session authentication review\n\nServer-side sessions: the login sets an HttpOnly session cookie, \
         the server keeps the session in Redis, CSRF tokens protect form posts. Logout deletes the session.",
    ),
    (
        "debug/2025-11-03/004-websocket-drops",
        "# WebSocket drops\n\nConnections dropped after 60 s: the load balancer's idle timeout closed them. \
         Sending a ping frame every 30 s keeps them open.",
    ),
    (
        "learn/2025-11-05/005-kubernetes",
        "# Kubernetes basics\n\nPods run containers, deployments roll them out, liveness probes restart \
         stuck containers. kubectl apply updates the cluster.",
    ),
    (
        "learn/2025-10-07/006-kubernetes-networking",
        "# Kubernetes networking\n\nServices give pods a stable address; an ingress controller routes \
         outside traffic into the cluster.",
    ),
    (
        "plan/2025-09-02/007-api-design",
        "# API design\n\nREST resources with plural nouns, cursor pagination, versioning under /v2, \
         consistent error bodies with a code and a message.",
    ),
    (
        "meeting/2025-11-12/008-weekly-sync",
        "# Weekly sync\n\nStatus of the release.\n\n## Decisions\n\n- Feature freeze on Friday: only bug fixes \
         until the release ships.\n- QA owns the release checklist.\n\n## Next steps\n\nBook the retro.",
    ),
    (
        "debug/2025-10-21/009-memory-leak",
        "# Memory leak\n\nThe image cache never evicted entries; memory grew until the OOM killer fired. \
         An LRU bound fixed it.",
    ),
    (
        "brainstorm/2025-11-17/010-api-ideas",
        "# API ideas\n\nShould the public API move from REST to GraphQL? Batch endpoints, webhooks for \
         events, an SDK generated from the schema.",
    ),
];

const DECISIONS_LOG: &str = "# Decisions\n\nWhat we decided, newest last.\n\n\
## 2025-10-01: Database\n\nWe chose PostgreSQL over MongoDB: relational data, strong transactions.\n\n\
## 2025-11-02: Hosting\n\nWe rent two dedicated servers instead of a cloud account: the bill is flat.\n";

fn workspace() -> Fixture {
    let f = Fixture::empty();
    for (folder, text) in CONVERSATIONS {
        f.write(&format!("{folder}/conversation.md"), text);
    }
    f
}

fn path_of(folder: &str) -> String {
    format!("{folder}/conversation.md")
}

fn conversations(results: &Value) -> Vec<String> {
    results.as_array().unwrap().iter().map(|r| r["conversation"].as_str().unwrap().to_string()).collect()
}

fn assert_sorted(results: &Value) {
    let scores: Vec<f64> = results.as_array().unwrap().iter().map(|r| r["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "not sorted by score: {scores:?}");
}

async fn embedded() -> (Fixture, Client) {
    let f = workspace();
    f.write(".workspace/memory/decisions.md", DECISIONS_LOG);
    let client = f.connect().await;
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!(r["embedded"], 11, "{r}");
    (f, client)
}

#[tokio::test(flavor = "multi_thread")]
async fn semantic_search_ranks_by_meaning_and_filters_by_type_and_date() {
    let (f, client) = embedded().await;

    // Seed 000: auth conversations score highest, with the documented fields.
    let r = ok(&client, "search_semantic", json!({ "query": "authentication patterns" })).await;
    assert_eq!((&r["success"], &r["query"]), (&json!(true), &json!("authentication patterns")));
    assert_eq!(r["num_results"], 10, "default n_results is 10: {r}");
    assert_sorted(&r["results"]);
    let mut top3 = conversations(&r["results"])[..3].to_vec();
    top3.sort();
    assert_eq!(top3, ["001-jwt-auth", "002-oauth-login", "003-session-auth"], "{r}");
    let first = &r["results"][0];
    for field in ["conversation", "score", "text", "source_path", "type", "date"] {
        assert!(!first[field].is_null(), "{field} missing: {first}");
    }
    assert_eq!(r["more_results"], true, "11 documents, 10 returned");

    // Type filter: only plan conversations.
    let r = ok(&client, "search_semantic", json!({ "query": "api design", "conversation_type": "plan" })).await;
    assert!(r["results"].as_array().unwrap().iter().all(|x| x["type"] == "plan"), "{r}");
    assert_eq!(r["results"][0]["conversation"], "007-api-design", "{r}");
    assert_eq!(r["num_results"], 2, "two plan conversations: {r}");
    assert_eq!(r["more_results"], false);

    // Date filter: only November 2025.
    let r = ok(&client, "search_semantic", json!({ "query": "kubernetes", "date_range": "2025-11" })).await;
    let results = r["results"].as_array().unwrap();
    assert!(results.iter().all(|x| x["date"].as_str().unwrap().starts_with("2025-11")), "{r}");
    assert_eq!(results[0]["conversation"], "005-kubernetes", "{r}");
    assert!(!conversations(&r["results"]).contains(&"006-kubernetes-networking".to_string()));
    // A day, and both filters together.
    let r = ok(
        &client,
        "search_semantic",
        json!({ "query": "x", "date_range": "2025-11-05", "conversation_type": "LEARN" }),
    )
    .await;
    assert_eq!(conversations(&r["results"]), ["005-kubernetes"], "{r}");

    // n_results bounds the list and says more exist.
    let r = ok(&client, "search_semantic", json!({ "query": "login", "n_results": 2 })).await;
    assert_eq!((r["num_results"].as_u64(), &r["more_results"]), (Some(2), &json!(true)), "{r}");
    assert!(r["message"].as_str().unwrap().contains("n_results"));

    // Bad arguments: Cortext's error shape, never a crash.
    let e = fails(&client, "search_semantic", json!({ "query": "x", "conversation_type": "standup" })).await;
    assert_eq!(e["success"], false);
    assert!(e["error"].as_str().unwrap().contains("Unknown conversation type \"standup\""), "{e}");
    assert!(e["error"].as_str().unwrap().contains("brainstorm, debug, learn, meeting, plan, review"), "{e}");
    let e = fails(&client, "search_semantic", json!({ "query": "x", "date_range": "last week" })).await;
    assert!(e["error"].as_str().unwrap().contains("YYYY-MM"), "{e}");
    let e = fails(&client, "search_semantic", json!({ "query": "x", "n_results": 0 })).await;
    assert!(e["error"].as_str().unwrap().contains("n_results"), "{e}");
    let e = fails(&client, "search_semantic", json!({ "n_results": 3 })).await;
    assert!(e["error"].as_str().unwrap().contains("query"), "{e}");
    let e = fails(&client, "search_semantic", json!({ "query": "x", "workspace_path": "/" })).await;
    assert!(e["error"].as_str().unwrap().starts_with("Workspace not allowed"), "{e}");
    // The served workspace named explicitly works.
    let ws = f.workspace.canonicalize().unwrap().display().to_string();
    let r = ok(&client, "search_semantic", json!({ "query": "memory", "workspace_path": ws, "n_results": 1 })).await;
    assert_eq!(conversations(&r["results"]), ["009-memory-leak"], "{r}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn similar_context_and_decisions() {
    let (f, client) = embedded().await;

    // get_similar: the other auth conversations first, the source left out.
    let source = path_of(CONVERSATIONS[0].0);
    let r = ok(&client, "get_similar", json!({ "source_path": source })).await;
    assert_eq!((&r["success"], &r["source"], &r["num_results"]), (&json!(true), &json!(source), &json!(5)), "{r}");
    assert_sorted(&r["similar"]);
    let names = conversations(&r["similar"]);
    assert!(!names.contains(&"001-jwt-auth".to_string()));
    let mut top2 = names[..2].to_vec();
    top2.sort();
    assert_eq!(top2, ["002-oauth-login", "003-session-auth"], "{r}");
    // An absolute path inside the workspace and n_results work too.
    let abs = f.workspace.canonicalize().unwrap().join(&source).display().to_string();
    let r = ok(&client, "get_similar", json!({ "source_path": abs, "n_results": 1 })).await;
    assert_eq!(r["num_results"], 1);
    // Unknown documents.
    let e = fails(&client, "get_similar", json!({ "source_path": "nonexistent/doc.md" })).await;
    assert_eq!(e, json!({"success": false, "error": "Document not found: nonexistent/doc.md"}));
    let e = fails(&client, "get_similar", json!({ "source_path": "../outside.md" })).await;
    assert_eq!(e["error"], "Document not found: ../outside.md");

    // get_context: by meaning once embedded, grouped by conversation.
    let r = ok(&client, "get_context", json!({ "topic": "how users log in" })).await;
    assert_eq!((&r["method"], &r["num_results"]), (&json!("hybrid"), &json!(5)), "{r}");
    let names = conversations(&r["results"]);
    let auth = names[..3].iter().filter(|n| n.contains("auth") || n.contains("login")).count();
    assert!(auth >= 2, "auth conversations should lead: {names:?}");
    assert!(r["results"][0]["excerpts"].as_array().is_some_and(|e| !e.is_empty()));
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "one entry per conversation");

    // get_decision_history: the log and conversations' decision sections.
    let r = ok(&client, "get_decision_history", json!({ "topic": "database" })).await;
    assert_eq!(r["decisions"][0]["source"], "decisions_log", "{r}");
    assert_eq!(r["decisions"][0]["heading"], "2025-10-01: Database");
    assert!(r["decisions"][0]["text"].as_str().unwrap().contains("PostgreSQL"));
    assert_eq!(r["decisions_log"], ".workspace/memory/decisions.md");
    let r = ok(&client, "get_decision_history", json!({ "topic": "feature freeze" })).await;
    let d = &r["decisions"][0];
    assert_eq!(
        (&d["source"], &d["conversation"], &d["heading"]),
        (&json!("conversation"), &json!("008-weekly-sync"), &json!("Decisions")),
        "{r}"
    );
    assert!(d["text"].as_str().unwrap().contains("QA owns") && !d["text"].as_str().unwrap().contains("retro"));
    let r = ok(&client, "get_decision_history", json!({ "topic": "kubernetes operators" })).await;
    assert_eq!(r["num_results"], 0);
    assert!(r["message"].as_str().unwrap().contains("No decisions found related to: kubernetes operators"), "{r}");
    client.cancel().await.unwrap();

    // The command line: conversation name, percentage, text and path.
    let out = f.command(&["search", "authentication patterns", "--semantic", "-n", "3"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("3 results by meaning"), "{stdout}");
    assert!(stdout.contains("%)") && stdout.contains("/conversation.md"), "{stdout}");
    assert!(["001-jwt-auth", "002-oauth-login", "003-session-auth"].iter().all(|c| stdout.contains(c)), "{stdout}");
    let out =
        f.command(&["search", "kubernetes", "--semantic", "--type", "plan", "--date", "2025-11-05"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("No results for \"kubernetes\" (type plan, date 2025-11-05)"),
        "{stdout}"
    );
    assert!(stdout.contains("ragbox search \"kubernetes\""), "suggests keyword search: {stdout}");
    let out = f.command(&["search", "zebra-unicorn"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("No results") && stdout.contains("--semantic"), "{stdout}");
    let out = f.command(&["similar", &source, "-n", "2"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("Documents similar to") && stdout.contains("%)"), "{stdout}");
    let out = f.command(&["search", "x", "--semantic", "--date", "someday"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("YYYY-MM"));
}

#[tokio::test(flavor = "multi_thread")]
async fn before_anything_is_embedded() {
    let f = workspace();
    let client = f.connect().await;
    let r = ok(&client, "search_semantic", json!({ "query": "authentication" })).await;
    assert_eq!((&r["success"], &r["num_results"], &r["results"]), (&json!(true), &json!(0), &json!([])), "{r}");
    assert!(!f.workspace.join(".ragbox").exists(), "a search must not create the index");
    // get_context falls back to keywords and says so.
    let r = ok(&client, "get_context", json!({ "topic": "kubernetes", "max_results": 3 })).await;
    assert_eq!(r["method"], "keyword", "{r}");
    let mut names = conversations(&r["results"]);
    names.sort();
    assert_eq!(names, ["005-kubernetes", "006-kubernetes-networking"], "{r}");
    assert!(r["message"].as_str().unwrap().contains("embed_workspace"));
    // get_similar has nothing to compare with.
    let e = fails(&client, "get_similar", json!({ "source_path": path_of(CONVERSATIONS[0].0) })).await;
    assert!(e["error"].as_str().unwrap().starts_with("Document not found: "), "{e}");
    assert!(e["error"].as_str().unwrap().contains("embed_workspace"), "{e}");
    // No decisions log: conversations' decisions still count, and the log is suggested.
    let r = ok(&client, "get_decision_history", json!({ "topic": "release checklist" })).await;
    assert_eq!(r["decisions"][0]["conversation"], "008-weekly-sync", "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("No decisions log found. Create one at .workspace/memory/decisions.md")
    );
    assert_eq!(r["decisions_log"], Value::Null);
    assert!(!f.workspace.join(".ragbox").exists());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn conversation_types_come_from_the_registry() {
    let f = Fixture::empty();
    f.write(
        ".workspace/registry.json",
        r#"{"version": "1.0", "conversation_types": {
            "brainstorm": {"name": "Brainstorm", "folder": "conversations/brainstorm"},
            "book-notes": {"name": "Book notes", "folder": "reading/books"}}}"#,
    );
    f.write(
        "conversations/brainstorm/2025-11-01/001-garden/conversation.md",
        "Ideas for a vegetable garden on the balcony.",
    );
    f.write("reading/books/2025-11-02/002-dune/notes.md", "Dune: desert planet politics, spice and ecology.");
    // An older-layout folder for a type the registry does not know is not a conversation.
    f.write("debug/2025-11-03/003-crash/conversation.md", "The app crashed on start after the update.");
    let client = f.connect().await;
    ok(&client, "embed_workspace", json!({})).await;
    let r = ok(&client, "search_semantic", json!({ "query": "a novel", "conversation_type": "book-notes" })).await;
    assert_eq!(r["results"][0]["conversation"], "002-dune", "{r}");
    assert_eq!((r["num_results"].as_u64(), &r["results"][0]["type"]), (Some(1), &json!("book-notes")), "{r}");
    let r = ok(&client, "search_semantic", json!({ "query": "crash" })).await;
    let crash = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["source_path"].as_str().unwrap().starts_with("debug/"))
        .unwrap();
    assert_eq!((&crash["type"], &crash["conversation"]), (&Value::Null, &json!("conversation.md")), "{crash}");
    let e = fails(&client, "search_semantic", json!({ "query": "x", "conversation_type": "debug" })).await;
    assert!(e["error"].as_str().unwrap().contains("this workspace has: book-notes, brainstorm"), "{e}");
    client.cancel().await.unwrap();
}
