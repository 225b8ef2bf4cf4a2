//! The stdio framing in front of rmcp: every line from the client is checked
//! before rmcp sees it, so a message that is not JSON, too large, nested too
//! deep, not a message rmcp can read, or a `tools/call` whose `arguments` is
//! not an object gets a JSON-RPC error reply (rmcp would drop all but the
//! last silently, and answer that one "method not found"). Replies from rmcp
//! and from here share stdout a whole line at a time.
//!
//! A client that sends requests and reads no answers is held back here: at
//! most [`MAX_IN_FLIGHT`] of its requests reach rmcp ahead of their answers
//! being written ([`Flow`]); the ones after them wait here, unread by rmcp,
//! up to [`MAX_PARKED_BYTES`], and past that no more of its input is read. So
//! answers waiting for it cannot pile up in a process every session shares,
//! while its cancellations, pings and end are still heard.

use rmcp::model::{ClientJsonRpcMessage, NumberOrString};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, mpsc};

/// Largest message accepted, in bytes (rmcp's own limit).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Deepest nesting accepted: serde_json (and so rmcp) reads at most 127
/// levels; a message nested deeper would get no reply at all.
const MAX_DEPTH: usize = 127;

/// Bytes of rmcp's pipes; a message larger than this just takes several writes.
const PIPE_BYTES: usize = 1 << 20;

/// A client's requests handed to rmcp and not yet answered on its output, at
/// most: the next wait here. Agents send a few at a time.
pub const MAX_IN_FLIGHT: usize = 16;

/// Requests waiting for room before rmcp sees them, in bytes (past it, the
/// client's input is not read until room comes; one line may pass it).
const MAX_PARKED_BYTES: usize = 16 << 20;

/// How long requests still waiting when the client's input ends are kept
/// for room (a client that closed its input may still read the answers).
const PARKED_AT_END: std::time::Duration = std::time::Duration::from_secs(5);

/// The first byte of a log line on a relay's socket (ASCII's record
/// separator): no JSON-RPC message starts with it, so the relay writes such
/// lines to its stderr, the others to its stdout.
pub const LOG_LINE: u8 = 0x1e;

/// A session's requests in flight: read from the client, not yet answered on
/// its output. Handlers may hold something back until their answer is out
/// ([`Flow::hold_until_answered`]): a resource read's slot, so that a client
/// that reads nothing has at most a few answers waiting in memory.
#[derive(Default)]
pub struct Flow {
    state: Mutex<FlowState>,
    /// Signalled when a request leaves the set.
    room: Notify,
}

#[derive(Default)]
struct FlowState {
    pending: HashSet<String>,
    held: HashMap<String, OwnedSemaphorePermit>,
    /// The client's output is gone: nothing more will be answered.
    closed: bool,
}

impl Flow {
    fn state(&self) -> std::sync::MutexGuard<'_, FlowState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The request `id` was read and handed on.
    fn request(&self, id: &Value) {
        self.state().pending.insert(id_key(id));
    }

    /// The request `id` was answered, or cancelled (rmcp answers none then).
    fn settled(&self, id: &Value) {
        let key = id_key(id);
        let released = {
            let mut state = self.state();
            state.pending.remove(&key);
            state.held.remove(&key)
        };
        drop(released);
        self.room.notify_waiters();
    }

    /// Keeps `permit` until the answer to request `id` is written (or the
    /// request is cancelled); at once if it is not in flight.
    pub fn hold_until_answered(&self, id: &NumberOrString, permit: OwnedSemaphorePermit) {
        let key = match id {
            NumberOrString::Number(n) => n.to_string(),
            NumberOrString::String(s) => Value::from(&**s).to_string(),
        };
        let mut state = self.state();
        if state.pending.contains(&key) && !state.closed {
            state.held.insert(key, permit);
        }
    }

    /// Whether fewer than `most` requests are in flight.
    fn has_room(&self, most: usize) -> bool {
        self.state().pending.len() < most
    }

    /// The output is gone (or rmcp's ended): the client's input is read no
    /// more, and what waits for an answer is let go.
    fn close(&self) {
        let released = {
            let mut state = self.state();
            state.closed = true;
            std::mem::take(&mut state.held)
        };
        drop(released);
        self.room.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.state().closed
    }
}

/// A request id as one string, numbers as rmcp reads them (`7.0` is `7`).
fn id_key(id: &Value) -> String {
    same_id(id).to_string()
}

/// A JSON-RPC id as rmcp reads it: a number written `7.0` or `7e0` is the integer 7.
pub fn same_id(id: &Value) -> Value {
    match id.as_f64() {
        Some(f) if id.is_number() && !id.is_i64() && !id.is_u64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
            Value::from(f as i64)
        }
        _ => id.clone(),
    }
}

/// The transport to give rmcp: its input carries the checked lines of
/// `input`, and what it writes goes out on `output`, with this layer's own
/// error replies between its lines, and the lines `logs` brings marked with
/// [`LOG_LINE`]. `flow` counts the requests in flight. Ends when `input`
/// ends; the task returned ends once rmcp's last line is written.
pub fn framed<R, W>(
    input: R,
    output: W,
    logs: Option<mpsc::Receiver<Vec<u8>>>,
    flow: Arc<Flow>,
) -> ((DuplexStream, DuplexStream), tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (replies, replies_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let log = crate::logs::current();
    tokio::spawn(crate::logs::tagged(log, read_client(input, to_rmcp, replies, flow.clone())));
    let writer = tokio::spawn(write_client(from_rmcp, replies_rx, logs, output, flow));
    ((rmcp_in, rmcp_out), writer)
}

/// One line of the client's, read.
struct Read {
    line: Vec<u8>,
    /// More was dropped past [`MAX_MESSAGE_BYTES`].
    oversized: bool,
}

/// Reads the client's lines into `lines`, one at a time: while nobody takes
/// them, the client's input is not read.
async fn read_lines<R: AsyncRead + Unpin>(input: R, lines: mpsc::Sender<Read>) {
    let mut input = BufReader::new(input);
    loop {
        let mut line = Vec::new();
        let oversized = match read_line(&mut input, &mut line).await {
            Ok(Some(oversized)) => oversized,
            Ok(None) => return,
            Err(e) => return tracing::error!("cannot read stdin: {e}"),
        };
        if lines.send(Read { line, oversized }).await.is_err() {
            return;
        }
    }
}

/// Takes the client's lines: good ones go to rmcp, bad ones get a reply. A
/// request past [`MAX_IN_FLIGHT`] unanswered ones waits here until one is
/// answered, and past [`MAX_PARKED_BYTES`] of such the input is not read on;
/// `ping` and cancellations never wait (a cancelled request still waiting is
/// dropped). Ends at the input's end (once what waits has gone on, or after
/// [`PARKED_AT_END`]), or when the output is gone: dropping `to_rmcp` ends
/// rmcp's input too.
async fn read_client<R: AsyncRead + Unpin + Send + 'static>(
    input: R,
    mut to_rmcp: DuplexStream,
    replies: mpsc::UnboundedSender<Vec<u8>>,
    flow: Arc<Flow>,
) {
    let (tx, mut lines) = mpsc::channel::<Read>(1);
    let reader = tokio::spawn(crate::logs::tagged(crate::logs::current(), read_lines(input, tx)));
    // However this ends, the reader goes too.
    let _reader = AbortOnDrop(reader);
    let mut parked: std::collections::VecDeque<(Value, Vec<u8>)> = std::collections::VecDeque::new();
    let mut parked_bytes = 0usize;
    let mut ended: Option<tokio::time::Instant> = None;
    loop {
        while !parked.is_empty() && flow.has_room(MAX_IN_FLIGHT) {
            let Some((id, line)) = parked.pop_front() else { break };
            parked_bytes -= line.len();
            flow.request(&id);
            if to_rmcp.write_all(&line).await.is_err() {
                return;
            }
        }
        if flow.is_closed() || (ended.is_some() && parked.is_empty()) {
            return;
        }
        let room = flow.room.notified();
        tokio::pin!(room);
        // Registered before looking again: an answer written meanwhile wakes it.
        room.as_mut().enable();
        if !parked.is_empty() && flow.has_room(MAX_IN_FLIGHT) || flow.is_closed() {
            continue;
        }
        let can_read = ended.is_none() && parked_bytes < MAX_PARKED_BYTES;
        let give_up = ended.unwrap_or_else(tokio::time::Instant::now) + PARKED_AT_END;
        tokio::select! {
            read = lines.recv(), if can_read => match read {
                Some(Read { line, oversized }) => {
                    let waiting = (!parked.is_empty() || !flow.has_room(MAX_IN_FLIGHT)).then_some(&mut parked);
                    if let Some(line) = take(line, oversized, &flow, &replies, waiting, &mut parked_bytes)
                        && to_rmcp.write_all(&line).await.is_err()
                    {
                        return;
                    }
                }
                None => ended = Some(tokio::time::Instant::now()),
            },
            () = &mut room => {}
            () = tokio::time::sleep_until(give_up), if ended.is_some() => {
                return tracing::warn!(
                    waiting = parked.len(),
                    "the client's input ended with requests still waiting for room; they were not run"
                );
            }
        }
    }
}

/// What becomes of one line of the client's: the line to hand rmcp now (with
/// its newline), or none (answered here, ignored, or `waiting` took it).
fn take(
    mut line: Vec<u8>,
    oversized: bool,
    flow: &Flow,
    replies: &mpsc::UnboundedSender<Vec<u8>>,
    waiting: Option<&mut std::collections::VecDeque<(Value, Vec<u8>)>>,
    waiting_bytes: &mut usize,
) -> Option<Vec<u8>> {
    let verdict = if oversized {
        Err(Some(error(
            id_in(&line),
            -32600,
            format!("message over the {} MiB limit; not read", MAX_MESSAGE_BYTES >> 20),
        )))
    } else {
        check(&line)
    };
    line.push(b'\n');
    match verdict {
        Ok(Sent::Request(id)) => match waiting {
            Some(queue) => {
                *waiting_bytes += line.len();
                queue.push_back((id, line));
                None
            }
            None => {
                flow.request(&id);
                Some(line)
            }
        },
        Ok(Sent::Cancelled(id)) => {
            if let Some(queue) = waiting {
                // Still waiting: it never runs, and gets no answer (as MCP says of a cancelled request).
                let key = id_key(&id);
                if let Some(at) = queue.iter().position(|(waiting, _)| id_key(waiting) == key)
                    && let Some((_, dropped)) = queue.remove(at)
                {
                    *waiting_bytes -= dropped.len();
                }
            }
            flow.settled(&id);
            Some(line)
        }
        Ok(Sent::Other) => Some(line),
        Err(Some(reply)) => {
            tracing::warn!("refused a client message: {}", reply["error"]["message"]);
            let _ = replies.send(reply.to_string().into_bytes());
            None
        }
        // A notification gets no reply, not even an error.
        Err(None) => {
            tracing::warn!("ignored a client notification rmcp cannot read");
            None
        }
    }
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
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

/// What a line that goes on to rmcp is, as far as [`Flow`] counts it.
#[derive(Debug, PartialEq)]
enum Sent {
    /// A request: an answer will be written for it.
    Request(Value),
    /// `notifications/cancelled` for this request id: rmcp then answers nothing.
    Cancelled(Value),
    /// A notification, or a client's answer.
    Other,
}

/// What a line rmcp should see is; else the error reply to send instead
/// (none for a notification, which never gets one).
fn check(line: &[u8]) -> Result<Sent, Option<Value>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Sent::Other);
    }
    let too_deep = depth(line) > MAX_DEPTH;
    if too_deep {
        let id = id_in(line);
        return Err(Some(error(id, -32600, format!("message nested deeper than {MAX_DEPTH} levels; not read"))));
    }
    // As rmcp reads it (a byte-order mark is allowed).
    let bare = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let message = match serde_json::from_slice::<Value>(bare) {
        Ok(message) => message,
        Err(e) => return Err(Some(error(Value::Null, -32700, format!("Parse error: not JSON ({e})")))),
    };
    let id = message.get("id").filter(|id| id.is_number() || id.is_string()).cloned();
    let method = message.get("method").and_then(Value::as_str);
    if method == Some("tools/call")
        && let Some(problem) = call_problem(message.get("params"))
    {
        return Err(Some(error(id.unwrap_or(Value::Null), -32602, problem)));
    }
    if let Err(e) = serde_json::from_slice::<ClientJsonRpcMessage>(bare) {
        return match (method, &id) {
            (Some(_), None) => Err(None),
            _ => Err(Some(error(id.unwrap_or(Value::Null), -32600, format!("Invalid Request: {e}")))),
        };
    }
    Ok(match (method, id) {
        (Some("notifications/cancelled"), None) => {
            match message.get("params").and_then(|p| p.get("requestId")).filter(|r| r.is_number() || r.is_string()) {
                Some(cancelled) => Sent::Cancelled(cancelled.clone()),
                None => Sent::Other,
            }
        }
        // Answered at once by rmcp, and what a client checks a stuck server with: never waits.
        (Some("ping"), Some(_)) => Sent::Other,
        (Some(_), Some(id)) => Sent::Request(id),
        _ => Sent::Other,
    })
}

/// Why a `tools/call`'s `params` cannot be a call, in words; `None` when it can.
fn call_problem(params: Option<&Value>) -> Option<String> {
    match params {
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

/// The message's id: the value of its top-level `"id"`, wherever it stands
/// (after a deeply nested `params` too); else null, as JSON-RPC says. Read
/// without parsing the rest of the line.
pub fn id_in(line: &[u8]) -> Value {
    let found = walk(line, |piece| match piece {
        Piece::Str { depth: 1, text: b"id", after } => match after.trim_ascii_start().strip_prefix(b":") {
            Some(value) => ControlFlow::Break(value),
            None => ControlFlow::Continue(()),
        },
        _ => ControlFlow::Continue(()),
    });
    let Some(value) = found else { return Value::Null };
    let mut stream = serde_json::Deserializer::from_slice(value.trim_ascii_start()).into_iter::<Value>();
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

/// Whether `line` is an answer (its top-level keys hold `result` or `error`
/// before any `method`), read from its first bytes without parsing the rest:
/// a result's own `"method"` keys are nested, and it may be megabytes long.
pub fn is_answer(line: &[u8]) -> bool {
    let head = &line[..line.len().min(64 << 10)];
    let told = walk(head, |piece| match piece {
        Piece::Str { depth: 1, text, after } if after.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b':') => {
            match text {
                b"result" | b"error" => ControlFlow::Break(true),
                b"method" => ControlFlow::Break(false),
                _ => ControlFlow::Continue(()),
            }
        }
        _ => ControlFlow::Continue(()),
    });
    told.unwrap_or(false)
}

/// Copies rmcp's lines and this layer's replies to the client, whole lines
/// only; each answer written settles its request in `flow`.
async fn write_client<W: AsyncWrite + Unpin>(
    from_rmcp: DuplexStream,
    mut replies: mpsc::UnboundedReceiver<Vec<u8>>,
    mut logs: Option<mpsc::Receiver<Vec<u8>>>,
    mut output: W,
    flow: Arc<Flow>,
) {
    // However it ends (the client's output gone, or rmcp's), the client's input is let go too.
    struct Closes(Arc<Flow>);
    impl Drop for Closes {
        fn drop(&mut self) {
            self.0.close();
        }
    }
    let flow = Closes(flow);
    let flow = &flow.0;
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
            if is_answer(&line) {
                flow.settled(&id_in(&line));
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
    use tokio::io::AsyncReadExt as _;

    #[test]
    fn bad_calls_are_told_why() {
        let call = |args: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"search","arguments":{args}}}}}"#
            )
        };
        assert_eq!(check(call(r#"{"query":"x"}"#).as_bytes()), Ok(Sent::Request(json!(7))));
        let reply = check(call("[1,2]").as_bytes()).unwrap_err().unwrap();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(7), &json!(-32602)));
        assert!(reply["error"]["message"].as_str().unwrap().contains("not an array"), "{reply}");
        assert_eq!(check(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Ok(Sent::Other));
        let cancel = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#;
        assert_eq!(check(cancel), Ok(Sent::Cancelled(json!("a"))));
    }

    #[test]
    fn what_is_not_a_message_gets_json_rpcs_errors() {
        let reply = check(b"not json at all").unwrap_err().unwrap();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&Value::Null, &json!(-32700)));
        // JSON, but no JSON-RPC message: rmcp would drop it unanswered.
        let reply = check(br#"{"jsonrpc":"2.0","id":"q","params":{}}"#).unwrap_err().unwrap();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!("q"), &json!(-32600)));
        let reply = check(b"[1,2,3]").unwrap_err().unwrap();
        assert_eq!(reply["error"]["code"], -32600);
        // A notification gets no reply, even when it cannot be read.
        assert_eq!(check(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":7}"#), Err(None));
        // A byte-order mark is read past, as rmcp does.
        assert_eq!(check(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), Ok(Sent::Other));
    }

    #[test]
    fn deep_nesting_is_refused_with_the_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":"x1","method":"ping","params":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let reply = check(deep.as_bytes()).unwrap_err().unwrap();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!("x1"), &json!(-32600)));
        assert_eq!(depth(br#"{"a":"[[[[","b":[1]}"#), 2, "brackets in strings do not count");
        let at = |levels: usize| {
            let inner = levels - 2; // the message object and `params`
            format!(
                r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"x":{}1{}}}}}"#,
                "[".repeat(inner),
                "]".repeat(inner)
            )
        };
        // Every depth up to the limit gets an answer: rmcp's, or this layer's error with the id.
        for levels in [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1] {
            assert_eq!(depth(at(levels).as_bytes()), levels);
            match check(at(levels).as_bytes()) {
                // A ping: answered at once, never counted.
                Ok(sent) => assert_eq!(sent, Sent::Other),
                Err(reply) => {
                    let reply = reply.expect("a request gets a reply");
                    assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(9), &json!(-32600)), "{levels}");
                }
            }
        }
        assert_eq!(id_in(br#"{"params":{"id":3},"id":4}"#), json!(4), "a nested id is not the request's");
        assert_eq!(id_in(br#"{"params":{"id":3}}"#), Value::Null);
        assert_eq!(id_in(br#"{"jsonrpc":"2.0","id": 12,"#), json!(12));
        assert_eq!(id_in(br#"{"x":"\"id\":5","id" : "a"}"#), json!("a"), "an id in a string is not the request's");
        // A line too deep for rmcp, its id after the nesting: the refusal carries it.
        let deep_first = format!(
            r#"{{"jsonrpc":"2.0","method":"ping","params":{{"x":{}1{}}},"id":77}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        let reply = check(deep_first.as_bytes()).unwrap_err().unwrap();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(77), &json!(-32600)));
    }

    #[test]
    fn answers_are_told_by_their_top_level_keys() {
        assert!(is_answer(br#"{"jsonrpc":"2.0","id":1,"result":{"method":"keyword"}}"#));
        assert!(is_answer(br#"{"jsonrpc":"2.0","result":{"structuredContent":{"method":"x"}},"id":"a"}"#));
        assert!(is_answer(br#"{"id":2,"error":{"code":-32603,"message":"\"method\": no"}}"#));
        assert!(!is_answer(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#));
        assert!(!is_answer(br#"{"jsonrpc":"2.0","id":3,"method":"roots/list","params":{"result":1}}"#));
        assert!(!is_answer(b"not json"));
    }

    #[test]
    fn ids_are_compared_as_rmcp_reads_them() {
        assert_eq!(same_id(&json!(7.0)), json!(7));
        assert_eq!(same_id(&json!(7)), json!(7));
        assert_eq!(same_id(&json!(7.5)), json!(7.5));
        assert_eq!(same_id(&json!("7")), json!("7"));
        let parsed: Value = serde_json::from_str("1e2").unwrap();
        assert_eq!(same_id(&parsed), json!(100));
        assert_eq!(id_key(&json!(7.0)), id_key(&json!(7)));
        assert_ne!(id_key(&json!("7")), id_key(&json!(7)));
    }

    /// Lines rmcp would be handed, read from `from` until `count` came or a moment passed.
    async fn handed(from: &mut BufReader<DuplexStream>, count: usize) -> Vec<Value> {
        let mut got = Vec::new();
        while got.len() < count {
            let mut line = Vec::new();
            match tokio::time::timeout(std::time::Duration::from_millis(300), from.read_until(b'\n', &mut line)).await {
                Ok(Ok(n)) if n > 0 => got.push(serde_json::from_slice(&line).unwrap()),
                _ => break,
            }
        }
        got
    }

    #[tokio::test]
    async fn a_client_that_reads_no_answers_waits_and_is_still_heard() {
        let flow = Arc::new(Flow::default());
        let (mut client, input) = tokio::io::duplex(1 << 20);
        let (to_rmcp, rmcp) = tokio::io::duplex(1 << 20);
        let (replies, _replies) = mpsc::unbounded_channel();
        let reading = tokio::spawn(read_client(input, to_rmcp, replies, flow.clone()));
        let mut rmcp = BufReader::new(rmcp);
        let request = |id: usize| {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"x\"}}}}\n")
        };
        for id in 0..MAX_IN_FLIGHT + 4 {
            client.write_all(request(id).as_bytes()).await.unwrap();
        }
        // rmcp gets the first 16; the rest wait, and the client is still heard.
        assert_eq!(handed(&mut rmcp, MAX_IN_FLIGHT + 4).await.len(), MAX_IN_FLIGHT);
        client.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\n").await.unwrap();
        let cancel = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{}}}}}\n",
            MAX_IN_FLIGHT + 1
        );
        client.write_all(cancel.as_bytes()).await.unwrap();
        let heard = handed(&mut rmcp, 2).await;
        assert_eq!(
            (heard[0]["method"].as_str(), heard[1]["method"].as_str()),
            (Some("ping"), Some("notifications/cancelled"))
        );
        // An answer written makes room for the next waiting one; the cancelled one never runs.
        let slots = Arc::new(tokio::sync::Semaphore::new(1));
        flow.hold_until_answered(&NumberOrString::Number(3), slots.clone().try_acquire_owned().unwrap());
        assert_eq!(slots.available_permits(), 0, "held until its answer is out");
        flow.settled(&json!(3.0));
        assert_eq!(slots.available_permits(), 1);
        flow.settled(&json!(4));
        let next: Vec<Value> = handed(&mut rmcp, 3).await.iter().map(|m| m["id"].clone()).collect();
        assert_eq!(next, [json!(MAX_IN_FLIGHT), json!(MAX_IN_FLIGHT + 2)]);
        // The output gone: the input is let go, and rmcp's ends.
        flow.close();
        tokio::time::timeout(std::time::Duration::from_secs(5), reading).await.unwrap().unwrap();
        let mut rest = Vec::new();
        assert_eq!(rmcp.read_to_end(&mut rest).await.unwrap(), 0, "rmcp's input ended");
    }
}
