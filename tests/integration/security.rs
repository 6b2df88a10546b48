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
        ai_smartness_testkit::record("needs root and a system python3 to act as another user");
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
    let mut hook = Command::new(crate::harness::hook_bin("ai-inject"))
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

/// Raises this process's soft file limit to its hard one (the test opens more connections than
/// a shell's default allows).
fn raise_own_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct given, nothing else.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    lim.rlim_cur
}

#[test]
fn connections_to_the_dashboard_cannot_take_the_daemon_down() {
    use socket2::{Domain, SockAddr, Socket, Type};
    assert!(
        raise_own_fd_limit() > 1300,
        "this test opens 1,100 connections"
    );
    let mut p = Project::without_model();
    p.start_with_fd_limit(1024);
    let ui = p.ai_json(&["ui", "--no-open"]);
    let port = ui["port"].as_u64().unwrap() as u16;
    let pid_file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.paths.pid_file()).unwrap()).unwrap();
    let pid = pid_file["pid"].as_u64().unwrap() as u32;
    // Another local user's 1,100 connections, each sending half a request head and no more.
    let addr = SockAddr::from(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    let mut flood = Vec::new();
    for _ in 0..1100 {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        s.set_nonblocking(true).unwrap();
        let _ = s.connect(&addr);
        let _ = s.send(b"GET / HTTP/1.1\r\nHost: 127.0.0.1");
        flood.push(s);
    }
    // The daemon holds at most its share of them: its file table stays far from full.
    std::thread::sleep(Duration::from_millis(300));
    let held = ai_smartness_testkit::procs::open_files(pid);
    assert!(
        held < 600,
        "the daemon holds {held} descriptors under a limit of 1024"
    );
    // Hooks, captures and the CLI are answered meanwhile.
    for i in 0..20 {
        let mut c =
            ai_smartness::client::Client::connect(&p.paths.socket(), Duration::from_secs(2))
                .expect("connect while the dashboard is flooded");
        let line = json!({"tool": "Bash", "content": format!("cargo test passed on the ingest worker, run {i}")});
        let r = c
            .send_raw(format!("{line}\n").as_bytes())
            .expect("an answer");
        assert!(r.ok, "{r:?}");
    }
    let out = p.ai(&["status"]);
    assert!(out.status.success(), "{out:?}");
    p.sync();
    // Half-sent heads are not waited for: the dashboard closes them after its header timeout.
    let mut first = flood.swap_remove(0);
    first.set_nonblocking(false).unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut rest = Vec::new();
    let closed = std::io::Read::read_to_end(&mut first, &mut rest);
    assert!(
        closed.is_ok()
            || closed
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "{closed:?}"
    );
    drop(flood);
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
    assert_eq!(e.code.as_str(), "bad_request");
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

/// Every kind of secret the README lists, as it would appear in a tool's output or a prompt,
/// with the part of it that must never be found on disk.
const SECRETS: &[(&str, &str)] = &[
    ("aws key id AKIAQ3EGRV7XKZ2M4P5L", "AKIAQ3EGRV7XKZ2M4P5L"),
    (
        "aws_secret_access_key = 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",
        "wJa1rXUtnFEMIK7MDENGbPxRfiCYzq9sK3mP2QxZ",
    ),
    (
        "token ghp_R8f2kLq9ZxW4mN7vB3cT6yH1jP5sD0gAeU2i",
        "R8f2kLq9ZxW4mN7vB3cT6yH1jP5sD0gAeU2i",
    ),
    (
        "pat github_pat_11AB4CDEFG0123456789_ab12cdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP",
        "ab12cdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP",
    ),
    (
        "anthropic sk-ant-api03-Zq8wX2vB7nM4kL9pR3tY6uI1oP5aS0dF-gH2jK8lQ",
        "Zq8wX2vB7nM4kL9pR3tY6uI1oP5aS0dF",
    ),
    (
        "openai sk-proj-Tq3Wm9Xb2Vn7Kc4Lp8Rd1Fs6Gh0Jy5Ue",
        "Tq3Wm9Xb2Vn7Kc4Lp8Rd1Fs6Gh0Jy5Ue",
    ),
    (
        "legacy sk-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
        "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    ),
    (
        "slack xoxb-2048394857-4829384756-Hq7Lm2Np9Xr4Vb8Kt3Ws",
        "Hq7Lm2Np9Xr4Vb8Kt3Ws",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n-----END RSA PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
    ),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxOTk5OTk5OTk5fQ.Xq9Lm2Vb7Nc4Kp8Rt3Wy6Zs1Fd5Gh0Ju",
        "Xq9Lm2Vb7Nc4Kp8Rt3Wy6Zs1Fd5Gh0Ju",
    ),
    (
        "db postgres://app:S3cretPassw0rdQz@db.internal.example.com:5432/app",
        "S3cretPassw0rdQz",
    ),
    (
        "export STRIPE_WEBHOOK_SECRET=whsec_Lq2Mz8Xv4Nb7Kc3Pt9Rw",
        "whsec_Lq2Mz8Xv4Nb7Kc3Pt9Rw",
    ),
    (
        r#"{"type": "service_account", "project_id": "demo-proj", "private_key_id": "3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDGcpWq7Lm2Xb9\n-----END PRIVATE KEY-----\n", "client_email": "svc@demo-proj.iam.gserviceaccount.com"}"#,
        "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDGcpWq7Lm2Xb9",
    ),
    (
        "Authorization: Bearer Zk8Pq2Wm7Xn4Vb9Lc3Rt6Ys1Hd5Fg0Ja",
        "Zk8Pq2Wm7Xn4Vb9Lc3Rt6Ys1Hd5Fg0Ja",
    ),
    ("PASSWORD=Tr0ub4dorXhorse9", "Tr0ub4dorXhorse9"),
    // Credentials as real sessions write them: found by their context, not their form.
    ("export TARGET_PASS=\"Vx7#qLm2-target\"", "Vx7#qLm2-target"),
    ("DB_PWD=Dq4-db-pwd-value", "Dq4-db-pwd-value"),
    (
        "sshpass -p 'Ss9!pass-word' ssh deploy@10.0.0.5 uptime",
        "Ss9!pass-word",
    ),
    ("mysql -u root -p'My5ql-Root-Pw' shop", "My5ql-Root-Pw"),
    ("mysqldump -uroot -pMd8RootPw shop", "Md8RootPw"),
    (
        "docker login -u bot -p Dk7-login-Secret registry.example.com",
        "Dk7-login-Secret",
    ),
    (
        "curl -u admin:Cu8-basic-Pass https://api.example.com/health",
        "Cu8-basic-Pass",
    ),
    ("app migrate --password Lo9-long-option-pw", "Lo9-long-option-pw"),
    ("PGPASSWORD=Pg4-env-Secret psql -h db -U app", "Pg4-env-Secret"),
    (
        "machine api.example.com login bot password Nr6-netrc-Secret",
        "Nr6-netrc-Secret",
    ),
    ("db.internal:5432:app:app_user:Pp3-pgpass-Secret", "Pp3-pgpass-Secret"),
    ("database:\n  password: yamlsecretword", "yamlsecretword"),
    ("[client]\npassword = inisecretword", "inisecretword"),
    (
        "| Host | User | Password |\n|---|---|---|\n| db1 | admin | Md2-table-Secret |",
        "Md2-table-Secret",
    ),
    (
        "hf token hf_Qw3Er4Ty5Ui6Op7As8Df9Gh0Jk1Lz2Xc3Vb",
        "Qw3Er4Ty5Ui6Op7As8Df9Gh0Jk1Lz2Xc3Vb",
    ),
    ("token_type: DB_PASSWORD=Tt5-hidden-after", "Tt5-hidden-after"),
    (
        "<private>my bank PIN is 4417 and the vault code is 99-ZULU-QX</private>",
        "99-ZULU-QX",
    ),
];

/// All the secrets in one text, around ordinary work.
fn secret_text() -> String {
    let mut text = String::from(
        "Checked the deployment settings of the billing service before the release:\n",
    );
    for (s, _) in SECRETS {
        text.push_str(s);
        text.push('\n');
    }
    text.push_str("Everything else in the configuration looked right.\n");
    text
}

/// What must be found on no file besides [`SECRETS`]' own: the token given as a name, the
/// renamed title's password.
const NAMED_SECRETS: &[&str] = &["R8f2kLq9ZxW4mN7vB3cT6yH1jP5sD0gAeU2i", "Rn1-renamed-Secret"];

/// Every file under `dir` holding one of the needles: (file, needle).
fn files_holding_secrets(dir: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap_or_default();
            let needles = SECRETS
                .iter()
                .map(|(_, n)| *n)
                .chain(NAMED_SECRETS.iter().copied());
            for needle in needles {
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push((path.display().to_string(), needle.to_string()));
                }
            }
        }
    }
    found
}

fn run_hook_with(p: &Project, bin: &str, args: &[&str], payload: &serde_json::Value) {
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(p.root())
        .env("AI_SMARTNESS_DATA_DIR", &p.data_dir)
        .env_remove("AI_SMARTNESS_HOOK_RUNNING")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{bin}: {out:?}");
}

const KEY_VAR: &str = "AIT_SECRETS_KEY";

#[test]
fn no_secret_reaches_any_file_by_any_path() {
    use crate::fake_anthropic::{FakeAnthropic, Reply};
    let text = secret_text();
    // The memory assistant, played by a fake model: asked anything, it adds a rule and writes
    // a note that both carry secrets, then says it is done.
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let note = text.clone();
    let fake = FakeAnthropic::with_script(move |r| {
        if !r.body_text().contains("memory assistant of ai-smartness") {
            return None;
        }
        let n = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let v = if n == 0 {
            json!({
                "preText": "Noted.",
                "actionCommands": [
                    {"type": "ADD_RULE", "params": {"text": "Always deploy with the token ghp_R8f2kLq9ZxW4mN7vB3cT6yH1jP5sD0gAeU2i on the release servers"}},
                    {"type": "WRITE_NOTE", "params": {"title": "Deploy settings", "content": note.clone()}},
                ],
                "keepControl": true,
            })
        } else {
            json!({"preText": "Done."})
        };
        Some(Reply::text(v.to_string()))
    });
    let mut p = Project::new();
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.paths.config()).unwrap()).unwrap();
    config["llm"]["provider"] = json!("anthropic");
    config["llm"]["base_url"] = json!(fake.base_url());
    config["llm"]["api_key_env"] = json!(KEY_VAR);
    std::fs::write(p.paths.config(), config.to_string()).unwrap();
    p.start_with_env(&[(KEY_VAR, "sk-ant-api03-AITEST-secrets-sweep-4f2a")]);
    let root = p.root().to_path_buf();

    // 1. `ai capture`.
    let out = p.ai_stdin(&["capture", "--tool", "Bash"], &text);
    assert!(out.status.success(), "{out:?}");
    // 2. Every hook event.
    let base =
        |event: &str| json!({"session_id": "sess-secrets", "cwd": root, "hook_event_name": event});
    let mut bash = base("PostToolUse");
    bash["tool_name"] = json!("Bash");
    bash["tool_input"] = json!({"command": format!("curl -H 'Authorization: Bearer Zk8Pq2Wm7Xn4Vb9Lc3Rt6Ys1Hd5Fg0Ja' https://api.example.com && export STRIPE_WEBHOOK_SECRET=whsec_Lq2Mz8Xv4Nb7Kc3Pt9Rw")});
    bash["tool_response"] = json!({"stdout": text, "stderr": "", "interrupted": false});
    run_hook_with(&p, crate::harness::hook_bin("ai-capture"), &[], &bash);
    let mut read = base("PostToolUse");
    read["tool_name"] = json!("Read");
    read["tool_input"] = json!({"file_path": root.join(".env")});
    read["tool_response"] = json!({"type": "text", "file": {"filePath": root.join(".env"), "content": text, "numLines": 20, "startLine": 1, "totalLines": 20}});
    run_hook_with(&p, crate::harness::hook_bin("ai-capture"), &[], &read);
    let mut stop = base("Stop");
    stop["last_assistant_message"] = json!(text);
    run_hook_with(&p, crate::harness::hook_bin("ai-capture"), &[], &stop);
    let mut prompt = base("UserPromptSubmit");
    prompt["prompt"] = json!(text);
    run_hook_with(&p, crate::harness::hook_bin("ai-inject"), &[], &prompt);
    prompt["prompt"] = json!("Remember that the deploy token is ghp_R8f2kLq9ZxW4mN7vB3cT6yH1jP5sD0gAeU2i and always pass it to the release script");
    run_hook_with(&p, crate::harness::hook_bin("ai-inject"), &[], &prompt);
    let mut start = base("SessionStart");
    start["source"] = json!("startup");
    run_hook_with(
        &p,
        crate::harness::hook_bin("ai-inject"),
        &["--session-start"],
        &start,
    );
    let mut compact = base("PreCompact");
    compact["trigger"] = json!("manual");
    compact["custom_instructions"] = json!(text);
    run_hook_with(&p, crate::harness::hook_bin("ai-compact"), &[], &compact);
    // Every field that reaches a file, not only the content: a trigger, a session id, a tool's
    // name, an unknown event's, a hook's name, a metadata key (each logged or stored).
    let token = "ghp_R8f2kLq9ZxW4mN7vB3cT6yH1jP5sD0gAeU2i";
    compact["trigger"] = json!(format!("manual {token}"));
    compact["session_id"] = json!(format!("sess {token}"));
    run_hook_with(&p, crate::harness::hook_bin("ai-compact"), &[], &compact);
    let mut odd = base(&format!("Evil {token}"));
    odd["tool_name"] = json!("Bash");
    run_hook_with(&p, crate::harness::hook_bin("ai-capture"), &[], &odd);
    let mut named = base("PostToolUse");
    named["tool_name"] = json!(format!("mcp__x__{token}"));
    named["tool_response"] = json!({"stdout": "the release notes are ready for review today"});
    run_hook_with(&p, crate::harness::hook_bin("ai-capture"), &[], &named);
    p.request(json!({"tool": format!("Bash {token}"), "content": "the deploy finished cleanly on every host",
        "hook": format!("hook {token}"), "session_id": format!("s {token}"),
        "metadata": {token: "a key that is a secret", "nested": {token: 1}}}));
    // 3. `ai import`, with secrets in the metadata too.
    let import = root.join("import.jsonl");
    let line = json!({"content": text, "tool": "UserPrompt", "source": "user",
        "timestamp": "2026-11-20T10:00:00Z",
        "metadata": {"note": text, "password": "plain-Hunter2-value", "dia_id": "D1:1"}});
    std::fs::write(&import, format!("{line}\n")).unwrap();
    let out = p.ai(&["import", import.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    std::fs::remove_file(&import).unwrap();
    // 4. `ai rules add`.
    let out = p.ai(&[
        "rules",
        "add",
        "Always sign the releases with the key sk-proj-Tq3Wm9Xb2Vn7Kc4Lp8Rd1Fs6Gh0Jy5Ue of the bot",
    ]);
    assert!(out.status.success(), "{out:?}");
    // 5. The memory assistant's ADD_RULE and WRITE_NOTE, and the chat that asked for them.
    let chat = p.request(json!({"chat": {"message": format!("Keep these settings: {text}")}}));
    let session = chat["session_id"].as_str().unwrap().to_string();
    p.wait_for("the assistant's note", Duration::from_secs(40), || {
        let s = p.request(json!({"session": {"id": session}}));
        (s.to_string().contains("Done.") && s["state"] != "running").then_some(())
    });
    // A person's rename, from the CLI and from the dashboard's command alike.
    p.sync();
    let first = p.threads("all")[0]["id"].as_str().unwrap().to_string();
    let out = p.ai(&[
        "thread",
        &first,
        "--rename",
        "Deploy with DB_PASSWORD=Rn1-renamed-Secret",
    ]);
    assert!(out.status.success(), "{out:?}");
    let renamed = p.request(json!({"thread": {"id": first}}));
    assert!(
        renamed
            .to_string()
            .contains("DB_PASSWORD=[REDACTED:password]"),
        "{renamed}"
    );
    let rules = p.ai_json(&["rules"]).to_string();
    assert!(rules.contains("on the release servers"), "{rules}");
    assert!(rules.contains("of the bot"), "{rules}");
    assert!(rules.contains("release script"), "{rules}");
    p.sync();
    // The memory kept the work around the secrets (the same text from several paths is one
    // message, counted as repeated).
    let texts = p.all_message_texts();
    let with = |needle: &str| texts.iter().filter(|t| t.contains(needle)).count();
    assert!(with("billing service") >= 4, "{texts:#?}");
    assert!(with("[REDACTED") >= 4, "{texts:#?}");
    p.stop();

    let found = files_holding_secrets(&p.paths.ai_dir);
    assert!(found.is_empty(), "secrets on disk: {found:#?}");
}

fn read_config(p: &Project) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p.paths.config()).unwrap()).unwrap()
}

fn write_config(p: &Project, v: &serde_json::Value) {
    std::fs::write(p.paths.config(), serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

#[test]
fn hand_edits_of_the_config_are_kept_and_applied_live() {
    let mut p = Project::without_model();
    p.start();
    // A person edits the file while the daemon runs.
    let mut c = read_config(&p);
    c["guardcode"]["enforce_plan_mode"] = json!(false);
    c["my_own_key"] = json!({"kept": true});
    c["inject"]["budget_tokens"] = json!(333);
    c["mode"] = json!("light");
    write_config(&p, &c);
    p.wait_for("the edit to apply", Duration::from_secs(10), || {
        (p.request(json!({"mode": {}}))["quota"] == 15).then_some(())
    });
    // The product changes one key and keeps the rest of the file.
    let out = p.ai(&["mode", "heavy"]);
    assert!(out.status.success(), "{out:?}");
    let c = read_config(&p);
    assert_eq!(c["mode"], "heavy");
    assert_eq!(c["guardcode"]["enforce_plan_mode"], false);
    assert_eq!(c["my_own_key"], json!({"kept": true}));
    assert_eq!(c["inject"]["budget_tokens"], 333);
    assert_eq!(p.request(json!({"mode": {}}))["quota"], 100);
    // `ai init --mode` with the daemon running: file and daemon agree.
    let out = p.ai(&["init", "--mode", "max"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(read_config(&p)["my_own_key"], json!({"kept": true}));
    p.wait_for("init's mode to apply", Duration::from_secs(10), || {
        (p.request(json!({"mode": {}}))["quota"] == 200).then_some(())
    });
}

#[test]
fn an_invalid_edit_is_reported_and_the_last_valid_config_stays() {
    let mut p = Project::without_model();
    p.start();
    let good = std::fs::read(p.paths.config()).unwrap();
    std::fs::write(p.paths.config(), "{ \"mode\": \"heavy\",\n  oops }").unwrap();
    let health = p.wait_for("health to report it", Duration::from_secs(10), || {
        let h = p.request(json!({"health": true}));
        h["config_problems"]["config.json"].is_object().then_some(h)
    });
    let error = health["config_problems"]["config.json"]["error"].to_string();
    assert!(error.contains("line 2"), "{error}");
    let text = String::from_utf8_lossy(&p.ai(&["health"]).stdout).to_string();
    assert!(text.contains("WARN config.json is not valid"), "{text}");
    // Still in force: the config as it was (normal mode).
    assert_eq!(p.request(json!({"mode": {}}))["quota"], 50);
    // `ai mode` does not overwrite a file a person is editing.
    let out = p.ai(&["mode", "light"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 2"),
        "{out:?}"
    );
    std::fs::write(p.paths.config(), &good).unwrap();
    p.wait_for("the fix to clear it", Duration::from_secs(10), || {
        let h = p.request(json!({"health": true}));
        h["config_problems"]
            .as_object()
            .is_some_and(|m| m.is_empty())
            .then_some(())
    });
}

#[test]
fn an_invalid_config_is_reported_at_once_and_hooks_back_off() {
    let p = Project::without_model();
    std::fs::write(
        p.paths.config(),
        "{ \"mode\": \"normal\",\n  \"inject\": [ }",
    )
    .unwrap();
    let out = p.ai(&["status"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("config.json") && said.contains("line 2"),
        "{said}"
    );
    // Hooks do not start a daemon per call while its start keeps failing.
    let payload = json!({"session_id": "s", "cwd": p.root(), "hook_event_name": "UserPromptSubmit",
        "prompt": "How is the connection pool of the billing service configured in staging?"});
    for _ in 0..3 {
        run_hook_with(&p, crate::harness::hook_bin("ai-inject"), &[], &payload);
    }
    let log = std::fs::read_to_string(p.paths.hook_log("inject")).unwrap();
    assert_eq!(
        log.matches("not starting one: the daemon's last start failed")
            .count(),
        3,
        "{log}"
    );
    // Fixing the config is enough: the next call starts it again.
    std::fs::write(p.paths.config(), "{}").unwrap();
    let out = p.ai(&["status"]);
    assert!(out.status.success(), "{out:?}");
}

/// A change to the system made by a command, undone by another when dropped (a folder made
/// immutable, a small file system mounted).
struct Undone(Vec<String>);

impl Undone {
    /// Runs `apply`; `None` when it fails (the test then skips).
    fn run(apply: &[&str], undo: &[&str]) -> Option<Undone> {
        let ok = Command::new(apply[0])
            .args(&apply[1..])
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Undone(undo.iter().map(|s| s.to_string()).collect()))
    }
}

impl Drop for Undone {
    fn drop(&mut self) {
        let _ = Command::new(&self.0[0]).args(&self.0[1..]).status();
    }
}

#[test]
fn a_failed_save_is_reported_by_sync_and_health_and_recovers() {
    let mut p = Project::without_model();
    p.start();
    p.capture("Bash", TOPICS[0]);
    p.sync();
    let threads = p.paths.db().join("threads");
    let threads = threads.to_str().unwrap();
    // Writes into an immutable folder fail, even as root.
    let Some(lock) = Undone::run(&["chattr", "+i", threads], &["chattr", "-i", threads]) else {
        ai_smartness_testkit::record("chattr +i is not available here");
        return;
    };
    p.capture("Bash", TOPICS[2]);
    let out = p.ai(&["sync"]);
    assert!(!out.status.success(), "sync said saved: {out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("could not be saved"), "{said}");
    let health = String::from_utf8_lossy(&p.ai(&["health"]).stdout).to_string();
    assert!(health.contains("WARN saving the memory FAILS"), "{health}");
    drop(lock);
    // The next save covers what could not be saved.
    p.capture("Bash", TOPICS[3]);
    let out = p.ai(&["sync"]);
    assert!(out.status.success(), "{out:?}");
    let texts = p.all_message_texts();
    assert_eq!(texts.len(), 3);
    p.stop();
    p.start();
    assert_eq!(p.all_message_texts().len(), 3, "all saved");
}

#[test]
fn a_full_disk_refuses_captures_says_so_and_recovers() {
    if !is_root() {
        ai_smartness_testkit::record("needs root to mount a small file system");
        return;
    }
    let holder = tempfile::Builder::new()
        .prefix("aid")
        .tempdir_in("/tmp")
        .unwrap();
    let root = holder.path().join("d");
    std::fs::create_dir_all(&root).unwrap();
    let mount = root.to_str().unwrap();
    let Some(_disk) = Undone::run(
        &["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mount],
        &["umount", "-l", mount],
    ) else {
        ai_smartness_testkit::record("cannot mount tmpfs here");
        return;
    };
    let init = Command::new(AI)
        .arg("--project")
        .arg(&root)
        .arg("init")
        .output()
        .unwrap();
    assert!(init.status.success());
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _daemon = Killed(
        Command::new(AI)
            .arg("--project")
            .arg(&root)
            .args(["daemon", "run"])
            .env("AI_SMARTNESS_DATA_DIR", "/nonexistent")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let paths = ai_smartness::paths::ProjectPaths::new(root.clone());
    let ask = |v: serde_json::Value| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut c) =
                ai_smartness::client::Client::connect(&paths.socket(), Duration::from_secs(20))
            {
                if let Ok(r) = c.send_raw(format!("{v}\n").as_bytes()) {
                    return r;
                }
            }
            assert!(
                std::time::Instant::now() < deadline,
                "daemon did not answer"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    assert!(ask(json!({"tool": "Bash", "content": TOPICS[0]})).ok);
    // Fill the disk.
    let filler = root.join("filler");
    {
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![7u8; 64 << 10];
        while f.write_all(&block).is_ok() {}
        while f.write_all(&block[..512]).is_ok() {}
        let _ = f.sync_all();
    }
    // What still fits in pages the journal already has may be acknowledged (it is durable);
    // past that, captures are refused, never acknowledged and lost.
    let long = TOPICS[1].repeat(30);
    let refused = (0..20).find_map(|_| {
        let r = ask(json!({"tool": "Bash", "content": long}));
        (!r.ok).then_some(r)
    });
    let refused = refused.expect("every capture was acknowledged on a full disk");
    assert_eq!(refused.error.unwrap().code.as_str(), "journal");
    let health = ask(json!({"health": true})).result.unwrap();
    assert!(
        health["captures"]["refusing"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("No space left")),
        "{health:#}"
    );
    std::fs::remove_file(&filler).unwrap();
    assert!(ask(json!({"tool": "Bash", "content": TOPICS[2]})).ok);
    let health = ask(json!({"health": true})).result.unwrap();
    assert!(health["captures"]["refusing"].is_null(), "{health:#}");
    assert!(ask(json!({"sync": true})).ok);
}

#[test]
fn racing_starters_after_a_kill_never_name_the_dead_daemon() {
    let mut p = Project::without_model();
    p.start();
    let dead = ai_smartness::daemon::lifecycle::read_pid_file(&p.paths)
        .unwrap()
        .pid;
    p.kill9();
    // Several starters at once: one wins, the others must not blame the killed one.
    let starters: Vec<_> = (0..4)
        .map(|_| {
            Command::new(AI)
                .arg("--project")
                .arg(p.root())
                .args(["daemon", "run"])
                .env("AI_SMARTNESS_DATA_DIR", "/nonexistent")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Whoever wins is stopped (a starter that comes later may win next: stopped too) until
    // every starter has ended.
    let mut running = starters;
    let mut said = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !running.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "starters still running"
        );
        if let Ok(mut c) =
            ai_smartness::client::Client::connect(&p.paths.socket(), Duration::from_secs(5))
        {
            let _ = c.send_raw(b"{\"shutdown\": true}\n");
        }
        let mut still = Vec::new();
        for mut s in running {
            if s.try_wait().unwrap().is_some() {
                let mut err = String::new();
                std::io::Read::read_to_string(s.stderr.as_mut().unwrap(), &mut err).unwrap();
                said.push_str(&err);
            } else {
                still.push(s);
            }
        }
        running = still;
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        said.contains("already running"),
        "no starter lost the race: {said}"
    );
    assert!(!said.contains(&format!("pid {dead})")), "{said}");
}
