//! Lifecycle: single instance, stale sockets, detaching, stopping.

use crate::harness::*;
use std::os::unix::fs::PermissionsExt;

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
    if ai_smartness::embed::assets::locate(&real_data_dir()).is_err() {
        eprintln!("model assets absent: run scripts/fetch-assets.sh; skipping");
        return;
    }
    let mut p = Project::new();
    p.start();
    let st = p.ai_json(&["status"]);
    assert_eq!(st["embedder"]["degraded"], false, "{st}");
    assert_eq!(st["embedder"]["kind"], "mini_lm");
}
