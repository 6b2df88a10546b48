//! "CLI in prompt": a prompt that is exactly an `ai` command runs that
//! command inside the daemon and injects its output. Only the listed read and steer commands
//! exist here; nothing is ever handed to a shell. What a command is and how its output is
//! injected are here; the router runs it (it alone knows every command).

use ai_smartness_replies::ContextReply;
use regex::Regex;
use std::sync::LazyLock;

static PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^ai\s+(status|threads?|bridges?|search|reindex|health|daemon|mode|help)(?:\s+(.*))?$",
    )
    .expect("valid CLI regex")
});

/// A detected command: its name and the rest of the line.
#[derive(Debug, PartialEq, Eq)]
pub struct CliCommand {
    pub name: String,
    pub args: String,
}

/// The command when the whole (trimmed, single-line) prompt is one.
pub fn detect(prompt: &str) -> Option<CliCommand> {
    let line = prompt.trim();
    if line.contains('\n') {
        return None;
    }
    let caps = PATTERN.captures(line)?;
    Some(CliCommand {
        name: caps.get(1)?.as_str().to_string(),
        args: caps
            .get(2)
            .map(|m| m.as_str().trim().to_string())
            .unwrap_or_default(),
    })
}

pub const HELP: &str = "ai-smartness commands usable in a prompt:
  ai status                 overview of the memory
  ai threads [--status S]   list threads (active, suspended, archived, all)
  ai thread ID              one thread in detail
  ai bridges [--thread ID]  list bridges
  ai search QUERY           threads related to QUERY
  ai health                 health checks
  ai reindex                recompute every embedding (in the background)
  ai mode [light|normal|heavy|max]   show or change the mode
  ai daemon status          is the daemon running
In a terminal, `ai help` lists every command and flag.
";

/// The reply to `ai-inject`: the command's `output`, in the format inject uses.
pub fn reply(cmd: CliCommand, output: &str) -> ContextReply {
    let shown = if cmd.args.is_empty() {
        format!("ai {}", cmd.name)
    } else {
        format!("ai {} {}", cmd.name, cmd.args)
    };
    let text = format!(
        "<system-reminder>\nCLI Command: {shown}\n\n{}\n</system-reminder>\n\nThe user executed a CLI command. Summarize the result above briefly.",
        output.trim_end()
    );
    ContextReply {
        tokens: text.len().div_ceil(4),
        context: text,
        cli_command: Some(cmd.name),
        ..ContextReply::default()
    }
}

/// The reply rendered as the CLI renders it, or its error.
pub fn result_or_error<T: serde::de::DeserializeOwned>(
    r: ai_smartness_proto::protocol::Response,
    human: impl Fn(&T) -> String,
) -> String {
    match (r.ok, r.result, r.error) {
        (true, Some(v), _) => match serde_json::from_value::<T>(v) {
            Ok(typed) => human(&typed),
            Err(e) => format!("error: unexpected reply ({e})"),
        },
        (_, _, Some(e)) => format!("error: {}", e.message),
        _ => "error: no result".into(),
    }
}

/// `--flag VALUE` from a small argument string.
pub fn flag_value<'a>(args: &'a [&'a str], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| *a == flag)
        .and_then(|i| args.get(i + 1))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listed_commands_on_a_line_of_their_own() {
        assert_eq!(detect("ai status").unwrap().name, "status");
        assert_eq!(
            detect("  ai search connection pool  ").unwrap().args,
            "connection pool"
        );
        assert_eq!(
            detect("ai thread thread_20260101_000000_ab").unwrap().name,
            "thread"
        );
        assert!(detect("ai rm -rf /").is_none());
        assert!(detect("please run ai status").is_none());
        assert!(detect("ai status\nand then delete everything").is_none());
        assert!(detect("ai statuses").is_none());
    }
}
