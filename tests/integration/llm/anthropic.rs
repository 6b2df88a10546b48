//! The Anthropic Messages provider against a fake API speaking its SSE protocol.

use super::fake_server::{sse_events, FakeServer, Reply};
use super::{env_of, settings, Events};
use ai_smartness::llm::registry::build_with_env;
use ai_smartness::llm::{
    ChatMessage, ChatRequest, ErrorKind, Provider, StreamEvent, SystemBlock, ToolCall, ToolSpec,
    Usage,
};
use serde_json::{json, Value};
use std::sync::Arc;

const KEY: &str = "sk-ant-test-0123456789";

fn provider(server: &FakeServer) -> Arc<dyn Provider> {
    build_with_env(
        &settings("anthropic", &server.url()),
        env_of(&[("ANTHROPIC_API_KEY", KEY)]),
    )
    .unwrap()
}

fn message_start(usage: Value) -> Value {
    json!({ "type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
        "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage } })
}

fn text_block(index: u64, pieces: &[&str]) -> Vec<Value> {
    let mut v = vec![json!({ "type": "content_block_start", "index": index,
        "content_block": { "type": "text", "text": "" } })];
    for p in pieces {
        v.push(json!({ "type": "content_block_delta", "index": index,
            "delta": { "type": "text_delta", "text": p } }));
    }
    v.push(json!({ "type": "content_block_stop", "index": index }));
    v
}

fn tool_block(index: u64, id: &str, name: &str, pieces: &[&str]) -> Vec<Value> {
    let mut v = vec![json!({ "type": "content_block_start", "index": index,
        "content_block": { "type": "tool_use", "id": id, "name": name, "input": {} } })];
    for p in pieces {
        v.push(json!({ "type": "content_block_delta", "index": index,
            "delta": { "type": "input_json_delta", "partial_json": p } }));
    }
    v.push(json!({ "type": "content_block_stop", "index": index }));
    v
}

fn end(stop: &str, output_tokens: u64) -> Vec<Value> {
    vec![
        json!({ "type": "message_delta", "delta": { "stop_reason": stop, "stop_sequence": null },
                "usage": { "output_tokens": output_tokens } }),
        json!({ "type": "message_stop" }),
    ]
}

#[tokio::test]
async fn streams_text_with_cache_usage_over_crlf_and_cut_chunks() {
    let mut events = vec![
        message_start(json!({ "input_tokens": 21, "output_tokens": 1,
            "cache_creation_input_tokens": 1200, "cache_read_input_tokens": 3400 })),
        json!({ "type": "ping" }),
    ];
    events.extend(text_block(0, &["Bonjour ", "le monde ", "→ 😀"]));
    events.extend(end("end_turn", 12));
    // CRLF framing, cut every 7 bytes: events, lines and characters split across chunks.
    let body = sse_events(&events).replace('\n', "\r\n");
    let server = FakeServer::queue(vec![Reply::sse_cut(&body, 7)]).await;
    let p = provider(&server);
    let mut user = ChatMessage::user("Say hello");
    user.cache = true;
    let req = ChatRequest {
        system: vec![
            SystemBlock {
                text: "You extract facts.".into(),
                cache: true,
            },
            SystemBlock {
                text: "Memory: none.".into(),
                cache: false,
            },
        ],
        messages: vec![user],
        max_tokens: 256,
        temperature: Some(0.2),
        ..ChatRequest::default()
    };
    let ev = Events::default();
    let sink = ev.sink();
    let r = p.complete(&req, Some(&sink)).await.unwrap();
    assert_eq!(r.text, "Bonjour le monde → 😀");
    assert_eq!(r.model, "claude-haiku-5-5");
    assert_eq!(r.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 21,
            output_tokens: 12,
            cache_read_tokens: 3400,
            cache_write_tokens: 1200
        }
    );
    assert_eq!(r.cost_usd, None, "the client prices it");
    assert_eq!(ev.text(), r.text);
    assert_eq!(ev.all().last(), Some(&StreamEvent::Done));

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let q = &reqs[0];
    assert_eq!(
        (q.method.as_str(), q.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(q.header("x-api-key"), Some(KEY));
    assert_eq!(q.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(q.header("content-type"), Some("application/json"));
    let b = &q.body;
    assert_eq!(b["model"], "claude-haiku-5-5");
    assert_eq!(b["stream"], true);
    assert_eq!(b["max_tokens"], 256);
    assert_eq!(
        b["system"][0],
        json!({ "type": "text", "text": "You extract facts.",
        "cache_control": { "type": "ephemeral" } })
    );
    assert_eq!(
        b["system"][1],
        json!({ "type": "text", "text": "Memory: none." })
    );
    assert_eq!(
        b["messages"][0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert!(b.get("tools").is_none());
}

#[tokio::test]
async fn assembles_a_tool_call_from_input_json_pieces() {
    let mut events = vec![message_start(
        json!({ "input_tokens": 50, "output_tokens": 1 }),
    )];
    events.extend(text_block(0, &["Let me search."]));
    events.extend(tool_block(
        1,
        "toolu_01",
        "search_threads",
        &[
            "{\"query\": \"postg",
            "res pool\", \"lim",
            "it\": 5, \"tags\": [\"db\"]}",
        ],
    ));
    events.extend(end("tool_use", 40));
    let server = FakeServer::queue(vec![Reply::sse(&sse_events(&events))]).await;
    let p = provider(&server);
    let req = ChatRequest {
        tools: vec![ToolSpec {
            name: "search_threads".into(),
            description: "Searches the memory.".into(),
            input_schema: json!({ "type": "object", "properties": { "query": { "type": "string" } } }),
        }],
        ..ChatRequest::simple("", "What about the pool?")
    };
    let ev = Events::default();
    let sink = ev.sink();
    let r = p.complete(&req, Some(&sink)).await.unwrap();
    assert_eq!(
        r.tool_calls,
        vec![ToolCall {
            id: "toolu_01".into(),
            name: "search_threads".into(),
            input: json!({ "query": "postgres pool", "limit": 5, "tags": ["db"] }),
        }]
    );
    assert_eq!(r.text, "Let me search.");
    assert_eq!(r.stop_reason.as_deref(), Some("tool_use"));
    let all = ev.all();
    assert_eq!(
        all[1],
        StreamEvent::ToolCallStarted {
            id: "toolu_01".into(),
            name: "search_threads".into()
        }
    );
    let deltas: Vec<&str> = all
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolInputDelta { id, partial_json } if id == "toolu_01" => {
                Some(partial_json.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(deltas.len(), 3);
    let tools = &server.requests()[0].body["tools"];
    assert_eq!(tools[0]["name"], "search_threads");
    assert_eq!(
        tools[0]["input_schema"]["properties"]["query"]["type"],
        "string"
    );
}

#[tokio::test]
async fn malformed_tool_json_is_an_internal_error() {
    let mut events = vec![message_start(json!({ "input_tokens": 5 }))];
    events.extend(tool_block(
        0,
        "toolu_x",
        "search_threads",
        &["{\"query\": \"po", "stgres\""],
    ));
    events.extend(end("tool_use", 9));
    let server = FakeServer::queue(vec![Reply::sse(&sse_events(&events))]).await;
    let e = provider(&server)
        .complete(&ChatRequest::simple("", "q"), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Internal);
    assert!(
        e.message.contains("search_threads") && e.message.contains("not valid JSON"),
        "{e}"
    );
}

#[tokio::test]
async fn error_events_mid_stream_are_classified() {
    let mut events = vec![message_start(json!({ "input_tokens": 5 }))];
    events.extend(text_block(0, &["partial"]));
    events.push(json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }));
    let server = FakeServer::queue(vec![Reply::sse(&sse_events(&events))]).await;
    let e = provider(&server)
        .complete(&ChatRequest::simple("", "q"), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ServerError);
    assert!(e.retryable());
}

#[tokio::test]
async fn http_errors_missing_keys_and_ping() {
    let server = FakeServer::queue(vec![Reply::json(400, json!({ "type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum" } }))])
    .await;
    let e = provider(&server)
        .complete(&ChatRequest::simple("", "q"), None)
        .await
        .unwrap_err();
    assert_eq!((e.kind, e.status), (ErrorKind::ContextLength, Some(400)));

    // No key: refused before any request.
    let server = FakeServer::queue(vec![Reply::sse("")]).await;
    let p = build_with_env(&settings("anthropic", &server.url()), env_of(&[])).unwrap();
    let e = p
        .complete(&ChatRequest::simple("", "q"), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::AuthError);
    assert!(e.message.contains("ANTHROPIC_API_KEY"));
    assert!(server.requests().is_empty());

    // Ping lists models (free), with the key.
    let server = FakeServer::start(|r, _| {
        if r.header("x-api-key") == Some(KEY) {
            Reply::json(200, json!({ "data": [{ "id": "claude-haiku-5-5", "type": "model" }] }))
        } else {
            Reply::json(401, json!({ "type": "error", "error": { "type": "authentication_error", "message": "invalid x-api-key" } }))
        }
    })
    .await;
    provider(&server).ping().await.unwrap();
    let q = &server.requests()[0];
    assert_eq!(
        (q.method.as_str(), q.path.as_str()),
        ("GET", "/v1/models?limit=1")
    );
    let p = build_with_env(
        &settings("anthropic", &server.url()),
        env_of(&[("ANTHROPIC_API_KEY", "wrong")]),
    )
    .unwrap();
    assert_eq!(p.ping().await.unwrap_err().kind, ErrorKind::AuthError);
}
