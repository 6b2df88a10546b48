//! The dashboard's HTTP server: one task per connection, within limits that keep the daemon
//! safe from whoever can reach the port (any local user can open a TCP connection to it).
//!
//! - **Connections**: at most [`Limits::max_connections`] at once, taken from the daemon's file
//!   budget beside (never from) the socket's: past it, new connections wait in the kernel's
//!   queue, where they hold no descriptor of the daemon's.
//! - **Time**: a request's head must arrive within [`Limits::header_timeout`] (a connection
//!   that sends a few bytes and then nothing is closed), and a connection over which nothing
//!   moves either way for [`Limits::idle_timeout`] is closed (event streams say they are alive
//!   more often than that).
//! - **Stop**: at the daemon's stop, connections finish the request they are answering and
//!   close; event streams are cut.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

/// What the dashboard may make the daemon hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// A request's head (its line and headers) must arrive within this, counted from when the
    /// connection is ready for it.
    pub header_timeout: Duration,
    /// A connection over which no byte moves for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 64,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// How long connections get to finish what they answer once the daemon stops.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Serves `router` on `listener` within `limits` until `stop` resolves.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stop: impl Future<Output = ()> + Send + 'static,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stopping, stopped) = watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut backoff = Duration::from_millis(10);
    tokio::pin!(stop);
    loop {
        // A slot first: a connection is accepted only when it can be held.
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
            _ = &mut stop => break,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = &mut stop => break,
        };
        // Reap the connections that ended, so the set does not grow with them.
        while connections.try_join_next().is_some() {}
        let (tcp, _) = match accepted {
            Ok(a) => {
                backoff = Duration::from_millis(10);
                a
            }
            Err(e) => {
                // Out of descriptors, say: wait rather than spin, and try again.
                tracing::warn!("the dashboard could not accept a connection: {e}");
                drop(slot);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let router = router.clone();
        let stopped = stopped.clone();
        connections.spawn(async move {
            serve_connection(tcp, router, limits, stopped).await;
            drop(slot);
        });
    }
    let _ = stopping.send(true);
    let drained = tokio::time::timeout(STOP_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.abort_all();
    }
}

/// One connection, until it closes, idles too long or the daemon stops.
async fn serve_connection(
    tcp: TcpStream,
    router: Router,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) {
    let start = Instant::now();
    let last_moved = Arc::new(AtomicU64::new(0));
    let io = TokioIo::new(Watched {
        inner: tcp,
        start,
        last_moved: Arc::clone(&last_moved),
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let connection = builder.serve_connection(io, TowerToHyperService::new(router));
    tokio::pin!(connection);
    let mut stopping = false;
    loop {
        let moved = Duration::from_millis(last_moved.load(Ordering::Relaxed));
        let idle_until = start + moved + limits.idle_timeout;
        tokio::select! {
            _ = connection.as_mut() => return,
            _ = tokio::time::sleep_until(idle_until) => {
                let moved_now = Duration::from_millis(last_moved.load(Ordering::Relaxed));
                if moved_now == moved {
                    // Nothing moved for the whole idle timeout: let it go.
                    return;
                }
            }
            changed = stopped.changed(), if !stopping => {
                stopping = true;
                if changed.is_ok() {
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// A TCP stream that notes when bytes last moved over it, in milliseconds since `start`.
struct Watched {
    inner: TcpStream,
    start: Instant,
    last_moved: Arc<AtomicU64>,
}

impl Watched {
    fn moved(&self) {
        let ms = self.start.elapsed().as_millis().min(u64::MAX as u128) as u64;
        self.last_moved.store(ms, Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.moved();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.moved();
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.moved();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
