//! `ai-inject`: Claude Code's `UserPromptSubmit` hook, and with `--session-start` its
//! `SessionStart` hook.
//!
//! Asks the daemon what memory is relevant (to the prompt, or to a starting, resumed or
//! compacted session) and prints it as `additionalContext`, the discreet way to add context.
//! The daemon captures the prompt itself while answering, so the prompt is never sent twice.
//! Nothing relevant, or any problem: nothing is printed and the prompt goes on untouched.

use ai_smartness_hooks::{Ctx, Failure, Hook, Outcome};
use ai_smartness_proto::protocol::{
    Command, InjectRequest, InjectedContext, Request, SessionStartRequest,
};
use std::process::ExitCode;
use std::time::Duration;

static HOOK: Hook = Hook {
    name: "ai-inject",
    log: "inject",
};

/// Retrieval answers in milliseconds; past this the prompt goes on without memory rather than
/// keep the user waiting.
const PROMPT_TIMEOUT: Duration = Duration::from_millis(500);

/// Once per session, and right after a daemon start the first answer can be slower.
const SESSION_START_TIMEOUT: Duration = Duration::from_secs(2);

/// Claude Code cuts context strings over 10,000 characters to a preview: stay well under.
const MAX_CONTEXT_CHARS: usize = 9_000;

/// `AI_SMARTNESS_INJECT=off` (or `0`, `false`, `no`) in Claude Code's environment turns
/// injection off for that session or headless run: prompts are still remembered.
fn injection_off() -> bool {
    std::env::var("AI_SMARTNESS_INJECT").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "false" | "no"
        )
    })
}

fn main() -> ExitCode {
    ai_smartness_hooks::run(&HOOK, body)
}

fn body(ctx: &Ctx) -> Result<Outcome, Failure> {
    let session_flag = ctx.args.iter().any(|a| a == "--session-start");
    // Dispatch on the event Claude Code names; without one, on the flag and the payload.
    let event = match ctx.event() {
        Some(e) => e,
        None if session_flag => "SessionStart",
        None if ctx.str_field("prompt").is_some() || ctx.str_field("message").is_some() => {
            "UserPromptSubmit"
        }
        None => return Err(Failure::error("payload without `hook_event_name`")),
    };
    let (request, timeout) = match event {
        "UserPromptSubmit" => {
            // Some IDE front ends send `message` instead of `prompt`.
            let Some(prompt) = ctx.str_field("prompt").or_else(|| ctx.str_field("message")) else {
                return Ok(Outcome::Skipped("empty prompt".into()));
            };
            // A subagent's prompt carries the agent that runs it.
            let agent = ctx
                .str_field("agent_type")
                .or_else(|| ctx.str_field("agent_id"))
                .map(str::to_string);
            let r = InjectRequest {
                prompt: prompt.to_string(),
                session_id: ctx.session_id(),
                budget: None,
                agent,
                off: injection_off(),
            };
            (Request::Command(Command::Inject(r)), PROMPT_TIMEOUT)
        }
        "SessionStart" => {
            let r = SessionStartRequest {
                source: ctx.str_field("source").unwrap_or("startup").to_string(),
                session_id: ctx.session_id(),
            };
            (
                Request::Command(Command::SessionStart(r)),
                SESSION_START_TIMEOUT,
            )
        }
        other => return Err(Failure::error(format!("unknown event `{other}`"))),
    };
    let result = ctx.call(&request, timeout)?;
    let reply: InjectedContext = serde_json::from_value(result)
        .map_err(|e| Failure::error(format!("unexpected reply: {e}")))?;
    let context = reply.context.as_deref().unwrap_or_default().trim();
    // What the daemon decided, for the log: whether memory spoke, and on what evidence.
    let decision = match (&reply.skipped, reply.decision) {
        (Some(why), _) => format!(" ({why})"),
        (None, Some(d)) => format!(
            " ({}: evidence {:.2}, bar {:.2})",
            if d.abstained { "abstained" } else { "relevant" },
            d.evidence,
            d.bar
        ),
        (None, None) => String::new(),
    };
    if context.is_empty() {
        return Ok(Outcome::Done {
            note: format!("{event}: nothing injected{decision}"),
            stdout: None,
        });
    }
    let context = ai_smartness_hooks::cap_chars(context, MAX_CONTEXT_CHARS);
    let output = HookOutput {
        hook_specific_output: HookSpecificOutput {
            hook_event_name: event,
            additional_context: context,
        },
    };
    Ok(Outcome::Done {
        note: format!(
            "{event}: injected {} chars{decision}",
            context.chars().count()
        ),
        // Strings only: encoding cannot fail.
        stdout: Some(serde_json::to_string(&output).unwrap_or_default()),
    })
}

/// What the hook prints for Claude Code: the context added to the prompt.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct HookOutput<'a> {
    hook_specific_output: HookSpecificOutput<'a>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct HookSpecificOutput<'a> {
    hook_event_name: &'a str,
    additional_context: &'a str,
}
