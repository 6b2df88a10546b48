//! Noise benchmark: does the memory speak only when it has something to say?
//!
//!     cargo bench --bench noise             (AI_BENCH_QUICK=1: one LoCoMo memory, no merged one;
//!                                            AI_BENCH_DUMP=FILE: each prompt's gate decision)
//!
//! Memories, each a fresh project with a real daemon (the real model when installed):
//!
//! - **LoCoMo conversations** (`conv-26`, `conv-41`), imported turn by turn as `benches/locomo.rs`
//!   does; related questions: their own (categories 1-4).
//! - **A coding project**: a developer and an agent working on the `notify` crate (8.2.2, the real
//!   source from the cargo registry, a dependency of this project). `benches/noise/notify-session.jsonl`
//!   is played through the real hook binaries: prompts through `ai-inject`, answers as `Stop`,
//!   reads as `Read` tool outputs of the real files, and shell commands run for real in the
//!   crate (their real output captured as `Bash`). Related questions: `notify-questions.txt`.
//! - **All ten LoCoMo conversations in one memory** (5,882 turns): a memory fourteen times
//!   larger, where chance finds closer matches; related questions: the first 15 of each.
//!
//! Unrelated prompts for every memory: `benches/noise/general.txt` (general knowledge) and
//! `programming.txt` (programming questions that have nothing to do with the memories). The
//! product holds none of these prompts and no rule depends on them.
//!
//! For each prompt, the `context` request (what `ai-inject` would add, with no side effect, at
//! the inject default budget): "got memory" means at least one stored message is in it. Printed
//! per memory and prompt set: the share that got memory (targets: unrelated at most 3%, related
//! at least 90%) and the mean tokens injected (zeros included). Writes `bench-results/noise.json`.

#[path = "locomo/data.rs"]
#[allow(dead_code)]
mod data;
mod hook_bins {
    /// The hook binary `name`, built and up to date beside `ai`.
    pub fn hook_bin(name: &str) -> &'static str {
        ai_smartness_testkit::hooks::hook_bin(env!("CARGO_BIN_EXE_ai"), name)
    }
}
#[path = "locomo/product.rs"]
#[allow(dead_code)]
mod product;

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The budget `ai-inject` uses by default.
const BUDGET: usize = 1200;

fn lines(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/noise")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// What a prompt set got from one memory.
#[derive(Default)]
struct Tally {
    prompts: usize,
    got_memory: usize,
    tokens: usize,
}

impl Tally {
    fn share(&self) -> f64 {
        self.got_memory as f64 / self.prompts.max(1) as f64
    }
    fn mean_tokens(&self) -> f64 {
        self.tokens as f64 / self.prompts.max(1) as f64
    }
}

/// With `AI_BENCH_DUMP=FILE`, one JSON line per prompt: the memory, the prompt set, the prompt
/// and the gate's inputs and verdict (for studying the decision); appended.
fn dump(memory: &str, set: &str, prompt: &str, reply: &product::ContextReply) {
    product::dump_line(&json!({"memory": memory, "set": set, "prompt": prompt,
        "gate": reply.gate, "tokens": reply.tokens}));
}

fn ask(d: &mut product::Daemon, memory: &str, set: &str, prompts: &[String]) -> Tally {
    let mut t = Tally::default();
    for p in prompts {
        let r = d.context(p, BUDGET);
        dump(memory, set, p, &r);
        let got = r.messages.as_array().is_some_and(|m| !m.is_empty());
        t.prompts += 1;
        if got {
            t.got_memory += 1;
            t.tokens += r.tokens;
        }
    }
    t
}

/// The `notify` crate's source in the cargo registry (a dependency of this project).
fn notify_crate() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let registry = home.join("registry/src");
    std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("{}: {e}", registry.display()))
        .flatten()
        .map(|e| e.path().join("notify-8.2.2"))
        .find(|p| p.join("src/lib.rs").is_file())
        .expect("notify 8.2.2 in the cargo registry (run `cargo fetch`)")
}

fn hook(bin: &str, root: &Path, payload: &Value) {
    let mut child = Command::new(bin)
        .current_dir(root)
        .env_remove("AI_SMARTNESS_HOOK_RUNNING")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "{bin} failed");
}

/// Plays the notify session into the project, as Claude Code's hooks would send it.
fn play_notify_session(d: &mut product::Daemon) {
    let root = d.paths.root.clone();
    let krate = notify_crate();
    let base = json!({"session_id": "notify-session", "cwd": root});
    let with = |extra: Value| {
        let mut p = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    };
    for (i, line) in lines("notify-session.jsonl").iter().enumerate() {
        let step: Value = serde_json::from_str(line).unwrap();
        let text = |k: &str| step[k].as_str().unwrap_or_default().to_string();
        match step["kind"].as_str() {
            Some("prompt") => hook(
                hook_bins::hook_bin("ai-inject"),
                &root,
                &with(json!({"hook_event_name": "UserPromptSubmit", "prompt": text("text")})),
            ),
            Some("answer") => hook(
                hook_bins::hook_bin("ai-capture"),
                &root,
                &with(json!({"hook_event_name": "Stop", "last_assistant_message": text("text")})),
            ),
            Some("read") => {
                let path = krate.join(text("path"));
                let all = std::fs::read_to_string(&path).unwrap();
                let file: Vec<&str> = all.split('\n').collect();
                let offset = step["offset"].as_u64().unwrap_or(1) as usize;
                let limit = step["limit"].as_u64().map_or(file.len(), |l| l as usize);
                let part: Vec<&str> = file.iter().skip(offset - 1).take(limit).copied().collect();
                hook(
                    hook_bins::hook_bin("ai-capture"),
                    &root,
                    &with(json!({
                        "hook_event_name": "PostToolUse", "tool_name": "Read",
                        "tool_input": {"file_path": path, "offset": offset, "limit": limit},
                        "tool_response": {"type": "text", "file": {"filePath": path, "content": part.join("\n"),
                            "numLines": part.len(), "startLine": offset, "totalLines": file.len()}},
                        "tool_use_id": format!("toolu_{i}"),
                    })),
                );
            }
            Some("bash") => {
                let command = text("command");
                let out = Command::new("bash")
                    .args(["-c", &command])
                    .current_dir(&krate)
                    .output()
                    .unwrap();
                hook(
                    hook_bins::hook_bin("ai-capture"),
                    &root,
                    &with(json!({
                        "hook_event_name": "PostToolUse", "tool_name": "Bash",
                        "tool_input": {"command": command, "description": ""},
                        "tool_response": {"stdout": String::from_utf8_lossy(&out.stdout),
                            "stderr": String::from_utf8_lossy(&out.stderr), "interrupted": false, "isImage": false},
                        "tool_use_id": format!("toolu_{i}"),
                    })),
                );
            }
            other => panic!("unknown step {other:?}"),
        }
    }
    d.call(&json!({"sync": true}));
}

fn import_conversations(d: &product::Daemon, conversations: &[&data::Conversation]) {
    let mut jsonl = String::new();
    for c in conversations {
        jsonl.push_str(&data::import_jsonl(c));
    }
    let file = d.paths.root.join("import.jsonl");
    std::fs::write(&file, jsonl).unwrap();
    d.import(&file);
}

/// A memory to test: its name, how to fill a project with it, its related questions.
type Memory = (String, Box<dyn Fn(&mut product::Daemon)>, Vec<String>);

fn main() {
    let quick = std::env::var_os("AI_BENCH_QUICK").is_some();
    let general = lines("general.txt");
    let programming = lines("programming.txt");
    let (conversations, _) = data::load(&data::dataset_dir()).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "ai-smartness noise benchmark — {} general and {} programming prompts unrelated to every memory; budget {BUDGET} tokens",
        general.len(),
        programming.len()
    );
    let mut memories: Vec<Memory> = Vec::new();
    let questions = |c: &data::Conversation| -> Vec<String> {
        c.questions.iter().map(|q| q.text.clone()).collect()
    };
    for idx in if quick { vec![0] } else { vec![0, 3] } {
        let c = conversations[idx].clone();
        let related = questions(&c);
        memories.push((
            format!("LoCoMo {}", c.sample_id),
            Box::new(move |d| import_conversations(d, &[&c])),
            related,
        ));
    }
    memories.push((
        "coding: notify 8.2.2".into(),
        Box::new(play_notify_session),
        lines("notify-questions.txt"),
    ));
    if !quick {
        let all = conversations.clone();
        let related = all
            .iter()
            .flat_map(|c| questions(c).into_iter().take(15))
            .collect();
        memories.push((
            "LoCoMo, all ten in one".into(),
            Box::new(move |d| import_conversations(d, &all.iter().collect::<Vec<_>>())),
            related,
        ));
    }

    let mut results = Vec::new();
    println!();
    println!(
        "{:<26} | {:>8} | {:>22} | {:>22} | {:>22}",
        "memory", "messages", "general: got / tokens", "programming", "related"
    );
    for (name, fill, related) in &memories {
        let dir = tempfile::Builder::new()
            .prefix("ain")
            .tempdir_in("/tmp")
            .unwrap();
        let mut d = product::Daemon::start(dir.path());
        fill(&mut d);
        let status = d.call(&json!({"status": true}));
        let messages = status["stats"]["captures_processed"].as_u64().unwrap_or(0);
        let g = ask(&mut d, name, "general", &general);
        let p = ask(&mut d, name, "programming", &programming);
        let r = ask(&mut d, name, "related", related);
        let cell = |t: &Tally| {
            format!(
                "{:>5.1}% {:>3}/{:<3} {:>5.0}",
                t.share() * 100.0,
                t.got_memory,
                t.prompts,
                t.mean_tokens()
            )
        };
        println!(
            "{name:<26} | {messages:>8} | {:>22} | {:>22} | {:>22}",
            cell(&g),
            cell(&p),
            cell(&r)
        );
        let unrelated = Tally {
            prompts: g.prompts + p.prompts,
            got_memory: g.got_memory + p.got_memory,
            tokens: g.tokens + p.tokens,
        };
        results.push(json!({
            "memory": name, "messages": messages,
            "unrelated_got_memory": unrelated.share(), "unrelated_mean_tokens": unrelated.mean_tokens(),
            "general": {"prompts": g.prompts, "got_memory": g.got_memory, "mean_tokens": g.mean_tokens()},
            "programming": {"prompts": p.prompts, "got_memory": p.got_memory, "mean_tokens": p.mean_tokens()},
            "related": {"prompts": r.prompts, "got_memory": r.got_memory, "mean_tokens": r.mean_tokens()},
            "targets": {"unrelated_at_most": 0.03, "related_at_least": 0.9},
        }));
    }
    println!();
    println!("targets: unrelated (general + programming) got memory ≤ 3%, related ≥ 90%");
    for r in &results {
        let (u, rel) = (
            r["unrelated_got_memory"].as_f64().unwrap(),
            r["related"]["got_memory"].as_f64().unwrap()
                / r["related"]["prompts"].as_f64().unwrap().max(1.0),
        );
        println!(
            "  {:<26} unrelated {:>5.1}% {}   related {:>5.1}% {}",
            r["memory"].as_str().unwrap(),
            u * 100.0,
            if u <= 0.03 { "ok" } else { "MISSED" },
            rel * 100.0,
            if rel >= 0.9 { "ok" } else { "MISSED" }
        );
    }
    std::fs::create_dir_all("bench-results").unwrap();
    std::fs::write(
        "bench-results/noise.json",
        serde_json::to_vec_pretty(&json!({ "budget": BUDGET, "memories": results })).unwrap(),
    )
    .unwrap();
    println!("\nwritten to bench-results/noise.json");
}
