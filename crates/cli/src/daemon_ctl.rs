//! `ai daemon start|stop|status|restart|run`.

use super::{Ctx, DaemonAction};
use ai_smartness_daemon::lifecycle;
#[cfg(unix)]
use ai_smartness_daemon::lifecycle::Forked;
use ai_smartness_proto::client::{Client, ClientError};
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_proto::protocol::{Command, Flag, Request};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const PING_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a start waits for the daemon to answer (it loads its memory meanwhile).
const START_WAIT: Duration = Duration::from_secs(15);

pub(crate) fn daemon(ctx: &Ctx, action: DaemonAction) -> Result<ExitCode> {
    match action {
        DaemonAction::Start { quiet } => {
            let pid = start_and_wait(&ctx.paths, quiet)?;
            if ctx.json {
                let running = ai_smartness_replies::DaemonRunning { running: true, pid };
                println!("{}", serde_json::to_string(&running)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        DaemonAction::Stop => {
            stop(&ctx.paths)?;
            if !ctx.json {
                println!("daemon stopped");
            }
            Ok(ExitCode::SUCCESS)
        }
        DaemonAction::Restart => {
            stop(&ctx.paths)?;
            start_and_wait(&ctx.paths, false)?;
            Ok(ExitCode::SUCCESS)
        }
        DaemonAction::Status => {
            let running = ping(&ctx.paths);
            let info = lifecycle::read_pid_file(&ctx.paths);
            if ctx.json {
                let shown = DaemonShown {
                    running: running.is_some(),
                    pid: running,
                    socket: ctx.paths.socket(),
                    pid_file: info,
                };
                println!("{}", serde_json::to_string(&shown)?);
            } else {
                match running {
                    Some(pid) => println!(
                        "daemon running (pid {pid}) on {}",
                        ctx.paths.socket().display()
                    ),
                    None => println!("daemon not running"),
                }
            }
            Ok(if running.is_some() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            })
        }
        DaemonAction::Run { report_start } => {
            let start = report_start.then(|| lifecycle::StartPipe::to(Box::new(std::io::stdout())));
            run_logged(&ctx.paths, start)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn keep_logs(paths: &ProjectPaths) -> usize {
    ai_smartness_config::Config::load(&paths.config())
        .map(|c| c.daemon.log_files_kept)
        .unwrap_or(7)
}

/// Opens the daemon's log, then runs the daemon in this process; a starter listening on
/// `start` hears why when the log cannot be opened.
fn run_logged(paths: &ProjectPaths, start: Option<lifecycle::StartPipe>) -> Result<()> {
    let _guard = match crate::logging::init_file(&paths.daemon_log(), keep_logs(paths)) {
        Ok(guard) => guard,
        Err(e) => {
            if let Some(start) = &start {
                start.failed(&format!("cannot open the log: {e}"));
            }
            return Err(e).context("opening the daemon log");
        }
    };
    run_daemon(paths, start)
}

fn run_daemon(paths: &ProjectPaths, start: Option<lifecycle::StartPipe>) -> Result<()> {
    let opts = ai_smartness_daemon::Options {
        clock: ai_smartness_core::clock::system(),
        data_dir: ai_smartness_embed::assets::data_dir(),
        start: start.map(std::sync::Arc::new),
    };
    ai_smartness_daemon::run(paths.clone(), opts).map_err(|e| {
        tracing::error!("daemon failed: {e}");
        if !e.another_runs() {
            lifecycle::record_start_failure(paths, &e.to_string());
        }
        e.into()
    })
}

/// What `ai daemon status --json` prints.
#[derive(serde::Serialize)]
struct DaemonShown {
    running: bool,
    /// The pid that answered the ping.
    pid: Option<u32>,
    socket: std::path::PathBuf,
    /// What the daemon wrote when it started (absent when it is not running).
    pid_file: Option<ai_smartness_daemon::lifecycle::PidInfo>,
}

/// The daemon's pid if it answers a ping.
pub(crate) fn ping(paths: &ProjectPaths) -> Option<u32> {
    let mut c = Client::connect(&paths.socket(), PING_TIMEOUT).ok()?;
    let r = c.request(&Request::Command(Command::Ping(Flag))).ok()?;
    r.pong.and(r.pid)
}

/// Starts the daemon detached (unless one answers already) and waits until it answers.
pub(crate) fn start_and_wait(paths: &ProjectPaths, quiet: bool) -> Result<u32> {
    if let Some(pid) = ping(paths) {
        if !quiet {
            println!("daemon already running (pid {pid})");
        }
        return Ok(pid);
    }
    // A config that does not load would stop the daemon at once: say so now, where and why.
    if let Err(e) = ai_smartness_config::Config::load(&paths.config()) {
        lifecycle::record_start_failure(paths, &e.to_string());
        bail!("the daemon cannot start: {e}");
    }
    let forked_at = std::time::SystemTime::now();
    let deadline = Instant::now() + START_WAIT;
    if lifecycle::lock_is_held(paths) {
        // A daemon holds the project: one starting (it answers soon), or one that answers on
        // another socket than this command's, which it would never do here.
        if let Some(info) = lifecycle::read_pid_file(paths) {
            let ours = paths.socket();
            if lifecycle::process_alive(info.pid) && Path::new(&info.socket) != ours {
                bail!(
                    "a daemon (pid {}) runs for this project on {}, not on {}: stop it with \
                     `ai daemon stop`, or kill it, then start again",
                    info.pid,
                    info.socket,
                    ours.display()
                );
            }
        }
    } else {
        let news = detach(paths)?;
        match lifecycle::hear_start(news, START_WAIT) {
            lifecycle::StartNews::Ready => {}
            lifecycle::StartNews::Failed(why) => bail!(
                "the daemon could not start: {why}; see {}",
                paths.daemon_stderr_log().display()
            ),
            lifecycle::StartNews::Vanished => bail!(
                "the daemon exited as it started; see {} and {}",
                paths.daemon_stderr_log().display(),
                paths.daemon_log().display()
            ),
            // Two starts at once (a hook's and this one): the other won, wait for it.
            lifecycle::StartNews::AnotherRuns | lifecycle::StartNews::Silent => {}
        }
    }
    wait_until_it_answers(paths, quiet, forked_at, deadline)
}

/// Starts the daemon detached from this process; returns the pipe on which it says whether it
/// answers. Unix: a double fork, so the daemon is this same program already loaded (the child
/// runs the daemon and never returns from here).
#[cfg(unix)]
fn detach(paths: &ProjectPaths) -> Result<std::io::PipeReader> {
    let (news, pipe) = lifecycle::start_pipe()?;
    match lifecycle::daemonize(&paths.daemon_stderr_log())? {
        Forked::Daemon => {
            drop(news);
            let code = match run_logged(paths, Some(pipe)) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("ai daemon: {e:#}");
                    1
                }
            };
            std::process::exit(code);
        }
        Forked::Parent => {
            // Only the daemon holds the writing end now: its exit ends the pipe.
            drop(pipe);
            Ok(news)
        }
    }
}

/// Windows has no fork: the daemon is a new process of this program (`ai daemon run
/// --report-start`), detached from this one's console.
#[cfg(windows)]
fn detach(paths: &ProjectPaths) -> Result<std::io::PipeReader> {
    Ok(lifecycle::spawn_detached(paths)?)
}

/// Either the daemon said it answers, or another start is under way: waits for it to answer.
fn wait_until_it_answers(
    paths: &ProjectPaths,
    quiet: bool,
    forked_at: std::time::SystemTime,
    deadline: Instant,
) -> Result<u32> {
    while Instant::now() < deadline {
        if let Some(pid) = ping(paths) {
            if !quiet {
                println!("daemon started (pid {pid})");
            }
            return Ok(pid);
        }
        // The daemon gave up: say why now rather than after the whole wait.
        if let Some(failure) = ai_smartness_proto::client::read_start_failure(paths) {
            let recorded = std::fs::metadata(paths.start_failure()).and_then(|m| m.modified());
            if recorded.is_ok_and(|t| t >= forked_at) {
                bail!(
                    "the daemon could not start: {}; see {}",
                    failure.error,
                    paths.daemon_stderr_log().display()
                );
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!(
        "the daemon did not answer within {} s; see {} and {}",
        START_WAIT.as_secs(),
        paths.daemon_log().display(),
        paths.daemon_stderr_log().display()
    )
}

/// Asks the daemon to stop and waits until it is gone; SIGTERM when it does not answer.
fn stop(paths: &ProjectPaths) -> Result<()> {
    let info = lifecycle::read_pid_file(paths);
    match Client::connect(&paths.socket(), PING_TIMEOUT) {
        Ok(mut c) => {
            let _ = c.request(&Request::Command(Command::Shutdown(Flag)));
        }
        Err(ClientError::NotRunning(_)) => {
            if !lifecycle::lock_is_held(paths) {
                return Ok(());
            }
            if let Some(i) = &info {
                lifecycle::terminate(i.pid);
            }
        }
        Err(e) => return Err(e.into()),
    }
    let deadline = Instant::now() + Duration::from_secs(25);
    while Instant::now() < deadline {
        // The lock goes first; wait for the process itself too, so its binary can be replaced.
        let exited = info
            .as_ref()
            .is_none_or(|i| !lifecycle::process_alive(i.pid));
        if !lifecycle::lock_is_held(paths) && exited {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(i) = info {
        lifecycle::terminate(i.pid);
    }
    bail!("the daemon did not stop within 25 s")
}
