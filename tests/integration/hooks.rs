//! The hook binaries as Claude Code runs them: the payload on stdin (the real shapes, recorded
//! from Claude Code 2.1.328, with `cwd` pointing at the test project), stdout and the exit code
//! checked. Every failure must end in exit 0 with nothing on stdout (fail open).

use crate::harness::*;
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

// Recorded stdin payloads (shared/claude-code/*.json), kept here so the tests stand alone.
const REC_POST_TOOL_USE_BASH: &str = r#"{
    "session_id": "ecb0f686-b16e-4e8d-8658-284c2dd78479",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-project/ecb0f686-b16e-4e8d-8658-284c2dd78479.jsonl",
    "cwd": "/home/dev/project",
    "prompt_id": "2f1c448a-f49b-423f-9b4b-864296edc7eb",
    "permission_mode": "default",
    "effort": {"level": "medium"},
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "echo the-memory-daemon-test-output-with-enough-characters", "description": "echo"},
    "tool_response": {"stdout": "the-memory-daemon-test-output-with-enough-characters", "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false},
    "tool_use_id": "toolu_1",
    "duration_ms": 29
}"#;
const REC_SESSION_START: &str = r#"{
    "session_id": "ecb0f686-b16e-4e8d-8658-284c2dd78479",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-project/ecb0f686-b16e-4e8d-8658-284c2dd78479.jsonl",
    "cwd": "/home/dev/project",
    "hook_event_name": "SessionStart",
    "source": "startup"
}"#;
const REC_STOP: &str = r#"{
    "session_id": "ecb0f686-b16e-4e8d-8658-284c2dd78479",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-project/ecb0f686-b16e-4e8d-8658-284c2dd78479.jsonl",
    "cwd": "/home/dev/project",
    "prompt_id": "2f1c448a-f49b-423f-9b4b-864296edc7eb",
    "permission_mode": "default",
    "effort": {"level": "medium"},
    "hook_event_name": "Stop",
    "stop_hook_active": false,
    "last_assistant_message": "Done from mock.",
    "background_tasks": [],
    "session_crons": []
}"#;
const REC_USER_PROMPT_SUBMIT: &str = r#"{
    "session_id": "ecb0f686-b16e-4e8d-8658-284c2dd78479",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-project/ecb0f686-b16e-4e8d-8658-284c2dd78479.jsonl",
    "cwd": "/home/dev/project",
    "prompt_id": "2f1c448a-f49b-423f-9b4b-864296edc7eb",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "Please run an echo command to test the memory system, this prompt is long enough"
}"#;

/// A recorded payload with `cwd` set to `root`.
fn recorded(raw: &str, root: &Path) -> Value {
    let mut v: Value = serde_json::from_str(raw).unwrap();
    v["cwd"] = json!(root);
    v
}

/// A `PostToolUse` payload as Claude Code 2.x sends it for `tool`.
fn post_tool_use(root: &Path, tool: &str, input: Value, response: Value) -> Value {
    json!({
        "session_id": "0b7a4c52-5d0e-4a51-9d7e-3c1f1a2b9e10",
        "transcript_path": "/home/dev/.claude/projects/-home-dev-project/0b7a4c52.jsonl",
        "cwd": root,
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_response": response,
        "tool_use_id": format!("toolu_01{}", tool.len()),
        "duration_ms": 12,
    })
}

/// Runs a hook binary as Claude Code would: payload on stdin, in the project folder, with the
/// test's model folder and without the recursion guard or Claude's project variable.
fn run_hook_in(dir: &Path, p: &Project, bin: &str, args: &[&str], stdin: &[u8]) -> Output {
    run_hook_env(dir, p, bin, args, stdin, &[])
}

fn run_hook_env(
    dir: &Path,
    p: &Project,
    bin: &str,
    args: &[&str],
    stdin: &[u8],
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .current_dir(dir)
        .env("AI_SMARTNESS_DATA_DIR", &p.data_dir)
        .env_remove("AI_SMARTNESS_HOOK_RUNNING")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin_pipe = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    // A writer thread: the hook may stop reading early (oversized payloads) and we must not block.
    let writer = std::thread::spawn(move || {
        let _ = stdin_pipe.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn run_hook(p: &Project, bin: &str, args: &[&str], payload: &Value) -> Output {
    run_hook_in(p.root(), p, bin, args, payload.to_string().as_bytes())
}

/// Exit 0 and nothing on stdout: what every failure and every capture must look like.
#[track_caller]
fn assert_silent_success(out: &Output, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: exit status; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "{what}: stdout must stay empty, got {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// When an inject hook printed something, it is exactly one `hookSpecificOutput` object for
/// `event` with a non-empty context under Claude Code's preview limit. Returns the context.
#[track_caller]
fn check_injection(out: &Output, event: &str) -> Option<String> {
    assert_eq!(out.status.code(), Some(0), "{event}: exit status");
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    if text.is_empty() {
        return None;
    }
    assert!(
        text.ends_with('\n') && text.trim_end().lines().count() == 1,
        "one line: {text:?}"
    );
    let v: Value = serde_json::from_str(text.trim_end()).unwrap();
    let obj = v.as_object().unwrap();
    assert_eq!(obj.len(), 1, "only hookSpecificOutput: {v}");
    let inner = v["hookSpecificOutput"].as_object().unwrap();
    assert_eq!(inner.len(), 2, "{v}");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], event);
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !context.trim().is_empty(),
        "an empty context is not printed"
    );
    assert!(context.chars().count() <= 9_000, "{}", context.len());
    Some(context)
}

fn read_log(p: &Project, name: &str) -> String {
    std::fs::read_to_string(p.paths.hook_log(name)).unwrap_or_default()
}

fn error_count(p: &Project, hook: &str) -> u64 {
    std::fs::read(p.paths.ai_dir.join("hooks").join(format!("{hook}.json")))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["errors"].as_u64())
        .unwrap_or(0)
}

/// Every stored message (content and metadata), read from the daemon.
fn all_messages(p: &Project) -> Vec<Value> {
    let mut out = Vec::new();
    for t in p.threads("all") {
        let d = p.request(json!({"thread": {"id": t["id"]}}));
        out.extend(d["messages"].as_array().unwrap().iter().cloned());
    }
    out
}

#[test]
fn recorded_post_tool_use_bash_is_captured() {
    let mut p = Project::new();
    p.start();
    let out = run_hook(
        &p,
        crate::harness::hook_bin("ai-capture"),
        &[],
        &recorded(REC_POST_TOOL_USE_BASH, p.root()),
    );
    assert_silent_success(&out, "PostToolUse Bash");
    p.sync();
    let messages = all_messages(&p);
    let m = messages
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .contains("the-memory-daemon-test-output-with-enough-characters")
        })
        .unwrap_or_else(|| panic!("not captured: {messages:?}"));
    assert!(m["content"].as_str().unwrap().contains("$ echo"), "{m}");
    assert_eq!(m["metadata"]["tool_use_id"], "toolu_1");
    assert_eq!(
        m["metadata"]["session_id"],
        "ecb0f686-b16e-4e8d-8658-284c2dd78479"
    );
    assert!(read_log(&p, "capture").contains("INFO: captured Bash"));
    assert_eq!(error_count(&p, "ai-capture"), 0);
}

#[test]
fn recorded_stop_captures_the_last_answer() {
    let mut p = Project::new();
    p.start();
    let mut stop = recorded(REC_STOP, p.root());
    let answer = "The connection pool now releases connections before the HTTP call, so the billing service no longer times out under load.";
    stop["last_assistant_message"] = json!(answer);
    assert_silent_success(
        &run_hook(&p, crate::harness::hook_bin("ai-capture"), &[], &stop),
        "Stop",
    );
    // Claude continuing because of a Stop hook: still an answer, still no output.
    let again = "Second answer after a stop hook: the readiness probe now checks port 8080 like the container.";
    stop["stop_hook_active"] = json!(true);
    stop["last_assistant_message"] = json!(again);
    assert_silent_success(
        &run_hook(&p, crate::harness::hook_bin("ai-capture"), &[], &stop),
        "Stop, hook active",
    );
    // The recorded message is too short to keep, and an empty one is skipped: no error either.
    let short = recorded(REC_STOP, p.root());
    assert_silent_success(
        &run_hook(&p, crate::harness::hook_bin("ai-capture"), &[], &short),
        "short Stop",
    );
    stop["last_assistant_message"] = json!("");
    assert_silent_success(
        &run_hook(&p, crate::harness::hook_bin("ai-capture"), &[], &stop),
        "empty Stop",
    );
    p.sync();
    let messages = all_messages(&p);
    for text in [answer, again] {
        let m = messages
            .iter()
            .find(|m| m["content"].as_str().unwrap().contains(text))
            .unwrap_or_else(|| panic!("{text} not captured: {messages:?}"));
        assert_eq!(m["source"], "assistant", "{m}");
    }
    assert_eq!(error_count(&p, "ai-capture"), 0);
}

#[test]
fn recorded_prompt_and_session_start_answer_in_the_hook_shape() {
    let mut p = Project::new();
    p.start();
    for t in TOPICS {
        p.capture("Bash", t);
    }
    p.sync();
    let prompt = recorded(REC_USER_PROMPT_SUBMIT, p.root());
    let out = run_hook(&p, crate::harness::hook_bin("ai-inject"), &[], &prompt);
    check_injection(&out, "UserPromptSubmit");

    // Some IDE front ends send `message` instead of `prompt`.
    let mut by_message = prompt.clone();
    let asked = "Why does the PostgreSQL connection pool time out under load in staging?";
    by_message.as_object_mut().unwrap().remove("prompt");
    by_message["message"] = json!(asked);
    let out = run_hook(&p, crate::harness::hook_bin("ai-inject"), &[], &by_message);
    check_injection(&out, "UserPromptSubmit");
    assert!(
        !read_log(&p, "inject").contains("ERROR"),
        "{}",
        read_log(&p, "inject")
    );

    let start = recorded(REC_SESSION_START, p.root());
    let out = run_hook(
        &p,
        crate::harness::hook_bin("ai-inject"),
        &["--session-start"],
        &start,
    );
    check_injection(&out, "SessionStart");
    // Dispatch is on `hook_event_name`, with or without the flag.
    let out = run_hook(&p, crate::harness::hook_bin("ai-inject"), &[], &start);
    check_injection(&out, "SessionStart");

    // The daemon captures the prompt itself: the hook never sends it a second time.
    p.sync();
    let texts = p.all_message_texts();
    let n = texts.iter().filter(|t| t.contains(asked)).count();
    assert!(n <= 1, "prompt stored {n} times");
    assert_eq!(error_count(&p, "ai-inject"), 0);
}

#[test]
fn an_empty_context_prints_nothing() {
    let mut p = Project::new();
    p.start();
    // Nothing in memory: nothing can be relevant.
    let prompt = recorded(REC_USER_PROMPT_SUBMIT, p.root());
    let out = run_hook(&p, crate::harness::hook_bin("ai-inject"), &[], &prompt);
    assert_silent_success(&out, "inject on an empty memory");
    // An empty prompt is not even sent.
    let mut empty = prompt.clone();
    empty["prompt"] = json!("");
    assert_silent_success(
        &run_hook(&p, crate::harness::hook_bin("ai-inject"), &[], &empty),
        "empty prompt",
    );
    assert_eq!(error_count(&p, "ai-inject"), 0);
}

#[test]
fn each_tool_shape_is_captured_with_its_key_content() {
    let mut p = Project::new();
    p.start();
    let root = p.root().to_path_buf();
    let file = root.join("src/db/pool.rs");
    let file = file.to_str().unwrap();
    // (payload, strings that must be found in one stored message)
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            post_tool_use(
                &root,
                "Read",
                json!({"file_path": file}),
                json!({"type": "text", "file": {"filePath": file, "content": "pub fn connect_with_retry(url: &str) -> Result<Pool> {\n    // the pool waits 30 s for a free connection before timing out\n    Pool::builder().max_size(20).build(url)\n}\n", "numLines": 4, "startLine": 1, "totalLines": 4}}),
            ),
            vec!["connect_with_retry", "pool.rs"],
        ),
        (
            post_tool_use(
                &root,
                "Edit",
                json!({"file_path": file, "old_string": "max_size(20)", "new_string": "max_size(50)", "replace_all": false}),
                json!({"filePath": file, "oldString": "max_size(20)", "newString": "max_size(50)", "originalFile": "…", "structuredPatch": [{"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 1, "lines": ["-    Pool::builder().max_size(20).build(url)", "+    Pool::builder().max_size(50).build(url)"]}], "userModified": false, "replaceAll": false}),
            ),
            vec!["max_size(50)", "max_size(20)"],
        ),
        (
            post_tool_use(
                &root,
                "Write",
                json!({"file_path": root.join("docs/runbook.md"), "content": "# Runbook\nWhen the billing service times out, check the pool saturation dashboard first."}),
                json!({"type": "create", "filePath": root.join("docs/runbook.md"), "content": "# Runbook", "structuredPatch": []}),
            ),
            vec!["pool saturation dashboard", "runbook.md"],
        ),
        (
            post_tool_use(
                &root,
                "Grep",
                json!({"pattern": "acquire_timeout", "path": root.join("src"), "output_mode": "content"}),
                json!({"mode": "content", "numFiles": 2, "filenames": [], "content": "src/db/pool.rs:12:    .acquire_timeout(Duration::from_secs(30))\nsrc/billing/worker.rs:40:    let conn = pool.acquire_timeout_hint();", "numLines": 2}),
            ),
            vec!["acquire_timeout", "billing/worker.rs"],
        ),
        (
            post_tool_use(
                &root,
                "Glob",
                json!({"pattern": "**/migrations/*.sql"}),
                json!({"filenames": [root.join("db/migrations/0042_add_invoice_index.sql"), root.join("db/migrations/0043_drop_legacy_ledger.sql")], "durationMs": 4, "numFiles": 2, "truncated": false}),
            ),
            vec!["0042_add_invoice_index.sql", "0043_drop_legacy_ledger.sql"],
        ),
        (
            post_tool_use(
                &root,
                "WebFetch",
                json!({"url": "https://docs.rs/deadpool-postgres/latest/deadpool_postgres/", "prompt": "How do I configure the wait timeout?"}),
                json!({"bytes": 48211, "code": 200, "codeText": "OK", "result": "Set PoolConfig.timeouts.wait to bound how long get() waits for a free object; None waits forever.", "durationMs": 812, "url": "https://docs.rs/deadpool-postgres/latest/deadpool_postgres/"}),
            ),
            vec!["timeouts.wait", "deadpool-postgres"],
        ),
        (
            post_tool_use(
                &root,
                "WebSearch",
                json!({"query": "postgres idle_in_transaction_session_timeout pgbouncer"}),
                json!({"query": "postgres idle_in_transaction_session_timeout pgbouncer", "results": [{"tool_use_id": "srvtoolu_01ABCdef", "content": [{"title": "PgBouncer transaction pooling and idle sessions", "url": "https://www.pgbouncer.org/features.html"}, {"title": "Runtime config: idle_in_transaction_session_timeout", "url": "https://www.postgresql.org/docs/current/runtime-config-client.html"}]}, "Transaction pooling returns the server connection after each transaction."], "durationSeconds": 1.9}),
            ),
            vec![
                "PgBouncer transaction pooling and idle sessions",
                "Transaction pooling returns",
            ],
        ),
        (
            post_tool_use(
                &root,
                "Task",
                json!({"description": "Audit pool usage", "prompt": "Find every place that holds a database connection across an HTTP call.\nReport file and line.", "subagent_type": "general-purpose"}),
                json!({"content": [{"type": "text", "text": "Two places hold a connection across HTTP: billing/worker.rs:40 and invoices/sync.rs:88."}], "totalDurationMs": 15000, "totalTokens": 4100, "totalToolUseCount": 6, "usage": {"input_tokens": 10}}),
            ),
            vec!["invoices/sync.rs:88", "Audit pool usage"],
        ),
        (
            post_tool_use(
                &root,
                "mcp__github__get_issue",
                json!({"owner": "acme", "repo": "billing", "issue_number": 1312}),
                json!([{"type": "text", "text": "{\"title\": \"Checkout hangs when the ledger replica lags\", \"body\": \"Customers see a spinner for 30 s; the ledger replica was 4 minutes behind.\", \"state\": \"open\"}"}]),
            ),
            vec![
                "Checkout hangs when the ledger replica lags",
                "replica was 4 minutes behind",
            ],
        ),
    ];
    for (payload, _) in &cases {
        let out = run_hook(&p, crate::harness::hook_bin("ai-capture"), &[], payload);
        assert_silent_success(&out, payload["tool_name"].as_str().unwrap());
    }
    p.sync();
    let messages = all_messages(&p);
    for (payload, keys) in &cases {
        let tool = payload["tool_name"].as_str().unwrap();
        assert!(
            messages.iter().any(|m| {
                let c = m["content"].as_str().unwrap();
                keys.iter().all(|k| c.contains(k))
            }),
            "{tool}: no message holds {keys:?}; log:\n{}\nmessages: {messages:#?}",
            read_log(&p, "capture")
        );
    }
    // The file a tool call is about is kept on the message.
    assert!(
        messages
            .iter()
            .any(|m| m["metadata"]["file_path"] == file && m["metadata"]["tool_use_id"].is_string()),
        "{messages:#?}"
    );
    assert_eq!(
        error_count(&p, "ai-capture"),
        0,
        "{}",
        read_log(&p, "capture")
    );
}

#[test]
fn an_oversized_tool_output_is_cut_not_refused() {
    let mut p = Project::new();
    p.start();
    let mut stdout = String::from("Compiling billing-service v0.4.2 with the new pool settings\n");
    while stdout.len() < 3 << 20 {
        stdout.push_str("warning: unused variable `conn` in src/invoices/sync.rs\n");
    }
    stdout.push_str(
        "error: could not compile `billing-service` due to the lifetime of the pool guard\n",
    );
    let payload = post_tool_use(
        p.root(),
        "Bash",
        json!({"command": "cargo build --release"}),
        json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false}),
    );
    assert_silent_success(
        &run_hook(&p, crate::harness::hook_bin("ai-capture"), &[], &payload),
        "3 MiB Bash output",
    );
    p.sync();
    let texts = p.all_message_texts();
    assert!(
        texts.iter().any(|t| t.contains("$ cargo build --release")),
        "{}",
        read_log(&p, "capture")
    );
    assert_eq!(error_count(&p, "ai-capture"), 0);
}

#[test]
fn daemon_down_the_hooks_exit_clean_and_start_it() {
    let p = Project::new();
    let out = run_hook(
        &p,
        crate::harness::hook_bin("ai-capture"),
        &[],
        &recorded(REC_POST_TOOL_USE_BASH, p.root()),
    );
    assert_silent_success(&out, "capture, daemon down");
    // It did not wait for the daemon it started: the capture is reported lost, not delivered.
    let log = read_log(&p, "capture");
    assert!(
        log.lines().count() == 1 && log.contains("daemon not running") && log.contains("lost"),
        "{log}"
    );
    assert!(
        log.starts_with('[') && log.as_bytes().get(20) == Some(&b']'),
        "[YYYY-MM-DD HH:MM:SS] prefix: {log}"
    );
    assert_eq!(error_count(&p, "ai-capture"), 1);
    let out = run_hook(
        &p,
        crate::harness::hook_bin("ai-inject"),
        &[],
        &recorded(REC_USER_PROMPT_SUBMIT, p.root()),
    );
    assert_eq!(out.status.code(), Some(0));
    // A daemon was started in the background; it comes up on its own.
    p.wait_ready();
    let out = run_hook(
        &p,
        crate::harness::hook_bin("ai-capture"),
        &[],
        &recorded(REC_POST_TOOL_USE_BASH, p.root()),
    );
    assert_silent_success(&out, "capture, daemon up");
    p.sync();
    assert!(p
        .all_message_texts()
        .iter()
        .any(|t| t.contains("the-memory-daemon-test-output")));
}

#[test]
fn bad_input_fails_open() {
    let p = Project::new();
    let root = p.root().to_path_buf();
    let unknown = json!({"hook_event_name": "Notification", "cwd": root, "message": "Claude needs your permission"});
    let oversized = {
        let mut v = vec![b'{'];
        v.resize(17 << 20, b' ');
        v
    };
    for bin in [
        crate::harness::hook_bin("ai-capture"),
        crate::harness::hook_bin("ai-inject"),
        crate::harness::hook_bin("ai-compact"),
    ] {
        let name = Path::new(bin).file_name().unwrap().to_str().unwrap();
        for (what, stdin) in [
            ("garbage", b"this is not json {".to_vec()),
            ("empty", Vec::new()),
            ("not an object", b"[1, 2, 3]".to_vec()),
            ("unknown event", unknown.to_string().into_bytes()),
            ("no event", json!({"cwd": root}).to_string().into_bytes()),
            ("over 16 MiB", oversized.clone()),
        ] {
            let out = run_hook_in(&root, &p, bin, &[], &stdin);
            assert_silent_success(&out, &format!("{name}: {what}"));
        }
        let log_name = name.trim_start_matches("ai-");
        let log = read_log(&p, log_name);
        assert_eq!(log.lines().count(), 6, "one line each:\n{log}");
        assert!(log.lines().all(|l| l.contains("ERROR:")), "{log}");
        assert_eq!(error_count(&p, name), 6);
    }
    // Nothing was captured, and no daemon was started by any of this.
    assert!(
        ai_smartness::client::Client::connect(&p.paths.socket(), Duration::from_millis(200))
            .is_err()
    );
}

#[test]
fn the_recursion_guard_does_nothing_at_all() {
    let p = Project::new();
    let payloads = [
        (
            crate::harness::hook_bin("ai-capture"),
            recorded(REC_POST_TOOL_USE_BASH, p.root()),
        ),
        (
            crate::harness::hook_bin("ai-inject"),
            recorded(REC_USER_PROMPT_SUBMIT, p.root()),
        ),
        (
            crate::harness::hook_bin("ai-compact"),
            json!({"hook_event_name": "PreCompact", "cwd": p.root(), "trigger": "auto"}),
        ),
    ];
    for (bin, payload) in payloads {
        let out = run_hook_env(
            p.root(),
            &p,
            bin,
            &[],
            payload.to_string().as_bytes(),
            &[("AI_SMARTNESS_HOOK_RUNNING", "1")],
        );
        assert_silent_success(&out, bin);
    }
    // No log at all: a hook that starts a daemon always logs it, so none was started either.
    for log in ["capture", "inject", "compact"] {
        assert!(!p.paths.hook_log(log).exists(), "{log}.log written");
    }
    for hook in ["ai-capture", "ai-inject", "ai-compact"] {
        assert_eq!(error_count(&p, hook), 0, "{hook}");
    }
}

#[test]
fn a_project_without_ai_folder_is_left_alone() {
    let p = Project::new();
    let other = tempfile::Builder::new()
        .prefix("aitx")
        .tempdir_in("/tmp")
        .unwrap();
    let dir = other.path();
    for (bin, payload) in [
        (
            crate::harness::hook_bin("ai-capture"),
            recorded(REC_POST_TOOL_USE_BASH, dir),
        ),
        (
            crate::harness::hook_bin("ai-inject"),
            recorded(REC_USER_PROMPT_SUBMIT, dir),
        ),
        (
            crate::harness::hook_bin("ai-compact"),
            json!({"hook_event_name": "PreCompact", "cwd": dir}),
        ),
    ] {
        let out = run_hook_in(dir, &p, bin, &[], payload.to_string().as_bytes());
        assert_silent_success(&out, bin);
        // Garbage there is not even logged: there is no `.ai/` to log into.
        let out = run_hook_in(dir, &p, bin, &[], b"garbage");
        assert_silent_success(&out, bin);
    }
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        0,
        "nothing created"
    );
}

#[test]
fn a_daemon_that_never_answers_is_given_up_on_at_the_hooks_timeout() {
    let p = Project::new();
    // A fake daemon: accepts every connection, reads nothing, answers nothing.
    let listener = UnixListener::bind(p.paths.socket()).unwrap();
    std::fs::set_permissions(
        p.paths.socket(),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    listener.set_nonblocking(true).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let acceptor = std::thread::spawn(move || {
        let mut held = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            match listener.accept() {
                Ok((s, _)) => held.push(s),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
            if rx.try_recv().is_ok() {
                break;
            }
        }
        held.len()
    });
    let runs = [
        (
            crate::harness::hook_bin("ai-capture"),
            &[][..],
            recorded(REC_POST_TOOL_USE_BASH, p.root()),
        ),
        (
            crate::harness::hook_bin("ai-inject"),
            &[][..],
            recorded(REC_USER_PROMPT_SUBMIT, p.root()),
        ),
        (
            crate::harness::hook_bin("ai-inject"),
            &["--session-start"][..],
            recorded(REC_SESSION_START, p.root()),
        ),
    ];
    for (bin, args, payload) in runs {
        // Returns on its own timeout (its log says so below): never waits for an answer.
        let out = run_hook(&p, bin, args, &payload);
        assert_silent_success(&out, bin);
    }
    tx.send(()).unwrap();
    assert_eq!(acceptor.join().unwrap(), 3, "every hook connected");
    // The README's timeouts: 0.5 s for a prompt and a capture.
    assert!(read_log(&p, "capture").contains("did not answer within 500 ms"));
    assert!(read_log(&p, "inject").contains("did not answer within 500 ms"));
    assert_eq!(error_count(&p, "ai-inject"), 2);
}

#[test]
fn a_daemon_that_cannot_accept_costs_a_hook_no_more_than_its_budget() {
    use socket2::{Domain, SockAddr, Socket, Type};
    let p = Project::new();
    let socket = p.paths.socket();
    // A hung daemon: it listens, with the shortest queue, and never accepts.
    let listener = Socket::new(Domain::UNIX, Type::STREAM, None).unwrap();
    let addr = SockAddr::unix(&socket).unwrap();
    listener.bind(&addr).unwrap();
    listener.listen(0).unwrap();
    std::fs::set_permissions(&socket, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    // Its queue, filled by connections nobody accepts.
    let mut queued = Vec::new();
    loop {
        let c = Socket::new(Domain::UNIX, Type::STREAM, None).unwrap();
        c.set_nonblocking(true).unwrap();
        match c.connect(&addr) {
            Ok(()) => queued.push(c),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
        assert!(queued.len() < 64, "the queue never filled");
    }
    let runs = [
        (
            crate::harness::hook_bin("ai-capture"),
            &[][..],
            recorded(REC_POST_TOOL_USE_BASH, p.root()),
        ),
        (
            crate::harness::hook_bin("ai-inject"),
            &[][..],
            recorded(REC_USER_PROMPT_SUBMIT, p.root()),
        ),
        (
            crate::harness::hook_bin("ai-inject"),
            &["--session-start"][..],
            recorded(REC_SESSION_START, p.root()),
        ),
    ];
    for (bin, args, payload) in runs {
        let started = Instant::now();
        let out = run_hook(&p, bin, args, &payload);
        let took = started.elapsed();
        assert_silent_success(&out, bin);
        // The budgets are 0.5 s and 2 s; a connect that waits for the queue took 15 s and more.
        assert!(
            took < Duration::from_secs(5),
            "{bin} {args:?} took {took:?}"
        );
    }
    assert!(
        read_log(&p, "capture").contains("did not accept the connection within 500 ms"),
        "{}",
        read_log(&p, "capture")
    );
    let inject = read_log(&p, "inject");
    assert!(
        inject.contains("did not accept the connection within 500 ms"),
        "{inject}"
    );
    assert!(
        inject.contains("did not accept the connection within 2000 ms"),
        "{inject}"
    );
    drop(queued);
}

#[test]
fn compact_writes_the_synthesis_and_prints_nothing() {
    let mut p = Project::new();
    p.start();
    for t in TOPICS {
        p.capture("Bash", t);
    }
    p.sync();
    let payload = json!({
        "session_id": "ecb0f686-b16e-4e8d-8658-284c2dd78479",
        "transcript_path": "/home/dev/.claude/projects/-home-dev-project/ecb0f686.jsonl",
        "cwd": p.root(),
        "hook_event_name": "PreCompact",
        "trigger": "manual",
        "custom_instructions": "",
    });
    let out = run_hook(&p, crate::harness::hook_bin("ai-compact"), &[], &payload);
    assert_silent_success(&out, "PreCompact");
    // needs daemon compact: the synthesis file exists once the daemon said it wrote it.
    if read_log(&p, "compact").contains("INFO: synthesis written") {
        let dir = p.paths.db().join("synthesis");
        let found = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten().any(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("synthesis_") && n.ends_with(".json")
                })
            })
            .unwrap_or(false);
        assert!(found, "no synthesis_*.json in {}", dir.display());
    }
    // The SessionStart after a compaction carries it back.
    let mut start = recorded(REC_SESSION_START, p.root());
    start["source"] = json!("compact");
    let out = run_hook(
        &p,
        crate::harness::hook_bin("ai-inject"),
        &["--session-start"],
        &start,
    );
    check_injection(&out, "SessionStart");
}
