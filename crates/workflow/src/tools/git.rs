//! `git_status` and `git_diff`: git without a pager, colours or external diff drivers.

use super::*;

impl Toolbox {
    pub(super) fn git(&self, what: &str, args: &[&str]) -> Outcome {
        let (out, line) = self.git_output(what, args)?;
        Ok(Done {
            data: out.to_json(&line, false),
            command: Some(line),
        })
    }

    /// Runs git; a non-zero exit is a failure carrying the output. Returns the output and the
    /// command line shown.
    fn git_output(&self, what: &str, args: &[&str]) -> Result<(CmdOutput, String), Fail> {
        let mut cmd = Command::new("git");
        // No pager, no colours, no external diff drivers: plain text for the model.
        cmd.args([
            "--no-pager",
            "-c",
            "color.ui=false",
            "-c",
            "core.quotePath=false",
        ])
        .args(args);
        let line = format!("git {}", quote_line(args.iter().copied()));
        let out = self.run_process(cmd, &line)?;
        if out.returncode != 0 {
            let detail = if out.stderr.trim().is_empty() {
                out.stdout.trim()
            } else {
                out.stderr.trim()
            };
            return Err(Fail {
                error: err(
                    ErrorCode::CommandFailed,
                    format!("git {what} failed (exit {}): {detail}", out.returncode),
                ),
                data: Some(out.to_json(&line, false)),
                command: Some(line),
            });
        }
        Ok((out, line))
    }

    pub(super) fn git_diff(&self, p: GitDiffParams) -> Outcome {
        let mut args = vec!["diff", "--no-color", "--no-ext-diff"];
        if p.staged.unwrap_or(false) {
            args.push("--cached");
        }
        let target = match p.path.as_deref() {
            Some(raw) => Some(self.resolve(raw)?),
            None => None,
        };
        let rel = target.as_ref().map(|t| self.rel(t));
        if let Some(rel) = &rel {
            // `--`: a path is never taken for an option or a revision.
            args.extend(["--", rel.as_str()]);
        }
        let (diff, line) = self.git_output("diff", &args)?;
        // A deleted file has no path on disk but a diff; a path with neither was mistyped.
        if let (Some(target), Some(rel)) = (&target, &rel) {
            if diff.stdout.is_empty() && fs::symlink_metadata(target).is_err() {
                return Err(Fail {
                    error: err(
                        ErrorCode::PathNotFound,
                        format!(
                            "{rel}: no such path in the workspace, and git shows no change for it"
                        ),
                    ),
                    data: None,
                    command: Some(line),
                });
            }
        }
        Ok(Done {
            data: diff.to_json(&line, false),
            command: Some(line),
        })
    }
}
