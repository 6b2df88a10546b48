//! Process lifecycle: one daemon per project (an flock on `.ai/processor.lock`, with the pid and
//! protocol version in `.ai/processor.pid`), detaching (double fork before any async runtime
//! exists), and stale socket detection.

use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_proto::protocol::PROTOCOL_VERSION;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

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
        at: chrono::Utc::now().to_rfc3339(),
    };
    if let Ok(bytes) = serde_json::to_vec_pretty(&record) {
        let _ = ai_smartness_store::atomic::write_atomic(&paths.start_failure(), &bytes);
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
        started_at: chrono::Utc::now().to_rfc3339(),
    };
    let bytes = serde_json::to_vec_pretty(&info).map_err(|e| LifecycleError::Io {
        what: "encoding the pid file".into(),
        source: io::Error::other(e),
    })?;
    ai_smartness_store::atomic::write_atomic(&paths.pid_file(), &bytes)
        .map_err(io_err("writing the pid file"))
}

pub fn read_pid_file(paths: &ProjectPaths) -> Option<PidInfo> {
    let bytes = std::fs::read(paths.pid_file()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Removes a socket file nobody answers on (left by a crash); refuses when one answers.
pub fn clear_stale_socket(socket: &Path) -> Result<(), LifecycleError> {
    if !socket.exists() {
        return Ok(());
    }
    if UnixStream::connect(socket).is_ok() {
        return Err(LifecycleError::SocketInUse(socket.display().to_string()));
    }
    tracing::warn!("removing stale socket {}", socket.display());
    std::fs::remove_file(socket).map_err(io_err(format!("removing {}", socket.display())))
}

/// Which side of [`daemonize`] we are on.
pub enum Forked {
    /// The original process: it may wait for the daemon to answer, then exit.
    Parent,
    /// The detached daemon: no terminal, own session, stdio redirected.
    Daemon,
}

/// The line between a starter and the daemon it forked: the daemon says once that it answers,
/// or why it could not start, so the starter says so at once instead of waiting for a socket
/// that will never answer.
pub struct StartPipe {
    /// The daemon's end; written once, then closed.
    tell: std::sync::Mutex<Option<File>>,
}

/// What a starter heard from the daemon it forked.
#[derive(Debug, PartialEq, Eq)]
pub enum StartNews {
    /// It listens on its socket.
    Ready,
    /// It could not start, and this is why.
    Failed(String),
    /// It went away without a word (it crashed): its stderr log says more.
    Vanished,
    /// Nothing came within the wait.
    Silent,
}

/// Makes the pipe: the starter keeps the reading end, the daemon gets the other (both are
/// closed on exec, so no subprocess of the daemon holds it open).
pub fn start_pipe() -> Result<(File, StartPipe), LifecycleError> {
    let (read, write) = close_on_exec_pipe().map_err(io_err("making the start pipe"))?;
    Ok((
        read,
        StartPipe {
            tell: std::sync::Mutex::new(Some(write)),
        },
    ))
}

/// A pipe whose two ends are closed on exec, made so in one call where the system has one.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn close_on_exec_pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made by pipe2 and belong to nobody else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// [`close_on_exec_pipe`] where there is no `pipe2` (macOS): the flag is set right after. The
/// daemon starts no subprocess while this runs (it is made before the fork), so no exec can
/// come in between.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn close_on_exec_pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two descriptors into the array given.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made by pipe and belong to nobody else; owned by the
    // Files from here on, they are closed on any error below.
    let ends = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    for fd in fds {
        // SAFETY: fcntl on a descriptor we own, setting only its close-on-exec flag.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(ends)
}

impl StartPipe {
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

    /// Writes once; later calls do nothing.
    fn tell(&self, line: &str) {
        let mut tell = self.tell.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut f) = tell.take() {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// Reads what the forked daemon says, waiting at most `within`.
pub fn hear_start(mut pipe: File, within: std::time::Duration) -> StartNews {
    let deadline = std::time::Instant::now() + within;
    let mut said = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return StartNews::Silent;
        }
        let mut fds = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd, for the duration of the call.
        if unsafe { libc::poll(&mut fds, 1, ms) } <= 0 {
            continue;
        }
        let mut buf = [0u8; 4096];
        match io::Read::read(&mut pipe, &mut buf) {
            Ok(0) | Err(_) => return StartNews::Vanished,
            Ok(n) => said.extend_from_slice(&buf[..n]),
        }
        if let Some(end) = said.iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&said[..end]).into_owned();
            return match line.strip_prefix("failed: ") {
                Some(why) => StartNews::Failed(why.to_string()),
                None => StartNews::Ready,
            };
        }
    }
}

/// Double fork + setsid, stdin/stdout to /dev/null and stderr to `stderr_log`. Must run before
/// any thread or async runtime exists: fork copies only the calling thread.
pub fn daemonize(stderr_log: &Path) -> Result<Forked, LifecycleError> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(stderr_log)
        .map_err(io_err(format!("opening {}", stderr_log.display())))?;
    let null = File::open("/dev/null").map_err(io_err("opening /dev/null"))?;
    // SAFETY: single-threaded at this point (the caller guarantees no runtime exists). The
    // intermediate child only calls async-signal-safe functions before _exit.
    unsafe {
        match libc::fork() {
            -1 => return Err(io_err("fork")(io::Error::last_os_error())),
            0 => {}
            child => {
                // Reap the intermediate child so it never lingers as a zombie.
                let mut status = 0;
                libc::waitpid(child, &mut status, 0);
                return Ok(Forked::Parent);
            }
        }
        if libc::setsid() == -1 {
            libc::_exit(1);
        }
        match libc::fork() {
            -1 => libc::_exit(1),
            0 => {}
            _ => libc::_exit(0),
        }
        libc::umask(0o077);
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(null.as_raw_fd(), 1);
        libc::dup2(log.as_raw_fd(), 2);
    }
    Ok(Forked::Daemon)
}

/// Whether a process with this pid exists.
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Sends SIGTERM (the daemon shuts down cleanly on it).
pub fn terminate(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: plain kill(2).
    unsafe { libc::kill(pid, libc::SIGTERM) == 0 }
}
