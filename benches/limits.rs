//! What a hostile or broken local client can make the daemon hold, and whether hooks still get
//! their answer meanwhile.
//!
//!     cargo bench --bench limits            (AI_BENCH_QUICK=1 for a short run)
//!
//! A real `ai daemon run` under `ulimit -n 1024` (the common default) on a project of 1,000
//! threads, the real model when installed:
//!
//! 1. **Slow partial frames**: 1,000 connections each send 1 MB without a newline and stay
//!    open. Printed: the daemon's resident memory before, at its highest while they are open,
//!    and after they close. Targets: under +100 MB while open, back to within 10% of the
//!    baseline after.
//! 2. **Idle connections**: `ai-inject` (the real hook binary, spawn to exit) p95 on an idle
//!    daemon, then while 2,000 connections sit open doing nothing. Target: within 2x of idle.
//!
//! Writes `bench-results/limits.json`.

mod common;
mod hook_bins {
    /// The hook binary `name`, built and up to date beside `ai`.
    pub fn hook_bin(name: &str) -> &'static str {
        ai_smartness_testkit::hooks::hook_bin(env!("CARGO_BIN_EXE_ai"), name)
    }
}

use common::{seed_project, Daemon};
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PROMPTS: [&str; 8] = [
    "why does the connection pool time out in the billing service after the last deploy?",
    "the flaky test in the search indexer failed again on CI, can you find what races?",
    "add retry backoff to the payment worker when the bank API returns 503",
    "the admin dashboard slows down when the cache invalidation runs, profile it",
    "write a schema migration that adds an index on invoices.customer_id without locking",
    "review the rate limiter config in the auth gateway before we raise the quota",
    "the scheduler leaks memory over a weekend, where do we keep references?",
    "explain how the pagination cursor works in the data importer",
];

fn p95(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(|a, b| a.total_cmp(b));
    ms[((ms.len() as f64 * 0.95).ceil() as usize).clamp(1, ms.len()) - 1]
}

/// One `ai-inject` run as Claude Code makes it: milliseconds, and whether it injected.
fn inject(root: &Path, i: usize) -> (f64, bool) {
    let payload = json!({
        "session_id": "bench", "cwd": root, "hook_event_name": "UserPromptSubmit",
        "prompt": format!("{} (run {i})", PROMPTS[i % PROMPTS.len()]),
    });
    let t = Instant::now();
    let mut child = Command::new(hook_bins::hook_bin("ai-inject"))
        .current_dir(root)
        .env_remove("AI_SMARTNESS_HOOK_RUNNING")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (t.elapsed().as_secs_f64() * 1000.0, !out.stdout.is_empty())
}

fn raise_own_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    assert!(
        lim.rlim_cur >= 4096,
        "the benchmark needs 4,096 descriptors"
    );
}

/// Sends `bytes` without a newline on every connection, round robin, without blocking: a
/// connection the daemon closes (over its budget) stops there.
fn send_partial_frames(conns: &mut [Option<UnixStream>], bytes: usize, mut sample: impl FnMut()) {
    let chunk = vec![b'x'; 64 << 10];
    let mut sent = vec![0usize; conns.len()];
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut progress = false;
        let mut open = 0;
        for (c, n) in conns.iter_mut().zip(sent.iter_mut()) {
            let Some(s) = c else { continue };
            if *n >= bytes {
                open += 1;
                continue;
            }
            match s.write(&chunk[..chunk.len().min(bytes - *n)]) {
                Ok(k) => {
                    *n += k;
                    progress = true;
                    open += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => open += 1,
                Err(_) => *c = None,
            }
        }
        sample();
        let all_sent = conns
            .iter()
            .zip(&sent)
            .all(|(c, n)| c.is_none() || *n >= bytes);
        if all_sent || Instant::now() > deadline || open == 0 {
            return;
        }
        if !progress {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn main() {
    let quick = std::env::var("AI_BENCH_QUICK").is_ok();
    raise_own_fd_limit();
    let threads = if quick { 200 } else { 1_000 };
    let dir = tempfile::Builder::new()
        .prefix("ail")
        .tempdir_in("/tmp")
        .unwrap();
    let paths = seed_project(dir.path(), threads);
    let root = paths.root.clone();
    let (d, _) = Daemon::start_with_fd_limit(&paths, Some(1024));
    d.settle();
    println!(
        "ai-smartness limits benchmark — daemon under ulimit -n 1024, {threads} threads, embedder: {}",
        common::installed_embedder()
    );
    let mut results = serde_json::Map::new();

    // 1. Slow partial frames.
    {
        for i in 0..5 {
            inject(&root, i);
        }
        d.call(json!({"sync": true}));
        let base = d.rss_mb();
        let n = if quick { 300 } else { 1_000 };
        let mut conns: Vec<Option<UnixStream>> = (0..n)
            .map(|_| {
                let s = UnixStream::connect(paths.socket()).unwrap();
                s.set_nonblocking(true).unwrap();
                Some(s)
            })
            .collect();
        let mut peak = base;
        let mut last_sample = Instant::now();
        send_partial_frames(&mut conns, 1 << 20, || {
            if last_sample.elapsed() > Duration::from_millis(50) {
                peak = peak.max(d.rss_mb());
                last_sample = Instant::now();
            }
        });
        // Held open a while, as a slow client would.
        for _ in 0..20 {
            peak = peak.max(d.rss_mb());
            std::thread::sleep(Duration::from_millis(50));
        }
        let still_open = conns.iter().filter(|c| c.is_some()).count();
        drop(conns);
        // The daemon notices the closes and hands memory back; give it a moment, as a person's
        // next prompt would.
        std::thread::sleep(Duration::from_millis(500));
        d.call(json!({"sync": true}));
        let after = d.rss_mb();
        println!();
        println!("1. {n} connections each sending 1 MB without a newline:");
        println!("   RSS before {base:.1} MB, highest while open {peak:.1} MB (+{:.1} MB, target < +100 MB), after {after:.1} MB ({:+.1}%, target within +10%)",
            peak - base, (after / base - 1.0) * 100.0);
        println!("   {still_open} of them still open at the end (the others were refused over the byte budget or closed to make room)");
        results.insert(
            "partial_frames".into(),
            json!({"connections": n, "bytes_each": 1 << 20, "rss_before_mb": base, "rss_peak_mb": peak,
                "rss_after_mb": after, "peak_increase_mb": peak - base, "after_vs_before": after / base,
                "target_peak_increase_mb": 100, "target_after_vs_before": 1.1,
                "before_this_change": {"rss_peak_mb": 1240, "rss_after_mb": 778}}),
        );
    }

    // 2. Inject latency while idle connections pile up.
    {
        let runs = if quick { 20 } else { 60 };
        let idle: Vec<f64> = (0..runs)
            .map(|i| {
                let (ms, _) = inject(&root, 100 + i);
                d.call(json!({"sync": true}));
                ms
            })
            .collect();
        let n = if quick { 1_500 } else { 2_000 };
        let held: Vec<UnixStream> = (0..n)
            .map(|_| UnixStream::connect(paths.socket()).unwrap())
            .collect();
        let mut injected = 0;
        let loaded: Vec<f64> = (0..runs)
            .map(|i| {
                let (ms, ok) = inject(&root, 200 + i);
                injected += usize::from(ok);
                d.call(json!({"sync": true}));
                ms
            })
            .collect();
        let status_ok = d.call(json!({"status": true}))["pid"].is_number();
        drop(held);
        let (p_idle, p_loaded) = (p95(idle), p95(loaded));
        println!();
        println!("2. ai-inject with {n} idle connections open (daemon at ulimit -n 1024):");
        println!("   p95 idle {p_idle:.1} ms, with them {p_loaded:.1} ms: {:.2}x (target ≤ 2x); {injected}/{runs} prompts got memory; ai status answered: {status_ok}",
            p_loaded / p_idle);
        results.insert(
            "idle_connections".into(),
            json!({"connections": n, "fd_limit": 1024, "inject_p95_idle_ms": p_idle,
                "inject_p95_loaded_ms": p_loaded, "ratio": p_loaded / p_idle, "target_ratio": 2.0,
                "injected": injected, "runs": runs,
                "before_this_change": {"hooks_waited_ms": 830, "status": "hung past 15 s"}}),
        );
    }
    if std::env::var("AI_BENCH_KEEP").is_ok() {
        eprintln!("kept {}", dir.keep().display());
    }
    std::fs::create_dir_all("bench-results").unwrap();
    std::fs::write(
        "bench-results/limits.json",
        serde_json::to_vec_pretty(&Value::Object(results)).unwrap(),
    )
    .unwrap();
}
