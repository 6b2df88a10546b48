//! Subprocesses, one way for the whole project (workflow tools and the `claude` CLI provider).
//!
//! A command starts in a process group of its own, and that group is killed when its
//! [`GroupChild`] is dropped: on a timeout, when the caller is cancelled, and after a normal
//! exit (a background `sleep &` left behind would otherwise hold the pipes open, and keep
//! processes alive after the run that started them). [`run`] adds the usual case: wait with a
//! timeout and keep the tail of each output stream within a cap.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// How long output still arriving after the group was killed is waited for: a process that
/// left the group (a daemon started by the command) could hold a pipe open forever.
pub const READER_GRACE: Duration = Duration::from_secs(2);

/// A child in a process group of its own; the group is killed when this is dropped.
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    /// The group's id (the child's pid), while it can still be signalled.
    #[cfg(unix)]
    pgid: Option<i32>,
    /// Windows: the job object holding the child and what it starts.
    #[cfg(windows)]
    job: Option<job::Job>,
}

/// Starts `cmd` as the leader of a new process group (`kill_on_drop` too, for the leader).
#[cfg(unix)]
pub fn spawn_grouped(cmd: &mut Command) -> io::Result<GroupChild> {
    cmd.process_group(0).kill_on_drop(true);
    let child = cmd.spawn()?;
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    Ok(GroupChild { child, pgid })
}

/// Windows: starts `cmd` and puts it in a job object of its own (what it starts after that
/// joins the job too). A process it starts in the moment before it joins escapes the job.
#[cfg(windows)]
pub fn spawn_grouped(cmd: &mut Command) -> io::Result<GroupChild> {
    cmd.kill_on_drop(true);
    let child = cmd.spawn()?;
    let job = child.raw_handle().map(job::Job::holding).transpose()?;
    Ok(GroupChild { child, job })
}

impl GroupChild {
    pub fn stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    pub fn stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    pub fn stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Waits for the leader to exit.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Windows: every process of the job is terminated.
    #[cfg(windows)]
    pub fn kill_group(&self) {
        if let Some(job) = &self.job {
            job.kill();
        }
    }

    /// SIGKILL to every process of the group (those already gone are skipped by the kernel).
    #[cfg(unix)]
    pub fn kill_group(&self) {
        if let Some(pgid) = self.pgid.filter(|p| *p > 1) {
            // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH, ignored.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// What [`run`] saw of a command.
#[derive(Debug)]
pub struct Finished {
    /// The exit status; None when it timed out (killed) or could not be read.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    /// Killed at the timeout.
    pub timed_out: bool,
}

impl Finished {
    /// The exit code, or 128 + the signal that ended it (the shell's convention); -1 when
    /// unknown.
    pub fn returncode(&self) -> i32 {
        self.status.and_then(code_or_signal).unwrap_or(-1)
    }
}

#[cfg(unix)]
fn code_or_signal(s: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    s.code().or_else(|| s.signal().map(|n| 128 + n))
}

/// Windows has no signals: the exit code (a terminated job's is 1).
#[cfg(windows)]
fn code_or_signal(s: ExitStatus) -> Option<i32> {
    s.code()
}

#[cfg(windows)]
mod job {
    use std::io;
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };

    /// A job object whose processes die with it (when killed, or when its handle closes).
    #[derive(Debug)]
    pub struct Job(HANDLE);

    // SAFETY: a job handle may be used and closed from any thread.
    unsafe impl Send for Job {}
    // SAFETY: TerminateJobObject may be called from several threads at once.
    unsafe impl Sync for Job {}

    impl Job {
        /// A new job holding `process` (a raw process handle).
        pub fn holding(process: std::os::windows::io::RawHandle) -> io::Result<Job> {
            // SAFETY: no attributes, no name: a fresh anonymous job; null is an error.
            let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
            if handle.is_null() {
                return Err(io::Error::last_os_error());
            }
            let job = Job(handle);
            let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            // SAFETY: `limits` is the structure this information class takes, of its size.
            let set = unsafe {
                SetInformationJobObject(
                    job.0,
                    JobObjectExtendedLimitInformation,
                    (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                    std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                )
            };
            // SAFETY: both handles are open: the job just made, the child's from tokio.
            if set == 0 || unsafe { AssignProcessToJobObject(job.0, process as HANDLE) } == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(job)
        }

        /// Terminates every process in the job.
        pub fn kill(&self) {
            // SAFETY: the handle is open until drop; a job already empty is no error.
            unsafe { TerminateJobObject(self.0, 1) };
        }
    }

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: closed once, here; the processes left in the job die with it.
            unsafe { CloseHandle(self.0) };
        }
    }
}

/// Runs `cmd` in a group of its own with `input` on its stdin (none: stdin is closed), waits
/// at most `timeout` for it, then kills the group, and returns the last `cap` bytes of each
/// output stream (with a line saying how much was cut before them).
pub async fn run(
    mut cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Duration,
    cap: usize,
) -> io::Result<Finished> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = spawn_grouped(&mut cmd)?;
    if let (Some(mut stdin), Some(input)) = (child.stdin(), input) {
        // The command may exit without reading: a broken pipe is its business, not ours.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
    }
    let (out, mut out_done) = read_tail(child.stdout(), cap);
    let (err, mut err_done) = read_tail(child.stderr(), cap);
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    // Whatever happened, the group goes now: on a timeout the command, after an exit what it
    // left running.
    child.kill_group();
    let (status, timed_out) = match waited {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            // Killed just above: reap it.
            let _ = child.wait().await;
            (None, true)
        }
    };
    let _ = tokio::time::timeout(READER_GRACE, async {
        let _ = (&mut out_done).await;
        let _ = (&mut err_done).await;
    })
    .await;
    // A pipe still held open (by a process that left the group) is read no longer: no reader
    // outlives the call.
    out_done.abort();
    err_done.abort();
    Ok(Finished {
        status,
        stdout: text_of(&out),
        stderr: text_of(&err),
        timed_out,
    })
}

/// [`run`] from blocking code: on the current runtime when there is one (a `spawn_blocking`
/// thread), else on a small runtime of its own.
pub fn run_blocking(
    cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Duration,
    cap: usize,
) -> io::Result<Finished> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.block_on(run(cmd, input, timeout, cap)),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(run(cmd, input, timeout, cap)),
    }
}

/// Reads `stream` to its end in a task, keeping its last `cap` bytes; the tail stays readable
/// while the task runs (for output still coming when the caller stops waiting).
fn read_tail<R: AsyncRead + Unpin + Send + 'static>(
    stream: Option<R>,
    cap: usize,
) -> (Arc<Mutex<Tail>>, tokio::task::JoinHandle<()>) {
    let tail = Arc::new(Mutex::new(Tail::new(cap)));
    let shared = Arc::clone(&tail);
    let done = tokio::spawn(async move {
        let Some(mut stream) = stream else { return };
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => shared
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    (tail, done)
}

fn text_of(tail: &Mutex<Tail>) -> String {
    tail.lock().unwrap_or_else(|p| p.into_inner()).text()
}

/// The last `cap` bytes of a stream, and how many came in all.
#[derive(Debug)]
pub struct Tail {
    kept: Vec<u8>,
    total: u64,
    cap: usize,
}

impl Tail {
    pub fn new(cap: usize) -> Tail {
        Tail {
            kept: Vec::new(),
            total: 0,
            cap,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.kept.extend_from_slice(chunk);
        // Trim in batches (at twice the cap) so a chatty command costs O(n), not O(n²).
        if self.kept.len() > self.cap.max(4096) * 2 {
            let cut = self.kept.len() - self.cap;
            self.kept.drain(..cut);
        }
    }

    /// The tail as text, opened by a line saying how much was cut when something was.
    pub fn text(&self) -> String {
        let start = self.kept.len().saturating_sub(self.cap);
        let mut tail = &self.kept[start..];
        let cut = self.total - tail.len() as u64;
        if cut == 0 {
            return String::from_utf8_lossy(tail).into_owned();
        }
        // Do not start in the middle of a character.
        while let Some((&b, rest)) = tail.split_first() {
            if b & 0xC0 != 0x80 {
                break;
            }
            tail = rest;
        }
        let cut = self.total - tail.len() as u64;
        format!(
            "[... {cut} bytes cut, last {} kept ...]\n{}",
            tail.len(),
            String::from_utf8_lossy(tail)
        )
    }
}

/// Reads at most `limit` bytes of `stream` from its start, as text (for output that must be
/// parsed whole, like a JSON answer).
pub async fn read_head<R: AsyncRead + Unpin>(stream: Option<R>, limit: u64) -> String {
    let mut buf = Vec::new();
    if let Some(r) = stream {
        let _ = r.take(limit).read_to_end(&mut buf).await;
    }
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    #[test]
    fn output_status_and_input_come_back() {
        let f = run_blocking(
            sh("cat; echo err >&2; exit 3"),
            Some(b"hello".to_vec()),
            Duration::from_secs(20),
            1024,
        )
        .unwrap();
        assert_eq!(f.stdout, "hello");
        assert_eq!(f.stderr, "err\n");
        assert_eq!(f.returncode(), 3);
        assert!(!f.timed_out);
    }

    #[test]
    fn a_long_output_keeps_its_tail() {
        let f = run_blocking(sh("seq 1 100000"), None, Duration::from_secs(20), 100).unwrap();
        assert!(f.stdout.starts_with("[... "), "{}", &f.stdout[..40]);
        assert!(f.stdout.ends_with("99999\n100000\n"));
    }

    /// Whether process `pid` has ended (gone, or a zombie waiting to be reaped).
    fn gone(pid: &str) -> bool {
        ai_smartness_testkit::procs::ended(pid.trim().parse().expect("a pid"))
    }

    /// Whether process `pid` ends within a few seconds: a killed process has closed its pipes
    /// (the call returned on that) a moment before the kernel marks it ended.
    fn ended(pid: &str) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !gone(pid) {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// The timeout kills the whole group: the background child is gone when the call returns.
    #[test]
    fn the_timeout_kills_the_whole_group() {
        let f = run_blocking(
            sh("sleep 30 & echo $!; sleep 30"),
            None,
            Duration::from_millis(300),
            1024,
        )
        .unwrap();
        assert!(f.timed_out && f.status.is_none());
        assert!(ended(&f.stdout), "the group's other process survived");
    }

    /// After a normal exit, what the command left running in its group goes too (it would
    /// hold the pipe open and keep the call waiting).
    #[test]
    fn leftovers_of_a_finished_command_are_killed() {
        let f = run_blocking(
            sh("sleep 30 & echo $!"),
            None,
            Duration::from_secs(20),
            1024,
        )
        .unwrap();
        assert!(!f.timed_out);
        assert_eq!(f.returncode(), 0);
        assert!(ended(&f.stdout), "the leftover survived");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocking_callers_use_the_runtime_they_are_on() {
        let f = tokio::task::spawn_blocking(|| {
            run_blocking(sh("echo on the runtime"), None, Duration::from_secs(20), 64)
        })
        .await
        .unwrap()
        .unwrap();
        assert_eq!(f.stdout, "on the runtime\n");
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let e = run_blocking(
            Command::new("/nonexistent/program"),
            None,
            Duration::from_secs(5),
            64,
        )
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
