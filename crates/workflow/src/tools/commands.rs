//! Commands: `run_tests`, `run_lint` (configured, through the shell) and `run_command`
//! (allowed programs, no shell), each in its own process group, killed at the timeout.

use super::*;

impl Toolbox {
    pub(super) fn run_configured(&self, command: Option<&str>, key: &str) -> Outcome {
        let Some(line) = command.map(str::trim).filter(|c| !c.is_empty()) else {
            return Err(err(
                ErrorCode::CmdNotAllowed,
                format!("no command configured for this tool: set `{key}` in the workflow configuration"),
            )
            .into());
        };
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(line);
        self.run_reporting(cmd, line.to_string(), true)
    }

    pub(super) fn run_command(&self, p: RunCommandParams) -> Outcome {
        if !self.config.allowed_commands.contains(&p.command) {
            let hint = if p.command.contains(char::is_whitespace) {
                " (give the program alone in `command` and its arguments in `args`)"
            } else {
                ""
            };
            return Err(err(
                ErrorCode::CmdNotAllowed,
                format!(
                    "`{}` is not an allowed command{hint}; allowed: {}",
                    p.command,
                    if self.config.allowed_commands.is_empty() {
                        "none".to_string()
                    } else {
                        self.config.allowed_commands.join(", ")
                    }
                ),
            )
            .into());
        }
        let args = p.args.unwrap_or_default();
        if args.iter().any(|a| a.contains('\0')) {
            return Err(err(ErrorCode::InvalidParams, "an argument cannot contain NUL").into());
        }
        let line =
            quote_line(std::iter::once(p.command.as_str()).chain(args.iter().map(String::as_str)));
        let mut cmd = Command::new(&p.command);
        cmd.args(&args);
        self.run_reporting(cmd, line, false)
    }

    /// Runs a command whose exit code is data (tests, lint, run_command): `success` = it ran.
    pub(super) fn run_reporting(&self, cmd: Command, line: String, with_passed: bool) -> Outcome {
        match self.run_process(cmd, &line) {
            Ok(out) => Ok(Done {
                data: out.to_json(&line, with_passed),
                command: Some(line),
            }),
            Err(f) => Err(f),
        }
    }

    /// Runs `cmd` in the workspace, in its own process group (killed with the group at the
    /// timeout and when it is done), and collects its output; see the module doc. A timeout
    /// fails with the partial output as data.
    pub(super) fn run_process(&self, mut cmd: Command, line: &str) -> Result<CmdOutput, Fail> {
        cmd.current_dir(&self.config.workspace)
            // Never wait for a password, and never let git find a repository above the
            // workspace (its status would leak the outside into the run).
            .env("GIT_TERMINAL_PROMPT", "0");
        if let Some(parent) = self.root.parent() {
            cmd.env("GIT_CEILING_DIRECTORIES", parent);
        }
        let program = cmd.get_program().to_string_lossy().into_owned();
        let start = Instant::now();
        let finished = ai_smartness_process::run_blocking(
            tokio::process::Command::from(cmd),
            None,
            self.config.command_timeout,
            self.config.max_output_bytes,
        )
        .map_err(|e| Fail {
            error: match e.kind() {
                io::ErrorKind::PermissionDenied => err(
                    ErrorCode::Permission,
                    format!("cannot start `{program}`: permission denied"),
                ),
                io::ErrorKind::NotFound => err(
                    ErrorCode::CommandFailed,
                    format!("cannot start `{program}`: not found (is it installed and on PATH?)"),
                ),
                _ => err(
                    ErrorCode::CommandFailed,
                    format!("cannot start `{program}`: {e}"),
                ),
            },
            data: None,
            command: Some(line.to_string()),
        })?;
        let out = CmdOutput {
            returncode: finished.returncode(),
            stdout: finished.stdout,
            stderr: finished.stderr,
        };
        if finished.timed_out {
            let data = out.result(line, false).timed_out().value();
            return Err(Fail {
                error: err(
                    ErrorCode::Timeout,
                    format!(
                        "`{line}` did not finish within {} ms (command_timeout): killed after {} ms",
                        self.config.command_timeout.as_millis(),
                        start.elapsed().as_millis()
                    ),
                ),
                data: Some(data),
                command: Some(line.to_string()),
            });
        }
        Ok(out)
    }
}

/// A finished command.
pub(super) struct CmdOutput {
    /// The exit code, or 128 + the signal that killed it (the shell's convention).
    pub(super) returncode: i32,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

impl CmdOutput {
    /// What the model reads of it; `passed` for the tools whose verdict is the exit code.
    pub(super) fn result<'a>(&'a self, line: &'a str, with_passed: bool) -> CommandResult<'a> {
        CommandResult {
            command: line,
            returncode: Some(self.returncode),
            stdout: &self.stdout,
            stderr: &self.stderr,
            passed: with_passed.then_some(self.returncode == 0),
        }
    }

    pub(super) fn to_json(&self, line: &str, with_passed: bool) -> Value {
        self.result(line, with_passed).value()
    }
}

/// A command's result as the model reads it.
#[derive(serde::Serialize)]
pub(super) struct CommandResult<'a> {
    command: &'a str,
    /// `null` when it was killed at the timeout.
    returncode: Option<i32>,
    stdout: &'a str,
    stderr: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    passed: Option<bool>,
}

impl CommandResult<'_> {
    fn timed_out(self) -> Self {
        CommandResult {
            returncode: None,
            ..self
        }
    }

    fn value(&self) -> Value {
        // Strings, numbers and booleans only: encoding cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Shell-quotes words that need it, for the displayed command line.
pub(super) fn quote_line<'a>(words: impl Iterator<Item = &'a str>) -> String {
    words
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c));
            if plain {
                w.to_string()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
