//! The assistant end to end: a real daemon, the fake Anthropic server on loopback playing a
//! scripted model, and the socket or the `ai` CLI playing the person. Waits poll with a
//! deadline; nothing sleeps for a fixed time to let something happen.

use crate::fake_anthropic::{FakeAnthropic, Recorded, Reply};
use crate::harness::{Project, TOPICS};
use chrono::{Duration as CDuration, TimeZone, Utc};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY_VAR: &str = "AIT_ORCH_KEY";
const KEY: &str = "sk-ant-api03-AITEST-orchestrator-3b1f";
const DEADLINE: Duration = Duration::from_secs(40);

/// Whether a request comes from the assistant (not extraction or the like).
fn is_orch(r: &Recorded) -> bool {
    r.body_text().contains("memory assistant of ai-smartness")
}

type Step = Box<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// A model that answers orchestrator calls with `steps` in order (then `{"preText": "…"}`),
/// and everything else with the defaults.
fn scripted(steps: Vec<Step>) -> (FakeAnthropic, Arc<AtomicUsize>) {
    let queue = Mutex::new(VecDeque::from(steps));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let fake = FakeAnthropic::with_script(move |r| {
        if !is_orch(r) {
            return None;
        }
        c.fetch_add(1, Ordering::SeqCst);
        let step = queue.lock().unwrap().pop_front();
        Some(match step {
            Some(f) => f(r),
            None => say("(script over)"),
        })
    });
    (fake, calls)
}

fn reply(v: Value) -> Reply {
    Reply::text(v.to_string())
}

fn say(text: &str) -> Reply {
    reply(json!({ "preText": text }))
}

fn step(v: Value) -> Step {
    Box::new(move |_| reply(v.clone()))
}

/// A project with the fake model and these orchestrator settings, not yet started.
fn project(fake: &FakeAnthropic, orchestrator: Value) -> Project {
    let p = Project::new();
    p.use_fake_model(&fake.base_url(), KEY_VAR);
    p.edit_config(|c| {
        for (k, v) in orchestrator.as_object().unwrap() {
            c["orchestrator"][k] = v.clone();
        }
    });
    p
}

fn start(p: &mut Project) {
    p.start_with_env(&[(KEY_VAR, KEY)]);
}

fn session(p: &Project, id: &str) -> Value {
    p.request(json!({ "session": { "id": id } }))
}

fn wait_for<T>(p: &Project, what: &str, f: impl FnMut() -> Option<T>) -> T {
    p.wait_for(what, DEADLINE, f)
}

fn wait_state(p: &Project, id: &str, state: &str) -> Value {
    wait_for(p, &format!("{id} to be {state}"), || {
        let s = session(p, id);
        (s["state"] == state).then_some(s)
    })
}

/// The system messages of a session, as (kind, summary, formatted data).
fn system_messages(s: &Value) -> Vec<(String, String, String)> {
    s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["body"]["variant"] == "SYSTEM")
        .map(|m| {
            let sm = &m["body"]["system_message"];
            (
                sm["kind"].as_str().unwrap_or_default().to_string(),
                sm["summary"].as_str().unwrap_or_default().to_string(),
                sm["formatted_data"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

fn kinds(s: &Value) -> Vec<String> {
    system_messages(s).into_iter().map(|m| m.0).collect()
}

fn thread_with(p: &Project, needle: &str) -> String {
    for t in p.threads("all") {
        let id = t["id"].as_str().unwrap();
        let d = p.request(json!({ "thread": { "id": id } }));
        if d["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"].as_str().unwrap_or("").contains(needle))
        {
            return id.to_string();
        }
    }
    panic!("no thread holds {needle:?}")
}

/// The session a chat or automation run reply names.
fn session_id(reply: &Value) -> String {
    reply["session_id"].as_str().unwrap().to_string()
}

fn chat(p: &Project, message: &str) -> Value {
    p.request(json!({ "chat": { "message": message } }))
}

fn create_automation(p: &Project, name: &str, prompt: &str) -> String {
    let a =
        p.request(json!({ "automation": { "action": "create", "name": name, "prompt": prompt } }));
    a["id"].as_str().unwrap().to_string()
}

fn run_automation(p: &Project, id: &str) -> Value {
    p.request(json!({ "automation": { "action": "run", "id": id } }))
}

#[test]
fn a_delayed_scheduled_run_queries_its_own_day_asks_approval_and_completes() {
    // The run stands for today 03:00 (or yesterday's, before 03:00) but starts now, late:
    // "-1_DAY" must mean the day before the scheduled time, not before now.
    let now = Utc::now();
    let today3 = now.date_naive().and_hms_opt(3, 0, 0).unwrap().and_utc();
    let scheduled = if now >= today3 {
        today3
    } else {
        today3 - CDuration::days(1)
    };
    let in_day = scheduled - CDuration::hours(15); // noon of the day before
    let ids: Arc<Mutex<(String, String)>> = Arc::default();
    let seen = ids.clone();
    let (fake, _) = scripted(vec![
        step(json!({ "preText": "Looking at yesterday.",
                     "dataCommands": [{ "type": "THREADS_IN_PERIOD", "params": { "period": "-1_DAY" } }] })),
        Box::new(move |_| {
            let a = seen.lock().unwrap().0.clone();
            reply(json!({ "preText": "Renaming it.", "postText": "Renamed.",
                          "actionCommands": [{ "type": "RENAME_THREAD",
                                               "params": { "thread_id": a, "title": "Yesterday: pool timeouts" } }] }))
        }),
        step(json!({ "preText": "Done.", "completed": true })),
    ]);
    let mut p = project(&fake, json!({ "validate_actions": ["RENAME_THREAD"] }));
    start(&mut p);
    p.request(json!({ "tool": "Bash", "content": TOPICS[0], "at": in_day.to_rfc3339() }));
    p.request(json!({ "tool": "Read", "content": TOPICS[1], "at": now.to_rfc3339() }));
    p.sync();
    let a = thread_with(&p, "max_connections");
    let b = thread_with(&p, &TOPICS[1][..30]);
    assert_ne!(a, b);
    *ids.lock().unwrap() = (a.clone(), b.clone());
    p.stop();

    // An automation created three days ago, scheduled daily at 03:00, never run.
    let id = "automation_20260101_000000_0000abcd";
    let created = Utc.timestamp_opt(now.timestamp() - 3 * 86_400, 0).unwrap();
    let automation = json!({
        "id": id, "name": "Daily review", "prompt": "Review yesterday's threads and give the main one a clear title.",
        "schedule": "0 3 * * *", "timezone": "UTC", "enabled": true, "created_at": created.to_rfc3339(),
    });
    let dir = p.paths.db().join("automations");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.json")), automation.to_string()).unwrap();
    start(&mut p);

    let run = wait_for(&p, "the scheduled run", || {
        let v = p.request(json!({ "sessions": { "kind": "AUTOMATION" } }));
        v["sessions"][0]["id"].as_str().map(str::to_string)
    });
    let s = wait_state(&p, &run, "waiting_validation");
    assert_eq!(s["trigger"], "SCHEDULED");
    assert_eq!(
        s["scheduled_execution_time"].as_str().unwrap()[..19],
        scheduled.to_rfc3339()[..19]
    );
    let sys = system_messages(&s);
    let data = &sys.iter().find(|m| m.0 == "DATA_ADDED").unwrap().2;
    assert!(
        data.contains(&a),
        "the scheduled day's thread is listed: {data}"
    );
    assert!(!data.contains(&b), "today's thread is not: {data}");
    let fallback = sys.iter().find(|m| m.0 == "VALIDATION_CANCELLED").unwrap();
    assert!(fallback.1.contains("RENAME_THREAD"), "{fallback:?}");

    // The person approves from the CLI; the run goes on and completes.
    let out = p.ai(&["approve", &run]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Done."), "{stdout}");
    let s = wait_state(&p, &run, "ended");
    assert_eq!(s["end_reason"], "COMPLETED");
    assert!(!kinds(&s).contains(&"VALIDATION_CANCELLED".to_string()));
    let post = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["body"]["variant"] == "AI_TEXT")
        .unwrap();
    assert_eq!(post["body"]["text_content"], "Renamed.");
    assert_eq!(post["in_prompt"], false);
    let t = p.request(json!({ "thread": { "id": a } }));
    assert_eq!(t["title"], "Yesterday: pool timeouts");
    // The last call saw the actions' results, not the fallback nor the postText.
    let last = fake.requests().into_iter().rfind(is_orch).unwrap();
    let text = last.messages_text();
    assert!(text.contains("ACTIONS_EXECUTED"), "{text}");
    assert!(!text.contains("did not approve"), "{text}");
    // "Renamed." only inside the model's own reply, never as a message of its own.
    assert_eq!(text.matches("Renamed.").count(), 1, "{text}");
    let auto = p.request(json!({ "automation": { "action": "show", "id": id } }));
    assert_eq!(
        auto["last_scheduled_time"].as_str().unwrap()[..19],
        scheduled.to_rfc3339()[..19]
    );
}

#[test]
fn a_run_killed_mid_call_resumes_transparently_after_restart() {
    let in_flight = Arc::new(AtomicBool::new(false));
    let flag = in_flight.clone();
    let first = Arc::new(AtomicBool::new(true));
    let (fake, _) = scripted(vec![
        step(
            json!({ "preText": "Overview first.", "dataCommands": [{ "type": "MEMORY_OVERVIEW", "params": {} }] }),
        ),
        Box::new(move |_| {
            if first.swap(false, Ordering::SeqCst) {
                flag.store(true, Ordering::SeqCst);
                // The daemon dies while the model "thinks"; this answer goes nowhere.
                std::thread::sleep(Duration::from_secs(8));
            }
            reply(json!({ "preText": "Nothing to do.", "completed": true }))
        }),
        step(json!({ "preText": "Nothing to do.", "completed": true })),
    ]);
    let mut p = project(&fake, json!({}));
    start(&mut p);
    let auto = create_automation(&p, "Tidy", "Tidy the memory.");
    let run = session_id(&run_automation(&p, &auto));
    wait_for(&p, "the second call", || {
        in_flight.load(Ordering::SeqCst).then_some(())
    });
    p.kill9();
    start(&mut p);
    let s = wait_state(&p, &run, "ended");
    assert_eq!(s["end_reason"], "COMPLETED", "{s:#}");
    let sys = kinds(&s);
    assert_eq!(
        sys.iter().filter(|k| *k == "DATA_ADDED").count(),
        1,
        "{sys:?}"
    );
    // Transparent: no message says it resumed; the repeated call carries the same history.
    let orch: Vec<Recorded> = fake.requests().into_iter().filter(is_orch).collect();
    assert_eq!(orch.len(), 3);
    assert_eq!(orch[1].messages(), orch[2].messages());
    assert!(!orch[2].messages_text().to_lowercase().contains("resum"));
}

#[test]
fn a_chat_goes_before_queued_automations_and_replaces_the_queued_chat() {
    let gate = Arc::new(AtomicBool::new(false));
    let open = gate.clone();
    let (fake, _) = scripted(vec![
        // The first automation run holds the slot until the gate opens.
        Box::new(move |_| {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !open.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            reply(json!({ "preText": "Done.", "completed": true }))
        }),
        // Then the second chat.
        Box::new(|r| {
            assert!(r.messages_text().contains("second question"));
            say("Answer to the second question.")
        }),
        // Then the second automation, once the quiet chat gave the slot up.
        step(json!({ "preText": "Done too.", "completed": true })),
    ]);
    let mut p = project(&fake, json!({ "chat_inactivity_secs": 1 }));
    start(&mut p);
    let a1 = create_automation(&p, "First", "First task.");
    let a2 = create_automation(&p, "Second", "Second task.");
    let run1 = session_id(&run_automation(&p, &a1));
    wait_state(&p, &run1, "running");

    let c1 = chat(&p, "first question");
    assert_eq!(c1["state"], "queued");
    assert_eq!(c1["queue_position"], 1);
    let run2 = run_automation(&p, &a2);
    assert_eq!(
        run2["queue_position"], 2,
        "a manual run queues behind the chat"
    );
    let run2 = session_id(&run2);
    let c2 = chat(&p, "second question");
    assert_eq!(c2["queue_position"], 1, "a chat always goes first");
    let c1 = session_id(&c1);
    let c2 = session_id(&c2);
    let list = p.request(json!({ "sessions": {} }));
    assert_eq!(list["active"], json!(run1));
    assert_eq!(
        list["queue"],
        json!([c2, run2]),
        "the new chat replaced the queued one"
    );
    assert_eq!(session(&p, &c1)["state"], "idle");

    gate.store(true, Ordering::SeqCst);
    assert_eq!(wait_state(&p, &run1, "ended")["end_reason"], "COMPLETED");
    let s = wait_for(&p, "the chat's answer", || {
        let s = session(&p, &c2);
        (s["messages"].as_array().unwrap().len() >= 2).then_some(s)
    });
    assert_eq!(
        s["messages"][1]["body"]["ai_message"]["preText"],
        "Answer to the second question."
    );
    // The chat goes quiet: after its inactivity the slot goes to the queued run.
    assert_eq!(wait_state(&p, &run2, "ended")["end_reason"], "COMPLETED");
    assert_eq!(
        session(&p, &c1)["messages"].as_array().unwrap().len(),
        1,
        "never answered"
    );
}

/// A model that repeats one reply forever.
fn forever(v: Value) -> (FakeAnthropic, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let fake = FakeAnthropic::with_script(move |r| {
        if !is_orch(r) {
            return None;
        }
        c.fetch_add(1, Ordering::SeqCst);
        Some(match &v {
            Value::String(s) => Reply::text(s.clone()),
            v => reply(v.clone()),
        })
    });
    (fake, calls)
}

fn last_limit(s: &Value) -> String {
    system_messages(s)
        .into_iter()
        .rfind(|m| m.0 == "LIMIT_REACHED")
        .map(|m| m.1)
        .unwrap_or_default()
}

#[test]
fn chat_limits_stop_data_queries_action_retries_and_format_errors() {
    // Data queries: 3 in a row, then the 4th reply is refused.
    let (fake, calls) = forever(
        json!({ "preText": "More.", "dataCommands": [{ "type": "LIST_RULES", "params": {} }] }),
    );
    let mut p = project(&fake, json!({}));
    start(&mut p);
    let s = chat(&p, "dig");
    let id = session_id(&s);
    let s = session(&p, &id);
    assert!(last_limit(&s).contains("3 data queries"), "{s:#}");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(s["state"], "active", "a chat stays for the person");

    // Actions that keep failing (an unknown thread): 1 try + 3 retries.
    calls.store(0, Ordering::SeqCst);
    fake.set_script({
        let calls = calls.clone();
        move |r| {
            is_orch(r).then(|| {
                calls.fetch_add(1, Ordering::SeqCst);
                reply(json!({ "preText": "Suspending.", "actionCommands": [{ "type": "SUSPEND_THREAD", "params": { "thread_id": "thread_20260101_000000_deadbeef" } }] }))
            })
        }
    });
    let s = chat(&p, "suspend it");
    let s = session(&p, &session_id(&s));
    assert!(last_limit(&s).contains("actions failed 3 times"), "{s:#}");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let report = system_messages(&s)
        .into_iter()
        .find(|m| m.0 == "ACTIONS_EXECUTED")
        .unwrap();
    assert!(
        report.2.contains("thread_20260101_000000_deadbeef"),
        "{report:?}"
    );

    // Malformed replies: 1 + 3 corrections, then the invalid-format fallback.
    calls.store(0, Ordering::SeqCst);
    fake.set_script({
        let calls = calls.clone();
        move |r| {
            is_orch(r).then(|| {
                calls.fetch_add(1, Ordering::SeqCst);
                Reply::text("Sure, here you go!")
            })
        }
    });
    let s = chat(&p, "talk");
    let s = session(&p, &session_id(&s));
    assert!(last_limit(&s).contains("3 malformed replies"), "{s:#}");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(kinds(&s).iter().filter(|k| *k == "FORMAT_ERROR").count(), 3);
    let last_ai = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["body"]["variant"] == "AI")
        .unwrap();
    assert!(last_ai["body"]["ai_message"]["preText"]
        .as_str()
        .unwrap()
        .starts_with("ai_response_invalid_format"));
}

#[test]
fn an_automation_stops_at_its_roundtrip_limit() {
    let (fake, calls) = forever(
        json!({ "preText": "More.", "dataCommands": [{ "type": "MEMORY_OVERVIEW", "params": {} }] }),
    );
    let mut p = project(
        &fake,
        json!({ "limits": { "automation_max_autonomous_roundtrips": 3, "automation_max_data_query_iterations": 10 } }),
    );
    start(&mut p);
    let auto = create_automation(&p, "Loop", "Loop forever.");
    let run = session_id(&run_automation(&p, &auto));
    let s = wait_state(&p, &run, "ended");
    assert_eq!(s["end_reason"], "TIMEOUT");
    assert!(last_limit(&s).contains("3 automatic exchanges"), "{s:#}");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[test]
fn a_malformed_reply_is_sent_back_and_corrected() {
    let (fake, _) = scripted(vec![
        Box::new(|_| {
            Reply::text(
                "{\"preText\": \"Hi\", \"dataCommands\": [{\"type\": \"READ_EVERYTHING\"}]}",
            )
        }),
        Box::new(|r| {
            let t = r.messages_text();
            assert!(
                t.contains("FORMAT_ERROR") && t.contains("READ_EVERYTHING"),
                "{t}"
            );
            say("Fixed.")
        }),
    ]);
    let mut p = project(&fake, json!({}));
    start(&mut p);
    let s = chat(&p, "hello");
    let s = session(&p, &session_id(&s));
    assert_eq!(kinds(&s), vec!["FORMAT_ERROR"]);
    let last = s["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["body"]["ai_message"]["preText"], "Fixed.");
}

#[test]
fn an_automation_waits_for_the_network_and_resumes() {
    let failures = Arc::new(AtomicUsize::new(0));
    let f = failures.clone();
    let fake = FakeAnthropic::with_script(move |r| {
        if !is_orch(r) {
            return None;
        }
        // Two whole calls fail (each after the client's own retries), then the model is back.
        if f.fetch_add(1, Ordering::SeqCst) < 6 {
            return Some(Reply::error(529, "overloaded_error", "Overloaded"));
        }
        Some(reply(json!({ "preText": "Back.", "completed": true })))
    });
    let mut p = project(&fake, json!({ "network_retry_secs": 1 }));
    start(&mut p);
    let auto = create_automation(&p, "Net", "Check.");
    let run = session_id(&run_automation(&p, &auto));
    wait_state(&p, &run, "waiting_network");
    // Saved (the state above is the daemon's memory; the file follows within the save).
    let file = p.paths.db().join(format!("sessions/{run}.json"));
    wait_for(&p, "the saved network flag", || {
        let saved: Value = serde_json::from_slice(&std::fs::read(&file).ok()?).ok()?;
        (saved["is_waiting_for_network"] == true).then_some(())
    });
    let s = wait_state(&p, &run, "ended");
    assert_eq!(s["end_reason"], "COMPLETED");
    assert_eq!(kinds(&s), vec!["NETWORK_ERROR"], "one audit message");
    let msgs = s["messages"].as_array().unwrap();
    let audit = msgs
        .iter()
        .find(|m| m["body"]["variant"] == "SYSTEM")
        .unwrap();
    assert_eq!(audit["in_prompt"], false);
    let last = fake.requests().into_iter().rfind(is_orch).unwrap();
    assert!(!last.messages_text().contains("could not be reached"));
}

#[test]
fn a_chat_records_a_network_error_and_stays_active() {
    let fake = FakeAnthropic::with_script(|r| {
        is_orch(r).then(|| Reply::error(401, "authentication_error", "invalid x-api-key"))
    });
    let mut p = project(&fake, json!({}));
    start(&mut p);
    let s = chat(&p, "hello");
    let s = session(&p, &session_id(&s));
    assert_eq!(kinds(&s), vec!["NETWORK_ERROR"]);
    assert_eq!(s["state"], "active");
    assert!(s["end_reason"].is_null());
}

#[test]
fn the_validation_fallback_survives_a_restart_and_goes_on_approval() {
    let (fake, _) = scripted(vec![
        step(
            json!({ "preText": "I will add the rule.", "validationRequest": true, "keepControl": true,
                     "actionCommands": [{ "type": "ADD_RULE", "params": { "text": "Always use tabs in Makefiles." } }] }),
        ),
        Box::new(|r| {
            assert!(r.messages_text().contains("ACTIONS_EXECUTED"));
            say("Rule added.")
        }),
    ]);
    let mut p = project(&fake, json!({}));
    start(&mut p);
    let id = session_id(&chat(&p, "remember: tabs in Makefiles"));
    wait_state(&p, &id, "waiting_validation");
    p.stop();
    start(&mut p);
    let s = wait_state(&p, &id, "waiting_validation");
    assert!(kinds(&s).contains(&"VALIDATION_CANCELLED".to_string()));
    let status = String::from_utf8_lossy(&p.ai(&["status"]).stdout).to_string();
    assert!(
        status.contains(&format!("waiting for you: {id}")),
        "{status}"
    );
    // A chat that waits cannot be talked past.
    let r = p.send(&json!({ "chat": { "message": "hello?", "session": id } }).to_string());
    assert!(!r.ok);
    let out = p.ai(&["--json", "approve", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = wait_for(&p, "the answer", || {
        let s = session(&p, &id);
        (s["messages"].as_array().unwrap().last().unwrap()["body"]["ai_message"]["preText"]
            == "Rule added.")
            .then_some(s)
    });
    assert_eq!(kinds(&s), vec!["ACTIONS_EXECUTED"]);
    let rules = p.ai_json(&["rules"]);
    assert!(
        rules.to_string().contains("Always use tabs in Makefiles."),
        "{rules}"
    );
}

#[test]
fn a_refusal_keeps_the_fallback_and_a_question_takes_an_answer() {
    let (fake, _) = scripted(vec![
        step(json!({ "preText": "Archive it?", "validationRequest": true,
                     "actionCommands": [{ "type": "ADD_RULE", "params": { "text": "Never archive anything at all." } }] })),
        step(
            json!({ "preText": "Which one?", "communicationModule": { "type": "MultipleChoice",
                     "data": { "question": "Keep which?", "options": ["Both", "The newest"] } } }),
        ),
        Box::new(|r| {
            let t = r.messages_text();
            assert!(t.contains("The newest"), "{t}");
            assert!(!t.contains("did not answer"), "{t}");
            say("Keeping the newest.")
        }),
    ]);
    let mut p = project(&fake, json!({}));
    start(&mut p);
    let id = session_id(&chat(&p, "clean up"));
    wait_state(&p, &id, "waiting_validation");
    let r = p.request(json!({ "reject": { "session": id } }));
    assert_eq!(r["state"], "active");
    let s = session(&p, &id);
    assert!(
        kinds(&s).contains(&"VALIDATION_CANCELLED".to_string()),
        "kept as the record"
    );
    assert!(!p.ai_json(&["rules"]).to_string().contains("Never archive"));

    let r = chat_in(&p, &id, "then ask me");
    assert_eq!(r["state"], "waiting_answer");
    let bad = p.send(&json!({ "answer": { "session": id, "choice": "7" } }).to_string());
    assert!(!bad.ok && bad.error.unwrap().message.contains("1 Both"));
    let out = p.ai(&["answer", &id, "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Keeping the newest."));
    let s = session(&p, &id);
    assert!(!kinds(&s).contains(&"COMMUNICATION_CANCELLED".to_string()));
}

fn chat_in(p: &Project, id: &str, message: &str) -> Value {
    p.request(json!({ "chat": { "message": message, "session": id } }))
}

#[test]
fn the_cli_chats_lists_and_manages_automations() {
    let (fake, _) = scripted(vec![
        step(
            json!({ "preText": "Let me look.", "dataCommands": [{ "type": "SEARCH_THREADS", "params": { "query": "database pool" } }] }),
        ),
        Box::new(|r| {
            let t = r.messages_text();
            assert!(t.contains("DATA_ADDED") && t.contains("thread_"), "{t}");
            say("The pool limit is 20.")
        }),
    ]);
    let mut p = project(&fake, json!({}));
    start(&mut p);
    p.capture("Bash", TOPICS[0]);
    p.sync();
    let out = p.ai(&["chat", "what", "about", "the", "database", "pool?"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("assistant: The pool limit is 20."),
        "{stdout}"
    );
    assert!(stdout.contains("looking up: SEARCH_THREADS"), "{stdout}");

    let list = p.ai_json(&["sessions"]);
    let id = list["sessions"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(list["sessions"][0]["kind"], "CHAT");
    let out = p.ai(&["session", &id]);
    let transcript = String::from_utf8_lossy(&out.stdout);
    assert!(
        transcript.contains("you: what about the database pool?"),
        "{transcript}"
    );
    assert!(transcript.contains("[DATA_ADDED]"), "{transcript}");

    let created = p.ai_json(&[
        "automation",
        "create",
        "--name",
        "Weekly",
        "--prompt",
        "Summarise the week.",
        "--schedule",
        "0 9 * * MON",
    ]);
    let aid = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["next_run"]["due"], false);
    let bad = p.ai(&[
        "automation",
        "create",
        "--name",
        "x",
        "--prompt",
        "y",
        "--schedule",
        "61 * * * *",
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("61"));
    // A schedule follows its zone's wall clock; an unknown zone is refused, by name.
    let zoned = p.ai_json(&[
        "automation",
        "create",
        "--name",
        "Paris",
        "--prompt",
        "y",
        "--schedule",
        "0 9 * * *",
        "--tz",
        "Europe/Paris",
    ]);
    assert_eq!(zoned["timezone"], "Europe/Paris");
    let at = zoned["next_run"]["at"].as_str().unwrap();
    assert!(
        at.contains("T07:00:00") || at.contains("T08:00:00"),
        "{zoned}"
    );
    let shown = String::from_utf8_lossy(
        &p.ai(&["automation", "show", zoned["id"].as_str().unwrap()])
            .stdout,
    )
    .to_string();
    assert!(
        shown.contains("schedule: 0 9 * * * (Europe/Paris)"),
        "{shown}"
    );
    assert!(p
        .ai(&["automation", "delete", zoned["id"].as_str().unwrap()])
        .status
        .success());
    let bad_zone = p.ai(&[
        "automation",
        "create",
        "--name",
        "x",
        "--prompt",
        "y",
        "--schedule",
        "0 9 * * *",
        "--tz",
        "Mars/Olympus",
    ]);
    assert!(!bad_zone.status.success());
    assert!(String::from_utf8_lossy(&bad_zone.stderr).contains("Mars/Olympus"));
    let table = String::from_utf8_lossy(&p.ai(&["automation", "list"]).stdout).to_string();
    assert!(
        table.contains("Weekly") && table.contains("0 9 * * MON"),
        "{table}"
    );
    assert_eq!(
        p.ai_json(&["automation", "disable", &aid])["enabled"],
        false
    );
    assert_eq!(p.ai_json(&["automation", "enable", &aid])["enabled"], true);
    let shown = p.ai_json(&["automation", "show", &aid]);
    assert_eq!(shown["runs"], json!([]));
    assert!(p.ai(&["automation", "delete", &aid]).status.success());
    assert_eq!(p.ai_json(&["automation", "list"])["automations"], json!([]));
    let missing = p.ai(&["automation", "show", &aid]);
    assert!(!missing.status.success());
    // Unknown sessions are clear errors.
    let r = p.send(r#"{"approve": {"session": "session_20260101_000000_00000000"}}"#);
    assert_eq!(r.error.unwrap().code.as_str(), "not_found");
}

#[test]
fn a_follower_gets_the_rounds_events_in_order() {
    let (fake, _) = scripted(vec![
        step(
            json!({ "preText": "Looking.", "dataCommands": [{ "type": "LIST_RULES", "params": {} }] }),
        ),
        step(json!({ "preText": "No rules yet." })),
    ]);
    let mut p = project(&fake, json!({}));
    start(&mut p);
    let mut watcher = p.client();
    let head = watcher
        .request(&ai_smartness::protocol::parse_request(br#"{"watch": {}}"#).unwrap())
        .unwrap();
    assert!(head.ok);
    let mut c = p.client();
    let r = c
        .request(
            &ai_smartness::protocol::parse_request(
                br#"{"chat": {"message": "any rules?", "follow": true}}"#,
            )
            .unwrap(),
        )
        .unwrap();
    assert!(r.ok);
    let mut seen = Vec::new();
    while let Some(e) = c.next_line().unwrap() {
        let done = e["event"] == "round_ended";
        seen.push(e);
        if done {
            break;
        }
    }
    let variants: Vec<String> = seen
        .iter()
        .filter(|e| e["event"] == "message")
        .map(|e| {
            e["message"]["body"]["variant"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(variants, vec!["AI", "SYSTEM", "AI"]);
    // The watcher saw the same, plus the user's message first.
    let mut all = Vec::new();
    while all.len() < 5 {
        let e = watcher.next_line().unwrap().unwrap();
        if e["event"] == "message" {
            all.push(
                e["message"]["body"]["variant"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        if e["event"] == "round_ended" {
            break;
        }
    }
    assert_eq!(all, vec!["USER_TEXT", "AI", "SYSTEM", "AI"]);
}

#[test]
fn the_watchdog_ends_an_inactive_automation() {
    let (fake, _) = scripted(vec![Box::new(|_| {
        // A model that never finishes in time.
        std::thread::sleep(Duration::from_secs(15));
        say("too late")
    })]);
    let mut p = project(
        &fake,
        json!({ "limits": { "automation_max_inactivity_secs": 1 } }),
    );
    start(&mut p);
    let auto = create_automation(&p, "Slow", "Take your time.");
    let run = session_id(&run_automation(&p, &auto));
    let s = wait_state(&p, &run, "ended");
    assert_eq!(s["end_reason"], "TIMEOUT");
    let msgs = s["messages"].as_array().unwrap();
    let timeout = msgs
        .iter()
        .find(|m| m["body"]["system_message"]["kind"] == "SESSION_TIMEOUT")
        .expect("a SESSION_TIMEOUT note");
    assert_eq!(timeout["in_prompt"], false, "kept for audit only");
    // The slot is free again: another run starts at once.
    let next = run_automation(&p, &auto);
    assert!(next["queue_position"].is_null(), "{next}");
}
