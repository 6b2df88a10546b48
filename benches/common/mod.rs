//! What the benchmarks share: a deterministic generator of realistic work notes, and a project
//! seeded with N threads written straight into the store (no daemon, no embedding pass), so a
//! benchmark at 10,000 threads starts in seconds.

#![allow(dead_code)]

use ai_smartness::capture::source::OriginType;
use ai_smartness::client::Client;
use ai_smartness::memory::types::{
    Author, BridgeStatus, BridgeType, Message, ThinkBridge, Thread, ThreadStatus,
};
use ai_smartness::paths::ProjectPaths;
use ai_smartness::store::Store;
use ai_smartness_vectors::EmbedderKind;
use chrono::{Duration as ChronoDuration, Utc};
use serde_json::json;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `ai` binary of this build.
pub const AI: &str = env!("CARGO_BIN_EXE_ai");

/// A small deterministic PRNG (xorshift) so runs are comparable.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() % 2_000_001) as f32 / 1_000_000.0 - 1.0
    }
    pub fn pick<'a>(&mut self, xs: &'a [&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

pub const SUBJECTS: [&str; 24] = [
    "connection pool",
    "borrow checker",
    "readiness probe",
    "cache invalidation",
    "schema migration",
    "websocket reconnect",
    "rate limiter",
    "feature flag",
    "retry backoff",
    "index rebuild",
    "token refresh",
    "query planner",
    "memory leak",
    "build pipeline",
    "log rotation",
    "dependency upgrade",
    "flaky test",
    "race condition",
    "config reload",
    "error budget",
    "pagination cursor",
    "file watcher",
    "thread pool",
    "bundle size",
];
pub const PLACES: [&str; 12] = [
    "billing service",
    "auth gateway",
    "search indexer",
    "mobile client",
    "admin dashboard",
    "payment worker",
    "notification queue",
    "reporting job",
    "CLI tool",
    "data importer",
    "API server",
    "scheduler",
];
pub const VERBS: [&str; 8] = [
    "times out in",
    "breaks",
    "slows down",
    "was reworked in",
    "needs tuning in",
    "was traced in",
    "regressed in",
    "was fixed in",
];

pub fn sentence(rng: &mut Rng) -> String {
    let s = rng.pick(&SUBJECTS);
    let p = rng.pick(&PLACES);
    let v = rng.pick(&VERBS);
    let n = rng.next() % 900 + 100;
    format!(
        "The {s} {v} the {p}: request {n} showed it after the last deploy. We measured {} ms at p95 and decided to keep the change behind a flag while the {s} settings are reviewed.",
        rng.next() % 400 + 20
    )
}

/// The embedder a daemon started now will report: MiniLM (in 8 bits unless
/// `AI_SMARTNESS_F32_MODEL` asks otherwise) when its files are installed, else the fallback.
pub fn installed_embedder() -> EmbedderKind {
    if ai_smartness::embed::assets::locate(&ai_smartness::embed::assets::data_dir()).is_err() {
        EmbedderKind::HashedTfidf
    } else if ai_smartness::embed::onnx::f32_products_asked() {
        EmbedderKind::MiniLm
    } else {
        EmbedderKind::MiniLmInt8
    }
}

/// A unit vector near the unit vector `v` (cosine about 0.96).
fn nearby(v: &[f32], rng: &mut Rng) -> Vec<f32> {
    let mut out: Vec<f32> = v.iter().map(|x| x + 0.025 * rng.unit()).collect();
    ai_smartness_vectors::normalize(&mut out);
    out
}

/// Units per seeded message: `AI_BENCH_UNITS` (default 1: each message one unit, as short
/// captures are). With more, each message is that many sentences, one unit each, each with its
/// own vector near its message's, as a long capture is stored.
pub fn units_per_message() -> usize {
    std::env::var("AI_BENCH_UNITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Writes `n` threads (3 messages each, random unit embeddings, each message's near its
/// thread's; see [`units_per_message`]) straight into a store.
pub fn seed_project(root: &Path, n: usize) -> ProjectPaths {
    let per_message = units_per_message();
    let paths = ProjectPaths::new(root);
    let out = Command::new(AI)
        .arg("--project")
        .arg(root)
        .args(["init"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let store = Store::open(&paths.db()).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let now = Utc::now();
    let mut threads = Vec::with_capacity(n);
    for i in 0..n {
        let at = now - ChronoDuration::minutes((rng.next() % (60 * 24 * 40)) as i64);
        let mut emb: Vec<f32> = (0..384).map(|_| rng.unit()).collect();
        ai_smartness_vectors::normalize(&mut emb);
        // Each message has its own vector near its thread's, as a real capture does (from a
        // stream of its own: the texts and the rest stay what they were).
        let mut near = Rng(0x51_7CC1_B727_220A ^ i as u64);
        let messages = (0..3)
            .map(|k| {
                let own = nearby(&emb, &mut near);
                let (content, units) = if per_message == 1 {
                    (sentence(&mut rng), Vec::new())
                } else {
                    let mut content = String::new();
                    let mut units = Vec::with_capacity(per_message);
                    for _ in 0..per_message {
                        let start = content.len() as u32;
                        content.push_str(&sentence(&mut rng));
                        content.push_str("\n\n");
                        units.push(ai_smartness::memory::types::Unit {
                            start,
                            end: content.len() as u32,
                            label: "answer".into(),
                            embedding: Some(ai_smartness_vectors::quant::QVec::from_unit(&nearby(
                                &own, &mut near,
                            ))),
                        });
                    }
                    (content, units)
                };
                Message {
                    id: format!("msg_{}_{:08x}", at.format("%Y%m%d_%H%M%S"), i * 3 + k),
                    content,
                    source: Author::Assistant,
                    timestamp: at,
                    metadata: Default::default(),
                    embedding: Some(ai_smartness_vectors::quant::QVec::from_unit(&own)),
                    terms: Vec::new(),
                    units,
                }
            })
            .collect();
        threads.push(Thread {
            id: format!("thread_{}_{:08x}", at.format("%Y%m%d_%H%M%S"), i),
            title: format!("{} in the {}", rng.pick(&SUBJECTS), rng.pick(&PLACES)),
            status: ThreadStatus::Active,
            messages,
            summary: sentence(&mut rng),
            topics: vec![
                rng.pick(&SUBJECTS).into(),
                rng.pick(&PLACES).into(),
                "deploy".into(),
            ],
            origin_type: OriginType::Prompt,
            drift_history: vec![],
            parent_id: None,
            child_ids: vec![],
            decisions: vec![],
            questions: vec![],
            weight: 1.0,
            weight_at: at,
            created_at: at,
            last_active: at,
            activation_count: 3,
            embedding: Some(ai_smartness_vectors::quant::QVec::from_unit(&emb)),
            pinned: false,
            never_recall: false,
            sharing: Default::default(),
            profile: Vec::new(),
            title_by: Default::default(),
            merged_into: None,
        });
    }
    store.save_whole_threads(&threads).unwrap();
    // Two bridges per thread, as gossip leaves them.
    let mut bridges = Vec::with_capacity(n * 2);
    for i in 0..n.saturating_sub(1) {
        for k in [1usize, 7] {
            let j = (i + k) % n;
            if j == i {
                continue;
            }
            let at = now - ChronoDuration::hours((rng.next() % (24 * 20)) as i64);
            bridges.push(ThinkBridge {
                id: format!("bridge_{}_{:08x}", at.format("%Y%m%d_%H%M%S"), i * 8 + k),
                source_id: threads[i].id.clone(),
                target_id: threads[j].id.clone(),
                relation_type: BridgeType::Extends,
                reason: "similarity 0.62".into(),
                shared_concepts: vec!["deploy".into()],
                confidence: 0.62,
                status: BridgeStatus::Active,
                propagated_from: None,
                propagation_depth: 0,
                use_count: 0,
                last_used: None,
                weight: 1.0,
                weight_at: at,
                created_at: at,
            });
        }
    }
    store.save_bridges(&bridges).unwrap();
    // The vectors stand for the installed embedder's (no reindex at start).
    let kind = serde_json::to_value(installed_embedder()).unwrap();
    std::fs::write(
        paths.db().join("embedder.json"),
        json!({"kind": kind, "dim": 384}).to_string(),
    )
    .unwrap();
    store.write_indexes(&threads, &bridges).unwrap();
    paths
}

/// A real `ai daemon run` process on a project, shut down when dropped.
pub struct Daemon {
    child: Child,
    paths: ProjectPaths,
}

impl Daemon {
    /// Starts `ai daemon run` and returns it with the time to the first answered ping.
    pub fn start(paths: &ProjectPaths) -> (Daemon, Duration) {
        Daemon::start_with_fd_limit(paths, None)
    }

    /// [`Daemon::start`] with the daemon's file limit (soft and hard) set as `ulimit -n` does.
    pub fn start_with_fd_limit(paths: &ProjectPaths, fds: Option<u64>) -> (Daemon, Duration) {
        let t = Instant::now();
        let mut cmd = Command::new(AI);
        cmd.arg("--project")
            .arg(&paths.root)
            .args(["daemon", "run"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(fds) = fds {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
            unsafe {
                cmd.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: fds,
                        rlim_max: fds,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd.spawn().unwrap();
        loop {
            if let Ok(mut c) = Client::connect(&paths.socket(), Duration::from_secs(30)) {
                if c.send_raw(b"{\"ping\":true}\n")
                    .is_ok_and(|r| r.pong == Some(true))
                {
                    break;
                }
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "daemon never answered"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let first = t.elapsed();
        (
            Daemon {
                child,
                paths: paths.clone(),
            },
            first,
        )
    }

    pub fn call(&self, v: Value) -> Value {
        let mut c = Client::connect(&self.paths.socket(), Duration::from_secs(600)).unwrap();
        let r = c.send_raw(format!("{v}\n").as_bytes()).unwrap();
        assert!(r.ok, "{v}: {:?}", r.error);
        r.result.unwrap_or(Value::Null)
    }

    /// Resident memory of the daemon process, in MB.
    pub fn rss_mb(&self) -> f64 {
        ai_smartness_testkit::procs::resident_mb(self.child.id())
    }

    /// Waits until every startup task (embedder change reindex, the vectors of the words
    /// loaded) is done: sync then status.
    pub fn settle(&self) {
        self.call(json!({"sync": true}));
        loop {
            let st = self.call(json!({"status": true}));
            if st["stats"]["reindexing"] != true
                && st["embedder"]["words_pending"].as_u64().unwrap_or(0) == 0
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(mut c) = Client::connect(&self.paths.socket(), Duration::from_secs(30)) {
            let _ = c.send_raw(b"{\"shutdown\":true}\n");
        }
        let _ = self.child.wait();
    }
}

/// The `p`-th quantile (0 to 1) of `xs` by nearest rank; NaN when there is nothing.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}
