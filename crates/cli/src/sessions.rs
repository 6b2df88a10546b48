//! `ai chat`, `ai sessions`, `ai session`, `ai automation`, `ai approve|reject|answer` and
//! `ai watch`: the assistant from a terminal. Rounds are followed live: the daemon streams
//! the session's events until the round ends, and this prints them as they come.

use super::{into_result, Ctx};
use ai_smartness_proto::protocol::{
    AutomationAction, AutomationRequest, ChatSend, Command, IdQuery, Request, SessionReply,
    SessionsQuery, WatchRequest,
};
use ai_smartness_records::assistant::message::CommunicationModule;
use ai_smartness_records::assistant::types::{MessageBody, SessionMessage, SystemMessageType};
use ai_smartness_replies::{
    AutomationEnded, AutomationList, AutomationView, RoundHead, SessionDetail, SessionEvent,
    SessionLine, SessionList, StreamNotice,
};
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::Value;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub(crate) enum AutomationCmd {
    /// Create an automation (runs on its schedule, or with `ai automation run`).
    Create {
        #[arg(long)]
        name: String,
        /// What the assistant must do each run.
        #[arg(long)]
        prompt: String,
        /// Cron (5 fields) or @hourly, @daily, @weekly, @monthly, @yearly.
        #[arg(long)]
        schedule: Option<String>,
        /// The IANA time zone the schedule follows (Europe/Paris); default: the machine's.
        #[arg(long = "tz")]
        timezone: Option<String>,
        /// Every action of its runs waits for `ai approve`.
        #[arg(long)]
        validate: bool,
    },
    List,
    Show {
        id: String,
    },
    /// Run now (queued behind a running session).
    Run {
        id: String,
        /// Follow the run live.
        #[arg(long)]
        follow: bool,
    },
    /// Stop the current run and hold further runs until `enable`.
    Pause {
        id: String,
    },
    /// Stop the current run for good.
    Stop {
        id: String,
    },
    Enable {
        id: String,
    },
    Disable {
        id: String,
    },
    Delete {
        id: String,
    },
}

/// `ai chat [MESSAGE]`: one message, or a conversation on a terminal.
pub(crate) fn chat(
    ctx: &Ctx,
    message: Vec<String>,
    session: Option<String>,
    validate: bool,
) -> Result<ExitCode> {
    let mut text = message.join(" ");
    let interactive = text.trim().is_empty() && std::io::stdin().is_terminal();
    if text.trim().is_empty() && !interactive {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading stdin")?;
    }
    if !interactive {
        if text.trim().is_empty() {
            bail!("ai chat needs a message");
        }
        let id = send(
            ctx,
            Command::Chat(ChatSend {
                message: text,
                session,
                require_validation: validate,
                follow: true,
            }),
        )?;
        if !ctx.json {
            hint(ctx, &id)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("Chat with the memory assistant. An empty line or Ctrl-D ends.");
    let mut session = session;
    let stdin = std::io::stdin();
    loop {
        // A pending approval or question comes first.
        if let Some(id) = &session {
            let s: SessionDetail =
                serde_json::from_value(ctx.call(Command::Session(IdQuery { id: id.clone() }))?)
                    .context("the daemon's session reply")?;
            match s.state.as_str() {
                "waiting_validation" => {
                    let line = ask("Approve these actions? [y]es / [n]o / or say why not: ")?;
                    let l = line.trim();
                    let cmd = if matches!(l.to_lowercase().as_str(), "y" | "yes") {
                        Command::Approve(reply(id, None, None))
                    } else if matches!(l.to_lowercase().as_str(), "" | "n" | "no") {
                        Command::Reject(reply(id, None, None))
                    } else {
                        Command::Reject(reply(id, Some(l.to_string()), None))
                    };
                    send(ctx, cmd)?;
                    continue;
                }
                "waiting_answer" => {
                    let line = ask("Your answer: ")?;
                    send(
                        ctx,
                        Command::Answer(reply(id, None, Some(line.trim().to_string()))),
                    )?;
                    continue;
                }
                _ => {}
            }
        }
        eprint!("you> ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        let id = send(
            ctx,
            Command::Chat(ChatSend {
                message: line.trim().to_string(),
                session: session.clone(),
                require_validation: validate,
                follow: true,
            }),
        )?;
        session = Some(id);
    }
    if let Some(id) = session {
        eprintln!("(session {id}: `ai chat --session {id}` to go on)");
    }
    Ok(ExitCode::SUCCESS)
}

fn ask(prompt: &str) -> Result<String> {
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line)
}

fn reply(id: &str, feedback: Option<String>, choice: Option<String>) -> SessionReply {
    SessionReply {
        session: id.to_string(),
        feedback,
        choice,
        follow: true,
    }
}

/// After a one-shot round: what the person can do next.
fn hint(ctx: &Ctx, id: &str) -> Result<()> {
    let v = ctx.call(Command::Session(IdQuery { id: id.to_string() }))?;
    let detail: SessionDetail = serde_json::from_value(v)?;
    match detail.state.as_str() {
        "waiting_validation" => {
            println!("\nApprove with `ai approve {id}`, or `ai reject {id} [--feedback TEXT]`.")
        }
        "waiting_answer" => println!("\nAnswer with `ai answer {id} CHOICE`."),
        "queued" => println!("\nQueued: `ai watch {id}` follows it."),
        _ => println!("\n(session {id}: `ai chat --session {id} MESSAGE` to go on)"),
    }
    Ok(())
}

/// Sends a request that follows a round, prints the events until the round ends, and returns
/// the session id.
fn send(ctx: &Ctx, cmd: Command) -> Result<String> {
    let mut client = ctx.connect()?;
    // A round takes as long as the model does; the daemon always ends it.
    client.set_timeout(None)?;
    let raw = into_result(client.request(&Request::Command(cmd))?)?;
    let head: RoundHead = serde_json::from_value(raw.clone())?;
    let id = head.session_id;
    if ctx.json {
        println!("{raw}");
    } else if let Some(p) = head.queue_position {
        println!("(queued behind the running session, position {p})");
    }
    while let Some(event) = client.next_line()? {
        let line = serde_json::from_value::<SessionLine>(event.clone());
        if ctx.json {
            println!("{event}");
        } else {
            match &line {
                Ok(line) => print!("{}", render_event(line)),
                Err(e) => println!("(an event this version cannot read: {e})"),
            }
        }
        std::io::stdout().flush()?;
        if matches!(
            line,
            Ok(SessionLine::Event(SessionEvent::RoundEnded { .. }))
        ) {
            break;
        }
    }
    Ok(id)
}

/// One line of a session's stream as text for people (empty for what they need not see).
pub(crate) fn render_event(line: &SessionLine) -> String {
    match line {
        SessionLine::Event(SessionEvent::Message { message, .. }) => render_message(message, None),
        SessionLine::Event(SessionEvent::State {
            state, end_reason, ..
        }) => match state.as_str() {
            "queued" => "(queued behind the running session)\n".into(),
            "waiting_network" => "(the model cannot be reached; retrying)\n".into(),
            "ended" => format!(
                "(session ended: {})\n",
                end_reason.as_ref().map(wire).unwrap_or_default()
            ),
            _ => String::new(),
        },
        SessionLine::Notice(StreamNotice::Lagged { missed }) => {
            format!("(missed {missed} events)\n")
        }
        SessionLine::Notice(StreamNotice::StreamRefused { reason }) => {
            format!("(no stream opened: {reason})\n")
        }
        SessionLine::Event(_) => String::new(),
    }
}

/// One session message as text. In a transcript (`in_prompt` given), what the model never
/// sees is marked `[audit]` and every system message is shown in full.
fn render_message(m: &SessionMessage, in_prompt: Option<bool>) -> String {
    let audit = in_prompt.is_some();
    let mark = if in_prompt == Some(false) {
        "[audit] "
    } else {
        ""
    };
    let mut out = String::new();
    match &m.body {
        MessageBody::UserText { text_content } => {
            out.push_str(&format!("{mark}you: {text_content}\n"))
        }
        MessageBody::UserRich { rich_content } => {
            out.push_str(&format!("{mark}you: {}\n", rich_content.linear_text))
        }
        MessageBody::Ai { ai_message: ai, .. } => {
            out.push_str(&format!("{mark}assistant: {}\n", ai.pre_text));
            if let Some(list) = &ai.data_commands {
                let names: Vec<&str> = list.iter().map(|c| c.type_name()).collect();
                out.push_str(&format!("  … looking up: {}\n", names.join(", ")));
            }
            if let Some(list) = &ai.action_commands {
                let names: Vec<&str> = list.iter().map(|c| c.type_name()).collect();
                out.push_str(&format!("  … wants to: {}\n", names.join(", ")));
            }
            match &ai.communication_module {
                Some(CommunicationModule::MultipleChoice { question, options }) => {
                    out.push_str(&format!("  ? {question}\n"));
                    for (i, o) in options.iter().enumerate() {
                        out.push_str(&format!("    {}. {o}\n", i + 1));
                    }
                }
                Some(CommunicationModule::Validation { message }) => {
                    out.push_str(&format!("  ? {message} (yes/no)\n"))
                }
                None => {}
            }
        }
        MessageBody::AiText { text_content } => {
            out.push_str(&format!("{mark}assistant: {text_content}\n"))
        }
        MessageBody::System { system_message: sm } => {
            let summary = &sm.summary;
            match sm.kind {
                SystemMessageType::DataAdded if !audit => out.push_str(&format!("  ({summary})\n")),
                SystemMessageType::FormatError if !audit => {
                    out.push_str("  (the reply was malformed; asking the model again)\n")
                }
                SystemMessageType::ValidationCancelled if !audit => {
                    let what = summary.split_once('\n').map(|x| x.1).unwrap_or_default();
                    out.push_str(&format!("Approval needed:\n{what}\n"));
                }
                SystemMessageType::CommunicationCancelled if !audit => {}
                kind => {
                    out.push_str(&format!("{mark}[{}] {summary}\n", wire(&kind)));
                    let executed = kind == SystemMessageType::ActionsExecuted;
                    if let Some(d) = sm.formatted_data.as_deref() {
                        if executed || (audit && d.len() < 2_000) {
                            for l in d.lines() {
                                out.push_str(&format!("    {l}\n"));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

pub(crate) fn sessions(ctx: &Ctx, kind: Option<String>, limit: Option<usize>) -> Result<ExitCode> {
    let r = ctx.call(Command::Sessions(SessionsQuery { kind, limit }))?;
    ctx.print_as(&r, |v: &SessionList| {
        if v.sessions.is_empty() {
            return "no sessions yet (`ai chat`, `ai automation create`)\n".into();
        }
        let mut out = format!(
            "{:<34} {:<10} {:<18} {:<20} {:>5}  NAME\n",
            "ID", "KIND", "STATE", "UPDATED", "MSGS"
        );
        for r in &v.sessions {
            let state = match &r.end_reason {
                Some(reason) => format!("ended {}", wire(reason).to_lowercase()),
                None => r.state.clone(),
            };
            out.push_str(&format!(
                "{:<34} {:<10} {:<18} {:<20} {:>5}  {}\n",
                r.id,
                wire(&r.kind),
                state,
                stamp(&r.updated_at),
                r.messages,
                r.name.chars().take(50).collect::<String>()
            ));
        }
        out
    })
}

pub(crate) fn session(ctx: &Ctx, id: String) -> Result<ExitCode> {
    let r = ctx.call(Command::Session(IdQuery { id }))?;
    ctx.print_as(&r, |v: &SessionDetail| {
        let session = &v.session;
        let mut out = format!(
            "{} {} \"{}\" — {}{}\n",
            wire(&session.kind),
            session.id,
            session.name,
            v.state,
            session
                .end_reason
                .as_ref()
                .map(|r| format!(" ({})", wire(r).to_lowercase()))
                .unwrap_or_default()
        );
        if let Some(t) = &session.scheduled_execution_time {
            out.push_str(&format!("scheduled for {}\n", wire(t)));
        }
        out.push('\n');
        for m in &v.messages {
            // Shared with the live events: one renderer for both.
            let when = stamp(&m.message.timestamp);
            let text = render_message(&m.message, Some(m.in_prompt));
            for (i, l) in text.lines().enumerate() {
                if i == 0 {
                    out.push_str(&format!("{when}  {l}\n"));
                } else {
                    out.push_str(&format!("{:21}{l}\n", ""));
                }
            }
        }
        out
    })
}

pub(crate) fn answer_cmd(
    ctx: &Ctx,
    cmd: fn(SessionReply) -> Command,
    id: String,
    feedback: Option<String>,
    choice: Option<String>,
) -> Result<ExitCode> {
    let r = SessionReply {
        session: id.clone(),
        feedback,
        choice,
        follow: true,
    };
    send(ctx, cmd(r))?;
    if !ctx.json {
        hint(ctx, &id)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn watch(ctx: &Ctx, session: Option<String>) -> Result<ExitCode> {
    let mut client = ctx.connect()?;
    client.set_timeout(None)?;
    into_result(
        client.request(&Request::Command(Command::Watch(WatchRequest {
            session,
            run: None,
        })))?,
    )?;
    // JSON lines: one event per line, for people and programs alike (`--json` changes nothing).
    while let Some(event) = client.next_line()? {
        println!("{event}");
        std::io::stdout().flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn automation(ctx: &Ctx, cmd: AutomationCmd) -> Result<ExitCode> {
    let req = |action, id: Option<String>| AutomationRequest {
        action,
        id,
        name: None,
        prompt: None,
        schedule: None,
        timezone: None,
        require_validation: None,
    };
    let r = match cmd {
        AutomationCmd::Create {
            name,
            prompt,
            schedule,
            timezone,
            validate,
        } => AutomationRequest {
            name: Some(name),
            prompt: Some(prompt),
            schedule,
            timezone,
            require_validation: Some(validate),
            ..req(AutomationAction::Create, None)
        },
        AutomationCmd::List => req(AutomationAction::List, None),
        AutomationCmd::Show { id } => req(AutomationAction::Show, Some(id)),
        AutomationCmd::Run { id, follow } => {
            let v = ctx.call(Command::Automation(req(AutomationAction::Run, Some(id))))?;
            let head: RoundHead = serde_json::from_value(v.clone())?;
            let session = head.session_id;
            if follow {
                return watch(ctx, Some(session));
            }
            return ctx.print(&v, |_| match head.queue_position {
                Some(p) => format!("run {session} queued (position {p})\n"),
                None => format!("run {session} started: `ai watch {session}` follows it\n"),
            });
        }
        AutomationCmd::Pause { id } => req(AutomationAction::Pause, Some(id)),
        AutomationCmd::Stop { id } => req(AutomationAction::Stop, Some(id)),
        AutomationCmd::Enable { id } => req(AutomationAction::Enable, Some(id)),
        AutomationCmd::Disable { id } => req(AutomationAction::Disable, Some(id)),
        AutomationCmd::Delete { id } => req(AutomationAction::Delete, Some(id)),
    };
    let action = r.action;
    let v = ctx.call(Command::Automation(r))?;
    match action {
        AutomationAction::List => ctx.print_as(&v, automations_table),
        AutomationAction::Show => ctx.print_as(&v, automation_detail),
        AutomationAction::Create | AutomationAction::Enable | AutomationAction::Disable => ctx
            .print_as(&v, |a: &AutomationView| {
                format!(
                    "{} \"{}\" {}\n{}",
                    a.automation.id,
                    a.automation.name,
                    if a.automation.enabled {
                        "enabled"
                    } else {
                        "disabled"
                    },
                    next_run(a)
                )
            }),
        _ => ctx.print_as(&v, |e: &AutomationEnded| {
            format!(
                "{} done ({} session(s) ended)\n",
                e.id,
                e.sessions_ended.len()
            )
        }),
    }
}

fn next_run(a: &AutomationView) -> String {
    match &a.next_run {
        Some(n) if n.due => format!("next run: due now ({})\n", wire(&n.at)),
        Some(n) => format!("next run: {}\n", wire(&n.at)),
        None => "manual runs only (`ai automation run`)\n".into(),
    }
}

/// An enum's name on the wire (`COMPLETED`, `MANUAL`, `CHAT`).
fn wire<T: serde::Serialize>(x: &T) -> String {
    match serde_json::to_value(x) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A time as people read it in a table: `2026-03-01T10:00:00`.
fn stamp(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S").to_string()
}

fn automations_table(v: &AutomationList) -> String {
    if v.automations.is_empty() {
        return "no automations (`ai automation create --name N --prompt TEXT`)\n".into();
    }
    let mut out = format!(
        "{:<37} {:<14} {:<9} {:<21} {:<16} NAME\n",
        "ID", "SCHEDULE", "STATUS", "NEXT RUN", "LAST RUN"
    );
    for view in &v.automations {
        let a = &view.automation;
        let status = if !a.enabled {
            "disabled"
        } else if a.paused {
            "paused"
        } else {
            "enabled"
        };
        let last = match &view.last_run {
            Some(r) => match &r.end_reason {
                Some(reason) => wire(reason).to_lowercase(),
                None => r.state.clone(),
            },
            None => "-".into(),
        };
        out.push_str(&format!(
            "{:<37} {:<14} {:<9} {:<21} {:<16} {}\n",
            a.id,
            a.schedule.as_deref().unwrap_or("manual"),
            status,
            view.next_run.as_ref().map_or("-".into(), |n| stamp(&n.at)),
            last,
            a.name
        ));
    }
    out
}

fn automation_detail(v: &AutomationView) -> String {
    let a = &v.automation;
    let mut out = format!(
        "{} \"{}\"\nschedule: {}\nstatus: {}{}\nvalidation: {}\n{}prompt:\n  {}\n",
        a.id,
        a.name,
        a.schedule
            .as_deref()
            .map_or("manual".to_string(), |sch| format!(
                "{sch} ({})",
                v.timezone
            )),
        if a.enabled { "enabled" } else { "disabled" },
        if a.paused { ", paused" } else { "" },
        if a.require_validation {
            "every action"
        } else {
            "by configuration"
        },
        next_run(v),
        a.prompt.replace('\n', "\n  ")
    );
    let runs = v.runs.as_deref().unwrap_or_default();
    out.push_str(&format!("runs ({}):\n", runs.len()));
    for r in runs.iter().take(20) {
        out.push_str(&format!(
            "  {} {:<9} {:<18} scheduled {}\n",
            r.id,
            r.trigger.as_ref().map(wire).unwrap_or_default(),
            r.end_reason
                .as_ref()
                .map(|e| wire(e).to_lowercase())
                .unwrap_or_else(|| r.state.clone()),
            r.scheduled_execution_time
                .as_ref()
                .map(stamp)
                .unwrap_or_default()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(json: &str) -> SessionLine {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn stream_lines_decode_into_types_and_render() {
        let choice = line(
            r#"{"event": "message", "session_id": "s1", "message": {"id": "m1",
                "timestamp": "2026-01-01T00:00:00Z", "body": {"variant": "AI",
                "ai_message": {"preText": "Which one?", "communicationModule":
                  {"type": "MultipleChoice", "data": {"question": "Merge?",
                   "options": ["Merge", "Keep both"]}}},
                "ai_message_json": "{}"}}}"#,
        );
        assert_eq!(
            render_event(&choice),
            "assistant: Which one?\n  ? Merge?\n    1. Merge\n    2. Keep both\n"
        );
        let ended = line(
            r#"{"event": "state", "session_id": "s1", "state": "ended", "end_reason": "COMPLETED"}"#,
        );
        assert_eq!(render_event(&ended), "(session ended: COMPLETED)\n");
        assert_eq!(
            render_event(&line(r#"{"event": "lagged", "missed": 4}"#)),
            "(missed 4 events)\n"
        );
        assert!(matches!(
            line(r#"{"event": "round_ended", "session_id": "s1"}"#),
            SessionLine::Event(SessionEvent::RoundEnded { .. })
        ));
    }
}
