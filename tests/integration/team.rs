//! Team memory on a real PostgreSQL with pgvector (`postgres.rs`): joining, the project's
//! identity, the password's path, the schema, leaving.

use crate::harness::{git, Project, AI};
use crate::postgres::{TestPostgres, PASSWORD};
use serde_json::Value;
use std::collections::HashSet;
use std::process::{Command, Output};

/// `ai ARGS` in the project with these variables (and no PGPASSWORD unless given).
fn ai(p: &Project, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(AI);
    cmd.arg("--project")
        .arg(p.root())
        .args(args)
        .env_remove("PGPASSWORD")
        .env("HOME", p.root()) // no ~/.pgpass of the machine's
        .env("AI_SMARTNESS_DATA_DIR", &p.data_dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Every file under `.ai/`, read as bytes, holds no copy of `secret`.
fn nowhere_under_ai(p: &Project, secret: &str) {
    for entry in walk(&p.root().join(".ai")) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{} holds the password",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_malformed_address_is_refused_without_its_password() {
    let p = Project::new();
    git(p.root(), &["init", "-q"]);
    git(
        p.root(),
        &["remote", "add", "origin", "https://github.com/acme/shop"],
    );
    for bad in [
        "postgres://ann:Hv4-typed-secret@db.example.com:notaport/team",
        "postgres://ann:Hv4-typed-secret@/team",
        "mysql://ann:Hv4-typed-secret@db/team",
        "host=db user=ann password=Hv4-typed-secret dbname",
        "host=db user=ann password=Hv4-typed-secret no_such_option=1",
        "Hv4-typed-secret",
    ] {
        let out = ai(&p, &["team", "join", bad], &[]);
        assert!(!out.status.success(), "{bad}");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!said.contains("Hv4-typed-secret"), "{bad}: {said}");
        assert!(said.contains("address"), "{bad}: {said}");
    }
    nowhere_under_ai(&p, "Hv4-typed-secret");
}

#[test]
fn two_clones_join_one_project_and_the_password_is_never_written() {
    let Some(pg) = TestPostgres::start_or_skip() else {
        return;
    };
    // Two clones of one repository (two spellings of its remote) and an unrelated folder.
    let a = Project::new();
    let b = Project::new();
    let c = Project::new();
    for p in [&a, &b, &c] {
        git(p.root(), &["init", "-q"]);
    }
    git(
        a.root(),
        &["remote", "add", "origin", "git@github.com:Acme/Shop.git"],
    );
    git(
        b.root(),
        &["remote", "add", "origin", "https://github.com/acme/shop"],
    );

    // The password typed in the address: used for the join, said to be dropped, never kept.
    let typed = pg
        .url()
        .replacen("postgres@", &format!("postgres:{PASSWORD}@"), 1);
    let out = ai(
        &a,
        &[
            "--json", "team", "join", &typed, "--team", "core", "--author", "Ann",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not kept"));
    let joined = json(&out);
    assert_eq!(joined["project"], "github.com/acme/shop");
    assert_eq!(joined["team"], "core");
    assert_eq!(joined["schema"], ai_smartness_team::SCHEMA_VERSION);
    assert_eq!(joined["reachable"], true);
    assert!(!joined["url"].as_str().unwrap().contains(PASSWORD));
    nowhere_under_ai(&a, PASSWORD);

    // Without a password at hand, the store cannot be reached: said, exit 3, nothing lost.
    let out = ai(&a, &["--json", "team", "status"], &[]);
    assert_eq!(out.status.code(), Some(3));
    let st = json(&out);
    assert_eq!(st["reachable"], false);
    assert!(st["error"].as_str().unwrap().contains("password"), "{st}");
    // From the variable the config names, or PGPASSWORD.
    a.edit_config(|c| c["team"]["password_env"] = "SHOP_TEAM_PW".into());
    let st = json(&ai(
        &a,
        &["--json", "team", "status"],
        &[("SHOP_TEAM_PW", PASSWORD)],
    ));
    assert_eq!(st["reachable"], true, "{st}");
    assert_eq!(st["author"], "Ann");

    // The other clone joins with PGPASSWORD: the same project; the schema is made once.
    let out = ai(
        &b,
        &["--json", "team", "join", &pg.url(), "--team", "core"],
        &[("PGPASSWORD", PASSWORD)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&out)["project"], "github.com/acme/shop");
    nowhere_under_ai(&b, PASSWORD);
    // libpq's own forms join too: an empty host with the socket folder in the query (the
    // password typed in it), and keyword/value pairs.
    let socket_dir = pg.socket_dir().display().to_string();
    let empty_host = format!("postgresql://postgres:{PASSWORD}@/postgres?host={socket_dir}");
    let out = ai(
        &b,
        &["--json", "team", "join", &empty_host, "--team", "core"],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&out)["reachable"], true);
    nowhere_under_ai(&b, PASSWORD);
    let pairs = format!("host={socket_dir} user=postgres password='{PASSWORD}' dbname=postgres");
    let out = ai(
        &b,
        &["--json", "team", "join", &pairs, "--team", "core"],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json(&out)["url"],
        format!("host={socket_dir} user=postgres dbname=postgres")
    );
    nowhere_under_ai(&b, PASSWORD);
    assert_eq!(
        pg.sql("SELECT count(*) FROM ai_schema"),
        ai_smartness_team::SCHEMA_VERSION.to_string()
    );
    assert_eq!(
        pg.sql("SELECT extname FROM pg_extension WHERE extname = 'vector'"),
        "vector"
    );
    assert_eq!(
        pg.sql("SELECT indexdef LIKE '%hnsw%' FROM pg_indexes WHERE indexname = 'team_messages_embedding_half'"),
        "t"
    );

    // A folder that is no clone of anything cannot join: it has no identity to share under.
    let out = ai(
        &c,
        &["team", "join", &pg.url()],
        &[("PGPASSWORD", PASSWORD)],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no git remote"));

    // The server down: status says so, exit 3; back up: reachable again.
    pg.kill();
    let out = ai(
        &b,
        &["--json", "team", "status"],
        &[("PGPASSWORD", PASSWORD)],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["reachable"], false);
    pg.start();
    let st = json(&ai(
        &b,
        &["--json", "team", "status"],
        &[("PGPASSWORD", PASSWORD)],
    ));
    assert_eq!(st["reachable"], true);

    // Leaving keeps the password's source, forgets the store.
    let left = ai(&a, &["--json", "team", "leave"], &[]);
    assert!(left.status.success());
    let st = json(&ai(&a, &["--json", "team", "status"], &[]));
    assert_eq!(st["joined"], false);
    let config: Value = serde_json::from_slice(&std::fs::read(a.paths.config()).unwrap()).unwrap();
    assert_eq!(config["team"]["url"], "");
    assert_eq!(config["team"]["password_env"], "SHOP_TEAM_PW");
}

/// Every message of the project's threads in the store, by thread.
fn stored(pg: &TestPostgres) -> Vec<(String, String)> {
    pg.sql("SELECT thread_id || '|' || id FROM team_messages ORDER BY 1")
        .lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(t, m)| (t.to_string(), m.to_string()))
        .collect()
}

fn thread_holding(p: &Project, needle: &str) -> String {
    for t in p.threads("all") {
        let id = t["id"].as_str().unwrap().to_string();
        let d = p.request(serde_json::json!({ "thread": { "id": id } }));
        if d["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"].as_str().unwrap_or("").contains(needle))
        {
            return id;
        }
    }
    panic!("no thread holds {needle:?}")
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: never happened"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn shared_memory_arrives_once_across_an_outage_and_private_or_secret_never_leaves() {
    let Some(pg) = TestPostgres::start_or_skip() else {
        return;
    };
    let mut a = shop_clone();
    let out = ai(
        &a,
        &["team", "join", &pg.url(), "--team", "core"],
        &[("PGPASSWORD", PASSWORD)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    a.start_with_env(&[("PGPASSWORD", PASSWORD)]);

    // Two subjects; one is marked private before anything is shared.
    a.capture(
        "Read",
        "The checkout service retries card payments three times with exponential backoff \
         before it marks the order as failed.",
    );
    a.capture(
        "UserPrompt",
        "My salary negotiation notes: ask for the senior band, mention the two launches.",
    );
    a.sync();
    let private = thread_holding(&a, "salary negotiation");
    let shared = thread_holding(&a, "checkout service");
    assert_ne!(private, shared);
    let out = a.ai(&["thread", &private, "--private"]);
    assert!(out.status.success());
    // Nothing shared yet: the project shares nothing until a person chooses (the sender has
    // nothing it may send).
    let st = json(&ai(
        &a,
        &["--json", "team", "status"],
        &[("PGPASSWORD", PASSWORD)],
    ));
    assert_eq!(st["sync"]["pending"], 0, "{st}");
    assert!(stored(&pg).is_empty());

    // The project now shares everything not private.
    a.edit_config(|c| c["team"]["share"] = "all".into());
    wait_until("the shared thread reaches the store", || {
        stored(&pg).iter().any(|(t, _)| *t == shared)
    });

    // A secret and a private span in a capture: redacted before the memory, so never sent.
    a.capture(
        "Bash",
        "checkout deploy: export STRIPE_SECRET_KEY=sk_live_51HxQ9zTESTsecretVALUE0123456789 \
         then retry the card payments <private>door code 4412</private> done",
    );
    // The store goes down in the middle of a burst; everything arrives once it is back.
    for i in 0..15 {
        a.capture(
            "Bash",
            &format!("checkout retry run {i}: card payment {i} retried and settled"),
        );
        if i == 5 {
            pg.kill();
        }
    }
    a.sync();
    let local: HashSet<String> = a
        .threads("all")
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .filter(|id| *id != private)
        .flat_map(|id| {
            let d = a.request(serde_json::json!({ "thread": { "id": id } }));
            d["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    pg.start();
    wait_until("every shared message reaches the store", || {
        stored(&pg).len() >= local.len()
    });
    let rows = stored(&pg);
    let ids: HashSet<String> = rows.iter().map(|(_, m)| m.clone()).collect();
    assert_eq!(ids.len(), rows.len(), "each message once");
    assert_eq!(ids, local, "exactly the project's shared messages");
    assert!(
        rows.iter().all(|(t, _)| *t != private),
        "a private thread never leaves"
    );
    assert_eq!(
        pg.sql(
            "SELECT count(*) FROM team_messages WHERE content LIKE '%sk_live_51HxQ9z%' \
             OR content LIKE '%4412%' OR content LIKE '%salary%'"
        ),
        "0"
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM team_messages WHERE embedding IS NOT NULL"),
        rows.len().to_string(),
        "every message with its vector"
    );
    // The sender says it is caught up, and the store counts the same.
    wait_until("nothing pending", || {
        let st = json(&ai(
            &a,
            &["--json", "team", "status"],
            &[("PGPASSWORD", PASSWORD)],
        ));
        st["sync"]["pending"] == 0
    });
    let st = json(&ai(
        &a,
        &["--json", "team", "status"],
        &[("PGPASSWORD", PASSWORD)],
    ));
    assert_eq!(
        st["project_messages"].as_i64().unwrap() as usize,
        local.len()
    );
    // The redacted capture was kept and shared (without its secret).
    assert!(a
        .all_message_texts()
        .iter()
        .any(|t| t.contains("checkout deploy")));
}

/// Runs `f` to its end on a runtime of its own (for the tests that speak to the store
/// directly, as another machine's daemon would).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Bob's machine, a teammate in the shop project's team.
fn bob() -> ai_smartness_team::outbox::Origin {
    ai_smartness_team::outbox::Origin {
        team: "core".into(),
        project: "github.com/acme/shop".into(),
        author: "Bob".into(),
        machine: "bobs-laptop".into(),
    }
}

/// A project in a clone of the shop repository (its identity in the team).
fn shop_clone() -> Project {
    let p = Project::new();
    git(p.root(), &["init", "-q"]);
    git(
        p.root(),
        &["remote", "add", "origin", "git@github.com:acme/shop.git"],
    );
    p
}

/// A project of the shop repository in the team, sharing everything, its daemon started.
fn member(pg: &TestPostgres, author: &str, remote: &str) -> Project {
    let mut p = Project::new();
    git(p.root(), &["init", "-q"]);
    git(p.root(), &["remote", "add", "origin", remote]);
    let out = ai(
        &p,
        &[
            "team",
            "join",
            &pg.url(),
            "--team",
            "core",
            "--author",
            author,
        ],
        &[("PGPASSWORD", PASSWORD)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    p.edit_config(|c| c["team"]["share"] = "all".into());
    p.start_with_env(&[("PGPASSWORD", PASSWORD)]);
    p
}

#[test]
fn each_machine_finds_what_the_other_shared_with_its_author() {
    let Some(pg) = TestPostgres::start_or_skip() else {
        return;
    };
    let ann = member(&pg, "Ann", "git@github.com:acme/shop.git");
    let bob = member(&pg, "Bob", "https://github.com/Acme/Shop");
    ann.capture(
        "UserPrompt",
        "The billing export runs nightly at 02:00 UTC and writes CSV files to the finance bucket.",
    );
    bob.capture(
        "Bash",
        "upload failed: the finance bucket rejects objects over 5 GB, so the billing export \
         must be split into parts",
    );
    ann.sync();
    bob.sync();
    wait_until("both shared", || stored(&pg).len() >= 2);

    let found = ann.ai_json(&["search", "--team", "finance bucket size limit for uploads"]);
    let hits = found["team"]["hits"].as_array().unwrap();
    assert!(
        hits.iter()
            .any(|h| h["author"] == "Bob" && h["snippet"].as_str().unwrap().contains("5 GB")),
        "{found:#}"
    );
    let found = bob.ai_json(&["search", "--team", "when does the billing export run"]);
    let hits = found["team"]["hits"].as_array().unwrap();
    assert!(
        hits.iter()
            .any(|h| h["author"] == "Ann" && h["snippet"].as_str().unwrap().contains("02:00")),
        "{found:#}"
    );
    // What the MCP search tool asks (recall) carries the team's results too.
    let recall =
        bob.request(serde_json::json!({ "recall": { "query": "billing export schedule" } }));
    assert!(
        recall["team"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["author"] == "Ann"),
        "{recall:#}"
    );
    // A prompt's context quotes what a teammate shared, under its own heading, by name.
    let ctx = bob.ai_json(&[
        "context",
        "at what time does the nightly billing export run?",
    ]);
    let text = ctx["context"].as_str().unwrap();
    assert!(
        text.contains("# Shared by the team") && text.contains("(Ann, "),
        "{text}"
    );
    assert!(text.contains("02:00"), "{text}");
    // One's own shared messages are not quoted back as the team's.
    let own = ann.ai_json(&["search", "--team", "billing export nightly 02:00"]);
    assert!(
        own["team"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["author"] != "Ann"),
        "{own:#}"
    );
    // The store down: search answers with local memory and says why the team part is missing;
    // a prompt's context goes on without the team.
    pg.kill();
    let found = ann.ai_json(&["search", "--team", "billing export"]);
    assert!(!found["results"].as_array().unwrap().is_empty());
    assert!(found["team"]["error"].is_string(), "{found:#}");
    let ctx = bob.ai_json(&[
        "context",
        "at what time does the nightly billing export run?",
    ]);
    assert!(!ctx["context"]
        .as_str()
        .unwrap()
        .contains("Shared by the team"));
}

#[test]
fn a_sharing_rule_keeps_file_reads_home_and_the_latest_title_edit_wins() {
    let Some(pg) = TestPostgres::start_or_skip() else {
        return;
    };
    let mut ann = shop_clone();
    let out = ai(
        &ann,
        &[
            "team",
            "join",
            &pg.url(),
            "--team",
            "core",
            "--author",
            "Ann",
        ],
        &[("PGPASSWORD", PASSWORD)],
    );
    assert!(out.status.success());
    // The rule: everything not private, but only what people asked and were answered.
    let out = ai(
        &ann,
        &[
            "--json",
            "team",
            "share",
            "all",
            "--kinds",
            "prompt,response",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json(&out)["share_kinds"],
        serde_json::json!(["prompt", "response"])
    );
    let bad = ai(&ann, &["team", "share", "all", "--kinds", "reads"], &[]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown kind"));
    ann.start_with_env(&[("PGPASSWORD", PASSWORD)]);

    // A thread made only of file reads (read before any request: a thread of its own): not
    // even its title leaves.
    ann.capture(
        "Read",
        "docker-compose.yml: services: redis: image: redis:7 ports: 6379 volumes: cache-data",
    );
    ann.capture(
        "UserPrompt",
        "Why does the invoice renderer round totals to the cent before applying the VAT rate?",
    );
    ann.capture(
        "Read",
        "invoice_renderer.rs: fn render_totals(lines: &[Line]) -> Totals { let net = \
         lines.iter().map(|l| l.net_cents).sum(); round_to_cent(net) * vat_rate() }",
    );
    ann.sync();
    wait_until("the prompt reaches the store", || {
        pg.sql("SELECT count(*) FROM team_messages WHERE content LIKE '%invoice renderer%'") == "1"
    });
    let st = json(&ai(
        &ann,
        &["--json", "team", "status"],
        &[("PGPASSWORD", PASSWORD)],
    ));
    assert_eq!(st["sync"]["pending"], 0, "{st}");
    assert_eq!(st["share_kinds"], serde_json::json!(["prompt", "response"]));
    assert_eq!(
        pg.sql(
            "SELECT count(*) FROM team_messages WHERE content LIKE '%render_totals%' \
             OR content LIKE '%docker-compose%'"
        ),
        "0",
        "file reads stay home"
    );
    let redis = thread_holding(&ann, "docker-compose");
    assert_eq!(
        pg.sql(&format!(
            "SELECT count(*) FROM team_threads WHERE id = '{redis}'"
        )),
        "0"
    );

    // A person's rename reaches the store, stamped with when it was made.
    let shared = thread_holding(&ann, "invoice renderer");
    assert!(ann
        .ai(&[
            "thread",
            &shared,
            "--rename",
            "Invoice totals and VAT rounding"
        ])
        .status
        .success());
    wait_until("the rename reaches the store", || {
        pg.sql(&format!(
            "SELECT title FROM team_threads WHERE id = '{shared}'"
        )) == "Invoice totals and VAT rounding"
    });
    let version = |pg: &TestPostgres| -> i64 {
        pg.sql(&format!(
            "SELECT version FROM team_threads WHERE id = '{shared}'"
        ))
        .parse()
        .unwrap()
    };
    let before = version(&pg);

    // Another machine writes to the same thread: an edit older than Ann's changes nothing, a
    // newer one wins, and both machines' messages are kept whatever the title does.
    block_on(async {
        use ai_smartness_team::outbox::{send, SharedMessage, SharedThread};
        let mut client = ai_smartness_team::connect(&pg.url(), Some(PASSWORD))
            .await
            .unwrap();
        let bob = bob();
        let edit = |title: &str, at: &str| SharedThread {
            id: shared.clone(),
            title: title.into(),
            status: "active".into(),
            edited_at: at.into(),
        };
        let message = |id: &str| SharedMessage {
            id: id.into(),
            thread_id: shared.clone(),
            content: format!("Bob's note {id} on invoice rounding"),
            embedding: None,
            created_at: "2026-11-26T10:00:00Z".into(),
        };
        send(
            &mut client,
            &bob,
            &[edit("Old invoice title", "2020-01-01T00:00:00Z")],
            &[message("msg_bob_1")],
        )
        .await
        .unwrap();
        assert_eq!(
            pg.sql(&format!(
                "SELECT title FROM team_threads WHERE id = '{shared}'"
            )),
            "Invoice totals and VAT rounding",
            "an older edit arriving late changes nothing"
        );
        assert_eq!(version(&pg), before);
        send(
            &mut client,
            &bob,
            &[edit(
                "Invoice rounding rules",
                &chrono::Utc::now().to_rfc3339(),
            )],
            &[message("msg_bob_2")],
        )
        .await
        .unwrap();
    });
    assert_eq!(
        pg.sql(&format!(
            "SELECT title || '|' || author || '|' || machine FROM team_threads WHERE id = '{shared}'"
        )),
        "Invoice rounding rules|Bob|bobs-laptop"
    );
    assert_eq!(version(&pg), before + 1);
    assert_eq!(
        pg.sql(&format!(
            "SELECT string_agg(author, ',' ORDER BY author) FROM team_messages \
             WHERE thread_id = '{shared}'"
        )),
        "Ann,Bob,Bob",
        "every message kept"
    );
    // Ann's daemon restarted does not send its older title again as new, even when the
    // thread moves on.
    ann.stop();
    ann.start_with_env(&[("PGPASSWORD", PASSWORD)]);
    ann.capture(
        "UserPrompt",
        "Does the invoice renderer round totals per line or per invoice before the VAT rate?",
    );
    ann.sync();
    wait_until("the new prompt reaches the store", || {
        pg.sql("SELECT count(*) FROM team_messages WHERE author = 'Ann'") == "2"
    });
    assert_eq!(
        pg.sql(&format!(
            "SELECT title FROM team_threads WHERE id = '{shared}'"
        )),
        "Invoice rounding rules"
    );
}

/// A certificate authority, and a certificate for `localhost` it signed, made with openssl in
/// a folder the server can read (run as root, the server is nobody, and its key must be its
/// own and private).
fn certificates(dir: &std::path::Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (scripts/fetch-postgres-tls.sh installs it)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    for ca in ["ca", "other-ca"] {
        let subject = format!("/CN={ca}");
        let (key, pem) = (format!("{ca}.key"), format!("{ca}.pem"));
        let mut args = vec!["req", "-x509"];
        args.extend(ec);
        args.extend([
            "-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subject,
        ]);
        run(&args);
    }
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    run(&args);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    use std::os::unix::fs::PermissionsExt;
    let key = dir.join("server.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&key, Some(65534), Some(65534)).unwrap();
    }
}

#[test]
fn the_store_is_reached_over_tls_as_sslmode_asks() {
    let certs = tempfile::tempdir().unwrap();
    let dir = certs.path();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Made before the server starts; skipped with it when there is no server built with TLS.
    if crate::postgres::TestPostgres::tls_server_installed() {
        certificates(dir);
    }
    let settings = format!(
        "-c listen_addresses=127.0.0.1 -p {port} -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
        dir.join("server.pem").display(),
        dir.join("server.key").display()
    );
    let Some(_pg) = TestPostgres::start_tls_or_skip(&settings) else {
        return;
    };
    let ca = dir.join("ca.pem");
    let other = dir.join("other-ca.pem");
    // Whether the connection is encrypted, or why there is none.
    let encrypted = |host: &str, query: String| -> Result<bool, String> {
        block_on(async {
            let url = format!("postgres://postgres@{host}:{port}/postgres?{query}");
            let client = ai_smartness_team::connect(&url, Some(PASSWORD))
                .await
                .map_err(|e| e.to_string())?;
            let row = client
                .query_one(
                    "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                    &[],
                )
                .await
                .map_err(|e| e.to_string())?;
            Ok(row.get::<_, bool>(0))
        })
    };
    let root = |p: &std::path::Path| format!("sslrootcert={}", p.display());

    // verify-full: the certificate chains to the named root and names the host.
    assert_eq!(
        encrypted("localhost", format!("sslmode=verify-full&{}", root(&ca))),
        Ok(true)
    );
    // Another root: refused, and the error says it is the certificate.
    let e = encrypted("localhost", format!("sslmode=verify-full&{}", root(&other))).unwrap_err();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    // The certificate names localhost, not 127.0.0.1: verify-full refuses, verify-ca does not
    // look at the name.
    let e = encrypted("127.0.0.1", format!("sslmode=verify-full&{}", root(&ca))).unwrap_err();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    assert_eq!(
        encrypted("127.0.0.1", format!("sslmode=verify-ca&{}", root(&ca))),
        Ok(true)
    );
    // require: encrypted, nothing checked (libpq's meaning); with a root named, checked.
    assert_eq!(encrypted("localhost", "sslmode=require".into()), Ok(true));
    assert!(encrypted("localhost", format!("sslmode=require&{}", root(&other))).is_err());
    // prefer (the default) takes TLS when offered; disable never does.
    assert_eq!(encrypted("localhost", String::new()), Ok(true));
    assert_eq!(encrypted("localhost", "sslmode=disable".into()), Ok(false));
    assert!(encrypted("localhost", "sslmode=sometimes".into())
        .unwrap_err()
        .contains("sslmode"));
}

#[test]
fn a_store_made_by_an_older_build_is_upgraded_and_keeps_its_messages() {
    let Some(pg) = TestPostgres::start_or_skip() else {
        return;
    };
    // The store as the first schema left it, holding a teammate's message.
    block_on(async {
        use ai_smartness_team::outbox::{send, SharedMessage, SharedThread};
        let mut client = ai_smartness_team::connect(&pg.url(), Some(PASSWORD))
            .await
            .unwrap();
        assert_eq!(
            ai_smartness_team::migrate::migrate_to(&mut client, 1)
                .await
                .unwrap(),
            1
        );
        let origin = bob();
        send(
            &mut client,
            &origin,
            &[SharedThread {
                id: "thread_bob".into(),
                title: "Nightly reports".into(),
                status: "active".into(),
                edited_at: "2026-11-01T10:00:00Z".into(),
            }],
            &[SharedMessage {
                id: "msg_bob".into(),
                thread_id: "thread_bob".into(),
                content: "The nightly sales report is generated by the reports-cron job at 03:15."
                    .into(),
                embedding: None,
                created_at: "2026-11-01T10:00:00Z".into(),
            }],
        )
        .await
        .unwrap();
    });
    assert_eq!(pg.sql("SELECT max(version) FROM ai_schema"), "1");

    // A member on this build, set up before (its config names the store; no join now): its
    // daemon brings the store up to date when it connects, and everything is still there.
    let mut ann = shop_clone();
    let url = pg.url();
    ann.edit_config(|c| {
        c["team"] = serde_json::json!({
            "url": url, "name": "core", "author": "Ann", "share": "all"
        })
    });
    ann.start_with_env(&[("PGPASSWORD", PASSWORD)]);
    ann.capture(
        "UserPrompt",
        "Which job generates the nightly sales report, and when does it run?",
    );
    ann.sync();
    wait_until("Ann's prompt reaches the upgraded store", || {
        pg.sql("SELECT count(*) FROM team_messages WHERE author = 'Ann'") == "1"
    });
    assert_eq!(
        pg.sql("SELECT max(version) FROM ai_schema"),
        ai_smartness_team::SCHEMA_VERSION.to_string()
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_indexes WHERE indexname = 'team_messages_embedding_half'"),
        "1"
    );
    let found = ann.ai_json(&["search", "--team", "nightly sales report job"]);
    assert!(
        found["team"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["author"] == "Bob" && h["snippet"].as_str().unwrap().contains("03:15")),
        "{found:#}"
    );
}
