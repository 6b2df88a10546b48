//! `LlmClient` end to end over real sockets: retries, timeouts, network errors, limits, the
//! ledger and the log lines.

use super::fake_server::{closed_port, sse_events, FakeServer, Reply};
use super::{env_of, settings};
use ai_smartness::daemon::llm_tasks::costs::CostTracker;
use ai_smartness::llm::registry::build_with_env;
use ai_smartness::llm::retry::RetryPolicy;
use ai_smartness::llm::{ChatRequest, ErrorKind, LlmClient};
use ai_smartness::records::cost::Limits;
use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY: &str = "sk-ant-SECRET-must-never-be-logged";
const PROMPT: &str = "PRIVATE PROMPT about the zephyrwave export";

fn ok_stream(text: &str) -> Reply {
    Reply::sse(&sse_events(&[
        json!({ "type": "message_start", "message": { "model": "claude-haiku-4-5",
            "usage": { "input_tokens": 1000, "output_tokens": 1, "cache_read_input_tokens": 2000 } } }),
        json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": text } }),
        json!({ "type": "content_block_stop", "index": 0 }),
        json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" }, "usage": { "output_tokens": 500 } }),
        json!({ "type": "message_stop" }),
    ]))
}

fn anthropic_error(status: u16, kind: &str) -> Reply {
    Reply::json(
        status,
        json!({ "type": "error", "error": { "type": kind, "message": format!("fake {kind}") } }),
    )
}

fn client(server_url: &str) -> LlmClient {
    let p = build_with_env(
        &settings("anthropic", server_url),
        env_of(&[("ANTHROPIC_API_KEY", KEY)]),
    )
    .unwrap();
    LlmClient::new(p)
}

fn request(timeout: Duration) -> ChatRequest {
    ChatRequest {
        timeout,
        ..ChatRequest::simple("", PROMPT)
    }
}

/// Log lines (JSON) written while the guard lives, on this thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let w = logs.clone();
        let sub = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || w.clone())
            .finish();
        (logs, tracing::subscriber::set_default(sub))
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    fn events(&self, name: &str) -> Vec<Value> {
        self.text()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["event"] == name)
            .collect()
    }
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds_and_logs() {
    let (logs, _guard) = Logs::capture();
    let server = FakeServer::queue(vec![
        anthropic_error(429, "rate_limit_error").with_header("retry-after", "1"),
        ok_stream("done"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tracker = Arc::new(CostTracker::open(dir.path(), Limits::default()));
    let c = client(&server.url()).with_costs(tracker.clone());
    let start = Instant::now();
    let r = c
        .complete(&request(Duration::from_secs(10)), None)
        .await
        .unwrap();
    let took = start.elapsed();
    assert_eq!(r.text, "done");
    assert!(took >= Duration::from_secs(1), "retried after {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(server.requests().len(), 2);
    // Priced from the registry: haiku 4.5 at $1 in, $5 out, $0.10 cache read per million.
    let want = (1000.0 * 1.0 + 500.0 * 5.0 + 2000.0 * 0.1) / 1e6;
    assert!(
        (r.cost_usd.unwrap() - want).abs() < 1e-12,
        "{:?}",
        r.cost_usd
    );
    let snap = tracker.snapshot();
    assert_eq!(
        (snap.today.totals.calls, snap.today.totals.output_tokens),
        (1, 500)
    );
    assert!((snap.total.cost_usd - want).abs() < 1e-12);
    assert!(snap
        .today
        .by_model
        .contains_key("anthropic/claude-haiku-4-5"));

    let retry = logs.events("llm_retry");
    assert_eq!(retry.len(), 1, "{}", logs.text());
    assert_eq!(retry[0]["error_kind"], "rate_limit");
    assert_eq!(retry[0]["status"], 429);
    assert_eq!(retry[0]["wait_ms"], 1000);
    assert_eq!(retry[0]["target"], "llm");
    let call = logs.events("llm_call");
    assert_eq!(call.len(), 1);
    let c0 = &call[0];
    assert_eq!(
        (c0["provider"].as_str(), c0["model"].as_str()),
        (Some("anthropic"), Some("claude-haiku-4-5"))
    );
    assert_eq!(
        (c0["outcome"].as_str(), c0["attempts"].as_u64()),
        (Some("ok"), Some(2))
    );
    assert_eq!(
        (c0["input_tokens"].as_u64(), c0["output_tokens"].as_u64()),
        (Some(1000), Some(500))
    );
    assert_eq!(c0["cache_read_tokens"], 2000);
    assert!(c0["duration_ms"].as_u64().unwrap() >= 1000);
    assert!((c0["cost_usd"].as_f64().unwrap() - want).abs() < 1e-12);
    let all = logs.text();
    assert!(!all.contains(KEY) && !all.contains("zephyrwave"), "{all}");
}

#[tokio::test]
async fn server_error_then_success() {
    let server = FakeServer::queue(vec![
        anthropic_error(500, "api_error"),
        ok_stream("second time"),
    ])
    .await;
    let r = client(&server.url())
        .complete(&request(Duration::from_secs(10)), None)
        .await
        .unwrap();
    assert_eq!(r.text, "second time");
    assert_eq!(server.requests().len(), 2);

    // 529 overloaded every time: three attempts, then the error.
    let server = FakeServer::queue(vec![anthropic_error(529, "overloaded_error")]).await;
    let e = client(&server.url())
        .complete(&request(Duration::from_secs(10)), None)
        .await
        .unwrap_err();
    assert_eq!((e.kind, e.status), (ErrorKind::ServerError, Some(529)));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_bad_key_is_an_auth_error_and_is_not_retried() {
    let (logs, _guard) = Logs::capture();
    let server = FakeServer::queue(vec![anthropic_error(401, "authentication_error")]).await;
    let dir = tempfile::tempdir().unwrap();
    let tracker = Arc::new(CostTracker::open(dir.path(), Limits::default()));
    let c = client(&server.url()).with_costs(tracker.clone());
    let e = c
        .complete(&request(Duration::from_secs(10)), None)
        .await
        .unwrap_err();
    assert_eq!((e.kind, e.status), (ErrorKind::AuthError, Some(401)));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(tracker.snapshot().today.totals.failed_calls, 1);
    let call = &logs.events("llm_call")[0];
    assert_eq!(
        (call["outcome"].as_str(), call["error_kind"].as_str()),
        (Some("error"), Some("auth_error"))
    );
    assert_eq!(call["level"], "WARN");
    assert!(logs.events("llm_retry").is_empty());
}

#[tokio::test]
async fn a_slow_answer_times_out() {
    // Headers arrive, the body never finishes; and a server that never answers at all.
    for stall in [
        Reply::StallAfterHeaders(Duration::from_secs(10)),
        Reply::Stall(Duration::from_secs(10)),
    ] {
        let server = FakeServer::queue(vec![stall]).await;
        let c = client(&server.url()).with_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(10),
            ..RetryPolicy::default()
        });
        let start = Instant::now();
        let e = c
            .complete(&request(Duration::from_millis(400)), None)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(server.requests().len(), 2, "a timeout is retried");
    }
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    let url = format!("http://127.0.0.1:{}", closed_port().await);
    let c = client(&url).with_retry(RetryPolicy::none());
    let e = c
        .complete(&request(Duration::from_secs(5)), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Network, "{e}");
    assert!(e.retryable());
    let e = c.ping().await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Network);
}

#[tokio::test]
async fn limits_refuse_before_any_request() {
    let (logs, _guard) = Logs::capture();
    let server = FakeServer::queue(vec![ok_stream("never")]).await;
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_tokens_per_call: Some(500),
        max_cost_per_day_usd: None,
    };
    let c = client(&server.url()).with_costs(Arc::new(CostTracker::open(dir.path(), limits)));
    let e = c
        .complete(&request(Duration::from_secs(5)), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::BudgetExceeded);
    assert!(server.requests().is_empty());
    assert_eq!(logs.events("llm_call")[0]["outcome"], "refused");

    // A daily budget that one call exhausts.
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_tokens_per_call: None,
        max_cost_per_day_usd: Some(0.01),
    };
    let c = client(&server.url()).with_costs(Arc::new(CostTracker::open(dir.path(), limits)));
    let big = ChatRequest {
        max_tokens: 100,
        ..request(Duration::from_secs(5))
    };
    c.complete(&big, None).await.unwrap(); // costs $0.0037 of $0.01
    c.complete(&big, None).await.unwrap();
    c.complete(&big, None).await.unwrap();
    let e = c.complete(&big, None).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::BudgetExceeded, "{e}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn no_retry_once_text_was_streamed() {
    let body = sse_events(&[
        json!({ "type": "message_start", "message": { "model": "m", "usage": { "input_tokens": 1 } } }),
        json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": "half" } }),
        json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
    ]);
    let server = FakeServer::queue(vec![Reply::sse(&body)]).await;
    let c = client(&server.url());
    let seen = Mutex::new(String::new());
    let sink = |e: ai_smartness::llm::StreamEvent| {
        if let ai_smartness::llm::StreamEvent::TextDelta(t) = e {
            seen.lock().unwrap().push_str(&t);
        }
    };
    let e = c
        .complete(&request(Duration::from_secs(5)), Some(&sink))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ServerError);
    assert_eq!(server.requests().len(), 1, "the caller already saw text");
    assert_eq!(*seen.lock().unwrap(), "half");
    // Without a sink the same failure is retried.
    let e = c
        .complete(&request(Duration::from_secs(5)), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ServerError);
    assert_eq!(server.requests().len(), 4);
}
