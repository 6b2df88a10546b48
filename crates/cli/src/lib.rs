//! The `ai` command: one file per command group, tables for people, `--json` for programs.
//! This is the binary's edge, so errors are `anyhow`.

pub mod logging;

mod daemon_ctl;
mod hooks_setup;
mod import;
mod init;
mod runs;
mod sessions;
mod team;

use ai_smartness_proto::client::{Client, ClientError};
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_proto::protocol::{
    BridgeAction, BridgeEdit, BridgesQuery, CaptureRequest, Command, ConsolidateRequest,
    ContextRequest, Flag, IdQuery, ModeRequest, PruneRequest, Request, Response, RulesRequest,
    SearchQuery, StatusFilter, ThreadAction, ThreadEdit, ThreadQuery, ThreadsQuery, UiRequest,
};
use ai_smartness_replies::render as output;
use ai_smartness_replies::{Captured, Edited, Reindexed, Synced, UiStarted};
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "ai",
    version,
    about = "Long-term memory for coding agents",
    disable_help_subcommand = true
)]
pub struct Cli {
    /// The project (default: the nearest parent folder holding `.ai/`).
    #[arg(long, global = true, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum TeamAction {
    /// Join a team store: checks it, brings its schema up to date, keeps the address without
    /// its password (give it in PGPASSWORD, the variable `team.password_env` names, or
    /// ~/.pgpass). Nothing is shared until you choose.
    Join {
        /// postgres://USER@HOST:PORT/DATABASE (a password typed here is used once, not kept).
        url: String,
        /// The team's name (default: `default`); several teams can share one database.
        #[arg(long)]
        team: Option<String>,
        /// The name your shared items carry (default: git's user.name).
        #[arg(long)]
        author: Option<String>,
    },
    /// Choose what the project shares: `none` (only threads shared one by one with `ai thread
    /// ID --share`) or `all` (every thread not marked private); `--kinds` limits what may
    /// leave, whatever shared it, to these kinds of message.
    Share {
        #[arg(value_parser = ["none", "all"])]
        what: String,
        /// Comma-separated: prompt, response, write, command, read, task, fetch, note
        /// (`--kinds all` lifts the limit). Unchanged when not given.
        #[arg(long, value_delimiter = ',')]
        kinds: Option<Vec<String>>,
    },
    /// Whether the store answers, what is shared, the counts (exit 3 when unreachable).
    Status,
    /// Stop using the team store (what was shared stays there).
    Leave,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Create `.ai/` in the project (idempotent).
    Init {
        #[arg(long, value_parser = ["light", "normal", "heavy", "max"])]
        mode: Option<String>,
        #[arg(long, value_parser = ["en", "fr", "es"])]
        lang: Option<String>,
    },
    /// Control the daemon.
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// Overview of the memory.
    Status,
    /// Health checks: daemon, embedder, coverage, continuation rate, bridge ratio.
    Health,
    /// Recompute every embedding.
    Reindex,
    /// Tidy the threads now: merge threads about the same subject, split threads holding
    /// separate subjects, retitle (the daemon also does this by itself when idle).
    Consolidate {
        /// Only show what it would do.
        #[arg(long)]
        dry_run: bool,
    },
    /// Wait until every capture acknowledged so far is processed and saved; fails if saving
    /// fails (a full disk), saying why.
    Sync,
    /// Show this help.
    Help,
    /// List threads.
    Threads {
        /// active, suspended, archived, live (active and suspended) or all.
        #[arg(long, default_value = "active")]
        status: StatusFilter,
        /// Show weight bars.
        #[arg(long)]
        show_weight: bool,
        /// Apply decay, suspension and quota now.
        #[arg(long)]
        prune: bool,
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Show or change one thread.
    Thread(ThreadArgs),
    /// List bridges.
    Bridges {
        #[arg(long, value_name = "ID")]
        thread: Option<String>,
        #[arg(long)]
        show_weight: bool,
        /// Apply decay now and delete dead bridges.
        #[arg(long)]
        prune: bool,
    },
    /// Show or change one bridge.
    Bridge(BridgeArgs),
    /// What inject would add for this prompt (nothing captured, nothing changed).
    Context {
        prompt: Vec<String>,
        /// Token budget (characters / 4); default from config (1,200).
        #[arg(long)]
        budget: Option<usize>,
        /// Say why: whether the memory speaks and on what evidence, and what each message's
        /// score is made of (or the best candidate and the bar it missed).
        #[arg(long)]
        explain: bool,
    },
    /// Team memory on PostgreSQL: join a team store, see it, leave it.
    Team {
        #[command(subcommand)]
        action: TeamAction,
    },
    /// Serve the memory as MCP tools on stdin/stdout, for Claude Code (the plugin registers
    /// it; or `claude mcp add ai-smartness -- ai mcp`). Creates `.ai/` when the project has
    /// none.
    Mcp,
    /// Semantic search over threads.
    Search {
        query: Vec<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Also search the team store (its messages, marked with their author).
        #[arg(long)]
        team: bool,
    },
    /// Capture content from stdin, as a hook would.
    Capture {
        #[arg(long)]
        tool: String,
        /// When it happened (RFC 3339).
        #[arg(long)]
        at: Option<String>,
        #[arg(long, value_parser = ["user", "assistant"])]
        source: Option<String>,
    },
    /// Import a conversation: jsonl or a Claude Code transcript.
    Import {
        file: PathBuf,
        #[arg(long, default_value = "jsonl", value_parser = ["jsonl", "claude-transcript"])]
        format: String,
    },
    /// Show or change the mode (quota of active threads).
    Mode {
        #[arg(value_parser = ["status", "light", "normal", "heavy", "max"])]
        mode: Option<String>,
    },
    /// User rules injected with every prompt.
    Rules {
        #[command(subcommand)]
        action: Option<RulesAction>,
    },
    /// Talk with the memory assistant (needs an LLM): one message, or a conversation.
    Chat {
        message: Vec<String>,
        /// Continue this chat.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Every action waits for your approval.
        #[arg(long)]
        validate: bool,
    },
    /// List chat and automation sessions.
    Sessions {
        #[arg(long, value_parser = ["chat", "automation", "CHAT", "AUTOMATION"])]
        kind: Option<String>,
        #[arg(long)]
        limit: Option<usize>,
    },
    /// One session's transcript (audit-only messages marked).
    Session { id: String },
    /// Scheduled and on-demand tasks for the memory assistant.
    Automation {
        #[command(subcommand)]
        action: sessions::AutomationCmd,
    },
    /// Approve the actions a session waits on.
    Approve { session: String },
    /// Refuse them.
    Reject {
        session: String,
        /// Why, for the assistant.
        #[arg(long)]
        feedback: Option<String>,
    },
    /// Answer a session's question (the option's number or text; yes/no).
    Answer {
        session: String,
        choice: Vec<String>,
    },
    /// Follow sessions (JSON lines), or a workflow run (its events, stored then live).
    Watch { id: Option<String> },
    /// The dashboard: a local web page to see and steer the memory, the assistant and the
    /// runs. Started in the daemon on 127.0.0.1; the address it prints carries a token.
    Ui {
        /// Only print the address (else the browser opens it, when there is one).
        #[arg(long)]
        no_open: bool,
    },
    /// A verified workflow run: `ai run "TASK"`, or `ai run reverify|repair|export|show RUN`.
    Run {
        words: Vec<String>,
        /// Work in a throwaway copy of the workspace.
        #[arg(long, conflicts_with = "direct")]
        sandbox: bool,
        /// Work in the workspace itself.
        #[arg(long)]
        direct: bool,
        /// Allow the run to write files.
        #[arg(long)]
        write: bool,
        /// Start and return (`ai watch RUN` follows it).
        #[arg(long)]
        detach: bool,
    },
    /// List workflow runs.
    Runs,
    /// Register or remove the Claude Code hooks in `.claude/settings.json` (used by install.sh).
    Hooks {
        #[command(subcommand)]
        action: HooksAction,
    },
}

#[derive(Subcommand, Debug)]
enum HooksAction {
    /// Merge our hook entries, pointing at the binaries in DIR.
    Install {
        #[arg(long, value_name = "DIR")]
        bin_dir: PathBuf,
    },
    /// Remove exactly our hook entries.
    Uninstall,
}

#[derive(Subcommand, Debug)]
pub(crate) enum DaemonAction {
    /// Start in the background.
    Start {
        #[arg(long)]
        quiet: bool,
    },
    Stop,
    Status,
    Restart,
    /// Run in the foreground.
    Run {
        /// Say on standard output, in one line, when the daemon answers or why it cannot
        /// start: how a starter that could not fork (Windows) hears from it.
        #[arg(long = ai_smartness_daemon::lifecycle::REPORT_START_FLAG, hide = true)]
        report_start: bool,
    },
}

#[derive(Args, Debug)]
struct ThreadArgs {
    id: String,
    #[arg(long, group = "edit")]
    delete: bool,
    #[arg(long, group = "edit", value_name = "TITLE")]
    rename: Option<String>,
    #[arg(long, group = "edit")]
    suspend: bool,
    #[arg(long, group = "edit")]
    reactivate: bool,
    #[arg(long, group = "edit")]
    archive: bool,
    /// Always a candidate for recall, never suspended by decay or the quota.
    #[arg(long, group = "edit")]
    pin: bool,
    /// Undo --pin.
    #[arg(long, group = "edit")]
    unpin: bool,
    /// Kept and searchable, never injected into a prompt.
    #[arg(long, group = "edit")]
    never_recall: bool,
    /// Undo --never-recall.
    #[arg(long, group = "edit")]
    allow_recall: bool,
    /// Share with the team store, whatever `team.share` says.
    #[arg(long, group = "edit")]
    share: bool,
    /// Never send to the team store, whatever `team.share` says.
    #[arg(long, group = "edit")]
    private: bool,
    /// Undo --share or --private: as `team.share` says.
    #[arg(long, group = "edit")]
    project_sharing: bool,
}

#[derive(Args, Debug)]
struct BridgeArgs {
    id: String,
    #[arg(long, group = "edit")]
    delete: bool,
    /// Mark it INVALID (kept, never traversed).
    #[arg(long, group = "edit")]
    invalidate: bool,
    /// Undo --invalidate.
    #[arg(long, group = "edit")]
    validate: bool,
}

#[derive(Subcommand, Debug)]
enum RulesAction {
    List,
    Add { text: Vec<String> },
    Remove { n: usize },
}

/// Parses the command line and runs it.
pub fn run() -> Result<ExitCode> {
    let cli = Cli::parse();
    let cwd = std::env::current_dir().context("no current directory")?;
    let explicit = cli
        .project
        .clone()
        .map(|p| if p.is_absolute() { p } else { cwd.join(p) });

    if let Cmd::Init { mode, lang } = &cli.command {
        let root = explicit.unwrap_or(cwd);
        return init::init(&root, mode.as_deref(), lang.as_deref(), cli.json);
    }
    if let Cmd::Help = cli.command {
        use clap::CommandFactory;
        Cli::command().print_long_help()?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Cmd::Hooks { action } = &cli.command {
        let root = explicit.unwrap_or(cwd);
        let changed = match action {
            HooksAction::Install { bin_dir } => hooks_setup::install(&root, bin_dir)?,
            HooksAction::Uninstall => hooks_setup::uninstall(&root)?,
        };
        let settings = root.join(".claude/settings.json");
        println!(
            "{} {}",
            if changed { "updated" } else { "unchanged:" },
            settings.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Cmd::Mcp = cli.command {
        // Claude Code starts the server in the project (and names it in CLAUDE_PROJECT_DIR).
        let root = explicit
            .or_else(|| ProjectPaths::discover(&cwd).map(|p| p.root))
            .or_else(|| {
                std::env::var_os("CLAUDE_PROJECT_DIR")
                    .map(PathBuf::from)
                    .filter(|d| d.is_absolute())
            })
            .unwrap_or(cwd);
        // Only a project without `.ai/` gets one: an existing config is not read here, so one
        // that does not load is reported by each tool call (the daemon cannot start) instead of
        // the server failing to start at all.
        let paths = if root.join(".ai").is_dir() {
            ProjectPaths::new(root)
        } else {
            init::create(&root, None, None)?.0
        };
        ai_smartness_mcp::run(paths)?;
        return Ok(ExitCode::SUCCESS);
    }
    let paths = match explicit {
        Some(root) => {
            if !root.join(".ai").is_dir() {
                bail!(
                    "{} has no .ai/ folder: run `ai init` there first",
                    root.display()
                );
            }
            ProjectPaths::new(root)
        }
        None => ProjectPaths::discover(&cwd).ok_or_else(|| {
            anyhow!(
                "no .ai/ folder here or above {}: run `ai init`",
                cwd.display()
            )
        })?,
    };
    let ctx = Ctx {
        paths,
        json: cli.json,
    };
    match cli.command {
        Cmd::Init { .. } | Cmd::Help | Cmd::Hooks { .. } | Cmd::Mcp => {
            unreachable!("handled above")
        }
        Cmd::Daemon { action } => daemon_ctl::daemon(&ctx, action),
        Cmd::Status => ctx.print_as(&ctx.call(Command::Status(Flag))?, output::status),
        Cmd::Health => ctx.print_as(&ctx.call(Command::Health(Flag))?, output::health),
        Cmd::Sync => {
            let r = ctx.request_with_timeout(Request::Command(Command::Sync(Flag)), None)?;
            ctx.print_as(&r, |v: &Synced| {
                format!(
                    "every capture up to journal seq {} is processed and saved\n",
                    v.processed
                )
            })
        }
        Cmd::Consolidate { dry_run } => {
            let r = ctx.request_with_timeout(
                Request::Command(Command::Consolidate(ConsolidateRequest { dry_run })),
                None,
            )?;
            ctx.print_as(&r, output::consolidation)
        }
        Cmd::Reindex => {
            let r = ctx.request_with_timeout(Request::Command(Command::Reindex(Flag)), None)?;
            ctx.print_as(&r, |v: &Reindexed| {
                format!("reindexed {} threads with {}\n", v.threads, v.embedder)
            })
        }
        Cmd::Threads {
            status,
            show_weight,
            prune,
            limit,
        } => {
            if prune {
                let r = ctx.call(Command::Prune(PruneRequest {
                    threads: true,
                    bridges: false,
                }))?;
                if ctx.json {
                    return ctx.print(&r, |_| String::new());
                }
                ctx.print_as(&r, output::prune)?;
            }
            let r = ctx.call(Command::Threads(ThreadsQuery {
                status: Some(status),
                limit,
            }))?;
            ctx.print_as(&r, |v| output::threads(v, show_weight))
        }
        Cmd::Thread(a) => {
            let edit = |action, title| {
                Command::ThreadEdit(ThreadEdit {
                    id: a.id.clone(),
                    action,
                    title,
                })
            };
            let cmd = if a.delete {
                edit(ThreadAction::Delete, None)
            } else if let Some(t) = a.rename.clone() {
                edit(ThreadAction::Rename, Some(t))
            } else if a.suspend {
                edit(ThreadAction::Suspend, None)
            } else if a.reactivate {
                edit(ThreadAction::Reactivate, None)
            } else if a.archive {
                edit(ThreadAction::Archive, None)
            } else if a.pin {
                edit(ThreadAction::Pin, None)
            } else if a.unpin {
                edit(ThreadAction::Unpin, None)
            } else if a.never_recall {
                edit(ThreadAction::NeverRecall, None)
            } else if a.allow_recall {
                edit(ThreadAction::AllowRecall, None)
            } else if a.share {
                edit(ThreadAction::Share, None)
            } else if a.private {
                edit(ThreadAction::Private, None)
            } else if a.project_sharing {
                edit(ThreadAction::ProjectSharing, None)
            } else {
                let r = ctx.call(Command::Thread(ThreadQuery {
                    id: a.id.clone(),
                    offset: None,
                    limit: None,
                }))?;
                return ctx.print_as(&r, output::thread);
            };
            let r = ctx.call(cmd)?;
            ctx.print_as(&r, |v: &Edited<ThreadAction>| {
                format!("{} {}\n", v.id, v.action.as_str())
            })
        }
        Cmd::Bridges {
            thread,
            show_weight,
            prune,
        } => {
            if prune {
                let r = ctx.call(Command::Prune(PruneRequest {
                    threads: false,
                    bridges: true,
                }))?;
                if ctx.json {
                    return ctx.print(&r, |_| String::new());
                }
                ctx.print_as(&r, output::prune)?;
            }
            let r = ctx.call(Command::Bridges(BridgesQuery { thread }))?;
            ctx.print_as(&r, |v| output::bridges(v, show_weight))
        }
        Cmd::Bridge(a) => {
            let action = if a.delete {
                Some(BridgeAction::Delete)
            } else if a.invalidate {
                Some(BridgeAction::Invalidate)
            } else if a.validate {
                Some(BridgeAction::Validate)
            } else {
                None
            };
            let r = match action {
                Some(action) => ctx.call(Command::BridgeEdit(BridgeEdit {
                    id: a.id.clone(),
                    action,
                }))?,
                None => ctx.call(Command::Bridge(IdQuery { id: a.id.clone() }))?,
            };
            match action {
                Some(_) => ctx.print_as(&r, |v: &Edited<BridgeAction>| {
                    format!("{} {}\n", v.id, v.action.as_str())
                }),
                None => ctx.print_as(&r, output::bridge),
            }
        }
        Cmd::Context {
            prompt,
            budget,
            explain,
        } => {
            let prompt = prompt.join(" ");
            if prompt.trim().is_empty() {
                bail!("ai context needs a prompt");
            }
            let r = ctx.call(Command::Context(ContextRequest { prompt, budget }))?;
            if explain {
                ctx.print_as(&r, output::explain)
            } else {
                ctx.print_as(&r, output::context)
            }
        }
        Cmd::Search { query, limit, team } => {
            let query = query.join(" ");
            if query.trim().is_empty() {
                bail!("ai search needs a query");
            }
            let r = ctx.call(Command::Search(SearchQuery {
                query,
                limit: Some(limit),
                team,
            }))?;
            ctx.print_as(&r, output::search)
        }
        Cmd::Capture { tool, at, source } => {
            let mut content = String::new();
            std::io::stdin()
                .read_to_string(&mut content)
                .context("reading stdin")?;
            let r = ctx.request(Request::Capture(CaptureRequest {
                tool,
                content,
                at,
                source,
                session_id: None,
                metadata: None,
                hook: None,
            }))?;
            ctx.print_as(&r, |v: &Captured| match (&v.skipped, v.seq) {
                (Some(why), _) => format!("not kept: {why}\n"),
                (None, Some(seq)) => format!("captured (journal seq {seq})\n"),
                (None, None) => "captured\n".to_string(),
            })
        }
        Cmd::Import { file, format } => import::import(&ctx, &file, &format),
        Cmd::Chat {
            message,
            session,
            validate,
        } => sessions::chat(&ctx, message, session, validate),
        Cmd::Sessions { kind, limit } => sessions::sessions(&ctx, kind, limit),
        Cmd::Session { id } => sessions::session(&ctx, id),
        Cmd::Automation { action } => sessions::automation(&ctx, action),
        Cmd::Approve { session } => {
            sessions::answer_cmd(&ctx, Command::Approve, session, None, None)
        }
        Cmd::Reject { session, feedback } => {
            sessions::answer_cmd(&ctx, Command::Reject, session, feedback, None)
        }
        Cmd::Answer { session, choice } => {
            let choice = choice.join(" ");
            if choice.trim().is_empty() {
                bail!("ai answer needs a choice");
            }
            sessions::answer_cmd(&ctx, Command::Answer, session, None, Some(choice))
        }
        Cmd::Watch { id: Some(id) } if id.starts_with("run_") => runs::follow(&ctx, &id),
        Cmd::Watch { id } => sessions::watch(&ctx, id),
        Cmd::Ui { no_open } => ui(&ctx, no_open),
        Cmd::Team { action } => match action {
            TeamAction::Join { url, team, author } => team::join(&ctx, &url, team, author),
            TeamAction::Share { what, kinds } => team::share(&ctx, &what, kinds),
            TeamAction::Status => team::status(&ctx),
            TeamAction::Leave => team::leave(&ctx),
        },
        Cmd::Run {
            words,
            sandbox,
            direct,
            write,
            detach,
        } => runs::run(&ctx, words, sandbox, direct, write, detach),
        Cmd::Runs => runs::list(&ctx),
        Cmd::Mode { mode } => {
            let set = mode.filter(|m| m != "status");
            let r = ctx.call(Command::Mode(ModeRequest { set }))?;
            ctx.print_as(&r, output::mode)
        }
        Cmd::Rules { action } => {
            let req = match action {
                None | Some(RulesAction::List) => RulesRequest::default(),
                Some(RulesAction::Add { text }) => RulesRequest {
                    add: Some(text.join(" ")),
                    remove: None,
                },
                Some(RulesAction::Remove { n }) => RulesRequest {
                    add: None,
                    remove: Some(n),
                },
            };
            let r = ctx.call(Command::Rules(req))?;
            ctx.print_as(&r, output::rules)
        }
    }
}

/// What every command needs: where the project is and how to print.
pub(crate) struct Ctx {
    pub paths: ProjectPaths,
    pub json: bool,
}

/// Ordinary requests answer well within this; reindex and sync may take longer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

impl Ctx {
    /// Connects to the daemon, starting it when it is not running.
    pub fn connect(&self) -> Result<Client> {
        match Client::connect(&self.paths.socket(), REQUEST_TIMEOUT) {
            Ok(c) => Ok(c),
            Err(ClientError::NotRunning(_)) => {
                daemon_ctl::start_and_wait(&self.paths, true)?;
                Client::connect(&self.paths.socket(), REQUEST_TIMEOUT).map_err(Into::into)
            }
            Err(e) => Err(e.into()),
        }
    }

    pub fn request(&self, req: Request) -> Result<Value> {
        self.request_with_timeout(req, Some(REQUEST_TIMEOUT))
    }

    pub fn request_with_timeout(&self, req: Request, timeout: Option<Duration>) -> Result<Value> {
        let mut client = self.connect()?;
        client.set_timeout(timeout)?;
        into_result(client.request(&req)?)
    }

    pub fn call(&self, cmd: Command) -> Result<Value> {
        self.request(Request::Command(cmd))
    }

    /// Asks the daemon only when it is running: for a report that can do without its part,
    /// which must not start a daemon as a side effect.
    pub fn call_if_running(&self, cmd: Command) -> Option<Value> {
        let mut client = Client::connect(&self.paths.socket(), REQUEST_TIMEOUT).ok()?;
        into_result(client.request(&Request::Command(cmd)).ok()?).ok()
    }

    /// Prints a typed reply: the result exactly as the daemon sent it with `--json`, else read
    /// as `T` and rendered for people. A reply that is not a `T` is an error that says so (a
    /// daemon of another version), never a blank table.
    pub fn print_as<T: serde::de::DeserializeOwned>(
        &self,
        v: &Value,
        human: impl Fn(&T) -> String,
    ) -> Result<ExitCode> {
        if self.json {
            return self.print(v, |_| String::new());
        }
        let typed: T = serde_json::from_value(v.clone()).map_err(|e| {
            anyhow!("the daemon's reply is not what this `ai` expects ({e}): restart the daemon")
        })?;
        self.print(v, |_| human(&typed))
    }

    /// Prints the result as JSON (`--json`) or as text for people.
    pub fn print(&self, v: &Value, human: impl Fn(&Value) -> String) -> Result<ExitCode> {
        let mut out = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer_pretty(&mut out, v)?;
            writeln!(out)?;
        } else {
            out.write_all(human(v).as_bytes())?;
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}

/// A reply's result, or its error as an error.
pub(crate) fn into_result(r: Response) -> Result<Value> {
    if r.ok {
        return Ok(r.result.unwrap_or(Value::Null));
    }
    let e = r.error.map(|e| format!("{} ({})", e.message, e.code));
    Err(anyhow!(
        e.unwrap_or_else(|| "the daemon refused the request".into())
    ))
}

/// `ai ui`: starts the dashboard in the daemon (or finds it), prints its address and opens it.
fn ui(ctx: &Ctx, no_open: bool) -> Result<ExitCode> {
    let r = ctx.call(Command::Ui(UiRequest::default()))?;
    let started: UiStarted =
        serde_json::from_value(r.clone()).context("the daemon's reply to `ui`")?;
    ctx.print_as(&r, |v: &UiStarted| {
        format!(
            "dashboard {}: {}\n",
            if v.started { "started" } else { "running" },
            v.url
        )
    })?;
    if no_open {
        return Ok(ExitCode::SUCCESS);
    }
    // The browser's command line is readable by any local user: it gets an address good for
    // one visit within a minute, never the reusable one printed above.
    if !has_browser() {
        eprintln!("no graphical session here: open the address above in a browser");
    } else if let Err(e) = webbrowser::open(&started.open_url) {
        eprintln!("could not open a browser ({e}): open the address above");
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether opening a page can show it to someone: on Linux and the BSDs, a graphical session
/// (or a `BROWSER` set by the person); elsewhere the system always has a browser.
fn has_browser() -> bool {
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        return true;
    }
    ["DISPLAY", "WAYLAND_DISPLAY", "BROWSER"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}
