//! Nothing acknowledged is lost: journal before ack, replay after kill -9, concurrent clients,
//! corrupt files quarantined, indexes rebuilt, secrets never stored.

use crate::harness::*;
use serde_json::json;

#[test]
fn acknowledged_captures_survive_kill_9() {
    let mut p = Project::new();
    p.start();
    let n = 40;
    for i in 0..n {
        p.capture("Bash", &format!("{} (run {i})", TOPICS[i % TOPICS.len()]));
    }
    // No sync: the daemon dies with captures possibly unprocessed.
    p.kill9();
    p.start();
    p.sync();
    let texts = p.all_message_texts();
    for i in 0..n {
        assert!(
            texts.iter().any(|t| t.contains(&format!("(run {i})"))),
            "capture {i} lost"
        );
    }
    assert_eq!(texts.len(), n, "and none duplicated");
}

#[test]
fn captures_saved_but_not_checkpointed_are_not_stored_twice() {
    // The window a kill -9 can hit: threads saved, checkpoint not yet written.
    let mut p = Project::new();
    p.start();
    for i in 0..6 {
        p.capture("Bash", &format!("{} (run {i})", TOPICS[i % TOPICS.len()]));
    }
    p.sync();
    p.kill9();
    std::fs::write(p.paths.db().join("journal/checkpoint"), "0\n").unwrap();
    p.start();
    p.capture("Bash", &format!("{} (run 6)", TOPICS[2]));
    p.sync();
    let texts = p.all_message_texts();
    assert_eq!(texts.len(), 7, "{texts:#?}");
    for i in 0..7 {
        assert!(texts.iter().any(|t| t.contains(&format!("(run {i})"))));
    }
}

#[test]
fn concurrent_captures_from_many_clients_are_all_kept() {
    let mut p = Project::new();
    p.start();
    let socket = p.paths.socket();
    let handles: Vec<_> = (0..12)
        .map(|c| {
            let socket = socket.clone();
            std::thread::spawn(move || {
                let mut client = ai_smartness::client::Client::connect(&socket, std::time::Duration::from_secs(30)).unwrap();
                for i in 0..15 {
                    let line = json!({"tool": "Bash", "content": format!("{} [client {c} item {i}]", TOPICS[(c + i) % 4])});
                    let r = client.send_raw(format!("{line}\n").as_bytes()).unwrap();
                    assert!(r.ok);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    p.sync();
    let texts = p.all_message_texts();
    assert_eq!(texts.len(), 12 * 15);
    for c in 0..12 {
        for i in 0..15 {
            let tag = format!("[client {c} item {i}]");
            assert!(texts.iter().any(|t| t.contains(&tag)), "{tag} lost");
        }
    }
}

#[test]
fn corrupt_files_are_quarantined_and_indexes_rebuilt() {
    let mut p = Project::new();
    p.start();
    p.capture("Read", TOPICS[0]);
    p.capture("Read", TOPICS[1]);
    p.sync();
    let before = p.threads("all").len();
    p.stop();
    let threads_dir = p.paths.db().join("threads");
    std::fs::write(
        threads_dir.join("thread_20260101_000000_deadbeef.json"),
        b"{ truncated",
    )
    .unwrap();
    std::fs::write(threads_dir.join("_active.json"), b"[\"thread_missing\"").unwrap();
    std::fs::remove_file(p.paths.db().join("bridges/_index.json")).ok();
    p.start();
    assert_eq!(p.threads("all").len(), before, "good threads all loaded");
    let q: Vec<_> = std::fs::read_dir(p.paths.db().join("quarantine"))
        .unwrap()
        .collect();
    assert!(!q.is_empty(), "corrupt file moved to quarantine");
    assert!(!threads_dir
        .join("thread_20260101_000000_deadbeef.json")
        .exists());
    let active: Vec<String> =
        serde_json::from_slice(&std::fs::read(threads_dir.join("_active.json")).unwrap()).unwrap();
    assert_eq!(active.len(), before);
    assert!(p.paths.db().join("bridges/_index.json").exists());
    // The log is written by its own thread: wait for the line.
    p.wait_for(
        "the quarantine in the log",
        std::time::Duration::from_secs(10),
        || p.log().to_lowercase().contains("quarantine").then_some(()),
    );
    let h = p.ai_json(&["health"]);
    assert!(h["quarantined_files"].as_u64().unwrap() >= 1);
}

#[test]
fn secrets_never_reach_the_store() {
    let mut p = Project::new();
    p.start();
    let key = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-AbCdEfGhIjKlMnOpQrStUvWx";
    let gh = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
    let content = format!(
        "Deploying the billing service with the production settings:\nANTHROPIC_API_KEY={key}\nDATABASE_URL=postgres://billing:hunter2secret@db.internal:5432/billing\ngit push https://x-access-token:{gh}@github.com/acme/billing.git\n<private>the staging root password is Tr0ub4dor</private>\nDeployment finished, readiness probe green on port 8080."
    );
    p.capture("Bash", &content);
    p.sync();
    let mut on_disk = String::new();
    for e in std::fs::read_dir(p.paths.db().join("threads")).unwrap() {
        on_disk.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    for secret in [key, gh, "hunter2secret", "Tr0ub4dor"] {
        assert!(!on_disk.contains(secret), "{secret} reached the store");
    }
    assert!(on_disk.contains("readiness probe"), "the rest is kept");
    // The journal held the raw capture only until it was processed and checkpointed; the
    // stored thread is what stays.
    assert!(on_disk.contains("REDACTED"));
}
