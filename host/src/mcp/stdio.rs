//! The stdio framing in front of rmcp: every line from the client is checked
//! before rmcp sees it, so a message that is too large, nested too deep, or a
//! `tools/call` whose `arguments` is not an object gets a JSON-RPC error reply
//! (rmcp would drop the first two silently and answer the last "method not
//! found"). Replies from rmcp and from here share stdout a whole line at a time.

use serde_json::{Value, json};
use std::ops::ControlFlow;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// Largest message accepted, in bytes (rmcp's own limit).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Deepest nesting accepted: serde_json (and so rmcp) reads at most 127
/// levels; a message nested deeper would get no reply at all.
const MAX_DEPTH: usize = 127;

/// Bytes of rmcp's pipes; a message larger than this just takes several writes.
const PIPE_BYTES: usize = 1 << 20;

/// The first byte of a log line on a relay's socket (ASCII's record
/// separator): no JSON-RPC message starts with it, so the relay writes such
/// lines to its stderr, the others to its stdout.
pub const LOG_LINE: u8 = 0x1e;

/// The transport to give rmcp: its input carries the checked lines of
/// `input`, and what it writes goes out on `output`, with this layer's own
/// error replies between its lines, and the lines `logs` brings marked with
/// [`LOG_LINE`]. Ends when `input` ends; the task returned ends once rmcp's
/// last line is written.
pub fn framed<R, W>(
    input: R,
    output: W,
    logs: Option<mpsc::Receiver<Vec<u8>>>,
) -> ((DuplexStream, DuplexStream), tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (replies, replies_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let log = crate::logs::current();
    tokio::spawn(crate::logs::tagged(log, read_client(input, to_rmcp, replies)));
    let writer = tokio::spawn(write_client(from_rmcp, replies_rx, logs, output));
    ((rmcp_in, rmcp_out), writer)
}

/// Reads the client's lines: good ones go to rmcp, bad ones get a reply.
async fn read_client<R: AsyncRead + Unpin>(
    input: R,
    mut to_rmcp: DuplexStream,
    replies: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let oversized = match read_line(&mut input, &mut line).await {
            Ok(Some(oversized)) => oversized,
            Ok(None) => return, // EOF: dropping `to_rmcp` ends rmcp's input too
            Err(e) => return tracing::error!("cannot read stdin: {e}"),
        };
        let verdict = if oversized {
            Err(error(
                id_in(&line),
                -32600,
                format!("message over the {} MiB limit; not read", MAX_MESSAGE_BYTES >> 20),
            ))
        } else {
            check(&line)
        };
        match verdict {
            Ok(()) => {
                line.push(b'\n');
                if to_rmcp.write_all(&line).await.is_err() {
                    return;
                }
            }
            Err(reply) => {
                tracing::warn!("refused a client message: {}", reply["error"]["message"]);
                let _ = replies.send(reply.to_string().into_bytes());
            }
        }
    }
}

/// Reads one line into `line` (without its newline), keeping at most
/// [`MAX_MESSAGE_BYTES`] of it: `Some(true)` when more was dropped, `None` at EOF.
async fn read_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    let mut oversized = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!line.is_empty() || oversized).then_some(oversized));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (buf.len(), false),
        };
        let room = MAX_MESSAGE_BYTES.saturating_sub(line.len());
        // The first bytes are kept even when over the limit: they may hold the id.
        line.extend_from_slice(&buf[..take.min(room)]);
        oversized |= take > room;
        input.consume(if done { take + 1 } else { take });
        if done {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(oversized));
        }
    }
}

/// `Ok` for a line rmcp should see; else the error reply to send instead.
fn check(line: &[u8]) -> Result<(), Value> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let too_deep = depth(line) > MAX_DEPTH;
    if too_deep {
        return Err(error(id_in(line), -32600, format!("message nested deeper than {MAX_DEPTH} levels; not read")));
    }
    // What does not parse is left to rmcp, which ignores it (answering garbage can start an error storm).
    let Ok(message) = serde_json::from_slice::<Value>(line) else { return Ok(()) };
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Ok(());
    }
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let params = message.get("params");
    let problem = match params {
        Some(Value::Object(p)) => match (p.get("name"), p.get("arguments")) {
            (Some(Value::String(_)), None | Some(Value::Null | Value::Object(_))) => None,
            (Some(Value::String(_)), Some(other)) => {
                Some(format!("`arguments` must be a JSON object, not {}", kind(other)))
            }
            (name, _) => {
                Some(format!("`name` must be the tool's name as a string, not {}", name.map_or("missing", kind)))
            }
        },
        other => Some(format!(
            "`params` must be an object with `name` and `arguments`, not {}",
            other.map_or("missing", kind)
        )),
    };
    match problem {
        Some(message) => Err(error(id, -32602, message)),
        None => Ok(()),
    }
}

/// How deep the brackets of `line` nest, strings skipped; stops counting past the limit.
fn depth(line: &[u8]) -> usize {
    let mut deepest = 0;
    walk(line, |piece| {
        if let Piece::Open(depth) = piece {
            deepest = deepest.max(depth);
            if deepest > MAX_DEPTH {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    deepest
}

/// One piece of a JSON line's structure, as [`walk`] meets it.
#[cfg_attr(not(unix), allow(dead_code))] // a string's parts: the relay's (Unix only)
pub enum Piece<'a> {
    /// A `{` or `[`, and the depth it opens.
    Open(usize),
    /// A string at `depth` (its bytes as written, escapes and all), and the line after it.
    Str {
        /// How deep it is: 1 for a top-level object's keys and values.
        depth: usize,
        /// Between its quotes.
        text: &'a [u8],
        /// What follows its closing quote.
        after: &'a [u8],
    },
}

/// Walks `line`'s brackets and strings (what a string holds is no
/// structure) without parsing it, calling `visit` on each until it breaks.
pub fn walk<'a, T>(line: &'a [u8], mut visit: impl FnMut(Piece<'a>) -> ControlFlow<T>) -> Option<T> {
    let (mut depth, mut string, mut escaped) = (0usize, None::<usize>, false);
    for (at, &b) in line.iter().enumerate() {
        if let Some(from) = string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    string = None;
                    let piece = Piece::Str { depth, text: &line[from..at], after: &line[at + 1..] };
                    if let ControlFlow::Break(found) = visit(piece) {
                        return Some(found);
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => string = Some(at + 1),
            b'[' | b'{' => {
                depth += 1;
                if let ControlFlow::Break(found) = visit(Piece::Open(depth)) {
                    return Some(found);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The request's id when it can be told from its first bytes (a top-level
/// `"id"` before anything nested); else null, as JSON-RPC says.
pub fn id_in(line: &[u8]) -> Value {
    let head = &line[..line.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    let Some(at) = text.find("\"id\"") else { return Value::Null };
    if depth(&head[..at]) > 1 || text[..at].matches('{').count() != 1 {
        return Value::Null;
    }
    let rest = text[at + 4..].trim_start().strip_prefix(':').unwrap_or("").trim_start();
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match stream.next() {
        Some(Ok(id @ (Value::Number(_) | Value::String(_)))) => id,
        _ => Value::Null,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn error(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Copies rmcp's lines and this layer's replies to the client, whole lines only.
async fn write_client<W: AsyncWrite + Unpin>(
    from_rmcp: DuplexStream,
    mut replies: mpsc::UnboundedReceiver<Vec<u8>>,
    mut logs: Option<mpsc::Receiver<Vec<u8>>>,
    mut output: W,
) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    loop {
        tokio::select! {
            read = from_rmcp.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            Some(mut reply) = replies.recv() => {
                reply.push(b'\n');
                if output.write_all(&reply).await.is_err() || output.flush().await.is_err() {
                    return;
                }
                continue;
            }
            Some(record) = next_log(logs.as_mut()) => {
                let mut marked = Vec::with_capacity(record.len() + 2);
                marked.push(LOG_LINE);
                marked.extend_from_slice(&record);
                marked.push(b'\n');
                if output.write_all(&marked).await.is_err() || output.flush().await.is_err() {
                    return;
                }
                continue;
            }
        }
        if line.ends_with(b"\n") {
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                return;
            }
            line.clear();
        }
    }
    let _ = output.write_all(&line).await;
    let _ = output.flush().await;
}

/// The next log line, where there are any; else never.
async fn next_log(logs: Option<&mut mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match logs {
        Some(logs) => logs.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_calls_are_told_why() {
        let call = |args: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"search","arguments":{args}}}}}"#
            )
        };
        assert_eq!(check(call(r#"{"query":"x"}"#).as_bytes()), Ok(()));
        let reply = check(call("[1,2]").as_bytes()).unwrap_err();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(7), &json!(-32602)));
        assert!(reply["error"]["message"].as_str().unwrap().contains("not an array"), "{reply}");
        assert_eq!(check(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Ok(()));
        assert_eq!(check(b"not json at all"), Ok(()), "left to rmcp");
    }

    #[test]
    fn deep_nesting_is_refused_with_the_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":"x1","method":"ping","params":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let reply = check(deep.as_bytes()).unwrap_err();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!("x1"), &json!(-32600)));
        assert_eq!(depth(br#"{"a":"[[[[","b":[1]}"#), 2, "brackets in strings do not count");
        // Every line let through is one serde_json (so rmcp) reads, the deepest included.
        let at = |levels: usize| {
            let inner = levels - 2; // the message object and `params`
            format!(
                r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"x":{}1{}}}}}"#,
                "[".repeat(inner),
                "]".repeat(inner)
            )
        };
        assert_eq!(depth(at(MAX_DEPTH).as_bytes()), MAX_DEPTH);
        assert_eq!(check(at(MAX_DEPTH).as_bytes()), Ok(()));
        assert!(serde_json::from_str::<Value>(&at(MAX_DEPTH)).is_ok(), "the deepest accepted line parses");
        let reply = check(at(MAX_DEPTH + 1).as_bytes()).unwrap_err();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(9), &json!(-32600)));
        assert_eq!(id_in(br#"{"params":{"id":3},"id":4}"#), Value::Null, "a nested id is not the request's");
        assert_eq!(id_in(br#"{"jsonrpc":"2.0","id": 12,"#), json!(12));
    }
}
