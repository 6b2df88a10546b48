//! The Anthropic Messages API: `POST {base}/v1/messages`, always streamed (SSE), with
//! prompt-cache breakpoints and tools.

use crate::http;
use crate::sse::SseEvent;
use crate::{
    BoxFuture, ChatRequest, ChatResponse, ContentBlock, EnvLookup, EventSink, LlmError, Provider,
    ProviderKind, ProviderSettings, Role, StreamEvent, ToolCall, Usage,
};
use reqwest::header::HeaderValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;
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

/// A streamed event of the Messages API, as far as it is read. Fields a lenient server leaves
/// out take their defaults; events added later are skipped.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EventIn {
    MessageStart {
        #[serde(default)]
        message: MessageIn,
    },
    ContentBlockStart {
        #[serde(default)]
        index: u64,
        #[serde(default)]
        content_block: BlockIn,
    },
    ContentBlockDelta {
        #[serde(default)]
        index: u64,
        #[serde(default)]
        delta: DeltaIn,
    },
    ContentBlockStop {
        #[serde(default)]
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: StopIn,
        #[serde(default)]
        usage: UsageIn,
    },
    MessageStop,
    /// Its body is read by the error classifier shared with the other providers.
    Error {
        #[serde(default)]
        error: Value,
    },
    /// `ping`, and events added later.
    #[serde(other)]
    Other,
}

/// A message: streamed (`message_start`, no content yet) or whole (a proxy that ignored
/// `stream: true`).
#[derive(Debug, Default, Deserialize)]
struct MessageIn {
    model: Option<String>,
    #[serde(default)]
    usage: UsageIn,
    #[serde(default)]
    content: Vec<BlockIn>,
    stop_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockIn {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        input: Option<Value>,
    },
    /// Thinking, server tools...: not part of our answer.
    #[default]
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DeltaIn {
    TextDelta {
        #[serde(default)]
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    /// Thinking, signatures, citations.
    #[default]
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
struct StopIn {
    stop_reason: Option<String>,
}

/// Token counts; each one present replaces ours (`message_delta` usage is cumulative).
#[derive(Debug, Default, Deserialize)]
struct UsageIn {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
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

    fn take_usage(&mut self, u: UsageIn) {
        if let Some(n) = u.input_tokens {
            self.usage.input_tokens = n;
        }
        if let Some(n) = u.output_tokens {
            self.usage.output_tokens = n;
        }
        if let Some(n) = u.cache_read_input_tokens {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = u.cache_creation_input_tokens {
            self.usage.cache_write_tokens = n;
        }
    }

    pub(crate) fn on_event(
        &mut self,
        ev: &SseEvent,
        sink: Option<&EventSink<'_>>,
    ) -> Result<(), LlmError> {
        let mut v = http::parse_event(ev)?;
        // The kind is in the data; the SSE `event:` line says it for a server that leaves it out.
        if let Value::Object(o) = &mut v {
            if !o.contains_key("type") {
                o.insert("type".into(), Value::String(ev.event.clone()));
            }
        }
        let event = EventIn::deserialize(v).map_err(|e| {
            LlmError::internal(format!(
                "malformed stream event {:?} ({e}): {}",
                ev.event,
                crate::truncate(&ev.data, 200)
            ))
        })?;
        self.apply(event, sink)
    }

    fn apply(&mut self, event: EventIn, sink: Option<&EventSink<'_>>) -> Result<(), LlmError> {
        let emit = |e: StreamEvent| {
            if let Some(s) = sink {
                s(e)
            }
        };
        match event {
            EventIn::MessageStart { message } => {
                if let Some(model) = message.model {
                    self.model = model;
                }
                self.take_usage(message.usage);
            }
            EventIn::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    BlockIn::Text { text } => {
                        if !text.is_empty() {
                            self.text.push_str(&text);
                            emit(StreamEvent::TextDelta(text));
                        }
                        Block::Text
                    }
                    BlockIn::ToolUse { id, name, input } => {
                        emit(StreamEvent::ToolCallStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Block::ToolUse {
                            id,
                            name,
                            json: String::new(),
                            initial: input.unwrap_or_else(|| Value::Object(Default::default())),
                        }
                    }
                    BlockIn::Other => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            EventIn::ContentBlockDelta { index, delta } => {
                match (delta, self.blocks.get_mut(&index)) {
                    (DeltaIn::TextDelta { text }, _) => {
                        self.text.push_str(&text);
                        emit(StreamEvent::TextDelta(text));
                    }
                    (
                        DeltaIn::InputJsonDelta { partial_json },
                        Some(Block::ToolUse { id, json, .. }),
                    ) => {
                        json.push_str(&partial_json);
                        emit(StreamEvent::ToolInputDelta {
                            id: id.clone(),
                            partial_json,
                        });
                    }
                    _ => {}
                }
            }
            EventIn::ContentBlockStop { index } => {
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
            EventIn::MessageDelta { delta, usage } => {
                if let Some(r) = delta.stop_reason {
                    self.stop_reason = Some(r);
                }
                self.take_usage(usage);
            }
            EventIn::MessageStop => self.stopped = true,
            EventIn::Error { error } => return Err(LlmError::from_api_error(&error)),
            EventIn::Other => {}
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
            self.apply(EventIn::ContentBlockStop { index }, None)?;
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

    /// A whole (non-streamed) message, replayed as the events a stream of it would give.
    pub(crate) fn finish_whole(
        mut self,
        v: &Value,
        sink: Option<&EventSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        #[derive(Deserialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Whole {
            Error {
                #[serde(default)]
                error: Value,
            },
            #[serde(untagged)]
            Message(MessageIn),
        }
        let message = match Whole::deserialize(v) {
            Ok(Whole::Error { error }) => return Err(LlmError::from_api_error(&error)),
            Ok(Whole::Message(m)) => m,
            Err(e) => {
                return Err(LlmError::internal(format!(
                    "malformed message ({e}): {}",
                    crate::truncate(&v.to_string(), 200)
                )))
            }
        };
        let MessageIn {
            model,
            usage,
            content,
            stop_reason,
        } = message;
        let mut events = vec![EventIn::MessageStart {
            message: MessageIn {
                model,
                ..MessageIn::default()
            },
        }];
        for (i, block) in content.into_iter().enumerate() {
            let index = i as u64;
            match block {
                // The text is sent as a delta, so it is emitted once.
                BlockIn::Text { text } => {
                    events.push(EventIn::ContentBlockStart {
                        index,
                        content_block: BlockIn::Text {
                            text: String::new(),
                        },
                    });
                    events.push(EventIn::ContentBlockDelta {
                        index,
                        delta: DeltaIn::TextDelta { text },
                    });
                }
                other => events.push(EventIn::ContentBlockStart {
                    index,
                    content_block: other,
                }),
            }
            events.push(EventIn::ContentBlockStop { index });
        }
        events.push(EventIn::MessageDelta {
            delta: StopIn { stop_reason },
            usage,
        });
        events.push(EventIn::MessageStop);
        for e in events {
            self.apply(e, sink)?;
        }
        self.finish(sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseDecoder;
    use crate::{ChatMessage, ErrorKind, SystemBlock, ToolSpec};
    use serde_json::json;
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

    #[test]
    fn a_whole_message_without_its_type_and_with_new_block_kinds_still_reads() {
        let v = json!({
            "model": "m3", "stop_reason": "end_turn",
            "content": [
                { "type": "thinking", "thinking": "hm", "signature": "x" },
                { "type": "text", "text": "port 5173" }
            ]
        });
        let r = MessageStream::new("asked").finish_whole(&v, None).unwrap();
        assert_eq!(r.text, "port 5173");
        assert_eq!(r.model, "m3");
        let e = MessageStream::new("asked")
            .finish_whole(
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
                None,
            )
            .unwrap_err();
        assert!(e.to_string().contains("busy"), "{e}");
    }
}
