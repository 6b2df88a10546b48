//! A fake Anthropic Messages API on loopback, for driving real clients (the Claude Code CLI,
//! later our own LLM provider) without a network or a model.
//!
//! Why a hand-written server: the tests must run offline with std only, and the real client
//! must see exactly what the real API sends, so that what it does with the answer (run a tool,
//! send the tool result back, stop) is what it does in production.
//!
//! What it speaks: plain HTTP/1.1 on `127.0.0.1:0`, one thread per connection, keep-alive
//! (several requests per connection) or `Connection: close`, request bodies by `Content-Length`
//! or chunked. `POST /v1/messages` (with or without `?beta=true`) answers with Server-Sent Events
//! in the order the real API uses (`message_start`, then per content block `content_block_start`,
//! `content_block_delta` (`text_delta` or `input_json_delta`), `content_block_stop`, then
//! `message_delta` with the `stop_reason` and usage, then `message_stop`), or with one JSON
//! message when the request does not ask to stream. Any model id is accepted.
//! `POST /v1/messages/count_tokens` answers an estimate; anything else gets an API-shaped 404.
//! Every request is recorded (method, path, headers, body as JSON) for assertions.
//!
//! What it answers is scripted: a [`Script`] sees each recorded `/v1/messages` request (already
//! classified by [`Kind`]) and returns a [`Reply`], or `None` for the default of its kind. The
//! classification matters with Claude Code, which sends more than the conversation to the same
//! endpoint: a compaction asks for a summary (with the tools still attached), and side requests
//! (titles, quota checks, ...) carry no tools. A script usually only decides the conversation
//! and lets the defaults answer the rest.
//!
//! Seen from Claude Code 2.1.328 in print mode with `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`:
//! only `POST /v1/messages?beta=true`, streaming, one per model turn (no count_tokens, no side
//! request); `/compact` sends one or two compaction requests (below). The messages may include
//! `"role": "system"` entries and a user message's `content` may be a string or a block list.

// A reusable helper: not every test uses every part of it.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Text that Claude Code puts in the last user message of a compaction request
/// ("Your task is to create a detailed summary of the conversation so far, ...").
pub const COMPACTION_MARKER: &str = "create a detailed summary of the conversation";

/// A request body over this size is refused (413): a runaway client must not eat the memory.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// An idle keep-alive connection is closed after this, so its thread ends even if the client
/// never hangs up.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// What a `/v1/messages` request is, as far as a scripted test cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The agent's conversation: it offers tools (Claude Code always offers `Bash`).
    Conversation,
    /// Claude Code asking for a summary of the conversation (`/compact` or auto-compaction).
    Compaction,
    /// Any other `/v1/messages` call (no tools): titles, quota checks, classifiers, ...
    Side,
    /// `POST /v1/messages/count_tokens`.
    CountTokens,
    /// Anything else (answered 404).
    Other,
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Arrival order over the server's life, from 0.
    pub seq: u64,
    pub method: String,
    /// The path with its query (`/v1/messages?beta=true`).
    pub path: String,
    /// Header names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when empty, a JSON string when it was not JSON.
    pub body: Value,
    pub kind: Kind,
}

impl Recorded {
    /// The path without its query string.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }

    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as one string: `contains` on it finds text anywhere in the request
    /// (system prompt, messages, hook contexts), JSON-escaped as sent.
    pub fn body_text(&self) -> String {
        self.body.to_string()
    }

    /// The texts of the body's `messages`, unescaped, joined by newlines: what the model
    /// reads of the conversation (see [`Recorded::message_strings`]).
    pub fn messages_text(&self) -> String {
        self.message_strings().join("\n")
    }

    /// The texts of the body's `messages`, in order: string contents, `text` blocks, tool
    /// results (not tool inputs, ids or block types).
    pub fn message_strings(&self) -> Vec<&str> {
        let mut out = Vec::new();
        if let Some(msgs) = self.body.get("messages") {
            collect_texts(msgs, &mut out);
        }
        out
    }

    pub fn model(&self) -> &str {
        self.body.get("model").and_then(Value::as_str).unwrap_or("")
    }

    pub fn wants_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// Names of the tools offered.
    pub fn tool_names(&self) -> Vec<&str> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(|t| t.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The last message whose role is `user`.
    pub fn last_user_message(&self) -> Option<&Value> {
        self.messages()
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    }

    /// The text blocks of the last user message (a string content counts as one block).
    pub fn last_user_texts(&self) -> Vec<&str> {
        let Some(content) = self.last_user_message().and_then(|m| m.get("content")) else {
            return Vec::new();
        };
        match content {
            Value::String(s) => vec![s.as_str()],
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The tool results of the last user message, each with the name of the tool that made it
    /// (looked up from the assistant's `tool_use` block of the same id).
    pub fn last_tool_results(&self) -> Vec<ToolResult> {
        let Some(Value::Array(blocks)) = self.last_user_message().and_then(|m| m.get("content"))
        else {
            return Vec::new();
        };
        blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .map(|b| {
                let id = b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let mut texts = Vec::new();
                if let Some(c) = b.get("content") {
                    collect_texts(c, &mut texts);
                }
                let content = texts.join("\n");
                ToolResult {
                    name: self.tool_use_name(&id).unwrap_or_default(),
                    tool_use_id: id,
                    content,
                    is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
                }
            })
            .collect()
    }

    /// The name of the tool of the assistant `tool_use` block `id`.
    pub fn tool_use_name(&self, id: &str) -> Option<String> {
        self.messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .find(|b| {
                b.get("type").and_then(Value::as_str) == Some("tool_use")
                    && b.get("id").and_then(Value::as_str) == Some(id)
            })
            .and_then(|b| b.get("name").and_then(Value::as_str))
            .map(str::to_string)
    }
}

/// A `tool_result` block sent back by the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The tool's name (`Bash`, `Read`, ...); empty when no matching `tool_use` was found.
    pub name: String,
    pub tool_use_id: String,
    /// The texts of the result's content, joined by newlines.
    pub content: String,
    pub is_error: bool,
}

/// A content block of a scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    /// Streamed as `input_json_delta` pieces; the id is made up by the server.
    ToolUse {
        name: String,
        input: Value,
    },
}

/// What the server answers to one `/v1/messages` request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A model message; `stop_reason` is `tool_use` when a block calls a tool, else `end_turn`.
    Message(Vec<Block>),
    /// An API error (`{"type": "error", "error": {"type", "message"}}`) with that HTTP status.
    Error {
        status: u16,
        error_type: String,
        message: String,
    },
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Message(vec![Block::Text(text.into())])
    }

    pub fn tool_use(name: impl Into<String>, input: Value) -> Reply {
        Reply::Message(vec![Block::ToolUse {
            name: name.into(),
            input,
        }])
    }

    pub fn error(status: u16, error_type: &str, message: &str) -> Reply {
        Reply::Error {
            status,
            error_type: error_type.into(),
            message: message.into(),
        }
    }

    /// What a request gets when the script has no opinion.
    pub fn default_for(req: &Recorded) -> Reply {
        match req.kind {
            Kind::Compaction => Reply::text(
                "<analysis>Fake model: nothing to analyse.</analysis>\n\
                 <summary>Fake summary of the conversation so far.</summary>",
            ),
            _ => Reply::text("OK."),
        }
    }
}

/// Decides the reply to each `/v1/messages` request; `None` means [`Reply::default_for`].
pub type Script = dyn Fn(&Recorded) -> Option<Reply> + Send + Sync;

struct Shared {
    script: Mutex<Arc<Script>>,
    requests: Mutex<Vec<Recorded>>,
    seq: AtomicU64,
    ids: AtomicU64,
    stop: AtomicBool,
}

/// The running server; stops (no new connection) when dropped.
pub struct FakeAnthropic {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl FakeAnthropic {
    /// A server that answers every request with its kind's default (`"OK."`).
    pub fn start() -> FakeAnthropic {
        Self::with_script(|_| None)
    }

    pub fn with_script(
        script: impl Fn(&Recorded) -> Option<Reply> + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake Anthropic server");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            script: Mutex::new(Arc::new(script)),
            requests: Mutex::new(Vec::new()),
            seq: AtomicU64::new(0),
            ids: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let accept = std::thread::Builder::new()
            .name("fake-anthropic".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = conn else { continue };
                    let s = s.clone();
                    let _ = std::thread::Builder::new()
                        .name("fake-anthropic-conn".into())
                        .spawn(move || serve_connection(stream, &s));
                }
            })
            .unwrap();
        FakeAnthropic {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// Conversation requests get the replies in order (then the default); other kinds get
    /// their defaults. The simplest script: one reply per model turn.
    pub fn with_queue(replies: Vec<Reply>) -> FakeAnthropic {
        let queue = Mutex::new(VecDeque::from(replies));
        Self::with_script(move |req| {
            (req.kind == Kind::Conversation)
                .then(|| queue.lock().unwrap().pop_front())
                .flatten()
        })
    }

    /// Replaces the script (e.g. between two sessions of a test).
    pub fn set_script(&self, script: impl Fn(&Recorded) -> Option<Reply> + Send + Sync + 'static) {
        *lock(&self.shared.script) = Arc::new(script);
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// Every request received so far, forgetting them (so the next step of a test starts clean).
    pub fn take_requests(&self) -> Vec<Recorded> {
        std::mem::take(&mut *lock(&self.shared.requests))
    }

    /// The requests of one kind received so far.
    pub fn requests_of(&self, kind: Kind) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.kind == kind)
            .collect()
    }

    /// Waits until a recorded request satisfies `pred`, up to `timeout`.
    pub fn wait_for(
        &self,
        timeout: Duration,
        pred: impl Fn(&Recorded) -> bool,
    ) -> Option<Recorded> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(r) = lock(&self.shared.requests).iter().find(|r| pred(r)) {
                return Some(r.clone());
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A poisoned lock (a panicking script) must not hide the recorded requests from the test.
fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The texts in a message, a content list or a block: strings, and the `text` and `content`
/// of objects (so block types, ids, cache controls and tool inputs are left out).
fn collect_texts<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| collect_texts(x, out)),
        Value::Object(o) => {
            for key in ["text", "content"] {
                if let Some(x) = o.get(key) {
                    collect_texts(x, out);
                }
            }
        }
        _ => {}
    }
}

fn classify(r: &Recorded) -> Kind {
    match (r.method.as_str(), r.route().trim_end_matches('/')) {
        ("POST", "/v1/messages") => {
            if r.last_user_texts()
                .iter()
                .any(|t| t.contains(COMPACTION_MARKER))
            {
                Kind::Compaction
            } else if !r.tool_names().is_empty() {
                Kind::Conversation
            } else {
                Kind::Side
            }
        }
        ("POST", "/v1/messages/count_tokens") => Kind::CountTokens,
        _ => Kind::Other,
    }
}

/// An HTTP request as read off the wire.
struct RawRequest {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn keep_alive(&self) -> bool {
        !self
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let req = match read_request(&mut reader, &mut writer) {
            Ok(Some(r)) => r,
            Ok(None) => return, // the client hung up between requests
            Err(status) => {
                let _ = write_response(
                    &mut writer,
                    status,
                    "application/json",
                    error_body("invalid_request_error", "malformed HTTP request").as_bytes(),
                    false,
                    false,
                );
                return;
            }
        };
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let keep_alive = req.keep_alive();
        let head = req.method == "HEAD";
        let (status, content_type, body) = answer(req, shared);
        if write_response(&mut writer, status, content_type, &body, keep_alive, head).is_err()
            || !keep_alive
        {
            return;
        }
    }
}

/// Reads one request; `Ok(None)` on a clean end of stream, `Err(status)` when malformed.
fn read_request(
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
) -> Result<Option<RawRequest>, u16> {
    let mut line = String::new();
    // Tolerates stray empty lines between requests (RFC 9112 section 2.2).
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => return Ok(None),
            Ok(_) if line.trim().is_empty() => continue,
            Ok(_) => break,
            Err(_) => return Ok(None),
        }
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path), Some(_version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(400);
    };
    let (method, path) = (method.to_string(), path.to_string());
    let mut headers = Vec::new();
    let mut header_bytes = 0;
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|_| 400u16)?;
        header_bytes += n;
        if n == 0 || header_bytes > 1024 * 1024 {
            return Err(400);
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':').ok_or(400u16)?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut req = RawRequest {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if req
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        writer
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .map_err(|_| 400u16)?;
    }
    if req
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
    {
        req.body = read_chunked(reader)?;
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len.parse().map_err(|_| 400u16)?;
        if len > MAX_BODY {
            return Err(413);
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).map_err(|_| 400u16)?;
        req.body = body;
    }
    Ok(Some(req))
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> Result<Vec<u8>, u16> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).map_err(|_| 400u16)?;
        let size = line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size, 16).map_err(|_| 400u16)?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                line.clear();
                if reader.read_line(&mut line).map_err(|_| 400u16)? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY {
            return Err(413);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).map_err(|_| 400u16)?;
        line.clear();
        reader.read_line(&mut line).map_err(|_| 400u16)?; // the CRLF after the chunk
    }
}

/// Records the request and builds (status, content type, body).
fn answer(req: RawRequest, shared: &Shared) -> (u16, &'static str, Vec<u8>) {
    let body = if req.body.is_empty() {
        Value::Null
    } else if req.header("content-encoding").is_some() {
        Value::String(format!(
            "<{} bytes, content-encoding {}>",
            req.body.len(),
            req.header("content-encoding").unwrap_or("")
        ))
    } else {
        serde_json::from_slice(&req.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&req.body).into_owned()))
    };
    let mut recorded = Recorded {
        seq: shared.seq.fetch_add(1, Ordering::SeqCst),
        method: req.method,
        path: req.path,
        headers: req.headers,
        body,
        kind: Kind::Other,
    };
    recorded.kind = classify(&recorded);
    let kind = recorded.kind;
    lock(&shared.requests).push(recorded.clone());

    match kind {
        Kind::Conversation | Kind::Compaction | Kind::Side => {
            if !recorded.body.is_object() {
                return (
                    400,
                    "application/json",
                    error_body("invalid_request_error", "the body is not a JSON object")
                        .into_bytes(),
                );
            }
            // The script runs outside the lock: it may take its time or call back into tests.
            let script = lock(&shared.script).clone();
            let reply = script(&recorded).unwrap_or_else(|| Reply::default_for(&recorded));
            render(&reply, &recorded, shared)
        }
        Kind::CountTokens => (
            200,
            "application/json",
            json!({ "input_tokens": estimate_tokens(&recorded.body) })
                .to_string()
                .into_bytes(),
        ),
        Kind::Other => (
            404,
            "application/json",
            error_body(
                "not_found_error",
                &format!("fake Anthropic server: no route for {}", recorded.path),
            )
            .into_bytes(),
        ),
    }
}

/// A rough token count (4 bytes a token), so usage figures look like the real thing.
fn estimate_tokens(body: &Value) -> u64 {
    (body.to_string().len() as u64).div_ceil(4)
}

fn error_body(error_type: &str, message: &str) -> String {
    json!({ "type": "error", "error": { "type": error_type, "message": message } }).to_string()
}

fn render(reply: &Reply, req: &Recorded, shared: &Shared) -> (u16, &'static str, Vec<u8>) {
    let blocks = match reply {
        Reply::Error {
            status,
            error_type,
            message,
        } => {
            return (
                *status,
                "application/json",
                error_body(error_type, message).into_bytes(),
            )
        }
        Reply::Message(blocks) => blocks,
    };
    let n = shared.ids.fetch_add(1, Ordering::SeqCst);
    let msg_id = format!("msg_fake_{n:06}");
    let model = if req.model().is_empty() {
        "fake-model"
    } else {
        req.model()
    };
    let input_tokens = estimate_tokens(&req.body);
    let stop_reason = if blocks.iter().any(|b| matches!(b, Block::ToolUse { .. })) {
        "tool_use"
    } else {
        "end_turn"
    };
    let content: Vec<Value> = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Block::Text(t) => json!({ "type": "text", "text": t }),
            Block::ToolUse { name, input } => json!({
                "type": "tool_use",
                "id": format!("toolu_fake_{n:06}_{i}"),
                "name": name,
                "input": input,
            }),
        })
        .collect();
    let output_tokens = content
        .iter()
        .map(|c| (c.to_string().len() as u64).div_ceil(4))
        .sum::<u64>()
        .max(1);
    let usage = json!({
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    });

    if !req.wants_stream() {
        let body = json!({
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": null,
            "usage": usage,
        });
        return (200, "application/json", body.to_string().into_bytes());
    }

    let mut sse = String::new();
    let mut event = |name: &str, data: Value| {
        sse.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": input_tokens, "output_tokens": 1,
                       "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0 },
        }}),
    );
    for (index, block) in content.iter().enumerate() {
        match block["type"].as_str() {
            Some("text") => {
                event(
                    "content_block_start",
                    json!({ "type": "content_block_start", "index": index,
                            "content_block": { "type": "text", "text": "" } }),
                );
                for piece in split_in_two(block["text"].as_str().unwrap_or("")) {
                    event(
                        "content_block_delta",
                        json!({ "type": "content_block_delta", "index": index,
                                "delta": { "type": "text_delta", "text": piece } }),
                    );
                }
            }
            _ => {
                event(
                    "content_block_start",
                    json!({ "type": "content_block_start", "index": index,
                            "content_block": { "type": "tool_use", "id": block["id"],
                                               "name": block["name"], "input": {} } }),
                );
                // Real streams cut the JSON anywhere; so does this (the client must join them).
                let input = block["input"].to_string();
                for piece in split_in_two(&input) {
                    event(
                        "content_block_delta",
                        json!({ "type": "content_block_delta", "index": index,
                                "delta": { "type": "input_json_delta", "partial_json": piece } }),
                    );
                }
            }
        }
        event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        );
    }
    event(
        "message_delta",
        json!({ "type": "message_delta",
                "delta": { "stop_reason": stop_reason, "stop_sequence": null },
                "usage": { "output_tokens": output_tokens } }),
    );
    event("message_stop", json!({ "type": "message_stop" }));
    (200, "text/event-stream", sse.into_bytes())
}

/// Splits at a character boundary near the middle (one piece when too short to split).
fn split_in_two(s: &str) -> Vec<&str> {
    if s.chars().count() < 2 {
        return vec![s];
    }
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    vec![&s[..mid], &s[mid..]]
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn write_response(
    w: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
    head: bool,
) -> std::io::Result<()> {
    let n = shared_request_id();
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         request-id: req_fake_{n:06}\r\ncache-control: no-cache\r\nconnection: {}\r\n\r\n",
        reason(status),
        body.len(),
        if keep_alive { "keep-alive" } else { "close" },
    )
    .into_bytes();
    if !head {
        out.extend_from_slice(body);
    }
    w.write_all(&out)?;
    w.flush()
}

/// Distinct `request-id` headers across every server of the process.
fn shared_request_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Self-tests with a minimal HTTP client: the server must be right before a test blames the
/// code under test.
#[cfg(test)]
mod tests {
    use super::*;

    /// One request over a fresh connection; returns (status, headers+body text).
    fn post(server: &FakeAnthropic, path: &str, body: &Value) -> (u16, String) {
        let mut s = TcpStream::connect(server.addr).unwrap();
        let b = body.to_string();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{b}",
            b.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out[9..12].parse().unwrap();
        (status, out)
    }

    /// The `data:` objects of an SSE response, in order.
    fn events(response: &str) -> Vec<Value> {
        response
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    /// The text an SSE response streams, its deltas joined.
    fn streamed_text(response: &str) -> String {
        events(response)
            .iter()
            .filter_map(|e| e["delta"]["text"].as_str())
            .collect()
    }

    fn conversation(last_user: Value) -> Value {
        json!({
            "model": "claude-anything", "stream": true, "max_tokens": 100,
            "tools": [{ "name": "Bash", "input_schema": {} }, { "name": "Read", "input_schema": {} }],
            "messages": [
                { "role": "user", "content": "run it" },
                { "role": "assistant", "content": [
                    { "type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {} } ] },
                last_user,
            ],
        })
    }

    #[test]
    fn streams_a_tool_use_in_the_real_event_order() {
        let server = FakeAnthropic::with_queue(vec![Reply::tool_use(
            "Bash",
            json!({ "command": "echo héllo wörld", "description": "echo" }),
        )]);
        let (status, resp) = post(
            &server,
            "/v1/messages?beta=true",
            &json!({ "model": "m", "stream": true, "tools": [{ "name": "Bash" }],
                     "messages": [{ "role": "user", "content": "hi" }] }),
        );
        assert_eq!(status, 200);
        assert!(resp.contains("content-type: text/event-stream"));
        let ev = events(&resp);
        let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let json: String = ev
            .iter()
            .filter_map(|e| e["delta"]["partial_json"].as_str())
            .collect();
        let input: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(input["command"], "echo héllo wörld");
        assert_eq!(ev[5]["delta"]["stop_reason"], "tool_use");
        assert_eq!(ev[0]["message"]["model"], "m");
        assert_eq!(server.requests_of(Kind::Conversation).len(), 1);
    }

    #[test]
    fn classifies_and_finds_tool_results() {
        let server = FakeAnthropic::with_script(|req| {
            let r = req.last_tool_results();
            (r.first()?.name == "Bash").then(|| Reply::text(format!("saw {}", r[0].content)))
        });
        let result = json!({ "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "toolu_a",
              "content": [{ "type": "text", "text": "rows 17, 42" }] } ] });
        let (_, resp) = post(&server, "/v1/messages", &conversation(result));
        assert_eq!(streamed_text(&resp), "saw rows 17, 42");

        let compaction = json!({ "role": "user",
            "content": "Your task is to create a detailed summary of the conversation so far" });
        let (_, resp) = post(&server, "/v1/messages", &conversation(compaction));
        assert!(streamed_text(&resp).contains("<summary>"));

        let side = json!({ "model": "m", "max_tokens": 5, "messages": [{ "role": "user", "content": "title?" }] });
        let (_, resp) = post(&server, "/v1/messages", &side);
        assert!(resp.contains("end_turn"));

        let (status, resp) = post(&server, "/v1/messages/count_tokens", &side);
        assert_eq!(status, 200);
        assert!(resp.contains("input_tokens"));
        let (status, _) = post(&server, "/v1/models", &json!({}));
        assert_eq!(status, 404);

        let kinds: Vec<Kind> = server.requests().iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::Conversation,
                Kind::Compaction,
                Kind::Side,
                Kind::CountTokens,
                Kind::Other
            ]
        );
        assert_eq!(server.requests()[0].last_tool_results()[0].name, "Bash");
    }

    #[test]
    fn keep_alive_and_non_streaming() {
        let server = FakeAnthropic::start();
        let mut s = TcpStream::connect(server.addr).unwrap();
        let body =
            json!({ "model": "m", "messages": [{ "role": "user", "content": "hi" }] }).to_string();
        let mut reader = BufReader::new(s.try_clone().unwrap());
        for _ in 0..2 {
            write!(
                s,
                "POST /v1/messages HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut len = 0;
            let mut line = String::new();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut buf = vec![0; len];
            reader.read_exact(&mut buf).unwrap();
            let msg: Value = serde_json::from_slice(&buf).unwrap();
            assert_eq!(msg["type"], "message");
            assert_eq!(msg["content"][0]["text"], "OK.");
            assert_eq!(msg["stop_reason"], "end_turn");
        }
        assert_eq!(server.take_requests().len(), 2);
        assert!(server.requests().is_empty());
    }

    #[test]
    fn scripted_errors() {
        let server = FakeAnthropic::with_script(|_| {
            Some(Reply::error(529, "overloaded_error", "try later"))
        });
        let (status, resp) = post(
            &server,
            "/v1/messages",
            &json!({ "model": "m", "messages": [] }),
        );
        assert_eq!(status, 529);
        assert!(resp.contains("overloaded_error"));
    }
}
