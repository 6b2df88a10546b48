//! Lifecycle: single instance, stale sockets, detaching, stopping.

use crate::harness::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

#[test]
fn one_daemon_per_project_and_the_socket_is_private() {
    let mut p = Project::new();
    p.start();
    let mode = std::fs::metadata(p.paths.socket())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let pid: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.paths.pid_file()).unwrap()).unwrap();
    assert_eq!(pid["protocol"], ai_smartness::protocol::PROTOCOL_VERSION);
    // A second foreground daemon refuses to run.
    let out = p.ai(&["daemon", "run"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already running"));
    p.stop();
    assert!(!p.paths.socket().exists(), "socket removed on shutdown");
}

#[test]
fn a_stale_socket_is_detected_and_replaced() {
    let mut p = Project::new();
    // A socket file left by a crash: bound once, nobody listening.
    let stale = std::os::unix::net::UnixListener::bind(p.paths.socket()).unwrap();
    drop(stale);
    assert!(p.paths.socket().exists());
    p.start();
    assert_eq!(p.send(r#"{"ping": true}"#).pong, Some(true));
}

#[test]
fn cli_starts_the_daemon_on_demand_detached_and_stops_it() {
    let p = Project::new();
    let st = p.ai(&["daemon", "status"]);
    assert_eq!(st.status.code(), Some(3), "not running yet");
    // Any command starts it.
    let v = p.ai_json(&["status"]);
    assert_eq!(v["threads"]["total"], 0);
    let st = p.ai(&["daemon", "status"]);
    assert!(st.status.success());
    let out = p.ai(&["daemon", "stop"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!ai_smartness::daemon::lifecycle::lock_is_held(&p.paths));
    let out = p.ai(&["daemon", "restart"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(p.ai(&["daemon", "status"]).status.success());
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let mut p = Project::new();
    p.start();
    p.capture("Bash", TOPICS[0]);
    let pid = ai_smartness::daemon::lifecycle::read_pid_file(&p.paths)
        .unwrap()
        .pid;
    assert!(ai_smartness::daemon::lifecycle::terminate(pid));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while ai_smartness::daemon::lifecycle::lock_is_held(&p.paths) {
        assert!(
            std::time::Instant::now() < deadline,
            "daemon ignored SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(p.log().contains("SIGTERM"));
    // The capture acknowledged before SIGTERM is in the memory after a restart.
    p.start();
    p.sync();
    assert_eq!(p.all_message_texts().len(), 1);
}

#[test]
fn degraded_embeddings_are_reported_plainly() {
    let mut p = Project::without_model();
    p.start();
    let st = p.ai_json(&["status"]);
    assert_eq!(st["embedder"]["degraded"], true);
    let human = String::from_utf8(p.ai(&["health"]).stdout).unwrap();
    assert!(human.contains("DEGRADED"), "{human}");
}

#[test]
fn the_real_model_is_used_when_its_files_are_there() {
    let Some(p) = started_on_real_model() else {
        return;
    };
    let st = p.ai_json(&["status"]);
    assert_eq!(st["embedder"]["degraded"], false, "{st}");
    // Multiplying in 8 bits: the model's products were rewritten (crates/embed/src/int8.rs).
    assert_eq!(st["embedder"]["kind"], "mini_lm_int8");
}

/// Every word the memory uses gets its vector once: kept in `word_vectors.bin`, loaded at the
/// next start instead of embedded again, and a row torn by a crash is embedded again.
#[test]
fn word_vectors_are_made_once_and_survive_restarts_and_a_torn_file() {
    let Some(mut p) = started_on_real_model() else {
        return;
    };
    p.capture(
        "Read",
        "Practice notes: the violin recital moved to Sunday, clarinet lessons stay on Tuesday.",
    );
    p.capture(
        "Read",
        "Kitchen renovation: cabinets repainted, plumbing inspection scheduled.",
    );
    p.sync();
    let words = |p: &Project| {
        let st = p.ai_json(&["status"]);
        let e = &st["embedder"];
        (
            e["words"].as_u64().unwrap(),
            e["words_pending"].as_u64().unwrap(),
        )
    };
    let (made, pending) = words(&p);
    assert!(
        made >= 10 && pending == 0,
        "{made} words, {pending} pending"
    );
    let file = p.root().join(".ai/db/word_vectors.bin");
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size > made * 384, "{size} bytes for {made} words");

    p.stop();
    p.start();
    let again = p.wait_for("words loaded", Duration::from_secs(30), || {
        Some(words(&p)).filter(|(_, pending)| *pending == 0)
    });
    assert_eq!(again, (made, 0));
    assert!(
        !p.log().contains("words without a vector embedded"),
        "{}",
        p.log()
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        size,
        "nothing appended"
    );

    p.stop();
    // A crash in the middle of the last row.
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(size - 100).unwrap();
    p.start();
    p.wait_for(
        "the torn word embedded again",
        Duration::from_secs(30),
        || Some(()).filter(|()| words(&p) == (made, 0)),
    );
    // The row is appended just after the word gets its vector in memory.
    let len = || std::fs::metadata(&file).unwrap().len();
    p.wait_for("the torn word kept again", Duration::from_secs(30), || {
        Some(()).filter(|()| len() >= size)
    });
    assert_eq!(len(), size);
}

/// A store written before units existed: its long messages are cut into units at start and
/// the units embedded in the background, the text untouched, and search finds the part.
#[test]
fn long_messages_of_an_old_store_get_units_and_their_vectors() {
    let Some(mut p) = started_on_real_model() else {
        return;
    };
    let output: String = (1..=160)
        .map(|i| match i {
            117 => "line 117: the replica in eu-west-3 lags forty-two seconds behind\n".to_string(),
            _ => format!("line {i}: request served in {i} ms by worker {}\n", i % 7),
        })
        .collect();
    p.capture("Bash", &output);
    p.sync();
    p.stop();
    let logs: Vec<_> = std::fs::read_dir(p.root().join(".ai/db/threads"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|f| f.to_string_lossy().ends_with(".messages.jsonl"))
        .collect();
    let units_of = |logs: &[std::path::PathBuf]| -> Vec<serde_json::Value> {
        logs.iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                    .collect::<Vec<_>>()
            })
            .flat_map(|m| m["units"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    assert!(units_of(&logs).len() >= 2, "captured in units");
    // As an older version wrote them: no units.
    for f in &logs {
        let lines: Vec<String> = std::fs::read_to_string(f)
            .unwrap()
            .lines()
            .map(|l| {
                let mut m: serde_json::Value = serde_json::from_str(l).unwrap();
                m.as_object_mut().unwrap().remove("units");
                m.to_string()
            })
            .collect();
        std::fs::write(f, lines.join("\n") + "\n").unwrap();
    }
    assert!(units_of(&logs).is_empty());
    p.start();
    // `sync` waits for the units' vectors too.
    p.sync();
    assert_eq!(p.ai_json(&["status"])["embedder"]["units_pending"], 0);
    let units = units_of(&logs);
    assert!(units.len() >= 2, "cut again at start");
    assert!(
        units.iter().all(|u| !u["embedding"].is_null()),
        "every unit has its vector on disk"
    );
    let found = p.ai_json(&["context", "how far behind is the replica in eu-west-3?"]);
    let quoted = found["context"].as_str().unwrap_or_default();
    assert!(quoted.contains("forty-two seconds"), "{found}");
    assert!(
        !quoted.contains("line 3:"),
        "the part is quoted, not the whole output"
    );
}

/// A memory made by the model in f32 (before products ran in 8 bits) keeps its vectors at the
/// first start of the 8-bit model: they are comparable (a sentence's within ~0.001 cosine), so
/// nothing is embedded again; only the record of the embedder changes.
#[test]
fn vectors_of_the_f32_model_are_kept_by_the_8_bit_one() {
    let Some(mut p) = started_on_real_model() else {
        return;
    };
    p.capture(
        "Read",
        "Deployment notes: the staging gateway rejects tokens older than ten minutes.",
    );
    p.sync();
    p.stop();
    let meta = p.root().join(".ai/db/embedder.json");
    std::fs::write(&meta, r#"{"kind": "mini_lm", "dim": 384}"#).unwrap();
    p.start();
    let kind = p.wait_for("the embedder recorded", Duration::from_secs(30), || {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).ok()?).ok()?;
        Some(v["kind"].clone()).filter(|k| k == "mini_lm_int8")
    });
    assert_eq!(kind, "mini_lm_int8");
    // The log is written by a thread of its own: its line may land after the file.
    p.wait_for("the kept vectors logged", Duration::from_secs(30), || {
        Some(()).filter(|()| p.log().contains("comparable with"))
    });
    let log = p.log();
    assert!(!log.contains("reindexing"), "{log}");
    let found = p.ai_json(&["search", "staging gateway tokens"]);
    assert!(found.to_string().contains("staging gateway"), "{found}");
}

/// The periodic prune keeps ended sessions, finished runs, syntheses and quarantined files
/// within their `retention` limits; an open session and the newest synthesis always stay.
#[test]
fn retention_limits_what_piles_up_beside_the_memory() {
    use ai_smartness::config::Config;
    use ai_smartness::memory::ids::new_id;
    use ai_smartness::records::assistant::types::{AISession, SessionEndReason, SessionKind};
    use ai_smartness::records::run::{ExecuteMode, Phase, Run};
    use chrono::{Duration as Days, Utc};

    let mut p = Project::without_model();
    let config = p.paths.config();
    for (key, value) in [
        (&["daemon", "prune_interval_secs"][..], serde_json::json!(1)),
        (
            &["retention", "runs", "max_count"][..],
            serde_json::json!(1),
        ),
        (
            &["retention", "sessions", "max_count"][..],
            serde_json::json!(1),
        ),
        (
            &["retention", "synthesis", "max_age_days"][..],
            serde_json::json!(5),
        ),
        (
            &["retention", "quarantine", "max_count"][..],
            serde_json::json!(1),
        ),
    ] {
        Config::set_key(&config, key, value).unwrap();
    }
    let db = p.paths.db();
    let now = Utc::now();
    let ago = |days: i64| now - Days::days(days);

    let sessions = db.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let session = |days: i64, ended: bool| {
        let mut s = AISession::new(
            new_id("session", ago(days)),
            "chat",
            SessionKind::Chat,
            ago(days),
        );
        if ended {
            s.ended_at = Some(ago(days));
            s.end_reason = Some(SessionEndReason::Completed);
        }
        let path = sessions.join(format!("{}.json", s.id));
        std::fs::write(&path, serde_json::to_vec(&s).unwrap()).unwrap();
        s.id
    };
    let (open, old_ended, new_ended) = (session(30, false), session(20, true), session(2, true));

    let runs = db.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let run = |days: i64| {
        let mut r = Run::new(
            new_id("run", ago(days)),
            "a task".into(),
            ExecuteMode::Direct,
            false,
            p.root().display().to_string(),
            "person".into(),
            ago(days),
        );
        r.phase = Phase::Complete;
        r.finished_at = Some(ago(days));
        std::fs::write(
            runs.join(format!("{}.json", r.id)),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
        r.id
    };
    let (old_run, new_run) = (run(9), run(1));

    let aged = |path: std::path::PathBuf, days: i64| {
        std::fs::write(&path, "{}").unwrap();
        let at = std::time::SystemTime::now() - Duration::from_secs(days as u64 * 86_400);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(at)
            .unwrap();
    };
    let synthesis = db.join("synthesis");
    for (name, days) in [
        ("synthesis_20260101_000000.json", 40),
        ("synthesis_20260102_000000.json", 30),
    ] {
        aged(synthesis.join(name), days);
    }
    let quarantine = db.join("quarantine");
    for (name, days) in [("a.json", 3), ("b.json", 2)] {
        aged(quarantine.join(name), days);
        aged(quarantine.join(format!("{name}.reason.txt")), days);
    }

    p.start();
    let names = |dir: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.starts_with('.'))
            .collect();
        v.sort();
        v
    };
    p.wait_for("the retention pass", Duration::from_secs(20), || {
        (names(&quarantine).len() == 2).then_some(())
    });
    assert_eq!(names(&quarantine), ["b.json", "b.json.reason.txt"]);
    // Past its age, but the newest synthesis is what a continuation reads.
    assert_eq!(names(&synthesis), ["synthesis_20260102_000000.json"]);
    assert_eq!(
        names(&runs),
        [format!("{new_run}.json")],
        "{old_run} should be gone"
    );
    let mut left = vec![format!("{open}.json"), format!("{new_ended}.json")];
    left.sort();
    assert_eq!(names(&sessions), left, "{old_ended} should be gone");
    let listed = p.ai_json(&["runs"]);
    assert_eq!(listed["runs"].as_array().map(Vec::len), Some(1), "{listed}");
}
