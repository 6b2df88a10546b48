//! The pipeline of a run: SPEC, PLAN, EXECUTE (a ReAct loop over the tools), VERIFY
//! (the project's checks, then the judge), REPAIR while it fails and cycles remain, then
//! COMPLETE or FAILED. Every step is an event, kept with the run and sent to subscribers; the
//! run is saved after each one, so a crash loses at most the step in flight.

use crate::prompts;
use crate::tools::Toolbox;
use ai_smartness_core::clock::SharedClock;
use ai_smartness_llm::answers::{ask_json, AskError};
use ai_smartness_llm::{
    ChatMessage, ChatRequest, ContentBlock, LlmClient, Role, SystemBlock, ToolSpec,
};
use ai_smartness_records::run::{
    CheckResult, Evidence, JudgeVerdict, Phase, PlanB, Run, RunEvent, RunEventData, ToolCallRecord,
    VerdictStatus, VerificationReport,
};
use ai_smartness_records::tool::ToolResult;
use ai_smartness_store::atomic::write_json_redacted_atomic;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

/// The run's settings (from `config.json` and the environment).
#[derive(Debug, Clone)]
pub struct Settings {
    /// SPEC, PLAN, EXECUTE, REPAIR.
    pub executor_model: Option<String>,
    /// The judge.
    pub verifier_model: Option<String>,
    /// ReAct steps per EXECUTE or REPAIR.
    pub max_iterations: u32,
    pub max_repair_cycles: u32,
    /// Without checks and without a judge's answer, a run cannot PASS.
    pub verify_required: bool,
    pub max_tokens: u32,
    pub call_timeout: Duration,
}

/// A run in memory: the stored record, its subscribers and its file.
pub struct RunHandle {
    run: Mutex<Run>,
    events: broadcast::Sender<RunEvent>,
    path: PathBuf,
    clock: SharedClock,
}

impl RunHandle {
    /// Wraps a run stored at `path`, with the events its log holds (see [`events_path`]).
    pub fn new(mut run: Run, path: PathBuf, clock: SharedClock) -> Arc<RunHandle> {
        let log = events_path(&path);
        match read_events(&log) {
            Ok(events) => {
                // Runs saved before the log existed hold their events inline.
                let known = run.events.last().map_or(0, |e| e.seq);
                run.events
                    .extend(events.into_iter().filter(|e| e.seq > known));
            }
            Err(e) => tracing::warn!("events of run {} unreadable: {e}", run.id),
        }
        Arc::new(RunHandle {
            run: Mutex::new(run),
            events: broadcast::channel(1024).0,
            path,
            clock,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Run> {
        self.run.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The run's id.
    pub fn id(&self) -> String {
        self.lock().id.clone()
    }

    /// Its phase, when it was created and when it finished: what listings and retention need,
    /// without copying its events.
    pub fn times(&self) -> (Phase, DateTime<Utc>, Option<DateTime<Utc>>) {
        let r = self.lock();
        (r.phase, r.created_at, r.finished_at)
    }

    /// `f` of the run as it is now, without copying it (a copy holds every event).
    pub fn read<T>(&self, f: impl FnOnce(&Run) -> T) -> T {
        f(&self.lock())
    }

    /// The file it is saved in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A copy of the run as it is now.
    pub fn snapshot(&self) -> Run {
        self.lock().clone()
    }

    /// Live events; with [`RunHandle::snapshot`] taken after subscribing, nothing is missed
    /// (replay the stored ones, then the live ones with a higher `seq`).
    pub fn subscribe(&self) -> broadcast::Receiver<RunEvent> {
        self.events.subscribe()
    }

    /// Changes the run and saves it.
    pub fn update(&self, f: impl FnOnce(&mut Run)) {
        let mut run = self.lock();
        f(&mut run);
        run.updated_at = self.clock.now();
        self.save(&mut run);
    }

    /// Records an event, sends it to subscribers and saves the run.
    pub fn emit(&self, data: RunEventData) {
        let mut run = self.lock();
        let event = RunEvent {
            data,
            timestamp: self.clock.now(),
            run_id: run.id.clone(),
            seq: run.events.len() as u64 + 1,
        };
        // Appended to the run's event log: one line, not the whole run rewritten per event.
        if let Err(e) = append_event(&events_path(&self.path), &event) {
            tracing::error!("saving an event of run {} failed: {e}", run.id);
        }
        run.events.push(event.clone());
        run.updated_at = event.timestamp;
        // Sent under the lock: subscribers see events in seq order.
        let _ = self.events.send(event);
    }

    /// Saves the run's state; its events are in their log, not in this file.
    fn save(&self, run: &mut Run) {
        let events = std::mem::take(&mut run.events);
        if let Err(e) = write_json_redacted_atomic(&self.path, &*run) {
            tracing::error!("saving run {} failed: {e}", run.id);
        }
        run.events = events;
    }

    fn phase(&self, phase: Phase, status: &str, message: &str) {
        self.update(|r| r.phase = phase);
        self.emit(RunEventData::Phase {
            phase,
            status: Some(status.to_string()),
            message: Some(message.to_string()),
        });
    }
}

/// The event log beside a run's file: `run_ID.events.jsonl`, one event per line.
pub fn events_path(run_path: &Path) -> PathBuf {
    run_path.with_extension("events.jsonl")
}

/// Appends one event (secrets redacted) and makes it durable.
fn append_event(log: &Path, event: &RunEvent) -> std::io::Result<()> {
    use std::io::Write;
    let value = serde_json::to_value(event).map_err(std::io::Error::from)?;
    let (value, _) = ai_smartness_capture::admit::redact_json(value);
    let mut line = serde_json::to_vec(&value).map_err(std::io::Error::from)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    file.write_all(&line)?;
    file.sync_data()
}

/// The events of a log, in order; a line that does not parse is skipped, and the tail of a
/// write a crash cut is removed (the next event must start a line of its own). A missing log
/// holds none.
fn read_events(log: &Path) -> std::io::Result<Vec<RunEvent>> {
    let mut bytes = match std::fs::read(log) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let whole_lines = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if whole_lines < bytes.len() {
        tracing::warn!("removed the cut last line of {}", log.display());
        std::fs::OpenOptions::new()
            .write(true)
            .open(log)?
            .set_len(whole_lines as u64)?;
        bytes.truncate(whole_lines);
    }
    Ok(bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| match serde_json::from_slice(l) {
            Ok(e) => Some(e),
            Err(e) => {
                tracing::warn!("skipped a damaged line of {}: {e}", log.display());
                None
            }
        })
        .collect())
}

/// What a pipeline needs.
pub struct Pipeline {
    pub llm: LlmClient,
    pub tools: Arc<Toolbox>,
    pub settings: Settings,
}

/// Why a phase stopped the run.
struct Stop(String);

impl From<AskError> for Stop {
    fn from(e: AskError) -> Self {
        Stop(e.to_string())
    }
}

impl Pipeline {
    fn request(
        &self,
        system: String,
        messages: Vec<ChatMessage>,
        model: &Option<String>,
    ) -> ChatRequest {
        ChatRequest {
            model: model.clone(),
            system: vec![SystemBlock {
                text: system,
                cache: true,
            }],
            messages,
            tools: Vec::new(),
            max_tokens: self.settings.max_tokens,
            temperature: None,
            timeout: self.settings.call_timeout,
        }
    }

    /// The whole pipeline, from SPEC.
    pub async fn run(&self, h: &RunHandle) {
        let result = async {
            self.spec(h).await?;
            self.plan(h).await?;
            let run = h.snapshot();
            let instruction =
                prompts::task_message(&run.task, run.spec.as_deref(), &run.acceptance_criteria)
                    + &plan_text(&run.plan);
            let response = self.react(h, Phase::Execute, instruction).await?;
            h.update(|r| r.response = response);
            self.verify_and_repair(h, false).await
        }
        .await;
        finish(h, result);
    }

    /// Verification only (the "Re-verify" action): the work is not executed again.
    pub async fn reverify(&self, h: &RunHandle) {
        let result = async {
            let (_, verdict) = self.verify(h).await?;
            Ok(verdict.status)
        }
        .await;
        finish(h, result);
    }

    /// A repair cycle even after a PASS (the "Force Repair" action), then verification, then
    /// more cycles while it fails and cycles remain.
    pub async fn force_repair(&self, h: &RunHandle) {
        let result = self.verify_and_repair(h, true).await;
        finish(h, result);
    }

    async fn spec(&self, h: &RunHandle) -> Result<(), Stop> {
        h.phase(Phase::Spec, "in_progress", "Writing the specification...");
        let task = h.snapshot().task;
        let req = self.request(
            prompts::spec_system(),
            vec![ChatMessage::user(prompts::task_message(&task, None, &[]))],
            &self.settings.executor_model,
        );
        let answer = ask_json(&self.llm, req, "workflow_spec", prompts::parse_spec).await?;
        let (spec, criteria) = answer.value;
        h.emit(RunEventData::Thinking {
            phase: Phase::Spec,
            message: format!("{spec}\nCriteria: {}", criteria.join("; ")),
            iteration: 0,
        });
        h.update(|r| {
            r.spec = Some(spec);
            r.acceptance_criteria = criteria;
        });
        Ok(())
    }

    async fn plan(&self, h: &RunHandle) -> Result<(), Stop> {
        h.phase(Phase::Plan, "in_progress", "Planning...");
        let run = h.snapshot();
        let req = self.request(
            prompts::plan_system(),
            vec![ChatMessage::user(prompts::task_message(
                &run.task,
                run.spec.as_deref(),
                &run.acceptance_criteria,
            ))],
            &self.settings.executor_model,
        );
        let steps = ask_json(&self.llm, req, "workflow_plan", prompts::parse_plan)
            .await?
            .value;
        h.emit(RunEventData::Thinking {
            phase: Phase::Plan,
            message: plan_text(&steps),
            iteration: 0,
        });
        h.update(|r| r.plan = steps);
        Ok(())
    }

    /// The ReAct loop: the model calls tools until it answers without one, at most
    /// `max_iterations` times. Returns its last text.
    async fn react(
        &self,
        h: &RunHandle,
        phase: Phase,
        instruction: String,
    ) -> Result<String, Stop> {
        h.phase(
            phase,
            "in_progress",
            if phase == Phase::Repair {
                "Repairing..."
            } else {
                "Executing..."
            },
        );
        let write = h.snapshot().write_enabled;
        let tools: Vec<ToolSpec> = self
            .tools
            .specs()
            .into_iter()
            .map(|d| ToolSpec {
                name: d.name.to_string(),
                description: d.description.to_string(),
                input_schema: d.params,
            })
            .collect();
        let mut req = self.request(
            prompts::executor_system(phase, self.settings.max_iterations, write),
            vec![ChatMessage::user(instruction)],
            &self.settings.executor_model,
        );
        req.tools = tools;
        let mut last_text = String::new();
        for iteration in 1..=self.settings.max_iterations.max(1) {
            h.update(|r| r.iterations += 1);
            let resp = self
                .llm
                .complete(&req, None)
                .await
                .map_err(|e| Stop(format!("{} failed: {e}", phase.as_str())))?;
            if !resp.text.trim().is_empty() {
                last_text = resp.text.clone();
                h.emit(RunEventData::Thinking {
                    phase,
                    message: resp.text.clone(),
                    iteration,
                });
            }
            if resp.tool_calls.is_empty() {
                return Ok(last_text);
            }
            let mut said = Vec::new();
            if !resp.text.is_empty() {
                said.push(ContentBlock::Text(resp.text.clone()));
            }
            let mut results = Vec::new();
            for call in &resp.tool_calls {
                said.push(ContentBlock::ToolUse {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                });
                h.emit(RunEventData::Tool {
                    tool: call.name.clone(),
                    params: call.input.clone(),
                    iteration,
                });
                let tools = self.tools.clone();
                let (name, params) = (call.name.clone(), call.input.clone());
                let (result, plan_b) =
                    tokio::task::spawn_blocking(move || tools.call_with_plan_b(&name, &params))
                        .await
                        .unwrap_or_else(|e| (internal_failure(&e.to_string()), None));
                let plan_b = plan_b.map(|(tool, params, result)| PlanB {
                    tool,
                    params,
                    result,
                });
                let content = match &plan_b {
                    Some(plan_b) => serde_json::to_string(&WithPlanB {
                        result: &result,
                        plan_b,
                    }),
                    None => serde_json::to_string(&result),
                }
                .unwrap_or_default();
                results.push(ContentBlock::ToolResult {
                    tool_use_id: call.id.clone(),
                    content: prompts::tail(&content, 30_000),
                    is_error: !result.success,
                });
                h.update(|r| {
                    r.tool_calls.push(ToolCallRecord {
                        phase,
                        iteration,
                        tool: call.name.clone(),
                        params: call.input.clone(),
                        result,
                        plan_b,
                    })
                });
            }
            req.messages.push(ChatMessage {
                role: Role::Assistant,
                content: said,
                cache: false,
            });
            req.messages.push(ChatMessage {
                role: Role::User,
                content: results,
                cache: false,
            });
        }
        h.emit(RunEventData::Thinking {
            phase,
            message: format!(
                "Stopped after {} steps (MAX_ITERATIONS).",
                self.settings.max_iterations
            ),
            iteration: self.settings.max_iterations,
        });
        Ok(last_text)
    }

    /// VERIFY, then REPAIR and VERIFY again while it fails and cycles remain. `force` runs one
    /// repair cycle first whatever the last verdict.
    async fn verify_and_repair(&self, h: &RunHandle, force: bool) -> Result<VerdictStatus, Stop> {
        let mut pending_repair = force;
        loop {
            if pending_repair {
                let run = h.snapshot();
                let report = run.verification.clone().unwrap_or_default();
                let verdict = run.verdict.clone().unwrap_or(JudgeVerdict {
                    status: VerdictStatus::Fail,
                    confidence: 0.0,
                    issues: vec!["no verification yet".into()],
                    suggested_fixes: Vec::new(),
                    reasoning: String::new(),
                });
                h.update(|r| r.repair_cycles += 1);
                let response = self
                    .react(
                        h,
                        Phase::Repair,
                        prompts::repair_message(&run.task, &report, &verdict),
                    )
                    .await?;
                h.update(|r| r.response = response);
            }
            let (_, verdict) = self.verify(h).await?;
            if verdict.status == VerdictStatus::Pass {
                return Ok(VerdictStatus::Pass);
            }
            if h.snapshot().repair_cycles >= self.settings.max_repair_cycles {
                return Ok(VerdictStatus::Fail);
            }
            pending_repair = true;
        }
    }

    /// The QA tools (`run_tests`, `run_lint` when configured), then the judge.
    async fn verify(&self, h: &RunHandle) -> Result<(VerificationReport, JudgeVerdict), Stop> {
        h.phase(Phase::Verify, "in_progress", "Verification QA...");
        let started = Instant::now();
        let mut report = VerificationReport::default();
        let config = self.tools.config().clone();
        let checks: Vec<(&str, bool)> = vec![
            ("run_tests", config.test_command.is_some()),
            ("run_lint", config.lint_command.is_some()),
        ];
        for (tool, configured) in checks {
            if !configured {
                continue;
            }
            let name = format!("{tool}:workspace");
            h.emit(RunEventData::VerificationItem {
                check_name: name.clone(),
                status: "running".into(),
                output: None,
                error: None,
            });
            let tools = self.tools.clone();
            let result = tokio::task::spawn_blocking(move || {
                tools.call(tool, &Value::Object(Default::default()))
            })
            .await
            .unwrap_or_else(|e| internal_failure(&e.to_string()));
            let output = result.command_output();
            let passed = result.success && output.passed == Some(true);
            let error = match (&result.error, passed) {
                (Some(e), _) => Some(format!("{}: {}", e.code.as_str(), e.message)),
                (None, false) => Some(if output.stderr.is_empty() {
                    match output.returncode {
                        Some(code) => format!("exit code {code}"),
                        None => "killed before it exited".to_string(),
                    }
                } else {
                    output.stderr.clone()
                }),
                (None, true) => None,
            };
            h.emit(RunEventData::VerificationItem {
                check_name: name.clone(),
                status: if passed { "passed" } else { "failed" }.into(),
                output: Some(prompts::tail(&output.stdout, 4_000)),
                error: error.clone(),
            });
            report.checks_run.push(name.clone());
            report.evidence.insert(
                name.clone(),
                serde_json::to_value(Evidence {
                    stdout: prompts::tail(&output.stdout, 20_000),
                    returncode: output.returncode,
                })
                .unwrap_or_default(),
            );
            if !passed {
                report.failures.push(name.clone());
            }
            report.results.push(CheckResult {
                name,
                passed,
                output: prompts::tail(&output.stdout, 20_000),
                error,
            });
        }
        report.passed = report.failures.is_empty();
        report.duration_ms = started.elapsed().as_millis() as u64;
        let changes = self.changes().await;
        h.update(|r| {
            r.verification = Some(report.clone());
            r.changes = changes.clone();
        });
        let verdict = self.judge(h, &report, &changes).await;
        h.update(|r| r.verdict = Some(verdict.clone()));
        Ok((report, verdict))
    }

    /// The verifier model's verdict; a failing check is a FAIL whatever it says, and without
    /// its answer the checks decide (and no checks at all cannot PASS when verification is
    /// required).
    async fn judge(
        &self,
        h: &RunHandle,
        report: &VerificationReport,
        changes: &str,
    ) -> JudgeVerdict {
        let run = h.snapshot();
        let req = self.request(
            prompts::judge_system(),
            vec![ChatMessage::user(prompts::judge_message(
                &run.task,
                run.spec.as_deref(),
                &run.acceptance_criteria,
                &run.response,
                changes,
                report,
            ))],
            &self.settings.verifier_model,
        );
        let from_checks = |why: String| JudgeVerdict {
            status: if report.passed
                && (!report.results.is_empty() || !self.settings.verify_required)
            {
                VerdictStatus::Pass
            } else {
                VerdictStatus::Fail
            },
            confidence: 0.5,
            issues: report
                .failures
                .iter()
                .map(|f| format!("{f} failed"))
                .chain(
                    (report.results.is_empty() && self.settings.verify_required).then(|| {
                        "no check could verify the work (configure workflow.test_command)"
                            .to_string()
                    }),
                )
                .collect(),
            suggested_fixes: Vec::new(),
            reasoning: why,
        };
        let mut verdict =
            match ask_json(&self.llm, req, "workflow_judge", prompts::parse_verdict).await {
                Ok(a) => a.value,
                Err(e) => from_checks(format!(
                    "the verifier gave no verdict ({e}); decided by the checks"
                )),
            };
        if !report.passed && verdict.status == VerdictStatus::Pass {
            verdict.status = VerdictStatus::Fail;
            verdict
                .issues
                .extend(report.failures.iter().map(|f| format!("{f} failed")));
            verdict.reasoning = format!(
                "A check failed, so the run cannot pass. {}",
                verdict.reasoning
            );
        }
        verdict
    }

    /// `git status --short` of the workspace: changed and new files (empty when it is not a
    /// repository).
    async fn changes(&self) -> String {
        let tools = self.tools.clone();
        tokio::task::spawn_blocking(move || {
            tools
                .call("git_status", &Value::Object(Default::default()))
                .command_output()
                .stdout
        })
        .await
        .unwrap_or_default()
    }
}

/// Ends a run: its final phase (or the error that stopped it), then the `complete` event that
/// tells followers it is over.
fn finish(h: &RunHandle, result: Result<VerdictStatus, Stop>) {
    let now_phase = h.snapshot().phase;
    match result {
        Ok(VerdictStatus::Pass) => {
            h.update(|r| {
                r.phase = Phase::Complete;
                r.error = None;
            });
            h.emit(RunEventData::Phase {
                phase: Phase::Complete,
                status: Some("completed".into()),
                message: Some("Verified.".into()),
            });
        }
        Ok(VerdictStatus::Fail) => {
            let cycles = h.snapshot().repair_cycles;
            h.update(|r| r.phase = Phase::Failed);
            h.emit(RunEventData::Phase {
                phase: Phase::Failed,
                status: Some("failed".into()),
                message: Some(format!(
                    "Verification still fails after {cycles} repair cycle(s)."
                )),
            });
        }
        Err(Stop(message)) => {
            h.emit(RunEventData::Error {
                message: message.clone(),
                phase: now_phase,
            });
            h.update(|r| {
                r.phase = Phase::Failed;
                r.error = Some(message);
            });
        }
    }
    let run = h.snapshot();
    h.update(|r| r.finished_at = Some(r.updated_at));
    h.emit(RunEventData::Complete {
        tools_used: run.tools_used(),
        duration_ms: (run.updated_at - run.created_at).num_milliseconds().max(0),
        response: run.response,
        verification: run.verification.map(Box::new),
        verdict: run.verdict,
        iterations: run.iterations,
        repair_cycles: run.repair_cycles,
    });
}

/// Ends a run that could not go on (no model, no sandbox copy, a restart cut it short), the
/// same way as a phase that failed.
pub fn fail(h: &RunHandle, message: String) {
    finish(h, Err(Stop(message)));
}

fn plan_text(steps: &[String]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nPlan:\n");
    for (i, s) in steps.iter().enumerate() {
        out.push_str(&format!("{}. {s}\n", i + 1));
    }
    out
}

fn internal_failure(message: &str) -> ToolResult {
    ToolResult {
        success: false,
        data: None,
        error: Some(ai_smartness_records::tool::ToolError {
            code: ai_smartness_records::tool::ErrorCode::Io,
            message: message.to_string(),
            recoverable: false,
        }),
        meta: ai_smartness_records::tool::ToolMeta {
            duration_ms: 0,
            command: None,
            sandbox: false,
        },
    }
}

/// A tool's result with the alternative the toolbox tried after it failed, as the model reads
/// it.
#[derive(serde::Serialize)]
struct WithPlanB<'a> {
    result: &'a ToolResult,
    plan_b: &'a PlanB,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ai_smartness_records::run::ExecuteMode;
    use serde_json::json;

    fn run(id: &str) -> Run {
        Run::new(
            id.into(),
            "check the build".into(),
            ExecuteMode::Direct,
            false,
            "/tmp".into(),
            "person".into(),
            Utc::now(),
        )
    }

    /// Events go to their log one line each (the run's file is not rewritten per event), come
    /// back when the run is opened again, and a line a crash cut is skipped, not fatal.
    #[test]
    fn events_are_appended_to_a_log_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run_20260101_000000_abcd.json");
        let h = RunHandle::new(
            run("run_20260101_000000_abcd"),
            path.clone(),
            ai_smartness_core::clock::system(),
        );
        h.update(|r| r.phase = Phase::Plan);
        h.emit(RunEventData::Phase {
            phase: Phase::Plan,
            status: None,
            message: None,
        });
        h.emit(RunEventData::Tool {
            tool: "ls".into(),
            params: json!({"token": "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}),
            iteration: 1,
        });
        let on_disk: Run = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(on_disk.events.is_empty(), "events live in the log");
        assert_eq!(on_disk.phase, Phase::Plan);
        let log = std::fs::read_to_string(events_path(&path)).unwrap();
        assert_eq!(log.lines().count(), 2);
        assert!(!log.contains("sk-ant-api03"), "secrets are redacted: {log}");

        // A crash in the middle of a third line.
        std::fs::OpenOptions::new()
            .append(true)
            .open(events_path(&path))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"kind\":\"to"))
            .unwrap();
        let again = RunHandle::new(on_disk, path, ai_smartness_core::clock::system());
        let events = again.snapshot().events;
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(events[0].data.kind(), "phase");
        // The next event continues the sequence.
        again.emit(RunEventData::Complete {
            response: String::new(),
            verification: None,
            verdict: None,
            tools_used: Vec::new(),
            iterations: 0,
            duration_ms: 0,
            repair_cycles: 0,
        });
        assert_eq!(again.snapshot().events.last().unwrap().seq, 3);
        let reopened = RunHandle::new(
            again.snapshot(),
            again.path().to_path_buf(),
            ai_smartness_core::clock::system(),
        );
        let kinds: Vec<&str> = reopened
            .snapshot()
            .events
            .iter()
            .map(|e| e.data.kind())
            .collect();
        assert_eq!(kinds, ["phase", "tool", "complete"]);
    }
}
