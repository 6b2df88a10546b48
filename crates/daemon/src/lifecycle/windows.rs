//! Detaching, checking and stopping a daemon on Windows. There is no fork: the daemon is a new
//! process of the same program (`ai daemon run --report-start`), detached from the starter's
//! console and process group, with the start line as its standard output.

use super::{io_err, LifecycleError, REPORT_START_FLAG};
use ai_smartness_proto::paths::ProjectPaths;
use std::fs::OpenOptions;
use std::io;
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, STILL_ACTIVE};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, OpenProcess, TerminateProcess, CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS,
    PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_TERMINATE,
};

/// Starts the project's daemon as a process of its own: no console (a hook's or a terminal's
/// closing does not end it), its own process group (a Ctrl+C in the starter's console does not
/// reach it), stdin empty, stderr appended to `.ai/daemon_stderr.log`. Returns the pipe on
/// which it says whether it answers ([`super::hear_start`]).
pub fn spawn_detached(paths: &ProjectPaths) -> Result<io::PipeReader, LifecycleError> {
    let stderr_log = paths.daemon_stderr_log();
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&stderr_log)
        .map_err(io_err(format!("opening {}", stderr_log.display())))?;
    let program = std::env::current_exe().map_err(io_err("finding this program"))?;
    let (news, tell) = io::pipe().map_err(io_err("making the start pipe"))?;
    let mut command = Command::new(program);
    command
        .arg("--project")
        .arg(&paths.root)
        .args(["daemon", "run"])
        .arg(format!("--{REPORT_START_FLAG}"))
        .current_dir(&paths.root)
        .stdin(Stdio::null())
        .stdout(Stdio::from(tell))
        .stderr(Stdio::from(log))
        .creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
    command.spawn().map_err(io_err("starting the daemon"))?;
    // The command held this process's copy of the writing end: dropped, only the daemon's is
    // left, and its exit ends the pipe.
    drop(command);
    Ok(news)
}

/// A process handle closed when dropped.
struct Process(HANDLE);

impl Process {
    fn open(pid: u32, access: u32) -> Option<Process> {
        // SAFETY: plain call; a null handle means no such process (or no access), checked.
        let handle = unsafe { OpenProcess(access, 0, pid) };
        (!handle.is_null()).then_some(Process(handle))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // SAFETY: the handle was returned open by OpenProcess and is closed once, here.
        unsafe { CloseHandle(self.0) };
    }
}

/// Whether a process with this pid exists and has not exited.
pub fn process_alive(pid: u32) -> bool {
    let Some(process) = Process::open(pid, PROCESS_QUERY_LIMITED_INFORMATION) else {
        return false;
    };
    let mut code = 0u32;
    // SAFETY: a valid process handle and a place for the result.
    let ok = unsafe { GetExitCodeProcess(process.0, &mut code) } != 0;
    ok && code == STILL_ACTIVE as u32
}

/// Ends the process. Windows has no SIGTERM for a process without a console, so this is the
/// fallback after the daemon did not answer a shutdown request: what it acknowledged is in its
/// journal already, and the next start replays it.
pub fn terminate(pid: u32) -> bool {
    let Some(process) = Process::open(pid, PROCESS_TERMINATE) else {
        return false;
    };
    // SAFETY: a valid process handle opened with the right to terminate it.
    unsafe { TerminateProcess(process.0, 1) != 0 }
}

/// A named pipe leaves nothing behind when its server dies: only a pipe that answers stops a
/// start.
pub fn clear_stale_socket(socket: &Path) -> Result<(), LifecycleError> {
    let answers =
        ai_smartness_proto::client::Client::connect(socket, std::time::Duration::from_millis(200))
            .is_ok();
    if answers {
        return Err(LifecycleError::SocketInUse(socket.display().to_string()));
    }
    Ok(())
}
