//! A blocking client of the daemon over its local socket (a Unix socket here, through
//! `interprocess`, which also speaks named pipes where there are no Unix sockets), for the CLI
//! and the hook binaries: connect with a timeout, send one request line, read one reply line.

use crate::paths::{self, ProjectPaths};
use crate::protocol::{Request, Response, MAX_FRAME_BYTES};
#[cfg(unix)]
use interprocess::local_socket::traits::Stream as _;
use interprocess::local_socket::traits::StreamCommon as _;
use interprocess::local_socket::Stream;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why a request did not get an answer.
#[derive(Debug)]
pub enum ClientError {
    /// Nothing listens on the socket (no daemon, or a stale socket file).
    NotRunning(PathBuf),
    Io(io::Error),
    /// The daemon closed the connection or answered something that is not a reply.
    BadReply(String),
    /// The socket, its folder or the process answering is not this user's own: someone else
    /// could read what is sent and choose what comes back. Nothing was sent.
    Unsafe(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::NotRunning(p) => write!(f, "no daemon listening on {}", p.display()),
            ClientError::Io(e) => write!(f, "daemon connection: {e}"),
            ClientError::BadReply(m) => write!(f, "bad reply from daemon: {m}"),
            ClientError::Unsafe(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<io::Error> for ClientError {
    fn from(e: io::Error) -> Self {
        ClientError::Io(e)
    }
}

/// One connection to the daemon; several requests may go over it in turn.
pub struct Client {
    /// `None` once an exchange ran out of time on a platform whose pipe cannot time out a read
    /// (Windows): the read was left to finish on its own thread, and the connection is spent.
    reader: Option<BufReader<Stream>>,
    /// When set, the whole exchange ends by then: every read and write waits at most what is
    /// left (a hook's budget covers connecting, sending and the reply alike).
    deadline: Option<Instant>,
    /// Windows: the wait for each exchange when there is no deadline (a named pipe has no I/O
    /// timeouts of its own; on Unix the socket holds it).
    #[cfg(windows)]
    io_timeout: std::cell::Cell<Option<Duration>>,
}

impl Client {
    /// Connects within `timeout`, with `timeout` on every later read and write. Refuses a
    /// socket that is not this user's own and private, and a daemon that does not run as this
    /// user.
    pub fn connect(socket: &Path, timeout: Duration) -> Result<Client, ClientError> {
        let stream = Self::open(socket, Instant::now() + timeout)?;
        #[cfg(unix)]
        {
            stream.set_recv_timeout(Some(timeout))?;
            stream.set_send_timeout(Some(timeout))?;
        }
        Ok(Client {
            reader: Some(BufReader::new(stream)),
            deadline: None,
            #[cfg(windows)]
            io_timeout: std::cell::Cell::new(Some(timeout)),
        })
    }

    /// Connects, sends and reads by `deadline`, whatever the daemon does: a daemon that does
    /// not accept (its queue full, or hung) costs the caller no more than that.
    pub fn connect_by(socket: &Path, deadline: Instant) -> Result<Client, ClientError> {
        let stream = Self::open(socket, deadline)?;
        Ok(Client {
            reader: Some(BufReader::new(stream)),
            deadline: Some(deadline),
            #[cfg(windows)]
            io_timeout: std::cell::Cell::new(None),
        })
    }

    /// Connects by `deadline` and checks who listens.
    fn open(socket: &Path, deadline: Instant) -> Result<Stream, ClientError> {
        paths::check_private_socket(socket).map_err(|e| ClientError::Unsafe(e.0))?;
        let stream = connect_before(socket, deadline).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning(socket.to_path_buf())
            }
            _ => ClientError::Io(e),
        })?;
        check_server_user(&stream, socket)?;
        Ok(stream)
    }

    /// What is left of the deadline; an error when nothing is.
    fn left(&self) -> io::Result<Option<Duration>> {
        let Some(deadline) = self.deadline else {
            return Ok(None);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the exchange's time is up",
            ));
        }
        Ok(Some(left))
    }

    /// The connection, unless a timed-out exchange spent it.
    #[cfg(unix)]
    fn stream(&mut self) -> io::Result<&mut BufReader<Stream>> {
        self.reader.as_mut().ok_or_else(spent)
    }

    /// Sends a request and waits for its reply.
    pub fn request(&mut self, request: &Request) -> Result<Response, ClientError> {
        let mut line =
            serde_json::to_vec(request).map_err(|e| ClientError::BadReply(e.to_string()))?;
        line.push(b'\n');
        self.send_raw(&line)
    }

    /// Sends an already-encoded line (ending in `\n`) and reads the reply.
    pub fn send_raw(&mut self, line: &[u8]) -> Result<Response, ClientError> {
        let reply = self.exchange(Some(line))?;
        if reply.is_empty() {
            return Err(ClientError::BadReply("connection closed".into()));
        }
        serde_json::from_slice(&reply).map_err(|e| ClientError::BadReply(e.to_string()))
    }

    /// Reads one more line the daemon streams after a reply (`follow`, `watch`); `None` when
    /// the daemon closed the connection.
    pub fn next_line(&mut self) -> Result<Option<serde_json::Value>, ClientError> {
        let line = self.exchange(None)?;
        if line.is_empty() {
            return Ok(None);
        }
        serde_json::from_slice(&line)
            .map(Some)
            .map_err(|e| ClientError::BadReply(e.to_string()))
    }

    /// Sends `line` when given, then reads one line (empty when the daemon closed), each
    /// waiting at most what the deadline or the timeout allows.
    #[cfg(unix)]
    fn exchange(&mut self, line: Option<&[u8]>) -> io::Result<Vec<u8>> {
        if let Some(line) = line {
            self.arm()?;
            let stream = self.stream()?.get_mut();
            stream.write_all(line)?;
            stream.flush()?;
        }
        self.arm()?;
        read_line(self.stream()?)
    }

    /// Before a read or a write under a deadline: the socket waits at most what is left.
    #[cfg(unix)]
    fn arm(&mut self) -> io::Result<()> {
        let Some(left) = self.left()? else {
            return Ok(());
        };
        let stream = self.stream()?.get_ref();
        stream.set_recv_timeout(Some(left))?;
        stream.set_send_timeout(Some(left))
    }

    /// Windows: a named pipe cannot time out a read, so the exchange runs on a thread of its
    /// own and this one waits for it at most what is allowed. When time runs out the thread
    /// is left to end with the connection (the daemon answers late or closes it), and this
    /// connection is spent.
    #[cfg(windows)]
    fn exchange(&mut self, line: Option<&[u8]>) -> io::Result<Vec<u8>> {
        let wait = match self.left()? {
            Some(left) => Some(self.io_timeout.get().map_or(left, |t| t.min(left))),
            None => self.io_timeout.get(),
        };
        let mut stream = self.reader.take().ok_or_else(spent)?;
        let line = line.map(<[u8]>::to_vec);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("daemon-exchange".into())
            .spawn(move || {
                let result = (|| {
                    if let Some(line) = &line {
                        stream.get_mut().write_all(line)?;
                        stream.get_mut().flush()?;
                    }
                    read_line(&mut stream)
                })();
                let _ = tx.send((stream, result));
            })?;
        let (stream, result) = match wait {
            Some(wait) => rx.recv_timeout(wait).map_err(|_| {
                io::Error::new(io::ErrorKind::TimedOut, "the daemon did not answer in time")
            })?,
            None => rx
                .recv()
                .map_err(|_| io::Error::other("the exchange's thread ended without a word"))?,
        };
        self.reader = Some(stream);
        result
    }

    /// Changes the read timeout (long operations such as `reindex` or `sync`); a deadline
    /// given at connection stays in force.
    pub fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        #[cfg(unix)]
        if let Some(reader) = &self.reader {
            reader.get_ref().set_recv_timeout(timeout)?;
        }
        #[cfg(windows)]
        self.io_timeout.set(timeout);
        Ok(())
    }
}

/// Why a connection whose earlier exchange timed out cannot be used again.
fn spent() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "an earlier exchange on this connection timed out",
    )
}

/// One line from the daemon, at most the largest reply it may send; empty when it closed.
fn read_line(stream: &mut BufReader<Stream>) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let limit = (MAX_FRAME_BYTES * 64) as u64;
    stream.take(limit).read_until(b'\n', &mut line)?;
    Ok(line)
}

/// How long to wait before trying again when the daemon's accept queue is full.
#[cfg(unix)]
const FULL_QUEUE_RETRY: Duration = Duration::from_millis(2);

/// Connects to the socket by `deadline`. A blocking connect waits for as long as the daemon's
/// accept queue stays full (a hung daemon, a flood of connections), so the socket is put in
/// non-blocking mode: a full queue answers at once, and the attempt is made again until the
/// deadline.
#[cfg(unix)]
fn connect_before(socket: &Path, deadline: Instant) -> io::Result<Stream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    sock.set_nonblocking(true)?;
    let addr = SockAddr::unix(socket)?;
    loop {
        match sock.connect(&addr) {
            Ok(()) => break,
            Err(e) if e.raw_os_error() == Some(libc::EISCONN) => break,
            // Linux: the queue is full; the same socket may try again.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the daemon did not accept the connection in time",
                    ));
                }
                std::thread::sleep(left.min(FULL_QUEUE_RETRY));
            }
            // Elsewhere a connection may be under way: wait until it is made, or time is up.
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
                wait_writable(&sock, deadline)?;
                if let Some(e) = sock.take_error()? {
                    return Err(e);
                }
                break;
            }
            Err(e) => return Err(e),
        }
    }
    sock.set_nonblocking(false)?;
    let stream: std::os::unix::net::UnixStream = sock.into();
    Ok(Stream::from(
        interprocess::os::unix::uds_local_socket::Stream::from(stream),
    ))
}

/// Waits until the socket can be written to, or the deadline.
#[cfg(unix)]
fn wait_writable(sock: &socket2::Socket, deadline: Instant) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the daemon did not accept the connection in time",
            ));
        }
        let mut fds = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd, for the duration of the call.
        let n = unsafe { libc::poll(&mut fds, 1, ms) };
        if n > 0 {
            return Ok(());
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// The process answering must run as this user: its uid on Unix (the peer's credentials).
#[cfg(unix)]
fn check_server_user(stream: &Stream, socket: &Path) -> Result<(), ClientError> {
    let me = paths::current_uid();
    let peer = stream.peer_creds().and_then(|c| {
        c.euid()
            .ok_or_else(|| io::Error::other("the socket does not say who listens on it"))
    });
    match peer {
        Ok(uid) if uid == me => Ok(()),
        Ok(uid) => Err(ClientError::Unsafe(format!(
            "the process listening on {} runs as uid {uid}, not as this user (uid {me}): not \
             talking to it",
            socket.display()
        ))),
        Err(e) => Err(ClientError::Io(e)),
    }
}

/// Windows: the process serving the pipe (its id, from the pipe) must run as this user's SID:
/// a pipe of the same name created first by another user is refused.
#[cfg(windows)]
fn check_server_user(stream: &Stream, socket: &Path) -> Result<(), ClientError> {
    use crate::windows_user::{current_user_sid, process_user_sid};
    let pid = stream
        .peer_creds()
        .and_then(|c| {
            c.pid()
                .ok_or_else(|| io::Error::other("the pipe does not say who serves it"))
        })
        .map_err(ClientError::Io)?;
    let them = process_user_sid(pid).map_err(ClientError::Io)?;
    let me = current_user_sid().map_err(ClientError::Io)?;
    if them != me {
        return Err(ClientError::Unsafe(format!(
            "the process serving {} runs as {them}, not as this user ({me}): not talking to it",
            socket.display()
        )));
    }
    check_pipe_private(stream, socket, &me)
}

/// Windows: the pipe's access list must let this user alone in (as the daemon makes it): a
/// pipe others may open too is refused, as a Unix socket with group or other bits is.
#[cfg(windows)]
fn check_pipe_private(stream: &Stream, socket: &Path, me: &str) -> Result<(), ClientError> {
    use std::os::windows::io::AsHandle;
    let Stream::NamedPipe(pipe) = stream;
    let others =
        crate::windows_user::others_allowed(pipe.as_handle(), me).map_err(ClientError::Io)?;
    if !others.is_empty() {
        return Err(ClientError::Unsafe(format!(
            "the pipe {} lets other users in ({}): it must be this user's alone; not talking \
             to it",
            socket.display(),
            others.join(", ")
        )));
    }
    Ok(())
}

/// Where there are no Unix sockets, the named pipe is opened with the same bound.
#[cfg(not(unix))]
fn connect_before(socket: &Path, deadline: Instant) -> io::Result<Stream> {
    use interprocess::local_socket::{ConnectOptions, GenericFilePath, ToFsName};
    use interprocess::ConnectWaitMode;
    let left = deadline.saturating_duration_since(Instant::now());
    ConnectOptions::new()
        .name(socket.to_fs_name::<GenericFilePath>()?)
        .wait_mode(ConnectWaitMode::Timeout(left))
        .connect_sync()
}

/// A failed daemon start, as recorded in [`ProjectPaths::start_failure`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StartFailure {
    /// Why it failed (the config's error, a foreign socket folder...).
    pub error: String,
    /// Failed starts in a row.
    pub attempts: u32,
    /// When (RFC 3339), for people.
    pub at: String,
}

/// The first retry waits this long after a failed start; each failure doubles it.
pub const START_RETRY_FIRST: Duration = Duration::from_secs(30);
/// The longest wait between two starts that keep failing.
pub const START_RETRY_MAX: Duration = Duration::from_secs(600);

/// The recorded failed start, if any.
pub fn read_start_failure(project: &ProjectPaths) -> Option<StartFailure> {
    let bytes = std::fs::read(project.start_failure()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Why a client should not start the daemon now, if it should not: one is already starting or
/// running (it holds the instance lock), or its last start failed too recently, with nothing
/// changed in the config since. Hooks ask this before every start, so a daemon that cannot
/// start does not get a starter process per tool call.
pub fn why_not_start(project: &ProjectPaths) -> Option<String> {
    if instance_lock_held(project) {
        return Some("a daemon is starting or running (it holds the instance lock)".into());
    }
    let failure = read_start_failure(project)?;
    let failed_at = std::fs::metadata(project.start_failure())
        .and_then(|m| m.modified())
        .ok()?;
    // An edited config may be the fix: try again at once.
    let config_changed = std::fs::metadata(project.config())
        .and_then(|m| m.modified())
        .is_ok_and(|t| t > failed_at);
    if config_changed {
        return None;
    }
    let wait = START_RETRY_FIRST
        .saturating_mul(1 << failure.attempts.saturating_sub(1).min(10))
        .min(START_RETRY_MAX);
    let since = failed_at.elapsed().unwrap_or_default();
    (since < wait).then(|| {
        format!(
            "the daemon's last start failed ({}, {} in a row); next try in {} s",
            failure.error,
            failure.attempts,
            (wait - since).as_secs().max(1)
        )
    })
}

/// Whether a process holds the project's instance lock (a daemon runs or is starting).
pub fn instance_lock_held(project: &ProjectPaths) -> bool {
    let Ok(file) = std::fs::File::open(project.lock_file()) else {
        return false;
    };
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// Starts `ai daemon start` for the project in the background without waiting for it (hooks use
/// this: they never wait for a daemon to come up).
pub fn spawn_daemon_detached(ai_binary: &Path, project: &ProjectPaths) -> io::Result<()> {
    Command::new(ai_binary)
        .arg("--project")
        .arg(&project.root)
        .args(["daemon", "start", "--quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(|_| ())
}

/// Run under wine by `scripts/check-platforms.sh`: the pipe checks with real pipes.
#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;
    use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
    use interprocess::os::windows::local_socket::ListenerOptionsExt;
    use interprocess::os::windows::security_descriptor::SecurityDescriptor;

    /// A pipe served by this process, its access list `sddl` (the system's default when `None`).
    fn serve(tag: &str, sddl: Option<String>) -> (PathBuf, interprocess::local_socket::Listener) {
        let name = PathBuf::from(format!(
            r"\\.\pipe\ai-smartness-test-{}-{tag}",
            std::process::id()
        ));
        let fs_name = name.clone().to_fs_name::<GenericFilePath>().unwrap();
        let mut options = ListenerOptions::new().name(fs_name);
        if let Some(sddl) = sddl {
            let sddl = widestring::U16CString::from_str(sddl).unwrap();
            options = options.security_descriptor(SecurityDescriptor::deserialize(&sddl).unwrap());
        }
        let listener = options.create_sync().unwrap();
        (name, listener)
    }

    #[test]
    fn a_pipe_other_users_may_open_is_refused_and_a_private_one_is_not() {
        let me = crate::windows_user::current_user_sid().unwrap();
        let timeout = Duration::from_secs(5);
        // Everyone (S-1-1-0) may open it: refused, naming who.
        let (open, _open) = serve("open", Some(format!("D:P(A;;GA;;;WD)(A;;GA;;;{me})")));
        match Client::connect(&open, timeout) {
            Err(ClientError::Unsafe(why)) => assert!(why.contains("S-1-1-0"), "{why}"),
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(_) => panic!("a pipe everyone may open was trusted"),
        }
        // The system's default list lets every user read: refused too.
        let (default, _default) = serve("default", None);
        assert!(
            matches!(
                Client::connect(&default, timeout),
                Err(ClientError::Unsafe(_))
            ),
            "a pipe with the default access list was trusted"
        );
        // This user's alone, as the daemon makes it: trusted.
        let (private, _private) = serve("private", Some(format!("D:P(A;;GA;;;{me})")));
        if let Err(e) = Client::connect(&private, timeout) {
            panic!("the user's own pipe was refused: {e}");
        }
    }
}
