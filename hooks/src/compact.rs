//! `ai-compact`: Claude Code's `PreCompact` hook.
//!
//! `PreCompact` cannot add context, so the hook asks the daemon to write the synthesis of the
//! session (`.ai/db/synthesis/`) before the conversation is compacted; `ai-inject` gives it back
//! at the `SessionStart` that follows with `source == "compact"`. It prints nothing, and never
//! exits 2 (that would block the compaction).

use ai_smartness_hooks::{Ctx, Failure, Hook, Outcome};
use ai_smartness_proto::protocol::{Command, CompactRequest, Request};
use serde_json::Value;
use std::process::ExitCode;
use std::time::Duration;

static HOOK: Hook = Hook {
    name: "ai-compact",
    log: "compact",
};

/// The daemon writes a file before answering; compaction is rare and the hook's budget is a
/// minute, so it may take longer than a prompt's lookup.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    ai_smartness_hooks::run(&HOOK, body)
}

fn body(ctx: &Ctx) -> Result<Outcome, Failure> {
    match ctx.event() {
        Some("PreCompact") => {}
        Some(other) => return Err(Failure::error(format!("unknown event `{other}`"))),
        None => return Err(Failure::error("payload without `hook_event_name`")),
    }
    let request = Request::Command(Command::Compact(CompactRequest {
        session_id: ctx.session_id(),
        trigger: ctx.str_field("trigger").map(str::to_string),
    }));
    let result = ctx.call(&request, READ_TIMEOUT)?;
    let written = ["path", "file", "synthesis"]
        .iter()
        .find_map(|k| result.get(*k).and_then(Value::as_str))
        .map(|p| format!(": {p}"))
        .unwrap_or_default();
    Ok(Outcome::Done {
        note: format!(
            "synthesis written ({} compaction){written}",
            ctx.str_field("trigger").unwrap_or("unknown")
        ),
        stdout: None,
    })
}
