//! The `ai` CLI against a real daemon.

use crate::harness::*;

fn first_thread_id(p: &Project) -> String {
    p.threads("all")[0]["id"].as_str().unwrap().to_string()
}

#[test]
fn view_rename_suspend_reactivate_delete_threads() {
    let mut p = Project::new();
    p.start();
    for t in TOPICS {
        let out = p.ai_stdin(&["capture", "--tool", "Read"], t);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    p.sync();
    let listed = p.ai_json(&["threads", "--status", "all"]);
    assert!(listed["threads"].as_array().unwrap().len() >= 2);
    let human = String::from_utf8(p.ai(&["threads", "--show-weight"]).stdout).unwrap();
    assert!(human.contains('█'), "{human}");

    let id = first_thread_id(&p);
    assert!(p
        .ai(&["thread", &id, "--rename", "Connection pool sizing"])
        .status
        .success());
    let t = p.ai_json(&["thread", &id]);
    assert_eq!(t["title"], "Connection pool sizing");
    assert!(p.ai(&["thread", &id, "--suspend"]).status.success());
    assert_eq!(p.ai_json(&["thread", &id])["status"], "suspended");
    let suspended = p.ai_json(&["threads", "--status", "suspended"]);
    assert!(suspended["threads"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["id"] == id.as_str()));
    assert!(p.ai(&["thread", &id, "--reactivate"]).status.success());
    assert_eq!(p.ai_json(&["thread", &id])["status"], "active");
    assert!(p.ai(&["thread", &id, "--delete"]).status.success());
    let out = p.ai(&["thread", &id]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no thread"));
    assert!(!p
        .paths
        .db()
        .join("threads")
        .join(format!("{id}.json"))
        .exists());
    // Edits survive a restart (they were saved).
    p.stop();
    p.start();
    assert!(p.threads("all").iter().all(|t| t["id"] != id.as_str()));
}

#[test]
fn bridges_can_be_listed_viewed_invalidated_and_deleted() {
    let mut p = Project::new();
    p.start();
    // Two captures about the same subject from different angles, plus noise.
    let a = "The PostgreSQL connection pool times out under load. The pool size is 20 connections and the database server allows 100.";
    let b = "PostgreSQL connection pool tuning: the pool size of the database should follow the server max_connections and the request concurrency; connection timeouts appear under load.";
    p.capture("Read", a);
    p.capture("WebFetch", b);
    p.capture("Read", TOPICS[1]);
    p.sync();
    // Force a bridge if gossip merged them into one thread: create two threads by hand instead.
    let bridges = p.ai_json(&["bridges"]);
    if let Some(first) = bridges["bridges"].as_array().unwrap().first() {
        let id = first["id"].as_str().unwrap();
        let v = p.ai_json(&["bridge", id]);
        assert_eq!(v["id"], id);
        assert!(p.ai(&["bridge", id, "--invalidate"]).status.success());
        assert_eq!(p.ai_json(&["bridge", id])["status"], "invalid");
        assert!(p.ai(&["bridge", id, "--delete"]).status.success());
        assert!(!p.ai(&["bridge", id]).status.success());
    }
    let human = p.ai(&["bridges", "--show-weight"]);
    assert!(human.status.success());
    assert!(!p
        .ai(&["bridges", "--thread", "thread_20990101_000000_00000000"])
        .status
        .success());
}

/// An import returns once the history is placed: the units of its long captures get their
/// vectors afterwards, counted by `ai status`, and `ai sync` waits for them.
#[test]
fn an_import_returns_before_the_units_vectors_and_sync_waits_for_them() {
    let mut p = Project::new();
    p.start();
    let output: String = (1..=400)
        .map(|i| match i {
            317 => "line 317: the replica in eu-west-3 lags forty-two seconds behind\n".to_string(),
            _ => format!("line {i}: request served in {i} ms by worker {}\n", i % 7),
        })
        .collect();
    let line = serde_json::json!({"content": format!("$ tail -n 400 serve.log\n{output}"),
        "tool": "Bash", "timestamp": "2026-03-02T10:00:00Z"});
    let file = p.root().join("log.jsonl");
    std::fs::write(&file, format!("{line}\n")).unwrap();
    let summary = p.ai_json(&["import", file.to_str().unwrap()]);
    assert_eq!(summary["imported"], 1, "{summary}");
    assert!(summary["units_pending"].is_u64(), "{summary}");
    // Placed: the thread is there before any vector of its units.
    assert_eq!(p.threads("all").len(), 1);
    p.sync();
    assert_eq!(p.ai_json(&["status"])["embedder"]["units_pending"], 0);
    let found = p.ai_json(&["context", "how far behind is the replica in eu-west-3?"]);
    let quoted = found["context"].as_str().unwrap_or_default();
    assert!(quoted.contains("forty-two seconds"), "{found}");
}

/// A request too short to keep ("ok, the schema now") stores nothing, but the work after it
/// serves a new request: it does not join the thread of the request before.
#[test]
fn a_short_request_stores_nothing_but_starts_a_new_request() {
    let mut p = Project::new();
    p.start();
    let turn = |uuid: &str, at: &str, kind: &str, content: serde_json::Value| {
        serde_json::json!({"type": kind, "message": {"role": kind, "content": content},
            "timestamp": at, "uuid": uuid, "sessionId": "s1"})
        .to_string()
    };
    let tool_use = |id: &str, command: &str| serde_json::json!([{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}}]);
    let result = |id: &str, text: &str| serde_json::json!([{"type": "tool_result", "tool_use_id": id, "content": text}]);
    let lines = [
        turn(
            "u1",
            "2026-03-02T10:00:00Z",
            "user",
            serde_json::json!(
            "The React dashboard renders the sales chart twice: find out why and stop the flicker"),
        ),
        turn(
            "a1",
            "2026-03-02T10:00:05Z",
            "assistant",
            tool_use("t1", "grep -rn useEffect src/SalesChart.tsx"),
        ),
        turn(
            "u2",
            "2026-03-02T10:00:06Z",
            "user",
            result("t1", crate::harness::TOPICS[1]),
        ),
        turn(
            "u3",
            "2026-03-02T10:01:00Z",
            "user",
            serde_json::json!("ok, continue please"),
        ),
        turn(
            "a2",
            "2026-03-02T10:01:05Z",
            "assistant",
            tool_use("t2", "psql -c 'show max_connections'"),
        ),
        turn(
            "u4",
            "2026-03-02T10:01:06Z",
            "user",
            result("t2", crate::harness::TOPICS[0]),
        ),
    ];
    let file = p.root().join("session.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = p.ai(&[
        "import",
        "--format",
        "claude-transcript",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    p.sync();
    let thread_of = |needle: &str| {
        p.threads("all")
            .into_iter()
            .find(|t| {
                let id = t["id"].as_str().unwrap();
                let d = p.request(serde_json::json!({ "thread": { "id": id } }));
                d["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["content"].as_str().unwrap_or_default().contains(needle))
            })
            .map(|t| t["id"].as_str().unwrap().to_string())
    };
    let chart = thread_of("useMemo").expect("the chart's work is stored");
    let pool = thread_of("max_connections is 20").expect("the pool's work is stored");
    assert_ne!(
        chart, pool,
        "the work after a short request joined the request before it"
    );
    assert!(
        !p.all_message_texts()
            .iter()
            .any(|m| m.contains("continue please")),
        "a request naming nothing was stored"
    );
    // Two results and the first request: the mark is no capture.
    assert_eq!(p.ai_json(&["status"])["stats"]["captures_received"], 3);
}

#[test]
fn import_jsonl_keeps_timestamps_and_metadata_in_order() {
    let mut p = Project::new();
    p.start();
    let file = p.root().join("conv.jsonl");
    // Out of order on purpose: the import sorts by timestamp.
    let lines = [
        r#"{"content": "Melanie: I ran a charity race for mental health last Saturday, it was a 5K through the park.", "source": "user", "timestamp": "2023-05-08T13:56:00Z", "metadata": {"dia_id": "D1:2"}}"#,
        r#"{"content": "Caroline: I went to an LGBTQ support group yesterday and it was really powerful for me.", "source": "user", "timestamp": "2023-05-08T13:55:00Z", "metadata": {"dia_id": "D1:1"}}"#,
        r#"{"content": "Caroline: I am researching adoption agencies because I want to build a family of my own.", "timestamp": "2023-06-09T10:00:00Z", "metadata": {"dia_id": "D2:1"}}"#,
    ];
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = p.ai(&["import", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut seen = Vec::new();
    for t in p.threads("all") {
        let d = p.ai_json(&["thread", t["id"].as_str().unwrap()]);
        for m in d["messages"].as_array().unwrap() {
            seen.push((
                m["metadata"]["dia_id"].as_str().unwrap().to_string(),
                m["timestamp"].as_str().unwrap().to_string(),
            ));
        }
        assert!(
            d["id"].as_str().unwrap().starts_with("thread_2023"),
            "ids use the capture time: {}",
            d["id"]
        );
    }
    // Three years old: decay suspends its threads, and the list says where they are.
    let listed = p.ai(&["threads", "--prune"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("suspended") && listed.contains("--status live"),
        "{listed}"
    );
    seen.sort();
    assert_eq!(
        seen[0],
        ("D1:1".to_string(), "2023-05-08T13:55:00Z".to_string())
    );
    assert_eq!(seen[1].0, "D1:2");
    assert_eq!(
        seen[2],
        ("D2:1".to_string(), "2023-06-09T10:00:00Z".to_string())
    );

    let bad = p.root().join("bad.jsonl");
    std::fs::write(&bad, "{\"content\": 3}\n").unwrap();
    let out = p.ai(&["import", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
}

#[test]
fn mode_lowering_suspends_the_lightest_and_prune_is_on_demand() {
    let mut p = Project::new();
    p.start();
    // Twenty distinct subjects → twenty threads.
    let subjects = [
        "PostgreSQL autovacuum falls behind on the orders table; dead tuples pile up and queries slow down.",
        "The React form re-renders on every keystroke because the context value is recreated each render.",
        "Kubernetes ingress returns 502 for the websocket endpoint until the proxy read timeout is raised.",
        "Rust borrow checker rejects the iterator adapter holding a reference to the temporary vector.",
        "The CSS grid collapses on Safari when the template columns use minmax with auto-fill.",
        "OAuth refresh tokens expire after thirty days and the mobile client never renews them.",
        "Redis evicts session keys under memory pressure because maxmemory-policy is allkeys-lru.",
        "Terraform state lock stays held in DynamoDB after the CI runner was cancelled mid-apply.",
        "GraphQL cursor pagination returns duplicates when two rows share the same created_at value.",
        "Docker image layers are rebuilt on every commit since the package manifest is copied too late.",
        "Kafka consumer lag grows on partition seven after the rebalance assigned it to a slow broker.",
        "Python asyncio task is never awaited, so the exception in the background job disappears.",
        "Webpack splits vendor chunks badly and the landing page downloads two copies of lodash.",
        "Nginx serves stale cached HTML after deploys because the cache key ignores the build hash.",
        "Elasticsearch mapping explosion: dynamic fields from user metadata created ten thousand keys.",
        "gRPC deadline exceeded between the gateway and the inventory service during batch imports.",
        "S3 multipart upload leaves orphaned parts that keep costing storage after aborted uploads.",
        "JWT signing key rotation breaks sessions because old keys are dropped from the JWKS at once.",
        "Cron job runs twice at the daylight saving change because the schedule uses local time.",
        "Unicode normalization mismatch: NFC and NFD file names make the same upload look different.",
    ];
    for s in subjects {
        p.capture("Read", s);
    }
    p.sync();
    let active = p.threads("active").len();
    assert!(active >= 15, "{active} threads");
    let v = p.ai_json(&["mode", "light"]);
    assert_eq!(v["quota"], 15);
    assert_eq!(p.threads("active").len(), 15);
    assert_eq!(p.ai_json(&["mode"])["mode"], "light");
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.paths.config()).unwrap()).unwrap();
    assert_eq!(cfg["mode"], "light");
    let out = p.ai(&["threads", "--prune"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("pruned"));
    assert!(p.ai(&["bridges", "--prune", "--json"]).status.success());
}

#[test]
fn rules_search_status_health_and_json_everywhere() {
    let mut p = Project::new();
    p.start();
    for t in TOPICS {
        p.capture("Read", t);
    }
    p.sync();
    let r = p.ai_json(&[
        "rules",
        "add",
        "Always",
        "run",
        "cargo",
        "fmt",
        "before",
        "committing",
    ]);
    assert_eq!(r["rules"].as_array().unwrap().len(), 1);
    assert!(!p.ai(&["rules", "add", "short"]).status.success());
    assert_eq!(
        p.ai_json(&["rules", "list"])["rules"][0],
        "Always run cargo fmt before committing"
    );
    assert_eq!(
        p.ai_json(&["rules", "remove", "1"])["rules"]
            .as_array()
            .unwrap()
            .len(),
        0
    );

    let found = p.ai_json(&["search", "database", "connection", "pool", "timeouts"]);
    let top = &found["results"][0];
    assert!(
        top["summary"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("pool")
            || top["title"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("pool"),
        "{found}"
    );

    let st = p.ai_json(&["status"]);
    assert!(st["threads"]["total"].as_u64().unwrap() >= 3);
    let h = p.ai_json(&["health"]);
    assert_eq!(h["embedding_coverage"], 1.0);
    for args in [
        &["threads"][..],
        &["bridges"],
        &["rules"],
        &["mode"],
        &["daemon", "status"],
    ] {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = p.ai(&all);
        assert!(
            serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok(),
            "{args:?} --json"
        );
    }
    let out = p.ai_json(&["reindex"]);
    assert!(out["threads"].as_u64().unwrap() >= 3);
}

#[test]
fn a_refused_start_says_why_at_once() {
    let p = Project::new();
    // Something else answers on the project's socket: it accepts, and says nothing.
    let listener = std::os::unix::net::UnixListener::bind(p.paths.socket()).unwrap();
    std::fs::set_permissions(
        p.paths.socket(),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    listener.set_nonblocking(true).unwrap();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        while stopped.try_recv().is_err() {
            if let Ok((s, _)) = listener.accept() {
                held.push(s);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    });
    let started = std::time::Instant::now();
    let out = p.ai(&["daemon", "start"]);
    let took = started.elapsed();
    stop.send(()).unwrap();
    holder.join().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("could not start"), "{said}");
    assert!(said.contains("already answering"), "{said}");
    // Said at once, not after the 15 s a start waits for a daemon to answer.
    assert!(took < std::time::Duration::from_secs(8), "{took:?}: {said}");
}

#[test]
fn every_spelling_of_the_project_reaches_its_daemon() {
    // A path too long for the socket to live in `.ai/`; a short link to it would fit.
    let mut p = Project::at_a_long_path();
    assert_ne!(p.paths.socket(), p.paths.preferred_socket());
    p.start();
    let link = std::path::PathBuf::from(format!(
        "/tmp/{}-link",
        p.root()
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
    ));
    std::os::unix::fs::symlink(p.root(), &link).unwrap();
    let ai = |project: &std::path::Path, args: &[&str]| {
        use std::io::Write;
        let mut child = std::process::Command::new(AI)
            .arg("--project")
            .arg(project)
            .args(args)
            .env("AI_SMARTNESS_DATA_DIR", &p.data_dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let mut stdin = stdin;
            let _ =
                stdin.write_all(b"cargo build finished for the ingest worker after the linker fix");
        });
        child.wait_with_output().unwrap()
    };
    for spelling in [link.clone(), link.join("."), p.root().join("./")] {
        let out = ai(&spelling, &["daemon", "status"]);
        assert!(out.status.success(), "{}: {out:?}", spelling.display());
        let out = ai(&spelling, &["capture", "--tool", "Bash"]);
        assert!(out.status.success(), "{}: {out:?}", spelling.display());
    }
    std::fs::remove_file(&link).unwrap();
}
