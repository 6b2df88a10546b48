//! The router: the one place that knows both the protocol (requests and replies) and the
//! services behind it. The server hands it each parsed request; it calls the service and turns
//! its result (a typed reply or a [`crate::ServiceError`]) into one [`Response`]. Nothing here
//! reads the memory or a file itself; nothing panics on bad input: unknown ids and invalid
//! values become error replies.

use crate::app::Daemon;
use crate::assistant::requests::{self, Events, Follow};
use crate::inject::cli_prompt::{self, CliCommand};
use crate::service_error::respond;
use crate::state::{CaptureError, Journaled};
use crate::{overview, ui, worker};
use ai_smartness_proto::protocol::{
    BridgesQuery, CaptureRequest, Command, ErrorCode, Request, Response, StatusFilter, ThreadQuery,
    ThreadsQuery,
};
use ai_smartness_replies::render as output;
use ai_smartness_replies::{Captured, Reindexed, Stopping, Watching};
use serde_json::Value;

pub async fn handle(daemon: &Daemon, request: Request) -> Response {
    match request {
        Request::Capture(c) => capture(daemon, c).await,
        Request::Command(c) => command(daemon, c).await,
    }
}

async fn capture(daemon: &Daemon, req: CaptureRequest) -> Response {
    if let Some(hook) = req.hook.as_deref().filter(|h| is_hook_name(h)) {
        daemon.stats().note_hook(hook, daemon.now());
    }
    match daemon.capture().journal_capture(req).await {
        Ok(Journaled::Queued(seq)) => Response::reply(&Captured {
            queued: true,
            seq: Some(seq),
            skipped: None,
        }),
        Ok(Journaled::Skipped(reason)) => Response::reply(&Captured {
            queued: false,
            seq: None,
            skipped: Some(reason.to_string()),
        }),
        Err(CaptureError::Refused(e)) => Response::error(ErrorCode::BadRequest, e.to_string()),
        Err(e) => {
            tracing::error!("{e}");
            Response::error(ErrorCode::Journal, e.to_string())
        }
    }
}

/// Only our own hook binaries are tracked for `ai health` (a client cannot grow the map).
fn is_hook_name(name: &str) -> bool {
    matches!(name, "ai-inject" | "ai-capture" | "ai-compact")
}

async fn command(daemon: &Daemon, cmd: Command) -> Response {
    match cmd {
        Command::Ping(_) => Response::pong(std::process::id()),
        Command::Status(_) => Response::reply(&overview::status(daemon)),
        Command::Health(_) => {
            // It reads a few files: a blocking thread does.
            let d = daemon.clone();
            match tokio::task::spawn_blocking(move || overview::health(&d)).await {
                Ok(v) => Response::reply(&v),
                Err(e) => Response::error(ErrorCode::Internal, format!("health panicked: {e}")),
            }
        }
        Command::Shutdown(_) => {
            tracing::info!("shutdown requested over the socket");
            daemon.life().trigger_shutdown();
            Response::reply(&Stopping { stopping: true })
        }
        Command::Sync(_) => respond(sync(daemon, worker::SyncUntil::Settled).await),
        Command::Placed(_) => respond(sync(daemon, worker::SyncUntil::Placed).await),
        Command::Reindex(_) => match daemon.reindexer().reindex().await {
            Ok(n) => Response::reply(&Reindexed {
                threads: n,
                embedder: daemon.memory().embed().kind(),
            }),
            Err(e) => Response::error(ErrorCode::Embedding, e.to_string()),
        },
        Command::Threads(q) => Response::reply(&daemon.memory_service().threads(&q)),
        Command::Thread(q) => respond(daemon.memory_service().thread(&q)),
        Command::ThreadEdit(e) => respond(daemon.memory_service().edit_thread(e).await),
        Command::Bridges(q) => respond(daemon.memory_service().bridges(&q)),
        Command::Bridge(q) => respond(daemon.memory_service().bridge(&q.id)),
        Command::BridgeEdit(e) => respond(daemon.memory_service().edit_bridge(e).await),
        Command::Consolidate(c) => {
            let report = daemon.consolidator().run(c.dry_run, ON_DEMAND).await;
            match serde_json::to_value(report) {
                Ok(v) => Response::ok(v),
                Err(e) => Response::error(ErrorCode::Internal, e.to_string()),
            }
        }
        Command::Prune(p) => {
            let (threads, bridges) = if !p.threads && !p.bridges {
                (true, true)
            } else {
                (p.threads, p.bridges)
            };
            let Some(rx) = daemon.prune().run_now(threads, bridges).await else {
                return Response::error(ErrorCode::ShuttingDown, "the daemon is stopping");
            };
            match rx.await {
                Ok(report) => Response::ok(serde_json::to_value(report).unwrap_or(Value::Null)),
                Err(_) => Response::error(ErrorCode::ShuttingDown, "the daemon is stopping"),
            }
        }
        Command::Search(q) => respond(
            daemon
                .memory_service()
                .search(&q.query, q.limit.unwrap_or(10), q.team)
                .await,
        ),
        Command::Recall(q) => daemon.recall().recall(q).await,
        Command::Timeline(q) => daemon.recall().timeline(q).await,
        Command::Remember(r) => daemon.recall().remember(r).await,
        Command::Mode(m) => respond(daemon.settings().mode(m.set.as_deref()).await),
        Command::Rules(r) => respond(daemon.settings().rules(r.add, r.remove).await),
        Command::Inject(r) => match cli_prompt::detect(&r.prompt) {
            // The whole prompt is an `ai` command: it runs here, and its output is injected.
            Some(cli) => {
                daemon.inject().note_hook();
                let output = run_cli_in_prompt(daemon, &cli).await;
                Response::reply(&cli_prompt::reply(cli, &output))
            }
            None => daemon.inject().handle_inject(r).await,
        },
        Command::Context(r) => daemon.inject().handle_context(r).await,
        Command::SessionStart(r) => daemon.inject().handle_session_start(r).await,
        Command::Compact(r) => daemon.compact().handle_compact(r).await,
        Command::Ui(_) => ui::ensure(daemon, from_the_dashboard).await,
        Command::TeamSync(_) => Response::reply(&daemon.team_sync().state()),
        // The server streams these itself; here (no connection) only the reply.
        c => handle_streaming(daemon, c).await.0,
    }
}

/// A command from the dashboard's page, answered as the socket's are.
fn from_the_dashboard(
    daemon: Daemon,
    command: Command,
) -> ai_smartness_dashboard::BoxFuture<Response> {
    Box::pin(async move { handle(&daemon, Request::Command(command)).await })
}

/// Whether the server answers this command through [`handle_streaming`]: events may follow
/// its reply on the connection.
pub fn may_stream(cmd: &Command) -> bool {
    matches!(
        cmd,
        Command::Chat(_)
            | Command::Sessions(_)
            | Command::Session(_)
            | Command::Approve(_)
            | Command::Reject(_)
            | Command::Answer(_)
            | Command::Automation(_)
            | Command::Watch(_)
            | Command::Run(_)
    )
}

/// The reply to an assistant or run command and, when the client asked to follow, the events
/// the server then forwards.
pub async fn handle_streaming(daemon: &Daemon, cmd: Command) -> (Response, Option<Follow>) {
    match cmd {
        Command::Run(r) => (daemon.runs().handle(r).await, None),
        Command::Watch(w) if w.run.is_some() => {
            let id = w.run.unwrap_or_default();
            match daemon.runs().watch(&id) {
                Ok(rx) => (
                    Response::reply(&Watching { watching: id }),
                    Some(Follow {
                        session: None,
                        events: Events::Run(rx),
                        until_round_end: false,
                    }),
                ),
                Err(e) => (e, None),
            }
        }
        c => requests::handle(daemon.assistant(), c).await,
    }
}

/// Runs an `ai` command given as a whole prompt; its output as the CLI renders it.
async fn run_cli_in_prompt(daemon: &Daemon, cmd: &CliCommand) -> String {
    let args: Vec<&str> = cmd.args.split_whitespace().collect();
    match cmd.name.as_str() {
        "status" => output::status(&overview::status(daemon)),
        "health" => output::health(&overview::health(daemon)),
        "help" => cli_prompt::HELP.to_string(),
        "threads" => {
            let status = match cli_prompt::flag_value(&args, "--status").map(str::parse::<StatusFilter>) {
                Some(Err(e)) => return e.to_string(),
                Some(Ok(s)) => Some(s),
                None => None,
            };
            let show_weight = args.contains(&"--show-weight");
            let r = Box::pin(command(daemon, Command::Threads(ThreadsQuery { status, limit: Some(30) }))).await;
            cli_prompt::result_or_error(r, |v| output::threads(v, show_weight))
        }
        "thread" => match args.first() {
            Some(id) => {
                let r = Box::pin(command(daemon, Command::Thread(ThreadQuery { id: id.to_string(), offset: None, limit: None }))).await;
                cli_prompt::result_or_error(r, output::thread)
            }
            None => {
                let r = Box::pin(command(daemon, Command::Threads(ThreadsQuery { status: None, limit: Some(30) }))).await;
                cli_prompt::result_or_error(r, |v| output::threads(v, false))
            }
        },
        "bridges" | "bridge" => {
            let thread = cli_prompt::flag_value(&args, "--thread").map(str::to_string);
            let show_weight = args.contains(&"--show-weight");
            let r = Box::pin(command(daemon, Command::Bridges(BridgesQuery { thread }))).await;
            cli_prompt::result_or_error(r, |v| output::bridges(v, show_weight))
        }
        "search" => {
            if cmd.args.is_empty() {
                return "usage: ai search QUERY".into();
            }
            let r = respond(daemon.memory_service().search(&cmd.args, 10, false).await);
            cli_prompt::result_or_error(r, output::search)
        }
        "mode" => {
            let set = args.first().filter(|m| **m != "status").copied();
            let r = respond(daemon.settings().mode(set).await);
            cli_prompt::result_or_error(r, output::mode)
        }
        "reindex" => {
            // A reindex can take longer than a hook may wait: run it in the background.
            let reindexer = daemon.reindexer().clone();
            let n = daemon.memory().lock().graph.thread_count();
            daemon.life().spawn(async move {
                if let Err(e) = reindexer.reindex().await {
                    tracing::error!("reindex from a prompt failed: {e}");
                }
            });
            format!("Reindexing {n} threads in the background with {}.", daemon.memory().embed().kind())
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

/// `ai consolidate` may take this long to plan.
const ON_DEMAND: ai_smartness_core::memory::consolidate::Budget =
    ai_smartness_core::memory::consolidate::Budget {
        time: std::time::Duration::from_secs(10),
    };

async fn sync(
    daemon: &Daemon,
    until: worker::SyncUntil,
) -> Result<ai_smartness_replies::Synced, crate::service_error::ServiceError> {
    worker::sync(
        daemon.capture(),
        daemon.stats(),
        daemon.unit_vectors(),
        daemon.life(),
        until,
    )
    .await
}
