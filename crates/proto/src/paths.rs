//! Where everything lives: the project (nearest folder holding `.ai/`), the `.ai/` layout, and
//! the socket path with its private fallback and the checks a client makes before trusting a
//! socket. Std and libc only: the hook binaries include this file.

use std::io;
use std::path::{Path, PathBuf};

/// The longest socket path, in bytes: `sun_path` holds 108 bytes on Linux, 104 on macOS and the
/// BSDs, the terminating NUL included.
#[cfg(any(target_os = "linux", target_os = "android", windows))]
const SUN_PATH_MAX: usize = 107;
#[cfg(not(any(target_os = "linux", target_os = "android", windows)))]
const SUN_PATH_MAX: usize = 103;

/// Every path of one project's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectPaths {
    /// The project folder (the one holding `.ai/`), resolved (symlinks, `.` and `..`): every
    /// spelling of a project names the same files and the same socket.
    pub root: PathBuf,
    /// `.ai/`
    pub ai_dir: PathBuf,
}

impl ProjectPaths {
    /// The paths of the project at `root`, resolved once; a folder that does not exist yet is
    /// taken as written.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let ai_dir = root.join(".ai");
        Self { root, ai_dir }
    }

    /// The nearest folder at or above `start` that holds `.ai/`.
    pub fn discover(start: &Path) -> Option<Self> {
        start
            .ancestors()
            .find(|dir| dir.join(".ai").is_dir())
            .map(Self::new)
    }

    pub fn config(&self) -> PathBuf {
        self.ai_dir.join("config.json")
    }
    pub fn user_rules(&self) -> PathBuf {
        self.ai_dir.join("user_rules.json")
    }
    pub fn db(&self) -> PathBuf {
        self.ai_dir.join("db")
    }
    pub fn pid_file(&self) -> PathBuf {
        self.ai_dir.join("processor.pid")
    }
    /// Held (flock) by the running daemon: one instance per project.
    pub fn lock_file(&self) -> PathBuf {
        self.ai_dir.join("processor.lock")
    }
    /// Written when the daemon could not start (why, how many times in a row), removed when it
    /// starts: clients say why at once, and hooks stop spawning starters for a while.
    pub fn start_failure(&self) -> PathBuf {
        self.ai_dir.join("daemon_start_failed.json")
    }
    pub fn daemon_log(&self) -> PathBuf {
        self.ai_dir.join("processor.log")
    }
    pub fn daemon_stderr_log(&self) -> PathBuf {
        self.ai_dir.join("daemon_stderr.log")
    }
    /// `capture.log`, `inject.log`, `compact.log`.
    pub fn hook_log(&self, hook: &str) -> PathBuf {
        self.ai_dir.join(format!("{hook}.log"))
    }
    /// The preferred socket path, `.ai/processor.sock`.
    pub fn preferred_socket(&self) -> PathBuf {
        self.ai_dir.join("processor.sock")
    }
    /// Written by the daemon when it had to use the fallback socket, so people can find it.
    pub fn socket_pointer(&self) -> PathBuf {
        self.ai_dir.join("processor.sock.path")
    }

    /// The socket to use: `.ai/processor.sock` when it fits in `sun_path`, else a socket keyed
    /// by a hash of the project path in the user's private runtime folder ([`runtime_dir`]).
    /// Deterministic, so every client finds it. When neither fits, the preferred path is
    /// returned and binding it fails with [`socket_path_problem`]'s explanation.
    pub fn socket(&self) -> PathBuf {
        let key = fnv1a64(self.ai_dir.as_os_str().as_encoded_bytes());
        // Windows has named pipes, in one namespace (`\\.\pipe\`): one per project, keyed by
        // its path; who serves it is checked after connecting (see `client`).
        if cfg!(windows) {
            return PathBuf::from(format!(r"\\.\pipe\ai-smartness-{key:016x}"));
        }
        let preferred = self.preferred_socket();
        if fits_sun_path(&preferred) {
            return preferred;
        }
        runtime_dir()
            .map(|dir| dir.join(format!("{key:016x}.sock")))
            .filter(|s| fits_sun_path(s))
            .unwrap_or(preferred)
    }

    /// Creates `.ai/` readable by its owner only, and makes an existing one so: the socket, the
    /// journal and the memory live there, and other users must not even list its names.
    pub fn ensure_private_ai_dir(&self) -> io::Result<()> {
        ensure_private_dir(&self.ai_dir)?;
        // Folders made by older versions were 0755: close them too (files inside a 0700
        // folder are out of reach anyway).
        for dir in [self.ai_dir.clone(), self.db()] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    set_private(&entry.path())?;
                }
            }
        }
        Ok(())
    }
}

/// Whether a socket path fits in `sun_path`.
pub fn fits_sun_path(path: &Path) -> bool {
    path.as_os_str().len() <= SUN_PATH_MAX
}

/// Why a socket path cannot be bound, when it cannot.
pub fn socket_path_problem(socket: &Path) -> Option<String> {
    (!fits_sun_path(socket)).then(|| {
        format!(
            "the socket path {} is longer than the {SUN_PATH_MAX} bytes a Unix socket allows, and \
             there is no private runtime folder to put it in instead: set XDG_RUNTIME_DIR (or \
             HOME) to a short folder of your own",
            socket.display()
        )
    })
}

/// The per-user folder for sockets whose preferred path is too long: `$XDG_RUNTIME_DIR/ai-smartness`
/// (private by the XDG specification; `$TMPDIR` on macOS, see [`system_runtime_dir`]), else `$XDG_STATE_HOME/ai-smartness/run`, else
/// `$HOME/.local/state/ai-smartness/run`. Never a shared folder such as `/tmp`, where another user
/// could create the folder first and listen in it.
pub fn runtime_dir() -> Option<PathBuf> {
    runtime_dir_from(
        system_runtime_dir().as_deref(),
        std::env::var_os("XDG_STATE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

/// The per-user runtime folder the system gives: `$XDG_RUNTIME_DIR`; on macOS, which has none,
/// `$TMPDIR`, a folder of the user's own under `/var/folders` (mode 0700) emptied at restart, as
/// `XDG_RUNTIME_DIR` is. Only an absolute path counts.
fn system_runtime_dir() -> Option<std::ffi::OsString> {
    let absolute = |v: std::ffi::OsString| Path::new(&v).is_absolute().then_some(v);
    let xdg = std::env::var_os("XDG_RUNTIME_DIR").and_then(absolute);
    #[cfg(target_os = "macos")]
    let xdg = xdg.or_else(|| std::env::var_os("TMPDIR").and_then(absolute));
    xdg
}

/// [`runtime_dir`] from given values of its three variables (only absolute paths count).
pub fn runtime_dir_from(
    xdg_runtime: Option<&std::ffi::OsStr>,
    xdg_state: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    let absolute = |v: Option<&std::ffi::OsStr>| {
        v.map(Path::new)
            .filter(|p| p.is_absolute())
            .map(Path::to_path_buf)
    };
    if let Some(dir) = absolute(xdg_runtime) {
        return Some(dir.join("ai-smartness"));
    }
    if let Some(dir) = absolute(xdg_state) {
        return Some(dir.join("ai-smartness").join("run"));
    }
    absolute(home).map(|h| h.join(".local/state/ai-smartness/run"))
}

/// This user's cache folder for ai-smartness: `$XDG_CACHE_HOME/ai-smartness`, else
/// `$HOME/.cache/ai-smartness`.
pub fn user_cache_dir() -> Option<PathBuf> {
    let absolute = |k: &str| {
        std::env::var_os(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_CACHE_HOME")
        .or_else(|| absolute("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("ai-smartness"))
}

/// Creates `dir` (and its parents) and makes sure it is this user's own folder, mode 0700. A
/// folder that exists and belongs to someone else is refused, never used.
#[cfg(unix)]
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    set_private(dir)
}

/// Windows: the folder is created under the user's own profile (its access list inherited
/// from there: the user, SYSTEM and administrators), and one owned by someone else is refused.
#[cfg(windows)]
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    set_private(dir)
}

/// Windows: this user must own the folder; an error naming the owner otherwise.
#[cfg(windows)]
fn set_private(dir: &Path) -> io::Result<()> {
    let owner = crate::windows_user::owner_sid(dir)?;
    let me = crate::windows_user::current_user_sid()?;
    if owner != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to {owner}, not to this user ({me}): refusing to use it",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Mode 0700 on a folder of this user's; an error naming the owner otherwise.
#[cfg(unix)]
fn set_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = std::fs::metadata(dir)?;
    let me = current_uid();
    if meta.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {}, not to this user (uid {me}): refusing to use it",
                dir.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Why a socket must not be talked to: its folder or its file could have been put there by
/// someone else, who would then read every capture and write what is injected into prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsafeSocket(pub String);

impl std::fmt::Display for UnsafeSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks, before connecting, that the socket's folder and the socket itself belong to this user
/// and are private (no access for group or others). A folder or socket that does not exist
/// passes: connecting will then say that nothing runs.
#[cfg(unix)]
pub fn check_private_socket(socket: &Path) -> Result<(), UnsafeSocket> {
    check_private_socket_as(socket, current_uid())
}

/// Windows: a named pipe is no file to check before connecting; the process serving it is
/// checked once connected (it must run as this user: see `client`).
#[cfg(windows)]
pub fn check_private_socket(_socket: &Path) -> Result<(), UnsafeSocket> {
    Ok(())
}

/// [`check_private_socket`] for a given user id.
#[cfg(unix)]
pub fn check_private_socket_as(socket: &Path, uid: u32) -> Result<(), UnsafeSocket> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let private = |what: &str, path: &Path, meta: &std::fs::Metadata| {
        if meta.uid() != uid {
            return Err(UnsafeSocket(format!(
                "the daemon's {what} {} belongs to uid {}, not to this user (uid {uid}): not \
                 talking to it",
                path.display(),
                meta.uid()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(UnsafeSocket(format!(
                "the daemon's {what} {} has mode {:o}: other users can reach it; it must be \
                 private ({})",
                path.display(),
                meta.mode() & 0o7777,
                if meta.is_dir() { "0700" } else { "0600" }
            )));
        }
        Ok(())
    };
    let Some(dir) = socket.parent() else {
        return Ok(());
    };
    match std::fs::metadata(dir) {
        Ok(meta) => private("folder", dir, &meta)?,
        Err(_) => return Ok(()),
    }
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if !meta.file_type().is_socket() => Err(UnsafeSocket(format!(
            "{} is not a socket: not talking to it",
            socket.display()
        ))),
        Ok(meta) => private("socket", socket, &meta),
        Err(_) => Ok(()),
    }
}

/// The effective user id of this process.
#[cfg(unix)]
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// FNV-1a: stable across runs and builds, unlike std's hasher.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

// Unix sockets, modes, symlinks and runtime folders: Unix only.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn the_longest_socket_path_is_what_the_platform_address_holds() {
        // SAFETY: sockaddr_un is plain data; all zeros is a valid value.
        let addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        assert_eq!(SUN_PATH_MAX, addr.sun_path.len() - 1);
    }

    // Unix sockets, modes and symlinks: Unix only.
    #[cfg(unix)]
    #[test]
    fn short_projects_use_the_seed_socket() {
        let p = ProjectPaths::new("/home/dev/project");
        assert_eq!(
            p.socket(),
            PathBuf::from("/home/dev/project/.ai/processor.sock")
        );
    }

    // Unix sockets, modes and symlinks: Unix only.
    #[cfg(unix)]
    #[test]
    fn long_projects_fall_back_to_a_stable_runtime_socket() {
        let long = format!("/tmp/{}", "deep/".repeat(30));
        let p = ProjectPaths::new(&long);
        let s = p.socket();
        if runtime_dir().is_some() {
            assert!(s.as_os_str().len() <= SUN_PATH_MAX, "{}", s.display());
            assert_ne!(s, ProjectPaths::new(format!("{long}x")).socket());
        }
        assert_eq!(s, ProjectPaths::new(&long).socket());
    }

    /// Unix paths: Windows has no runtime folder to fall back on (its sockets are pipes).
    #[cfg(unix)]
    #[test]
    fn the_fallback_folder_is_never_a_shared_one() {
        use std::ffi::OsStr;
        let some = |s: &'static str| Some(OsStr::new(s));
        assert_eq!(
            runtime_dir_from(some("/run/user/1000"), some("/s"), some("/home/u")),
            Some(PathBuf::from("/run/user/1000/ai-smartness"))
        );
        assert_eq!(
            runtime_dir_from(None, some("/home/u/.state"), some("/home/u")),
            Some(PathBuf::from("/home/u/.state/ai-smartness/run"))
        );
        assert_eq!(
            runtime_dir_from(some(""), some("relative"), some("/home/u")),
            Some(PathBuf::from("/home/u/.local/state/ai-smartness/run"))
        );
        assert_eq!(runtime_dir_from(None, None, None), None);
        assert_eq!(runtime_dir_from(None, None, some("")), None);
    }

    // Unix sockets, modes and symlinks: Unix only.
    #[cfg(unix)]
    #[test]
    fn a_socket_of_another_user_or_open_to_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("run");
        ensure_private_dir(&folder).unwrap();
        let sock = folder.join("x.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o600)).unwrap();
        let me = current_uid();
        assert_eq!(check_private_socket_as(&sock, me), Ok(()));
        let other = check_private_socket_as(&sock, me + 1).unwrap_err();
        assert!(other.0.contains("belongs to uid"), "{other}");
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(check_private_socket_as(&sock, me)
            .unwrap_err()
            .0
            .contains("mode 666"));
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_private_socket_as(&sock, me)
            .unwrap_err()
            .0
            .contains("folder"));
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Nothing there: connecting will say nothing runs.
        assert_eq!(
            check_private_socket_as(&folder.join("none.sock"), me),
            Ok(())
        );
    }

    // Unix sockets, modes and symlinks: Unix only.
    #[cfg(unix)]
    #[test]
    fn discovery_finds_the_nearest_ai_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".ai")).unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let found = ProjectPaths::discover(&dir.path().join("a/b")).unwrap();
        // Through a symlink or with `.` in it, the same project and the same socket.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(found.root.clone(), &link).unwrap();
        for spelling in [link.clone(), link.join("."), found.root.join("./")] {
            let p = ProjectPaths::new(&spelling);
            assert_eq!(p, found, "{}", spelling.display());
            assert_eq!(p.socket(), found.socket());
        }
        assert_eq!(found.root, dir.path());
        // A project whose path is too long for the socket: a short link to it finds the same
        // fallback socket, not one of its own.
        let long = dir.path().join("l".repeat(120));
        std::fs::create_dir_all(long.join(".ai")).unwrap();
        let short = dir.path().join("s");
        std::os::unix::fs::symlink(&long, &short).unwrap();
        let real = ProjectPaths::new(&long);
        assert_ne!(real.socket(), real.preferred_socket());
        assert_eq!(ProjectPaths::new(&short).socket(), real.socket());
        assert_eq!(ProjectPaths::new(short.join(".")).socket(), real.socket());
    }
}
