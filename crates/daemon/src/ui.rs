//! The dashboard inside the daemon: started by the first `ui` request, stopped with the
//! daemon. It reaches the memory only through the router, as the socket does, and follows the
//! daemon's events (memory saved, assistant events, runs started or ended) on one bus.

use crate::app::Daemon;
use ai_smartness_dashboard::{self as dashboard, Backend, BoxFuture, LiveEvent};
use ai_smartness_proto::protocol::{Command, ErrorCode, Response};
use ai_smartness_replies::{RunLine, UiStarted};
use serde::Serialize;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc, watch};

/// Events the bus holds for a slow page before it is told it missed some.
const BUS_CAPACITY: usize = 256;
/// A run's event lines queued for one page.
const RUN_LINES: usize = 64;

/// How the page's commands reach the services: the router's own way, handed in by the router
/// (the dashboard answers what the socket would).
pub type Route = fn(Daemon, Command) -> BoxFuture<Response>;

/// Starts the dashboard unless it runs already; says where it is, with a fresh one-time
/// address for a browser.
pub async fn ensure(daemon: &Daemon, route: Route) -> Response {
    let slot = daemon.dashboard();
    let running = slot.cell().initialized();
    let started = slot
        .cell()
        .get_or_try_init(|| start(daemon, route, slot.limits()))
        .await;
    match started.and_then(|d| Ok((d, d.one_time_url()?))) {
        Ok((d, open_url)) => Response::reply(&UiStarted {
            url: d.url(),
            open_url,
            port: d.port(),
            started: !running,
        }),
        Err(e) => Response::error(ErrorCode::Ui, format!("the dashboard could not start: {e}")),
    }
}

async fn start(
    daemon: &Daemon,
    route: Route,
    limits: dashboard::Limits,
) -> std::io::Result<dashboard::Dashboard> {
    let bus = broadcast::channel(BUS_CAPACITY).0;
    forward(daemon, &bus);
    let backend = Arc::new(RouterBackend {
        daemon: daemon.clone(),
        route,
        bus,
    });
    let mut stop = daemon.life().subscribe_shutdown();
    let (d, server) = dashboard::start(backend, limits, async move {
        let _ = stop.recv().await;
    })
    .await?;
    daemon.life().spawn(server);
    tracing::info!("dashboard listening on 127.0.0.1:{}", d.port());
    Ok(d)
}

/// What the page is told when the memory or the runs change: how many changes so far.
#[derive(Serialize)]
struct Changed {
    changes: u64,
}

/// Feeds the bus from the daemon's own signals, until the daemon stops.
fn forward(daemon: &Daemon, bus: &broadcast::Sender<LiveEvent>) {
    follow_count(daemon, bus, "memory", daemon.memory().subscribe_saved());
    follow_count(daemon, bus, "run", daemon.runs().subscribe_changes());
    let mut events = daemon.assistant().subscribe();
    let mut stop = daemon.life().subscribe_shutdown();
    let bus = bus.clone();
    daemon.life().spawn(async move {
        loop {
            let next = tokio::select! {
                e = events.recv() => e,
                _ = stop.recv() => return,
            };
            let event = match next {
                Ok(e) => live("session", &e),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    live("lagged", &Changed { changes: n })
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let _ = bus.send(event);
        }
    });
}

/// One bus event per change of a counter (changes close together may come as one).
fn follow_count(
    daemon: &Daemon,
    bus: &broadcast::Sender<LiveEvent>,
    kind: &'static str,
    mut count: watch::Receiver<u64>,
) {
    let mut stop = daemon.life().subscribe_shutdown();
    let bus = bus.clone();
    daemon.life().spawn(async move {
        loop {
            tokio::select! {
                changed = count.changed() => if changed.is_err() { return },
                _ = stop.recv() => return,
            }
            let changes = *count.borrow_and_update();
            let _ = bus.send(live(kind, &Changed { changes }));
        }
    });
}

fn live<T: Serialize>(kind: &'static str, data: &T) -> LiveEvent {
    LiveEvent {
        kind,
        data: serde_json::to_string(data)
            .unwrap_or_else(|_| "{}".into())
            .into(),
    }
}

/// The page's commands go through the router, as the socket's do.
struct RouterBackend {
    daemon: Daemon,
    route: Route,
    bus: broadcast::Sender<LiveEvent>,
}

impl Backend for RouterBackend {
    fn call(&self, command: Command) -> BoxFuture<Response> {
        (self.route)(self.daemon.clone(), command)
    }

    fn watch_run(&self, id: String) -> BoxFuture<Result<mpsc::Receiver<String>, Response>> {
        let d = self.daemon.clone();
        Box::pin(async move {
            let mut lines = d.runs().watch(&id)?;
            let (tx, rx) = mpsc::channel(RUN_LINES);
            d.life().spawn(async move {
                while let Some(line) = lines.recv().await {
                    let Ok(text) = serde_json::to_string::<RunLine>(&line) else {
                        continue;
                    };
                    if tx.send(text).await.is_err() {
                        return;
                    }
                }
            });
            Ok(rx)
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.bus.subscribe()
    }
}
