//! `ai-capture`: Claude Code's `PostToolUse` (matcher `*`) and `Stop` hook.
//!
//! Turns a tool call into readable text (what a person would want to remember of it: the
//! command and its output, the file and its content, the edit) and hands it to the daemon,
//! which journals it and answers at once. The hook never waits for extraction or embedding,
//! and never prints anything: stdout of these events is not shown to the model anyway, and
//! `Stop` output could keep the session going.

use ai_smartness_hooks::content::{build_content, file_path, Built};
use ai_smartness_hooks::{Ctx, Failure, Hook, Outcome};
use ai_smartness_proto::protocol::{CaptureRequest, MAX_FRAME_BYTES};
use serde_json::{Map, Value};
use std::process::ExitCode;
use std::time::Duration;

static HOOK: Hook = Hook {
    name: "ai-capture",
    log: "capture",
};

/// The daemon answers once the capture is fsynced to its journal: milliseconds. Past this the
/// hook gives up (the capture may still have been journaled).
const READ_TIMEOUT: Duration = Duration::from_millis(500);

/// Content beyond this is cut in the middle: a request line must stay under the 1 MiB frame
/// limit (the daemon keeps 256 KiB of it by default).
const MAX_CONTENT_BYTES: usize = 512 << 10;

fn main() -> ExitCode {
    ai_smartness_hooks::run(&HOOK, body)
}

fn body(ctx: &Ctx) -> Result<Outcome, Failure> {
    let mut metadata = Map::new();
    if let Some(cwd) = ctx.str_field("cwd") {
        metadata.insert("cwd".into(), cwd.into());
    }
    let (tool, content, source) = match ctx.event() {
        Some("PostToolUse") => {
            let tool = ctx
                .str_field("tool_name")
                .ok_or_else(|| Failure::error("PostToolUse without `tool_name`"))?;
            let null = Value::Null;
            let input = ctx.payload.get("tool_input").unwrap_or(&null);
            let response = ctx.payload.get("tool_response").unwrap_or(&null);
            let built = match build_content(tool, input, response) {
                Built::Text(text) => text,
                Built::Skip(why) => return Ok(Outcome::Skipped(format!("{tool}: {why}"))),
            };
            if let Some(id) = ctx.str_field("tool_use_id") {
                metadata.insert("tool_use_id".into(), id.into());
            }
            if let Some(path) = file_path(input, response) {
                metadata.insert("file_path".into(), path.into());
            }
            (tool.to_string(), built, None)
        }
        Some("Stop") => {
            // `stop_hook_active` only means Claude is continuing because of a Stop hook: the
            // message is still an answer worth keeping, and this hook prints nothing anyway.
            let Some(answer) = ctx.str_field("last_assistant_message") else {
                return Ok(Outcome::Skipped("Stop without an assistant message".into()));
            };
            (
                "Response".to_string(),
                answer.to_string(),
                Some("assistant".to_string()),
            )
        }
        Some(other) => return Err(Failure::error(format!("unknown event `{other}`"))),
        None => return Err(Failure::error("payload without `hook_event_name`")),
    };
    if content.trim().is_empty() {
        return Ok(Outcome::Skipped(format!("{tool}: nothing to capture")));
    }
    let mut request = CaptureRequest {
        tool,
        content: cut_middle(&content, MAX_CONTENT_BYTES),
        at: None,
        source,
        session_id: ctx.session_id(),
        metadata: Some(metadata),
        hook: Some(HOOK.name.to_string()),
    };
    let line = encode(&mut request)?;
    let result = ctx.call_line(&line, READ_TIMEOUT).map_err(|f| match f {
        // Fail open, but say what was lost.
        Failure::DaemonDown(m) => {
            Failure::DaemonDown(format!("{m}; {} capture lost", request.tool))
        }
        other => other,
    })?;
    let seq = result
        .get("seq")
        .and_then(Value::as_u64)
        .map(|s| format!(", seq {s}"))
        .unwrap_or_default();
    Ok(Outcome::Done {
        note: format!(
            "captured {} ({} bytes{seq})",
            request.tool,
            request.content.len()
        ),
        stdout: None,
    })
}

/// The request line, with the content cut further when JSON escaping pushes it over the frame
/// limit (control characters escape to six bytes each).
fn encode(request: &mut CaptureRequest) -> Result<Vec<u8>, Failure> {
    loop {
        let mut line = serde_json::to_vec(&*request)
            .map_err(|e| Failure::error(format!("cannot encode the capture: {e}")))?;
        if line.len() <= MAX_FRAME_BYTES {
            line.push(b'\n');
            return Ok(line);
        }
        if request.content.len() < 1024 {
            return Err(Failure::error(format!(
                "capture of {} does not fit in a request ({} bytes)",
                request.tool,
                line.len()
            )));
        }
        request.content = cut_middle(&request.content, request.content.len() / 2);
    }
}

/// At most `max_bytes`: the head and the tail (where errors and summaries are), with a marker.
fn cut_middle(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let marker = format!(
        "\n[… {} bytes cut by ai-capture …]\n",
        text.len() - max_bytes
    );
    let keep = max_bytes.saturating_sub(marker.len());
    let mut head = keep / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (keep - keep / 2);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    let mut out = String::with_capacity(max_bytes);
    out.push_str(&text[..head]);
    out.push_str(&marker);
    out.push_str(&text[tail..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn built(tool: &str, input: Value, response: Value) -> String {
        match build_content(tool, &input, &response) {
            Built::Text(t) => t,
            Built::Skip(why) => panic!("skipped: {why}"),
        }
    }

    #[test]
    fn bash_is_the_command_then_its_output() {
        let t = built(
            "Bash",
            json!({"command": "cargo test", "description": "run tests"}),
            json!({"stdout": "test result: ok. 3 passed\n", "stderr": "warning: unused", "interrupted": false, "isImage": false}),
        );
        assert_eq!(
            t,
            "$ cargo test\ntest result: ok. 3 passed\nwarning: unused"
        );
        assert_eq!(
            build_content("Bash", &json!({"command": "x"}), &json!({"isImage": true})),
            Built::Skip("the output is an image")
        );
    }

    #[test]
    fn read_edit_write() {
        let t = built(
            "Read",
            json!({"file_path": "/p/src/main.rs"}),
            json!({"type": "text", "file": {"filePath": "/p/src/main.rs", "content": "fn main() {}\n", "numLines": 1}}),
        );
        assert_eq!(t, "/p/src/main.rs\nfn main() {}");
        let t = built(
            "Read",
            json!({"file_path": "/p/logo.png"}),
            json!({"type": "image", "file": {"base64": "AAAA", "type": "image/png"}}),
        );
        assert_eq!(t, "/p/logo.png (image)");
        let t = built(
            "Edit",
            json!({"file_path": "/p/a.rs", "old_string": "x", "new_string": "y"}),
            json!({"filePath": "/p/a.rs", "structuredPatch": [{"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 2, "lines": [" keep", "-x", "+y"]}]}),
        );
        assert_eq!(t, "/p/a.rs\n@@ -3,1 +3,2 @@\n keep\n-x\n+y");
        let t = built(
            "MultiEdit",
            json!({"file_path": "/p/a.rs", "edits": [{"old_string": "a1", "new_string": "b1"}, {"old_string": "a2", "new_string": "b2"}]}),
            json!({}),
        );
        assert_eq!(t, "/p/a.rs\nold:\na1\nnew:\nb1\nold:\na2\nnew:\nb2");
        let t = built(
            "Write",
            json!({"file_path": "/p/b.md", "content": "# Notes\n"}),
            json!({"type": "create", "filePath": "/p/b.md"}),
        );
        assert_eq!(t, "/p/b.md\n# Notes");
    }

    #[test]
    fn search_tools() {
        let t = built(
            "Grep",
            json!({"pattern": "fn main", "path": "src"}),
            json!({"mode": "files_with_matches", "filenames": ["src/main.rs", "src/bin/x.rs"], "numFiles": 2}),
        );
        assert_eq!(t, "grep fn main in src\nsrc/main.rs\nsrc/bin/x.rs");
        let t = built(
            "Glob",
            json!({"pattern": "**/*.toml"}),
            json!({"filenames": ["Cargo.toml"], "numFiles": 1}),
        );
        assert_eq!(t, "glob **/*.toml\nCargo.toml");
        let t = built(
            "WebSearch",
            json!({"query": "tokio timeout"}),
            json!({"query": "tokio timeout", "results": [{"tool_use_id": "srvtoolu_1", "content": [{"title": "Timeouts", "url": "https://tokio.rs/t"}]}, "Use tokio::time::timeout."]}),
        );
        assert_eq!(
            t,
            "web search: tokio timeout\nTimeouts — https://tokio.rs/t\nUse tokio::time::timeout."
        );
    }

    #[test]
    fn tasks_and_unknown_tools() {
        let t = built(
            "Task",
            json!({"description": "Find the pool", "prompt": "Look for the pool\nin detail"}),
            json!({"content": [{"type": "text", "text": "The pool is in db/pool.rs"}], "totalTokens": 9}),
        );
        assert_eq!(
            t,
            "Task: Find the pool\nLook for the pool\nThe pool is in db/pool.rs"
        );
        let t = built(
            "mcp__github__get_issue",
            json!({"number": 7}),
            json!([{"type": "text", "text": "{\"title\": \"Crash\"}"}]),
        );
        let back: Value = serde_json::from_str(&t).unwrap();
        assert_eq!(back["input"]["number"], 7);
        // An unexpected shape for a known tool falls back to the document too.
        let t = built("Read", json!({}), json!({"weird": "shape"}));
        assert!(t.starts_with('{'), "{t}");
    }

    #[test]
    fn cutting_keeps_head_and_tail_on_char_boundaries() {
        let text = format!("{}{}", "é".repeat(1000), "z".repeat(1000));
        let cut = cut_middle(&text, 1000);
        assert!(cut.len() <= 1000, "{}", cut.len());
        assert!(cut.starts_with('é') && cut.ends_with('z'));
        assert!(cut.contains("cut by ai-capture"));
        assert_eq!(cut_middle("short", 10), "short");
    }

    #[test]
    fn escaping_never_exceeds_the_frame() {
        let mut r = CaptureRequest {
            tool: "Bash".into(),
            content: cut_middle(&"\u{1}".repeat(600 << 10), MAX_CONTENT_BYTES),
            at: None,
            source: None,
            session_id: None,
            metadata: None,
            hook: None,
        };
        let line = encode(&mut r).unwrap();
        assert!(line.len() <= MAX_FRAME_BYTES + 1);
    }
}
