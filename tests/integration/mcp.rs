//! `ai mcp`, the MCP server, spoken to over its stdin and stdout as a client does (JSON-RPC, one
//! message per line), in front of a real daemon: the handshake, the tool list and its schemas,
//! each tool's answer, strict arguments, unknown ids, and a daemon that is down.

use crate::harness::{Project, AI};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// A reply slower than this fails the test instead of hanging it.
const REPLY_WITHIN: Duration = Duration::from_secs(30);

/// One `ai mcp` process and its session.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
}

impl Session {
    /// Starts `ai mcp` in the project and completes the handshake.
    fn start(project: &Project) -> Session {
        let mut child = Command::new(AI)
            .arg("mcp")
            .current_dir(project.root())
            .env("AI_SMARTNESS_DATA_DIR", &project.data_dir)
            .env_remove("CLAUDE_CODE_ENTRYPOINT")
            .env_remove("AI_SMARTNESS_HOOK_RUNNING")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ai mcp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        let mut s = Session {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let init = s.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "test", "version": "1" }
            }),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "ai-smartness",
            "{init}"
        );
        s.notify("notifications/initialized");
        s
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method }));
    }

    /// Sends a request and returns its reply (notifications in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let line = self
                .lines
                .recv_timeout(REPLY_WITHIN)
                .unwrap_or_else(|_| panic!("no reply to {method} within {REPLY_WITHIN:?}"));
            let v: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// Calls a tool: whether it is an error result, and its text.
    fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let v = self.request("tools/call", json!({ "name": tool, "arguments": args }));
        let r = &v["result"];
        assert!(r.is_object(), "{tool}: not a tool result: {v}");
        let text = r["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        (r["isError"] == json!(true), text)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn project_with_work() -> Project {
    let mut p = Project::new();
    p.start();
    p.capture(
        "UserPrompt",
        "Investigate why the zephyrwave billing export drops rows with null currency codes",
    );
    p.capture(
        "Bash",
        "$ ./export --dry-run\nzephyrwave export: 3 rows dropped, currency_code NULL in rows 17, 42, 99 \
         (quokkaledger_sync.sql joins currencies with an inner join)",
    );
    p.capture(
        "UserPrompt",
        "Make the websocket reconnect loop in the mobile client give up after five attempts",
    );
    p.sync();
    p
}

#[test]
fn mcp_lists_nine_strict_tools_with_descriptions() {
    let p = project_with_work();
    let mut s = Session::start(&p);
    let list = s.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "forget",
            "get_thread",
            "never_recall",
            "pin",
            "recent",
            "remember",
            "search",
            "timeline",
            "why"
        ]
    );
    for t in &tools {
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert_eq!(schema["additionalProperties"], false, "{t}");
        assert!(
            t["description"].as_str().is_some_and(|d| d.len() > 40),
            "{t}"
        );
        for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
            assert!(prop["description"].is_string(), "{}.{name}", t["name"]);
        }
    }
    let search = tools.iter().find(|t| t["name"] == "search").unwrap();
    assert_eq!(search["inputSchema"]["required"], json!(["query"]));
    assert_eq!(search["annotations"]["readOnlyHint"], true);
    let forget = tools.iter().find(|t| t["name"] == "forget").unwrap();
    assert_eq!(forget["annotations"]["destructiveHint"], true);
}

#[test]
fn mcp_search_thread_timeline_and_why_read_the_memory() {
    let p = project_with_work();
    let mut s = Session::start(&p);

    let (err, text) = s.call(
        "search",
        json!({ "query": "zephyrwave export currency rows" }),
    );
    assert!(!err, "{text}");
    assert!(text.contains("17, 42, 99"), "{text}");
    let first = text.split("\n2. ").next().unwrap();
    assert!(
        first.contains("zephyrwave"),
        "an unrelated thread leads: {text}"
    );
    let thread = text
        .split_whitespace()
        .find(|w| w.starts_with("thread_"))
        .expect("a thread id")
        .to_string();
    let message = text
        .split_whitespace()
        .find(|w| w.starts_with("msg_"))
        .expect("a message id")
        .to_string();

    // A page of one message, then the next.
    let (err, page) = s.call("get_thread", json!({ "id": thread, "limit": 1 }));
    assert!(!err, "{page}");
    assert!(page.contains("Messages 1–1 of "), "{page}");
    assert!(page.contains("Next page: offset = 1"), "{page}");
    let (err, second) = s.call(
        "get_thread",
        json!({ "id": thread, "offset": 1, "limit": 1 }),
    );
    assert!(!err && second.contains("Messages 2–2 of "), "{second}");

    let (err, around) = s.call("timeline", json!({ "around": message, "limit": 3 }));
    assert!(!err && around.contains(&message), "{around}");
    let (err, recent) = s.call("recent", json!({ "limit": 1 }));
    assert!(!err, "{recent}");
    assert!(recent.contains("websocket"), "the latest message: {recent}");
    assert!(recent.contains("earlier message(s)"), "{recent}");

    let (err, why) = s.call(
        "why",
        json!({ "prompt": "why does the zephyrwave export drop rows?" }),
    );
    assert!(!err && why.contains("The memory speaks"), "{why}");

    // A period with nothing in it.
    let (err, empty) = s.call("timeline", json!({ "until": "2001-01-01" }));
    assert!(!err && empty.contains("Nothing recorded"), "{empty}");
}

#[test]
fn mcp_refuses_bad_arguments_and_unknown_ids_by_name() {
    let p = project_with_work();
    let mut s = Session::start(&p);
    // A line that is not JSON gets JSON-RPC's parse error, and the session goes on.
    writeln!(s.stdin, "{{\"jsonrpc\": \"2.0\", \"id\": 77, \"method\": ").unwrap();
    s.stdin.flush().unwrap();
    let answer: Value = serde_json::from_str(&s.lines.recv_timeout(REPLY_WITHIN).unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(answer["id"].is_null(), "{answer}");
    let listed = s.request("tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    for (tool, args, says) in [
        ("search", json!({ "query": "x", "bogus": 1 }), "bogus"),
        (
            "search",
            json!({ "query": "x", "limit": "five" }),
            "invalid type",
        ),
        ("search", json!({}), "query"),
        (
            "search",
            json!({ "query": "x", "status": "sleeping" }),
            "sleeping",
        ),
        (
            "search",
            json!({ "query": "x", "since": "last week" }),
            "since",
        ),
        (
            "get_thread",
            json!({ "id": "thread_nope" }),
            "no thread thread_nope",
        ),
        (
            "timeline",
            json!({ "around": "msg_nope" }),
            "no message msg_nope",
        ),
        ("pin", json!({ "id": "thread_nope" }), "thread_nope"),
        ("remember", json!({ "text": "   " }), "nothing to remember"),
    ] {
        let (err, text) = s.call(tool, args.clone());
        assert!(err, "{tool} {args} should fail: {text}");
        assert!(text.contains(says), "{tool} {args}: {text}");
    }
}

#[test]
fn mcp_notes_pins_and_forgets_through_the_daemon() {
    let p = project_with_work();
    let mut s = Session::start(&p);
    let (err, text) = s.call(
        "remember",
        json!({ "text": "Deploys go out on Tuesdays only; token sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 rotates monthly", "title": "Deploy days" }),
    );
    assert!(!err, "{text}");
    let id = text
        .split_whitespace()
        .find(|w| w.starts_with("thread_"))
        .unwrap()
        .to_string();
    let stored = p.all_message_texts().join("\n");
    assert!(
        stored.contains("Deploys go out on Tuesdays only"),
        "{stored}"
    );
    assert!(
        !stored.contains("sk-ant-api03"),
        "a secret was stored: {stored}"
    );
    let t = p.request(json!({ "thread": { "id": id } }));
    assert_eq!(t["title"], "Deploy days");
    assert_eq!(t["title_by"], "person");

    let (err, text) = s.call("pin", json!({ "id": id }));
    assert!(!err && text.contains("pinned"), "{text}");
    let (err, _) = s.call("never_recall", json!({ "id": id }));
    assert!(!err);
    let t = p.request(json!({ "thread": { "id": id } }));
    assert_eq!(
        (t["pinned"].clone(), t["never_recall"].clone()),
        (json!(true), json!(true))
    );

    let (err, text) = s.call("forget", json!({ "id": id }));
    assert!(!err && text.contains("suspended"), "{text}");
    assert_eq!(
        p.request(json!({ "thread": { "id": id } }))["status"],
        "suspended"
    );
    // Attended (no unattended entrypoint in this process's environment): delete goes through.
    let (err, text) = s.call("forget", json!({ "id": id, "delete": true }));
    assert!(!err && text.contains("deleted"), "{text}");
    assert!(p.threads("all").iter().all(|t| t["id"] != json!(id)));
}

#[test]
fn mcp_starts_a_daemon_that_is_down_and_says_so_when_it_cannot() {
    let mut p = project_with_work();
    p.stop();
    let mut s = Session::start(&p);
    // Down: the first call starts it (the memory is on disk) and answers.
    let (err, text) = s.call("search", json!({ "query": "zephyrwave export" }));
    assert!(!err, "{text}");
    assert!(text.contains("17, 42, 99"), "{text}");
    let out = p.ai(&["daemon", "stop"]);
    assert!(out.status.success());

    // A config that cannot load: the start fails, and the tool says so instead of hanging.
    std::fs::write(p.paths.config(), "{ not json").unwrap();
    let (err, text) = s.call("recent", json!({}));
    assert!(err, "{text}");
    assert!(text.contains("daemon"), "{text}");
    // A server started on that config still starts, and says the same per call.
    let mut again = Session::start(&p);
    let (err, text) = again.call("recent", json!({}));
    assert!(err && text.contains("daemon"), "{text}");
}
