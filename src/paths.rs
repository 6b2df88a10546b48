//! Where everything lives: the project (nearest folder holding `.ai/`), the `.ai/` layout of seed
//! 004 section 8, and the socket path with its fallback (SPEC-NOTES item 5). Std only: the hook
//! binaries include this file.

use std::io;
use std::path::{Path, PathBuf};

/// `sun_path` holds 108 bytes including the terminating NUL.
const SUN_PATH_MAX: usize = 107;

/// Every path of one project's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectPaths {
    /// The project folder (the one holding `.ai/`).
    pub root: PathBuf,
    /// `.ai/`
    pub ai_dir: PathBuf,
}

impl ProjectPaths {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
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

    /// The socket to use: `.ai/processor.sock` when it fits in `sun_path`, else a per-user runtime
    /// folder keyed by a hash of the project path. Deterministic, so every client finds it.
    pub fn socket(&self) -> PathBuf {
        let preferred = self.preferred_socket();
        if preferred.as_os_str().len() <= SUN_PATH_MAX {
            return preferred;
        }
        let key = fnv1a64(self.ai_dir.as_os_str().as_encoded_bytes());
        runtime_dir().join(format!("{key:016x}.sock"))
    }
}

/// A per-user folder for sockets: `$XDG_RUNTIME_DIR/ai-smartness`, else `/tmp/ai-smartness-UID`.
pub fn runtime_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() && Path::new(&dir).is_absolute() => {
            PathBuf::from(dir).join("ai-smartness")
        }
        _ => std::env::temp_dir().join(format!("ai-smartness-{}", current_uid())),
    }
}

/// Creates the runtime folder readable by its owner only.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::metadata(dir)?;
    if meta.uid() != current_uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} belongs to another user", dir.display()),
        ));
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    // std has no getuid; the owner of /proc/self is this process's real user.
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_projects_use_the_seed_socket() {
        let p = ProjectPaths::new("/home/dev/project");
        assert_eq!(
            p.socket(),
            PathBuf::from("/home/dev/project/.ai/processor.sock")
        );
    }

    #[test]
    fn long_projects_fall_back_to_a_stable_runtime_socket() {
        let long = format!("/tmp/{}", "deep/".repeat(30));
        let p = ProjectPaths::new(&long);
        let s = p.socket();
        assert!(s.as_os_str().len() <= SUN_PATH_MAX, "{}", s.display());
        assert_eq!(s, ProjectPaths::new(&long).socket());
        assert_ne!(s, ProjectPaths::new(format!("{long}x")).socket());
    }

    #[test]
    fn discovery_finds_the_nearest_ai_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".ai")).unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let found = ProjectPaths::discover(&dir.path().join("a/b")).unwrap();
        assert_eq!(found.root, dir.path());
    }
}
