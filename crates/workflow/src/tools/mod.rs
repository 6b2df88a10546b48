//! The tools of a workflow run.
//!
//! Every tool returns the uniform [`ToolResult`]:
//! `{"success", "data", "error": {"code", "message", "recoverable"}, "meta": {"duration_ms",
//! "command", "sandbox"}}`. `data` is `null` on failure, except for [`ErrorCode::Timeout`] and
//! [`ErrorCode::CommandFailed`] from a command that ran, which keep the (partial) output there.
//!
//! Tools: `read_file`, `list_dir`, `search_files`, `search_directory`, `git_status`, `git_diff`,
//! `run_tests`, `run_lint`, `write_file`, `run_command` (see [`Toolbox::specs`] for parameters).
//!
//! Rules that hold for every tool:
//! - **Paths** are relative to the workspace (or absolute inside it). They are resolved like
//!   `realpath(3)`: every existing component is checked, symlinks are followed and `..` is applied
//!   to the real parent; a missing tail is kept as written. The result must lie inside the real
//!   workspace, otherwise `E_PATH_FORBIDDEN`: a `../` escape, an absolute `/etc/passwd` and a
//!   symlink pointing outside are all refused the same way. The tool then works on the resolved
//!   path, never on the raw one, so the check and the use cannot disagree (a run is sequential;
//!   nothing else is expected to swap directories for symlinks while a tool runs).
//! - **Commands** run without a shell (except the configured `test_command` / `lint_command`,
//!   which are trusted configuration), in the workspace, with stdin closed, in their own process
//!   group. The whole group is killed at `command_timeout` (`E_TIMEOUT`) and also once the
//!   command exits, so a leftover background process cannot hold the pipes open. stdout and
//!   stderr are read concurrently (no pipe deadlock) and cut to `max_output_bytes`,
//!   keeping the tail, where errors and test summaries are.
//! - **Test and lint runs**: `success` means the command *ran*; `data.passed` says whether it
//!   exited 0. A failing test suite is therefore `success: true, data.passed: false`: the tool
//!   worked, the code did not. The same holds for `run_command` (its `returncode` says the rest).
//!   `git_status` and `git_diff` are different: git exiting non-zero means the tool could not do
//!   its job, so it is `E_COMMAND_FAILED` with git's message.
//! - Recoverable errors (`E_FILE_NOT_FOUND`, `E_DIR_NOT_FOUND`, `E_PATH_NOT_FOUND`) are the
//!   model's mistakes about where things are; [`Toolbox::call_with_plan_b`] runs the
//!   automatic plan B for the first two.

use ai_smartness_records::tool::{ErrorCode, ToolError, ToolMeta, ToolResult};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The names of all tools, in the order [`Toolbox::specs`] lists them.
mod commands;
mod files;
mod git;
mod paths;
mod result;

use commands::*;
use paths::*;
use result::{done, err, io_error, Done, Fail, Outcome};

pub const TOOL_NAMES: [&str; 10] = [
    "read_file",
    "list_dir",
    "search_files",
    "search_directory",
    "git_status",
    "git_diff",
    "run_tests",
    "run_lint",
    "write_file",
    "run_command",
];

/// The allowlisted bases of `search_directory` (the workspace is always added).
pub const DEFAULT_SEARCH_BASES: [&str; 5] = ["/home", "/workspace", "/tmp", "/var/www", "/opt"];
/// `read_file` reads this much when `max_bytes` is not given.
const DEFAULT_READ_BYTES: u64 = 100_000;
/// Upper bound of `max_bytes`: a file is meant for a prompt, not for bulk transfer.
const MAX_READ_BYTES: u64 = 1_000_000;
/// `list_dir` entries returned at most.
const MAX_LIST_ENTRIES: usize = 1_000;
/// `search_files` matches returned at most (and by default).
const MAX_FILE_MATCHES: usize = 50;
/// `search_directory` depth limit and match limit (seed).
const MAX_DIR_DEPTH: u64 = 3;
const MAX_DIR_MATCHES: usize = 5;
/// Directory entries a search looks at before giving up: a search under `/home` must stay cheap.
const MAX_VISITED: usize = 200_000;
/// Directories no search descends into: VCS internals, build output, dependencies.
const SKIPPED_DIRS: [&str; 3] = [".git", "target", "node_modules"];
/// Symlinks followed while resolving one path before giving up (Linux uses 40 too).
const MAX_SYMLINKS: usize = 40;

/// What the tools may do, and where.
#[derive(Debug, Clone)]
pub struct ToolConfig {
    /// The workspace, absolute; every path parameter is relative to it (or absolute inside it).
    pub workspace: PathBuf,
    /// Only reported in `meta.sandbox`: the caller points `workspace` at the sandbox copy.
    pub sandbox: bool,
    /// Whether `write_file` may write.
    pub write_enabled: bool,
    /// Program names `run_command` may start, matched exactly (`"cargo"`, not `"/usr/bin/cargo"`).
    pub allowed_commands: Vec<String>,
    /// Shell command line of `run_tests` (trusted configuration, run with `sh -c`).
    pub test_command: Option<String>,
    /// Shell command line of `run_lint`.
    pub lint_command: Option<String>,
    /// Allowlisted bases of `search_directory`; the workspace is always allowed too.
    pub search_bases: Vec<PathBuf>,
    /// A command still running after this is killed (its whole process group).
    pub command_timeout: Duration,
    /// stdout and stderr kept per command; longer output keeps its tail behind a marker.
    pub max_output_bytes: usize,
}

impl ToolConfig {
    /// A read-only configuration for `workspace`: no writing, no commands, no test or lint
    /// command, the allowlisted search bases, a 120 s timeout and 20 000 bytes of output.
    pub fn new(workspace: impl Into<PathBuf>) -> ToolConfig {
        ToolConfig {
            workspace: workspace.into(),
            sandbox: false,
            write_enabled: false,
            allowed_commands: Vec::new(),
            test_command: None,
            lint_command: None,
            search_bases: DEFAULT_SEARCH_BASES.iter().map(PathBuf::from).collect(),
            command_timeout: Duration::from_secs(120),
            max_output_bytes: 20_000,
        }
    }
}

/// One tool as shown to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDoc {
    /// The tool's name, as passed to [`Toolbox::call`].
    pub name: &'static str,
    /// One line saying what it does.
    pub description: &'static str,
    /// JSON schema of its parameters (an object schema, `additionalProperties: false`).
    pub params: Value,
}

/// The tools, bound to one configuration.
#[derive(Debug, Clone)]
pub struct Toolbox {
    config: ToolConfig,
    /// The workspace's real path: the prefix every resolved path must have.
    root: PathBuf,
    /// Real paths of the allowed `search_directory` bases, the workspace included.
    search_roots: Vec<PathBuf>,
}

// Parameters of each tool. `deny_unknown_fields`: a misspelt key is an error the model sees,
// not an option silently ignored.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileParams {
    path: String,
    max_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirParams {
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchFilesParams {
    pattern: String,
    path: Option<String>,
    max_results: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchDirectoryParams {
    name: String,
    base: Option<String>,
    max_depth: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GitDiffParams {
    path: Option<String>,
    staged: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteFileParams {
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunCommandParams {
    command: String,
    args: Option<Vec<String>>,
}

/// Parses a tool's parameters; `null` counts as `{}` (models often send it for "no params").
fn parse<T: DeserializeOwned>(tool: &str, params: &Value) -> Result<T, Fail> {
    let value = match params {
        Value::Null => Value::Object(Map::new()),
        v => v.clone(),
    };
    serde_json::from_value(value).map_err(|e| {
        err(
            ErrorCode::InvalidParams,
            format!("{tool}: invalid parameters: {e}"),
        )
        .into()
    })
}

impl Toolbox {
    /// Binds the tools to `config`. A relative workspace is taken from the current directory.
    pub fn new(config: ToolConfig) -> Toolbox {
        let root = real_path(&absolute(&config.workspace)).unwrap_or_else(|_| {
            // Only a symlink loop gets here; every path will then be refused, which is safe.
            absolute(&config.workspace)
        });
        let mut search_roots: Vec<PathBuf> = config
            .search_bases
            .iter()
            .filter(|b| b.is_absolute())
            .filter_map(|b| real_path(b).ok())
            .collect();
        search_roots.push(root.clone());
        Toolbox {
            config,
            root,
            search_roots,
        }
    }

    /// The configuration the tools run with.
    pub fn config(&self) -> &ToolConfig {
        &self.config
    }

    /// Name, description and parameter schema of each tool available in this configuration, for
    /// the model's prompt. Tools that could only fail are left out: `write_file` when writing is
    /// disabled, `run_tests` / `run_lint` without a configured command, `run_command` with an
    /// empty allowlist. [`Toolbox::call`] still answers them (with the matching error).
    pub fn specs(&self) -> Vec<ToolDoc> {
        let path = json!({"type": "string", "description": "relative to the workspace"});
        let object = |props: Value, required: &[&str]| {
            json!({
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": false,
            })
        };
        let mut docs = vec![
            ToolDoc {
                name: "read_file",
                description: "Read a text file of the workspace (data: path, content, size, truncated).",
                params: object(
                    json!({"path": path, "max_bytes": {"type": "integer", "minimum": 1, "maximum": MAX_READ_BYTES}}),
                    &["path"],
                ),
            },
            ToolDoc {
                name: "list_dir",
                description: "List a directory of the workspace (entries: name, kind file/dir/symlink, size).",
                params: object(json!({"path": path}), &[]),
            },
            ToolDoc {
                name: "search_files",
                description: "Find files whose NAME contains a pattern (case-insensitive, recursive, at most 50).",
                params: object(
                    json!({
                        "pattern": {"type": "string"},
                        "path": path,
                        "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_FILE_MATCHES},
                    }),
                    &["pattern"],
                ),
            },
            ToolDoc {
                name: "search_directory",
                description: "Find directories by name (exact or partial) under an allowlisted base, depth <= 3, at most 5.",
                params: object(
                    json!({
                        "name": {"type": "string"},
                        "base": {"type": "string", "description": "absolute; defaults to the workspace"},
                        "max_depth": {"type": "integer", "minimum": 1, "maximum": MAX_DIR_DEPTH},
                    }),
                    &["name"],
                ),
            },
            ToolDoc {
                name: "git_status",
                description: "Show the workspace's git status (short format, with the branch).",
                params: object(json!({}), &[]),
            },
            ToolDoc {
                name: "git_diff",
                description: "Show uncommitted changes (or staged ones), optionally for one path.",
                params: object(
                    json!({"path": path, "staged": {"type": "boolean"}}),
                    &[],
                ),
            },
        ];
        if self.config.test_command.is_some() {
            docs.push(ToolDoc {
                name: "run_tests",
                description: "Run the project's tests (data: returncode, stdout, stderr, passed).",
                params: object(json!({}), &[]),
            });
        }
        if self.config.lint_command.is_some() {
            docs.push(ToolDoc {
                name: "run_lint",
                description: "Run the project's linter (data: returncode, stdout, stderr, passed).",
                params: object(json!({}), &[]),
            });
        }
        if self.config.write_enabled {
            docs.push(ToolDoc {
                name: "write_file",
                description:
                    "Create or replace a file of the workspace with the given content (atomic).",
                params: object(
                    json!({"path": path, "content": {"type": "string"}}),
                    &["path", "content"],
                ),
            });
        }
        if !self.config.allowed_commands.is_empty() {
            docs.push(ToolDoc {
                name: "run_command",
                description: "Run an allowed program with arguments in the workspace (no shell).",
                params: object(
                    json!({
                        "command": {"type": "string", "enum": self.config.allowed_commands},
                        "args": {"type": "array", "items": {"type": "string"}},
                    }),
                    &["command"],
                ),
            });
        }
        docs
    }

    /// Runs one tool. Blocking (files, subprocesses): call it from `spawn_blocking`.
    ///
    /// Unknown names give `E_UNKNOWN_TOOL`; missing, mistyped or unknown parameters give
    /// `E_INVALID_PARAMS` (`null` params count as `{}`). Never panics: a bug in a tool comes
    /// back as `E_IO`.
    pub fn call(&self, name: &str, params: &Value) -> ToolResult {
        let start = Instant::now();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| self.dispatch(name, params)))
            .unwrap_or_else(|_| {
                Err(err(
                    ErrorCode::Io,
                    format!("{name}: internal error (the tool panicked)"),
                )
                .into())
            });
        let meta = |command| ToolMeta {
            duration_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            command,
            sandbox: self.config.sandbox,
        };
        match outcome {
            Ok(d) => ToolResult::ok(d.data, meta(d.command)),
            Err(f) => ToolResult::failure(f.error, f.data, meta(f.command)),
        }
    }

    /// [`Toolbox::call`], then plan B on a recoverable error: `E_FILE_NOT_FOUND` runs
    /// `search_files` for the file's name, `E_DIR_NOT_FOUND` runs `search_directory` (from the
    /// workspace) for the name of the first missing directory of the path. Returns the first
    /// result and, when plan B ran, its tool name, params and result; that result's
    /// `data.suggestion` is the best path found (exact names first, then the shallowest), or
    /// `null`.
    pub fn call_with_plan_b(
        &self,
        name: &str,
        params: &Value,
    ) -> (ToolResult, Option<(String, Value, ToolResult)>) {
        let first = self.call(name, params);
        let plan = match first.error_code() {
            Some(ErrorCode::FileNotFound) => self
                .missing_file_name(params)
                .map(|n| ("search_files", one_param("pattern", n))),
            Some(ErrorCode::DirNotFound) => self
                .missing_dir_name(name, params)
                .map(|n| ("search_directory", one_param("name", n))),
            _ => None,
        };
        match plan {
            Some((tool, p)) => {
                let result = self.call(tool, &p);
                (first, Some((tool.to_string(), p, result)))
            }
            None => (first, None),
        }
    }

    fn dispatch(&self, name: &str, params: &Value) -> Outcome {
        match name {
            "read_file" => self.read_file(parse(name, params)?),
            "list_dir" => self.list_dir(parse(name, params)?),
            "search_files" => self.search_files(parse(name, params)?),
            "search_directory" => self.search_directory(parse(name, params)?),
            "git_status" => {
                parse::<NoParams>(name, params)?;
                self.git("status", &["status", "--short", "--branch"])
            }
            "git_diff" => self.git_diff(parse(name, params)?),
            "run_tests" => {
                parse::<NoParams>(name, params)?;
                self.run_configured(self.config.test_command.as_deref(), "test_command")
            }
            "run_lint" => {
                parse::<NoParams>(name, params)?;
                self.run_configured(self.config.lint_command.as_deref(), "lint_command")
            }
            "write_file" => {
                // Checked first: with writing disabled, the parameters do not matter.
                if !self.config.write_enabled {
                    return Err(err(
                        ErrorCode::WriteDisabled,
                        "writing is disabled for this run (write_enabled is false)",
                    )
                    .into());
                }
                self.write_file(parse(name, params)?)
            }
            "run_command" => self.run_command(parse(name, params)?),
            _ => Err(err(
                ErrorCode::UnknownTool,
                format!("unknown tool `{name}`; tools: {}", TOOL_NAMES.join(", ")),
            )
            .into()),
        }
    }
}

// Symbolic links and Unix modes throughout: Unix only.
/// A plan B call's params: one string.
fn one_param(key: &str, value: String) -> Value {
    Value::Object(Map::from_iter([(key.to_string(), Value::String(value))]))
}

#[cfg(all(test, unix))]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use tempfile::TempDir;

    /// A workspace with a few files, and a toolbox on it (writing enabled, `echo` allowed).
    fn setup() -> (TempDir, Toolbox) {
        let dir = TempDir::new().unwrap();
        let ws = dir.path();
        fs::create_dir_all(ws.join("src")).unwrap();
        fs::create_dir_all(ws.join("conf")).unwrap();
        fs::create_dir_all(ws.join("services/api/backend")).unwrap();
        fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::write(ws.join("conf/Settings.toml"), "a = 1\n").unwrap();
        fs::write(ws.join("services/api/backend/app.py"), "print(1)\n").unwrap();
        let tb = toolbox(ws, |_| {});
        (dir, tb)
    }

    fn toolbox(ws: &Path, edit: impl FnOnce(&mut ToolConfig)) -> Toolbox {
        let mut config = ToolConfig::new(ws);
        config.write_enabled = true;
        config.allowed_commands = vec!["echo".into()];
        config.search_bases = vec![];
        config.command_timeout = Duration::from_secs(20);
        edit(&mut config);
        Toolbox::new(config)
    }

    fn code(r: &ToolResult) -> Option<&'static str> {
        r.error.as_ref().map(|e| e.code.as_str())
    }

    /// The error code as serialised in the result's JSON (the exact string the seed shows).
    fn json_code(r: &ToolResult) -> String {
        serde_json::to_value(r).unwrap()["error"]["code"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Runs git in `dir` away from the machine's git config; its stdout.
    pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Makes `dir` a repository with everything in it committed.
    pub(crate) fn git_repo(dir: &Path) {
        git(dir, &["init", "-q", "-b", "main"]);
        git(dir, &["config", "user.name", "Test"]);
        git(dir, &["config", "user.email", "test@example.com"]);
        git(dir, &["config", "commit.gpgsign", "false"]);
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "init"]);
    }

    #[test]
    fn tool_result_json_has_the_seed_shape() {
        let (_d, tb) = setup();
        let ok =
            serde_json::to_value(tb.call("read_file", &json!({"path": "src/main.rs"}))).unwrap();
        let keys = |v: &Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(keys(&ok), ["data", "error", "meta", "success"]);
        assert_eq!(ok["success"], json!(true));
        assert_eq!(ok["error"], Value::Null);
        assert_eq!(keys(&ok["meta"]), ["command", "duration_ms", "sandbox"]);
        assert_eq!(ok["meta"]["command"], Value::Null);
        assert_eq!(ok["meta"]["sandbox"], json!(false));
        assert!(ok["meta"]["duration_ms"].is_u64());

        let bad = tb.call("read_file", &json!({"path": "src/nope.rs"}));
        let v = serde_json::to_value(&bad).unwrap();
        assert_eq!(v["success"], json!(false));
        assert_eq!(v["data"], Value::Null);
        assert_eq!(keys(&v["error"]), ["code", "message", "recoverable"]);
        assert_eq!(v["error"]["code"], json!("E_FILE_NOT_FOUND"));
        assert_eq!(v["error"]["recoverable"], json!(true));
        // Round trip.
        assert_eq!(serde_json::from_value::<ToolResult>(v).unwrap(), bad);

        let run = serde_json::to_value(
            tb.call("run_command", &json!({"command": "echo", "args": ["hi"]})),
        )
        .unwrap();
        assert_eq!(run["meta"]["command"], json!("echo hi"));
        let sandboxed = toolbox(tb.config().workspace.as_path(), |c| c.sandbox = true);
        assert!(sandboxed.call("list_dir", &json!({})).meta.sandbox);
    }

    #[test]
    fn read_file_reads_and_truncates_on_a_char_boundary() {
        let (d, tb) = setup();
        let r = tb.call("read_file", &json!({"path": "src/main.rs"}));
        assert!(r.success, "{r:?}");
        let data = r.data.unwrap();
        assert_eq!(data["content"], json!("fn main() {}\n"));
        assert_eq!(data["path"], json!("src/main.rs"));
        assert_eq!(data["truncated"], json!(false));

        fs::write(d.path().join("accent.txt"), "aé b").unwrap(); // é is 2 bytes
        let r = tb.call("read_file", &json!({"path": "accent.txt", "max_bytes": 2}));
        let data = r.data.unwrap();
        assert_eq!(data["content"], json!("a"));
        assert_eq!(data["truncated"], json!(true));
        assert_eq!(data["size"], json!(5));

        // Absolute paths inside the workspace are fine.
        let abs = d.path().join("src/main.rs");
        assert!(
            tb.call("read_file", &json!({"path": abs.to_str().unwrap()}))
                .success
        );
        // A directory is the wrong tool; a FIFO is refused rather than blocking the call.
        let r = tb.call("read_file", &json!({"path": "src"}));
        assert_eq!(code(&r), Some("E_INVALID_PARAMS"));
        let fifo = std::ffi::CString::new(d.path().join("fifo").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let r = tb.call("read_file", &json!({"path": "fifo"}));
        assert_eq!(code(&r), Some("E_INVALID_PARAMS"));
    }

    #[test]
    fn missing_files_and_directories_are_recoverable() {
        let (_d, tb) = setup();
        let r = tb.call("read_file", &json!({"path": "src/lib.rs"}));
        assert_eq!(json_code(&r), "E_FILE_NOT_FOUND");
        assert!(r.error.as_ref().unwrap().recoverable);
        assert!(r.error.as_ref().unwrap().message.contains("src/lib.rs"));

        let r = tb.call("read_file", &json!({"path": "nope/lib.rs"}));
        assert_eq!(json_code(&r), "E_DIR_NOT_FOUND");
        assert!(r.error.as_ref().unwrap().recoverable);

        let r = tb.call("list_dir", &json!({"path": "nope"}));
        assert_eq!(json_code(&r), "E_DIR_NOT_FOUND");
        let r = tb.call("search_files", &json!({"pattern": "x", "path": "nope"}));
        assert_eq!(code(&r), Some("E_DIR_NOT_FOUND"));
    }

    #[test]
    fn list_dir_shows_kinds_and_sizes() {
        let (d, tb) = setup();
        symlink("src/main.rs", d.path().join("link")).unwrap();
        let r = tb.call("list_dir", &Value::Null);
        assert!(r.success, "{r:?}");
        let data = r.data.unwrap();
        assert_eq!(data["path"], json!("."));
        let entries = data["entries"].as_array().unwrap();
        let names: Vec<&str> = entries
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["conf", "link", "services", "src"]);
        assert_eq!(entries[0]["kind"], json!("dir"));
        assert_eq!(entries[1]["kind"], json!("symlink"));
        let r = tb.call("list_dir", &json!({"path": "src"})).data.unwrap();
        assert_eq!(
            r["entries"][0],
            json!({"name": "main.rs", "kind": "file", "size": 13})
        );
        // A file is the wrong tool.
        let r = tb.call("list_dir", &json!({"path": "src/main.rs"}));
        assert_eq!(code(&r), Some("E_INVALID_PARAMS"));
    }

    #[test]
    fn escapes_are_forbidden() {
        let (d, tb) = setup();
        let ws = d.path();
        let outside = TempDir::new().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        symlink(outside.path(), ws.join("out_dir")).unwrap();
        symlink(outside.path().join("secret"), ws.join("out_file")).unwrap();
        // Dangling, pointing outside: writing through it would create a file outside.
        symlink(outside.path().join("new"), ws.join("dangling")).unwrap();
        // `..` after a symlink goes to the link target's parent, as the kernel does.
        symlink(outside.path(), ws.join("src/up")).unwrap();

        let cases = [
            ("read_file", json!({"path": "../etc/passwd"})),
            ("read_file", json!({"path": "src/../../x"})),
            ("read_file", json!({"path": "/etc/passwd"})),
            ("read_file", json!({"path": "out_file"})),
            ("read_file", json!({"path": "out_dir/secret"})),
            ("read_file", json!({"path": "src/up/../x"})),
            ("list_dir", json!({"path": "out_dir"})),
            ("list_dir", json!({"path": "/"})),
            (
                "search_files",
                json!({"pattern": "secret", "path": "out_dir"}),
            ),
            ("write_file", json!({"path": "dangling", "content": "x"})),
            ("write_file", json!({"path": "out_dir/new", "content": "x"})),
            ("write_file", json!({"path": "../evil", "content": "x"})),
            ("git_diff", json!({"path": "/etc/passwd"})),
        ];
        for (tool, params) in cases {
            let r = tb.call(tool, &params);
            assert_eq!(json_code(&r), "E_PATH_FORBIDDEN", "{tool} {params}: {r:?}");
            assert!(!r.error.unwrap().recoverable);
        }
        assert!(!outside.path().join("new").exists());
        assert!(!ws.parent().unwrap().join("evil").exists());
        // search_files does not follow the link out either.
        let r = tb
            .call("search_files", &json!({"pattern": "secret"}))
            .data
            .unwrap();
        assert_eq!(r["count"], json!(0));
        // A link that stays inside is fine, and `x/..` inside too.
        symlink("src", ws.join("inside")).unwrap();
        assert!(
            tb.call("read_file", &json!({"path": "inside/main.rs"}))
                .success
        );
        assert!(
            tb.call("read_file", &json!({"path": "conf/../src/main.rs"}))
                .success
        );
    }

    #[test]
    fn symlink_loop_is_an_io_error() {
        let (d, tb) = setup();
        symlink("b", d.path().join("a")).unwrap();
        symlink("a", d.path().join("b")).unwrap();
        let r = tb.call("read_file", &json!({"path": "a"}));
        assert_eq!(json_code(&r), "E_IO");
    }

    #[test]
    fn bad_params_and_unknown_tools() {
        let (_d, tb) = setup();
        for (tool, params) in [
            ("read_file", json!({})),
            ("read_file", json!({"path": 3})),
            ("read_file", json!({"path": "a", "extra": 1})),
            ("read_file", json!(["a"])),
            ("read_file", json!({"path": "a\u{0}b"})),
            ("list_dir", json!({"path": null, "recursive": true})),
            ("git_status", json!({"x": 1})),
            ("run_tests", json!({"target": "backend"})),
            ("run_command", json!({"command": "echo", "args": "hi"})),
            ("search_files", json!({"pattern": " "})),
            ("search_directory", json!({"name": "a/b"})),
        ] {
            let r = tb.call(tool, &params);
            assert_eq!(json_code(&r), "E_INVALID_PARAMS", "{tool} {params}: {r:?}");
        }
        let r = tb.call("rm_rf", &json!({}));
        assert_eq!(json_code(&r), "E_UNKNOWN_TOOL");
        assert!(r.error.unwrap().message.contains("read_file"));
        // `null` params mean "none".
        assert!(tb.call("list_dir", &Value::Null).success);
    }

    #[test]
    fn search_files_leaves_out_what_the_workspace_ignores() {
        let (d, tb) = setup();
        let ws = d.path();
        fs::create_dir_all(ws.join("generated")).unwrap();
        fs::write(ws.join(".gitignore"), "generated/\n*.log\n").unwrap();
        fs::write(ws.join("generated/report.txt"), "").unwrap();
        fs::write(ws.join("build-report.log"), "").unwrap();
        fs::write(ws.join(".report.toml"), "").unwrap();
        fs::write(ws.join("src/report.rs"), "").unwrap();
        let r = tb.call("search_files", &json!({"pattern": "report"}));
        let data = r.data.unwrap();
        let mut paths: Vec<&str> = data["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        paths.sort();
        // Ignored by .gitignore (no .git needed): gone; hidden files are searched.
        assert_eq!(paths, [".report.toml", "src/report.rs"]);
    }

    #[test]
    fn search_files_ranks_and_skips_build_dirs() {
        let (d, tb) = setup();
        let ws = d.path();
        for dir in ["target/debug", ".git", "node_modules/x", "deep/a/b/c"] {
            fs::create_dir_all(ws.join(dir)).unwrap();
        }
        fs::write(ws.join("target/debug/settings.toml"), "").unwrap();
        fs::write(ws.join(".git/settings.toml"), "").unwrap();
        fs::write(ws.join("node_modules/x/settings.toml"), "").unwrap();
        fs::write(ws.join("deep/a/b/c/settings.toml.bak"), "").unwrap();
        fs::write(ws.join("old_settings.toml"), "").unwrap();
        let r = tb.call("search_files", &json!({"pattern": "SETTINGS.toml"}));
        let data = r.data.unwrap();
        let paths: Vec<&str> = data["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        // Exact name first, then the shallowest.
        assert_eq!(
            paths,
            [
                "conf/Settings.toml",
                "old_settings.toml",
                "deep/a/b/c/settings.toml.bak"
            ]
        );
        assert_eq!(data["suggestion"], json!("conf/Settings.toml"));

        for i in 0..60 {
            fs::write(ws.join(format!("src/f{i}.rs")), "").unwrap();
        }
        let data = tb
            .call(
                "search_files",
                &json!({"pattern": ".rs", "max_results": 500}),
            )
            .data
            .unwrap();
        assert_eq!(data["count"], json!(50));
        assert_eq!(data["truncated"], json!(true));
        let data = tb
            .call(
                "search_files",
                &json!({"pattern": ".rs", "path": "src", "max_results": 3}),
            )
            .data
            .unwrap();
        assert_eq!(data["count"], json!(3));
    }

    #[test]
    fn search_directory_follows_the_seed() {
        let (d, tb) = setup();
        let ws = d.path().canonicalize().unwrap();
        fs::create_dir_all(ws.join("a/b/c/backend")).unwrap(); // depth 4: too deep
        for i in 0..7 {
            fs::create_dir_all(ws.join(format!("x/backend_{i}"))).unwrap();
        }
        let r = tb.call("search_directory", &json!({"name": "backend"}));
        assert!(r.success, "{r:?}");
        let data = r.data.unwrap();
        let mut keys: Vec<&String> = data.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "base",
                "count",
                "matches",
                "max_depth",
                "query",
                "suggestion"
            ]
        );
        assert_eq!(data["count"], json!(5));
        assert_eq!(data["max_depth"], json!(3));
        assert_eq!(data["base"], json!(ws.display().to_string()));
        let best = ws.join("services/api/backend").display().to_string();
        assert_eq!(data["suggestion"], json!(best));
        assert_eq!(
            data["matches"][0],
            json!({"path": best, "name": "backend", "depth": 3})
        );
        assert!(!data.to_string().contains("a/b/c/backend"));

        // Depth is capped at 3 and can be lowered.
        let data = tb
            .call(
                "search_directory",
                &json!({"name": "backend", "max_depth": 9}),
            )
            .data
            .unwrap();
        assert_eq!(data["max_depth"], json!(3));
        let data = tb
            .call(
                "search_directory",
                &json!({"name": "backend", "max_depth": 1}),
            )
            .data
            .unwrap();
        assert_eq!(data["count"], json!(0));
        assert_eq!(data["suggestion"], Value::Null);

        // Bases: outside the allowlist is forbidden, a missing allowed one is not found.
        let r = tb.call("search_directory", &json!({"name": "x", "base": "/etc"}));
        assert_eq!(json_code(&r), "E_PATH_FORBIDDEN");
        let r = tb.call(
            "search_directory",
            &json!({"name": "x", "base": ws.join("nope").to_str().unwrap()}),
        );
        assert_eq!(json_code(&r), "E_PATH_NOT_FOUND");
        assert!(r.error.unwrap().recoverable);
        let other = TempDir::new().unwrap();
        fs::create_dir_all(other.path().join("p/backend")).unwrap();
        let base = other.path().to_str().unwrap();
        assert_eq!(
            code(&tb.call(
                "search_directory",
                &json!({"name": "backend", "base": base})
            )),
            Some("E_PATH_FORBIDDEN")
        );
        let allowed = toolbox(&ws, |c| c.search_bases = vec![other.path().to_path_buf()]);
        let data = allowed
            .call(
                "search_directory",
                &json!({"name": "backend", "base": base}),
            )
            .data
            .unwrap();
        assert_eq!(data["count"], json!(1));
        assert_eq!(data["matches"][0]["depth"], json!(2));
    }

    #[test]
    fn plan_b_finds_a_misplaced_file() {
        let (_d, tb) = setup();
        // The folder exists, the file is elsewhere.
        let params = json!({"path": "src/Settings.toml"});
        let (first, plan) = tb.call_with_plan_b("read_file", &params);
        assert_eq!(code(&first), Some("E_FILE_NOT_FOUND"));
        let (tool, p, result) = plan.expect("plan B runs");
        assert_eq!(tool, "search_files");
        assert_eq!(p, json!({"pattern": "Settings.toml"}));
        assert!(result.success);
        let suggestion = result.data.unwrap()["suggestion"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(suggestion, "conf/Settings.toml");
        assert!(tb.call("read_file", &json!({"path": suggestion})).success);
        // Success and non-recoverable errors run no plan B.
        assert!(tb
            .call_with_plan_b("read_file", &json!({"path": "src/main.rs"}))
            .1
            .is_none());
        assert!(tb
            .call_with_plan_b("read_file", &json!({"path": "/etc/passwd"}))
            .1
            .is_none());
    }

    #[test]
    fn plan_b_finds_a_misplaced_directory() {
        let (d, tb) = setup();
        let expected = d
            .path()
            .canonicalize()
            .unwrap()
            .join("services/api/backend");
        for (tool, params) in [
            ("list_dir", json!({"path": "backend"})),
            ("read_file", json!({"path": "backend/app.py"})),
            ("list_dir", json!({"path": "backend/sub/dir"})),
        ] {
            let (first, plan) = tb.call_with_plan_b(tool, &params);
            assert_eq!(code(&first), Some("E_DIR_NOT_FOUND"), "{tool} {params}");
            let (name, p, result) = plan.expect("plan B runs");
            assert_eq!(name, "search_directory");
            assert_eq!(p, json!({"name": "backend"}));
            let data = result.data.unwrap();
            assert_eq!(data["suggestion"], json!(expected.display().to_string()));
        }
    }

    #[test]
    fn write_file_is_refused_when_disabled_and_atomic_when_enabled() {
        let (d, tb) = setup();
        let ro = toolbox(d.path(), |c| c.write_enabled = false);
        let r = ro.call("write_file", &json!({"path": "x.txt", "content": "x"}));
        assert_eq!(json_code(&r), "E_WRITE_DISABLED");
        // Even with bad params: the refusal is what matters.
        assert_eq!(
            code(&ro.call("write_file", &json!({}))),
            Some("E_WRITE_DISABLED")
        );
        assert!(!d.path().join("x.txt").exists());
        assert!(!ro.specs().iter().any(|s| s.name == "write_file"));
        assert!(tb.specs().iter().any(|s| s.name == "write_file"));

        let r = tb.call(
            "write_file",
            &json!({"path": "new/deep/x.txt", "content": "héllo"}),
        );
        assert!(r.success, "{r:?}");
        assert_eq!(
            r.data.unwrap(),
            json!({"path": "new/deep/x.txt", "bytes": 6, "created": true})
        );
        assert_eq!(
            fs::read_to_string(d.path().join("new/deep/x.txt")).unwrap(),
            "héllo"
        );

        // Replacing keeps the mode and leaves no temporary file.
        let script = d.path().join("run.sh");
        fs::write(&script, "old").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        let r = tb.call("write_file", &json!({"path": "run.sh", "content": "new"}));
        assert_eq!(r.data.unwrap()["created"], json!(false));
        assert_eq!(fs::read_to_string(&script).unwrap(), "new");
        assert_eq!(
            fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o755
        );
        let names: Vec<String> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains("tmp")), "{names:?}");

        assert_eq!(
            code(&tb.call("write_file", &json!({"path": "src", "content": ""}))),
            Some("E_INVALID_PARAMS")
        );
        // A file where a folder should be.
        let r = tb.call(
            "write_file",
            &json!({"path": "src/main.rs/x", "content": ""}),
        );
        assert_eq!(code(&r), Some("E_IO"));
    }

    #[test]
    fn git_tools_show_changes() {
        let (d, tb) = setup();
        git_repo(d.path());
        let r = tb.call("git_status", &json!({}));
        assert!(r.success, "{r:?}");
        assert_eq!(
            r.meta.command.as_deref(),
            Some("git status --short --branch")
        );
        assert!(r.data.unwrap()["stdout"]
            .as_str()
            .unwrap()
            .starts_with("## main"));

        fs::write(d.path().join("src/main.rs"), "fn main() { changed() }\n").unwrap();
        fs::write(d.path().join("conf/Settings.toml"), "a = 2\n").unwrap();
        let status = tb.call("git_status", &Value::Null).data.unwrap();
        assert!(
            status["stdout"]
                .as_str()
                .unwrap()
                .contains(" M src/main.rs"),
            "{status}"
        );

        let diff = tb.call("git_diff", &json!({})).data.unwrap();
        let text = diff["stdout"].as_str().unwrap();
        assert!(text.contains("+fn main() { changed() }"), "{text}");
        assert!(text.contains("a = 2"));
        let diff = tb.call("git_diff", &json!({"path": "src/main.rs"}));
        assert_eq!(
            diff.meta.command.as_deref(),
            Some("git diff --no-color --no-ext-diff -- src/main.rs")
        );
        let text = diff.data.unwrap()["stdout"].as_str().unwrap().to_string();
        assert!(text.contains("changed()") && !text.contains("a = 2"));

        let staged = tb.call("git_diff", &json!({"staged": true})).data.unwrap();
        assert_eq!(staged["stdout"], json!(""));
        git(d.path(), &["add", "src/main.rs"]);
        let staged = tb.call("git_diff", &json!({"staged": true})).data.unwrap();
        assert!(staged["stdout"].as_str().unwrap().contains("changed()"));

        // A deleted file has a diff; a path that never existed is not found.
        fs::remove_file(d.path().join("conf/Settings.toml")).unwrap();
        assert!(
            tb.call("git_diff", &json!({"path": "conf/Settings.toml"}))
                .success
        );
        let r = tb.call("git_diff", &json!({"path": "nope.rs"}));
        assert_eq!(json_code(&r), "E_PATH_NOT_FOUND");
    }

    #[test]
    fn git_outside_a_repository_fails_with_gits_message() {
        let (_d, tb) = setup();
        let r = tb.call("git_status", &json!({}));
        assert_eq!(json_code(&r), "E_COMMAND_FAILED");
        assert!(!r.error.as_ref().unwrap().recoverable);
        assert!(r.error.unwrap().message.contains("not a git repository"));
    }

    #[test]
    fn run_tests_reports_failure_as_data() {
        let (d, _) = setup();
        let none = toolbox(d.path(), |_| {});
        let r = none.call("run_tests", &json!({}));
        assert_eq!(json_code(&r), "E_CMD_NOT_ALLOWED");
        assert!(r.error.unwrap().message.contains("test_command"));
        assert!(none
            .call("run_lint", &json!({}))
            .error
            .unwrap()
            .message
            .contains("lint_command"));
        assert!(!none.specs().iter().any(|s| s.name == "run_tests"));

        let cmd = "echo out; echo err >&2; pwd; exit 1";
        let tb = toolbox(d.path(), |c| {
            c.test_command = Some(cmd.into());
            c.lint_command = Some("true".into());
        });
        let r = tb.call("run_tests", &json!({}));
        assert!(r.success, "{r:?}");
        assert_eq!(r.meta.command.as_deref(), Some(cmd));
        let data = r.data.unwrap();
        assert_eq!(data["passed"], json!(false));
        assert_eq!(data["returncode"], json!(1));
        let stdout = data["stdout"].as_str().unwrap();
        assert!(stdout.starts_with("out\n"));
        // It ran in the workspace.
        assert!(
            stdout.contains(d.path().canonicalize().unwrap().to_str().unwrap())
                || stdout.contains(d.path().to_str().unwrap())
        );
        assert_eq!(data["stderr"], json!("err\n"));
        let lint = tb.call("run_lint", &json!({})).data.unwrap();
        assert_eq!(lint["passed"], json!(true));
        assert_eq!(lint["returncode"], json!(0));
    }

    #[test]
    fn a_command_past_the_timeout_is_killed_fast() {
        let (d, _) = setup();
        let tb = toolbox(d.path(), |c| {
            c.test_command = Some("echo started; sleep 5".into());
            c.command_timeout = Duration::from_millis(300);
        });
        let start = Instant::now();
        let r = tb.call("run_tests", &json!({}));
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(json_code(&r), "E_TIMEOUT");
        assert!(!r.error.as_ref().unwrap().recoverable);
        assert!(r.meta.duration_ms >= 300);
        // The partial output is kept.
        let data = r.data.unwrap();
        assert_eq!(data["stdout"], json!("started\n"));
        assert_eq!(data["returncode"], Value::Null);
    }

    #[test]
    fn a_background_leftover_does_not_hold_the_call() {
        let (d, _) = setup();
        let tb = toolbox(d.path(), |c| {
            c.test_command = Some("sleep 5 & echo done".into())
        });
        let start = Instant::now();
        let r = tb.call("run_tests", &json!({}));
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(r.data.unwrap()["stdout"], json!("done\n"));
    }

    #[test]
    fn long_output_keeps_its_tail() {
        let (d, _) = setup();
        let tb = toolbox(d.path(), |c| {
            c.test_command = Some("seq 1 100000".into());
            c.max_output_bytes = 1000;
        });
        let data = tb.call("run_tests", &json!({})).data.unwrap();
        let out = data["stdout"].as_str().unwrap();
        assert!(out.starts_with("[... "), "{}", &out[..50]);
        assert!(out.ends_with("99999\n100000\n"));
        assert!(out.len() < 1100);
        let total: usize = (1..=100_000).map(|i: u32| i.to_string().len() + 1).sum();
        assert!(out.contains(&format!("{} bytes cut, last 1000 kept", total - 1000)));
    }

    #[test]
    fn run_command_obeys_the_allowlist_without_a_shell() {
        let (d, tb) = setup();
        let r = tb.call(
            "run_command",
            &json!({"command": "rm", "args": ["-rf", "."]}),
        );
        assert_eq!(json_code(&r), "E_CMD_NOT_ALLOWED");
        assert!(d.path().join("src/main.rs").exists());
        let r = tb.call("run_command", &json!({"command": "echo hi"}));
        assert!(r.error.unwrap().message.contains("`args`"));
        let r = tb.call("run_command", &json!({"command": "/bin/echo"}));
        assert_eq!(code(&r), Some("E_CMD_NOT_ALLOWED"));

        // No shell: `$HOME` and `;` are plain text.
        let r = tb.call(
            "run_command",
            &json!({"command": "echo", "args": ["$HOME; ls", "x"]}),
        );
        assert!(r.success, "{r:?}");
        assert_eq!(r.meta.command.as_deref(), Some("echo '$HOME; ls' x"));
        let data = r.data.unwrap();
        assert_eq!(data["stdout"], json!("$HOME; ls x\n"));
        assert_eq!(data["returncode"], json!(0));
        assert!(data.get("passed").is_none());

        let spec = tb
            .specs()
            .into_iter()
            .find(|s| s.name == "run_command")
            .unwrap();
        assert_eq!(
            spec.params["properties"]["command"]["enum"],
            json!(["echo"])
        );
    }

    #[test]
    fn run_command_start_failures() {
        let (d, _) = setup();
        // Not executable: refused even to root (execve needs an x bit).
        let script = d.path().join("noexec.sh");
        fs::write(&script, "#!/bin/sh\necho no\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o644)).unwrap();
        let script = script.to_str().unwrap().to_string();
        let tb = toolbox(d.path(), |c| {
            c.allowed_commands = vec![script.clone(), "definitely-not-a-program-xyz".into()]
        });
        let r = tb.call("run_command", &json!({"command": script}));
        assert_eq!(json_code(&r), "E_PERMISSION", "{r:?}");
        assert!(!r.error.unwrap().recoverable);
        let r = tb.call(
            "run_command",
            &json!({"command": "definitely-not-a-program-xyz"}),
        );
        assert_eq!(json_code(&r), "E_COMMAND_FAILED");
        assert!(r.error.unwrap().message.contains("not found"));
    }

    #[test]
    fn unreadable_file_is_a_permission_error() {
        assert_eq!(
            io_error(
                &io::Error::from(io::ErrorKind::PermissionDenied),
                "f",
                ErrorCode::FileNotFound
            )
            .code,
            ErrorCode::Permission
        );
        // Root reads anything: the real check only means something for other users.
        if unsafe { libc::geteuid() } == 0 {
            return;
        }
        let (d, tb) = setup();
        let f = d.path().join("locked");
        fs::write(&f, "x").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o000)).unwrap();
        let r = tb.call("read_file", &json!({"path": "locked"}));
        assert_eq!(json_code(&r), "E_PERMISSION");
    }

    #[test]
    fn specs_cover_the_available_tools() {
        let (d, _) = setup();
        let full = toolbox(d.path(), |c| {
            c.test_command = Some("true".into());
            c.lint_command = Some("true".into());
        });
        let names: Vec<&str> = full.specs().iter().map(|s| s.name).collect();
        assert_eq!(names, TOOL_NAMES);
        for spec in full.specs() {
            assert_eq!(spec.params["type"], json!("object"));
            assert_eq!(spec.params["additionalProperties"], json!(false));
            assert!(!spec.description.is_empty());
        }
        let minimal = toolbox(d.path(), |c| {
            c.write_enabled = false;
            c.allowed_commands.clear();
        });
        let names: Vec<&str> = minimal.specs().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_dir",
                "search_files",
                "search_directory",
                "git_status",
                "git_diff"
            ]
        );
    }

    #[test]
    fn real_path_applies_dotdot_to_the_real_parent() {
        let d = TempDir::new().unwrap();
        let base = d.path().canonicalize().unwrap();
        fs::create_dir_all(base.join("a/b")).unwrap();
        symlink(base.join("a/b"), base.join("l")).unwrap();
        assert_eq!(
            real_path(&base.join("l/../x/y")).unwrap(),
            base.join("a/x/y")
        );
        assert_eq!(
            real_path(&base.join("missing/../a/./b")).unwrap(),
            base.join("a/b")
        );
        assert_eq!(real_path(Path::new("/../..")).unwrap(), PathBuf::from("/"));
    }
}
