//! MCP server benchmark: what a model waits for when it calls a memory tool.
//!
//!     cargo bench --bench mcp             (AI_BENCH_QUICK=1 for a short run)
//!
//! A real daemon over a project seeded with 1,000 and 10,000 threads, and a real `ai mcp`
//! process spoken to over its stdin and stdout as Claude Code does (one JSON-RPC line each
//! way). Prints, per size: the server's start (spawn to the `initialize` reply) and its
//! resident memory (it holds no model: the daemon embeds), then p50/p95 of each tool call,
//! beside the same request sent straight to the daemon's socket in the same run (the baseline:
//! what the MCP layer adds is the difference). No query repeats, so each is embedded anew.
//! Writes `bench-results/mcp.json`.

mod common;

use ai_smartness::client::Client;
use ai_smartness::paths::ProjectPaths;
use common::{percentile, seed_project, Daemon, AI};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Subjects of the seeded threads' sentences, for queries that find something.
const SUBJECTS: [&str; 12] = [
    "connection pool timeout in the billing service",
    "flaky test in the search indexer",
    "retry backoff for the payment worker",
    "cache invalidation in the admin dashboard",
    "schema migration for the invoices table",
    "websocket reconnect in the mobile client",
    "rate limiter config of the auth gateway",
    "feature flag for the reporting job",
    "token refresh race in the API server",
    "memory leak in the scheduler",
    "log rotation in the notification queue",
    "pagination cursor of the data importer",
];
const ASPECTS: [&str; 8] = [
    "what did we decide",
    "why did it fail",
    "what changed last week",
    "how was it fixed",
    "who looked at",
    "what is still open about",
    "which files touch",
    "summarise",
];

fn query(i: usize) -> String {
    format!(
        "{} {} (case {i})",
        ASPECTS[i % ASPECTS.len()],
        SUBJECTS[(i / ASPECTS.len()) % SUBJECTS.len()]
    )
}

/// p50 and p95 in milliseconds.
fn p50_p95(xs: &[f64]) -> (f64, f64) {
    (percentile(xs, 0.5), percentile(xs, 0.95))
}

struct Mcp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    id: u64,
}

impl Mcp {
    /// Spawns `ai mcp` and completes the handshake; returns it with the time that took.
    fn start(paths: &ProjectPaths) -> (Mcp, Duration) {
        let t = Instant::now();
        let mut child = Command::new(AI)
            .arg("mcp")
            .current_dir(&paths.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut m = Mcp {
            child,
            stdin,
            stdout,
            id: 0,
        };
        let init = m.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        assert!(init["result"].is_object(), "{init}");
        let took = t.elapsed();
        writeln!(
            m.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        (m, took)
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "ai mcp closed"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// A tool call: milliseconds, and its text.
    fn call(&mut self, tool: &str, args: Value) -> (f64, String) {
        let t = Instant::now();
        let v = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let r = &v["result"];
        assert!(r["isError"] != json!(true), "{tool} failed: {v}");
        let text = r["content"][0]["text"].as_str().unwrap_or("").to_string();
        (ms, text)
    }

    fn rss_mb(&self) -> f64 {
        ai_smartness_testkit::procs::resident_mb(self.child.id())
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The same request straight to the daemon's socket: milliseconds.
fn direct(paths: &ProjectPaths, v: &Value) -> f64 {
    let t = Instant::now();
    let mut c = Client::connect(&paths.socket(), Duration::from_secs(60)).unwrap();
    let r = c.send_raw(format!("{v}\n").as_bytes()).unwrap();
    assert!(r.ok, "{v}: {:?}", r.error);
    t.elapsed().as_secs_f64() * 1000.0
}

#[derive(Default)]
struct Row {
    threads: usize,
    start_ms: Vec<f64>,
    rss_mb: f64,
    /// (tool, MCP ms, direct ms)
    tools: Vec<(&'static str, Vec<f64>, Vec<f64>)>,
}

fn measure(n: usize, runs: usize) -> Row {
    let dir = tempfile::Builder::new()
        .prefix("aim")
        .tempdir_in("/tmp")
        .unwrap();
    let paths = seed_project(dir.path(), n);
    let d = Daemon::start(&paths).0;
    d.settle();
    let mut row = Row {
        threads: n,
        ..Row::default()
    };
    for _ in 0..10 {
        let (m, took) = Mcp::start(&paths);
        row.start_ms.push(took.as_secs_f64() * 1000.0);
        drop(m);
    }
    let (mut m, _) = Mcp::start(&paths);
    // A thread and a message to open: from a first search.
    let (_, first) = m.call("search", json!({"query": query(0)}));
    let word = |prefix: &str| {
        first
            .split_whitespace()
            .find(|w| w.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in {first}"))
            .to_string()
    };
    let (thread, message) = (word("thread_"), word("msg_"));

    let mut search = (Vec::new(), Vec::new());
    let mut get_thread = (Vec::new(), Vec::new());
    let mut timeline = (Vec::new(), Vec::new());
    let mut recent = (Vec::new(), Vec::new());
    let mut why = (Vec::new(), Vec::new());
    for i in 0..runs {
        // Even runs through MCP, odd runs straight to the socket, on fresh queries each.
        let q = query(2 * i + 1);
        search
            .0
            .push(m.call("search", json!({"query": q, "limit": 8})).0);
        let q = query(2 * i + 2);
        search
            .1
            .push(direct(&paths, &json!({"recall": {"query": q, "limit": 8}})));
        get_thread
            .0
            .push(m.call("get_thread", json!({"id": thread, "limit": 10})).0);
        get_thread.1.push(direct(
            &paths,
            &json!({"thread": {"id": thread, "offset": 0, "limit": 10}}),
        ));
        timeline.0.push(
            m.call("timeline", json!({"around": message, "limit": 15}))
                .0,
        );
        timeline.1.push(direct(
            &paths,
            &json!({"timeline": {"around": message, "limit": 15}}),
        ));
        recent.0.push(m.call("recent", json!({"limit": 10})).0);
        recent
            .1
            .push(direct(&paths, &json!({"timeline": {"limit": 10}})));
        let q = format!("{} please", query(3 * runs + 2 * i));
        why.0.push(m.call("why", json!({"prompt": q})).0);
        let q = format!("{} please", query(3 * runs + 2 * i + 1));
        why.1
            .push(direct(&paths, &json!({"context": {"prompt": q}})));
    }
    row.rss_mb = m.rss_mb();
    row.tools = vec![
        ("search", search.0, search.1),
        ("get_thread", get_thread.0, get_thread.1),
        ("timeline", timeline.0, timeline.1),
        ("recent", recent.0, recent.1),
        ("why", why.0, why.1),
    ];
    drop(m);
    drop(d);
    row
}

fn main() {
    let quick = std::env::var("AI_BENCH_QUICK").is_ok();
    let runs = if quick { 30 } else { 100 };
    let sizes: &[usize] = if quick { &[1_000] } else { &[1_000, 10_000] };
    println!(
        "ai-smartness MCP tools — {runs} calls per tool and size, embedder: {}",
        common::installed_embedder()
    );
    println!("baseline: the same request straight to the daemon's socket, in the same run\n");
    let mut rows = Vec::new();
    for &n in sizes {
        let t = Instant::now();
        rows.push(measure(n, runs));
        eprintln!(
            "  {n} threads measured in {:.0} s",
            t.elapsed().as_secs_f64()
        );
    }
    let mut out = Vec::new();
    let mut worst_p95 = 0f64;
    let mut worst_start = 0f64;
    for r in &rows {
        let (s50, s95) = p50_p95(&r.start_ms);
        worst_start = worst_start.max(s95);
        println!(
            "{} threads: server start (spawn to initialize reply) p50/p95 {s50:.1} / {s95:.1} ms, resident memory {:.1} MB",
            r.threads, r.rss_mb
        );
        println!(
            "  {:>10} | {:>19} | {:>19} | {:>5}",
            "tool", "MCP p50/p95", "socket p50/p95", "ratio"
        );
        let mut tools = Vec::new();
        for (name, via, straight) in &r.tools {
            let (a50, a95) = p50_p95(via);
            let (b50, b95) = p50_p95(straight);
            worst_p95 = worst_p95.max(a95);
            println!(
                "  {name:>10} | {:>19} | {:>19} | {:>5.2}",
                format!("{a50:.2} / {a95:.2} ms"),
                format!("{b50:.2} / {b95:.2} ms"),
                a50 / b50.max(1e-9)
            );
            tools.push(json!({"tool": name, "mcp_p50_ms": a50, "mcp_p95_ms": a95, "socket_p50_ms": b50, "socket_p95_ms": b95}));
        }
        out.push(json!({"threads": r.threads, "start_p50_ms": s50, "start_p95_ms": s95, "rss_mb": r.rss_mb, "tools": tools}));
    }
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    let at_largest = rows.last().map_or(0, |r| r.threads);
    println!("\ntargets:");
    println!(
        "  every tool p95 ≤ 50 ms at {at_largest} threads: {worst_p95:.2} ms — {}",
        verdict(worst_p95 <= 50.0)
    );
    println!(
        "  server start p95 well under a second (≤ 250 ms): {worst_start:.1} ms — {}",
        verdict(worst_start <= 250.0)
    );
    println!(
        "ratio = MCP p50 / socket p50: what the MCP layer (a process, JSON-RPC, rendering) adds"
    );
    std::fs::create_dir_all("bench-results").ok();
    let path = std::path::Path::new("bench-results/mcp.json");
    std::fs::write(
        path,
        serde_json::to_vec_pretty(&json!({"runs": runs, "rows": out, "targets": {"tool_p95_ms": 50, "start_p95_ms": 250}})).unwrap(),
    )
    .unwrap();
    println!("written to {}", path.display());
}
