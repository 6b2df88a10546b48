//! The Anthropic Messages API: `POST {base}/v1/messages`, always streamed (SSE), with
//! prompt-cache breakpoints and tools.

use crate::http;
use crate::sse::SseEvent;
use crate::{
    BoxFuture, ChatRequest, ChatResponse, ContentBlock, EnvLookup, EventSink, LlmError, Provider,
    ProviderKind, ProviderSettings, Role, StreamEvent, ToolCall, Usage,
};
use reqwest::header::HeaderValue;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// The API version header we speak.
pub const API_VERSION: &str = "2023-06-01";
/// The API accepts at most this many `cache_control` breakpoints per request.
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// A provider speaking the Messages API (Anthropic, or a compatible proxy).
pub struct AnthropicProvider {
    id: String,
    base_url: String,
    model: String,
    /// The variable's name; the key itself is read at each call.
    api_key_env: Option<String>,
    env: EnvLookup,
    http: reqwest::Client,
    ping_timeout: Duration,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// A provider for `base_url` (without `/v1`), reading its key from `api_key_env`.
    pub fn new(
        id: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key_env: Option<String>,
        env: EnvLookup,
        settings: &ProviderSettings,
    ) -> Result<AnthropicProvider, LlmError> {
        Ok(AnthropicProvider {
            id: id.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key_env,
            env,
            http: http::client(settings.connect_timeout)?,
            ping_timeout: settings.ping_timeout,
        })
    }

    fn post(&self, path: &str) -> Result<reqwest::RequestBuilder, LlmError> {
        self.with_headers(self.http.post(http::join(&self.base_url, path)))
    }

    fn with_headers(
        &self,
        rb: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder, LlmError> {
        let mut rb = rb.header("anthropic-version", API_VERSION);
        if let Some(key) = http::api_key(&self.env, self.api_key_env.as_deref())? {
            let mut v = HeaderValue::from_str(key.trim()).map_err(|_| {
                LlmError::new(
                    crate::ErrorKind::AuthError,
                    "the API key contains characters a header cannot carry",
                )
            })?;
            v.set_sensitive(true);
            rb = rb.header("x-api-key", v);
        }
        Ok(rb)
    }

    async fn run(
        &self,
        req: &ChatRequest,
        on_event: Option<&EventSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let model = req.model.as_deref().unwrap_or(&self.model);
        let rb = self
            .post("/v1/messages")?
            .header("accept", "text/event-stream")
            .json(&request_body(req, model));
        let resp = http::send(rb).await?;
        let mut stream = MessageStream::new(model);
        if !http::is_event_stream(&resp) {
            // A proxy that ignored `stream: true`: one JSON message.
            let v = http::json_body(resp).await?;
            return stream.finish_whole(&v, on_event);
        }
        http::for_each_event(resp, |ev| stream.on_event(&ev, on_event)).await?;
        stream.finish(on_event)
    }

    async fn run_ping(&self) -> Result<(), LlmError> {
        let listing = self.with_headers(
            self.http
                .get(http::join(&self.base_url, "/v1/models?limit=1")),
        )?;
        http::ping_by_listing(listing, self.ping_timeout, |req| async move {
            self.run(&req, None).await
        })
        .await
    }
}

impl Provider for AnthropicProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::AnthropicMessages
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
        on_event: Option<&'a EventSink<'a>>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(http::deadline(
            req.timeout,
            &self.id,
            self.run(req, on_event),
        ))
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(http::deadline(self.ping_timeout, &self.id, self.run_ping()))
    }
}

/// The body of a streamed Messages request: the API's shape, field for field.
#[derive(Debug, Serialize)]
pub struct MessagesBody<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<WireBlock<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

/// `{"type": "ephemeral"}`: the prompt up to here is cached.
#[derive(Debug, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// A content block, with its cache breakpoint when it ends a cached prefix.
#[derive(Debug, Serialize)]
struct WireBlock<'a> {
    #[serde(flatten)]
    content: WireContent<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireContent<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        /// Sent only when true, as the API's examples do.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<WireBlock<'a>>,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// The body of a streamed Messages request for `model`.
pub fn request_body<'a>(req: &'a ChatRequest, model: &'a str) -> MessagesBody<'a> {
    // Breakpoints: system blocks then messages, in prompt order; the API allows 4, and the last
    // ones cover the longest prefixes, so those are kept.
    let flagged: Vec<(bool, usize)> = req
        .system
        .iter()
        .enumerate()
        .filter(|(_, b)| b.cache && !b.text.is_empty())
        .map(|(i, _)| (true, i))
        .chain(
            req.messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m.cache && !m.content.is_empty())
                .map(|(i, _)| (false, i)),
        )
        .collect();
    let keep = &flagged[flagged.len().saturating_sub(MAX_CACHE_BREAKPOINTS)..];
    let cached = |system: bool, i: usize| keep.contains(&(system, i));
    let system = req
        .system
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.text.is_empty()) // the API rejects empty text blocks
        .map(|(i, b)| WireBlock {
            content: WireContent::Text { text: &b.text },
            cache_control: cached(true, i).then_some(EPHEMERAL),
        })
        .collect();
    let messages = req
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut content: Vec<WireBlock> = m
                .content
                .iter()
                .map(|b| WireBlock {
                    content: content_block(b),
                    cache_control: None,
                })
                .collect();
            if cached(false, i) {
                if let Some(last) = content.last_mut() {
                    last.cache_control = Some(EPHEMERAL);
                }
            }
            WireMessage {
                role: match m.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                },
                content,
            }
        })
        .collect();
    let tools = req
        .tools
        .iter()
        .map(|t| WireTool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.input_schema,
        })
        .collect();
    MessagesBody {
        model,
        max_tokens: req.max_tokens.max(1),
        stream: true,
        system,
        messages,
        tools,
        temperature: req.temperature,
    }
}

fn content_block(b: &ContentBlock) -> WireContent<'_> {
    match b {
        ContentBlock::Text(t) => WireContent::Text { text: t },
        ContentBlock::ToolUse { id, name, input } => WireContent::ToolUse { id, name, input },
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => WireContent::ToolResult {
            tool_use_id,
            content,
            is_error: *is_error,
        },
    }
}

/// A content block being streamed.
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        json: String,
        /// The input given at block start (used when no delta follows).
        initial: Value,
    },
    /// Thinking, server tools, citations...: not part of our answer.
    Other,
}

/// The state of one streamed message.
pub(crate) struct MessageStream {
    text: String,
    blocks: BTreeMap<u64, Block>,
    tool_calls: Vec<ToolCall>,
    usage: Usage,
    model: String,
    stop_reason: Option<String>,
    stopped: bool,
}

fn u64_of(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

impl MessageStream {
    pub(crate) fn new(model: &str) -> MessageStream {
        MessageStream {
            text: String::new(),
            blocks: BTreeMap::new(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            model: model.to_string(),
            stop_reason: None,
            stopped: false,
        }
    }

    /// Usage fields present in `u` replace ours (`message_delta` usage is cumulative).
    fn take_usage(&mut self, u: &Value) {
        if let Some(n) = u64_of(u, "input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = u64_of(u, "output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = u64_of(u, "cache_read_input_tokens") {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = u64_of(u, "cache_creation_input_tokens") {
            self.usage.cache_write_tokens = n;
        }
    }

    pub(crate) fn on_event(
        &mut self,
        ev: &SseEvent,
        sink: Option<&EventSink<'_>>,
    ) -> Result<(), LlmError> {
        let emit = |e: StreamEvent| {
            if let Some(s) = sink {
                s(e)
            }
        };
        let v = http::parse_event(ev)?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(&ev.event);
        let index = u64_of(&v, "index").unwrap_or(0);
        match kind {
            "message_start" => {
                let m = &v["message"];
                if let Some(model) = m.get("model").and_then(Value::as_str) {
                    self.model = model.to_string();
                }
                self.take_usage(&m["usage"]);
            }
            "content_block_start" => {
                let cb = &v["content_block"];
                let block = match str_of(cb, "type") {
                    "text" => {
                        let t = str_of(cb, "text");
                        if !t.is_empty() {
                            self.text.push_str(t);
                            emit(StreamEvent::TextDelta(t.to_string()));
                        }
                        Block::Text
                    }
                    "tool_use" => {
                        let (id, name) = (str_of(cb, "id"), str_of(cb, "name"));
                        emit(StreamEvent::ToolCallStarted {
                            id: id.to_string(),
                            name: name.to_string(),
                        });
                        Block::ToolUse {
                            id: id.to_string(),
                            name: name.to_string(),
                            json: String::new(),
                            initial: cb.get("input").cloned().unwrap_or_else(|| json!({})),
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let d = &v["delta"];
                match (str_of(d, "type"), self.blocks.get_mut(&index)) {
                    ("text_delta", _) => {
                        let t = str_of(d, "text");
                        self.text.push_str(t);
                        emit(StreamEvent::TextDelta(t.to_string()));
                    }
                    ("input_json_delta", Some(Block::ToolUse { id, json, .. })) => {
                        let piece = str_of(d, "partial_json");
                        json.push_str(piece);
                        emit(StreamEvent::ToolInputDelta {
                            id: id.clone(),
                            partial_json: piece.to_string(),
                        });
                    }
                    _ => {} // thinking, signatures, citations
                }
            }
            "content_block_stop" => {
                if let Some(Block::ToolUse {
                    id,
                    name,
                    json,
                    initial,
                }) = self.blocks.remove(&index)
                {
                    let input = if json.trim().is_empty() {
                        initial
                    } else {
                        serde_json::from_str(&json).map_err(|e| {
                            LlmError::internal(format!(
                                "the model's input for tool {name:?} is not valid JSON ({e}): {}",
                                crate::truncate(&json, 200)
                            ))
                        })?
                    };
                    self.tool_calls.push(ToolCall { id, name, input });
                }
            }
            "message_delta" => {
                if let Some(r) = v["delta"].get("stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(r.to_string());
                }
                self.take_usage(&v["usage"]);
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(LlmError::from_api_error(&v["error"])),
            _ => {} // ping, and events added later
        }
        Ok(())
    }

    pub(crate) fn finish(mut self, sink: Option<&EventSink<'_>>) -> Result<ChatResponse, LlmError> {
        if !self.stopped {
            return Err(LlmError::new(
                crate::ErrorKind::Network,
                "the stream ended before message_stop",
            ));
        }
        // Blocks never closed still count (a lenient server).
        let open: Vec<u64> = self.blocks.keys().copied().collect();
        for index in open {
            let stop = SseEvent {
                event: "content_block_stop".into(),
                data: json!({ "type": "content_block_stop", "index": index }).to_string(),
            };
            self.on_event(&stop, None)?;
        }
        if self.stop_reason.as_deref() == Some("refusal") {
            return Err(LlmError::new(
                crate::ErrorKind::ContentFilter,
                "the model refused to answer (stop_reason: refusal)",
            ));
        }
        if let Some(s) = sink {
            s(StreamEvent::Done);
        }
        Ok(ChatResponse {
            text: self.text,
            tool_calls: self.tool_calls,
            stop_reason: self.stop_reason,
            model: self.model,
            usage: self.usage,
            cost_usd: None,
        })
    }

    /// A whole (non-streamed) message.
    pub(crate) fn finish_whole(
        mut self,
        v: &Value,
        sink: Option<&EventSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        if v.get("type").and_then(Value::as_str) == Some("error") {
            return Err(LlmError::from_api_error(&v["error"]));
        }
        let start = json!({ "type": "message_start", "message": v });
        let mut events = vec![start];
        for (i, b) in v["content"].as_array().into_iter().flatten().enumerate() {
            let mut block = b.clone();
            if str_of(b, "type") == "text" {
                block["text"] = json!(""); // sent as a delta below, so it is emitted once
            }
            events
                .push(json!({ "type": "content_block_start", "index": i, "content_block": block }));
            if str_of(b, "type") == "text" {
                events.push(json!({ "type": "content_block_delta", "index": i,
                    "delta": { "type": "text_delta", "text": str_of(b, "text") } }));
            }
            events.push(json!({ "type": "content_block_stop", "index": i }));
        }
        events.push(
            json!({ "type": "message_delta", "delta": { "stop_reason": v["stop_reason"] },
            "usage": v["usage"] }),
        );
        events.push(json!({ "type": "message_stop" }));
        for e in events {
            let ev = SseEvent {
                event: String::new(),
                data: e.to_string(),
            };
            self.on_event(&ev, sink)?;
        }
        self.finish(sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseDecoder;
    use crate::{ChatMessage, ErrorKind, SystemBlock, ToolSpec};
    use std::sync::Mutex;

    #[test]
    fn body_has_system_blocks_tools_and_at_most_four_breakpoints() {
        let mut req = ChatRequest {
            system: vec![
                SystemBlock {
                    text: "rules".into(),
                    cache: true,
                },
                SystemBlock {
                    text: String::new(),
                    cache: true,
                },
                SystemBlock {
                    text: "memory".into(),
                    cache: true,
                },
            ],
            tools: vec![ToolSpec {
                name: "search".into(),
                description: "finds threads".into(),
                input_schema: json!({"type": "object"}),
            }],
            temperature: Some(0.0),
            max_tokens: 300,
            ..ChatRequest::default()
        };
        for i in 0..3 {
            let mut m = ChatMessage::user(format!("q{i}"));
            m.cache = true;
            req.messages.push(m);
            req.messages.push(ChatMessage {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text("let me look".into()),
                    ContentBlock::ToolUse {
                        id: format!("t{i}"),
                        name: "search".into(),
                        input: json!({"q": i}),
                    },
                ],
                cache: false,
            });
        }
        req.messages.push(ChatMessage {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "t2".into(),
                content: "none".into(),
                is_error: true,
            }],
            cache: false,
        });
        let b = serde_json::to_value(request_body(&req, "claude-x")).unwrap();
        assert_eq!(b["model"], "claude-x");
        assert_eq!(b["stream"], true);
        assert_eq!(b["max_tokens"], 300);
        assert_eq!(b["temperature"], 0.0);
        assert_eq!(
            b["system"].as_array().unwrap().len(),
            2,
            "empty blocks dropped"
        );
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
        let text = b.to_string();
        assert_eq!(text.matches("cache_control").count(), 4);
        // Five flags, the last four win: the second system block and the three user messages.
        assert!(b["system"][0].get("cache_control").is_none());
        assert_eq!(b["system"][1]["cache_control"]["type"], "ephemeral");
        for i in [0, 2, 4] {
            assert_eq!(
                b["messages"][i]["content"][0]["cache_control"]["type"],
                "ephemeral"
            );
        }
        assert_eq!(b["messages"][1]["content"][1]["type"], "tool_use");
        assert!(b["messages"][1]["content"][1]
            .get("cache_control")
            .is_none());
        assert_eq!(b["messages"][6]["content"][0]["is_error"], true);
        let simple = ChatRequest::simple("", "hi");
        let no_tools = serde_json::to_value(request_body(&simple, "m")).unwrap();
        assert!(no_tools.get("tools").is_none() && no_tools.get("system").is_none());
        assert!(no_tools.get("temperature").is_none());
    }

    fn run(sse: &str) -> (Result<ChatResponse, LlmError>, Vec<StreamEvent>) {
        let seen = Mutex::new(Vec::new());
        let sink = |e: StreamEvent| seen.lock().unwrap().push(e);
        let mut st = MessageStream::new("asked");
        let mut dec = SseDecoder::default();
        let mut r = Ok(());
        for ev in dec.push(sse.as_bytes()).into_iter().chain(dec.finish()) {
            r = r.and_then(|_| st.on_event(&ev, Some(&sink)));
        }
        let out = r.and_then(|_| st.finish(Some(&sink)));
        (out, seen.into_inner().unwrap())
    }

    #[test]
    fn ignores_thinking_and_reports_refusals_and_cut_streams() {
        let sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n\
            data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n\
            data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n\
            data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
            data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
            data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n\
            data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n";
        let (r, _) = run(sse);
        assert_eq!(r.unwrap_err().kind, ErrorKind::Network, "no message_stop");
        let (r, ev) = run(&format!("{sse}data: {{\"type\":\"message_stop\"}}\n\n"));
        let r = r.unwrap();
        assert_eq!(
            (r.text.as_str(), r.model.as_str(), r.usage.output_tokens),
            ("ok", "m", 9)
        );
        assert_eq!(
            ev,
            vec![StreamEvent::TextDelta("ok".into()), StreamEvent::Done]
        );
        let refused = sse.replace("end_turn", "refusal");
        let (r, ev) = run(&format!("{refused}data: {{\"type\":\"message_stop\"}}\n\n"));
        assert_eq!(r.unwrap_err().kind, ErrorKind::ContentFilter);
        assert!(!ev.contains(&StreamEvent::Done));
    }

    #[test]
    fn whole_messages_from_proxies_that_do_not_stream() {
        let v = json!({
            "type": "message", "model": "m2", "stop_reason": "tool_use",
            "content": [
                { "type": "text", "text": "calling" },
                { "type": "tool_use", "id": "tu1", "name": "search", "input": { "q": "x" } }
            ],
            "usage": { "input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 2 }
        });
        let r = MessageStream::new("asked").finish_whole(&v, None).unwrap();
        assert_eq!(r.text, "calling");
        assert_eq!(
            r.tool_calls,
            vec![ToolCall {
                id: "tu1".into(),
                name: "search".into(),
                input: json!({"q": "x"})
            }]
        );
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 4,
                cache_read_tokens: 2,
                cache_write_tokens: 0
            }
        );
        assert_eq!(r.stop_reason.as_deref(), Some("tool_use"));
    }
}
