//! A temporary project with a real daemon process.

use ai_smartness::client::Client;
use ai_smartness::paths::ProjectPaths;
use ai_smartness::protocol::{parse_request, Request, Response};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const AI: &str = env!("CARGO_BIN_EXE_ai");

/// The hook binary `name`, built and up to date beside `ai`.
pub fn hook_bin(name: &str) -> &'static str {
    ai_smartness_testkit::hooks::hook_bin(env!("CARGO_BIN_EXE_ai"), name)
}

/// Runs git in `root`; fails the test, with git's words, when git fails.
pub fn git(root: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes `root` a git repository with one commit of what it holds (workflow runs need one).
pub fn commit_all(root: &Path) {
    git(root, &["init", "-q"]);
    git(root, &["config", "user.email", "t@example.com"]);
    git(root, &["config", "user.name", "T"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "init"]);
}

/// The real model's files when the test set-up fetched them; tests then run on real embeddings.
pub fn real_data_dir() -> PathBuf {
    ai_smartness::embed::assets::data_dir()
}

/// `CI` set to anything but empty, `0` or `false`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false" | "FALSE"))
}

/// Whether the real model is installed; says the test is skipped when it is not. Under CI a
/// missing model is a failure, not a skip: CI must test the real model.
pub fn real_model_installed() -> bool {
    let found = ai_smartness::embed::assets::locate(&real_data_dir()).is_ok();
    if !found {
        assert!(
            !in_ci(),
            "the model's files are missing and CI is set: CI must test the real model \
             (scripts/fetch-assets.sh fetches them)"
        );
        ai_smartness_testkit::record("model assets absent (run scripts/fetch-assets.sh)");
    }
    found
}

/// A started project whose daemon embeds with the real model, or `None` (the test skips) when
/// the model's files are absent.
pub fn started_on_real_model() -> Option<Project> {
    real_model_installed().then(|| {
        let mut p = Project::new();
        p.start();
        p
    })
}

pub struct Project {
    /// Keeps the temporary folder alive (deleted on drop).
    _dir: tempfile::TempDir,
    pub paths: ProjectPaths,
    pub data_dir: PathBuf,
    daemon: Option<Child>,
}

impl Project {
    /// A new initialised project (short path under /tmp so the socket fits in sun_path).
    pub fn new() -> Project {
        Self::with_data_dir(real_data_dir())
    }

    /// A project whose daemon will not find the model (degraded embeddings).
    pub fn without_model() -> Project {
        Self::with_data_dir(PathBuf::from("/nonexistent/ai-smartness-data"))
    }

    pub fn with_data_dir(data_dir: PathBuf) -> Project {
        Self::made(data_dir, None)
    }

    /// A project whose path is too long for its socket to live in `.ai/`: the daemon uses the
    /// fallback socket in the user's runtime folder.
    pub fn at_a_long_path() -> Project {
        Self::made(real_data_dir(), Some(&"deeply-nested-project-".repeat(5)))
    }

    fn made(data_dir: PathBuf, below: Option<&str>) -> Project {
        let dir = tempfile::Builder::new()
            .prefix("ait")
            .tempdir_in("/tmp")
            .unwrap();
        let root = match below {
            Some(sub) => {
                let root = dir.path().join(sub);
                std::fs::create_dir_all(&root).unwrap();
                root
            }
            None => dir.path().to_path_buf(),
        };
        let paths = ProjectPaths::new(root.canonicalize().unwrap());
        let p = Project {
            _dir: dir,
            paths,
            data_dir,
            daemon: None,
        };
        let out = p.ai(&["init", "--mode", "normal"]);
        assert!(
            out.status.success(),
            "init: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        p
    }

    pub fn root(&self) -> &Path {
        &self.paths.root
    }

    /// Changes `.ai/config.json`: read, changed by `f`, written back.
    pub fn edit_config(&self, f: impl FnOnce(&mut Value)) {
        let path = self.paths.config();
        let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        f(&mut config);
        std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    }

    /// Points the project's LLM at a fake Anthropic server, its key read from `key_var`.
    pub fn use_fake_model(&self, base_url: &str, key_var: &str) {
        self.edit_config(|c| {
            c["llm"]["provider"] = "anthropic".into();
            c["llm"]["base_url"] = base_url.into();
            c["llm"]["api_key_env"] = key_var.into();
        });
    }

    /// Runs the `ai` CLI in the project.
    pub fn ai(&self, args: &[&str]) -> Output {
        self.ai_stdin(args, "")
    }

    pub fn ai_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new(AI)
            .arg("--project")
            .arg(self.root())
            .args(args)
            .env("AI_SMARTNESS_DATA_DIR", &self.data_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// `ai --json ARGS`, parsed; panics with stderr on failure.
    pub fn ai_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ai(&all);
        assert!(
            out.status.success(),
            "ai {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("ai {args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout))
        })
    }

    /// Starts `ai daemon run` in the foreground as a child and waits until it answers.
    pub fn start(&mut self) {
        self.start_with_env(&[]);
    }

    /// [`Project::start`] with these variables in the daemon's environment (an API key the
    /// `llm` config names, say).
    pub fn start_with_env(&mut self, env: &[(&str, &str)]) {
        self.start_with(env, None);
    }

    /// [`Project::start`] with the daemon's file limit (soft and hard) set to `fds`, as
    /// `ulimit -n` would.
    pub fn start_with_fd_limit(&mut self, fds: u64) {
        self.start_with(&[], Some(fds));
    }

    fn start_with(&mut self, env: &[(&str, &str)], fd_limit: Option<u64>) {
        let mut cmd = Command::new(AI);
        cmd.arg("--project")
            .arg(self.root())
            .args(["daemon", "run"])
            .envs(env.iter().copied())
            .env("AI_SMARTNESS_DATA_DIR", &self.data_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(fds) = fd_limit {
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
        self.daemon = Some(cmd.spawn().unwrap());
        self.wait_ready();
    }

    /// Polls `f` until it gives a value, or panics after `within` with `what` and the daemon's
    /// log: background results are awaited, never slept for.
    pub fn wait_for<T>(&self, what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + within;
        loop {
            if let Some(v) = f() {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(mut c) = Client::connect(&self.paths.socket(), Duration::from_secs(2)) {
                if c.send_raw(b"{\"ping\":true}\n")
                    .is_ok_and(|r| r.pong == Some(true))
                {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("daemon did not answer; log:\n{}", self.log());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.paths.daemon_log()).unwrap_or_default()
    }

    /// SIGKILL, no goodbye.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// Graceful stop over the socket, waiting for the process to exit.
    pub fn stop(&mut self) {
        let _ = self.send(r#"{"shutdown": true}"#);
        if let Some(mut c) = self.daemon.take() {
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if c.try_wait().unwrap().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            c.kill().unwrap();
            panic!("daemon did not stop on shutdown");
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(&self.paths.socket(), Duration::from_secs(60)).unwrap()
    }

    /// Sends one raw line and returns the reply.
    pub fn send(&self, line: &str) -> Response {
        let mut c = self.client();
        c.send_raw(format!("{line}\n").as_bytes()).unwrap()
    }

    pub fn request(&self, v: Value) -> Value {
        let req: Request = parse_request(v.to_string().as_bytes()).unwrap();
        let r = self.client().request(&req).unwrap();
        assert!(r.ok, "{v} → {:?}", r.error);
        r.result.unwrap_or(Value::Null)
    }

    pub fn capture(&self, tool: &str, content: &str) -> Value {
        self.request(serde_json::json!({ "tool": tool, "content": content }))
    }

    /// Waits until every acknowledged capture is processed and saved.
    pub fn sync(&self) {
        self.request(serde_json::json!({ "sync": true }));
    }

    pub fn threads(&self, status: &str) -> Vec<Value> {
        let v = self.request(serde_json::json!({ "threads": { "status": status } }));
        v["threads"].as_array().cloned().unwrap_or_default()
    }

    /// Every message content of every thread, read from the daemon.
    pub fn all_message_texts(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in self.threads("all") {
            let id = t["id"].as_str().unwrap();
            let d = self.request(serde_json::json!({ "thread": { "id": id } }));
            for m in d["messages"].as_array().unwrap() {
                out.push(m["content"].as_str().unwrap().to_string());
            }
        }
        out
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // A daemon started detached by the CLI in this project.
        if let Some(info) = ai_smartness::daemon::lifecycle::read_pid_file(&self.paths) {
            if ai_smartness::daemon::lifecycle::lock_is_held(&self.paths) {
                ai_smartness::daemon::lifecycle::terminate(info.pid);
                let deadline = Instant::now() + Duration::from_secs(10);
                while ai_smartness::daemon::lifecycle::lock_is_held(&self.paths)
                    && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
}

/// Realistic, distinct pieces of work for captures.
pub const TOPICS: [&str; 4] = [
    "The PostgreSQL connection pool times out under load: max_connections is 20 and every request holds a connection during the whole HTTP call. Raising the pool size to 50 and releasing connections early fixed the timeouts in the staging database.",
    "The React dashboard renders the chart component twice because useEffect depends on an object literal; memoizing the options with useMemo stops the double render and the flicker in the sales chart.",
    "Kubernetes deployment of the billing service fails its readiness probe: the container listens on port 8080 but the probe checks 3000. Updated the helm chart values so the probe and the service port agree.",
    "The Rust parser for the TOML configuration rejects inline tables with trailing commas; switching the serde deserializer to the toml_edit crate keeps comments and accepts the files users write.",
];

/// The Claude Code version the tests drive (what `scripts/fetch-claude-code.sh` caches).
pub const CLAUDE_VERSION: &str = "2.1.328";

/// Where `scripts/fetch-claude-code.sh` caches the CLI.
pub fn cached_claude() -> PathBuf {
    let env_abs = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let cache = std::env::var_os("AI_SMARTNESS_CACHE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            env_abs("XDG_CACHE_HOME")
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
                })
                .join("ai-smartness")
        });
    cache
        .join("claude-code")
        .join(CLAUDE_VERSION)
        .join("claude")
}

/// The real Claude Code CLI (`AI_SMARTNESS_CLAUDE_BIN`, else the cached one), or `None` after
/// recording the skip. Panics under CI (CI must run the real client), or when
/// `AI_SMARTNESS_CLAUDE_BIN` names a file that is not there (a broken set-up, not an absence).
pub fn claude_or_skip() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("AI_SMARTNESS_CLAUDE_BIN").filter(|v| !v.is_empty()) {
        let bin = PathBuf::from(bin);
        assert!(
            bin.is_file(),
            "AI_SMARTNESS_CLAUDE_BIN={} does not exist",
            bin.display()
        );
        return Some(bin);
    }
    let cached = cached_claude();
    if cached.is_file() {
        return Some(cached);
    }
    assert!(
        !in_ci(),
        "the Claude Code CLI is missing and CI is set: CI must run the real client \
         (scripts/fetch-claude-code.sh fetches it; or set AI_SMARTNESS_CLAUDE_BIN)"
    );
    ai_smartness_testkit::record(&format!(
        "Claude Code CLI not found (AI_SMARTNESS_CLAUDE_BIN unset, nothing at {}); run \
         scripts/fetch-claude-code.sh",
        cached.display()
    ));
    None
}
