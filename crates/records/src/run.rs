//! A workflow run and what it leaves behind: phases, the event format, the
//! verification report and the judge's verdict, in the protocol's shapes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The pipeline's phases: SPEC, PLAN, EXECUTE, VERIFY, REPAIR, then COMPLETE or FAILED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Spec,
    Plan,
    Execute,
    Verify,
    Repair,
    Complete,
    Failed,
}

impl Phase {
    /// The event spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Spec => "spec",
            Phase::Plan => "plan",
            Phase::Execute => "execute",
            Phase::Verify => "verify",
            Phase::Repair => "repair",
            Phase::Complete => "complete",
            Phase::Failed => "failed",
        }
    }

    /// Whether the run is over.
    pub fn is_final(self) -> bool {
        matches!(self, Phase::Complete | Phase::Failed)
    }
}

/// One event (general format): `{type, data, timestamp, run_id}`; `seq` orders a
/// replay after the stored events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    /// What happened: `type` and its `data`.
    #[serde(flatten)]
    pub data: RunEventData,
    pub timestamp: DateTime<Utc>,
    pub run_id: String,
    /// 1, 2, ... within the run.
    pub seq: u64,
}

/// What a run event says, by kind: `{"type": KIND, "data": {...}}` on the wire and in the
/// run's event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum RunEventData {
    /// A phase began, or the run ended in one.
    Phase {
        phase: Phase,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// What the model said during a phase.
    Thinking {
        phase: Phase,
        message: String,
        iteration: u32,
    },
    /// A tool the model called, with its input.
    Tool {
        tool: String,
        params: Value,
        iteration: u32,
    },
    /// A QA check: `running`, then `passed` or `failed` with its output and error.
    VerificationItem {
        check_name: String,
        status: String,
        output: Option<String>,
        error: Option<String>,
    },
    /// The run stopped on an error in this phase.
    Error { message: String, phase: Phase },
    /// The run is over: what it answered, what was checked and the verdict.
    Complete {
        #[serde(default)]
        response: String,
        /// Boxed: a report is large, and every other event small.
        #[serde(default)]
        verification: Option<Box<VerificationReport>>,
        #[serde(default)]
        verdict: Option<JudgeVerdict>,
        #[serde(default)]
        tools_used: Vec<String>,
        #[serde(default)]
        iterations: u32,
        #[serde(default)]
        duration_ms: i64,
        #[serde(default)]
        repair_cycles: u32,
    },
}

impl RunEventData {
    /// The event's kind as spelled on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            RunEventData::Phase { .. } => "phase",
            RunEventData::Thinking { .. } => "thinking",
            RunEventData::Tool { .. } => "tool",
            RunEventData::VerificationItem { .. } => "verification_item",
            RunEventData::Error { .. } => "error",
            RunEventData::Complete { .. } => "complete",
        }
    }
}

/// One QA check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    pub passed: bool,
    pub output: String,
    pub error: Option<String>,
}

/// What a check printed and returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub stdout: String,
    pub returncode: Option<i32>,
}

/// VERIFY's report (`VerificationReport`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerificationReport {
    pub passed: bool,
    pub checks_run: Vec<String>,
    pub results: Vec<CheckResult>,
    pub evidence: serde_json::Map<String, Value>,
    pub failures: Vec<String>,
    pub duration_ms: u64,
}

/// PASS or FAIL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum VerdictStatus {
    Pass,
    Fail,
}

impl VerdictStatus {
    /// The name on the wire and on screen.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictStatus::Pass => "PASS",
            VerdictStatus::Fail => "FAIL",
        }
    }
}

/// The judge's verdict (`JudgeVerdict`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeVerdict {
    pub status: VerdictStatus,
    pub confidence: f64,
    pub issues: Vec<String>,
    pub suggested_fixes: Vec<String>,
    pub reasoning: String,
}

/// One tool call made during EXECUTE or REPAIR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub phase: Phase,
    pub iteration: u32,
    pub tool: String,
    pub params: Value,
    pub result: crate::tool::ToolResult,
    /// The plan B prescribed for a recoverable error, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_b: Option<PlanB>,
}

/// The alternative a tool call took after a recoverable error (a search for a misplaced path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanB {
    pub tool: String,
    pub params: Value,
    pub result: crate::tool::ToolResult,
}

/// How the run touches the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecuteMode {
    /// In the workspace itself.
    Direct,
    /// In a throwaway copy.
    Sandbox,
}

impl ExecuteMode {
    /// The name on the wire and on screen.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecuteMode::Direct => "direct",
            ExecuteMode::Sandbox => "sandbox",
        }
    }
}

/// A run, as stored under `.ai/db/runs/` and exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    pub task: String,
    pub phase: Phase,
    pub mode: ExecuteMode,
    pub write_enabled: bool,
    /// Where the tools ran (the sandbox copy in sandbox mode).
    pub workspace: String,
    /// Sandbox mode: the workspace the copy was made from (none until it is made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copied_from: Option<String>,
    /// Sandbox mode: when the copy was removed to make room for newer ones (the run can no
    /// longer be re-verified or repaired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_removed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
    /// Who started it: `person` or an automation's session id.
    pub started_by: String,
    #[serde(default)]
    pub spec: Option<String>,
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
    #[serde(default)]
    pub plan: Vec<String>,
    /// The executor's last words (the `complete` event's `response`).
    #[serde(default)]
    pub response: String,
    #[serde(default)]
    pub iterations: u32,
    #[serde(default)]
    pub repair_cycles: u32,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallRecord>,
    #[serde(default)]
    pub verification: Option<VerificationReport>,
    #[serde(default)]
    pub verdict: Option<JudgeVerdict>,
    /// `git status --short` of the workspace at the last verification (git repositories).
    #[serde(default)]
    pub changes: String,
    #[serde(default)]
    pub error: Option<String>,
    /// In memory and in exports; on disk they are in the run's event log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<RunEvent>,
}

impl Run {
    /// A run about to start: in its first phase, nothing done yet.
    pub fn new(
        id: String,
        task: String,
        mode: ExecuteMode,
        write_enabled: bool,
        workspace: String,
        started_by: String,
        now: DateTime<Utc>,
    ) -> Run {
        Run {
            id,
            task,
            phase: Phase::Spec,
            mode,
            write_enabled,
            workspace,
            copied_from: None,
            sandbox_removed_at: None,
            created_at: now,
            updated_at: now,
            finished_at: None,
            started_by,
            spec: None,
            acceptance_criteria: Vec::new(),
            plan: Vec::new(),
            response: String::new(),
            iterations: 0,
            repair_cycles: 0,
            tool_calls: Vec::new(),
            verification: None,
            verdict: None,
            changes: String::new(),
            error: None,
            events: Vec::new(),
        }
    }

    /// Tools used, in first-use order.
    pub fn tools_used(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in &self.tool_calls {
            if !out.contains(&c.tool) {
                out.push(c.tool.clone());
            }
        }
        out
    }
}

/// Runs are kept one file each in `db/runs/` (their events beside, in `ID.events.jsonl`).
impl crate::Record for Run {
    const FOLDER: &'static str = "runs";
    const PREFIX: &'static str = "run";
    fn id(&self) -> &str {
        &self.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(data: RunEventData) -> RunEvent {
        RunEvent {
            data,
            timestamp: DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
                .unwrap()
                .with_timezone(&Utc),
            run_id: "run_1".into(),
            seq: 3,
        }
    }

    /// The event's JSON is what the dashboard, `ai watch --json` and the event logs already
    /// hold: `type` beside `data`, as before events were typed.
    #[test]
    fn events_keep_their_wire_shape_and_read_back() {
        let phase = event(RunEventData::Phase {
            phase: Phase::Verify,
            status: Some("in_progress".into()),
            message: Some("Verification QA...".into()),
        });
        assert_eq!(
            serde_json::to_value(&phase).unwrap(),
            json!({"type": "phase", "data": {"phase": "verify", "status": "in_progress",
                   "message": "Verification QA..."},
                   "timestamp": "2026-01-01T00:00:00Z", "run_id": "run_1", "seq": 3})
        );
        let item = event(RunEventData::VerificationItem {
            check_name: "cargo_test:workspace".into(),
            status: "running".into(),
            output: None,
            error: None,
        });
        assert_eq!(
            serde_json::to_value(&item).unwrap()["data"],
            json!({"check_name": "cargo_test:workspace", "status": "running", "output": null,
                   "error": null})
        );
        for e in [phase, item] {
            let back: RunEvent = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
            assert_eq!(back, e);
        }
        // A line written before `complete` carried every field reads back with defaults.
        let old: RunEvent = serde_json::from_value(json!({"type": "complete", "data": {},
            "timestamp": "2026-01-01T00:00:00Z", "run_id": "run_1", "seq": 9}))
        .unwrap();
        assert_eq!(old.data.kind(), "complete");
    }
}
