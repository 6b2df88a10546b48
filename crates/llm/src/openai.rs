//! OpenAI-compatible chat completions: `POST {base}/chat/completions`, streamed. Serves OpenAI,
//! DeepSeek, Ollama and llama.cpp (the last two without a key).

use crate::http;
use crate::sse::SseEvent;
use crate::{
    BoxFuture, ChatRequest, ChatResponse, ContentBlock, EnvLookup, ErrorKind, EventSink, LlmError,
    Provider, ProviderKind, ProviderSettings, Role, StreamEvent, ToolCall, Usage,
};
use reqwest::header::HeaderValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// A provider speaking OpenAI's chat completions.
pub struct OpenAiProvider {
    id: String,
    base_url: String,
    model: String,
    /// The variable's name; `None` for local servers that need no key.
    api_key_env: Option<String>,
    /// `max_tokens` or `max_completion_tokens` (see the registry).
    max_tokens_field: &'static str,
    env: EnvLookup,
    http: reqwest::Client,
    ping_timeout: Duration,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// A provider for `base_url` (ending in `/v1` for most servers).
    pub fn new(
        id: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key_env: Option<String>,
        max_tokens_field: &'static str,
        env: EnvLookup,
        settings: &ProviderSettings,
    ) -> Result<OpenAiProvider, LlmError> {
        Ok(OpenAiProvider {
            id: id.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key_env,
            max_tokens_field,
            env,
            http: http::client(settings.connect_timeout)?,
            ping_timeout: settings.ping_timeout,
        })
    }

    fn authorized(&self, rb: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, LlmError> {
        match http::api_key(&self.env, self.api_key_env.as_deref())? {
            None => Ok(rb),
            Some(key) => {
                let mut v =
                    HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                        LlmError::new(
                            ErrorKind::AuthError,
                            "the API key contains characters a header cannot carry",
                        )
                    })?;
                v.set_sensitive(true);
                Ok(rb.header(reqwest::header::AUTHORIZATION, v))
            }
        }
    }

    async fn run(
        &self,
        req: &ChatRequest,
        on_event: Option<&EventSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let model = req.model.as_deref().unwrap_or(&self.model);
        let body = request_body(req, model, self.max_tokens_field);
        let rb = self.authorized(
            self.http
                .post(http::join(&self.base_url, "/chat/completions"))
                .header("accept", "text/event-stream")
                .json(&body),
        )?;
        let resp = http::send(rb).await?;
        let mut stream = ChunkStream::new(model);
        if !http::is_event_stream(&resp) {
            let v = http::json_body(resp).await?;
            return stream.finish_whole(&v, on_event);
        }
        http::for_each_event(resp, |ev| stream.on_event(&ev, on_event)).await?;
        stream.finish(on_event)
    }

    async fn run_ping(&self) -> Result<(), LlmError> {
        let listing = self.authorized(self.http.get(http::join(&self.base_url, "/models")))?;
        http::ping_by_listing(listing, self.ping_timeout, |req| async move {
            self.run(&req, None).await
        })
        .await
    }
}

impl Provider for OpenAiProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::OpenAiChat
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

/// The body of a streamed chat completion: the API's shape, field for field.
#[derive(Debug, Serialize)]
pub struct CompletionBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    /// The older field; newer models take `max_completion_tokens` (one of the two is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    /// The last chunk says how many tokens were used.
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum WireMessage<'a> {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        /// `null` when the turn only called tools.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

#[derive(Debug, Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    /// The input as a JSON string, as the API wants it.
    arguments: String,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The body of a streamed chat completion for `model`; the token limit goes in
/// `max_tokens_field` (`max_tokens` or `max_completion_tokens`).
pub fn request_body<'a>(
    req: &'a ChatRequest,
    model: &'a str,
    max_tokens_field: &str,
) -> CompletionBody<'a> {
    let mut messages = Vec::new();
    let system = req.system_text();
    if !system.is_empty() {
        messages.push(WireMessage::System { content: system });
    }
    for m in &req.messages {
        match m.role {
            Role::User => {
                // Tool results first: they must follow the assistant turn that called the tools.
                for b in &m.content {
                    if let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } = b
                    {
                        let content = if *is_error {
                            format!("Error: {content}")
                        } else {
                            content.clone()
                        };
                        messages.push(WireMessage::Tool {
                            tool_call_id: tool_use_id,
                            content,
                        });
                    }
                }
                let text = m.text();
                if !text.is_empty() {
                    messages.push(WireMessage::User { content: text });
                }
            }
            Role::Assistant => {
                let text = m.text();
                let tool_calls = m
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolUse { id, name, input } => Some(WireCall {
                            id,
                            kind: "function",
                            function: WireFunctionCall {
                                name,
                                arguments: input.to_string(),
                            },
                        }),
                        _ => None,
                    })
                    .collect();
                messages.push(WireMessage::Assistant {
                    content: (!text.is_empty()).then_some(text),
                    tool_calls,
                });
            }
        }
    }
    let limit = Some(req.max_tokens.max(1));
    let newer = max_tokens_field == "max_completion_tokens";
    CompletionBody {
        model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        max_tokens: if newer { None } else { limit },
        max_completion_tokens: if newer { limit } else { None },
        temperature: req.temperature,
        tools: req
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.input_schema,
                },
            })
            .collect(),
    }
}

/// OpenAI's finish reasons in Anthropic's words (see [`ChatResponse::stop_reason`]).
fn normalise_stop(reason: &str) -> String {
    match reason {
        "stop" => "end_turn",
        "length" => "max_tokens",
        "tool_calls" | "function_call" => "tool_use",
        other => other,
    }
    .to_string()
}

/// A streamed chunk (or a whole completion), as far as it is read. OpenAI-compatible servers
/// differ: every field may be missing or null, and anything else in it is ignored.
#[derive(Debug, Deserialize)]
struct ChunkIn {
    error: Option<Value>,
    model: Option<String>,
    usage: Option<UsageIn>,
    choices: Option<Vec<ChoiceIn>>,
}

#[derive(Debug, Deserialize)]
struct ChoiceIn {
    index: Option<u64>,
    /// Streamed chunks carry `delta`, whole completions `message`.
    delta: Option<DeltaIn>,
    message: Option<DeltaIn>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct DeltaIn {
    content: Option<Text>,
    tool_calls: Option<Vec<ToolCallIn>>,
}

/// A text field; any other shape (parts, from some servers) is not read.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Text {
    Text(String),
    Other(serde::de::IgnoredAny),
}

#[derive(Debug, Deserialize)]
struct ToolCallIn {
    index: Option<u64>,
    id: Option<String>,
    function: Option<FunctionIn>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionIn {
    name: Option<String>,
    /// A JSON text, in fragments; some servers send the object itself.
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct UsageIn {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<CachedIn>,
    /// DeepSeek's count of cached prompt tokens.
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct CachedIn {
    cached_tokens: Option<u64>,
}

/// A tool call being assembled from fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    args: String,
    started: bool,
}

/// The state of one streamed completion.
pub(crate) struct ChunkStream {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    model: String,
    done: bool,
}

impl ChunkStream {
    pub(crate) fn new(model: &str) -> ChunkStream {
        ChunkStream {
            text: String::new(),
            calls: BTreeMap::new(),
            finish_reason: None,
            usage: Usage::default(),
            model: model.to_string(),
            done: false,
        }
    }

    pub(crate) fn on_event(
        &mut self,
        ev: &SseEvent,
        sink: Option<&EventSink<'_>>,
    ) -> Result<(), LlmError> {
        if ev.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let v = http::parse_event(ev)?;
        self.on_chunk(&v, sink)
    }

    fn on_chunk(&mut self, v: &Value, sink: Option<&EventSink<'_>>) -> Result<(), LlmError> {
        let chunk = ChunkIn::deserialize(v).map_err(|e| {
            LlmError::internal(format!(
                "malformed completion chunk ({e}): {}",
                crate::truncate(&v.to_string(), 200)
            ))
        })?;
        let emit = |e: StreamEvent| {
            if let Some(s) = sink {
                s(e)
            }
        };
        if let Some(err) = chunk.error.filter(|e| !e.is_null()) {
            return Err(LlmError::from_api_error(&err));
        }
        if let Some(m) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = m;
        }
        if let Some(u) = chunk.usage {
            self.take_usage(u);
        }
        for choice in chunk.choices.into_iter().flatten() {
            if choice.index.unwrap_or(0) != 0 {
                continue; // we ask for one choice
            }
            let delta = choice.delta.or(choice.message).unwrap_or_default();
            if let Some(Text::Text(t)) = delta.content {
                if !t.is_empty() {
                    self.text.push_str(&t);
                    emit(StreamEvent::TextDelta(t));
                }
            }
            for (pos, tc) in delta.tool_calls.into_iter().flatten().enumerate() {
                // Ollama has sent calls without `index`: their position stands in.
                let index = tc.index.unwrap_or(pos as u64);
                let call = self.calls.entry(index).or_default();
                if let Some(id) = tc.id {
                    if call.id.is_empty() {
                        call.id = id;
                    }
                }
                let f = tc.function.unwrap_or_default();
                if let Some(name) = f.name {
                    if call.name.is_empty() {
                        call.name = name;
                    }
                }
                let piece = match f.arguments {
                    Some(Value::String(s)) => s,
                    Some(Value::Null) | None => String::new(),
                    Some(obj) => obj.to_string(), // some servers send the object itself
                };
                call.args.push_str(&piece);
                if !call.started && !call.name.is_empty() {
                    call.started = true;
                    if call.id.is_empty() {
                        call.id = format!("call_{index}");
                    }
                    emit(StreamEvent::ToolCallStarted {
                        id: call.id.clone(),
                        name: call.name.clone(),
                    });
                    if !call.args.is_empty() {
                        emit(StreamEvent::ToolInputDelta {
                            id: call.id.clone(),
                            partial_json: call.args.clone(),
                        });
                    }
                } else if call.started && !piece.is_empty() {
                    emit(StreamEvent::ToolInputDelta {
                        id: call.id.clone(),
                        partial_json: piece,
                    });
                }
            }
            if let Some(r) = choice.finish_reason {
                self.finish_reason = Some(r);
            }
        }
        Ok(())
    }

    fn take_usage(&mut self, u: UsageIn) {
        let prompt = u.prompt_tokens.unwrap_or(0);
        // OpenAI reports cached tokens inside the prompt count; DeepSeek as hit/miss.
        let cached = u
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .or(u.prompt_cache_hit_tokens)
            .unwrap_or(0)
            .min(prompt);
        self.usage = Usage {
            input_tokens: prompt - cached,
            output_tokens: u.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        };
    }

    pub(crate) fn finish(self, sink: Option<&EventSink<'_>>) -> Result<ChatResponse, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(LlmError::new(
                ErrorKind::Network,
                "the stream ended before a finish_reason or [DONE]",
            ));
        }
        if self.finish_reason.as_deref() == Some("content_filter") {
            return Err(LlmError::new(
                ErrorKind::ContentFilter,
                "the provider's content filter stopped the answer",
            ));
        }
        let mut tool_calls = Vec::new();
        for (index, c) in self.calls {
            let input = if c.args.trim().is_empty() {
                Value::Object(Default::default())
            } else {
                serde_json::from_str(&c.args).map_err(|e| {
                    LlmError::internal(format!(
                        "the model's arguments for tool {:?} are not valid JSON ({e}): {}",
                        c.name,
                        crate::truncate(&c.args, 200)
                    ))
                })?
            };
            tool_calls.push(ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{index}")
                } else {
                    c.id
                },
                name: c.name,
                input,
            });
        }
        if let Some(s) = sink {
            s(StreamEvent::Done);
        }
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            stop_reason: self.finish_reason.as_deref().map(normalise_stop),
            model: self.model,
            usage: self.usage,
            cost_usd: None,
        })
    }

    /// A whole (non-streamed) completion, from a server that ignored `stream: true`.
    pub(crate) fn finish_whole(
        mut self,
        v: &Value,
        sink: Option<&EventSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        self.on_chunk(v, sink)?;
        self.done = true;
        self.finish(sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatMessage, SystemBlock, ToolSpec};
    use serde_json::json;

    #[test]
    fn converts_the_conversation() {
        let req = ChatRequest {
            system: vec![
                SystemBlock {
                    text: "a".into(),
                    cache: true,
                },
                SystemBlock {
                    text: "b".into(),
                    cache: false,
                },
            ],
            messages: vec![
                ChatMessage::user("find x"),
                ChatMessage {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse {
                        id: "c1".into(),
                        name: "search".into(),
                        input: json!({"q": "x"}),
                    }],
                    cache: false,
                },
                ChatMessage {
                    role: Role::User,
                    content: vec![
                        ContentBlock::ToolResult {
                            tool_use_id: "c1".into(),
                            content: "boom".into(),
                            is_error: true,
                        },
                        ContentBlock::Text("and now?".into()),
                    ],
                    cache: true,
                },
            ],
            tools: vec![ToolSpec {
                name: "search".into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: 50,
            ..ChatRequest::default()
        };
        let b = serde_json::to_value(request_body(&req, "gpt-x", "max_completion_tokens")).unwrap();
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "a\n\nb"}));
        assert_eq!(m[1], json!({"role": "user", "content": "find x"}));
        assert_eq!(m[2]["content"], Value::Null);
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            "{\"q\":\"x\"}"
        );
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "Error: boom"})
        );
        assert_eq!(m[4], json!({"role": "user", "content": "and now?"}));
        assert_eq!(b["max_completion_tokens"], 50);
        assert!(b.get("max_tokens").is_none());
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["tools"][0]["type"], "function");
        assert_eq!(b["tools"][0]["function"]["parameters"]["type"], "object");
        assert!(!b.to_string().contains("cache"));
    }

    #[test]
    fn whole_completions_and_deepseek_usage() {
        let v = json!({
            "model": "deepseek-chat",
            "choices": [{ "index": 0, "finish_reason": "stop",
                          "message": { "role": "assistant", "content": "hi" } }],
            "usage": { "prompt_tokens": 100, "completion_tokens": 5,
                       "prompt_cache_hit_tokens": 60, "prompt_cache_miss_tokens": 40 }
        });
        let r = ChunkStream::new("asked").finish_whole(&v, None).unwrap();
        assert_eq!(r.text, "hi");
        assert_eq!(r.stop_reason.as_deref(), Some("end_turn"));
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 40,
                output_tokens: 5,
                cache_read_tokens: 60,
                cache_write_tokens: 0
            }
        );
        let filtered =
            json!({ "choices": [{ "index": 0, "finish_reason": "content_filter", "delta": {} }] });
        let e = ChunkStream::new("m")
            .finish_whole(&filtered, None)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::ContentFilter);
        let e = ChunkStream::new("m")
            .finish_whole(&json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}), None)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::RateLimit);
    }

    #[test]
    fn chunks_with_nulls_objects_and_parts_are_read_leniently() {
        let mut st = ChunkStream::new("asked");
        let chunks = [
            json!({ "model": "", "usage": null, "choices": null }),
            json!({ "choices": [{ "delta": { "content": null, "tool_calls": null } }] }),
            json!({ "choices": [{ "delta": { "content": [{"type": "text", "text": "x"}] } }] }),
            json!({ "choices": [{ "delta": { "content": "port 5173", "tool_calls": [
                { "function": { "name": "search", "arguments": { "q": "pool" } } }
            ] } }] }),
            json!({ "choices": [{ "index": 1, "delta": { "content": "other choice" } }] }),
            json!({ "choices": [{ "finish_reason": "tool_calls", "delta": {} }],
                    "usage": { "prompt_tokens": 9, "completion_tokens": null } }),
        ];
        for c in &chunks {
            st.on_chunk(c, None).unwrap();
        }
        let r = st.finish(None).unwrap();
        assert_eq!(r.text, "port 5173");
        assert_eq!(r.model, "asked");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].id, "call_0");
        assert_eq!(r.tool_calls[0].input, json!({"q": "pool"}));
        assert_eq!(r.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(r.usage.input_tokens, 9);
    }
}
