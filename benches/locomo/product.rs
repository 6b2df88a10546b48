//! The product, run as a user would: `ai init`, `ai daemon run` on a temporary project, `ai import`
//! of the conversation, then `context` requests over the daemon's socket (the code path of
//! `ai context`, which is checked once per conversation against the socket answer).

use ai_smartness::client::Client;
use ai_smartness::paths::ProjectPaths;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const AI: &str = env!("CARGO_BIN_EXE_ai");

/// A running `ai daemon run`; shut down (then waited for) on drop.
pub struct Daemon {
    child: Child,
    pub paths: ProjectPaths,
    client: Client,
}

/// What one `context` request gave.
pub struct ContextReply {
    /// `metadata.dia_id` of every message in `messages`, in order.
    pub dia_ids: Vec<String>,
    /// The product's own count (`result.tokens`).
    pub tokens: usize,
    /// `result.context`: what the model would read.
    pub text: String,
    pub messages: Value,
    /// `result.gate` and `result.decision`: the relevance gate's inputs and verdict.
    pub gate: Value,
    pub latency: Duration,
}

/// Runs `ai --project ROOT ARGS...`; the error carries its stderr.
pub fn ai(root: &Path, args: &[&str]) -> Result<std::process::Output, String> {
    let out = Command::new(AI)
        .arg("--project")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {AI}: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "`ai {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Daemon {
    /// `ai init`, then `ai daemon run` in the foreground as our child (the environment, including
    /// `AI_SMARTNESS_DATA_DIR`, is inherited), then waits for the first answered ping.
    pub fn start(root: &Path) -> Daemon {
        ai(root, &["init"]).unwrap_or_else(|e| panic!("{e}"));
        let paths = ProjectPaths::new(root);
        // Kept next to the project: read it when the daemon dies.
        let stderr = std::fs::File::create(root.join("daemon-run.stderr")).unwrap();
        let mut child = Command::new(AI)
            .arg("--project")
            .arg(root)
            .args(["daemon", "run"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the daemon: {e}"));
        let t = Instant::now();
        let client = loop {
            if let Ok(mut c) = Client::connect(&paths.socket(), Duration::from_secs(600)) {
                if c.send_raw(b"{\"ping\":true}\n")
                    .is_ok_and(|r| r.pong == Some(true))
                {
                    break c;
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the daemon exited ({status}): {}",
                    std::fs::read_to_string(root.join("daemon-run.stderr")).unwrap_or_default()
                );
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the daemon never answered a ping on {}",
                paths.socket().display()
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        Daemon {
            child,
            paths,
            client,
        }
    }

    /// Sends one command and returns its `result`; a refused request panics with the error.
    /// The daemon closes a connection idle for 30 s (a benchmark's own work between two
    /// requests can take longer): the request is then sent again on a new one.
    pub fn call(&mut self, request: &Value) -> Value {
        let line = format!("{request}\n");
        let reply = match self.client.send_raw(line.as_bytes()) {
            Ok(r) => r,
            Err(_) => {
                self.client = Client::connect(&self.paths.socket(), Duration::from_secs(600))
                    .unwrap_or_else(|e| panic!("{request}: reconnecting: {e}"));
                self.client
                    .send_raw(line.as_bytes())
                    .unwrap_or_else(|e| panic!("{request}: {e}"))
            }
        };
        assert!(reply.ok, "{request}: {:?}", reply.error);
        reply.result.unwrap_or(Value::Null)
    }

    /// Imports a JSONL file with `ai import` (which ends with a sync: everything is processed and
    /// saved when it returns) and returns its wall time.
    pub fn import(&self, file: &Path) -> Duration {
        let t = Instant::now();
        ai(&self.paths.root, &["import", &file.to_string_lossy()])
            .unwrap_or_else(|e| panic!("{e}"));
        t.elapsed()
    }

    /// `{"context": {"prompt": ..., "budget": ...}}`, timed from the client side.
    pub fn context(&mut self, prompt: &str, budget: usize) -> ContextReply {
        let request = json!({"context": {"prompt": prompt, "budget": budget}});
        let t = Instant::now();
        let result = self.call(&request);
        let latency = t.elapsed();
        parse_context(&result, latency).unwrap_or_else(|e| panic!("{request}: {e}: {result}"))
    }
}

/// Reads a `context` result (`{"context", "tokens", "threads", "messages"}`).
pub fn parse_context(result: &Value, latency: Duration) -> Result<ContextReply, String> {
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("no `messages` list")?;
    let dia_ids = messages
        .iter()
        .filter_map(|m| m["metadata"]["dia_id"].as_str().map(str::to_string))
        .collect();
    Ok(ContextReply {
        dia_ids,
        tokens: result["tokens"].as_u64().ok_or("no `tokens`")? as usize,
        text: result["context"]
            .as_str()
            .ok_or("no `context`")?
            .to_string(),
        messages: Value::Array(messages.clone()),
        gate: json!({"stats": result["gate"], "decision": result["decision"], "candidate": result["candidate"]}),
        latency,
    })
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.client.send_raw(b"{\"shutdown\":true}\n");
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("locomo: the daemon did not stop within 30 s of shutdown; killing it");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `AI_BENCH_DUMP` is set.
pub fn dumping() -> bool {
    std::env::var_os("AI_BENCH_DUMP").is_some()
}

/// With `AI_BENCH_DUMP=FILE`, appends `line` to that file (one JSON line per prompt, for
/// studying the gate's decisions); without it, nothing.
pub fn dump_line(line: &Value) {
    use std::io::Write;
    let Some(path) = std::env::var_os("AI_BENCH_DUMP") else {
        return;
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut f) = file {
        let _ = writeln!(f, "{line}");
    }
}
