//! A real daemon with `llm.provider = "anthropic"` and `base_url` on the fake Anthropic server
//! (the key in the daemon's environment, named by `api_key_env`): the hooks' path stays local
//! and immediate, the LLM's refinements land later. Background results are awaited by polling
//! with a deadline, never by sleeping.

use crate::fake_anthropic::{FakeAnthropic, Recorded, Reply};
use crate::harness::{Project, TOPICS};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The variable the config names, and its value (a key-shaped secret that must never be
/// written anywhere by the daemon).
const KEY_VAR: &str = "AIT_FAKE_ANTHROPIC_KEY";
const KEY: &str = "sk-ant-api03-AITEST-never-written-7f3c9e1b5d";
/// How long a background result may take to appear.
const DEADLINE: Duration = Duration::from_secs(30);
/// How long the fake model "thinks" where a test shows that nobody waits for it.
const LLM_THINKS: Duration = Duration::from_secs(4);

/// What the daemon asked, from the prompt it sent.
fn llm_kind(r: &Recorded) -> &'static str {
    let body = r.body_text();
    if body.contains("key_concepts") {
        "extraction"
    } else if body.contains("decisions_made") {
        "synthesis"
    } else if body.contains("NEXT CONTENT") {
        "coherence"
    } else if body.contains("is dormant") {
        "reactivation"
    } else if body.contains("PAIR 1:") {
        "relations"
    } else {
        "other"
    }
}

/// The corrective retry carries the bad answer and the parse error after the first prompt.
fn is_retry(r: &Recorded) -> bool {
    r.messages().len() == 3
}

fn extraction_json(title: &str) -> String {
    json!({
        "title": title,
        "intent": "Understand the failure",
        "summary": format!("LLM summary about {title}."),
        "subjects": ["export pipeline", "zephyrwave"],
        "questions": [],
        "decisions": ["LLM decision: keep the exporter"],
        "key_concepts": ["ZephyrExporter"]
    })
    .to_string()
}

/// Writes the `llm` section of the project's config (the rest stays).
fn configure_llm(p: &Project, llm: Value) {
    let path = p.paths.config();
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for (k, v) in llm.as_object().unwrap() {
        config["llm"][k] = v.clone();
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
}

/// A project whose daemon uses the fake server, started with the key in its environment.
fn project_on(fake: &FakeAnthropic) -> Project {
    project_with(json!({
        "provider": "anthropic",
        "base_url": fake.base_url(),
        "api_key_env": KEY_VAR,
    }))
}

fn project_with(llm: Value) -> Project {
    let mut p = Project::new();
    configure_llm(&p, llm);
    p.start_with_env(&[(KEY_VAR, KEY)]);
    p
}

/// Polls `f` until it gives a value, or panics with `what` and the daemon's log.
fn wait_for<T>(p: &Project, what: &str, f: impl FnMut() -> Option<T>) -> T {
    p.wait_for(what, DEADLINE, f)
}

fn thread_of(p: &Project, needle: &str) -> Value {
    p.threads("all")
        .into_iter()
        .find(|t| {
            let id = t["id"].as_str().unwrap();
            let d = p.request(json!({ "thread": { "id": id } }));
            d["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["content"].as_str().unwrap_or("").contains(needle))
        })
        .unwrap_or_else(|| panic!("no thread holds {needle:?}"))
}

fn title_of(p: &Project, id: &str) -> String {
    p.request(json!({ "thread": { "id": id } }))["title"]
        .as_str()
        .unwrap()
        .to_string()
}

fn status_llm(p: &Project) -> Value {
    p.ai_json(&["status"])["llm"].clone()
}

/// The JSON lines of the `llm` target in the daemon's log.
fn llm_events(p: &Project, event: &str) -> Vec<Value> {
    p.log()
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == event)
        .collect()
}

#[test]
fn llm_capture_is_acked_at_once_and_the_thread_later_takes_the_llm_title() {
    // The model takes its time: the capture must not wait for it.
    let fake = FakeAnthropic::with_script(|r| match llm_kind(r) {
        "extraction" => {
            std::thread::sleep(LLM_THINKS);
            Some(Reply::text(extraction_json("Zephyrwave Export Pipeline")))
        }
        _ => None,
    });
    let p = project_on(&fake);
    let started = Instant::now();
    let ack = p.capture("Bash", TOPICS[0]);
    let acked_in = started.elapsed();
    assert_eq!(ack["queued"], true);
    p.sync();
    let synced_in = started.elapsed();
    assert!(
        synced_in < LLM_THINKS - Duration::from_secs(1),
        "the capture waited for the LLM: acked in {acked_in:?}, processed in {synced_in:?}"
    );
    let t = thread_of(&p, "max_connections");
    let id = t["id"].as_str().unwrap().to_string();
    let local = t["title"].as_str().unwrap().to_string();
    assert_ne!(
        local, "Zephyrwave Export Pipeline",
        "the local title comes first"
    );

    let title = wait_for(&p, "the LLM title", || {
        Some(title_of(&p, &id)).filter(|t| t == "Zephyrwave Export Pipeline")
    });
    assert_eq!(title, "Zephyrwave Export Pipeline");
    let d = p.request(json!({ "thread": { "id": &id } }));
    assert_eq!(
        d["summary"],
        "LLM summary about Zephyrwave Export Pipeline."
    );
    assert_eq!(d["topics"][0], "export pipeline");
    assert!(d["decisions"]
        .as_array()
        .unwrap()
        .contains(&json!("LLM decision: keep the exporter")));
    assert_eq!(d["messages"][0]["metadata"]["extractor"], "llm");

    // The request: our extraction prompt for a shell command, the cleaned content, the key.
    let req = fake
        .requests()
        .into_iter()
        .find(|r| llm_kind(r) == "extraction")
        .unwrap();
    assert_eq!(req.header("x-api-key"), Some(KEY));
    let text = req.messages_text();
    assert!(text.contains("the output of a shell command"), "{text}");
    assert!(text.contains("max_connections is 20"), "{text}");

    // Saved like any edit: after a restart the LLM title is still there.
    let mut p = p;
    p.stop();
    p.start_with_env(&[(KEY_VAR, KEY)]);
    assert_eq!(title_of(&p, &id), "Zephyrwave Export Pipeline");
}

#[test]
fn llm_malformed_answer_is_corrected_once_and_malformed_twice_keeps_the_local_extraction() {
    let fake = FakeAnthropic::with_script(|r| {
        if llm_kind(r) != "extraction" {
            return None;
        }
        if r.messages_text().contains("Kubernetes") {
            // Never valid: prose around the JSON.
            return Some(Reply::text(format!(
                "Sure! Here is the JSON: {}",
                extraction_json("Never Used Title")
            )));
        }
        Some(Reply::text(if is_retry(r) {
            extraction_json("Corrected Pool Title")
        } else {
            "{\"title\": \"Broken".to_string()
        }))
    });
    let p = project_on(&fake);
    p.capture("Bash", TOPICS[2]);
    p.sync();
    let kube = thread_of(&p, "readiness probe");
    let kube_id = kube["id"].as_str().unwrap().to_string();
    let kube_local = kube["title"].as_str().unwrap().to_string();
    p.capture("Bash", TOPICS[0]);
    p.sync();
    let pool_id = thread_of(&p, "max_connections")["id"]
        .as_str()
        .unwrap()
        .to_string();

    let title = wait_for(&p, "the corrected title", || {
        Some(title_of(&p, &pool_id)).filter(|t| t == "Corrected Pool Title")
    });
    assert_eq!(title, "Corrected Pool Title");
    // The retry showed the model its answer and what was wrong with it.
    let retry = fake
        .requests()
        .into_iter()
        .find(|r| {
            llm_kind(r) == "extraction" && is_retry(r) && !r.messages_text().contains("Kubernetes")
        })
        .unwrap();
    let msgs = retry.message_strings();
    assert_eq!(msgs[1], "{\"title\": \"Broken");
    assert!(msgs[2].contains("could not be used"), "{msgs:?}");

    // The Kubernetes capture: malformed twice, so its local extraction stays.
    wait_for(&p, "the extraction kept local", || {
        (status_llm(&p)["jobs"]["extractions_kept_local"] == 1).then_some(())
    });
    assert_eq!(title_of(&p, &kube_id), kube_local);
    let kube_calls = fake
        .requests()
        .into_iter()
        .filter(|r| llm_kind(r) == "extraction" && r.messages_text().contains("Kubernetes"))
        .count();
    assert_eq!(kube_calls, 2, "one corrective retry, no more");
    let malformed = llm_events(&p, "malformed_json");
    assert!(
        malformed.iter().any(|e| e["corrected"] == true),
        "{malformed:?}"
    );
    assert!(malformed
        .iter()
        .any(|e| e["corrected"] == false && e["attempt"] == 2));
    assert!(malformed
        .iter()
        .all(|e| e["raw"].as_str().unwrap().chars().count() <= 500));
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn llm_provider_down_keeps_local_results_and_health_says_it_does_not_answer() {
    let p = project_with(json!({
        "provider": "anthropic",
        "base_url": format!("http://127.0.0.1:{}", closed_port()),
        "api_key_env": KEY_VAR,
    }));
    p.capture("Bash", TOPICS[1]);
    p.sync();
    let t = thread_of(&p, "useMemo");
    assert!(!t["title"].as_str().unwrap().is_empty(), "a local title");

    let health = wait_for(&p, "health to report the provider down", || {
        let h = p.ai_json(&["health"]);
        (h["llm"]["answers"] == false).then_some(h)
    });
    assert_eq!(health["llm"]["provider"], "anthropic");
    assert!(
        health["llm"]["error"].as_str().unwrap().contains("network"),
        "{health}"
    );
    let started = Instant::now();
    let out = p.ai(&["health"]);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "health stays fast"
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("does not answer"), "{text}");

    // The extraction failed after its retries; the local one stays and the daemon works on.
    wait_for(&p, "the failed extraction", || {
        (status_llm(&p)["jobs"]["extractions_kept_local"] == 1).then_some(())
    });
    assert_eq!(
        title_of(&p, t["id"].as_str().unwrap()),
        t["title"].as_str().unwrap()
    );
    p.capture("Bash", TOPICS[3]);
    p.sync();
    thread_of(&p, "toml_edit");
    let failed = llm_events(&p, "llm_call");
    assert!(
        failed
            .iter()
            .any(|e| e["outcome"] == "error" && e["error_kind"] == "network"),
        "{failed:?}"
    );
    assert!(
        !llm_events(&p, "llm_retry").is_empty(),
        "retried with backoff"
    );
}

#[test]
fn llm_status_shows_usage_cost_and_limits() {
    let fake = FakeAnthropic::with_script(|r| {
        (llm_kind(r) == "extraction").then(|| Reply::text(extraction_json("Pool Sizing")))
    });
    let p = project_on(&fake);
    p.capture("Bash", TOPICS[0]);
    p.sync();
    let llm = wait_for(&p, "a recorded call", || {
        let l = status_llm(&p);
        (l["jobs"]["extractions"] == 1).then_some(l)
    });
    assert_eq!(llm["provider"], "anthropic");
    assert_eq!(llm["model"], "claude-haiku-5-5");
    let u = &llm["usage"];
    assert!(u["today"]["calls"].as_u64().unwrap() >= 1, "{u}");
    assert!(u["today"]["input_tokens"].as_u64().unwrap() > 0, "{u}");
    assert!(u["today"]["cost_usd"].as_f64().unwrap() > 0.0, "{u}");
    assert!(u["total"]["calls"].as_u64().unwrap() >= 1, "{u}");
    assert_eq!(u["limits"]["max_tokens_per_call"], 8000);
    assert_eq!(u["limits"]["max_cost_per_day_usd"], 1.0);

    let text = String::from_utf8_lossy(&p.ai(&["status"]).stdout).to_string();
    assert!(text.contains("LLM: anthropic (claude-haiku-5-5)"), "{text}");
    assert!(text.contains("LLM usage today"), "{text}");
    assert!(text.contains("LLM usage in total"), "{text}");
    assert!(
        text.contains("LLM limits: 8000 tokens per call, $1.00 per day"),
        "{text}"
    );
    // The ledger in .ai/.
    let ledger: Value =
        serde_json::from_slice(&std::fs::read(p.paths.ai_dir.join("llm_usage.json")).unwrap())
            .unwrap();
    assert!(ledger["total"]["calls"].as_u64().unwrap() >= 1, "{ledger}");

    // Each call is one JSON line in the daemon's log.
    let calls = llm_events(&p, "llm_call");
    let ok = calls.iter().find(|e| e["outcome"] == "ok").unwrap();
    assert_eq!(ok["provider"], "anthropic");
    assert!(ok["input_tokens"].as_u64().unwrap() > 0 && ok["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(ok["level"], "INFO");
}

/// A capture's extraction, past a limit, is kept local and never reaches the provider.
fn capture_is_refused_before_the_call(p: &Project, fake: &FakeAnthropic) {
    p.capture("Bash", TOPICS[0]);
    p.sync();
    wait_for(p, "the refused extraction", || {
        (status_llm(p)["jobs"]["extractions_kept_local"] == 1).then_some(())
    });
    assert!(
        fake.requests().iter().all(|r| llm_kind(r) != "extraction"),
        "refused before the call"
    );
}

#[test]
fn llm_limits_refuse_calls_before_they_are_made() {
    let fake = FakeAnthropic::with_script(|r| {
        (llm_kind(r) == "extraction").then(|| Reply::text(extraction_json("Never")))
    });
    let p = project_with(json!({
        "provider": "anthropic",
        "base_url": fake.base_url(),
        "api_key_env": KEY_VAR,
        "max_tokens_per_call": 100,
    }));
    capture_is_refused_before_the_call(&p, &fake);
    let refused = llm_events(&p, "llm_call");
    assert!(
        refused
            .iter()
            .any(|e| e["outcome"] == "refused" && e["error_kind"] == "budget_exceeded"),
        "{refused:?}"
    );
}

/// A person who lowers a limit to stop the spending does not have to restart the daemon.
#[test]
fn llm_limits_edited_in_the_config_apply_at_once() {
    let fake = FakeAnthropic::with_script(|r| {
        (llm_kind(r) == "extraction").then(|| Reply::text(extraction_json("Never")))
    });
    let p = project_on(&fake);
    assert_eq!(
        status_llm(&p)["usage"]["limits"]["max_tokens_per_call"],
        8000
    );
    configure_llm(
        &p,
        json!({"max_tokens_per_call": 100, "max_cost_per_day_usd": 0.25}),
    );
    wait_for(&p, "the edited limits in force", || {
        let limits = status_llm(&p)["usage"]["limits"].clone();
        (limits["max_tokens_per_call"] == 100 && limits["max_cost_per_day_usd"] == 0.25)
            .then_some(())
    });
    // In force, not only shown: the next extraction is refused before the call.
    capture_is_refused_before_the_call(&p, &fake);
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn llm_key_never_reaches_ai_files_or_logs() {
    // A bad key first (401), then good answers: errors are logged, the key is not.
    let fake = FakeAnthropic::with_script(|r| match llm_kind(r) {
        "extraction" if r.messages_text().contains("useMemo") => Some(Reply::error(
            401,
            "authentication_error",
            "invalid x-api-key",
        )),
        "extraction" => Some(Reply::text(extraction_json("Key Safety"))),
        _ => None,
    });
    let mut p = project_on(&fake);
    p.capture("Bash", TOPICS[1]);
    p.capture("Bash", TOPICS[0]);
    p.sync();
    wait_for(&p, "both extractions", || {
        let j = &status_llm(&p)["jobs"];
        (j["extractions"] == 1 && j["extractions_kept_local"] == 1).then_some(())
    });
    p.request(json!({ "compact": {} }));
    p.ai(&["health"]);
    p.stop();
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.header("x-api-key") == Some(KEY)),
        "the key was used, from the environment"
    );
    let auth = llm_events(&p, "llm_call");
    assert!(
        auth.iter().any(|e| e["error_kind"] == "auth_error"),
        "{auth:?}"
    );
    let files = files_under(&p.paths.ai_dir);
    assert!(files.iter().any(|f| f.ends_with("llm_usage.json")));
    assert!(files.iter().any(|f| f.ends_with("processor.log")));
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(KEY), "the key is in {}", f.display());
        assert!(
            !text.contains(&KEY[10..]),
            "part of the key is in {}",
            f.display()
        );
    }
}

#[test]
fn llm_synthesis_replaces_the_local_one_after_a_compaction() {
    const SUMMARY: &str = "LLM SYNTHESIS: the pool was resized and the chart memoized.";
    let fake = FakeAnthropic::with_script(|r| match llm_kind(r) {
        "extraction" => Some(Reply::text(extraction_json("Pool Work"))),
        "synthesis" => {
            // Slower than the hook may wait: the local synthesis must be there first.
            std::thread::sleep(LLM_THINKS);
            Some(Reply::text(
                json!({
                    "summary": SUMMARY,
                    "decisions_made": ["raise the pool to 50"],
                    "open_questions": ["does staging need 50 too?"],
                    "key_insights": ["connections were held during HTTP calls"]
                })
                .to_string(),
            ))
        }
        _ => None,
    });
    let p = project_on(&fake);
    p.capture("Bash", TOPICS[0]);
    p.capture("Bash", TOPICS[1]);
    p.sync();
    let started = Instant::now();
    let written = p.request(json!({ "compact": { "trigger": "manual" } }));
    assert!(
        started.elapsed() < LLM_THINKS - Duration::from_secs(1),
        "the compaction hook waited for the LLM"
    );
    let path = PathBuf::from(written["path"].as_str().unwrap());
    let read = || -> Value { serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap() };
    assert_eq!(read()["generator"], "local");
    let local_context = p.request(json!({ "session_start": { "source": "compact" } }));
    assert!(!local_context["context"].as_str().unwrap().contains(SUMMARY));

    let s = wait_for(&p, "the LLM synthesis", || {
        Some(read()).filter(|s| s["generator"] == "llm")
    });
    assert_eq!(s["summary"], SUMMARY);
    assert_eq!(s["open_questions"][0], "does staging need 50 too?");
    assert_eq!(
        s["threads"].as_array().unwrap().len(),
        2,
        "the same threads"
    );
    let req = fake
        .requests()
        .into_iter()
        .find(|r| llm_kind(r) == "synthesis")
        .unwrap();
    assert!(req.messages_text().contains("THREAD 2:"));
    let ctx = p.request(json!({ "session_start": { "source": "compact" } }));
    let text = ctx["context"].as_str().unwrap();
    assert!(text.contains(SUMMARY), "{text}");
    assert!(text.contains("does staging need 50 too?"), "{text}");
}

#[test]
fn llm_provider_none_runs_nothing() {
    let p = {
        let mut p = Project::new();
        p.start();
        p
    };
    p.capture("Bash", TOPICS[0]);
    p.sync();
    p.request(json!({ "compact": {} }));
    let h = p.ai_json(&["health"]);
    assert_eq!(h["llm"]["provider"], "none");
    assert_eq!(h["llm"]["in_use"], "local fallback");
    let s = status_llm(&p);
    assert!(s["usage"].is_null(), "{s}");
    assert!(!p.paths.ai_dir.join("llm_usage.json").exists());
    assert!(
        p.log().lines().all(|l| !l.starts_with('{')),
        "no LLM log line"
    );
    let text = String::from_utf8_lossy(&p.ai(&["health"]).stdout).to_string();
    assert!(
        text.contains("LLM: none (local fallbacks in use)"),
        "{text}"
    );
}

#[test]
fn llm_daemon_drives_the_real_claude_cli_against_the_fake_api() {
    let Some(bin) = super::claude_cli::claude_or_skip() else {
        return;
    };
    let fake = FakeAnthropic::with_script(|r| {
        (llm_kind(r) == "extraction").then(|| Reply::text(extraction_json("Claude Cli Title")))
    });
    // The CLI's own HOME, whose hooks record the anti-loop variable they see.
    let home = super::claude_cli::home_with_hooks();
    let mut p = Project::new();
    configure_llm(
        &p,
        json!({
            "provider": "claude-cli",
            "claude_cli_path": bin,
            "timeouts": { "extraction_secs": 90, "ping_secs": 60 },
        }),
    );
    let base_url = fake.base_url();
    // The CLI keeps its own files under $TMPDIR: the test's, gone with it.
    let tmp = home.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    p.start_with_env(&[
        ("HOME", home.path().to_str().unwrap()),
        ("TMPDIR", tmp.to_str().unwrap()),
        ("ANTHROPIC_BASE_URL", &base_url),
        ("ANTHROPIC_API_KEY", KEY),
        ("DISABLE_TELEMETRY", "1"),
        ("NO_PROXY", "127.0.0.1,localhost"),
    ]);
    p.capture("Bash", TOPICS[0]);
    p.sync();
    let id = thread_of(&p, "max_connections")["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for(&p, "the title from the claude CLI", || {
        (title_of(&p, &id) == "Claude Cli Title").then_some(())
    });
    let req = fake
        .requests()
        .into_iter()
        .find(|r| llm_kind(r) == "extraction")
        .unwrap();
    assert!(
        req.body_text().contains("semantic analyser"),
        "our system prompt"
    );
    assert!(req.messages_text().contains("max_connections is 20"));
    // The subprocess ran with AI_SMARTNESS_HOOK_RUNNING=1: our hooks would have stood aside.
    let seen = std::fs::read_to_string(home.path().join("session_start.txt")).unwrap();
    assert_eq!(seen.trim(), "guard=1");
    let llm = wait_for(&p, "the CLI's usage", || {
        let l = status_llm(&p);
        (l["jobs"]["extractions"] == 1).then_some(l)
    });
    assert_eq!(llm["provider"], "claude-cli");
    assert!(
        llm["usage"]["today"]["cost_usd"].as_f64().unwrap() > 0.0,
        "{llm}"
    );
    p.stop();
}
