//! What the three hook binaries share: reading Claude Code's payload, finding the project,
//! talking to the daemon, logging, and above all failing open.
//!
//! A hook runs on the critical path of every prompt and every tool call, so it must cost a
//! millisecond or two and must never get in the way: whatever goes wrong (no daemon, garbage
//! on stdin, a daemon that hangs, a panic), it exits 0 with nothing on stdout. Exit 2 would
//! block the user's action (erase the prompt, block compaction); a stray line on stdout would
//! be added to the model's context. Problems go to `.ai/<hook>.log` and bump
//! `.ai/hooks/<binary>.json`, which `ai health` reports.
//!
//! Std, serde, serde_json and the redactor only: no tokio, no ONNX Runtime, so the process
//! starts at once.

pub mod content;

use ai_smartness_proto::client::{self, Client, ClientError};
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_proto::protocol::Request;
use ai_smartness_proto::HookErrors;
use serde_json::{Map, Value};
use std::fs;
use std::io::{self, Read, Write};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A payload larger than this is garbage: Claude Code's biggest (a Read of a large file) stays
/// far below, and an unbounded read could exhaust memory.
pub const MAX_STDIN_BYTES: usize = 16 << 20;

/// A hook log over this is moved to `<log>.1` (one old file kept) before the next line.
const LOG_ROTATE_BYTES: u64 = 1 << 20;

/// Log lines are single lines of bounded length: a log is for people, not for payloads.
const MAX_LOG_MESSAGE_CHARS: usize = 400;

/// One hook binary.
pub struct Hook {
    /// The binary's name (`ai-capture`): the `hook` field of captures, the error counter file.
    pub name: &'static str,
    /// The log's stem: `capture` writes `.ai/capture.log`.
    pub log: &'static str,
}

/// What a hook run has to work with once the payload is parsed and the project found.
pub struct Ctx {
    pub hook: &'static Hook,
    pub paths: ProjectPaths,
    pub payload: Map<String, Value>,
    /// Command-line arguments after the program name (`--session-start`).
    pub args: Vec<String>,
}

/// How a run that did not fail ended.
pub enum Outcome {
    /// Did its job. `note` is logged at INFO; `stdout`, when some, is printed (one line).
    Done {
        note: String,
        stdout: Option<String>,
    },
    /// Nothing to do (an empty answer, an image): logged at INFO, not an error.
    Skipped(String),
}

/// Why a run failed. Every failure is logged and counted; the process still exits 0.
#[derive(Debug)]
pub enum Failure {
    /// Nothing listened on the socket: a daemon was started in the background (WARN).
    DaemonDown(String),
    /// Anything else (ERROR).
    Error(String),
}

impl Failure {
    pub fn error(message: impl Into<String>) -> Self {
        Failure::Error(message.into())
    }
}

/// Runs a hook: the whole life of the process. Always returns success.
pub fn run(hook: &'static Hook, body: fn(&Ctx) -> Result<Outcome, Failure>) -> ExitCode {
    if std::env::var_os(ai_smartness_proto::HOOK_GUARD_ENV)
        .is_some_and(|v| !v.is_empty() && v != "0")
    {
        return ExitCode::SUCCESS;
    }
    // A panic message on stderr is useless to Claude Code; the panic is logged below instead.
    std::panic::set_hook(Box::new(|_| {}));
    // Last resort: a panic outside the body (logging itself, say) still ends in exit 0.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| run_inner(hook, body)));
    ExitCode::SUCCESS
}

fn run_inner(hook: &'static Hook, body: fn(&Ctx) -> Result<Outcome, Failure>) {
    let payload = read_stdin().and_then(|bytes| parse_payload(&bytes));
    let cwd = payload
        .as_ref()
        .ok()
        .and_then(|p| p.get("cwd"))
        .and_then(Value::as_str)
        .map(PathBuf::from);
    // No `.ai/` anywhere: this project does not use the memory. Silence is the right answer.
    let Some(paths) = find_project(cwd.as_deref()) else {
        return;
    };
    let payload = match payload {
        Ok(p) => p,
        Err(e) => {
            report(hook, &paths, &Failure::Error(e));
            return;
        }
    };
    let ctx = Ctx {
        hook,
        paths,
        payload,
        args: std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    };
    let result = match std::panic::catch_unwind(AssertUnwindSafe(|| body(&ctx))) {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Failure::Error(format!("panicked: {what}")))
        }
    };
    match result {
        Ok(Outcome::Done { note, stdout }) => {
            if let Some(text) = stdout {
                if let Err(e) = print_line(&text) {
                    report(hook, &ctx.paths, &Failure::error(format!("stdout: {e}")));
                    return;
                }
            }
            log(&ctx.paths, hook, "INFO", &note);
        }
        Ok(Outcome::Skipped(why)) => log(&ctx.paths, hook, "INFO", &format!("skipped: {why}")),
        Err(f) => report(hook, &ctx.paths, &f),
    }
}

/// Reads all of stdin, refusing more than [`MAX_STDIN_BYTES`].
fn read_stdin() -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    io::stdin()
        .lock()
        .take(MAX_STDIN_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if buf.len() > MAX_STDIN_BYTES {
        return Err(format!(
            "payload over {} MiB on stdin: ignored",
            MAX_STDIN_BYTES >> 20
        ));
    }
    Ok(buf)
}

fn parse_payload(bytes: &[u8]) -> Result<Map<String, Value>, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("empty payload on stdin".into());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("payload on stdin is not a JSON object".into()),
        Err(e) => Err(format!("payload on stdin is not JSON: {e}")),
    }
}

/// The project: the nearest `.ai/` at or above the payload's `cwd`, else `$CLAUDE_PROJECT_DIR`,
/// else the process's current folder (Claude Code runs hooks there).
fn find_project(cwd: Option<&Path>) -> Option<ProjectPaths> {
    let env_dir = std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    let current = std::env::current_dir().ok();
    [cwd.map(Path::to_path_buf), env_dir, current]
        .into_iter()
        .flatten()
        .filter(|d| d.is_absolute())
        .find_map(|d| ProjectPaths::discover(&d))
}

fn print_line(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

impl Ctx {
    /// A string field of the payload, when present and not empty.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.payload
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    pub fn event(&self) -> Option<&str> {
        self.str_field("hook_event_name")
    }

    pub fn session_id(&self) -> Option<String> {
        self.str_field("session_id").map(str::to_string)
    }

    /// Sends one request and returns the reply's `result` (`null` when it has none), all
    /// within `budget`.
    pub fn call(&self, request: &Request, budget: Duration) -> Result<Value, Failure> {
        let mut line = serde_json::to_vec(request)
            .map_err(|e| Failure::error(format!("cannot encode the request: {e}")))?;
        line.push(b'\n');
        self.call_line(&line, budget)
    }

    /// Sends an encoded request line (ending in `\n`) and returns the reply's `result`. The
    /// whole exchange (connecting, sending, the reply) fits in `budget`, even when the daemon
    /// cannot accept: the hook is on the user's critical path.
    pub fn call_line(&self, line: &[u8], budget: Duration) -> Result<Value, Failure> {
        let socket = self.paths.socket();
        let deadline = Instant::now() + budget;
        let out_of_time = |io: &io::Error| {
            matches!(
                io.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            )
        };
        let mut client = match Client::connect_by(&socket, deadline) {
            Ok(c) => c,
            Err(ClientError::NotRunning(_)) => {
                return Err(Failure::DaemonDown(start_daemon(&self.paths)));
            }
            Err(ClientError::Io(io)) if out_of_time(&io) => {
                return Err(Failure::error(format!(
                    "the daemon did not accept the connection within {} ms",
                    budget.as_millis()
                )))
            }
            Err(e) => return Err(Failure::error(format!("cannot connect: {e}"))),
        };
        let reply = client.send_raw(line).map_err(|e| match e {
            ClientError::Io(io) if out_of_time(&io) => Failure::error(format!(
                "the daemon did not answer within {} ms",
                budget.as_millis()
            )),
            other => Failure::error(other.to_string()),
        })?;
        if !reply.ok {
            let (code, message) = reply
                .error
                .map(|e| (e.code, e.message))
                .unwrap_or_else(|| ("unknown".into(), "no error body".into()));
            return Err(Failure::error(format!("daemon refused: {code}: {message}")));
        }
        Ok(reply.result.unwrap_or(Value::Null))
    }
}

/// Starts the daemon in the background without waiting for it, and says what happened. Not
/// when one is already starting, nor while a failed start backs off.
fn start_daemon(paths: &ProjectPaths) -> String {
    if let Some(why) = client::why_not_start(paths) {
        return format!("daemon not answering, not starting one: {why}");
    }
    let ai = ai_binary();
    match client::spawn_daemon_detached(&ai, paths) {
        Ok(()) => format!(
            "daemon not running: started `{} daemon start` in the background",
            ai.display()
        ),
        Err(e) => format!(
            "daemon not running, and `{} daemon start` failed: {e}",
            ai.display()
        ),
    }
}

/// `ai` next to this binary (installed together), else `ai` on PATH.
fn ai_binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("ai")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("ai"))
}

/// Logs a failure and counts it.
fn report(hook: &Hook, paths: &ProjectPaths, failure: &Failure) {
    let (level, message) = match failure {
        Failure::DaemonDown(m) => ("WARN", m),
        Failure::Error(m) => ("ERROR", m),
    };
    log(paths, hook, level, message);
    count_error(paths, hook, message);
}

/// Appends `[YYYY-MM-DD HH:MM:SS] LEVEL: message` to `.ai/<hook>.log`. Best effort: a log that
/// cannot be written must not turn into a failed hook.
pub fn log(paths: &ProjectPaths, hook: &Hook, level: &str, message: &str) {
    let line = format!(
        "[{}] {level}: {}\n",
        format_utc(SystemTime::now(), ' '),
        safe_line(message)
    );
    let _ = ai_smartness_proto::logfile::append_line(
        &paths.hook_log(hook.log),
        &line,
        LOG_ROTATE_BYTES,
        1,
    );
}

/// `.ai/hooks/<binary>.json` = `{"errors": N, "last_error": ..., "last_error_at": RFC 3339}`.
/// Read, bump, write to a temporary file and rename: readers never see a torn file. Two hooks
/// failing at the same instant may lose one increment; that is acceptable for a health figure.
fn count_error(paths: &ProjectPaths, hook: &Hook, message: &str) {
    let dir = paths.ai_dir.join("hooks");
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    // Private like the rest of `.ai/` (on Windows, the folder's access list is inherited).
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    if builder.create(&dir).is_err() {
        return;
    }
    let file = dir.join(format!("{}.json", hook.name));
    let before: HookErrors = fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let record = HookErrors {
        errors: before.errors + 1,
        last_error: Some(safe_line(message)),
        last_error_at: Some(format_utc(SystemTime::now(), 'T') + "Z"),
    };
    let tmp = dir.join(format!(".{}.json.{}.tmp", hook.name, std::process::id()));
    let written = serde_json::to_vec_pretty(&record)
        .map_err(io::Error::other)
        .and_then(|bytes| fs::write(&tmp, bytes))
        .and_then(|()| fs::rename(&tmp, &file));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// A message as it may be written: secrets redacted (a tool's name, an event's, an error
/// quoting a payload all come from outside), on one line of bounded length.
fn safe_line(message: &str) -> String {
    one_line(&ai_smartness_redact::redact(message).text)
}

/// A message on one line of bounded length.
fn one_line(message: &str) -> String {
    let flat: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_LOG_MESSAGE_CHARS + 1)
        .collect();
    if flat.chars().count() > MAX_LOG_MESSAGE_CHARS {
        let cut: String = flat.chars().take(MAX_LOG_MESSAGE_CHARS).collect();
        cut + "…"
    } else {
        flat
    }
}

/// `YYYY-MM-DD<sep>HH:MM:SS` in UTC, from the system clock alone (no date crate in hooks).
pub fn format_utc(t: SystemTime, sep: char) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}{sep}{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `text` cut to at most `max_chars` characters, on a character boundary.
pub fn cap_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(format_utc(t, ' '), "2023-11-14 22:13:20");
        assert_eq!(format_utc(t, 'T'), "2023-11-14T22:13:20");
    }

    #[test]
    fn caps_on_char_boundaries() {
        assert_eq!(cap_chars("héllo", 2), "hé");
        assert_eq!(cap_chars("hé", 9), "hé");
        assert_eq!(one_line("a\nb\tc"), "a b c");
        assert!(one_line(&"x".repeat(1000)).ends_with('…'));
    }
}
