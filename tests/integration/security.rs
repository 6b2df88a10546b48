//! What a hostile or careless local user could do to the daemon: take its socket over, find
//! secrets on disk, pin the memory with a date from the future. Each test attacks the real
//! binaries.

use crate::harness::*;
use serde_json::json;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const INJECT: &str = env!("CARGO_BIN_EXE_ai-inject");

/// The uid of `nobody`: another local user.
const OTHER_UID: u32 = 65534;

fn is_root() -> bool {
    ai_smartness::paths::current_uid() == 0
}

/// A python3 that another user can run (pyenv shims under /root are not).
fn system_python() -> Option<PathBuf> {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Another user's process listening on `socket`, counting the connections it receives. Stops
/// and reports when its stdin closes.
struct Eavesdropper {
    child: std::process::Child,
}

impl Eavesdropper {
    fn listen(socket: &Path) -> Eavesdropper {
        let python = system_python().expect("a system python3");
        let script = r#"
import os, select, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
s.listen(64)
s.setblocking(False)
print("listening", flush=True)
count = 0
while True:
    r, _, _ = select.select([s, sys.stdin], [], [], 5)
    if s in r:
        try:
            s.accept(); count += 1
        except BlockingIOError:
            pass
    if sys.stdin in r and not sys.stdin.read(1):
        break
while True:
    try:
        s.accept(); count += 1
    except BlockingIOError:
        break
print(count, flush=True)
"#;
        let mut child = Command::new(python)
            .args(["-c", script])
            .arg(socket)
            .uid(OTHER_UID)
            .gid(OTHER_UID)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line, "listening\n", "the other user's listener");
        Eavesdropper { child }
    }

    /// Connections received, once stopped.
    fn stop(mut self) -> u64 {
        drop(self.child.stdin.take());
        let out = self.child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

#[test]
fn a_socket_folder_another_user_made_first_is_never_talked_to() {
    if !is_root() || system_python().is_none() {
        eprintln!("SKIPPED: needs root and a system python3 to act as another user");
        return;
    }
    // A home the other user can traverse (to reach the folder it planted), and a project whose
    // `.ai/processor.sock` is too long for a Unix socket, so the fallback folder is used.
    let home = tempfile::Builder::new()
        .prefix("aih")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let project = home.path().join("p".repeat(100));
    let init = Command::new(AI)
        .arg("--project")
        .arg(&project)
        .arg("init")
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    let paths = ai_smartness::paths::ProjectPaths::new(project.canonicalize().unwrap());
    assert!(!ai_smartness::paths::fits_sun_path(
        &paths.preferred_socket()
    ));
    let folder =
        ai_smartness::paths::runtime_dir_from(None, None, Some(home.path().as_os_str())).unwrap();
    let key = ai_smartness::paths::fnv1a64(paths.ai_dir.as_os_str().as_encoded_bytes());
    let socket = folder.join(format!("{key:016x}.sock"));
    // The other user got there first: its folder, open to all, and its socket in it.
    std::fs::create_dir_all(&folder).unwrap();
    std::os::unix::fs::chown(&folder, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    std::fs::set_permissions(&folder, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let ear = Eavesdropper::listen(&socket);

    let payload = json!({
        "session_id": "s1",
        "cwd": paths.root,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Here is the deploy password hunter2-correct-horse, what does the pool config say?",
    });
    let mut hook = Command::new(INJECT)
        .current_dir(&paths.root)
        .env("HOME", home.path())
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_STATE_HOME")
        .env_remove("AI_SMARTNESS_HOOK_RUNNING")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = hook.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "nothing injected");

    // The daemon will not use that folder either.
    let daemon = Command::new(AI)
        .arg("--project")
        .arg(&paths.root)
        .args(["daemon", "run"])
        .env("HOME", home.path())
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_STATE_HOME")
        .env("AI_SMARTNESS_DATA_DIR", "/nonexistent")
        .output()
        .unwrap();
    assert!(
        !daemon.status.success(),
        "the daemon started on a foreign folder"
    );
    let said = String::from_utf8_lossy(&daemon.stderr);
    assert!(said.contains("belongs to uid 65534"), "{said}");

    assert_eq!(
        ear.stop(),
        0,
        "the other user's socket received a connection"
    );
    let log = std::fs::read_to_string(paths.hook_log("inject")).unwrap();
    assert!(
        log.contains("ERROR") && log.contains("belongs to uid 65534"),
        "{log}"
    );
}

/// Every `.ai/` folder of a project is its owner's alone.
#[test]
fn the_ai_folders_are_private() {
    use std::os::unix::fs::MetadataExt;
    let mut p = Project::without_model();
    p.start();
    p.capture("Bash", TOPICS[0]);
    p.sync();
    let mut dirs = vec![p.paths.ai_dir.clone()];
    let mut i = 0;
    while i < dirs.len() {
        for e in std::fs::read_dir(&dirs[i]).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            }
        }
        i += 1;
    }
    let open: Vec<String> = dirs
        .iter()
        .filter(|d| std::fs::metadata(d).unwrap().mode() & 0o077 != 0)
        .map(|d| d.display().to_string())
        .collect();
    assert!(dirs.len() > 5, "{dirs:?}");
    assert_eq!(open, Vec::<String>::new(), "folders open to other users");
}

#[test]
fn idle_connections_past_the_file_limit_never_starve_a_request() {
    let mut p = Project::without_model();
    p.start_with_fd_limit(256);
    let socket = p.paths.socket();
    // Twice as many connections as the daemon has descriptors, each sending nothing.
    let idle: Vec<std::os::unix::net::UnixStream> = (0..512)
        .map(|_| std::os::unix::net::UnixStream::connect(&socket).unwrap())
        .collect();
    // A request still gets its answer (the daemon closed idle connections to make room).
    for _ in 0..5 {
        let mut c = ai_smartness::client::Client::connect(&socket, Duration::from_secs(10))
            .expect("connect");
        let r = c.send_raw(b"{\"status\":true}\n").expect("an answer");
        assert!(r.ok, "{r:?}");
    }
    // The oldest idle connections were the ones closed.
    let mut closed = 0;
    for mut s in idle.into_iter().take(100) {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        if matches!(std::io::Read::read(&mut s, &mut b), Ok(0)) {
            closed += 1;
        }
    }
    assert_eq!(closed, 100, "the oldest idle connections are closed first");
}

#[test]
fn oversized_capture_fields_are_refused_with_the_field_named() {
    let mut p = Project::without_model();
    p.start();
    let metadata: serde_json::Map<String, serde_json::Value> =
        (0..50_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let line = json!({"tool": "Bash", "content": TOPICS[0], "metadata": metadata}).to_string();
    let r = p.send(&line);
    assert!(!r.ok);
    let e = r.error.unwrap();
    assert_eq!(e.code, "bad_request");
    assert!(e.message.contains("`metadata`"), "{}", e.message);
    let r = p.send(
        &json!({"tool": "Bash", "content": TOPICS[0], "session_id": "s".repeat(5000)}).to_string(),
    );
    assert!(r.error.unwrap().message.contains("`session_id`"));
    p.sync();
    assert!(p.threads("all").is_empty(), "nothing stored");
}

#[test]
fn a_capture_dated_in_the_future_is_dated_now() {
    let mut p = Project::without_model();
    p.start();
    let before = chrono::Utc::now();
    let out = p.ai_stdin(
        &["capture", "--tool", "Bash", "--at", "9999-12-31T00:00:00Z"],
        TOPICS[1],
    );
    assert!(out.status.success(), "{out:?}");
    p.sync();
    let threads = p.threads("all");
    assert_eq!(threads.len(), 1);
    let last: chrono::DateTime<chrono::Utc> =
        threads[0]["last_active"].as_str().unwrap().parse().unwrap();
    assert!(
        last >= before - chrono::Duration::seconds(1)
            && last < chrono::Utc::now() + chrono::Duration::seconds(1),
        "{last}"
    );
    assert!(
        p.log().contains("is in the future: dated now instead"),
        "{}",
        p.log()
    );
}
