//! What the workflow asks the models, and the strict reading of their JSON answers. Each system
//! prompt names its phase on its first line (`Workflow phase: spec`), which also lets logs and
//! test servers tell the calls apart.

use ai_smartness_llm::answers::{json_object, AnswerError};
use ai_smartness_records::run::{JudgeVerdict, Phase, VerdictStatus, VerificationReport};
use serde_json::{Map, Value};

/// SPEC: the task as a specification with acceptance criteria.
pub fn spec_system() -> String {
    "Workflow phase: spec\nYou turn a developer's task into a precise specification for a coding \
agent that works in the project's workspace with tools (read, list, search, git, run tests, \
write files, run allowed commands). Answer with one JSON object, no other text:\n\
{\"spec\": \"what must be true when the task is done, concretely\", \
\"acceptance_criteria\": [\"a checkable criterion\", ...]} (1 to 10 criteria)."
        .into()
}

/// PLAN: ordered steps.
pub fn plan_system() -> String {
    "Workflow phase: plan\nYou plan how a coding agent will do a task in the project's workspace \
with tools. Answer with one JSON object, no other text:\n{\"steps\": [\"step\", ...]} (1 to 15 \
short imperative steps, in order)."
        .into()
}

/// The task as the SPEC and PLAN phases see it.
pub fn task_message(task: &str, spec: Option<&str>, criteria: &[String]) -> String {
    let mut out = format!("Task: {task}\n");
    if let Some(s) = spec {
        out.push_str(&format!("\nSpecification: {s}\n"));
    }
    if !criteria.is_empty() {
        out.push_str("\nAcceptance criteria:\n");
        for c in criteria {
            out.push_str(&format!("- {c}\n"));
        }
    }
    out
}

/// EXECUTE and REPAIR: the ReAct executor.
pub fn executor_system(phase: Phase, max_iterations: u32, write_enabled: bool) -> String {
    let writing = if write_enabled {
        "You may change files with write_file."
    } else {
        "Writing is disabled for this run: you can only read, search and run checks."
    };
    format!(
        "Workflow phase: {}\nYou are a coding agent working in the project's workspace. Use the \
tools to look at the code, make the change and check it. Paths are relative to the workspace. \
{writing} A tool that fails tells you why (its error code); a missing file or folder comes back \
with a search for it. You have at most {max_iterations} steps. When the work is done, answer \
with a short summary of what you changed and why, without calling a tool.",
        phase.as_str()
    )
}

/// REPAIR's instruction: what the verification found.
pub fn repair_message(task: &str, report: &VerificationReport, verdict: &JudgeVerdict) -> String {
    let mut out = format!(
        "Task: {task}\n\nThe verification failed. Fix the problems, then stop.\n\nIssues:\n"
    );
    for i in &verdict.issues {
        out.push_str(&format!("- {i}\n"));
    }
    if !verdict.suggested_fixes.is_empty() {
        out.push_str("\nSuggested fixes:\n");
        for f in &verdict.suggested_fixes {
            out.push_str(&format!("- {f}\n"));
        }
    }
    for r in report.results.iter().filter(|r| !r.passed) {
        out.push_str(&format!(
            "\nCheck {} failed:\n{}\n{}\n",
            r.name,
            tail(&r.output, 3_000),
            r.error
                .as_deref()
                .map(|e| tail(e, 2_000))
                .unwrap_or_default()
        ));
    }
    out
}

/// The judge: the verdict from the spec, the criteria, the executor's summary and the checks.
pub fn judge_system() -> String {
    "Workflow phase: judge\nYou judge whether a coding agent's work meets its specification. You \
get the specification, the acceptance criteria, the agent's summary, what changed, and the \
results of the project's checks. A failing check means FAIL. Answer with one JSON object, no \
other text:\n{\"status\": \"PASS\" or \"FAIL\", \"confidence\": number 0 to 1, \"issues\": \
[string], \"suggested_fixes\": [string], \"reasoning\": string}."
        .into()
}

/// The judge's material.
pub fn judge_message(
    task: &str,
    spec: Option<&str>,
    criteria: &[String],
    response: &str,
    changes: &str,
    report: &VerificationReport,
) -> String {
    let mut out = task_message(task, spec, criteria);
    out.push_str(&format!(
        "\nThe agent's summary:\n{}\n",
        tail(response, 4_000)
    ));
    out.push_str(&format!(
        "\nChanges (git status):\n{}\n",
        if changes.trim().is_empty() {
            "(none or not a git repository)"
        } else {
            changes
        }
    ));
    out.push_str("\nChecks:\n");
    if report.results.is_empty() {
        out.push_str("(no checks configured)\n");
    }
    for r in &report.results {
        out.push_str(&format!(
            "- {}: {}\n{}\n",
            r.name,
            if r.passed { "passed" } else { "FAILED" },
            tail(&r.output, 2_000)
        ));
    }
    out
}

/// The last `n` bytes of `s` (on a character boundary), marked when cut.
pub fn tail(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut start = s.len() - n;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("[...]{}", &s[start..])
}

fn string_list(
    obj: &Map<String, Value>,
    key: &str,
    min: usize,
    max: usize,
) -> Result<Vec<String>, AnswerError> {
    let list = obj
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| AnswerError::Shape(format!("`{key}` must be a list of strings")))?;
    let out: Vec<String> = list
        .iter()
        .filter_map(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if out.len() != list.len() {
        return Err(AnswerError::Shape(format!(
            "`{key}` must hold non-empty strings only"
        )));
    }
    if out.len() < min || out.len() > max {
        return Err(AnswerError::Shape(format!(
            "`{key}` needs {min} to {max} items"
        )));
    }
    Ok(out)
}

/// `{"spec", "acceptance_criteria"}`.
pub fn parse_spec(text: &str) -> Result<(String, Vec<String>), AnswerError> {
    let obj = json_object(text)?;
    let spec = obj
        .get("spec")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| AnswerError::Shape("`spec` must be a non-empty string".into()))?;
    Ok((
        spec.to_string(),
        string_list(&obj, "acceptance_criteria", 1, 10)?,
    ))
}

/// `{"steps"}`.
pub fn parse_plan(text: &str) -> Result<Vec<String>, AnswerError> {
    string_list(&json_object(text)?, "steps", 1, 15)
}

/// `{"status", "confidence", "issues", "suggested_fixes", "reasoning"}`.
pub fn parse_verdict(text: &str) -> Result<JudgeVerdict, AnswerError> {
    let obj = json_object(text)?;
    let status = match obj.get("status").and_then(Value::as_str) {
        Some("PASS") => VerdictStatus::Pass,
        Some("FAIL") => VerdictStatus::Fail,
        _ => {
            return Err(AnswerError::Shape(
                "`status` must be \"PASS\" or \"FAIL\"".into(),
            ))
        }
    };
    let confidence = obj
        .get("confidence")
        .and_then(Value::as_f64)
        .filter(|c| (0.0..=1.0).contains(c))
        .ok_or_else(|| AnswerError::Shape("`confidence` must be a number from 0 to 1".into()))?;
    Ok(JudgeVerdict {
        status,
        confidence,
        issues: string_list(&obj, "issues", 0, 50)?,
        suggested_fixes: string_list(&obj, "suggested_fixes", 0, 50)?,
        reasoning: obj
            .get("reasoning")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_strictly() {
        let (s, c) = parse_spec(r#"{"spec": "x", "acceptance_criteria": ["a", "b"]}"#).unwrap();
        assert_eq!((s.as_str(), c.len()), ("x", 2));
        assert!(parse_spec(r#"{"spec": "x", "acceptance_criteria": []}"#).is_err());
        assert!(parse_spec(r#"{"spec": "", "acceptance_criteria": ["a"]}"#).is_err());
        assert_eq!(
            parse_plan("```json\n{\"steps\": [\"one\"]}\n```").unwrap(),
            vec!["one"]
        );
        assert!(parse_plan(r#"{"steps": [1]}"#).is_err());
        let v = parse_verdict(
            r#"{"status": "FAIL", "confidence": 0.8, "issues": ["t"], "suggested_fixes": [], "reasoning": "r"}"#,
        )
        .unwrap();
        assert_eq!(v.status, VerdictStatus::Fail);
        assert!(parse_verdict(
            r#"{"status": "OK", "confidence": 0.8, "issues": [], "suggested_fixes": []}"#
        )
        .is_err());
        assert!(parse_verdict(
            r#"{"status": "PASS", "confidence": 3, "issues": [], "suggested_fixes": []}"#
        )
        .is_err());
    }

    #[test]
    fn tails_cut_on_char_boundaries() {
        assert_eq!(tail("héllo", 100), "héllo");
        assert!(tail(&"é".repeat(100), 11).starts_with("[...]"));
    }
}
