//! The router: the one place that knows both the protocol (requests and replies) and the
//! services behind it. The server hands it each parsed request; it calls the service, or reads
//! the handles itself for the small listings. Each request answers one [`Response`]; nothing
//! here panics on bad input: unknown ids and invalid values become error replies.

use super::assistant::requests::{self, Events, Follow};
use super::inject::cli_prompt::{self, CliCommand};
use super::state::{CaptureError, Daemon, Journaled};
use ai_smartness_capture::source::SourceType;
use ai_smartness_config::Mode;
use ai_smartness_core::memory::decay::{bridge_weight, thread_weight};
use ai_smartness_core::memory::engine::{normalize_topics, EditError};
use ai_smartness_core::memory::rules::RuleError;
use ai_smartness_core::memory::types::{Sharing, ThinkBridge, Thread, ThreadStatus};
use ai_smartness_proto::protocol::{
    BridgeAction, BridgesQuery, CaptureRequest, Command, ErrorCode, Request, Response,
    StatusFilter, ThreadAction, ThreadQuery, ThreadsQuery, PROTOCOL_VERSION,
};
use ai_smartness_replies::render as output;
use ai_smartness_replies::{
    BridgeCounts, BridgeList, BridgeView, Captured, CapturesHealth, Edited, EmbedderHealth,
    EmbedderStatus, HealthReply, HookHealth, MessagePage, ModeReply, Reindexed, RulesReply,
    SavingHealth, SearchHit, SearchResults, StatusReply, Stopping, Synced, ThreadCounts,
    ThreadDetail, ThreadHeader, ThreadList, ThreadSummary, Watching,
};
use ai_smartness_team::search::Depth;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

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

fn edit_error(e: EditError) -> Response {
    match e {
        EditError::NoThread(_) | EditError::NoBridge(_) => {
            Response::error(ErrorCode::NotFound, e.to_string())
        }
        EditError::Invalid(_) => Response::error(ErrorCode::BadRequest, e.to_string()),
    }
}

/// The reply to an edit of a thread or a bridge: `edited` once the change is saved; a storage
/// error when it is only in memory (the next flush that works saves it); the edit's own error
/// when it was refused.
async fn saved_edit<A: serde::Serialize>(
    daemon: &Daemon,
    applied: Result<(), EditError>,
    edited: &Edited<A>,
) -> Response {
    if let Err(e) = applied {
        return edit_error(e);
    }
    if !daemon.memory().flush().await {
        return Response::error(
            ErrorCode::Storage,
            "the change is in memory but could not be saved yet",
        );
    }
    Response::reply(edited)
}

async fn command(daemon: &Daemon, cmd: Command) -> Response {
    match cmd {
        Command::Ping(_) => Response::pong(std::process::id()),
        Command::Status(_) => Response::reply(&status(daemon)),
        Command::Health(_) => {
            // It reads a few files: a blocking thread does.
            let d = daemon.clone();
            match tokio::task::spawn_blocking(move || health(&d)).await {
                Ok(v) => Response::reply(&v),
                Err(e) => Response::error(ErrorCode::Internal, format!("health panicked: {e}")),
            }
        }
        Command::Shutdown(_) => {
            tracing::info!("shutdown requested over the socket");
            daemon.life().trigger_shutdown();
            Response::reply(&Stopping { stopping: true })
        }
        Command::Sync(_) => sync(daemon).await,
        Command::Reindex(_) => match daemon.reindexer().reindex().await {
            Ok(n) => Response::reply(&Reindexed {
                threads: n,
                embedder: daemon.memory().embed().kind(),
            }),
            Err(e) => Response::error(ErrorCode::Embedding, e),
        },
        Command::Threads(q) => {
            let filter = q.status.unwrap_or(StatusFilter::Active);
            let now = daemon.now();
            let mem = daemon.memory().lock();
            let mut list: Vec<&Thread> = mem
                .graph
                .threads()
                .filter(|t| match filter {
                    StatusFilter::Active => t.status == ThreadStatus::Active,
                    StatusFilter::Suspended => t.status == ThreadStatus::Suspended,
                    StatusFilter::Archived => t.status == ThreadStatus::Archived,
                    StatusFilter::Live => t.status != ThreadStatus::Archived,
                    StatusFilter::All => true,
                })
                .collect();
            list.sort_by(|a, b| ai_smartness_core::memory::decay::heaviest_first(a, b, now));
            let total = list.len();
            let threads = list
                .into_iter()
                .take(q.limit.unwrap_or(usize::MAX))
                .map(|t| thread_summary(t, now))
                .collect();
            Response::reply(&ThreadList { total, threads })
        }
        Command::Thread(q) => {
            let now = daemon.now();
            let mem = daemon.memory().lock();
            match mem.graph.resolve(&q.id) {
                Some(t) => {
                    let bridges = mem
                        .graph
                        .bridges_of(&t.id)
                        .map(|b| bridge_view(b, &mem.graph, now))
                        .collect();
                    let resolved_from = (t.id != q.id).then(|| q.id.clone());
                    // A page is cut before anything is copied: a long thread's other messages
                    // (and their vectors) are not cloned under the lock to be dropped.
                    let page = (q.offset.is_some() || q.limit.is_some()).then(|| {
                        let total = t.messages.len();
                        let offset = q.offset.unwrap_or(0).min(total);
                        let end = offset
                            .saturating_add(q.limit.unwrap_or(usize::MAX))
                            .min(total);
                        (offset..end, MessagePage { offset, total })
                    });
                    Response::reply(&thread_detail(t, now, bridges, resolved_from, page))
                }
                None => Response::error(ErrorCode::NotFound, format!("no thread {}", q.id)),
            }
        }
        Command::ThreadEdit(e) => {
            let now = daemon.now();
            let (id, result) = {
                let mut mem = daemon.memory().lock();
                // The id of a merged thread names the thread that took its messages; a delete
                // acts on exactly the id given (what is left of a merge goes, nothing else).
                let id = match e.action {
                    ThreadAction::Delete => e.id.clone(),
                    _ => mem
                        .graph
                        .resolve(&e.id)
                        .map_or_else(|| e.id.clone(), |t| t.id.clone()),
                };
                let id = id.as_str();
                let result = match (e.action, e.title.as_deref()) {
                    (ThreadAction::Rename, Some(title)) => mem.rename_thread(id, title),
                    (ThreadAction::Rename, None) => {
                        Err(EditError::Invalid("rename needs a title".into()))
                    }
                    (_, Some(_)) => Err(EditError::Invalid("only rename takes a title".into())),
                    (ThreadAction::Suspend, None) => {
                        mem.set_thread_status(id, ThreadStatus::Suspended, now)
                    }
                    (ThreadAction::Reactivate, None) => {
                        mem.set_thread_status(id, ThreadStatus::Active, now)
                    }
                    (ThreadAction::Archive, None) => {
                        mem.set_thread_status(id, ThreadStatus::Archived, now)
                    }
                    (ThreadAction::Delete, None) => mem.delete_thread(id).map(|_| ()),
                    (ThreadAction::Pin, None) => mem.set_thread_pinned(id, true),
                    (ThreadAction::Unpin, None) => mem.set_thread_pinned(id, false),
                    (ThreadAction::NeverRecall, None) => mem.set_thread_never_recall(id, true),
                    (ThreadAction::AllowRecall, None) => mem.set_thread_never_recall(id, false),
                    (ThreadAction::Share, None) => mem.set_thread_sharing(id, Sharing::Shared),
                    (ThreadAction::Private, None) => mem.set_thread_sharing(id, Sharing::Private),
                    (ThreadAction::ProjectSharing, None) => {
                        mem.set_thread_sharing(id, Sharing::Project)
                    }
                };
                (id.to_string(), result)
            };
            let edited = Edited {
                id,
                action: e.action,
            };
            let reply = saved_edit(daemon, result, &edited).await;
            if reply.ok {
                tracing::info!("thread {} edited: {:?}", edited.id, edited.action);
            }
            reply
        }
        Command::Bridges(q) => {
            let now = daemon.now();
            let mem = daemon.memory().lock();
            if let Some(t) = &q.thread {
                if mem.graph.thread(t).is_none() {
                    return Response::error(ErrorCode::NotFound, format!("no thread {t}"));
                }
            }
            let mut list: Vec<&ThinkBridge> = match &q.thread {
                Some(t) => mem.graph.bridges_of(t).collect(),
                None => mem.graph.bridges().collect(),
            };
            list.sort_by(|a, b| {
                bridge_weight(b, now)
                    .total_cmp(&bridge_weight(a, now))
                    .then_with(|| a.id.cmp(&b.id))
            });
            let bridges: Vec<BridgeView> = list
                .iter()
                .map(|b| bridge_view(b, &mem.graph, now))
                .collect();
            Response::reply(&BridgeList {
                total: bridges.len(),
                bridges,
            })
        }
        Command::Bridge(q) => {
            let now = daemon.now();
            let mem = daemon.memory().lock();
            match mem.graph.bridge(&q.id) {
                Some(b) => Response::reply(&bridge_view(b, &mem.graph, now)),
                None => Response::error(ErrorCode::NotFound, format!("no bridge {}", q.id)),
            }
        }
        Command::BridgeEdit(e) => {
            let now = daemon.now();
            let result = {
                let mut mem = daemon.memory().lock();
                match e.action {
                    BridgeAction::Delete => mem.delete_bridge(&e.id).map(|_| ()),
                    BridgeAction::Invalidate => mem.set_bridge_valid(&e.id, false, now),
                    BridgeAction::Validate => mem.set_bridge_valid(&e.id, true, now),
                }
            };
            let edited = Edited {
                id: e.id,
                action: e.action,
            };
            saved_edit(daemon, result, &edited).await
        }
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
        Command::Search(q) => search(daemon, &q.query, q.limit.unwrap_or(10), q.team).await,
        Command::Recall(q) => daemon.recall().recall(q).await,
        Command::Timeline(q) => daemon.recall().timeline(q).await,
        Command::Remember(r) => daemon.recall().remember(r).await,
        Command::Mode(m) => mode(daemon, m.set.as_deref()).await,
        Command::Rules(r) => rules(daemon, r.add, r.remove).await,
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
        Command::Ui(_) => daemon.ui().ensure(daemon).await,
        Command::TeamSync(_) => Response::reply(&daemon.team_sync().state()),
        // The server streams these itself; here (no connection) only the reply.
        c => handle_streaming(daemon, c).await.0,
    }
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
        "status" => output::status(&status(daemon)),
        "health" => output::health(&health(daemon)),
        "help" => cli_prompt::HELP.to_string(),
        "threads" => {
            let status = match cli_prompt::flag_value(&args, "--status").map(str::parse::<StatusFilter>) {
                Some(Err(e)) => return e,
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
            let r = search(daemon, &cmd.args, 10, false).await;
            cli_prompt::result_or_error(r, output::search)
        }
        "mode" => {
            let set = args.first().filter(|m| **m != "status").copied();
            let r = mode(daemon, set).await;
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

async fn sync(daemon: &Daemon) -> Response {
    let target = daemon.capture().last_seq();
    let mut shutdown = daemon.life().subscribe_shutdown();
    let wait = daemon.capture().wait_processed(target);
    tokio::select! {
        processed = wait => match processed {
            true => match daemon.stats().lock().save_failing.clone() {
                // Processed, not saved: say so, never "saved".
                Some(failing) => Response::error(ErrorCode::Storage,
                    format!(
                        "captures up to {target} are processed but could not be saved ({}); they \
                         stay in the journal and are saved as soon as the disk allows",
                        failing.reason
                    ),
                ),
                None => Response::reply(&Synced {
                    processed: target,
                    saved: true,
                }),
            },
            false => Response::error(ErrorCode::ShuttingDown, "the daemon is stopping"),
        },
        _ = shutdown.recv() => Response::error(ErrorCode::ShuttingDown, "the daemon is stopping"),
    }
}

/// How long `search --team` waits for the team store (a person asked: longer than a prompt's).
const TEAM_SEARCH_BUDGET: std::time::Duration = std::time::Duration::from_secs(5);

async fn search(daemon: &Daemon, query: &str, limit: usize, team: bool) -> Response {
    let query = query.trim();
    if query.is_empty() {
        return Response::error(ErrorCode::BadRequest, "empty query");
    }
    let limit = limit.clamp(1, 200);
    let extraction = daemon
        .memory()
        .extractor()
        .extract(query, SourceType::Prompt)
        .unwrap_or_default();
    let topics = normalize_topics(
        extraction
            .subjects
            .iter()
            .chain(&extraction.key_concepts)
            .chain(
                query
                    .split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
                    .iter(),
            ),
    );
    let vectors = match daemon.memory().embed_query(query.to_string()).await {
        Ok(v) => v,
        Err(e) => return Response::error(ErrorCode::Embedding, e.to_string()),
    };
    let now = daemon.now();
    let team = if team {
        let terms = crate::team_sync::lexical_terms(vectors.stems(), &topics);
        Some(
            daemon
                .team_sync()
                .search(
                    &terms,
                    &vectors.embedding,
                    limit,
                    TEAM_SEARCH_BUDGET,
                    Depth::Asked,
                )
                .await,
        )
    } else {
        None
    };
    // Ranking every thread is CPU work under the memory's lock: on a blocking thread.
    let memory = daemon.memory().clone();
    let embedding = vectors.embedding;
    let results = tokio::task::spawn_blocking(move || {
        let mem = memory.lock();
        mem.rank(&embedding, &topics, limit)
            .into_iter()
            .filter_map(|(id, score)| {
                let t = mem.graph.thread(&id)?;
                Some(SearchHit {
                    thread: thread_summary(t, now),
                    score: round3(score),
                })
            })
            .collect()
    })
    .await;
    match results {
        Ok(results) => Response::reply(&SearchResults {
            query: query.to_string(),
            results,
            team,
        }),
        Err(e) => Response::error(ErrorCode::Internal, format!("search panicked: {e}")),
    }
}

async fn mode(daemon: &Daemon, set: Option<&str>) -> Response {
    let Some(name) = set else {
        let config = daemon.config().get();
        let active = daemon
            .memory()
            .lock()
            .graph
            .count_by_status(ThreadStatus::Active);
        return Response::reply(&ModeReply {
            mode: config.mode,
            quota: config.quota(),
            active_threads: active,
            suspended: None,
        });
    };
    let Some(mode) = Mode::parse(name) else {
        return Response::error(
            ErrorCode::BadRequest,
            format!("unknown mode `{name}` (light, normal, heavy, max)"),
        );
    };
    // The file as it is now, with only `mode` changed: a person's edits since the daemon
    // started are kept, and the daemon takes them too.
    let path = daemon.paths().config();
    let written = tokio::task::spawn_blocking(move || {
        ai_smartness_config::Config::set_key(&path, &["mode"], json!(mode.as_str()))
    })
    .await;
    let config = match written {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Response::error(ErrorCode::Config, format!("mode not changed: {e}")),
        Err(e) => return Response::error(ErrorCode::Internal, e.to_string()),
    };
    let quota = config.quota();
    daemon.config().set(config);
    // A lower quota suspends the lightest threads at once.
    let Some(rx) = daemon.prune().run_now(true, false).await else {
        return Response::error(ErrorCode::ShuttingDown, "the daemon is stopping");
    };
    let report = rx.await.unwrap_or_default();
    Response::reply(&ModeReply {
        mode,
        quota,
        active_threads: report.active_threads,
        suspended: Some(report.suspended_by_quota + report.suspended_by_decay),
    })
}

/// Lists or changes the user rules through their owner (a change runs off the async workers).
async fn rules(daemon: &Daemon, add: Option<String>, remove: Option<usize>) -> Response {
    let owner = daemon.rules().clone();
    let change = match (add, remove) {
        (Some(_), Some(_)) => {
            return Response::error(ErrorCode::BadRequest, "add or remove, not both")
        }
        (None, None) => {
            return Response::reply(&RulesReply {
                rules: owner.rules().rules,
            })
        }
        (Some(text), None) => RuleChange::Add(text),
        (None, Some(n)) => RuleChange::Remove(n),
    };
    let done = tokio::task::spawn_blocking(move || {
        owner.update(|r| match &change {
            RuleChange::Add(text) => r.add(text),
            RuleChange::Remove(n) => r.remove(*n).map(|_| ()),
        })
    })
    .await;
    match done {
        Ok(Ok(((), rules))) => Response::reply(&RulesReply { rules: rules.rules }),
        Ok(Err(e @ RuleError::Io(_))) => Response::error(ErrorCode::Storage, e.to_string()),
        Ok(Err(e)) => Response::error(ErrorCode::BadRequest, e.to_string()),
        Err(e) => Response::error(ErrorCode::Storage, e.to_string()),
    }
}

/// One change to the user rules.
enum RuleChange {
    Add(String),
    Remove(usize),
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One line of `ai threads`.
/// `ai consolidate` may take this long to plan.
const ON_DEMAND: ai_smartness_core::memory::consolidate::Budget =
    ai_smartness_core::memory::consolidate::Budget {
        time: std::time::Duration::from_secs(10),
    };

/// What a thread's listing line and its page share.
fn thread_header(t: &Thread, now: DateTime<Utc>) -> ThreadHeader {
    ThreadHeader {
        id: t.id.clone(),
        title: t.title.clone(),
        status: t.status.as_str().to_string(),
        weight: round3(thread_weight(t, now)),
        origin_type: t.origin_type,
        parent_id: t.parent_id.clone(),
        last_active: t.last_active.to_rfc3339(),
        created_at: t.created_at.to_rfc3339(),
        activation_count: t.activation_count,
        summary: t.summary.clone(),
        pinned: t.pinned,
        never_recall: t.never_recall,
    }
}

pub fn thread_summary(t: &Thread, now: DateTime<Utc>) -> ThreadSummary {
    ThreadSummary {
        header: thread_header(t, now),
        messages: t.messages.len(),
        topics: t.topics.iter().take(6).cloned().collect(),
    }
}

/// `ai thread ID`: everything but the raw embedding, with its bridges; with `page`, only the
/// messages in its range.
pub fn thread_detail(
    t: &Thread,
    now: DateTime<Utc>,
    bridges: Vec<BridgeView>,
    resolved_from: Option<String>,
    page: Option<(std::ops::Range<usize>, MessagePage)>,
) -> ThreadDetail {
    let (messages, page) = match page {
        Some((range, page)) => (
            t.messages.get(range).map(<[_]>::to_vec).unwrap_or_default(),
            Some(page),
        ),
        None => (t.messages.clone(), None),
    };
    ThreadDetail {
        header: thread_header(t, now),
        messages,
        topics: t.topics.clone(),
        drift_history: t.drift_history.clone(),
        child_ids: t.child_ids.clone(),
        decisions: t.decisions.clone(),
        questions: t.questions.clone(),
        embedded: t.embedding.is_some(),
        // What the thread is about now (its title comes from these unless a person or an LLM
        // wrote it), and what is left of a merge.
        title_by: t.title_by,
        profile: t.profile.clone(),
        merged_into: t.merged_into.clone(),
        bridges,
        resolved_from,
        page,
    }
}

pub fn bridge_view(
    b: &ThinkBridge,
    g: &ai_smartness_core::memory::graph::Graph,
    now: DateTime<Utc>,
) -> BridgeView {
    let title = |id: &str| g.thread(id).map(|t| t.title.clone()).unwrap_or_default();
    BridgeView {
        id: b.id.clone(),
        source_id: b.source_id.clone(),
        source_title: title(&b.source_id),
        target_id: b.target_id.clone(),
        target_title: title(&b.target_id),
        relation_type: b.relation_type,
        status: b.status.as_str().to_string(),
        weight: round3(bridge_weight(b, now)),
        confidence: round3(b.confidence),
        shared_concepts: b.shared_concepts.clone(),
        reason: b.reason.clone(),
        propagated_from: b.propagated_from.clone(),
        propagation_depth: b.propagation_depth,
        use_count: b.use_count,
        last_used: b.last_used.map(|d| d.to_rfc3339()),
        created_at: b.created_at.to_rfc3339(),
    }
}

fn status(daemon: &Daemon) -> StatusReply {
    let now = daemon.now();
    let config = daemon.config().get();
    let llm = daemon.refiner().status(&config);
    let stats = daemon.stats().snapshot();
    let assistant = requests::overview(daemon.assistant());
    let runs = daemon.runs().overview();
    let embed = daemon.memory().embed();
    let mem = daemon.memory().lock();
    let g = &mem.graph;
    let mut weak = 0;
    let mut invalid = 0;
    for b in g.bridges() {
        match b.status {
            ai_smartness_core::memory::types::BridgeStatus::Weak => weak += 1,
            ai_smartness_core::memory::types::BridgeStatus::Invalid => invalid += 1,
            ai_smartness_core::memory::types::BridgeStatus::Active => {}
        }
    }
    StatusReply {
        project: daemon.paths().root.display().to_string(),
        project_name: config.project_name.clone(),
        pid: std::process::id(),
        protocol: PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_secs: (now - daemon.life().started_at()).num_seconds().max(0),
        mode: config.mode,
        quota: config.quota(),
        threads: ThreadCounts {
            total: g.thread_count(),
            active: g.count_by_status(ThreadStatus::Active),
            suspended: g.count_by_status(ThreadStatus::Suspended),
            archived: g.count_by_status(ThreadStatus::Archived),
        },
        bridges: BridgeCounts {
            total: g.bridge_count(),
            weak,
            invalid,
        },
        embedder: EmbedderStatus {
            kind: embed.kind(),
            name: embed.kind().to_string(),
            degraded: embed.degraded_reason().is_some(),
            reason: embed.degraded_reason(),
            // Words of the memory with a vector for related words, and those still waiting.
            words: mem.words.len(),
            words_pending: mem.index.new_word_count(),
        },
        extractor: daemon.memory().extractor().name().to_string(),
        llm,
        journal_pending: daemon.capture().pending(),
        assistant,
        runs,
        stats,
    }
}

fn health(daemon: &Daemon) -> HealthReply {
    // The cached reachability: never waits for the provider.
    let llm = daemon.refiner().health();
    // Counted under the memory's lock; the files below are read after it is released.
    let (total, embedded, multi, bridge_count) = {
        let mem = daemon.memory().lock();
        let g = &mem.graph;
        (
            g.thread_count(),
            g.threads().filter(|t| t.embedding.is_some()).count(),
            g.threads().filter(|t| t.messages.len() > 1).count(),
            g.bridge_count(),
        )
    };
    let ratio = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            round3(a as f64 / b as f64)
        }
    };
    let embed = daemon.memory().embed();
    let stats = daemon.stats().snapshot();
    let quarantine = std::fs::read_dir(daemon.paths().db().join("quarantine"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| !e.file_name().to_string_lossy().ends_with(".reason.txt"))
                .count()
        })
        .unwrap_or(0);
    // Saving a capture appends its message and replaces its thread's header (a small file):
    // while saving fails, say how much room that takes (the largest header, twice, for its
    // temporary copy, and room for a message).
    let save_needs_bytes = stats.save_failing.as_ref().map(|_| {
        let largest_header = std::fs::read_dir(daemon.paths().db().join("threads"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        2 * largest_header + 64 * 1024
    });
    HealthReply {
        daemon: "running".to_string(),
        pid: std::process::id(),
        captures: CapturesHealth {
            refusing: stats.capture_refusals.refusing.clone(),
            refused_total: stats.capture_refusals.total,
        },
        saving: SavingHealth {
            failing: stats.save_failing.clone(),
            needs_bytes: save_needs_bytes,
        },
        config_problems: stats.config_problems.clone(),
        embedder: EmbedderHealth {
            name: embed.kind().to_string(),
            degraded: embed.degraded_reason().is_some(),
            reason: embed.degraded_reason(),
        },
        extractor: daemon.memory().extractor().name().to_string(),
        llm,
        embedding_coverage: ratio(embedded, total),
        continuation_rate: ratio(multi, total),
        bridge_ratio: ratio(bridge_count, total),
        threads: total,
        journal_pending: daemon.capture().pending(),
        quarantined_files: quarantine,
        persist_errors: stats.persist_errors,
        bad_requests: stats.bad_requests,
        last_prune: stats.last_prune.map(|d| d.to_rfc3339()),
        reindexing: stats.reindexing,
        log: daemon.paths().daemon_log().display().to_string(),
        hooks: hooks_health(daemon, &stats),
    }
}

/// Per hook: when it last reached the daemon, and the errors it recorded itself in
/// `.ai/hooks/NAME.json` (a hook that cannot reach the daemon can only tell a file).
fn hooks_health(
    daemon: &Daemon,
    stats: &super::state::Stats,
) -> std::collections::BTreeMap<String, HookHealth> {
    let mut out = std::collections::BTreeMap::new();
    for hook in ["ai-inject", "ai-capture", "ai-compact"] {
        let file = daemon
            .paths()
            .ai_dir
            .join("hooks")
            .join(format!("{hook}.json"));
        // What the hook wrote; a file that does not read is no record.
        let recorded: HookHealth = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        out.insert(
            hook.to_string(),
            HookHealth {
                last_run: stats.hooks.get(hook).map(|d| d.to_rfc3339()),
                ..recorded
            },
        );
    }
    out
}
