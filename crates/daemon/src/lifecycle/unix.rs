//! Detaching, checking and stopping a daemon on Unix: a double fork, `kill`.

use super::{io_err, LifecycleError};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Which side of [`daemonize`] we are on.
pub enum Forked {
    /// The original process: it may wait for the daemon to answer, then exit.
    Parent,
    /// The detached daemon: no terminal, own session, stdio redirected.
    Daemon,
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
