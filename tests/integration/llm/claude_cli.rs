//! The real Claude Code CLI driven by the claude-cli provider, against a fake Anthropic API.
//!
//! The binary is the one `scripts/fetch-claude-code.sh` caches (or `AI_SMARTNESS_CLAUDE_BIN`).
//! Without it a test prints SKIPPED and passes, except under CI, where it fails.
//!
//! The CLI runs from an empty environment plus: `PATH`, a throwaway `HOME` (its settings hold
//! hooks that record what they see), `ANTHROPIC_BASE_URL` (the fake), `ANTHROPIC_API_KEY`,
//! `DISABLE_TELEMETRY` and `NO_PROXY`, and the hook guard (as the daemon gives it); the provider
//! adds its own fixed variables.

use super::fake_server::{sse_events, FakeServer, Recorded, Reply};
use super::Events;
use ai_smartness::llm::claude_cli::ClaudeCliProvider;
use ai_smartness::llm::{ChatRequest, ErrorKind, Provider, StreamEvent};
use ai_smartness_proto::HOOK_GUARD_ENV;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const ANSWER: &str = "The export drops rows with NULL currency codes.";

pub use crate::harness::claude_or_skip;

/// What the fake API streams for one model turn.
fn answer(text: &str) -> Reply {
    Reply::sse(&sse_events(&[
        json!({ "type": "message_start", "message": { "id": "msg_cli", "type": "message", "role": "assistant",
            "model": "claude-haiku-4-5", "content": [], "stop_reason": null,
            "usage": { "input_tokens": 40, "output_tokens": 1,
                       "cache_creation_input_tokens": 100, "cache_read_input_tokens": 0 } } }),
        json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": text } }),
        json!({ "type": "content_block_stop", "index": 0 }),
        json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" }, "usage": { "output_tokens": 11 } }),
        json!({ "type": "message_stop" }),
    ]))
}

fn is_messages(r: &Recorded) -> bool {
    r.method == "POST" && r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens")
}

/// A throwaway HOME whose user settings register hooks that write the guard variable to files
/// (`session_start.txt`, `user_prompt_submit.txt`).
pub fn home_with_hooks() -> tempfile::TempDir {
    let home = tempfile::Builder::new()
        .prefix("aicli")
        .tempdir_in("/tmp")
        .unwrap();
    let claude_dir = home.path().join(".claude");
    std::fs::create_dir_all(&claude_dir).unwrap();
    let hook = |file: &str| {
        json!([{ "hooks": [{ "type": "command",
            "command": format!("echo \"guard=${HOOK_GUARD_ENV}\" > '{}'", home.path().join(file).display()) }] }])
    };
    let settings = json!({ "hooks": {
        "SessionStart": hook("session_start.txt"),
        "UserPromptSubmit": hook("user_prompt_submit.txt"),
    } });
    std::fs::write(claude_dir.join("settings.json"), settings.to_string()).unwrap();
    home
}

fn provider(bin: &Path, home: &Path, server: &FakeServer) -> ClaudeCliProvider {
    // The CLI keeps a folder per project under $TMPDIR/claude-UID: the test's own, gone with
    // it, rather than the machine's /tmp.
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    ClaudeCliProvider::new(bin, "claude-haiku-4-5")
        .with_clear_env()
        .with_env("PATH", std::env::var("PATH").unwrap_or_default())
        .with_env("HOME", home.to_str().unwrap())
        .with_env("TMPDIR", tmp.to_str().unwrap())
        .with_env("ANTHROPIC_BASE_URL", server.url())
        .with_env("ANTHROPIC_API_KEY", "test-key")
        .with_env("DISABLE_TELEMETRY", "1")
        .with_env("NO_PROXY", "127.0.0.1,localhost")
        .with_env(HOOK_GUARD_ENV, "1")
        .with_work_dir(home)
}

#[tokio::test]
async fn the_real_cli_answers_through_the_fake_api_with_the_guard_set() {
    let Some(bin) = claude_or_skip() else {
        return;
    };
    let server = FakeServer::start(|r, _| {
        if is_messages(r) {
            answer(ANSWER)
        } else {
            Reply::json(
                404,
                json!({ "type": "error", "error": { "type": "not_found_error", "message": "no" } }),
            )
        }
    })
    .await;
    let home = home_with_hooks();
    let p = provider(&bin, home.path(), &server);
    let req = ChatRequest {
        max_tokens: 300,
        timeout: Duration::from_secs(90),
        ..ChatRequest::simple(
            "You summarise engineering notes in one sentence.",
            "Why does the zephyrwave export drop rows?",
        )
    };
    let ev = Events::default();
    let sink = ev.sink();
    let r = match p.complete(&req, Some(&sink)).await {
        Ok(r) => r,
        Err(e) => panic!("{e}\nrequests: {:#?}", server.requests()),
    };
    assert_eq!(r.text, ANSWER);
    assert_eq!(r.model, "claude-haiku-4-5");
    assert_eq!(r.usage.output_tokens, 11);
    assert_eq!(r.usage.cache_write_tokens, 100);
    assert!(
        r.cost_usd.is_some_and(|c| c > 0.0),
        "the CLI prices the call: {:?}",
        r.cost_usd
    );
    assert_eq!(
        ev.all(),
        vec![StreamEvent::TextDelta(ANSWER.into()), StreamEvent::Done]
    );

    let calls: Vec<Recorded> = server.requests().into_iter().filter(is_messages).collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let q = &calls[0];
    assert_eq!(q.header("x-api-key"), Some("test-key"));
    let body = q.body.to_string();
    assert!(
        body.contains("You summarise engineering notes"),
        "our system prompt"
    );
    assert!(
        body.contains("zephyrwave export drop rows"),
        "our prompt, from stdin"
    );
    assert_eq!(q.body["model"], "claude-haiku-4-5");
    assert_eq!(q.body["max_tokens"], 300, "CLAUDE_CODE_MAX_OUTPUT_TOKENS");
    assert!(
        q.body["tools"].as_array().is_none_or(|t| t.is_empty()),
        "no tools offered"
    );
    assert_ne!(q.body["thinking"]["type"], "enabled");

    // The CLI's own hooks ran inside the subprocess and saw the anti-loop guard.
    for file in ["session_start.txt", "user_prompt_submit.txt"] {
        let seen = std::fs::read_to_string(home.path().join(file))
            .unwrap_or_else(|e| panic!("hook output {file}: {e}"));
        assert_eq!(seen.trim(), "guard=1", "{file}");
    }
}

#[tokio::test]
async fn the_real_cli_reports_api_errors_classified_without_retrying() {
    let Some(bin) = claude_or_skip() else {
        return;
    };
    for (status, kind, error_kind) in [
        (401, "authentication_error", ErrorKind::AuthError),
        (429, "rate_limit_error", ErrorKind::RateLimit),
        (529, "overloaded_error", ErrorKind::ServerError),
    ] {
        let server = FakeServer::queue(vec![Reply::json(
            status,
            json!({ "type": "error", "error": { "type": kind, "message": format!("fake {kind}") } }),
        )])
        .await;
        let home = home_with_hooks();
        let p = provider(&bin, home.path(), &server);
        let req = ChatRequest {
            timeout: Duration::from_secs(90),
            ..ChatRequest::simple("", "hi")
        };
        let e = p.complete(&req, None).await.unwrap_err();
        assert_eq!((e.kind, e.status), (error_kind, Some(status)), "{e}");
        let calls = server.requests().into_iter().filter(is_messages).count();
        assert_eq!(
            calls, 1,
            "CLAUDE_CODE_MAX_RETRIES=0: our retry layer decides"
        );
    }
}

#[tokio::test]
async fn the_real_cli_is_killed_at_the_timeout() {
    let Some(bin) = claude_or_skip() else {
        return;
    };
    let server = FakeServer::queue(vec![Reply::StallAfterHeaders(Duration::from_secs(120))]).await;
    let home = home_with_hooks();
    let p = provider(&bin, home.path(), &server);
    let req = ChatRequest {
        timeout: Duration::from_secs(8),
        ..ChatRequest::simple("", "hi")
    };
    let start = Instant::now();
    let e = p.complete(&req, None).await.unwrap_err();
    let took = start.elapsed();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    // Not before the timeout; the upper bound only says it was not left to the server's two
    // minutes (a loaded CI machine may take seconds to reap the process group).
    assert!(
        took >= Duration::from_secs(8) && took < Duration::from_secs(60),
        "{took:?}"
    );
    assert_eq!(
        server.requests().into_iter().filter(is_messages).count(),
        1,
        "the CLI was waiting on the API when it was killed"
    );
}
