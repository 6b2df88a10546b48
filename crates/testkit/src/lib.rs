//! What the tests and benchmarks share, and only they (a dev-dependency): the hook binaries
//! built and found ([`hooks`]), a real PostgreSQL started for a test ([`postgres`]), other
//! processes' state without `/proc` ([`procs`]), the workspace's root, and how a test that
//! cannot run here says so.
//!
//! How a test that cannot run here says so. A test needing what this machine lacks (the model's
//! files, the Claude Code CLI, root) passes after calling [`record`]: it prints why, and appends
//! the test's name and why to the file `AI_SMARTNESS_SKIP_LOG` names, which `scripts/test.sh`
//! counts in its summary. (Under CI the real model and the real client are never skipped: those
//! tests fail instead.)

pub mod hooks;
#[cfg(unix)]
pub mod postgres;
pub mod procs;

use std::io::Write;
use std::path::PathBuf;

/// The workspace's root folder (this crate is `crates/testkit` in it).
pub fn workspace_root() -> PathBuf {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .nth(2)
        .map_or_else(|| here.to_path_buf(), std::path::Path::to_path_buf)
}

/// The file `scripts/test.sh` collects skips in.
pub const SKIP_LOG_ENV: &str = "AI_SMARTNESS_SKIP_LOG";

/// Reports that the current test skipped, and why.
pub fn record(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    println!("SKIPPED {test}: {why}");
    let Some(path) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) else {
        return;
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut f) = file {
        let _ = writeln!(f, "{test}: {why}");
    }
}
