//! Secrets benchmark: what redaction takes out of real work, and what it leaves of ordinary
//! code.
//!
//!     cargo bench --bench secrets        (AI_BENCH_SESSIONS=DIR: the sessions' folder;
//!                                         AI_BENCH_CODE_MB=N: megabytes of code, default 40)
//!
//! - **Real sessions**: every unit of the Claude Code sessions of
//!   `../shared/bench/claude-sessions/` (a prompt, an answer, a tool call's input and result),
//!   redacted as a capture is. Printed per session: the values redacted, by kind, and each one
//!   in its line (the placeholder shown, never the value), so that a person can read which were
//!   secrets and which were not.
//! - **Ordinary code**: the Rust sources of this project's dependencies in the cargo registry
//!   (the same files on every machine that built it). Nothing there is a live secret: what is
//!   redacted is counted as a false positive, per kind and per 10,000 lines.
//!
//! Both print the redactor's throughput in MB/s.

#[path = "sessions/data.rs"]
#[allow(dead_code)]
mod data;

use ai_smartness_redact::redact;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The kinds of the placeholders in `text`, one entry per placeholder.
fn placeholders(text: &str) -> Vec<&str> {
    text.match_indices("[REDACTED:")
        .filter_map(|(i, _)| {
            let rest = &text[i + "[REDACTED:".len()..];
            rest.find(']').map(|end| &rest[..end])
        })
        .collect()
}

/// Each line of `text` that holds a placeholder, trimmed to 140 characters around the first.
fn lines_with_placeholders(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains("[REDACTED:"))
        .map(|l| {
            let at = l.find("[REDACTED:").unwrap_or(0);
            let start = l[..at].char_indices().rev().nth(60).map_or(0, |(i, _)| i);
            let shown: String = l[start..].chars().take(140).collect();
            shown.trim().to_string()
        })
        .collect()
}

fn tally(kinds: &BTreeMap<String, usize>) -> String {
    if kinds.is_empty() {
        return "none".into();
    }
    kinds
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn sessions() {
    let dir = data::dataset_dir();
    let sessions = match data::load(&dir) {
        Ok(s) => s,
        Err(e) => {
            println!("sessions: skipped ({e})");
            return;
        }
    };
    println!("## Real sessions ({})\n", dir.display());
    println!(
        "{:<24} {:>6} {:>9} {:>9}  kinds",
        "session", "units", "MB", "redacted"
    );
    let mut all = BTreeMap::new();
    let mut seen = Vec::new();
    let (mut bytes, mut elapsed) = (0usize, 0f64);
    for s in &sessions {
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        let mut session_bytes = 0;
        for unit in &s.units {
            let text = if unit.input.is_empty() {
                unit.text.clone()
            } else {
                format!("{}\n{}", unit.input, unit.text)
            };
            session_bytes += text.len();
            let t = Instant::now();
            let out = redact(&text);
            elapsed += t.elapsed().as_secs_f64();
            for k in placeholders(&out.text) {
                *kinds.entry(k.to_string()).or_default() += 1;
                *all.entry(k.to_string()).or_default() += 1;
            }
            if out.count > 0 {
                for line in lines_with_placeholders(&out.text) {
                    seen.push(format!("{} ({}): {line}", s.name, unit.tool));
                }
            }
        }
        bytes += session_bytes;
        println!(
            "{:<24} {:>6} {:>9.2} {:>9}  {}",
            s.name,
            s.units.len(),
            session_bytes as f64 / 1e6,
            kinds.values().sum::<usize>(),
            tally(&kinds)
        );
    }
    println!(
        "\nall sessions: {} values redacted ({}); {:.1} MB at {:.0} MB/s",
        all.values().sum::<usize>(),
        tally(&all),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / elapsed.max(1e-9)
    );
    println!("\neach redaction in its line (to read for false positives):");
    seen.dedup();
    for line in &seen {
        println!("  {line}");
    }
    println!();
}

/// The cargo registry's unpacked sources.
fn registry_dir() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry/src");
    src.is_dir().then_some(src)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn ordinary_code() {
    let Some(registry) = registry_dir() else {
        println!("ordinary code: skipped (no cargo registry)");
        return;
    };
    let budget: usize = std::env::var("AI_BENCH_CODE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
        << 20;
    let mut files = Vec::new();
    rust_files(&registry, &mut files);
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen = Vec::new();
    let (mut bytes, mut lines, mut read, mut elapsed) = (0usize, 0usize, 0usize, 0f64);
    for path in &files {
        if bytes >= budget {
            break;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        read += 1;
        bytes += text.len();
        lines += text.lines().count();
        let t = Instant::now();
        let out = redact(&text);
        elapsed += t.elapsed().as_secs_f64();
        if out.count == 0 {
            continue;
        }
        for k in placeholders(&out.text) {
            *kinds.entry(k.to_string()).or_default() += 1;
        }
        let name = path
            .strip_prefix(&registry)
            .unwrap_or(path)
            .display()
            .to_string();
        for line in lines_with_placeholders(&out.text) {
            seen.push(format!("{name}: {line}"));
        }
    }
    let total: usize = kinds.values().sum();
    println!(
        "## Ordinary code: {read} Rust files of the cargo registry ({:.1} MB, {lines} lines)\n",
        bytes as f64 / 1e6
    );
    println!(
        "values redacted: {total} ({:.2} per 10,000 lines): {}; {:.0} MB/s",
        total as f64 * 10_000.0 / lines.max(1) as f64,
        tally(&kinds),
        bytes as f64 / 1e6 / elapsed.max(1e-9)
    );
    println!("\neach in its line (test fixtures of secret scanners and parsers count here too):");
    for line in seen.iter().take(80) {
        println!("  {line}");
    }
    if seen.len() > 80 {
        println!("  ... and {} more", seen.len() - 80);
    }
}

fn main() {
    println!("ai-smartness secrets benchmark\n");
    sessions();
    ordinary_code();
}
