//! Thread benchmark: does each thread hold one subject, and does its title name it?
//!
//!     cargo bench --bench threads          (AI_BENCH_QUICK=1: two LoCoMo conversations;
//!                                           AI_BENCH_KEEP=1 keeps the projects and prints them;
//!                                           AI_BENCH_PARTS=locomo,sessions,crates: which parts;
//!                                           AI_BENCH_MAP=FILE: one JSON line per message of a
//!                                           real session: its thread, record uuid and subject)
//!
//! Each memory is a fresh project with a real daemon (the real model when installed), filled with
//! `ai import`, then read back through the socket (`threads`, `thread`), as `ai threads` would.
//!
//! - **LoCoMo conversations** (all ten), imported turn by turn: printed per conversation, the
//!   number of threads and the share of messages the largest holds (target: at most 15%).
//! - **Ten crates**: real material from the cargo registry on this machine (crates this project
//!   depends on, so `cargo fetch` brings them): for each crate, Read outputs of its README and
//!   source files and Bash outputs of commands run for real about it (`ls`, `wc`, `grep`, `head`),
//!   about 40 captures each, interleaved as a person moves between pieces of work (blocks of 3 to
//!   10 captures, subjects revisited). The subject is kept in each capture's metadata and read back
//!   from the stored messages. Printed: purity (the share of messages in a thread whose majority
//!   subject is theirs; target at least 0.9) and threads per subject (the mean number of threads
//!   holding a subject's messages; target at most 3).
//! - **Real sessions**: the six Claude Code sessions of `../shared/bench/claude-sessions/`,
//!   imported with `ai import --format claude-transcript`, their subjects labelled by hand in
//!   `benches/threads/sessions/` (segments of the transcript by record uuid). Tune: attio,
//!   medianator, connix; held out: llm-guard, skypilot, storia (the recall bench's split).
//!   Printed: purity, threads per subject (target at most 2), the share of threads holding one
//!   message after consolidation (at most 20%), the largest thread's share (at most 25%), and
//!   every title.
//! - **Ten other crates**, held out: the same material from crates never used to set a constant.
//! - **One template**: 1,000 captures of the same ten subjects written on one template (a fixed
//!   frame around a sentence from the crate's README): the frame must not glue subjects together.
//!
//! Titles of every memory are printed so a person can judge them, with the checks the product
//! promises: 2 to 8 words, no filler word, distinct among active threads. Writes
//! `bench-results/threads.json`.

#[path = "locomo/data.rs"]
#[allow(dead_code)]
mod data;
#[path = "locomo/product.rs"]
#[allow(dead_code)]
mod product;

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::json;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Crates of unrelated purposes, all dependencies of this project: the set the thread decision
/// was tuned on.
const CRATES: [&str; 10] = [
    "base64",
    "chrono",
    "notify",
    "walkdir",
    "rustls",
    "memchr",
    "ndarray",
    "rust-stemmers",
    "url",
    "tempfile",
];

/// Ten other crates, never used to set a constant: the held-out labelled set.
const HELD_OUT_CRATES: [&str; 10] = [
    "regex",
    "serde_json",
    "hyper",
    "clap",
    "uuid",
    "sha2",
    "tracing",
    "rand",
    "globset",
    "crossbeam-channel",
];

/// Words a title must never be made of: filler, and words of the conversation rather than of
/// the subject (what an assistant says about its own work).
const FILLER: [&str; 25] = [
    "hey",
    "great",
    "hmm",
    "yep",
    "yeah",
    "ok",
    "okay",
    "thanks",
    "wow",
    "cool",
    "successfully",
    "perfect",
    "explore",
    "understand",
    "different",
    "approach",
    "ensure",
    "navigate",
    "excellent",
    "let",
    "now",
    "easier",
    "done",
    "identified",
    "refer",
];

/// The six real sessions with their subjects labelled by hand (`benches/threads/sessions/`),
/// split as the recall bench splits them: the first three tune, the others are held out.
const SESSIONS: [(&str, bool); 6] = [
    ("attio-mcp-ts-perf", true),
    ("medianator-rust-opencv", true),
    ("connix-go-mcp", true),
    ("llm-guard-api-render", false),
    ("skypilot-nix-flake", false),
    ("storia-flutter-audio", false),
];

/// A small deterministic generator (xorshift), so every run plays the same order.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One capture of the labelled sets.
struct Labelled {
    subject: String,
    tool: &'static str,
    content: String,
    file_path: Option<String>,
}

fn registry() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    home.join("registry/src")
}

/// The newest version of `name` in the registry: (its folder's parent, its folder name).
fn crate_dir(name: &str) -> (PathBuf, String) {
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    for index in std::fs::read_dir(registry())
        .expect("the cargo registry")
        .flatten()
    {
        for e in std::fs::read_dir(index.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let dir = e.file_name().to_string_lossy().to_string();
            let Some(version) = dir.strip_prefix(&format!("{name}-")) else {
                continue;
            };
            if version.starts_with(|c: char| c.is_ascii_digit()) && e.path().join("src").is_dir() {
                found.push((index.path(), dir));
            }
        }
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    found
        .pop()
        .unwrap_or_else(|| panic!("{name} in the cargo registry (run `cargo fetch`)"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A Read of lines `from..from+len` of a file, as `ai-capture` writes it (path, then the text).
fn read_capture(subject: &str, path: &Path, from: usize, len: usize) -> Option<Labelled> {
    let text = std::fs::read_to_string(path).ok()?;
    let part: Vec<&str> = text.lines().skip(from).take(len).collect();
    if part.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    Some(Labelled {
        subject: subject.to_string(),
        tool: "Read",
        content: format!("{}\n{}", path.display(), part.join("\n")),
        file_path: Some(path.display().to_string()),
    })
}

/// A shell command run for real from the registry folder, as `ai-capture` writes it.
fn bash_capture(subject: &str, cwd: &Path, command: &str) -> Option<Labelled> {
    let out = Command::new("bash")
        .args(["-c", command])
        .current_dir(cwd)
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout.trim().is_empty() {
        return None;
    }
    Some(Labelled {
        subject: subject.to_string(),
        tool: "Bash",
        content: format!("$ {command}\n{}", stdout.trim_end()),
        file_path: None,
    })
}

/// About 40 captures about one crate: its README, its source files, commands about it.
fn crate_captures(name: &str) -> Vec<Labelled> {
    let (parent, dir) = crate_dir(name);
    let root = parent.join(&dir);
    let mut out = Vec::new();
    for readme in ["README.md", "README.rst", "README"] {
        let p = root.join(readme);
        if p.is_file() {
            for chunk in 0..3 {
                out.extend(read_capture(name, &p, chunk * 80, 80));
            }
            break;
        }
    }
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    // The largest files first: they are what a person reads.
    files.sort_by_key(|p| std::cmp::Reverse(p.metadata().map(|m| m.len()).unwrap_or(0)));
    for f in files.iter().take(12) {
        for chunk in 0..2 {
            out.extend(read_capture(name, f, chunk * 120, 120));
        }
    }
    out.truncate(32);
    for command in [
        format!("ls {dir}/src"),
        format!("wc -l {dir}/src/*.rs | sort -n | tail -15"),
        format!("grep -rn 'pub fn' {dir}/src | head -40"),
        format!("grep -rn 'pub struct\\|pub enum\\|pub trait' {dir}/src | head -30"),
        format!("head -40 {dir}/Cargo.toml"),
        format!("grep -rn '^use ' {dir}/src | head -30"),
        format!("grep -rln 'unsafe' {dir}/src | head -20"),
        format!("grep -rn '#\\[test\\]' -A2 {dir}/src | head -30"),
    ] {
        out.extend(bash_capture(name, &parent, &command));
    }
    out
}

/// Sentences of a crate's README long enough to say something.
fn readme_sentences(name: &str) -> Vec<String> {
    let (parent, dir) = crate_dir(name);
    let root = parent.join(&dir);
    let mut text = ["README.md", "README.rst", "README"]
        .iter()
        .find_map(|r| std::fs::read_to_string(root.join(r)).ok())
        .unwrap_or_default();
    // The crate's own documentation too: some READMEs are mostly badges and code.
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default();
    for line in lib.lines().filter_map(|l| l.trim().strip_prefix("//!")) {
        text.push('\n');
        text.push_str(line.trim());
    }
    let prose: String = text
        .lines()
        .filter(|l| {
            let t = l.trim();
            !t.is_empty()
                && !t.starts_with(['#', '[', '!', '|', '`', '<', '-', '*'])
                && !t.starts_with("    ")
        })
        .collect::<Vec<_>>()
        .join(" ");
    prose
        .split(". ")
        .map(str::trim)
        .filter(|s| s.split_whitespace().count() >= 6)
        .map(|s| s.chars().take(300).collect())
        .collect()
}

/// The subjects' captures interleaved in blocks of 3 to 10, as a person moves between pieces of
/// work and comes back to them.
fn interleave(mut per_subject: Vec<Vec<Labelled>>, rng: &mut Rng) -> Vec<Labelled> {
    for v in &mut per_subject {
        v.reverse();
    }
    let mut out = Vec::new();
    loop {
        let open: Vec<usize> = (0..per_subject.len())
            .filter(|&i| !per_subject[i].is_empty())
            .collect();
        if open.is_empty() {
            break out;
        }
        let s = open[rng.below(open.len())];
        for _ in 0..3 + rng.below(8) {
            match per_subject[s].pop() {
                Some(c) => out.push(c),
                None => break,
            }
        }
    }
}

/// The import file: one capture a minute, twenty minutes between blocks of a subject.
fn import_file(captures: &[Labelled]) -> String {
    let mut at: DateTime<Utc> = Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap();
    let mut out = String::new();
    let mut previous: Option<&str> = None;
    for c in captures {
        at += if previous == Some(c.subject.as_str()) {
            Duration::minutes(1)
        } else {
            Duration::minutes(20)
        };
        previous = Some(&c.subject);
        let mut metadata = json!({"subject": c.subject});
        if let Some(p) = &c.file_path {
            metadata["file_path"] = json!(p);
        }
        let line = json!({
            "content": c.content, "tool": c.tool, "source": "assistant",
            "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "metadata": metadata,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// A thread as read back through the socket.
struct ThreadView {
    title: String,
    status: String,
    /// The `metadata[key]` of each message (empty when absent).
    labels: Vec<String>,
}

fn read_threads(d: &mut product::Daemon, key: &str) -> Vec<ThreadView> {
    let list = d.call(&json!({"threads": {"status": "all", "limit": 100000}}));
    let list = list["threads"].as_array().cloned().unwrap_or_else(|| {
        panic!("unexpected threads reply: {list}");
    });
    list.iter()
        .map(|t| {
            let id = t["id"].as_str().unwrap();
            let detail = d.call(&json!({"thread": {"id": id}}));
            if detail.get("resolved_from").is_some() {
                // What is left of a merged thread: its messages are counted where they went.
                return ThreadView {
                    title: t["title"].as_str().unwrap_or("").to_string(),
                    status: "merged".into(),
                    labels: Vec::new(),
                };
            }
            let labels = detail["messages"]
                .as_array()
                .map(|ms| {
                    ms.iter()
                        .map(|m| m["metadata"][key].as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default();
            ThreadView {
                title: t["title"].as_str().unwrap_or("").to_string(),
                status: t["status"].as_str().unwrap_or("").to_string(),
                labels,
            }
        })
        .filter(|t: &ThreadView| t.status != "merged")
        .collect()
}

/// What a person would object to in a title, if anything.
fn title_fault(title: &str) -> Option<&'static str> {
    let words: Vec<String> = title
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    if !(2..=8).contains(&words.len()) {
        return Some("not 2 to 8 words");
    }
    if words.iter().any(|w| FILLER.contains(&w.as_str())) {
        return Some("filler or a word of the conversation");
    }
    if title.contains(", ") {
        return Some("terms joined by commas");
    }
    let lower = title.to_lowercase();
    if lower.starts_with("notes on ") || lower.starts_with("use of ") {
        return Some("template");
    }
    None
}

/// Title checks over a memory's threads: (faults, duplicated titles among active threads).
fn title_checks(threads: &[ThreadView]) -> (Vec<String>, usize) {
    let faults = threads
        .iter()
        .filter_map(|t| title_fault(&t.title).map(|f| format!("{:?}: {f}", t.title)))
        .collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for t in threads.iter().filter(|t| t.status == "active") {
        *seen.entry(t.title.to_lowercase()).or_default() += 1;
    }
    let duplicates = seen.values().filter(|&&n| n > 1).map(|n| n - 1).sum();
    (faults, duplicates)
}

/// Purity and threads per subject of a labelled memory.
fn purity(threads: &[ThreadView]) -> (f64, f64) {
    let mut total = 0usize;
    let mut majority = 0usize;
    let mut spread: BTreeMap<&str, HashSet<usize>> = BTreeMap::new();
    for (i, t) in threads.iter().enumerate() {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for l in &t.labels {
            *counts.entry(l.as_str()).or_default() += 1;
            spread.entry(l.as_str()).or_default().insert(i);
        }
        total += t.labels.len();
        majority += counts.values().max().copied().unwrap_or(0);
    }
    let per_subject =
        spread.values().map(|s| s.len()).sum::<usize>() as f64 / spread.len().max(1) as f64;
    (majority as f64 / total.max(1) as f64, per_subject)
}

/// A session's hand-made labels: each record's subject, by uuid (a record belongs to the last
/// segment starting at or before it).
fn session_labels(name: &str) -> (HashMap<String, String>, usize) {
    let labels_file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/threads/sessions")
        .join(format!("{name}.json"));
    let labels: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&labels_file).unwrap()).unwrap();
    let starts: HashMap<&str, &str> = labels["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["from"].as_str().unwrap(), s["subject"].as_str().unwrap()))
        .collect();
    let transcript = sessions_dir().join(format!("{name}.jsonl"));
    let text = std::fs::read_to_string(&transcript)
        .unwrap_or_else(|e| panic!("{}: {e}", transcript.display()));
    let mut out = HashMap::new();
    let mut current = "";
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(uuid) = v["uuid"].as_str() else {
            continue;
        };
        if let Some(subject) = starts.get(uuid) {
            current = subject;
        }
        if !current.is_empty() {
            out.insert(uuid.to_string(), current.to_string());
        }
    }
    let subjects = labels["subjects"].as_array().map_or(0, Vec::len);
    (out, subjects)
}

fn sessions_dir() -> PathBuf {
    std::env::var_os("AI_BENCH_SESSIONS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/claude-sessions")
        })
}

/// A real session imported as a person would (`ai import --format claude-transcript`),
/// consolidated once, its threads read back with each message's record uuid.
fn run_session(name: &str, keep: bool) -> Vec<ThreadView> {
    let dir = fresh_project();
    let mut d = product::Daemon::start(dir.path());
    let file = sessions_dir().join(format!("{name}.jsonl"));
    product::ai(
        dir.path(),
        &[
            "import",
            "--format",
            "claude-transcript",
            &file.to_string_lossy(),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let pass = d.call(&json!({"consolidate": {}}));
    let count = |k: &str| pass[k].as_array().map_or(0, Vec::len);
    println!(
        "  {name}: consolidation {} merged, {} split, {} retitled in {} ms",
        count("merges"),
        count("splits"),
        count("retitles"),
        pass["elapsed_ms"]
    );
    let threads = read_threads(&mut d, "uuid");
    drop(d);
    if keep {
        println!("  (kept: {})", dir.keep().display());
    }
    threads
}

/// One JSON line per message of a real session's threads (`AI_BENCH_MAP`): for reading where
/// each labelled subject went, in the transcript's order.
fn write_map(
    out: &mut std::fs::File,
    name: &str,
    threads: &[ThreadView],
    labels: &HashMap<String, String>,
) {
    use std::io::Write;
    for (i, t) in threads.iter().enumerate() {
        for uuid in &t.labels {
            let line = json!({
                "memory": name, "thread": i, "title": t.title, "uuid": uuid,
                "subject": labels.get(uuid).cloned().unwrap_or_default(),
            });
            writeln!(out, "{line}").expect("AI_BENCH_MAP: cannot write");
        }
    }
}

/// Figures of one labelled memory.
struct Shape {
    messages: usize,
    threads: usize,
    purity: f64,
    per_subject: f64,
    single_share: f64,
    largest_share: f64,
}

fn shape(threads: &[ThreadView]) -> Shape {
    let messages: usize = threads.iter().map(|t| t.labels.len()).sum();
    let live: Vec<&ThreadView> = threads.iter().filter(|t| !t.labels.is_empty()).collect();
    let (purity, per_subject) = purity(threads);
    let single = live.iter().filter(|t| t.labels.len() == 1).count();
    let largest = live.iter().map(|t| t.labels.len()).max().unwrap_or(0);
    Shape {
        messages,
        threads: live.len(),
        purity,
        per_subject,
        single_share: single as f64 / live.len().max(1) as f64,
        largest_share: largest as f64 / messages.max(1) as f64,
    }
}

/// Whether a labelled memory meets the targets: purity at least 0.9, at most 2 threads per
/// subject, at most 20% of threads of one message, the largest at most 25% of the messages.
fn meets(s: &Shape) -> bool {
    s.purity >= 0.9 && s.per_subject <= 2.0 && s.single_share <= 0.2 && s.largest_share <= 0.25
}

fn print_shape_header() {
    println!(
        "{:<28} | {:>5} | {:>8} | {:>7} | {:>6} | {:>9} | {:>6} | {:>7} | {:>6} | {:>4}",
        "memory",
        "split",
        "messages",
        "threads",
        "purity",
        "thr/subj",
        "single",
        "largest",
        "faults",
        "dup"
    );
}

fn print_shape(name: &str, split: &str, s: &Shape, faults: usize, duplicates: usize) {
    println!(
        "{name:<28} | {split:>5} | {:>8} | {:>7} | {:>6.3} | {:>9.2} | {:>5.0}% | {:>6.0}% | {faults:>6} | {duplicates:>4}{}",
        s.messages,
        s.threads,
        s.purity,
        s.per_subject,
        s.single_share * 100.0,
        s.largest_share * 100.0,
        if meets(s) { "" } else { "  (misses)" }
    );
}

fn fresh_project() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("aith")
        .tempdir_in("/tmp")
        .unwrap()
}

/// Fills a fresh project with `jsonl` and reads its threads back.
fn run_memory(jsonl: &str, key: &str, keep: bool) -> (Vec<ThreadView>, std::time::Duration) {
    let dir = fresh_project();
    let mut d = product::Daemon::start(dir.path());
    let file = dir.path().join("import.jsonl");
    std::fs::write(&file, jsonl).unwrap();
    let took = d.import(&file);
    // What an idle daemon would do by itself, done now.
    let pass = d.call(&json!({"consolidate": {}}));
    let count = |k: &str| pass[k].as_array().map_or(0, Vec::len);
    println!(
        "  consolidation: {} merged, {} split, {} retitled in {} ms",
        count("merges"),
        count("splits"),
        count("retitles"),
        pass["elapsed_ms"]
    );
    let threads = read_threads(&mut d, key);
    drop(d);
    if keep {
        println!("  (kept: {})", dir.keep().display());
    }
    (threads, took)
}

/// Threads by size with the subject most of their messages were labelled with, and its share.
fn print_subjects(threads: &[ThreadView], limit: usize) {
    let mut by_size: Vec<&ThreadView> = threads.iter().filter(|t| !t.labels.is_empty()).collect();
    by_size.sort_by_key(|t| std::cmp::Reverse(t.labels.len()));
    for t in by_size.iter().take(limit) {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for l in &t.labels {
            *counts.entry(l.as_str()).or_default() += 1;
        }
        let (top, n) = counts
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
            .unwrap_or(("", 0));
        println!(
            "    {:>4}  {:<48} [{top}: {:.0}%]",
            t.labels.len(),
            t.title,
            100.0 * n as f64 / t.labels.len() as f64
        );
    }
}

fn print_titles(threads: &[ThreadView], limit: usize) {
    let mut by_size: Vec<&ThreadView> = threads.iter().collect();
    by_size.sort_by_key(|t| std::cmp::Reverse(t.labels.len()));
    for t in by_size.iter().take(limit) {
        println!("    {:>4}  {}", t.labels.len(), t.title);
    }
}

fn main() {
    let quick = std::env::var_os("AI_BENCH_QUICK").is_some();
    let keep = std::env::var_os("AI_BENCH_KEEP").is_some();
    let mut map = std::env::var_os("AI_BENCH_MAP")
        .map(|p| std::fs::File::create(p).expect("AI_BENCH_MAP: cannot create the file"));
    let parts = std::env::var("AI_BENCH_PARTS").unwrap_or_else(|_| "locomo,sessions,crates".into());
    let part = |p: &str| parts.split(',').any(|x| x.trim() == p);
    let (conversations, _) = data::load(&data::dataset_dir()).unwrap_or_else(|e| panic!("{e}"));
    println!("ai-smartness threads benchmark");
    let mut results = Vec::new();

    let take = if quick { 2 } else { conversations.len() };
    let mut worst_share: f64 = 0.0;
    if part("locomo") {
        println!();
        println!(
            "LoCoMo conversations (target: the largest thread holds at most 15% of the messages)"
        );
        println!(
            "{:<10} | {:>8} | {:>7} | {:>13} | {:>12} | {:>10}",
            "conv", "messages", "threads", "largest", "title faults", "duplicates"
        );
        for c in conversations.iter().take(take) {
            let (threads, _) = run_memory(&data::import_jsonl(c), "dia_id", keep);
            let messages: usize = threads.iter().map(|t| t.labels.len()).sum();
            let largest = threads.iter().map(|t| t.labels.len()).max().unwrap_or(0);
            let share = largest as f64 / messages.max(1) as f64;
            worst_share = worst_share.max(share);
            let (faults, duplicates) = title_checks(&threads);
            println!(
            "{:<10} | {messages:>8} | {:>7} | {largest:>5} ({:>4.1}%) | {:>12} | {duplicates:>10}",
            c.sample_id,
            threads.len(),
            share * 100.0,
            faults.len()
        );
            if c.sample_id == conversations[0].sample_id {
                print_titles(&threads, 12);
                for f in faults.iter().take(5) {
                    println!("    title fault: {f}");
                }
            }
            results.push(json!({
                "memory": format!("LoCoMo {}", c.sample_id), "messages": messages,
                "threads": threads.len(), "largest": largest, "largest_share": share,
                "title_faults": faults, "duplicate_titles": duplicates,
            }));
        }
    }

    if part("sessions") {
        println!();
        println!(
            "Real Claude Code sessions, subjects labelled by hand (targets: purity at least 0.9,"
        );
        println!("at most 2 threads per subject, at most 20% single-message threads, largest at most 25%)");
        print_shape_header();
        let mut shown = Vec::new();
        for (name, tune) in SESSIONS {
            let threads = run_session(name, keep);
            let (labels, subjects) = session_labels(name);
            if let Some(file) = map.as_mut() {
                write_map(file, name, &threads, &labels);
            }
            let threads: Vec<ThreadView> = threads
                .into_iter()
                .map(|mut t| {
                    t.labels = t
                        .labels
                        .iter()
                        .map(|u| labels.get(u).cloned().unwrap_or_default())
                        .collect();
                    t
                })
                .collect();
            let sh = shape(&threads);
            let (faults, duplicates) = title_checks(&threads);
            let split = if tune { "tune" } else { "held" };
            print_shape(name, split, &sh, faults.len(), duplicates);
            results.push(json!({
                "memory": name, "split": split, "subjects": subjects, "messages": sh.messages,
                "threads": sh.threads, "purity": sh.purity, "threads_per_subject": sh.per_subject,
                "single_message_share": sh.single_share, "largest_share": sh.largest_share,
                "meets_targets": meets(&sh),
                "titles": threads.iter().map(|t| json!({"title": t.title, "messages": t.labels.len()})).collect::<Vec<_>>(),
                "title_faults": faults, "duplicate_titles": duplicates,
            }));
            shown.push((name, threads, faults));
        }
        for (name, threads, faults) in &shown {
            println!("  {name}: (messages, title, the labelled subject most of them belong to)");
            print_subjects(threads, 40);
            for f in faults.iter().take(8) {
                println!("    title fault: {f}");
            }
        }
    }

    if part("crates") {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let captures_of = |names: &[&str], rng: &mut Rng| {
            let per_subject: Vec<Vec<Labelled>> = names.iter().map(|c| crate_captures(c)).collect();
            interleave(per_subject, rng)
        };
        let crates = captures_of(&CRATES, &mut rng);
        let held_out = captures_of(&HELD_OUT_CRATES, &mut rng);
        let template: Vec<Labelled> = {
            let mut per: Vec<Vec<Labelled>> = CRATES
                .iter()
                .map(|c| {
                    let sentences = readme_sentences(c);
                    let n = sentences.len().max(1);
                    (0..100)
                        .map(|i| Labelled {
                            subject: c.to_string(),
                            tool: "Bash",
                            // Numbered reports of one or two observations: a hundred distinct
                            // captures per subject however short its README.
                            content: format!(
                                "$ ./status.sh --component {c}\nStatus report {i}. Component: {c}. \
                                 Observation: {}. {}. Next step: review the change and continue.",
                                sentences[i % n],
                                sentences[(i / n + i + 1) % n]
                            ),
                            file_path: None,
                        })
                        .collect()
                })
                .collect();
            for v in &mut per {
                v.reverse();
            }
            interleave(per, &mut rng)
        };

        println!();
        println!("Labelled captures of crates (same targets; the template set checks purity only)");
        print_shape_header();
        for (name, split, set) in [
            ("ten crates (Read, Bash)", "tune", &crates),
            ("ten other crates", "held", &held_out),
            ("ten subjects, one template", "tune", &template),
        ] {
            let (threads, _) = run_memory(&import_file(set), "subject", keep);
            let sh = shape(&threads);
            let (faults, duplicates) = title_checks(&threads);
            print_shape(name, split, &sh, faults.len(), duplicates);
            print_titles(&threads, 14);
            for f in faults.iter().take(5) {
                println!("    title fault: {f}");
            }
            results.push(json!({
                "memory": name, "split": split, "messages": sh.messages, "threads": sh.threads,
                "purity": sh.purity, "threads_per_subject": sh.per_subject,
                "single_message_share": sh.single_share, "largest_share": sh.largest_share,
                "title_faults": faults, "duplicate_titles": duplicates,
            }));
        }
    }

    println!();
    println!(
        "worst LoCoMo largest share {:.1}% (target ≤ 15%)",
        worst_share * 100.0
    );
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-results");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(
        out.join("threads.json"),
        serde_json::to_string_pretty(&json!({"results": results})).unwrap(),
    )
    .unwrap();
}
