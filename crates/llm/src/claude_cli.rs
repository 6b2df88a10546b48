//! The `claude` CLI as a subprocess: `claude -p --output-format json`, the conversation on
//! stdin, so the user's own Claude Code login serves the daemon with no API key.
//!
//! The subprocess runs in a process group (unix) or job object (Windows) of its own, and all
//! of it is killed at the request's timeout. Tools are not offered (`--tools ""`): the CLI would
//! run its own, not ours. Whoever builds the provider adds the variables its own set-up needs
//! (the daemon: the guard its hooks read, so a call cannot capture itself).

use crate::error::classify;
use crate::{
    BoxFuture, ChatRequest, ChatResponse, ContentBlock, ErrorKind, EventSink, LlmError, Provider,
    ProviderKind, Role, StreamEvent, Usage,
};
use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// A system prompt longer than this goes on stdin instead (argv has per-argument limits).
const MAX_ARG_BYTES: usize = 100 * 1024;
/// Output kept from the subprocess (a runaway CLI must not fill the memory).
const MAX_OUTPUT: u64 = 16 * 1024 * 1024;

/// Variables set for every run, so a background call is cheap and quiet: no extended thinking,
/// no CLI-side retries (ours decide), no CLAUDE.md memory files, no updater or telemetry.
const FIXED_ENV: &[(&str, &str)] = &[
    ("MAX_THINKING_TOKENS", "0"),
    ("CLAUDE_CODE_MAX_RETRIES", "0"),
    ("CLAUDE_CODE_DISABLE_CLAUDE_MDS", "1"),
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
];

/// The CLI provider.
pub struct ClaudeCliProvider {
    path: PathBuf,
    model: String,
    /// Where the CLI runs; a neutral folder (the temp dir) by default, so no project's
    /// settings or files leak into an extraction call.
    work_dir: Option<PathBuf>,
    /// Extra variables from whoever builds the provider (the daemon's hook guard; tests:
    /// `HOME`, `ANTHROPIC_BASE_URL`); values are never printed.
    envs: Vec<(String, String)>,
    /// Variables removed from the inherited environment.
    removed: Vec<String>,
    /// Start from an empty environment (tests: nothing of the host's Claude set-up leaks in).
    clear_env: bool,
    ping_timeout: Duration,
}

impl fmt::Debug for ClaudeCliProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.envs.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ClaudeCliProvider")
            .field("path", &self.path)
            .field("model", &self.model)
            .field("work_dir", &self.work_dir)
            .field("envs", &names)
            .field("removed", &self.removed)
            .field("clear_env", &self.clear_env)
            .finish()
    }
}

impl ClaudeCliProvider {
    /// Runs the binary at `path` with `--model model` (a CLI alias like `haiku` works).
    pub fn new(path: impl Into<PathBuf>, model: impl Into<String>) -> ClaudeCliProvider {
        ClaudeCliProvider {
            path: path.into(),
            model: model.into(),
            work_dir: None,
            envs: Vec::new(),
            removed: Vec::new(),
            clear_env: false,
            ping_timeout: Duration::from_secs(30),
        }
    }

    /// Sets a variable for the subprocess (overrides the fixed ones too).
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.envs.push((name.into(), value.into()));
        self
    }

    /// Removes an inherited variable.
    pub fn without_env(mut self, name: impl Into<String>) -> Self {
        self.removed.push(name.into());
        self
    }

    /// Starts the subprocess from an empty environment: only the fixed variables and those
    /// given with [`ClaudeCliProvider::with_env`] (pass `PATH` and `HOME`).
    pub fn with_clear_env(mut self) -> Self {
        self.clear_env = true;
        self
    }

    /// Runs the CLI in `dir`.
    pub fn with_work_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.work_dir = Some(dir.into());
        self
    }

    /// Limit for [`Provider::ping`] (a real, tiny completion).
    pub fn with_ping_timeout(mut self, limit: Duration) -> Self {
        self.ping_timeout = limit;
        self
    }

    /// The command for `req` and what to write on its stdin.
    pub fn command(&self, req: &ChatRequest) -> (Command, String) {
        let model = req.model.as_deref().unwrap_or(&self.model);
        let mut system = req.system_text();
        let mut input = prompt_text(req);
        if system.len() > MAX_ARG_BYTES {
            input = format!("<instructions>\n{system}\n</instructions>\n\n{input}");
            system = String::new();
        }
        if system.is_empty() {
            // Without it the CLI sends its whole agent prompt: slow and dear.
            system = "You are a helpful assistant.".into();
        }
        let mut cmd = Command::new(&self.path);
        if self.clear_env {
            cmd.env_clear();
        }
        cmd.args(["-p", "--output-format", "json", "--no-session-persistence"])
            .args(["--tools", ""])
            .args(["--model", model])
            .args(["--system-prompt", &system]);
        for (k, v) in FIXED_ENV {
            cmd.env(k, v);
        }
        cmd.env(
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
            req.max_tokens.max(1).to_string(),
        );
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        for k in &self.removed {
            cmd.env_remove(k);
        }
        cmd.current_dir(self.work_dir.clone().unwrap_or_else(std::env::temp_dir))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        (cmd, input)
    }

    async fn run(
        &self,
        req: &ChatRequest,
        sink: Option<&EventSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        if !req.tools.is_empty() {
            return Err(LlmError::internal(
                "the claude-cli provider cannot offer tools; use an API provider",
            ));
        }
        let (cmd, input) = self.command(req);
        // Killed on every path when dropped, the timeout included.
        let mut child = ProcessTree::spawn(cmd)
            .map_err(|e| LlmError::internal(format!("cannot run {}: {e}", self.path.display())))?;
        let stdin = child.0.stdin().take();
        let stdout = child.0.stdout().take();
        let stderr = child.0.stderr().take();
        let write = async move {
            if let Some(mut s) = stdin {
                // The CLI may exit without reading (bad flag): a broken pipe is its error, not ours.
                let _ = s.write_all(input.as_bytes()).await;
                let _ = s.shutdown().await;
            }
        };
        let wait = async {
            let status = child.wait_for_cli().await;
            // Leftovers of the tree would hold our pipes open.
            child.kill();
            status
        };
        let read_out = read_capped(stdout);
        let read_err = read_capped(stderr);
        let ((), out, err, status) = tokio::join!(write, read_out, read_err, wait);
        let status = status.map_err(|e| LlmError::internal(format!("waiting for claude: {e}")))?;
        let response = parse_output(&out, req.model.as_deref().unwrap_or(&self.model));
        match response {
            Some(r) => {
                let r = r?;
                if let Some(s) = sink {
                    if !r.text.is_empty() {
                        s(StreamEvent::TextDelta(r.text.clone()));
                    }
                    s(StreamEvent::Done);
                }
                Ok(r)
            }
            None => {
                let err = err.trim();
                let out = out.trim();
                let detail = crate::truncate(if err.is_empty() { out } else { err }, 500);
                Err(LlmError::new(
                    classify(None, "", detail),
                    format!("claude CLI ({status}) printed no result: {detail}"),
                ))
            }
        }
    }
}

/// The CLI and everything it starts: a process group of its own (unix) or a job object
/// (Windows). All of it is killed when this is dropped (at the request's timeout, when the
/// caller gives up) and after the CLI exits, so nothing it left running outlives the call.
struct ProcessTree(Box<dyn ChildWrapper>);

impl ProcessTree {
    fn spawn(cmd: Command) -> io::Result<ProcessTree> {
        let mut wrapped = CommandWrap::from(cmd);
        #[cfg(unix)]
        wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
        #[cfg(windows)]
        wrapped.wrap(process_wrap::tokio::JobObject);
        // The leader dies with its handle; on Windows this also makes closing the job kill it.
        wrapped.wrap(KillOnDrop);
        wrapped.spawn().map(ProcessTree)
    }

    /// Waits for the CLI itself: the wrapper's own wait (on Windows) also waits for whatever it
    /// left running, which is killed instead.
    async fn wait_for_cli(&mut self) -> io::Result<ExitStatus> {
        self.0.inner_mut().wait().await
    }

    /// SIGKILL to the group (unix) or the job terminated (Windows); what is gone is skipped.
    fn kill(&mut self) {
        let _ = self.0.start_kill();
    }
}

impl Drop for ProcessTree {
    /// process-wrap's `KillOnDrop` kills only the leader on unix: the rest of the group goes here.
    fn drop(&mut self) {
        self.kill();
    }
}

/// The first `MAX_OUTPUT` bytes of `stream`, as text (a runaway CLI must not fill the memory).
async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> String {
    let mut bytes = Vec::new();
    if let Some(s) = stream {
        let _ = s.take(MAX_OUTPUT).read_to_end(&mut bytes).await;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Provider for ClaudeCliProvider {
    fn id(&self) -> &str {
        "claude-cli"
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::ClaudeCli
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
        on_event: Option<&'a EventSink<'a>>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            match tokio::time::timeout(req.timeout, self.run(req, on_event)).await {
                Ok(r) => r,
                Err(_) => Err(LlmError::new(
                    ErrorKind::Timeout,
                    format!("claude CLI: no answer within {:?} (killed)", req.timeout),
                )),
            }
        })
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async move {
            let req = ChatRequest {
                max_tokens: 16,
                timeout: self.ping_timeout,
                ..ChatRequest::simple("Answer with one word.", "Say pong.")
            };
            self.complete(&req, None).await.map(|_| ())
        })
    }
}

/// The conversation as one prompt: a lone user message as is, else a labelled transcript.
pub fn prompt_text(req: &ChatRequest) -> String {
    let render = |blocks: &[ContentBlock]| {
        blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.clone(),
                ContentBlock::ToolUse { name, input, .. } => format!("[tool call {name}: {input}]"),
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => format!(
                    "[tool {}: {content}]",
                    if *is_error { "error" } else { "result" }
                ),
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    if let [only] = req.messages.as_slice() {
        if only.role == Role::User {
            return render(&only.content);
        }
    }
    req.messages
        .iter()
        .map(|m| {
            let who = match m.role {
                Role::User => "User",
                Role::Assistant => "Assistant",
            };
            format!("{who}: {}", render(&m.content))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The result line of `claude -p --output-format json`, as far as it is read.
#[derive(Deserialize)]
struct CliResult {
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<String>,
    result: Option<String>,
    is_error: Option<bool>,
    api_error_status: Option<u64>,
    usage: Option<CliUsage>,
    /// Per model: the CLI may use a small one on the side.
    #[serde(rename = "modelUsage")]
    model_usage: Option<BTreeMap<String, CliModelUsage>>,
    stop_reason: Option<String>,
    total_cost_usd: Option<f64>,
}

#[derive(Default, Deserialize)]
struct CliUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CliModelUsage {
    #[serde(rename = "outputTokens")]
    output_tokens: Option<u64>,
}

/// The `--output-format json` result on stdout: `None` when there is none, else the answer or
/// the classified error it reports.
pub fn parse_output(stdout: &str, model: &str) -> Option<Result<ChatResponse, LlmError>> {
    let is_result = |r: &CliResult| r.kind.as_deref() == Some("result");
    let r: CliResult = serde_json::from_str(stdout.trim())
        .ok()
        .or_else(|| {
            // Tolerate noise before the result line.
            stdout
                .lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<CliResult>(l.trim()).ok())
                .find(is_result)
        })
        .filter(is_result)?;
    let subtype = r.subtype.as_deref().unwrap_or("");
    let text = r.result.as_deref().unwrap_or("");
    let is_error = r.is_error.unwrap_or(false) || subtype.starts_with("error");
    if is_error {
        let status = r.api_error_status.and_then(|s| u16::try_from(s).ok());
        let detail = if text.is_empty() { subtype } else { text };
        let mut e = LlmError::new(
            classify(status, "", detail),
            format!("claude CLI: {}", crate::truncate(detail, 500)),
        );
        e.status = status;
        return Some(Err(e));
    }
    let u = r.usage.unwrap_or_default();
    let usage = Usage {
        input_tokens: u.input_tokens.unwrap_or(0),
        output_tokens: u.output_tokens.unwrap_or(0),
        cache_read_tokens: u.cache_read_input_tokens.unwrap_or(0),
        cache_write_tokens: u.cache_creation_input_tokens.unwrap_or(0),
    };
    // The model that did most of the writing.
    let answered = r
        .model_usage
        .and_then(|m| {
            m.into_iter()
                .max_by_key(|(_, u)| u.output_tokens.unwrap_or(0))
                .map(|(name, _)| name)
        })
        .unwrap_or_else(|| model.to_string());
    Some(Ok(ChatResponse {
        text: text.to_string(),
        tool_calls: Vec::new(),
        stop_reason: r.stop_reason,
        model: answered,
        usage,
        cost_usd: r.total_cost_usd,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatMessage, SystemBlock};
    use std::collections::HashMap;
    use std::ffi::OsStr;

    #[test]
    fn the_command_sets_the_callers_variables_and_the_flags() {
        let p = ClaudeCliProvider::new("/opt/claude", "haiku")
            .with_env("A_CALLERS_GUARD", "1")
            .with_env("HOME", "/tmp/h")
            .with_env("ANTHROPIC_API_KEY", "sk-secret")
            .without_env("CLAUDECODE")
            .with_work_dir("/tmp");
        let req = ChatRequest {
            max_tokens: 200,
            ..ChatRequest::simple("Be terse.", "hello")
        };
        let (cmd, input) = p.command(&req);
        let std = cmd.as_std();
        assert_eq!(std.get_program(), OsStr::new("/opt/claude"));
        let args: Vec<&str> = std.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args,
            [
                "-p",
                "--output-format",
                "json",
                "--no-session-persistence",
                "--tools",
                "",
                "--model",
                "haiku",
                "--system-prompt",
                "Be terse."
            ]
        );
        let envs: HashMap<&OsStr, Option<&OsStr>> = std.get_envs().collect();
        let get = |k: &str| {
            envs.get(OsStr::new(k))
                .copied()
                .flatten()
                .and_then(OsStr::to_str)
        };
        assert_eq!(get("A_CALLERS_GUARD"), Some("1"));
        assert_eq!(get("MAX_THINKING_TOKENS"), Some("0"));
        assert_eq!(get("CLAUDE_CODE_MAX_RETRIES"), Some("0"));
        assert_eq!(get("CLAUDE_CODE_MAX_OUTPUT_TOKENS"), Some("200"));
        assert_eq!(get("HOME"), Some("/tmp/h"));
        assert_eq!(envs.get(OsStr::new("CLAUDECODE")), Some(&None), "removed");
        assert_eq!(std.get_current_dir(), Some(std::path::Path::new("/tmp")));
        assert_eq!(input, "hello");
        let dbg = format!("{p:?}");
        assert!(
            !dbg.contains("sk-secret") && dbg.contains("ANTHROPIC_API_KEY"),
            "{dbg}"
        );

        // A model per request; a huge system prompt moves to stdin.
        let big = ChatRequest {
            model: Some("sonnet".into()),
            system: vec![SystemBlock {
                text: "x".repeat(MAX_ARG_BYTES + 1),
                cache: false,
            }],
            ..ChatRequest::simple("", "q")
        };
        let (cmd, input) = p.command(&big);
        let args: Vec<&str> = cmd
            .as_std()
            .get_args()
            .map(|a| a.to_str().unwrap())
            .collect();
        assert_eq!(args[7], "sonnet");
        assert_eq!(args[9], "You are a helpful assistant.");
        assert!(input.starts_with("<instructions>\nxxx") && input.ends_with("\n\nq"));
    }

    #[test]
    fn transcripts() {
        let req = ChatRequest {
            messages: vec![
                ChatMessage::user("a"),
                ChatMessage::assistant("b"),
                ChatMessage {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: "t".into(),
                        content: "r".into(),
                        is_error: false,
                    }],
                    cache: false,
                },
            ],
            ..ChatRequest::default()
        };
        assert_eq!(
            prompt_text(&req),
            "User: a\n\nAssistant: b\n\nUser: [tool result: r]"
        );
    }

    #[test]
    fn parses_results_and_errors() {
        let ok = r#"{"type":"result","subtype":"success","is_error":false,"result":"Hello.","stop_reason":"end_turn","total_cost_usd":0.000037,"usage":{"input_tokens":12,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":5},"modelUsage":{"claude-haiku-4-5":{"inputTokens":12,"outputTokens":5}}}"#;
        let r = parse_output(ok, "haiku").unwrap().unwrap();
        assert_eq!(r.text, "Hello.");
        assert_eq!(r.model, "claude-haiku-4-5");
        assert_eq!(r.cost_usd, Some(0.000037));
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 12,
                output_tokens: 5,
                cache_read_tokens: 4,
                cache_write_tokens: 3
            }
        );
        for (status, text, kind) in [
            (
                401,
                "Failed to authenticate. API Error: 401 bad key",
                ErrorKind::AuthError,
            ),
            (
                429,
                "API Error: Request rejected (429) · slow down",
                ErrorKind::RateLimit,
            ),
            (529, "API Error: 529 Overloaded", ErrorKind::ServerError),
            (
                400,
                "API Error: 400 prompt is too long: 300000 tokens",
                ErrorKind::ContextLength,
            ),
        ] {
            let out = format!(
                r#"{{"type":"result","subtype":"success","is_error":true,"result":"{text}","api_error_status":{status}}}"#
            );
            let e = parse_output(&format!("noise\n{out}\n"), "m")
                .unwrap()
                .unwrap_err();
            assert_eq!((e.kind, e.status), (kind, Some(status)), "{text}");
        }
        let e = parse_output(
            r#"{"type":"result","subtype":"error_max_turns","is_error":false}"#,
            "m",
        )
        .unwrap()
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal);
        assert!(parse_output("not json", "m").is_none());
        assert!(parse_output(r#"{"type":"system"}"#, "m").is_none());
    }

    #[tokio::test]
    async fn tools_are_refused_and_a_missing_binary_is_internal() {
        let p = ClaudeCliProvider::new("/nonexistent/claude", "haiku");
        let mut req = ChatRequest::simple("", "hi");
        let e = p.complete(&req, None).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal);
        assert!(e.message.contains("cannot run"), "{e}");
        req.tools.push(crate::ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: serde_json::json!({}),
        });
        let e = p.complete(&req, None).await.unwrap_err();
        assert!(e.message.contains("cannot offer tools"), "{e}");
    }

    /// A stand-in CLI: `body` after a line starting a grandchild (`sleep 300`) whose pid goes
    /// to the returned file.
    #[cfg(unix)]
    fn fake_cli(dir: &std::path::Path, body: &str) -> (PathBuf, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let pidfile = dir.join("grandchild.pid");
        let script = dir.join("claude");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsleep 300 &\necho $! > {}\n{body}\n",
                pidfile.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        (script, pidfile)
    }

    /// Waits (at most 5 s) for the process in `pidfile` to be gone.
    #[cfg(unix)]
    fn assert_ends(pidfile: &std::path::Path) {
        let pid: i32 = std::fs::read_to_string(pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // SAFETY: signal 0 only checks that the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 {
            // A zombie until its parent (init) reaps it.
            if ai_smartness_testkit::procs::ended(pid as u32) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "grandchild {pid} still alive"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_stuck_process_tree_is_killed_at_the_timeout() {
        // A CLI that starts a grandchild and hangs: both must die.
        let dir = tempfile::tempdir().unwrap();
        let (script, pidfile) = fake_cli(dir.path(), "sleep 300");
        let p = ClaudeCliProvider::new(&script, "haiku");
        let req = ChatRequest {
            timeout: Duration::from_millis(700),
            ..ChatRequest::simple("", "hi")
        };
        let e = p.complete(&req, None).await.unwrap_err();
        // Killed at the timeout, not waited out: the timeout error, then the whole process
        // group gone.
        assert_eq!(e.kind, ErrorKind::Timeout);
        assert_ends(&pidfile);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn an_answer_comes_when_the_cli_exits_and_what_it_left_is_killed() {
        // The grandchild holds stdout open: only killing it after the CLI exits ends the read.
        let dir = tempfile::tempdir().unwrap();
        let (script, pidfile) = fake_cli(
            dir.path(),
            r#"cat > /dev/null
printf '{"type":"result","subtype":"success","is_error":false,"result":"guard=%s"}\n' "$A_CALLERS_GUARD""#,
        );
        let p = ClaudeCliProvider::new(&script, "haiku").with_env("A_CALLERS_GUARD", "1");
        let req = ChatRequest {
            timeout: Duration::from_secs(30),
            ..ChatRequest::simple("", "hi")
        };
        let started = std::time::Instant::now();
        let r = p.complete(&req, None).await.unwrap();
        assert_eq!(r.text, "guard=1", "the caller's variable reached the CLI");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not held by the leftover"
        );
        assert_ends(&pidfile);
    }
}
