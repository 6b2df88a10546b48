//! The dashboard in a real browser: headless Chromium (Debian's package, installed by
//! `scripts/fetch-chromium.sh`) driven over WebDriver by `fantoccini`, against a real daemon
//! whose assistant and workflow runs talk to the fake Anthropic server.
//!
//! Without Chromium the test reports a skip, except under CI (`CI` set), where it fails. Every
//! view is saved as a screenshot in `target/dashboard-screenshots/`. Any error in the
//! browser's console fails the test. Waits poll with a deadline; nothing sleeps for a fixed
//! time to let something happen.

use crate::fake_anthropic::{FakeAnthropic, Recorded, Reply};
use crate::harness::{commit_all, in_ci, Project};
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const KEY_VAR: &str = "AIT_UI_KEY";
const KEY: &str = "sk-ant-api03-AITEST-dashboard-7c2e";
const DEADLINE: Duration = Duration::from_secs(40);

/// The WebDriver server, or `None` when this machine has no Chromium (a skip, outside CI).
fn chromedriver_or_skip() -> Option<PathBuf> {
    let found = std::env::var_os("AI_SMARTNESS_CHROMEDRIVER")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/usr/bin/chromedriver")))
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            !in_ci(),
            "chromedriver is missing and CI is set: CI must run the browser test \
             (scripts/fetch-chromium.sh installs it)"
        );
        ai_smartness_testkit::record("no Chromium here (run scripts/fetch-chromium.sh)");
    }
    found
}

/// chromedriver on a free port, killed with the test.
struct Driver {
    child: Child,
    port: u16,
    /// The driver's and the browser's temporary folder (profiles, singleton sockets): a
    /// browser killed with a failing test would otherwise leave them in the system's `/tmp`.
    _tmp: tempfile::TempDir,
}

impl Driver {
    fn start(bin: &PathBuf) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let tmp = tempfile::tempdir().expect("a temporary folder for the browser");
        let child = Command::new(bin)
            .arg(format!("--port={port}"))
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let deadline = Instant::now() + DEADLINE;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Driver {
            child,
            port,
            _tmp: tmp,
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The browser's console since the last call (chromedriver's log endpoint).
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

async fn console_errors(c: &Client) -> Vec<String> {
    let log = c.issue_cmd(BrowserLog).await.expect("the console log");
    log.as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Waits for an element whose text satisfies `ok`.
async fn wait_text(c: &Client, css: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Ok(el) = c.find(Locator::Css(css)).await {
            if let Ok(text) = el.text().await {
                if ok(&text) {
                    return text;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {css} never matched; page: {}",
            c.source().await.unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Types `text` into the field `css` (emptied first), finding it again if the page redrew it
/// in between.
async fn type_into(c: &Client, css: &str, text: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let typed = async {
            let el = c.find(Locator::Css(css)).await?;
            el.clear().await?;
            el.send_keys(text).await
        };
        match typed.await {
            Ok(()) => return,
            Err(e) => assert!(Instant::now() < deadline, "typing into {css}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks `css`, finding it again if the page redrew it in between.
async fn click(c: &Client, css: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let clicked = async { c.find(Locator::Css(css)).await?.click().await };
        match clicked.await {
            Ok(()) => return,
            Err(e) => assert!(Instant::now() < deadline, "clicking {css}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn screenshot(c: &Client, name: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/dashboard-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = c.screenshot().await.expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// Opens a view by its address (the page routes on the hash, without reloading).
async fn open(c: &Client, base: &str, hash: &str) {
    c.goto(&format!("{base}/{hash}")).await.unwrap();
}

/// Whether a page has scrolled sideways: content wider than the window.
async fn overflows(c: &Client) -> bool {
    c.execute(
        "return document.documentElement.scrollWidth > window.innerWidth + 1;",
        vec![],
    )
    .await
    .unwrap()
        == json!(true)
}

/// One gate the fake executor waits on, so a run is still going while the page watches.
#[derive(Default)]
struct Gate(Mutex<bool>, Condvar);

impl Gate {
    fn wait(&self) {
        let open = self.0.lock().unwrap();
        let _ = self.1.wait_timeout_while(open, DEADLINE, |open| !*open);
    }
    fn open(&self) {
        *self.0.lock().unwrap() = true;
        self.1.notify_all();
    }
}

/// The assistant's script (a validation, then its answer) and the workflow's phases (the
/// executor held at the gate).
fn model(gate: Arc<Gate>) -> FakeAnthropic {
    let assistant = Mutex::new(VecDeque::from([
        json!({ "preText": "I will add the rule.", "validationRequest": true, "keepControl": true,
                "actionCommands": [{ "type": "ADD_RULE", "params": { "text": "Always use tabs in Makefiles." } }] }),
        json!({ "preText": "Rule added." }),
    ]));
    FakeAnthropic::with_script(move |r: &Recorded| {
        let body = r.body_text();
        if body.contains("memory assistant of ai-smartness") {
            let next = assistant.lock().unwrap().pop_front();
            let v = next.unwrap_or_else(|| json!({ "preText": "(script over)" }));
            return Some(Reply::text(v.to_string()));
        }
        let phase = ["spec", "plan", "execute", "repair", "judge"]
            .into_iter()
            .find(|p| body.contains(&format!("Workflow phase: {p}")))?;
        Some(match phase {
            "spec" => Reply::text(
                json!({ "spec": "Check the readme.", "acceptance_criteria": ["It exists."] })
                    .to_string(),
            ),
            "plan" => Reply::text(json!({ "steps": ["Look", "Check"] }).to_string()),
            "judge" => Reply::text(
                json!({ "status": "PASS", "confidence": 0.9, "issues": [], "suggested_fixes": [],
                        "reasoning": "the readme is there" })
                .to_string(),
            ),
            _ => {
                gate.wait();
                Reply::text("Done.")
            }
        })
    })
}

/// A started project on the fake model, in a git repository (workflow runs need one).
fn project(fake: &FakeAnthropic) -> Project {
    let mut p = Project::new();
    let root = p.root().to_path_buf();
    std::fs::write(root.join("README.md"), "# demo\n").unwrap();
    std::fs::write(root.join(".gitignore"), ".ai/\n").unwrap();
    commit_all(&root);
    p.use_fake_model(&fake.base_url(), KEY_VAR);
    p.edit_config(|c| c["workflow"]["test_command"] = json!("test -f README.md"));
    p.start_with_env(&[(KEY_VAR, KEY)]);
    p
}

#[test]
fn the_dashboard_shows_steers_and_follows_in_a_real_browser() {
    let Some(driver_bin) = chromedriver_or_skip() else {
        return;
    };
    let gate = Arc::new(Gate::default());
    let fake = model(gate.clone());
    let p = project(&fake);
    p.capture(
        "Read",
        "The payment retry queue backs off exponentially: 1 s, 2 s, 4 s, up to 5 minutes, \
         then the payment is parked for a person to look at.",
    );
    p.sync();
    let thread = p.threads("active")[0]["id"].as_str().unwrap().to_string();

    // `ai ui` starts the server in the daemon and prints its address (with the token).
    let out = p.ai(&["--json", "ui", "--no-open"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ui: Value = serde_json::from_slice(&out.stdout).unwrap();
    let url = ui["url"].as_str().unwrap().to_string();
    let base = url.split("/?token=").next().unwrap().to_string();
    assert!(base.starts_with("http://127.0.0.1:"), "{url}");
    // What a browser is started with carries no lasting secret: a code for one visit.
    let token = url.split("token=").nth(1).unwrap().to_string();
    let open_url = ui["open_url"].as_str().unwrap().to_string();
    assert!(
        open_url.starts_with(&format!("{base}/?code=")),
        "{open_url}"
    );
    assert!(!open_url.contains(&token));
    // Asked again: the same server, not a second one.
    let again: Value =
        serde_json::from_slice(&p.ai(&["--json", "ui", "--no-open"]).stdout).unwrap();
    assert_eq!(again["url"], ui["url"]);

    let driver = Driver::start(&driver_bin);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // WebDriver here is plain HTTP on loopback; the client still wants a TLS provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut caps = serde_json::Map::new();
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .into_iter()
            .find(|b| std::path::Path::new(b).exists());
        let mut options = json!({ "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--window-size=1280,800", "--lang=en-US"] });
        if let Some(b) = chromium {
            options["binary"] = json!(b);
        }
        caps.insert("goog:chromeOptions".into(), options);
        caps.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
        let c = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .expect("a Chromium session");

        // Without the token: 401, and the page says how to get in.
        c.goto(&format!("{base}/")).await.unwrap();
        let refused = c.source().await.unwrap();
        assert!(refused.contains("ai ui"), "{refused}");
        let _ = console_errors(&c).await; // the 401 itself is logged; that one is expected

        // With the one-time address `ai ui` opens: the threads view lists the captured thread.
        c.goto(&open_url).await.unwrap();
        let table = wait_text(&c, "#threads-table", "the thread list", |t| {
            t.contains("retry") || t.contains("payment")
        })
        .await;
        assert!(!table.is_empty());
        screenshot(&c, "threads").await;

        // A thread's page; rename it and the CLI sees the new title.
        open(&c, &base, &format!("#/thread/{thread}")).await;
        type_into(&c, "#rename-input", "Payment retry policy").await;
        click(&c, "#rename-save").await;
        wait_text(&c, "#thread-title", "the new title", |t| {
            t.contains("Payment retry policy")
        })
        .await;
        let shown = p.ai_json(&["thread", &thread]);
        assert_eq!(shown["title"], "Payment retry policy");
        screenshot(&c, "thread").await;

        // Live: a capture made elsewhere appears on the open list without a reload.
        open(&c, &base, "#/threads").await;
        let list = wait_text(&c, "#threads-table", "the renamed thread", |t| {
            t.contains("Payment retry policy")
        })
        .await;
        c.execute("window.__same_page = true;", vec![])
            .await
            .unwrap();
        p.capture(
            "Bash",
            "cargo test -p billing: 42 passed; the invoice PDF renderer now embeds fonts so \
             printed invoices match the screen.",
        );
        p.sync();
        // A new thread, or one more message on the first: the list changes either way.
        wait_text(&c, "#threads-table", "the new capture, live", |t| t != list).await;
        let same = c
            .execute("return window.__same_page === true;", vec![])
            .await
            .unwrap();
        assert_eq!(same, json!(true), "the list updated without reloading");

        // The graph and the "why" view.
        open(&c, &base, "#/graph").await;
        c.wait()
            .at_most(DEADLINE)
            .for_element(Locator::Css(".graph svg circle"))
            .await
            .unwrap();
        screenshot(&c, "graph").await;
        open(&c, &base, "#/why").await;
        type_into(
            &c,
            "#why-prompt",
            "how does the payment retry queue back off?",
        )
        .await;
        click(&c, "#why-go").await;
        wait_text(&c, "#why-result", "the explanation", |t| {
            t.contains("Spoke") || t.contains("Silent")
        })
        .await;
        screenshot(&c, "why").await;

        // The assistant: a chat whose action waits for approval; approve it in the dialog and
        // the session goes on (the rule is added, the model answers).
        open(&c, &base, "#/assistant").await;
        type_into(&c, "#chat-input", "remember: tabs in Makefiles").await;
        click(&c, "#chat-send").await;
        c.wait()
            .at_most(DEADLINE)
            .for_element(Locator::Css("dialog#approval[open] #approve"))
            .await
            .unwrap();
        screenshot(&c, "assistant").await;
        click(&c, "dialog#approval[open] #approve").await;
        wait_text(&c, "#chat-log", "the answer after approval", |t| {
            t.contains("Rule added.")
        })
        .await;
        let rules = p.ai_json(&["rules"]);
        assert!(
            rules.to_string().contains("Always use tabs in Makefiles."),
            "{rules}"
        );
        open(&c, &base, "#/rules").await;
        wait_text(&c, "#rules", "the rule the assistant added", |t| {
            t.contains("Always use tabs in Makefiles.")
        })
        .await;
        screenshot(&c, "rules").await;

        // A workflow run: its page is open while the executor works; the events after it
        // arrive live, up to the end.
        let run = p.request(json!({ "run": { "action": "start", "task": "Check the readme" } }))
            ["id"]
            .as_str()
            .unwrap()
            .to_string();
        open(&c, &base, &format!("#/run/{run}")).await;
        wait_text(&c, "#run-events", "the first events", |t| {
            t.contains("phase")
        })
        .await;
        c.execute("window.__same_page = true;", vec![])
            .await
            .unwrap();
        let before = c
            .find_all(Locator::Css("#run-events > div"))
            .await
            .unwrap()
            .len();
        gate.open();
        c.wait()
            .at_most(DEADLINE)
            .for_element(Locator::Css("#run-events [data-type=\"end\"]"))
            .await
            .unwrap();
        let after = c
            .find_all(Locator::Css("#run-events > div"))
            .await
            .unwrap()
            .len();
        assert!(
            after > before + 1,
            "events arrived live: {before} then {after}"
        );
        let same = c
            .execute("return window.__same_page === true;", vec![])
            .await
            .unwrap();
        assert_eq!(same, json!(true));
        wait_text(&c, "#run-phase", "the final phase", |t| t == "complete").await;
        wait_text(&c, "#run-verdict", "the verdict", |t| t.contains("PASS")).await;
        screenshot(&c, "runs").await;

        // Dark, then a narrow window: still readable, nothing wider than the window.
        open(&c, &base, "#/threads").await;
        click(&c, "#theme").await;
        let theme = c
            .execute("return document.documentElement.dataset.theme;", vec![])
            .await
            .unwrap();
        assert!(theme == json!("dark") || theme == json!("light"), "{theme}");
        screenshot(&c, "threads-theme").await;
        assert!(!overflows(&c).await, "the page fits 1280 px");
        c.set_window_size(400, 800).await.unwrap();
        wait_text(&c, "#threads-table", "the list, narrow", |t| !t.is_empty()).await;
        assert!(!overflows(&c).await, "the page fits a narrow window");
        screenshot(&c, "threads-narrow").await;

        // Keyboard: the views are links and buttons reached by Tab.
        let focusable = c
            .execute(
                "return [...document.querySelectorAll('nav a, button, input, select')]\
                 .every(e => e.tabIndex >= 0);",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(focusable, json!(true));

        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        c.close().await.unwrap();
    });
}
