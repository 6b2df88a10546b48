//! Write volume of a capture: bytes the store writes to save one more message in a thread of 10,
//! 1,000 and 10,000 messages (target: flat, independent of the thread's size).
//!
//!     cargo bench --bench writes
//!
//! The real store on a temporary folder: a thread of N messages (capture-sized texts with their
//! 8-bit vectors) is saved, then 20 captures each add a message and the store saves what
//! changed, as the daemon's flush does. Measured: the bytes this process wrote (`wchar` in
//! `/proc/self/io`, every `write` the store made: message log, header, nothing else) per
//! capture. Beside it, in the same run, what the single-file layout wrote for the same capture:
//! the whole thread serialized again. Writes `bench-results/writes.json`.

use ai_smartness::capture::source::OriginType;
use ai_smartness::memory::graph::Graph;
use ai_smartness::memory::types::{Author, Message, Thread, ThreadStatus};
use ai_smartness::store::Store;
use ai_smartness_vectors::quant::QVec;
use chrono::{Duration, TimeZone, Utc};
use serde_json::json;

fn written_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn message(n: usize) -> Message {
    let at = Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).unwrap() + Duration::seconds(n as i64);
    let mut v: Vec<f32> = (0..384)
        .map(|i| ((i * 7 + n * 13) % 97) as f32 - 48.0)
        .collect();
    ai_smartness_vectors::normalize(&mut v);
    let mut metadata = serde_json::Map::new();
    metadata.insert("tool".into(), json!("Bash"));
    metadata.insert("source_type".into(), json!("command"));
    Message {
        id: format!("msg_{}_{n:08x}", at.format("%Y%m%d_%H%M%S")),
        content: format!(
            "$ cargo test -p store\nrunning 42 tests ... test store::journal::tests::replay_{n} ok\n{}",
            "test result: ok. 42 passed; 0 failed; 0 ignored. ".repeat(12)
        ),
        source: Author::Assistant,
        timestamp: at,
        metadata,
        embedding: Some(QVec::from_unit(&v)),
        terms: Vec::new(),
        units: Vec::new(),
    }
}

fn thread(size: usize) -> Thread {
    let at = Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).unwrap();
    Thread {
        id: "thread_20260501_090000_0000abcd".into(),
        title: "Store journal tests".into(),
        status: ThreadStatus::Active,
        messages: (0..size).map(message).collect(),
        summary: "The journal's replay tests".into(),
        topics: vec!["journal".into(), "replay".into()],
        origin_type: OriginType::Prompt,
        drift_history: Vec::new(),
        parent_id: None,
        child_ids: Vec::new(),
        decisions: Vec::new(),
        questions: Vec::new(),
        weight: 1.0,
        weight_at: at,
        created_at: at,
        last_active: at,
        activation_count: 1,
        embedding: None,
        pinned: false,
        never_recall: false,
        sharing: Default::default(),
        profile: Vec::new(),
        title_by: Default::default(),
        merged_into: None,
    }
}

fn main() {
    const CAPTURES: usize = 20;
    println!(
        "ai-smartness write volume per capture (the store's own writes, {CAPTURES} captures each)"
    );
    println!();
    println!(
        "{:>16} | {:>20} | {:>26}",
        "thread size", "now (bytes/capture)", "single-file layout (bytes)"
    );
    let mut rows = Vec::new();
    for size in [10usize, 1_000, 10_000] {
        let dir = tempfile::Builder::new()
            .prefix("aiw")
            .tempdir_in("/tmp")
            .unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let t = thread(size);
        let id = t.id.clone();
        store.save_thread(&t).unwrap();
        let mut graph = Graph::from_loaded(vec![t], Vec::new());
        let mut total = 0u64;
        let mut single_file = 0u64;
        for k in 0..CAPTURES {
            graph
                .thread_mut(&id)
                .unwrap()
                .messages
                .push(message(size + k));
            // What the single-file layout wrote: the whole thread again.
            single_file += serde_json::to_vec(graph.thread(&id).unwrap())
                .unwrap()
                .len() as u64
                + 1;
            let before = written_bytes();
            let changes = graph.take_changes();
            store.save_threads(&changes.save_threads).unwrap();
            graph.saved(&changes);
            total += written_bytes() - before;
        }
        let now = total / CAPTURES as u64;
        let old = single_file / CAPTURES as u64;
        println!("{size:>16} | {now:>20} | {old:>26}");
        rows.push(json!({"thread_messages": size, "bytes_per_capture": now, "single_file_bytes_per_capture": old}));
    }
    let first = rows[0]["bytes_per_capture"].as_f64().unwrap();
    let last = rows[2]["bytes_per_capture"].as_f64().unwrap();
    println!();
    println!(
        "target: flat. 10,000 messages / 10 messages = {:.2}x (the single-file layout: {:.0}x)",
        last / first,
        rows[2]["single_file_bytes_per_capture"].as_f64().unwrap()
            / rows[0]["single_file_bytes_per_capture"].as_f64().unwrap()
    );
    std::fs::create_dir_all("bench-results").unwrap();
    std::fs::write(
        "bench-results/writes.json",
        serde_json::to_vec_pretty(&json!({ "captures": CAPTURES, "rows": rows })).unwrap(),
    )
    .unwrap();
}
