//! Threads a person recognizes: captures of several subjects written on one template, played as a
//! person moves between them, land one subject per thread under titles that name it; `ai
//! consolidate` tidies, and shows first what it would do. Real daemon, real model.

use crate::harness::*;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Six subjects, six observations each, every capture on the same frame.
const SUBJECTS: [(&str, [&str; 6]); 6] = [
    (
        "postgres",
        [
            "the connection pool runs out of connections under load",
            "max_connections is 20 and each request holds one for the whole call",
            "pgbouncer in transaction mode keeps the pool small",
            "a slow query on the orders table locks rows for seconds",
            "vacuum has not run on the orders table for a week",
            "the replica lags behind the primary by two minutes",
        ],
    ),
    (
        "react",
        [
            "the chart component renders twice because useEffect depends on an object literal",
            "useMemo on the chart options stops the double render",
            "the dashboard state lives in a context provider that rerenders every child",
            "the sales table flickers when the props change identity",
            "React.memo around the table row stops the flicker",
            "the bundle pulls the whole icon library into the dashboard page",
        ],
    ),
    (
        "kubernetes",
        [
            "the billing deployment fails its readiness probe on port 3000",
            "the container listens on 8080 while the helm chart probes 3000",
            "the pod is evicted when the node runs out of memory",
            "the memory limit of the billing pod is 256Mi and the JVM wants more",
            "the ingress controller drops websocket connections after 60 seconds",
            "the horizontal pod autoscaler never scales past two replicas",
        ],
    ),
    (
        "invoices",
        [
            "the invoice PDF shows the VAT rate of the previous year",
            "rounding of line totals differs between the PDF and the ledger",
            "credit notes are numbered in the same sequence as invoices",
            "the invoice email goes out before the payment is captured",
            "currency conversion uses the rate of the order date, not the invoice date",
            "a cancelled order still produces a draft invoice",
        ],
    ),
    (
        "ci",
        [
            "the GitHub Actions cache misses on every run because the key hashes the lockfile path",
            "the test job takes 40 minutes on the shared runner",
            "flaky integration tests fail when the database container starts slowly",
            "the release workflow tags the commit before the build passes",
            "the docker layer cache is never reused between workflow runs",
            "the lint step runs on every push to every branch",
        ],
    ),
    (
        "auth",
        [
            "the OAuth refresh token expires after an hour instead of thirty days",
            "the login page loops when the session cookie is set on the wrong domain",
            "the JWT signing key rotation breaks tokens issued before it",
            "password reset links stay valid after the password changed",
            "SAML login fails for users whose email has uppercase letters",
            "the session store keeps sessions of deleted users",
        ],
    ),
];

fn subject_of(content: &str) -> Option<&'static str> {
    SUBJECTS
        .iter()
        .map(|(s, _)| *s)
        .find(|s| content.contains(&format!("Component: {s}.")))
}

#[test]
fn one_subject_per_thread_under_a_title_that_names_it() {
    let Some(p) = started_on_real_model() else {
        return;
    };
    // Blocks of three captures, the subjects taken in turn twice over.
    for round in 0..2 {
        for (name, observations) in SUBJECTS {
            for o in &observations[round * 3..round * 3 + 3] {
                p.capture(
                    "Bash",
                    &format!("$ ./status.sh {name}\nStatus report. Component: {name}. Observation: {o}. Next step: review and continue."),
                );
            }
        }
    }
    p.sync();

    let dry = p.ai_json(&["consolidate", "--dry-run"]);
    assert_eq!(dry["dry_run"], json!(true));
    let applied = p.ai_json(&["consolidate"]);
    assert_eq!(applied["dry_run"], json!(false));
    assert_eq!(
        applied["merges"].as_array().map(Vec::len),
        dry["merges"].as_array().map(Vec::len),
        "the dry run showed what the pass did: {dry}"
    );

    let threads = p.threads("active");
    let mut spread: HashMap<&str, HashSet<String>> = HashMap::new();
    let (mut total, mut majority) = (0, 0);
    let mut titles = HashSet::new();
    for t in &threads {
        let id = t["id"].as_str().unwrap();
        let detail = p.request(json!({"thread": {"id": id}}));
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for m in detail["messages"].as_array().unwrap() {
            let s = subject_of(m["content"].as_str().unwrap()).expect("a subject");
            *counts.entry(s).or_default() += 1;
            spread.entry(s).or_default().insert(id.to_string());
            total += 1;
        }
        majority += counts.values().max().copied().unwrap_or(0);
        let title = t["title"].as_str().unwrap();
        let words = title.split_whitespace().count();
        assert!((2..=8).contains(&words), "{title:?}");
        for filler in ["hey", "great", "hmm", "yep"] {
            assert!(
                !title.to_lowercase().split_whitespace().any(|w| w == filler),
                "{title:?}"
            );
        }
        assert!(
            titles.insert(title.to_lowercase()),
            "two active threads titled {title:?}"
        );
    }
    assert_eq!(total, 36, "every capture is stored once");
    let purity = majority as f64 / total as f64;
    let per_subject = spread.values().map(HashSet::len).sum::<usize>() as f64 / 6.0;
    let listing: Vec<Value> = threads
        .iter()
        .map(|t| json!([t["title"], t["messages"]]))
        .collect();
    assert!(purity >= 0.9, "purity {purity}: {listing:?}");
    assert!(
        per_subject <= 3.0,
        "{per_subject} threads per subject: {listing:?}"
    );

    // `ai threads` shows each thread's message count and when it last moved.
    let out = p.ai(&["threads"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" msg") && text.contains("moved "), "{text}");
}

/// An idle daemon tidies by itself: with `daemon.consolidate_idle_secs` at 1, a thread whose
/// focus moved is retitled without anyone asking, and the change is in its drift history.
#[test]
fn an_idle_daemon_retitles_a_thread_whose_focus_moved() {
    if !real_model_installed() {
        return;
    }
    let mut p = Project::new();
    let config = p.root().join(".ai/config.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    v["daemon"]["consolidate_idle_secs"] = json!(1);
    std::fs::write(&config, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    p.start();
    p.capture(
        "UserPrompt",
        "The PostgreSQL connection pool runs out of connections under load; max_connections is 20.",
    );
    for detail in [
        "pgbouncer in transaction mode keeps the connection pool of the billing service small",
        "pgbouncer transaction mode breaks prepared statements in the billing service",
        "pgbouncer needs server_reset_query for the billing service in transaction mode",
        "pgbouncer transaction mode with the billing service: pool_size 25 per database",
        "pgbouncer logs show the billing service waiting for a server in transaction mode",
    ] {
        p.capture("UserPrompt", detail);
    }
    p.sync();
    // Watched through the log: a request would keep the daemon busy.
    p.wait_for("an idle pass", Duration::from_secs(30), || {
        p.log().contains("consolidation:").then_some(())
    });
    let retitled = p.threads("active").iter().any(|t| {
        let id = t["id"].as_str().unwrap();
        let detail = p.request(json!({"thread": {"id": id}}));
        detail["drift_history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.contains("title")))
    });
    assert!(retitled, "{}", p.log());
    assert!(p.log().contains("consolidation:"), "{}", p.log());
}
