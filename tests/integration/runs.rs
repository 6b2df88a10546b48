//! Workflow runs end to end: a real daemon, a real temporary git workspace (the project folder
//! itself), real commands for the checks, and the fake Anthropic server playing the executor
//! and the judge, phase by phase.

use crate::fake_anthropic::{FakeAnthropic, Recorded, Reply};
use crate::harness::{commit_all, Project};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY_VAR: &str = "AIT_RUN_KEY";
const KEY: &str = "sk-ant-api03-AITEST-runs-51c2";

fn phase_of(r: &Recorded) -> Option<&'static str> {
    let body = r.body_text();
    ["spec", "plan", "execute", "repair", "judge"]
        .into_iter()
        .find(|p| body.contains(&format!("Workflow phase: {p}")))
}

type Replies = Arc<Mutex<HashMap<&'static str, VecDeque<Reply>>>>;

/// A model answering each workflow phase from its own queue (defaults: a one-line spec and
/// plan, "Done." for the executor, PASS for the judge).
fn model(script: Vec<(&'static str, Reply)>) -> (FakeAnthropic, Replies) {
    let replies: Replies = Arc::default();
    for (phase, r) in script {
        replies
            .lock()
            .unwrap()
            .entry(phase)
            .or_default()
            .push_back(r);
    }
    let q = replies.clone();
    let fake = FakeAnthropic::with_script(move |r| {
        let phase = phase_of(r)?;
        let next = q
            .lock()
            .unwrap()
            .get_mut(phase)
            .and_then(VecDeque::pop_front);
        Some(next.unwrap_or_else(|| default_reply(phase)))
    });
    (fake, replies)
}

fn default_reply(phase: &str) -> Reply {
    match phase {
        "spec" => json_reply(
            json!({ "spec": "Do the task.", "acceptance_criteria": ["The checks pass."] }),
        ),
        "plan" => json_reply(json!({ "steps": ["Do it", "Check it"] })),
        "judge" => verdict("PASS", &[]),
        _ => Reply::text("Done."),
    }
}

fn json_reply(v: Value) -> Reply {
    Reply::text(v.to_string())
}

fn verdict(status: &str, issues: &[&str]) -> Reply {
    json_reply(
        json!({ "status": status, "confidence": 0.9, "issues": issues,
                       "suggested_fixes": issues.iter().map(|i| format!("fix: {i}")).collect::<Vec<_>>(),
                       "reasoning": "judged" }),
    )
}

fn tool(name: &str, input: Value) -> Reply {
    Reply::tool_use(name, input)
}

/// A project whose folder is a git repository with one commit, the fake model, and these
/// workflow settings; started.
fn project(fake: &FakeAnthropic, workflow: Value) -> Project {
    let mut p = Project::new();
    let root = p.root().to_path_buf();
    std::fs::write(root.join("README.md"), "# demo\n").unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/notes.txt"), "the notes\n").unwrap();
    std::fs::create_dir_all(root.join("pkg/widgets")).unwrap();
    std::fs::write(root.join("pkg/widgets/mod.txt"), "widgets\n").unwrap();
    std::fs::write(root.join(".gitignore"), ".ai/\n").unwrap();
    commit_all(&root);
    p.use_fake_model(&fake.base_url(), KEY_VAR);
    p.edit_config(|c| {
        for (k, v) in workflow.as_object().unwrap() {
            c["workflow"][k] = v.clone();
        }
    });
    p.start_with_env(&[(KEY_VAR, KEY)]);
    p
}

fn export(p: &Project, id: &str) -> Value {
    p.request(json!({ "run": { "action": "export", "id": id } }))
}

fn wait_final(p: &Project, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let r = export(p, id);
        let over = r["phase"] == "complete" || r["phase"] == "failed";
        if over && r["events"].as_array().unwrap().last().unwrap()["type"] == "complete" {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "run {id} never ended: {r:#}\n{}",
            p.log()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn phases(run: &Value) -> Vec<String> {
    run["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "phase")
        .map(|e| e["data"]["phase"].as_str().unwrap().to_string())
        .collect()
}

const GREETING_TEST: &str = "grep -q 'hello world' greeting.txt";

#[test]
fn a_run_that_passes_first_time_is_reported_and_remembered() {
    let (fake, _) = model(vec![
        (
            "execute",
            tool(
                "write_file",
                json!({ "path": "greeting.txt", "content": "hello world\n" }),
            ),
        ),
        (
            "execute",
            Reply::text("Wrote greeting.txt with the greeting."),
        ),
    ]);
    let p = project(&fake, json!({ "test_command": GREETING_TEST }));
    let out = p.ai(&[
        "run",
        "--write",
        "Create",
        "greeting.txt",
        "saying",
        "hello",
        "world",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("verdict: PASS"), "{stdout}");
    assert!(stdout.contains("> write_file"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(p.root().join("greeting.txt")).unwrap(),
        "hello world\n"
    );
    let id = p.request(json!({ "run": { "action": "list" } }))["runs"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = wait_final(&p, &id);
    assert_eq!(run["phase"], "complete");
    assert_eq!(
        phases(&run),
        vec!["spec", "plan", "execute", "verify", "complete"]
    );
    let v = &run["verification"];
    assert_eq!(v["passed"], true);
    assert_eq!(v["checks_run"], json!(["run_tests:workspace"]));
    assert_eq!(v["evidence"]["run_tests:workspace"]["returncode"], 0);
    assert_eq!(run["verdict"]["status"], "PASS");
    assert!(
        run["changes"].as_str().unwrap().contains("?? greeting.txt"),
        "{}",
        run["changes"]
    );
    let complete = run["events"].as_array().unwrap().last().unwrap();
    assert_eq!(complete["data"]["tools_used"], json!(["write_file"]));
    assert_eq!(complete["run_id"], json!(id));
    // Remembered: the task and its verdict, as a sub-agent's report.
    let deadline = Instant::now() + Duration::from_secs(20);
    let found = loop {
        p.sync();
        let hit = p.all_message_texts().into_iter().find(|t| t.contains(&id));
        if let Some(t) = hit {
            break t;
        }
        assert!(Instant::now() < deadline, "the run was not remembered");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        found.contains("Create greeting.txt") && found.contains("PASS"),
        "{found}"
    );
}

#[test]
fn failing_checks_are_repaired_until_they_pass() {
    let (fake, _) = model(vec![
        (
            "execute",
            tool(
                "write_file",
                json!({ "path": "greeting.txt", "content": "hello\n" }),
            ),
        ),
        ("execute", Reply::text("Wrote it.")),
        // The judge is overruled anyway while the check fails.
        ("judge", verdict("PASS", &[])),
        (
            "repair",
            tool("read_file", json!({ "path": "greeting.txt" })),
        ),
        (
            "repair",
            tool(
                "write_file",
                json!({ "path": "greeting.txt", "content": "hello world\n" }),
            ),
        ),
        ("repair", Reply::text("Fixed the greeting.")),
        ("judge", verdict("PASS", &[])),
    ]);
    let p = project(
        &fake,
        json!({ "test_command": GREETING_TEST, "write_enabled": true }),
    );
    let id = p.request(
        json!({ "run": { "action": "start", "task": "Greet the world in greeting.txt" } }),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = wait_final(&p, &id);
    assert_eq!(run["phase"], "complete", "{run:#}");
    assert_eq!(run["repair_cycles"], 1);
    assert_eq!(
        phases(&run),
        vec!["spec", "plan", "execute", "verify", "repair", "verify", "complete"]
    );
    // The repair prompt carried the failing check.
    let repair = fake
        .requests()
        .into_iter()
        .find(|r| phase_of(r) == Some("repair"))
        .unwrap();
    assert!(
        repair.messages_text().contains("run_tests:workspace"),
        "{}",
        repair.messages_text()
    );
    let items: Vec<String> = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "verification_item" && e["data"]["status"] != "running")
        .map(|e| e["data"]["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(items, vec!["failed", "passed"]);
}

#[test]
fn a_run_that_exhausts_its_repair_cycles_fails() {
    let (fake, _) = model(vec![("judge", verdict("FAIL", &["still wrong"]))]);
    let p = project(
        &fake,
        json!({ "test_command": "exit 1", "max_repair_cycles": 2 }),
    );
    let out = p.ai(&["run", "Make the tests pass"]);
    assert_eq!(out.status.code(), Some(1), "a failed run exits 1");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("verdict: FAIL"), "{stdout}");
    let id = p.request(json!({ "run": { "action": "list" } }))["runs"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = wait_final(&p, &id);
    assert_eq!(run["phase"], "failed");
    assert_eq!(run["repair_cycles"], 2);
    assert_eq!(run["verdict"]["status"], "FAIL");
    assert_eq!(phases(&run).iter().filter(|p| *p == "repair").count(), 2);
    let status = p.ai_json(&["status"]);
    assert_eq!(status["runs"]["failed"], 1, "{status}");
    assert_eq!(phases(&run).last().unwrap(), "failed");
}

#[test]
fn tool_errors_come_back_with_their_plan_b_and_escapes_are_refused() {
    let (fake, _) = model(vec![
        ("execute", tool("read_file", json!({ "path": "notes.txt" }))),
        ("execute", tool("list_dir", json!({ "path": "widgets" }))),
        (
            "execute",
            tool("read_file", json!({ "path": "../../../../etc/passwd" })),
        ),
        (
            "execute",
            tool(
                "run_command",
                json!({ "command": "rm", "args": ["-rf", "docs"] }),
            ),
        ),
        (
            "execute",
            tool("write_file", json!({ "path": "x.txt", "content": "x" })),
        ),
        ("execute", tool("no_such_tool", json!({}))),
        ("execute", Reply::text("Explored.")),
    ]);
    let p = project(&fake, json!({}));
    let id = p.request(json!({ "run": { "action": "start", "task": "Look around" } }))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = wait_final(&p, &id);
    let calls = run["tool_calls"].as_array().unwrap();
    let codes: Vec<&str> = calls
        .iter()
        .map(|c| c["result"]["error"]["code"].as_str().unwrap_or("ok"))
        .collect();
    assert_eq!(
        codes,
        vec![
            "E_FILE_NOT_FOUND",
            "E_DIR_NOT_FOUND",
            "E_PATH_FORBIDDEN",
            "E_CMD_NOT_ALLOWED",
            "E_WRITE_DISABLED",
            "E_UNKNOWN_TOOL"
        ]
    );
    assert_eq!(calls[0]["result"]["error"]["recoverable"], true);
    assert_eq!(calls[2]["result"]["error"]["recoverable"], false);
    assert_eq!(calls[0]["plan_b"]["tool"], "search_files");
    assert!(calls[0]["plan_b"]["result"]["data"]["suggestion"]
        .as_str()
        .unwrap()
        .ends_with("docs/notes.txt"));
    assert_eq!(calls[1]["plan_b"]["tool"], "search_directory");
    assert!(calls[1]["plan_b"]["result"]["data"]["suggestion"]
        .as_str()
        .unwrap()
        .ends_with("pkg/widgets"));
    assert!(
        calls[2]["plan_b"].is_null(),
        "no plan B for a forbidden path"
    );
    assert!(p.root().join("docs/notes.txt").exists(), "rm never ran");
    assert!(!p.root().join("x.txt").exists());
    // The model saw the refusals as tool results.
    let exec: Vec<Recorded> = fake
        .requests()
        .into_iter()
        .filter(|r| phase_of(r) == Some("execute"))
        .collect();
    let last = exec.last().unwrap().messages_text();
    assert!(
        last.contains("E_PATH_FORBIDDEN") && last.contains("E_CMD_NOT_ALLOWED"),
        "{last}"
    );
    // Without a check the judge decides.
    assert_eq!(run["verdict"]["status"], "PASS");
}

#[test]
fn a_subscriber_gets_the_events_in_order_and_finished_runs_can_be_reverified_and_repaired() {
    let (fake, replies) = model(vec![]);
    let p = project(&fake, json!({ "test_command": "test -f README.md" }));
    let id = p.request(json!({ "run": { "action": "start", "task": "Check the readme" } }))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut c = p.client();
    let head = c
        .request(
            &ai_smartness::protocol::parse_request(
                json!({ "watch": { "run": id } }).to_string().as_bytes(),
            )
            .unwrap(),
        )
        .unwrap();
    assert!(head.ok);
    let mut seen = Vec::new();
    while let Some(e) = c.next_line().unwrap() {
        let done = e["type"] == "complete";
        seen.push(e);
        if done {
            break;
        }
    }
    let seqs: Vec<u64> = seen.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "every event once, in order"
    );
    assert!(seen
        .iter()
        .all(|e| e["run_id"] == json!(id) && e["timestamp"].is_string()));
    let kinds: Vec<&str> = seen.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"phase"));
    assert!(kinds.contains(&"thinking") && kinds.contains(&"verification_item"));
    let run = wait_final(&p, &id);
    assert_eq!(
        run["events"].as_array().unwrap().len(),
        seen.len(),
        "stored as streamed"
    );

    // Re-verify: checks and judge again, no executor call.
    let before = fake.requests().len();
    replies
        .lock()
        .unwrap()
        .entry("judge")
        .or_default()
        .push_back(verdict("FAIL", &["docs are thin"]));
    p.request(json!({ "run": { "action": "reverify", "id": id } }));
    let run = wait_final(&p, &id);
    let after: Vec<Option<&str>> = fake.requests()[before..].iter().map(phase_of).collect();
    assert!(
        after.iter().all(|p| *p == Some("judge") || p.is_none()),
        "{after:?}"
    );
    assert_eq!(run["phase"], "failed");
    assert_eq!(run["verdict"]["issues"], json!(["docs are thin"]));

    // Force a repair even after a PASS.
    p.request(json!({ "run": { "action": "reverify", "id": id } }));
    assert_eq!(wait_final(&p, &id)["phase"], "complete");
    p.request(json!({ "run": { "action": "repair", "id": id } }));
    let run = wait_final(&p, &id);
    assert_eq!(run["repair_cycles"], 1);
    assert_eq!(run["phase"], "complete");
    // A finished run replays whole to a late subscriber, then the stream ends.
    let out = p.ai(&["--json", "watch", &id]);
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(lines, run["events"].as_array().unwrap().len());
    // Export is the complete report.
    let out = p.ai(&["run", "export", &id]);
    let exported: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(exported["id"], json!(id));
    assert!(exported["verification"]["results"].is_array());
    let missing = p.send(r#"{"run": {"action": "export", "id": "run_20260101_000000_00000000"}}"#);
    assert_eq!(missing.error.unwrap().code.as_str(), "not_found");
}

#[test]
fn an_automation_starts_a_run_and_the_run_knows_who_started_it() {
    let fake = FakeAnthropic::with_script(|r| {
        let body = r.body_text();
        if body.contains("memory assistant of ai-smartness") {
            return Some(if body.contains("ACTIONS_EXECUTED") {
                json_reply(json!({ "preText": "Started it.", "completed": true }))
            } else {
                json_reply(json!({ "preText": "Starting a run.",
                    "actionCommands": [{ "type": "START_RUN", "params": { "task": "Check that the readme exists" } }] }))
            });
        }
        phase_of(r).map(default_reply)
    });
    let p = project(&fake, json!({ "test_command": "test -f README.md" }));
    let auto = p.request(json!({ "automation": { "action": "create", "name": "Nightly check", "prompt": "Start the nightly check." } }));
    let session = p.request(json!({ "automation": { "action": "run", "id": auto["id"] } }))
        ["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(40);
    let id = loop {
        let runs = p.request(json!({ "run": { "action": "list" } }));
        if let Some(id) = runs["runs"][0]["id"].as_str() {
            assert_eq!(runs["runs"][0]["started_by"], json!(session));
            break id.to_string();
        }
        assert!(Instant::now() < deadline, "no run started: {}", p.log());
        std::thread::sleep(Duration::from_millis(25));
    };
    let run = wait_final(&p, &id);
    assert_eq!(run["phase"], "complete");
    assert_eq!(run["task"], "Check that the readme exists");
    let s = loop {
        let s = p.request(json!({ "session": { "id": session } }));
        if s["state"] == "ended" {
            break s;
        }
        assert!(Instant::now() < deadline, "the automation never ended");
        std::thread::sleep(Duration::from_millis(25));
    };
    assert_eq!(s["end_reason"], "COMPLETED");
    assert!(s.to_string().contains(&format!("run {id} started")));
}

#[test]
fn a_sandboxed_run_leaves_the_workspace_untouched() {
    let (fake, _) = model(vec![
        (
            "execute",
            tool(
                "write_file",
                json!({ "path": "greeting.txt", "content": "hello world\n" }),
            ),
        ),
        ("execute", tool("git_status", json!({}))),
        ("execute", Reply::text("Wrote it in the copy.")),
    ]);
    let p = project(&fake, json!({ "test_command": GREETING_TEST }));
    let id = p.request(
        json!({ "run": { "action": "start", "task": "Greet", "sandbox": true, "write": true } }),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = wait_final(&p, &id);
    assert_eq!(run["phase"], "complete", "{run:#}");
    assert_eq!(run["mode"], "sandbox");
    let copy = std::path::PathBuf::from(run["workspace"].as_str().unwrap());
    assert_ne!(copy, p.root());
    assert_eq!(run["copied_from"], json!(p.root().display().to_string()));
    assert_eq!(
        std::fs::read_to_string(copy.join("greeting.txt")).unwrap(),
        "hello world\n"
    );
    assert!(
        !p.root().join("greeting.txt").exists(),
        "the real workspace is untouched"
    );
    let calls = run["tool_calls"].as_array().unwrap();
    assert_eq!(calls[0]["result"]["meta"]["sandbox"], true);
    // git works in the copy (its .git came along).
    assert!(calls[1]["result"]["data"]["stdout"]
        .as_str()
        .unwrap()
        .contains("greeting.txt"));
    std::fs::remove_dir_all(copy).ok();
}

/// Each sandbox copy is a whole workspace: only the newest `keep_sandboxes` stay. A run whose
/// copy was removed says so instead of re-verifying in a folder that is gone.
#[test]
fn only_the_newest_sandbox_copies_are_kept() {
    let (fake, _) = model(vec![]);
    let p = project(
        &fake,
        json!({ "test_command": "test -f README.md", "keep_sandboxes": 1 }),
    );
    let start = || {
        let r =
            p.request(json!({ "run": { "action": "start", "task": "Check", "sandbox": true } }));
        wait_final(&p, r["id"].as_str().unwrap())
    };
    let first = start();
    let first_copy = std::path::PathBuf::from(first["workspace"].as_str().unwrap());
    assert!(first_copy.join("README.md").exists());
    let second = start();
    let second_copy = std::path::PathBuf::from(second["workspace"].as_str().unwrap());
    assert_eq!(second["phase"], "complete", "{second:#}");
    assert!(
        second_copy.join("README.md").exists(),
        "the newest copy stays"
    );
    assert!(!first_copy.exists(), "the older copy is removed");
    let first_id = first["id"].as_str().unwrap();
    let first = export(&p, first_id);
    assert!(first["sandbox_removed_at"].is_string(), "{first:#}");
    let out = p.ai(&["run", "reverify", first_id]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("keep_sandboxes"), "{err}");
    assert_eq!(export(&p, first_id)["phase"], "complete", "left as it was");
    std::fs::remove_dir_all(second_copy).ok();
}

#[test]
fn a_run_cut_short_by_a_restart_ends_failed_and_its_watchers_are_released() {
    let (fake, _) = model(vec![]);
    let mut p = project(&fake, json!({ "test_command": "test -f README.md" }));
    let id = p.request(json!({ "run": { "action": "start", "task": "Check the readme" } }))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut run = wait_final(&p, &id);
    p.stop();
    // As a kill in the middle of EXECUTE would have left it.
    run["phase"] = json!("execute");
    run["finished_at"] = Value::Null;
    let file = p.paths.db().join(format!("runs/{id}.json"));
    std::fs::write(&file, run.to_string()).unwrap();
    p.start_with_env(&[(KEY_VAR, KEY)]);
    let after = export(&p, &id);
    assert_eq!(after["phase"], "failed");
    assert!(after["error"].as_str().unwrap().contains("interrupted"));
    let events = after["events"].as_array().unwrap();
    assert_eq!(events.last().unwrap()["type"], "complete");
    // A watcher gets the whole story and the end, not a hang.
    let out = p.ai(&["--json", "watch", &id]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        events.len()
    );
}
