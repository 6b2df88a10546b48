//! Team store benchmark: how fast the outbox fills a real PostgreSQL with pgvector, and how fast
//! a team search answers as the store grows.
//!
//!     cargo bench --bench team                   (10,000 and 100,000 shared messages)
//!     AI_BENCH_QUICK=1 cargo bench --bench team  (10,000)
//!     AI_BENCH_TEAM_MILLION=1 cargo bench --bench team   (and 1,000,000: long)
//!
//! The server is the one `scripts/fetch-postgres.sh` unpacks (run as nobody when root), a fresh
//! cluster on a Unix socket. Messages are written as the daemon's sender writes them
//! (`outbox::send`, 500 a round split over two connections, 384-dimension vectors, the HNSW
//! and full-text indexes maintained as they go). Searches are the daemon's (`search::search`: both orders fused in
//! SQL). Beside them, in the same run, the same dense query without the index (an exact scan:
//! the baseline the index is measured against). Writes `bench-results/team.json`.

mod common;
#[path = "../tests/support/pg_cluster.rs"]
mod pg_cluster;

use ai_smartness_team::outbox::{self, Origin, SharedMessage, SharedThread};
use common::{percentile, sentence, Rng};
use serde_json::json;
use std::time::Instant;

const DIM: usize = 384;
const BATCH: usize = 500;

fn unit(rng: &mut Rng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..DIM).map(|_| rng.unit() - 0.5).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// A vector close to `v` (a question about that message).
fn near(v: &[f32], rng: &mut Rng) -> Vec<f32> {
    let mut q: Vec<f32> = v.iter().map(|x| x + 0.03 * (rng.unit() - 0.5)).collect();
    let n = q.iter().map(|x| x * x).sum::<f32>().sqrt();
    q.iter_mut().for_each(|x| *x /= n);
    q
}

fn main() {
    let Some(home) = pg_cluster::installed() else {
        eprintln!("!! no PostgreSQL: run scripts/fetch-postgres.sh");
        std::process::exit(1);
    };
    let mut sizes = vec![10_000usize, 100_000];
    if std::env::var_os("AI_BENCH_QUICK").is_some() {
        sizes = vec![10_000];
    }
    if std::env::var_os("AI_BENCH_TEAM_MILLION").is_some() {
        sizes.push(1_000_000);
    }
    let cluster = pg_cluster::Cluster::start(
        &home,
        None,
        "-c shared_buffers=256MB -c maintenance_work_mem=256MB",
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    rt.block_on(async {
        let mut client = ai_smartness_team::connect(&cluster.url(), None)
            .await
            .unwrap();
        ai_smartness_team::migrate(&mut client).await.unwrap();
        let mut second = ai_smartness_team::connect(&cluster.url(), None)
            .await
            .unwrap();
        let origin = Origin {
            team: "bench".into(),
            project: "github.com/acme/shop".into(),
            author: "Ann".into(),
            machine: "bench".into(),
        };
        let mut rng = Rng(0x7EA);
        let mut stored = 0usize;
        let mut kept: Vec<(Vec<f32>, String)> = Vec::new();
        for &n in &sizes {
            let started = Instant::now();
            let before = stored;
            while stored < n {
                let take = BATCH.min(n - stored);
                let thread = format!("thread_{}", stored / 50);
                let messages: Vec<SharedMessage> = (0..take)
                    .map(|i| {
                        let v = unit(&mut rng);
                        let text = sentence(&mut rng);
                        if (stored + i).is_multiple_of(997) && kept.len() < 200 {
                            kept.push((v.clone(), text.clone()));
                        }
                        SharedMessage {
                            id: format!("msg_{:08}", stored + i),
                            thread_id: thread.clone(),
                            content: text,
                            embedding: Some(v),
                            created_at: "2026-11-26T10:00:00Z".into(),
                        }
                    })
                    .collect();
                let threads = vec![SharedThread {
                    id: thread.clone(),
                    title: "bench".into(),
                    status: "active".into(),
                    edited_at: "2026-11-26T10:00:00Z".into(),
                }];
                // As the sender does: half on each connection, the thread row with the first.
                let (a, b) = messages.split_at(messages.len() / 2);
                let (x, y) = tokio::join!(
                    outbox::send(&mut client, &origin, &threads, a),
                    outbox::send(&mut second, &origin, &[], b)
                );
                x.unwrap();
                y.unwrap();
                stored += take;
            }
            let rate = (stored - before) as f64 / started.elapsed().as_secs_f64();
            client.batch_execute("ANALYZE team_messages").await.unwrap();
            let mut hybrid = Vec::new();
            let mut exact = Vec::new();
            let mut found = 0;
            for (i, (v, text)) in kept.iter().cycle().take(100).enumerate() {
                let q = near(v, &mut rng);
                let words: String = text
                    .split_whitespace()
                    .take(4)
                    .collect::<Vec<_>>()
                    .join(" ");
                let t = Instant::now();
                let hits = ai_smartness_team::search::search(
                    &client,
                    &origin.team,
                    &origin.project,
                    &words,
                    &q,
                    8,
                )
                .await
                .unwrap();
                hybrid.push(t.elapsed().as_secs_f64() * 1e3);
                if hits.iter().any(|h| h.content == *text) {
                    found += 1;
                }
                if i < 20 {
                    // The same nearest-neighbour question without the index.
                    let tx = client.transaction().await.unwrap();
                    tx.batch_execute("SET LOCAL enable_indexscan = off")
                        .await
                        .unwrap();
                    let t = Instant::now();
                    tx.query(
                        "SELECT id FROM team_messages WHERE team = $1 AND project = $2
                         ORDER BY embedding <=> $3::text::vector LIMIT 8",
                        &[&origin.team, &origin.project, &outbox::vector_text(&q)],
                    )
                    .await
                    .unwrap();
                    exact.push(t.elapsed().as_secs_f64() * 1e3);
                    tx.rollback().await.unwrap();
                }
            }
            rows.push(json!({
                "messages": n,
                "outbox_msgs_per_s": rate.round(),
                "search_ms_p50": percentile(&hybrid, 0.5),
                "search_ms_p95": percentile(&hybrid, 0.95),
                "exact_scan_ms_p50": percentile(&exact, 0.5),
                "found_share": found as f64 / 100.0,
            }));
        }
    });
    println!("Team store (real PostgreSQL 18 + pgvector, one team, one project)");
    println!(
        "{:>10} | {:>15} | {:>21} | {:>17} | {:>6} | {:>5}",
        "messages", "outbox msgs/s", "team search p50/p95", "exact scan p50", "ratio", "found"
    );
    for r in &rows {
        println!(
            "{:>10} | {:>15} | {:>9.2} / {:>6.2} ms | {:>14.2} ms | {:>5.1}x | {:>4.0}%",
            r["messages"],
            r["outbox_msgs_per_s"],
            r["search_ms_p50"].as_f64().unwrap(),
            r["search_ms_p95"].as_f64().unwrap(),
            r["exact_scan_ms_p50"].as_f64().unwrap(),
            r["exact_scan_ms_p50"].as_f64().unwrap() / r["search_ms_p50"].as_f64().unwrap(),
            r["found_share"].as_f64().unwrap() * 100.0
        );
    }
    println!("Targets: team search p95 under 50 ms; outbox at least 500 messages/s");
    println!("(ratio: the exact scan's time over the hybrid search's; found: queries whose message came back)");
    std::fs::create_dir_all("bench-results").unwrap();
    std::fs::write(
        "bench-results/team.json",
        serde_json::to_vec_pretty(&json!({ "rows": rows })).unwrap(),
    )
    .unwrap();
}
