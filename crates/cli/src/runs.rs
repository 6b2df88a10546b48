//! `ai run "TASK"`, `ai run reverify|repair|export|show RUN`, `ai runs`: workflow runs from a
//! terminal. A started run is followed live (its events, as text or as JSON lines).

use super::{into_result, Ctx};
use ai_smartness_proto::protocol::{Command, Request, RunAction, RunRequest, WatchRequest};
use ai_smartness_records::run::{RunEvent, RunEventData, VerdictStatus};
use ai_smartness_replies::{RunLine, RunList, RunShown, RunStarted};
use anyhow::{bail, Result};
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
        let line = serde_json::from_value::<RunLine>(e.clone());
        if ctx.json {
            println!("{e}");
        } else {
            match &line {
                Ok(line) => print!("{}", render(line)),
                Err(err) => println!("(an event this version cannot read: {err})"),
            }
        }
        std::io::stdout().flush()?;
        // A replay holds one `complete` per (re)verification: the last one counts. The
        // daemon closes the stream when the run is over.
        if let Ok(RunLine::Event(RunEvent {
            data: RunEventData::Complete { verdict, .. },
            ..
        })) = &line
        {
            passed = verdict
                .as_ref()
                .is_some_and(|v| v.status == VerdictStatus::Pass);
        }
    }
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One line of a run's stream as text.
pub(crate) fn render(line: &RunLine) -> String {
    let e = match line {
        RunLine::Event(e) => e,
        RunLine::Lagged(l) => return format!("(missed {} events)\n", l.missed),
    };
    match &e.data {
        RunEventData::Phase {
            phase,
            status,
            message,
        } => format!(
            "== {} ({}): {}\n",
            phase.as_str(),
            status.as_deref().unwrap_or(""),
            message.as_deref().unwrap_or("")
        ),
        RunEventData::Thinking { message, .. } => {
            format!("   {}\n", message.replace('\n', "\n   "))
        }
        RunEventData::Tool { tool, params, .. } => format!("   > {tool} {params}\n"),
        RunEventData::VerificationItem {
            check_name,
            status,
            error,
            ..
        } => match status.as_str() {
            "running" => String::new(),
            st => format!(
                "   [{st}] {check_name}{}\n",
                error
                    .as_deref()
                    .map(|e| format!(": {}", e.lines().last().unwrap_or_default()))
                    .unwrap_or_default()
            ),
        },
        RunEventData::Error { message, phase } => {
            format!("!! {message} (in {})\n", phase.as_str())
        }
        RunEventData::Complete {
            verdict,
            repair_cycles,
            iterations,
            duration_ms,
            ..
        } => format!(
            "verdict: {} (confidence {}), {repair_cycles} repair cycle(s), {iterations} iterations, {duration_ms} ms\n{}",
            verdict.as_ref().map_or("none", |v| v.status.as_str()),
            verdict
                .as_ref()
                .map_or_else(|| "null".to_string(), |v| v.confidence.to_string()),
            verdict
                .iter()
                .flat_map(|v| &v.issues)
                .map(|i| format!("  - {i}\n"))
                .collect::<String>()
        ),
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
