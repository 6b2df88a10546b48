//! The hook binaries (`ai-inject`, `ai-capture`, `ai-compact`) belong to the
//! `ai-smartness-hooks` package, so the tests and benchmarks of the main package do not get
//! them from Cargo: this finds them beside `ai`, in the same profile's folder, and builds them
//! first when they are missing or older than their sources.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// The hook binary `name` (`ai-inject`, `ai-capture` or `ai-compact`), built and up to date,
/// beside `ai` (the caller's `env!("CARGO_BIN_EXE_ai")`: only the main package's tests and
/// benchmarks know it).
pub fn hook_bin(ai: &str, name: &str) -> &'static str {
    static BUILT: std::sync::Once = std::sync::Once::new();
    static PATHS: std::sync::OnceLock<[String; 3]> = std::sync::OnceLock::new();
    let ai = Path::new(ai);
    let dir = ai.parent().expect("`ai` is in a folder");
    BUILT.call_once(|| {
        let oldest = HOOKS.iter().map(|n| modified(&dir.join(n))).min().flatten();
        let root = crate::workspace_root();
        let newest_source = ["hooks", "crates/proto", "crates/redact"]
            .iter()
            .flat_map(|d| sources(&root.join(d)))
            .filter_map(|p| modified(&p))
            .max();
        if oldest.is_some() && oldest >= newest_source {
            return;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "--quiet", "-p", "ai-smartness-hooks", "--bins"])
            .current_dir(root);
        if dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("cannot run cargo to build the hooks");
        assert!(status.success(), "building the hooks failed: {status}");
    });
    let paths = PATHS.get_or_init(|| HOOKS.map(|n| dir.join(n).to_string_lossy().into_owned()));
    let i = HOOKS
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("{name} is not a hook binary"));
    &paths[i]
}

/// The package's binaries.
const HOOKS: [&str; 3] = ["ai-inject", "ai-capture", "ai-compact"];

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Every file under `dir` (the package's manifest and sources).
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
