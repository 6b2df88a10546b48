//! Dashboard benchmark: how soon a person sees their threads, and what the page weighs.
//!
//!     cargo bench --bench dashboard       (AI_BENCH_QUICK=1 for fewer loads)
//!
//! A real daemon over a project seeded with 100, 1,000 and 10,000 threads, `ai ui`, and
//! headless Chromium (Debian's, `scripts/fetch-chromium.sh`) driven over WebDriver. Each load
//! is a fresh page (cache off): the browser's first contentful paint, and the moment the
//! threads list is on screen (the page marks it with the User Timing API), from navigation
//! start. Beside them, in the same run, `ai threads --json` for the same list from the CLI
//! (the baseline: what the page adds over reading the data). Prints the page weight (what a
//! first visit downloads) and the list's reply size. Writes `bench-results/dashboard.json`.

mod common;

use common::{percentile, seed_project, Daemon, AI};
use fantoccini::{ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromedriver() -> Option<PathBuf> {
    std::env::var_os("AI_SMARTNESS_CHROMEDRIVER")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/usr/bin/chromedriver")))
        .filter(|p| p.is_file())
}

struct Row {
    threads: usize,
    paint: Vec<f64>,
    listed: Vec<f64>,
    cli: Vec<f64>,
    reply_bytes: usize,
}

fn main() {
    let Some(driver_bin) = chromedriver() else {
        eprintln!("!! no chromedriver: run scripts/fetch-chromium.sh");
        std::process::exit(1);
    };
    let quick = std::env::var_os("AI_BENCH_QUICK").is_some();
    let loads = if quick { 3 } else { 10 };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut driver = Command::new(&driver_bin)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for n in [100, 1_000, 10_000] {
        let dir = tempfile::Builder::new()
            .prefix("aiui")
            .tempdir_in("/tmp")
            .unwrap();
        let paths = seed_project(dir.path(), n);
        let (daemon, _) = Daemon::start(&paths);
        daemon.settle();
        let ui = daemon.call(json!({ "ui": {} }));
        let url = ui["url"].as_str().unwrap().to_string();
        let mut row = Row {
            threads: n,
            paint: vec![],
            listed: vec![],
            cli: vec![],
            reply_bytes: 0,
        };
        for _ in 0..loads {
            let t = Instant::now();
            let out = Command::new(AI)
                .arg("--project")
                .arg(&paths.root)
                .args(["--json", "threads", "--limit", "500"])
                .output()
                .unwrap();
            row.cli.push(t.elapsed().as_secs_f64() * 1e3);
            row.reply_bytes = out.stdout.len();
        }
        rt.block_on(async {
            // WebDriver here is plain HTTP on loopback; the client still wants a TLS provider.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut caps = serde_json::Map::new();
            caps.insert(
                "goog:chromeOptions".into(),
                json!({ "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                    "--disable-dev-shm-usage", "--window-size=1280,800", "--disk-cache-size=1"] }),
            );
            let c = ClientBuilder::new(HttpConnector::new())
                .capabilities(caps)
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
                .unwrap();
            // The token becomes a cookie once; every measured load is of the plain address.
            c.goto(&url).await.unwrap();
            let base = url.split("/?token=").next().unwrap().to_string();
            for _ in 0..loads {
                c.goto("about:blank").await.unwrap();
                c.goto(&format!("{base}/#/threads")).await.unwrap();
                c.wait()
                    .at_most(Duration::from_secs(60))
                    .for_element(Locator::Css("#threads-table"))
                    .await
                    .unwrap();
                let timing: Value = c
                    .execute(
                        "const p = performance.getEntriesByName('first-contentful-paint')[0];\
                         const l = performance.getEntriesByName('threads-listed')[0];\
                         return [p ? p.startTime : null, l ? l.startTime : null];",
                        vec![],
                    )
                    .await
                    .unwrap();
                row.paint.push(timing[0].as_f64().unwrap_or(f64::NAN));
                row.listed.push(timing[1].as_f64().unwrap_or(f64::NAN));
            }
            c.close().await.unwrap();
        });
        drop(daemon);
        rows.push(row);
    }
    let _ = driver.kill();
    let _ = driver.wait();

    let weight = page_weight();
    println!("Dashboard: first paint and threads list on screen, fresh page, {loads} loads each");
    println!(
        "{:>8} | {:>17} | {:>19} | {:>17} | {:>8} | {:>11}",
        "threads",
        "first paint p50",
        "list shown p50/p95",
        "ai threads p50",
        "ratio",
        "reply bytes"
    );
    let mut out = Vec::new();
    for r in &rows {
        let (paint, listed, listed95, cli) = (
            percentile(&r.paint, 0.5),
            percentile(&r.listed, 0.5),
            percentile(&r.listed, 0.95),
            percentile(&r.cli, 0.5),
        );
        println!(
            "{:>8} | {:>14.1} ms | {:>8.1} / {:>6.1} ms | {:>14.1} ms | {:>7.2}x | {:>11}",
            r.threads,
            paint,
            listed,
            listed95,
            cli,
            listed / cli,
            r.reply_bytes
        );
        out.push(json!({ "threads": r.threads, "first_paint_ms_p50": paint,
            "list_shown_ms_p50": listed, "list_shown_ms_p95": listed95, "cli_threads_ms_p50": cli,
            "threads_reply_bytes": r.reply_bytes }));
    }
    println!(
        "Page weight (HTML, script, style, icon; no library, nothing from elsewhere): {} bytes ({:.1} KB)",
        weight,
        weight as f64 / 1024.0
    );
    println!("(list shown / ai threads: the page against the CLI reading the same 500 threads)");
    std::fs::create_dir_all("bench-results").unwrap();
    std::fs::write(
        "bench-results/dashboard.json",
        serde_json::to_vec_pretty(&json!({ "rows": out, "page_weight_bytes": weight })).unwrap(),
    )
    .unwrap();
}

/// The embedded files' sizes, as the binary serves them.
fn page_weight() -> usize {
    ai_smartness_dashboard::page_weight()
}
