//! `ai run "TASK"`, `ai run reverify|repair|export|show RUN`, `ai runs`: workflow runs from a
//! terminal. A started run is followed live (its events, as text or as JSON lines).

use super::{into_result, Ctx};
use crate::protocol::{Command, Request, RunAction, RunRequest, WatchRequest};
use ai_smartness_replies::{RunList, RunShown, RunStarted};
use anyhow::{bail, Result};
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;

fn request(action: RunAction, id: Option<String>) -> RunRequest {
    RunRequest {
        action,
        id,
        task: None,
        sandbox: None,
        write: None,
    }
}

/// `ai run ...`: a task, or an action on a run.
pub(crate) fn run(
    ctx: &Ctx,
    words: Vec<String>,
    sandbox: bool,
    direct: bool,
    write: bool,
    detach: bool,
) -> Result<ExitCode> {
    let action = match (words.first().map(String::as_str), words.len()) {
        (Some("reverify"), 2) => Some(RunAction::Reverify),
        (Some("repair"), 2) => Some(RunAction::Repair),
        (Some("export"), 2) => Some(RunAction::Export),
        (Some("show"), 2) => Some(RunAction::Show),
        _ => None,
    };
    if let Some(action) = action {
        let id = words[1].clone();
        let v = ctx.call(Command::Run(request(action, Some(id.clone()))))?;
        return match action {
            RunAction::Export => {
                // The report is JSON whatever the flags.
                println!("{}", serde_json::to_string_pretty(&v)?);
                Ok(ExitCode::SUCCESS)
            }
            RunAction::Show => ctx.print_as(&v, show),
            _ if detach => ctx.print(&v, |_| format!("{id}: started (`ai watch {id}`)\n")),
            _ => follow(ctx, &id),
        };
    }
    let task = words.join(" ");
    if task.trim().is_empty() {
        bail!("ai run needs a task, or reverify|repair|export|show RUN");
    }
    let mut req = request(RunAction::Start, None);
    req.task = Some(task);
    req.sandbox = if sandbox {
        Some(true)
    } else if direct {
        Some(false)
    } else {
        None
    };
    req.write = write.then_some(true);
    let v = ctx.call(Command::Run(req))?;
    let started: RunStarted = serde_json::from_value(v.clone())?;
    let id = started.id;
    if detach {
        return ctx.print(&v, |_| format!("{id} started (`ai watch {id}`)\n"));
    }
    follow(ctx, &id)
}

/// Prints a run's events until it is over; exits 1 when it failed.
pub(crate) fn follow(ctx: &Ctx, id: &str) -> Result<ExitCode> {
    let mut client = ctx.connect()?;
    client.set_timeout(None)?;
    into_result(
        client.request(&Request::Command(Command::Watch(WatchRequest {
            session: None,
            run: Some(id.to_string()),
        })))?,
    )?;
    let mut passed = false;
    while let Some(e) = client.next_line()? {
        if ctx.json {
            println!("{e}");
        } else {
            print!("{}", render(&e));
        }
        std::io::stdout().flush()?;
        // A replay holds one `complete` per (re)verification: the last one counts. The
        // daemon closes the stream when the run is over.
        if e["type"] == "complete" {
            passed = e["data"]["verdict"]["status"] == "PASS";
        }
    }
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn s(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

/// One run event as text.
pub(crate) fn render(e: &Value) -> String {
    let d = &e["data"];
    match e["type"].as_str() {
        Some("phase") => format!(
            "== {} ({}): {}\n",
            s(&d["phase"]),
            s(&d["status"]),
            s(&d["message"])
        ),
        Some("thinking") => format!("   {}\n", s(&d["message"]).replace('\n', "\n   ")),
        Some("tool") => format!("   > {} {}\n", s(&d["tool"]), d["params"]),
        Some("verification_item") => match d["status"].as_str() {
            Some("running") => String::new(),
            st => format!(
                "   [{}] {}{}\n",
                st.unwrap_or("?"),
                s(&d["check_name"]),
                d["error"]
                    .as_str()
                    .map(|e| format!(": {}", e.lines().last().unwrap_or_default()))
                    .unwrap_or_default()
            ),
        },
        Some("error") => format!("!! {} (in {})\n", s(&d["message"]), s(&d["phase"])),
        Some("complete") => {
            let v = &d["verdict"];
            format!(
                "verdict: {} (confidence {}), {} repair cycle(s), {} iterations, {} ms\n{}",
                v["status"].as_str().unwrap_or("none"),
                v["confidence"],
                d["repair_cycles"],
                d["iterations"],
                d["duration_ms"],
                v["issues"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|i| format!("  - {}\n", s(i)))
                    .collect::<String>()
            )
        }
        _ => String::new(),
    }
}

fn show(v: &RunShown) -> String {
    let r = &v.run;
    let mut out = format!(
        "{} [{}] {} ({} mode{})\ntask: {}\n",
        r.id,
        r.phase.as_str(),
        r.verdict
            .as_ref()
            .map_or("no verdict", |v| v.status.as_str()),
        r.mode.as_str(),
        if r.write_enabled {
            ", writes allowed"
        } else {
            ""
        },
        r.task
    );
    if let Some(spec) = &r.spec {
        out.push_str(&format!("spec: {spec}\n"));
    }
    for (i, step) in r.plan.iter().enumerate() {
        out.push_str(&format!("  {}. {step}\n", i + 1));
    }
    out.push_str(&format!(
        "{} tool calls, {} iterations, {} repair cycle(s); {} events (`ai run export {}`)\n",
        r.tool_calls.len(),
        r.iterations,
        r.repair_cycles,
        v.events_count,
        r.id
    ));
    if let Some(e) = &r.error {
        out.push_str(&format!("error: {e}\n"));
    }
    out
}

/// `ai runs`.
pub(crate) fn list(ctx: &Ctx) -> Result<ExitCode> {
    let v = ctx.call(Command::Run(request(RunAction::List, None)))?;
    ctx.print_as(&v, |v: &RunList| {
        if v.runs.is_empty() {
            return "no runs yet (`ai run \"TASK\"`)\n".into();
        }
        let mut out = format!(
            "{:<30} {:<9} {:<8} {:<7}  TASK\n",
            "ID", "PHASE", "VERDICT", "REPAIRS"
        );
        for r in &v.runs {
            out.push_str(&format!(
                "{:<30} {:<9} {:<8} {:<7}  {}\n",
                r.id,
                r.phase.as_str(),
                r.verdict.map_or("-", |v| v.as_str()),
                r.repair_cycles,
                r.task.chars().take(60).collect::<String>()
            ));
        }
        out
    })
}
