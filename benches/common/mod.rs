//! What the benchmarks share: a deterministic generator of realistic work notes, and a project
//! seeded with N threads written straight into the store (no daemon, no embedding pass), so a
//! benchmark at 10,000 threads starts in seconds.

#![allow(dead_code)]

use ai_smartness::capture::source::OriginType;
use ai_smartness::memory::model::{
    Author, BridgeStatus, BridgeType, Message, ThinkBridge, Thread, ThreadStatus,
};
use ai_smartness::paths::ProjectPaths;
use ai_smartness::store::Store;
use chrono::{Duration as ChronoDuration, Utc};
use serde_json::json;
use std::path::Path;
use std::process::Command;

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

/// Writes `n` threads (3 messages each, random unit embeddings) straight into a store.
pub fn seed_project(root: &Path, n: usize) -> ProjectPaths {
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
        let norm = emb.iter().map(|x| x * x).sum::<f32>().sqrt();
        emb.iter_mut().for_each(|x| *x /= norm);
        let messages = (0..3)
            .map(|k| Message {
                id: format!("msg_{}_{:08x}", at.format("%Y%m%d_%H%M%S"), i * 3 + k),
                content: sentence(&mut rng),
                source: Author::Assistant,
                timestamp: at,
                metadata: Default::default(),
                embedding: None,
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
            embedding: Some(ai_smartness::embed::quant::QVec::from_unit(&emb)),
        });
    }
    store.save_threads(&threads).unwrap();
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
    let kind =
        if ai_smartness::embed::assets::locate(&ai_smartness::embed::assets::data_dir()).is_ok() {
            "mini_lm"
        } else {
            "hashed_tfidf"
        };
    std::fs::write(
        paths.db().join("embedder.json"),
        json!({"kind": kind, "dim": 384}).to_string(),
    )
    .unwrap();
    store.write_indexes(&threads, &bridges).unwrap();
    paths
}
