//! Process lifecycle: one daemon per project (a file lock on `.ai/processor.lock`, with the pid
//! and protocol version in `.ai/processor.pid`), detaching, the line on which a starter hears
//! whether its daemon answers, and stale socket detection. How a process detaches, is checked
//! and is stopped differs by platform: [`unix`] (a double fork before any async runtime
//! exists, signals) and [`windows`] (a detached child process, process handles).

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
pub use unix::{clear_stale_socket, daemonize, process_alive, terminate, Forked};
#[cfg(windows)]
pub use windows::{clear_stale_socket, process_alive, spawn_detached, terminate};

use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_proto::protocol::PROTOCOL_VERSION;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// The flag (`--report-start`) that tells `ai daemon run` to say on its standard output when
/// it answers (or why it cannot): how a daemon started as a new process rather than forked
/// reports its start.
pub const REPORT_START_FLAG: &str = "report-start";

#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    #[error("a daemon is already running for this project ({0})")]
    AlreadyRunning(String),
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    #[error("something is already answering on {0}")]
    SocketInUse(String),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> LifecycleError {
    let what = what.into();
    move |source| LifecycleError::Io { what, source }
}

/// What the pid file says: enough for a client to know who runs and how to talk to it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PidInfo {
    pub pid: u32,
    pub protocol: u32,
    pub version: String,
    pub socket: String,
    pub started_at: String,
}

/// Holds the instance lock for as long as it lives (the kernel drops it if the process dies,
/// even by kill -9, so a crash never leaves a stale lock).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Takes the project's instance lock and writes this process's pid in the lock file, or says
/// who holds it. The pid comes from the lock file, written by the holder itself, never from a
/// pid file a killed daemon may have left.
pub fn acquire_lock(paths: &ProjectPaths) -> Result<InstanceLock, LifecycleError> {
    let path = paths.lock_file();
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .read(true)
        .open(&path)
        .map_err(io_err(format!("opening {}", path.display())))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                .filter(|&pid| process_alive(pid))
                .map(|pid| format!("pid {pid}"))
                .unwrap_or_else(|| "another one is starting".into());
            return Err(LifecycleError::AlreadyRunning(holder));
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(io_err(format!("locking {}", path.display()))(e))
        }
    }
    use std::io::Write;
    let written = file
        .set_len(0)
        .and_then(|()| file.write_all(format!("{}\n", std::process::id()).as_bytes()));
    if let Err(e) = written {
        tracing::warn!("cannot write the pid in {}: {e}", path.display());
    }
    Ok(InstanceLock { _file: file })
}

/// Whether some process holds the instance lock right now (a daemon runs or is starting).
pub fn lock_is_held(paths: &ProjectPaths) -> bool {
    ai_smartness_proto::client::instance_lock_held(paths)
}

/// Records that the daemon could not start, for clients (who say why at once) and hooks (who
/// then back off). Another daemon already running is not a failure and is not recorded.
pub fn record_start_failure(paths: &ProjectPaths, error: &str) {
    let attempts =
        ai_smartness_proto::client::read_start_failure(paths).map_or(0, |f| f.attempts) + 1;
    let record = ai_smartness_proto::client::StartFailure {
        error: error.to_string(),
        attempts,
        // Wall clock: a stamp for people and clients reading the file, not memory logic.
        at: chrono::Utc::now().to_rfc3339(),
    };
    if let Ok(bytes) = serde_json::to_vec_pretty(&record) {
        let _ = ai_smartness_proto::atomic::write_atomic(&paths.start_failure(), &bytes);
    }
}

/// Forgets a recorded failed start: the daemon is up.
pub fn clear_start_failure(paths: &ProjectPaths) {
    let _ = std::fs::remove_file(paths.start_failure());
}

pub fn write_pid_file(paths: &ProjectPaths, socket: &Path) -> Result<(), LifecycleError> {
    let info = PidInfo {
        pid: std::process::id(),
        protocol: PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").into(),
        socket: socket.display().to_string(),
        // Wall clock: when this process really started, whatever clock the memory runs on.
        started_at: chrono::Utc::now().to_rfc3339(),
    };
    let bytes = serde_json::to_vec_pretty(&info).map_err(|e| LifecycleError::Io {
        what: "encoding the pid file".into(),
        source: io::Error::other(e),
    })?;
    ai_smartness_proto::atomic::write_atomic(&paths.pid_file(), &bytes)
        .map_err(io_err("writing the pid file"))
}

pub fn read_pid_file(paths: &ProjectPaths) -> Option<PidInfo> {
    let bytes = std::fs::read(paths.pid_file()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The line between a starter and the daemon it forked: the daemon says once that it answers,
/// or why it could not start, so the starter says so at once instead of waiting for a socket
/// that will never answer.
pub struct StartPipe {
    /// The daemon's end; written once, then closed.
    tell: std::sync::Mutex<Option<Box<dyn Write + Send>>>,
}

/// What a starter heard from the daemon it forked.
#[derive(Debug, PartialEq, Eq)]
pub enum StartNews {
    /// It listens on its socket.
    Ready,
    /// It could not start, and this is why.
    Failed(String),
    /// Another daemon took the project first (two starts at once: a hook's and a person's):
    /// that one is the daemon to wait for.
    AnotherRuns,
    /// It went away without a word (it crashed): its stderr log says more.
    Vanished,
    /// Nothing came within the wait.
    Silent,
}

/// Makes the pipe: the starter keeps the reading end, the daemon gets the other (both are
/// closed on exec, so no subprocess of the daemon holds it open).
pub fn start_pipe() -> Result<(io::PipeReader, StartPipe), LifecycleError> {
    let (read, write) = io::pipe().map_err(io_err("making the start pipe"))?;
    Ok((read, StartPipe::to(Box::new(write))))
}

impl StartPipe {
    /// The line written to `out`.
    pub fn to(out: Box<dyn Write + Send>) -> StartPipe {
        StartPipe {
            tell: std::sync::Mutex::new(Some(out)),
        }
    }

    /// The daemon answers.
    pub fn ready(&self) {
        self.tell("ready");
    }

    /// The daemon cannot start: `why`, on one line.
    pub fn failed(&self, why: &str) {
        let line: String = why
            .chars()
            .map(|c| if c == '\n' { ' ' } else { c })
            .collect();
        self.tell(&format!("failed: {line}"));
    }

    /// The daemon stops because another one holds the project.
    pub fn another_runs(&self) {
        self.tell(ANOTHER_RUNS);
    }

    /// Writes once; later calls do nothing.
    fn tell(&self, line: &str) {
        let mut tell = self.tell.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut f) = tell.take() {
            let _ = f.write_all(format!("{line}\n").as_bytes());
            let _ = f.flush();
        }
    }
}

/// The start pipe's line for [`StartNews::AnotherRuns`].
const ANOTHER_RUNS: &str = "another daemon runs";

/// Reads what the daemon started says, waiting at most `within`. The pipe is read on a thread
/// of its own (a read with a timeout is not portable): when nothing comes in time, that thread
/// ends with the daemon's end of the pipe, or with this process.
pub fn hear_start(mut pipe: io::PipeReader, within: std::time::Duration) -> StartNews {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let reader = std::thread::Builder::new()
        .name("start-news".into())
        .spawn(move || {
            let mut said = Vec::new();
            let mut buf = [0u8; 4096];
            let news = loop {
                match io::Read::read(&mut pipe, &mut buf) {
                    Ok(0) | Err(_) => break StartNews::Vanished,
                    Ok(n) => said.extend_from_slice(&buf[..n]),
                }
                if let Some(end) = said.iter().position(|&b| b == b'\n') {
                    let line = String::from_utf8_lossy(&said[..end]).into_owned();
                    break match line.strip_prefix("failed: ") {
                        Some(why) => StartNews::Failed(why.to_string()),
                        None if line == ANOTHER_RUNS => StartNews::AnotherRuns,
                        None => StartNews::Ready,
                    };
                }
            };
            let _ = tx.send(news);
        });
    if reader.is_err() {
        return StartNews::Silent;
    }
    rx.recv_timeout(within).unwrap_or(StartNews::Silent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn heard(say: impl FnOnce(&StartPipe)) -> StartNews {
        let (news, pipe) = start_pipe().unwrap();
        say(&pipe);
        hear_start(news, Duration::from_secs(5))
    }

    #[test]
    fn the_starter_tells_a_lost_race_from_a_failure() {
        assert!(matches!(heard(|p| p.ready()), StartNews::Ready));
        assert!(matches!(
            heard(|p| p.another_runs()),
            StartNews::AnotherRuns
        ));
        match heard(|p| p.failed("no room\non disk")) {
            StartNews::Failed(why) => assert_eq!(why, "no room on disk"),
            other => panic!("{other:?}"),
        }
    }
}
