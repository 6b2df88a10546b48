//! OpenAI-compatible providers against a fake chat-completions server.

use super::fake_server::{sse_chunks, FakeServer, Reply};
use super::{env_of, settings, Events};
use ai_smartness::llm::registry::build_with_env;
use ai_smartness::llm::{
    ChatMessage, ChatRequest, ContentBlock, ErrorKind, Role, StreamEvent, ToolCall, ToolSpec, Usage,
};
use serde_json::{json, Value};

const KEY: &str = "sk-proj-test-abcdef";

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4.1-mini-2025-04-14",
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }], "usage": null })
}

fn tools() -> Vec<ToolSpec> {
    ["search", "get_thread"]
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: format!("{n} the memory"),
            input_schema: json!({ "type": "object" }),
        })
        .collect()
}

#[tokio::test]
async fn streams_text_and_tool_call_fragments_by_index() {
    let chunks = vec![
        chunk(json!({ "role": "assistant", "content": "" }), None),
        chunk(json!({ "content": "Looking " }), None),
        chunk(json!({ "content": "it up." }), None),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "id": "call_A", "type": "function",
            "function": { "name": "search", "arguments": "" } }] }),
            None,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"que" } }] }),
            None,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 1, "id": "call_B", "type": "function",
            "function": { "name": "get_thread", "arguments": "{\"id\":" } }] }),
            None,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "ry\": \"pool\"}" } }] }),
            None,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 1, "function": { "arguments": " \"t-42\"}" } }] }),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4.1-mini-2025-04-14",
                "choices": [], "usage": { "prompt_tokens": 120, "completion_tokens": 33, "total_tokens": 153,
                "prompt_tokens_details": { "cached_tokens": 100 } } }),
    ];
    let server = FakeServer::queue(vec![Reply::sse_cut(&sse_chunks(&chunks), 11)]).await;
    let p = build_with_env(
        &settings("openai", &server.url()),
        env_of(&[("OPENAI_API_KEY", KEY)]),
    )
    .unwrap();
    let req = ChatRequest {
        tools: tools(),
        messages: vec![
            ChatMessage::user("find the pool issue"),
            ChatMessage {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "call_0".into(),
                    name: "search".into(),
                    input: json!({"query": "pool"}),
                }],
                cache: false,
            },
            ChatMessage {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "call_0".into(),
                    content: "nothing".into(),
                    is_error: false,
                }],
                cache: false,
            },
        ],
        ..ChatRequest::simple("You are a memory.", "")
    };
    let ev = Events::default();
    let sink = ev.sink();
    let r = p.complete(&req, Some(&sink)).await.unwrap();
    assert_eq!(r.text, "Looking it up.");
    assert_eq!(
        r.tool_calls,
        vec![
            ToolCall {
                id: "call_A".into(),
                name: "search".into(),
                input: json!({ "query": "pool" })
            },
            ToolCall {
                id: "call_B".into(),
                name: "get_thread".into(),
                input: json!({ "id": "t-42" })
            },
        ]
    );
    assert_eq!(r.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(r.model, "gpt-4.1-mini-2025-04-14");
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 33,
            cache_read_tokens: 100,
            cache_write_tokens: 0
        }
    );
    let all = ev.all();
    assert!(all.contains(&StreamEvent::ToolCallStarted {
        id: "call_B".into(),
        name: "get_thread".into()
    }));
    let b_args: String = all
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolInputDelta { id, partial_json } if id == "call_B" => {
                Some(partial_json.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(b_args, "{\"id\": \"t-42\"}");
    assert_eq!(all.last(), Some(&StreamEvent::Done));

    let q = &server.requests()[0];
    assert_eq!(
        (q.method.as_str(), q.path.as_str()),
        ("POST", "/chat/completions")
    );
    assert_eq!(
        q.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let b = &q.body;
    assert_eq!(b["model"], "gpt-4.1-mini");
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"], json!({ "include_usage": true }));
    assert_eq!(b["max_completion_tokens"], 1024);
    assert_eq!(
        b["messages"][0],
        json!({ "role": "system", "content": "You are a memory." })
    );
    assert_eq!(
        b["messages"][2]["tool_calls"][0]["function"]["name"],
        "search"
    );
    assert_eq!(
        b["messages"][3],
        json!({ "role": "tool", "tool_call_id": "call_0", "content": "nothing" })
    );
    assert_eq!(
        b["tools"][1],
        json!({ "type": "function", "function": {
        "name": "get_thread", "description": "get_thread the memory", "parameters": { "type": "object" } } })
    );
}

#[tokio::test]
async fn local_servers_need_no_key_and_may_omit_indexes() {
    // Ollama style: the whole call in one chunk, no `index`, no usage.
    let chunks = vec![
        json!({ "model": "llama3.2", "choices": [{ "index": 0, "delta": { "role": "assistant", "content": "",
            "tool_calls": [{ "id": "call_x", "function": { "name": "search", "arguments": "{\"query\":\"a\"}" } }] },
            "finish_reason": null }] }),
        json!({ "model": "llama3.2", "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] }),
    ];
    let server = FakeServer::queue(vec![Reply::sse(&sse_chunks(&chunks))]).await;
    let p = build_with_env(
        &settings("ollama", &server.url()),
        env_of(&[("OPENAI_API_KEY", KEY)]),
    )
    .unwrap();
    let r = p
        .complete(
            &ChatRequest {
                tools: tools(),
                ..ChatRequest::simple("", "hi")
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.tool_calls[0].input, json!({ "query": "a" }));
    assert_eq!(r.usage, Usage::default());
    let q = &server.requests()[0];
    assert_eq!(q.header("authorization"), None);
    assert_eq!(q.body["max_tokens"], 1024);
    assert_eq!(q.body["model"], "llama3.2");
}

#[tokio::test]
async fn malformed_arguments_and_error_bodies() {
    let chunks = vec![
        chunk(
            json!({ "tool_calls": [{ "index": 0, "id": "c", "function": { "name": "search", "arguments": "{\"query\": " } }] }),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ];
    let server = FakeServer::queue(vec![Reply::sse(&sse_chunks(&chunks))]).await;
    let p = build_with_env(
        &settings("deepseek", &server.url()),
        env_of(&[("DEEPSEEK_API_KEY", KEY)]),
    )
    .unwrap();
    let e = p
        .complete(&ChatRequest::simple("", "hi"), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Internal);
    assert!(e.message.contains("search"), "{e}");

    for (status, body, kind) in [
        (
            400,
            json!({ "error": { "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded" } }),
            ErrorKind::ContextLength,
        ),
        (
            401,
            json!({ "error": { "message": "Incorrect API key provided: sk-proj-***def.",
            "type": "invalid_request_error", "param": null, "code": "invalid_api_key" } }),
            ErrorKind::AuthError,
        ),
        (
            429,
            json!({ "error": { "message": "You exceeded your current quota.",
            "type": "insufficient_quota", "param": null, "code": "insufficient_quota" } }),
            ErrorKind::AuthError,
        ),
        (
            503,
            json!({ "error": { "message": "The server is overloaded.", "type": "server_error" } }),
            ErrorKind::ServerError,
        ),
    ] {
        let server = FakeServer::queue(vec![Reply::json(status, body)]).await;
        let p = build_with_env(
            &settings("openai", &server.url()),
            env_of(&[("OPENAI_API_KEY", KEY)]),
        )
        .unwrap();
        let e = p
            .complete(&ChatRequest::simple("", "hi"), None)
            .await
            .unwrap_err();
        assert_eq!((e.kind, e.status), (kind, Some(status)), "{e}");
    }

    // An error inside the stream.
    let server = FakeServer::queue(vec![Reply::sse("data: {\"error\": {\"message\": \"Rate limit reached for requests\", \"type\": \"requests\", \"code\": \"rate_limit_exceeded\"}}\n\n")]).await;
    let p = build_with_env(
        &settings("openai", &server.url()),
        env_of(&[("OPENAI_API_KEY", KEY)]),
    )
    .unwrap();
    assert_eq!(
        p.complete(&ChatRequest::simple("", "hi"), None)
            .await
            .unwrap_err()
            .kind,
        ErrorKind::RateLimit
    );

    // Ping: GET /models.
    let server = FakeServer::queue(vec![Reply::json(
        200,
        json!({ "object": "list", "data": [] }),
    )])
    .await;
    let p = build_with_env(&settings("llamacpp", &server.url()), env_of(&[])).unwrap();
    p.ping().await.unwrap();
    assert_eq!(server.requests()[0].path, "/models");
}
