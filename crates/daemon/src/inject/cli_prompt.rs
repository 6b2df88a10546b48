//! "CLI in prompt": a prompt that is exactly an `ai` command runs that
//! command inside the daemon and injects its output. Only the listed read and steer commands
//! exist here; nothing is ever handed to a shell.

use crate::protocol::{BridgesQuery, Command, ThreadQuery, ThreadsQuery};
use crate::replies::render as output;
use crate::router;
use crate::state::Daemon;
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

const HELP: &str = "ai-smartness commands usable in a prompt:
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

/// Runs the command and returns the text to inject, in the format inject uses.
pub async fn run(daemon: &Daemon, cmd: &CliCommand) -> String {
    let body = execute(daemon, cmd).await;
    let shown = if cmd.args.is_empty() {
        format!("ai {}", cmd.name)
    } else {
        format!("ai {} {}", cmd.name, cmd.args)
    };
    format!(
        "<system-reminder>\nCLI Command: {shown}\n\n{}\n</system-reminder>\n\nThe user executed a CLI command. Summarize the result above briefly.",
        body.trim_end()
    )
}

/// The reply rendered as the CLI renders it, or its error.
fn result_or_error<T: serde::de::DeserializeOwned>(
    r: crate::protocol::Response,
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
fn flag_value<'a>(args: &'a [&'a str], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| *a == flag)
        .and_then(|i| args.get(i + 1))
        .copied()
}

async fn execute(daemon: &Daemon, cmd: &CliCommand) -> String {
    let args: Vec<&str> = cmd.args.split_whitespace().collect();
    match cmd.name.as_str() {
        "status" => output::status(&router::status(daemon)),
        "health" => output::health(&router::health(daemon)),
        "help" => HELP.to_string(),
        "threads" => {
            let status = flag_value(&args, "--status").map(str::to_string);
            let show_weight = args.contains(&"--show-weight");
            let r = Box::pin(router::command(daemon, Command::Threads(ThreadsQuery { status, limit: Some(30) }))).await;
            result_or_error(r, |v| output::threads(v, show_weight))
        }
        "thread" => match args.first() {
            Some(id) => {
                let r = Box::pin(router::command(daemon, Command::Thread(ThreadQuery { id: id.to_string(), offset: None, limit: None }))).await;
                result_or_error(r, output::thread)
            }
            None => {
                let r = Box::pin(router::command(daemon, Command::Threads(ThreadsQuery { status: None, limit: Some(30) }))).await;
                result_or_error(r, |v| output::threads(v, false))
            }
        },
        "bridges" | "bridge" => {
            let thread = flag_value(&args, "--thread").map(str::to_string);
            let show_weight = args.contains(&"--show-weight");
            let r = Box::pin(router::command(daemon, Command::Bridges(BridgesQuery { thread }))).await;
            result_or_error(r, |v| output::bridges(v, show_weight))
        }
        "search" => {
            if cmd.args.is_empty() {
                return "usage: ai search QUERY".into();
            }
            let r = router::search(daemon, &cmd.args, 10).await;
            result_or_error(r, output::search)
        }
        "mode" => {
            let set = args.first().filter(|m| **m != "status").copied();
            let r = router::mode(daemon, set).await;
            result_or_error(r, output::mode)
        }
        "reindex" => {
            // A reindex can take longer than a hook may wait: run it in the background.
            let d = daemon.clone();
            let n = daemon.memory().graph.thread_count();
            daemon.spawn(async move {
                if let Err(e) = crate::reindex(&d).await {
                    tracing::error!("reindex from a prompt failed: {e}");
                }
            });
            format!("Reindexing {n} threads in the background with {}.", daemon.embed().kind())
        }
        "daemon" => match args.first().copied().unwrap_or("status") {
            "status" => format!(
                "daemon running (pid {}) on {}",
                std::process::id(),
                daemon.paths().socket().display()
            ),
            other => format!("`ai daemon {other}` controls the daemon answering this prompt: run it in a terminal."),
        },
        other => format!("unknown command {other}"),
    }
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
