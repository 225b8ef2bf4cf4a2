//! Raw JSON-RPC over the server's stdio: malformed input, wrong shapes, unknown
//! tools and cancellation. The server answers what it can and keeps serving.

use ragbox_tests::{Fixture, Raw};
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};

#[test]
fn what_is_not_json_gets_a_parse_error_and_the_server_stays_up() {
    let f = Fixture::cortext();
    for standalone in [false, true] {
        let mut raw = if standalone { Raw::start_standalone(&f) } else { Raw::start(&f) };
        for junk in ["{not json", "]]]", "\u{1}\u{2}binary", "{\"jsonrpc\":\"2.0\",\"id\":"] {
            raw.send(junk);
            // JSON-RPC's parse error; its id cannot be told, so it is null.
            let reply = raw.recv();
            assert_eq!((&reply["id"], &reply["error"]["code"]), (&Value::Null, &json!(-32700)), "{junk}: {reply}");
        }
        raw.ping(1);
    }
}

#[test]
fn invalid_utf8_and_huge_lines_do_not_kill_the_server() {
    let f = Fixture::cortext();
    let mut raw = Raw::start(&f);
    raw.stdin.write_all(b"\xff\xfe\xfd invalid utf-8 \xc3\x28\n").unwrap();
    let reply = raw.recv();
    assert_eq!((&reply["id"], &reply["error"]["code"]), (&Value::Null, &json!(-32700)), "{reply}");
    // Over the 16 MiB message cap: not buffered whole, and answered with its id.
    let huge = format!("{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"pad\":\"{}\"}}", "x".repeat(20 << 20));
    raw.send(&huge);
    let reply = raw.recv();
    assert_eq!((&reply["id"], &reply["error"]["code"]), (&serde_json::json!(5), &serde_json::json!(-32600)), "{reply}");
    raw.ping(2);
    // A large line under the cap is still served.
    let large = format!("{{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"pad\":\"{}\"}}", "x".repeat(4 << 20));
    raw.send(&large);
    assert_eq!(raw.recv()["id"], 6);
}

#[test]
fn well_formed_json_that_is_not_a_message_gets_invalid_request() {
    let f = Fixture::cortext();
    let mut raw = Raw::start(&f);
    for line in [r#"{"hello":"world"}"#, "null", "[1,2,3]"] {
        raw.send(line);
        let reply = raw.recv();
        assert_eq!(reply["error"]["code"], -32600, "{line}: {reply}");
    }
    raw.ping(3);
}

#[test]
fn unknown_tools_and_methods_are_protocol_errors() {
    let f = Fixture::cortext();
    let mut raw = Raw::start(&f);
    raw.send(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#);
    let reply = raw.recv();
    assert_eq!(reply["id"], 10);
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("unknown tool 'no_such_tool'"), "{reply}");

    raw.send(r#"{"jsonrpc":"2.0","id":11,"method":"no/such/method"}"#);
    let reply = raw.recv();
    assert_eq!(reply["id"], 11);
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    raw.ping(12);
}

#[test]
fn wrong_argument_types_get_tool_errors() {
    let f = Fixture::cortext();
    let mut raw = Raw::start(&f);
    // arguments must be an object: the protocol layer rejects this shape.
    raw.send(
        r#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"search_workspace","arguments":"jwt"}}"#,
    );
    let reply = raw.recv();
    assert_eq!(reply["id"], 20);
    assert!(reply.get("error").is_some(), "{reply}");
    // A well-formed call with a mistyped field is the tool's error, isError: true.
    raw.send(r#"{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"search_workspace","arguments":{"query":["a"]}}}"#);
    let reply = raw.recv();
    assert_eq!(reply["id"], 21);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let body: Value = serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["success"], false);
    assert!(body["error"].as_str().unwrap().starts_with("argument 'query'"), "{body}");
    raw.ping(22);
}

#[test]
fn a_cancelled_call_stops_its_component() {
    let f = Fixture::cortext().with_hostile();
    // A long deadline, so only cancellation can stop the loop quickly.
    std::fs::remove_file(f.workspace.join(".ragbox/config.toml")).unwrap();
    f.write_user_config("[tools.hostile]\ntimeout_secs = 120\n");
    let mut raw = Raw::start(&f);
    raw.send(
        r#"{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"hostile","arguments":{"op":"loop"}}}"#,
    );
    std::thread::sleep(Duration::from_millis(300));
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":30,"reason":"test"}}"#);
    let started = Instant::now();
    while !raw.stderr.lock().unwrap().contains("was cancelled by the client") {
        assert!(started.elapsed() < Duration::from_secs(10), "component not stopped: {}", raw.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    raw.ping(31);
}

#[test]
fn progress_reports_reach_the_client_before_the_result() {
    let f = Fixture::cortext().with_hostile();
    let mut raw = Raw::start(&f);
    raw.send(r#"{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"hostile","arguments":{"op":"progress"},"_meta":{"progressToken":"tok-7"}}}"#);
    let mut reports = Vec::new();
    loop {
        let msg = raw.recv();
        if msg["id"] == 50 {
            assert_eq!(msg["result"]["content"][0]["text"], "progressed", "{msg}");
            break;
        }
        assert_eq!(msg["method"], "notifications/progress", "{msg}");
        let p = &msg["params"];
        assert_eq!(p["progressToken"], "tok-7");
        reports.push((p["progress"].as_f64().unwrap(), p["total"].as_f64().unwrap(), p["message"].clone()));
    }
    assert_eq!(
        reports,
        [(1.0, 3.0, json!("step 1 of 3")), (2.0, 3.0, json!("step 2 of 3")), (3.0, 3.0, json!("step 3 of 3"))]
    );
    // Without a token, no notifications: the reply comes first.
    raw.send(
        r#"{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"hostile","arguments":{"op":"progress"}}}"#,
    );
    assert_eq!(raw.recv()["id"], 51);
}

#[test]
fn progress_token_is_accepted() {
    let f = Fixture::cortext();
    let mut raw = Raw::start(&f);
    raw.send(r#"{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"search_workspace","arguments":{"query":"jwt"},"_meta":{"progressToken":"p1"}}}"#);
    let reply = raw.recv();
    assert_eq!(reply["id"], 40, "{reply}");
    assert_eq!(reply["result"]["isError"], false);
}

/// The bytes of `tools/list`'s result as a server with `args` answers it.
fn tools_list(f: &Fixture, args: &[&str]) -> (Vec<String>, usize, Raw) {
    let mut raw = Raw::start_with(f, args);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let reply = raw.recv();
    let tools = reply["result"]["tools"].as_array().unwrap_or_else(|| panic!("{reply}"));
    let names = tools.iter().map(|t| t["name"].as_str().unwrap_or_default().to_string()).collect();
    (names, reply["result"].to_string().len(), raw)
}

#[test]
fn the_core_profile_lists_what_most_agents_need_and_refuses_the_rest() {
    let f = Fixture::cortext();
    // The default: every tool, at most half the 39 KB a list with full output schemas took.
    let (all, all_bytes, _) = tools_list(&f, &["serve"]);
    assert!(all_bytes <= 19_500, "{all_bytes} B");
    let (with_schemas, schema_bytes, _) = tools_list(&f, &["serve", "--output-schemas"]);
    assert_eq!(with_schemas, all);
    assert!(schema_bytes > all_bytes + 5_000, "{schema_bytes} B with output schemas");
    let (mut core, core_bytes, mut raw) = tools_list(&f, &["serve", "--tools", "core"]);
    core.sort();
    let mut want =
        ["search", "search_skills", "get_context", "search_similar", "embed_workspace", "get_embedding_status"];
    want.sort();
    assert_eq!(core, want);
    assert!(all.len() >= 13 && all.iter().all(|n| n.as_str() != "find_todos"), "{all:?}");
    assert!(core_bytes * 3 < all_bytes * 2, "core {core_bytes} B against all {all_bytes} B");

    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_workspace","arguments":{"query":"jwt"}}}"#);
    let reply = raw.recv();
    let message = reply["error"]["message"].as_str().unwrap_or_else(|| panic!("{reply}"));
    assert!(message.contains("not offered") && message.contains("--tools all"), "{message}");
    raw.send(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_embedding_status","arguments":{}}}"#,
    );
    let reply = raw.recv();
    assert_eq!(reply["result"]["isError"], false, "{reply}");

    let (mut named, _, _) = tools_list(&f, &["serve", "--tools", "search_workspace,get_context"]);
    named.sort();
    assert_eq!(named, ["get_context", "search_workspace"]);
}

/// MCP 2026-07-28 has no `initialize`: each request carries the protocol
/// version and the client's capabilities in `_meta`. ragbox answers such a
/// client, and the older handshake's clients still (the rest of this suite).
#[test]
fn a_2026_07_28_client_is_served_without_a_handshake() {
    let f = Fixture::cortext();
    let mut raw = Raw::spawn(&f, &["serve"]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    raw.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}).to_string());
    let reply = raw.recv();
    let tools = reply["result"]["tools"].as_array().unwrap_or_else(|| panic!("{reply}"));
    assert!(tools.iter().any(|t| t["name"] == "search_workspace"), "{reply}");
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search_workspace", "arguments": {"query": "JWT"}, "_meta": meta}})
        .to_string(),
    );
    let reply = raw.recv();
    assert_eq!(reply["result"]["structuredContent"]["num_results"], 7, "{reply}");
    // Without the metadata, the request is refused with what is missing.
    raw.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}).to_string());
    let reply = raw.recv();
    assert!(reply["error"]["message"].as_str().is_some_and(|m| m.contains("protocolVersion")), "{reply}");
}

/// Over HTTP, a 2026-07-28 client has no session: each POST carries the
/// version (header and `_meta`) and is answered on its own, token still required.
#[test]
fn a_2026_07_28_client_is_served_over_http_without_a_session() {
    let f = Fixture::cortext();
    let server = f.serve_http();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "search_workspace", "arguments": {"query": "JWT"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
        }
    }})
    .to_string();
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: search_workspace\r\n";
    let (status, response) = server.post(&server.token, headers, &body);
    assert_eq!(status, 200, "{response}");
    assert!(!response.to_ascii_lowercase().contains("mcp-session-id"), "no session: {response}");
    assert!(response.contains(r#""num_results":7"#), "{response}");
    let (status, _) = server.post("wrong-token", headers, &body);
    assert_eq!(status, 401);
}
