//! `search_workspace` through MCP on a Cortext fixture workspace.

use ragbox_tests::{Fixture, call, is_error, text};
use serde_json::{Value, json};

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    let value = result.structured_content.clone().expect("structuredContent present");
    // The text block carries the same JSON.
    let from_text: Value = serde_json::from_str(&text(result)).expect("text block is JSON");
    assert_eq!(value, from_text, "structuredContent and text differ");
    value
}

#[tokio::test]
async fn lists_the_tool_with_schemas_and_annotations() {
    let f = Fixture::cortext();
    let client = f.connect_with(&["serve", "--output-schemas"]).await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.iter().find(|t| t.name == "search_workspace").expect("search_workspace listed");
    let input = serde_json::to_value(&*tool.input_schema).unwrap();
    assert_eq!(input["required"], json!(["query"]));
    for key in ["query", "regex", "type", "date_range", "limit", "workspace_path"] {
        assert!(input["properties"].get(key).is_some(), "input schema lacks {key}");
    }
    assert_eq!(input["properties"]["limit"]["default"], json!(10));
    assert!(tool.output_schema.is_some(), "output schema declared");
    let annotations = tool.annotations.as_ref().expect("annotations");
    assert_eq!(annotations.read_only_hint, Some(true));
    assert_eq!(annotations.open_world_hint, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn finds_keyword_matches_exactly() {
    let f = Fixture::cortext();
    let client = f.connect().await;
    let result = call(&client, "search_workspace", json!({"query": "jwt"})).await;
    assert!(!is_error(&result), "{}", text(&result));
    // Path order; .gitignored files, .ragbox/ and binary files are not searched;
    // invalid UTF-8 is read lossily.
    let expected = json!({
        "success": true,
        "query": "jwt",
        "num_results": 7,
        "more_results": false,
        "files_searched": 7,
        "files_skipped": 1,
        "results": [
            {"conversation": "001-auth-ideas", "type": "brainstorm", "date": "2025-11-17", "file": "conversation.md",
             "line": 3, "text": "We compared JWT tokens with server sessions.",
             "path": "brainstorm/2025-11-17/001-auth-ideas/conversation.md"},
            {"conversation": "001-auth-ideas", "type": "brainstorm", "date": "2025-11-17", "file": "conversation.md",
             "line": 4, "text": "JWT wins for the mobile API.",
             "path": "brainstorm/2025-11-17/001-auth-ideas/conversation.md"},
            {"conversation": "004-old-review", "type": "review", "date": "2025-11-05", "file": "notes.md",
             "line": 1, "text": "Legacy layout review: the jwt library needs an upgrade.",
             "path": "conversations/review/2025-11-05/004-old-review/notes.md"},
            {"conversation": "002-token-leak", "type": "debug", "date": "2025-10-02", "file": "conversation.md",
             "line": 4, "text": "Fix: redact jwt fields before logging.",
             "path": "debug/2025-10-02/002-token-leak/conversation.md"},
            {"conversation": null, "type": null, "date": null, "file": "latin1.txt",
             "line": 1, "text": "caf\u{fffd} and JWT in invalid UTF-8", "path": "latin1.txt"},
            {"conversation": null, "type": null, "date": null, "file": "README.md",
             "line": 2, "text": "JWT appears once in notes.", "path": "notes/README.md"},
            {"conversation": "003-api-design", "type": "plan", "date": "2025-11-20", "file": "conversation.md",
             "line": 4, "text": "Auth: JWT bearer tokens.",
             "path": "plan/2025-11-20/003-api-design/conversation.md"},
        ]
    });
    assert_eq!(structured(&result), expected);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn filters_by_type_date_regex_and_limit() {
    let f = Fixture::cortext();
    let client = f.connect().await;
    let paths = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{}:{}", r["path"].as_str().unwrap(), r["line"]))
            .collect()
    };

    let r = structured(&call(&client, "search_workspace", json!({"query": "jwt", "type": "debug"})).await);
    assert_eq!(paths(&r), ["debug/2025-10-02/002-token-leak/conversation.md:4"]);

    let r = structured(
        &call(&client, "search_workspace", json!({"query": "jwt", "type": "all", "date_range": "2025-11"})).await,
    );
    assert_eq!(r["num_results"], 4);
    assert!(r["results"].as_array().unwrap().iter().all(|m| m["date"].as_str().unwrap().starts_with("2025-11")));

    let r = structured(&call(&client, "search_workspace", json!({"query": "jwt", "date_range": "2025-11-20"})).await);
    assert_eq!(paths(&r), ["plan/2025-11-20/003-api-design/conversation.md:4"]);

    // The legacy conversations/<type>/… layout is understood.
    let r = structured(&call(&client, "search_workspace", json!({"query": "jwt", "type": "review"})).await);
    assert_eq!(paths(&r), ["conversations/review/2025-11-05/004-old-review/notes.md:1"]);

    let r = structured(
        &call(&client, "search_workspace", json!({"query": r"^#\s+\w+ (ideas|leak)$", "regex": true})).await,
    );
    assert_eq!(
        paths(&r),
        ["brainstorm/2025-11-17/001-auth-ideas/conversation.md:1", "debug/2025-10-02/002-token-leak/conversation.md:1"]
    );

    // Without regex, metacharacters are literal.
    let r = structured(&call(&client, "search_workspace", json!({"query": "/v2."})).await);
    assert_eq!(paths(&r), ["plan/2025-11-20/003-api-design/conversation.md:3"]);

    let r = structured(&call(&client, "search_workspace", json!({"query": "jwt", "limit": 2})).await);
    assert_eq!((r["num_results"].clone(), r["more_results"].clone()), (json!(2), json!(true)));

    let r = structured(&call(&client, "search_workspace", json!({"query": "no such words anywhere"})).await);
    assert_eq!(
        (r["success"].clone(), r["num_results"].clone(), r["results"].clone()),
        (json!(true), json!(0), json!([]))
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_in_cortext_shape() {
    let f = Fixture::cortext();
    let client = f.connect().await;
    let cases = [
        (json!({}), "missing field `query`"),
        (json!({"query": 42}), "argument 'query': invalid type"),
        (json!({"query": "jwt", "limit": "ten"}), "argument 'limit'"),
        (json!({"query": "jwt", "limit": 0}), "limit must be between 1 and 1000"),
        (json!({"query": "jwt", "limit": -3}), "argument 'limit'"),
        (json!({"query": "jwt", "regex": "yes"}), "argument 'regex'"),
        (json!({"query": "jwt", "date_range": "November"}), "expected YYYY-MM or YYYY-MM-DD"),
        (json!({"query": "(", "regex": true}), "invalid regex"),
        (json!({"query": "   "}), "query must not be empty"),
        (json!({"query": "jwt", "workspace_path": 7}), "argument 'workspace_path'"),
    ];
    for (args, expected) in cases {
        let result = call(&client, "search_workspace", args.clone()).await;
        assert!(is_error(&result), "{args} should fail");
        let body: Value = serde_json::from_str(&text(&result)).expect("error body is JSON");
        assert_eq!(body["success"], json!(false), "{args}");
        let error = body["error"].as_str().unwrap();
        assert!(error.contains(expected), "{args}: {error}");
    }
    // The server is still serving.
    let ok = call(&client, "search_workspace", json!({"query": "jwt", "limit": 1})).await;
    assert!(!is_error(&ok));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn workspace_path_must_be_the_served_workspace() {
    let f = Fixture::cortext();
    let other = f.dir.path().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("x.md"), "JWT elsewhere\n").unwrap();
    let client = f.connect().await;

    let served = f.workspace.to_str().unwrap();
    let ok = call(&client, "search_workspace", json!({"query": "jwt", "workspace_path": served})).await;
    assert!(!is_error(&ok), "{}", text(&ok));

    let denied =
        call(&client, "search_workspace", json!({"query": "jwt", "workspace_path": other.to_str().unwrap()})).await;
    assert!(is_error(&denied));
    let body: Value = serde_json::from_str(&text(&denied)).unwrap();
    assert_eq!(body["success"], json!(false));
    assert!(body["error"].as_str().unwrap().starts_with("Workspace not allowed: "), "{body}");

    let missing = call(&client, "search_workspace", json!({"query": "jwt", "workspace_path": "/no/such/folder"})).await;
    assert!(text(&missing).contains("Workspace not found"), "{}", text(&missing));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn allowed_workspaces_from_config_are_served() {
    let f = Fixture::cortext();
    let other = f.dir.path().join("shared-notes");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("x.md"), "JWT in the shared notes\n").unwrap();
    f.write_user_config("allowed_workspaces = [\"../shared-notes\"]\n");
    let client = f.connect().await;
    let r = call(&client, "search_workspace", json!({"query": "jwt", "workspace_path": other.to_str().unwrap()})).await;
    assert!(!is_error(&r), "{}", text(&r));
    let v = r.structured_content.unwrap();
    assert_eq!(v["num_results"], 1);
    assert_eq!(v["results"][0]["path"], "x.md");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn oversized_files_are_skipped() {
    let f = Fixture::empty();
    f.write("small.md", "needle\n");
    // Just over the 8 MiB cap.
    let mut big = "needle in a haystack\n".repeat(420_000).into_bytes();
    big.truncate((8 << 20) + 10);
    f.write_bytes("big.txt", &big);
    let client = f.connect().await;
    let r = call(&client, "search_workspace", json!({"query": "needle"})).await;
    let v = r.structured_content.unwrap();
    assert_eq!((v["num_results"].clone(), v["files_skipped"].clone()), (json!(1), json!(1)), "{v}");
    client.cancel().await.unwrap();
}
