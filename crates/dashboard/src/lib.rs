//! The local dashboard (`ai ui`): a web page to see the memory, steer it, talk to the assistant
//! and follow workflow runs.
//!
//! It runs inside the daemon, on 127.0.0.1 and a free port, behind a token made at each start
//! ([`auth`]). It holds no state and no logic of its own: every read and every edit is one of
//! the daemon's commands, sent through a [`Backend`] the daemon implements, so the page and the
//! CLI go through the same code. Live updates come from the daemon's event bus as
//! Server-Sent Events. The page (HTML, script, style) is embedded in the binary: nothing is
//! fetched from elsewhere at run time.

mod assets;
pub mod auth;
mod serve;

pub use assets::page_weight;
pub use serve::Limits;

use ai_smartness_proto::protocol::{parse_request, Command, ErrorCode, Request, Response};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::stream::{self, Stream};
use std::convert::Infallible;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// A future the backend answers with.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the dashboard asks of the daemon.
pub trait Backend: Send + Sync + 'static {
    /// Applies one command as the socket would (the same router, the same services).
    fn call(&self, command: Command) -> BoxFuture<Response>;
    /// A workflow run's events as JSON lines, the stored ones first, until the run is over;
    /// the daemon's error reply for an unknown run.
    fn watch_run(&self, id: String) -> BoxFuture<Result<mpsc::Receiver<String>, Response>>;
    /// The daemon's live events.
    fn subscribe(&self) -> broadcast::Receiver<LiveEvent>;
}

/// One event of the daemon's bus, serialized by whoever sent it.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    /// `memory` (threads or bridges changed), `session` (an assistant event), `run` (a
    /// workflow run changed phase or ended).
    pub kind: &'static str,
    /// The event as JSON.
    pub data: Arc<str>,
}

/// A started dashboard: where it listens and what opens it.
#[derive(Debug, Clone)]
pub struct Dashboard {
    addr: SocketAddr,
    guard: Arc<auth::Guard>,
}

impl Dashboard {
    /// The reusable address: it carries this start's token. For the person's terminal only,
    /// never for another process's command line (any local user can read those).
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.guard.token())
    }

    /// An address for a browser's command line: it carries a code good for one visit within
    /// [`auth::CODE_LIFETIME`], exchanged for the token's cookie.
    pub fn one_time_url(&self) -> std::io::Result<String> {
        Ok(format!(
            "http://{}/?code={}",
            self.addr,
            self.guard.mint_code()?
        ))
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

/// Shared by the handlers.
struct App {
    backend: Arc<dyn Backend>,
    guard: Arc<auth::Guard>,
    /// Open event streams: each holds a permit until its page goes away.
    streams: Arc<tokio::sync::Semaphore>,
}

/// Event streams open at once (a few tabs each with a run open); past it, 503.
const MAX_STREAMS: usize = 16;

/// Binds 127.0.0.1 on a free port. Returns the dashboard and the server, which runs within
/// `limits` until `stop` resolves (the caller spawns it among its tracked tasks).
pub async fn start(
    backend: Arc<dyn Backend>,
    limits: Limits,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<(Dashboard, impl Future<Output = ()> + Send + 'static)> {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    let guard = Arc::new(auth::Guard::new(addr.port())?);
    let dashboard = Dashboard {
        addr,
        guard: guard.clone(),
    };
    let app = Arc::new(App {
        backend,
        guard: guard.clone(),
        streams: Arc::new(tokio::sync::Semaphore::new(MAX_STREAMS)),
    });
    let router = routes(app).layer(axum::middleware::from_fn_with_state(guard, auth::check));
    let server = serve::serve(listener, router, limits, stop);
    Ok((dashboard, server))
}

fn routes(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/{name}", get(asset))
        .route(auth::PUBLIC_ICON, get(icon))
        .route("/api/command", post(command))
        .route("/api/events", get(events))
        .route("/api/runs/{id}/events", get(run_events))
        .with_state(app)
}

async fn index(State(app): State<Arc<App>>) -> impl IntoResponse {
    assets::index(app.guard.csrf())
}

async fn asset(Path(name): Path<String>) -> axum::response::Response {
    assets::file(&name)
}

/// Browsers ask for `/favicon.ico` on their own, even on the refusal page: answer with the icon.
async fn icon() -> axum::response::Response {
    assets::file("icon.svg")
}

/// Whether the page may send this command. The page reads and edits the memory, talks to the
/// assistant and steers runs; it does not stop the daemon, capture, or stream over this call
/// (live data comes from the event routes).
fn allowed(command: &Command) -> bool {
    use Command::*;
    matches!(
        command,
        Status(_)
            | Health(_)
            | Threads(_)
            | Thread(_)
            | ThreadEdit(_)
            | Bridges(_)
            | Bridge(_)
            | BridgeEdit(_)
            | Search(_)
            | Recall(_)
            | Timeline(_)
            | Rules(_)
            | Context(_)
            | Mode(_)
            | Chat(_)
            | Sessions(_)
            | Session(_)
            | Approve(_)
            | Reject(_)
            | Answer(_)
            | Automation(_)
            | Run(_)
    )
}

/// `POST /api/command`: one command, as the socket takes it, answered as the socket answers.
async fn command(State(app): State<Arc<App>>, body: Bytes) -> (StatusCode, Json<Response>) {
    let command = match parse_request(&body) {
        Ok(Request::Command(c)) if allowed(&c) => c,
        Ok(_) => {
            return (
                StatusCode::FORBIDDEN,
                Json(Response::error(
                    ErrorCode::Forbidden,
                    "the dashboard does not send this request",
                )),
            )
        }
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(Response::error(e.code(), e.to_string())),
            )
        }
    };
    // The page follows rounds through the event route, never by holding this call open.
    let command = match command {
        Command::Chat(mut c) => {
            c.follow = false;
            Command::Chat(c)
        }
        Command::Approve(mut r) => {
            r.follow = false;
            Command::Approve(r)
        }
        Command::Reject(mut r) => {
            r.follow = false;
            Command::Reject(r)
        }
        Command::Answer(mut r) => {
            r.follow = false;
            Command::Answer(r)
        }
        other => other,
    };
    (StatusCode::OK, Json(app.backend.call(command).await))
}

/// How often an idle event stream says it is alive (proxies and browsers drop silent ones).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A stream of Server-Sent Events.
type Events = Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>>;

fn sse(events: Events) -> axum::response::Response {
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}

/// What a page is told when [`MAX_STREAMS`] event streams are open already.
fn too_many_streams() -> axum::response::Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(Response::error(
            ErrorCode::Busy,
            format!("{MAX_STREAMS} event streams are open already: close a tab"),
        )),
    )
        .into_response()
}

/// `GET /api/events`: the daemon's bus, until the page goes away. A page too slow to keep up
/// is told how many events it missed (and reloads what it shows).
async fn events(State(app): State<Arc<App>>) -> axum::response::Response {
    let Ok(permit) = app.streams.clone().try_acquire_owned() else {
        return too_many_streams();
    };
    let rx = app.backend.subscribe();
    // The permit lives as long as the stream.
    let s = stream::unfold((rx, permit), |(mut rx, permit)| async move {
        let event = match rx.recv().await {
            Ok(e) => Event::default().event(e.kind).data(&*e.data),
            Err(broadcast::error::RecvError::Lagged(n)) => Event::default()
                .event("lagged")
                .data(format!("{{\"changes\":{n}}}")),
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(event), (rx, permit)))
    });
    sse(Box::pin(s))
}

/// `GET /api/runs/ID/events`: one run's events, the stored ones first, then live until it is
/// over (then an `end` event).
async fn run_events(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> axum::response::Response {
    let Ok(permit) = app.streams.clone().try_acquire_owned() else {
        return too_many_streams();
    };
    let rx = match app.backend.watch_run(id).await {
        Ok(rx) => rx,
        Err(e) => return (StatusCode::NOT_FOUND, Json(e)).into_response(),
    };
    let s = stream::unfold(Some((rx, permit)), |state| async move {
        let (mut rx, permit) = state?;
        match rx.recv().await {
            Some(line) => Some((
                Ok(Event::default().event("run_event").data(line)),
                Some((rx, permit)),
            )),
            None => Some((Ok(Event::default().event("end").data("{}")), None)),
        }
    });
    sse(Box::pin(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Answers every command with its own name, and counts nothing: the HTTP side is what is
    /// tested here (the daemon's own tests drive the real backend).
    struct Echo(broadcast::Sender<LiveEvent>);

    impl Backend for Echo {
        fn call(&self, command: Command) -> BoxFuture<Response> {
            let name = serde_json::to_value(&command)
                .ok()
                .and_then(|v| v.as_object()?.keys().next().cloned())
                .unwrap_or_default();
            Box::pin(async move { Response::ok(serde_json::Value::String(name)) })
        }
        fn watch_run(&self, id: String) -> BoxFuture<Result<mpsc::Receiver<String>, Response>> {
            Box::pin(async move {
                if id != "run_1" {
                    return Err(Response::error(ErrorCode::NotFound, "no such run"));
                }
                let (tx, rx) = mpsc::channel(4);
                tx.send("{\"phase\":\"complete\"}".to_string()).await.ok();
                Ok(rx)
            })
        }
        fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
            self.0.subscribe()
        }
    }

    async fn http(addr: SocketAddr, raw: String) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(raw.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    fn get(path: &str, port: u16, extra: &str) -> String {
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{extra}\r\n")
    }

    fn post(body: &str, port: u16, extra: &str) -> String {
        format!(
            "POST /api/command HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n{body}",
            body.len()
        )
    }

    #[tokio::test]
    async fn the_token_the_csrf_token_and_the_allowed_commands_are_enforced() {
        let bus = broadcast::channel(8).0;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (dash, server) = start(Arc::new(Echo(bus)), Limits::default(), async {
            stop_rx.await.ok();
        })
        .await
        .unwrap();
        let served = tokio::spawn(server);
        let addr: SocketAddr = ([127, 0, 0, 1], dash.port()).into();
        let port = dash.port();
        let token = dash.url().split("token=").nth(1).unwrap().to_string();

        // No token: 401, page and API alike.
        assert!(http(addr, get("/", port, ""))
            .await
            .starts_with("HTTP/1.1 401"));
        assert!(http(addr, post(r#"{"status":true}"#, port, ""))
            .await
            .starts_with("HTTP/1.1 401"));
        // Another host name on the same port (DNS rebinding): refused.
        let rebound = get("/", port, "").replace("127.0.0.1", "evil.example");
        assert!(http(addr, rebound).await.starts_with("HTTP/1.1 403"));

        // The URL's token: a cookie and a redirect without it.
        let first = http(addr, get(&format!("/?token={token}"), port, "")).await;
        assert!(first.starts_with("HTTP/1.1 303"), "{first}");
        assert!(first.contains(&format!(
            "{}={token}; HttpOnly; SameSite=Strict",
            auth::COOKIE
        )));
        let cookie = format!("Cookie: {}={token}\r\n", auth::COOKIE);
        let page = http(addr, get("/", port, &cookie)).await;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("content-security-policy"), "{page}");
        let csrf = page
            .split("name=\"csrf\" content=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .to_string();
        assert_eq!(csrf.len(), 64);

        // A change without the CSRF token, or from another origin: 403.
        assert!(http(addr, post(r#"{"status":true}"#, port, &cookie))
            .await
            .starts_with("HTTP/1.1 403"));
        let cross = format!("{cookie}X-CSRF-Token: {csrf}\r\nOrigin: http://evil.example\r\n");
        assert!(http(addr, post(r#"{"status":true}"#, port, &cross))
            .await
            .starts_with("HTTP/1.1 403"));
        // With both: the backend answers.
        let ok = format!("{cookie}X-CSRF-Token: {csrf}\r\nOrigin: http://127.0.0.1:{port}\r\n");
        let reply = http(addr, post(r#"{"status":true}"#, port, &ok)).await;
        assert!(
            reply.contains(r#"{"ok":true,"result":"status"}"#),
            "{reply}"
        );
        // What the page never sends: refused before the backend.
        for body in [r#"{"shutdown":true}"#, r#"{"tool":"Bash","content":"x"}"#] {
            let reply = http(addr, post(body, port, &ok)).await;
            assert!(reply.starts_with("HTTP/1.1 403"), "{body}: {reply}");
        }
        let reply = http(addr, post("{not json", port, &ok)).await;
        assert!(reply.starts_with("HTTP/1.1 400") && reply.contains("bad_request"));

        // A run's events: the stored ones, then the end; an unknown run is a 404.
        let run = http(addr, get("/api/runs/run_1/events", port, &cookie)).await;
        assert!(
            run.contains("event: run_event\ndata: {\"phase\":\"complete\"}"),
            "{run}"
        );
        assert!(run.contains("event: end"), "{run}");
        assert!(http(addr, get("/api/runs/nope/events", port, &cookie))
            .await
            .starts_with("HTTP/1.1 404"));
        // Assets are embedded; an unknown one is a 404.
        assert!(http(addr, get("/assets/app.js", port, &cookie))
            .await
            .starts_with("HTTP/1.1 200"));
        assert!(http(addr, get("/assets/nope.js", port, &cookie))
            .await
            .starts_with("HTTP/1.1 404"));
        // The icon a browser asks for by itself is public; nothing else is.
        let icon = http(addr, get("/favicon.ico", port, "")).await;
        assert!(
            icon.starts_with("HTTP/1.1 200") && icon.contains("image/svg+xml"),
            "{icon}"
        );
        assert!(http(addr, get("/assets/icon.svg", port, ""))
            .await
            .starts_with("HTTP/1.1 401"));

        stop_tx.send(()).unwrap();
        served.await.unwrap();
    }

    #[tokio::test]
    async fn a_one_time_address_opens_once() {
        let bus = broadcast::channel(8).0;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (dash, server) = start(Arc::new(Echo(bus)), Limits::default(), async {
            stop_rx.await.ok();
        })
        .await
        .unwrap();
        let served = tokio::spawn(server);
        let addr: SocketAddr = ([127, 0, 0, 1], dash.port()).into();
        let port = dash.port();
        let open = dash.one_time_url().unwrap();
        let code = open.split("code=").nth(1).unwrap().to_string();
        assert!(!open.contains(dash.url().split("token=").nth(1).unwrap()));
        let token = dash.url().split("token=").nth(1).unwrap().to_string();

        // The code gives the token's cookie, once.
        let first = http(addr, get(&format!("/?code={code}"), port, "")).await;
        assert!(first.starts_with("HTTP/1.1 303"), "{first}");
        assert!(
            first.contains(&format!("{}={token}", auth::COOKIE)),
            "{first}"
        );
        let again = http(addr, get(&format!("/?code={code}"), port, "")).await;
        assert!(again.starts_with("HTTP/1.1 401"), "{again}");
        assert!(!again.contains(&token));
        let made_up = http(addr, get("/?code=0123", port, "")).await;
        assert!(made_up.starts_with("HTTP/1.1 401"), "{made_up}");
        stop_tx.send(()).unwrap();
        served.await.unwrap();
    }

    #[tokio::test]
    async fn connections_are_capped_and_silent_ones_closed() {
        let bus = broadcast::channel(8).0;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let limits = Limits {
            max_connections: 2,
            header_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(600),
        };
        let (dash, server) = start(Arc::new(Echo(bus)), limits, async {
            stop_rx.await.ok();
        })
        .await
        .unwrap();
        let served = tokio::spawn(server);
        let addr: SocketAddr = ([127, 0, 0, 1], dash.port()).into();
        let port = dash.port();

        // Two connections that send half a request head take both slots...
        let mut half = Vec::new();
        for _ in 0..2 {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1")
                .await
                .unwrap();
            half.push(s);
        }
        // ...so a third is not served while they hold them...
        let third = tokio::spawn(http(addr, get("/", port, "")));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!third.is_finished(), "served past the cap");
        // ...until the head's time is up: they are closed, and the third gets its answer.
        for mut s in half {
            let mut buf = Vec::new();
            let closed =
                tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
            assert!(closed.is_ok(), "a half-sent head kept its connection");
        }
        let answer = tokio::time::timeout(Duration::from_secs(10), third)
            .await
            .unwrap()
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");

        // A connection that never sends a byte is closed too.
        let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut buf = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(10), silent.read_to_end(&mut buf)).await;
        assert!(closed.is_ok(), "a silent connection was kept");
        stop_tx.send(()).unwrap();
        served.await.unwrap();
    }
}
