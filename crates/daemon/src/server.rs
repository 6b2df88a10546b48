//! The per-connection handler and the framing (one JSON line per request and per reply). A
//! connection that misbehaves (garbage, an oversized frame) gets an error reply and, for an
//! oversized frame, is closed: only that connection pays. What a connection may hold (time,
//! buffered bytes, a slot) is bounded by the [`super::listener`].

use super::app::Daemon;
use super::assistant::requests;
use super::framebuf::FrameBuf;
use super::router;
use crate::connections::{Activity, Registration};
use ai_smartness_proto::protocol::{
    parse_request, ErrorCode, ProtocolError, Response, MAX_FRAME_BYTES,
};
use ai_smartness_replies::SessionEvent;
use interprocess::local_socket::tokio::Stream;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{broadcast, OwnedSemaphorePermit};

/// What reading one frame gave.
enum Frame {
    /// A whole request line, with the share of the buffer budget it holds.
    Line(FrameBuf, Option<OwnedSemaphorePermit>),
    TooLarge(usize),
    /// The daemon already buffers as many unfinished requests as it allows.
    OverBudget,
    /// Nothing came for the idle timeout, or a request did not arrive whole in time.
    TimedOut(&'static str),
    Eof,
}

/// Buffer budget is taken in steps of this much, not byte by byte.
const BUDGET_STEP: usize = 64 << 10;

/// Reads up to the next newline, refusing to buffer more than the frame limit, more than the
/// daemon's budget of unfinished requests, or for longer than the connection's time limits.
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    conn: &Registration,
) -> std::io::Result<Frame> {
    let limits = conn.connections().limits();
    let mut line = FrameBuf::default();
    let mut held: Option<OwnedSemaphorePermit> = None;
    let mut held_bytes = 0usize;
    let mut too_large = 0usize;
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let wait = match deadline {
            None => limits.idle_timeout,
            Some(d) => d.saturating_duration_since(tokio::time::Instant::now()),
        };
        let buf = match tokio::time::timeout(wait, reader.fill_buf()).await {
            Ok(r) => r?,
            Err(_) => {
                return Ok(Frame::TimedOut(if deadline.is_none() {
                    "no request came within the idle timeout"
                } else {
                    "the request did not arrive whole in time"
                }))
            }
        };
        if buf.is_empty() {
            return Ok(if line.is_empty() && too_large == 0 {
                Frame::Eof
            } else if too_large > 0 {
                Frame::TooLarge(too_large)
            } else {
                Frame::Line(line, held)
            });
        }
        if deadline.is_none() {
            deadline = Some(tokio::time::Instant::now() + limits.frame_timeout);
        }
        conn.set(Activity::Waiting);
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if too_large > 0 || line.len() + chunk.len() > MAX_FRAME_BYTES {
            // Discard the rest of the oversized frame without keeping it.
            too_large = too_large.max(line.len()) + chunk.len();
            line = FrameBuf::default();
            held = None;
            held_bytes = 0;
        } else {
            let need = line.len() + chunk.len();
            while held_bytes < need {
                let step = BUDGET_STEP.max(need - held_bytes);
                let Some(more) = conn.connections().reserve_buffer(step) else {
                    return Ok(Frame::OverBudget);
                };
                match held.as_mut() {
                    Some(h) => h.merge(more),
                    None => held = Some(more),
                }
                held_bytes += step;
            }
            line.extend(chunk)?;
        }
        let consumed = done.unwrap_or(buf.len());
        reader.consume(consumed);
        if done.is_some() {
            return Ok(if too_large > 0 {
                Frame::TooLarge(too_large)
            } else {
                Frame::Line(line, held)
            });
        }
    }
}

/// Serves one connection: requests in turn, each answered before the next is read.
pub async fn handle_connection(
    daemon: Daemon,
    stream: Stream,
    conn: Registration,
) -> std::io::Result<()> {
    // Reading and writing both go through a shared reference (the stream is both).
    let mut write = &stream;
    let mut reader = BufReader::new(&stream);
    let mut shutdown = daemon.life().subscribe_shutdown();
    loop {
        let frame = tokio::select! {
            f = read_frame(&mut reader, &conn) => f?,
            _ = conn.closed() => {
                tracing::debug!("connection closed to make room for a new one");
                return Ok(());
            }
            _ = shutdown.recv() => return Ok(()),
        };
        let (reply, close) = match frame {
            Frame::Eof => return Ok(()),
            Frame::TimedOut(why) => {
                tracing::debug!("connection closed: {why}");
                return Ok(());
            }
            Frame::TooLarge(bytes) => {
                daemon.stats().lock().bad_requests += 1;
                let e = ProtocolError::TooLarge { bytes };
                (Response::error(e.code(), e.to_string()), true)
            }
            Frame::OverBudget => {
                daemon.stats().lock().bad_requests += 1;
                (
                    Response::error(
                        ErrorCode::Busy,
                        "the daemon holds as many unfinished requests as it allows; try again",
                    ),
                    true,
                )
            }
            Frame::Line(line, _) if line.as_slice().iter().all(u8::is_ascii_whitespace) => continue,
            Frame::Line(line, budget) => {
                conn.set(Activity::Answering);
                let parsed = parse_request(line.as_slice());
                // The request's own copy is made: the buffered bytes go back to the budget.
                drop(line);
                drop(budget);
                match parsed {
                    Ok(ai_smartness_proto::protocol::Request::Command(cmd))
                        if router::may_stream(&cmd) =>
                    {
                        daemon.stats().count_request();
                        let (reply, follow) = router::handle_streaming(&daemon, cmd).await;
                        write_line(&mut write, &reply).await?;
                        if let Some(f) = follow {
                            if !conn.start_streaming() {
                                write_line(
                                    &mut write,
                                    &ai_smartness_replies::StreamNotice::StreamRefused {
                                        reason: "too many event streams are open".into(),
                                    },
                                )
                                .await?;
                                return write.shutdown().await;
                            }
                            if !forward_events(&daemon, f, &mut reader, &mut write).await? {
                                return Ok(());
                            }
                        }
                        conn.set(Activity::Waiting);
                        continue;
                    }
                    Ok(req) => {
                        daemon.stats().count_request();
                        (router::handle(&daemon, req).await, false)
                    }
                    Err(e) => {
                        daemon.stats().lock().bad_requests += 1;
                        (Response::error(e.code(), e.to_string()), false)
                    }
                }
            }
        };
        write_line(&mut write, &reply).await?;
        conn.set(Activity::Waiting);
        if close {
            return write.shutdown().await;
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin, T: serde::Serialize>(
    write: &mut W,
    value: &T,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_else(|_| {
        br#"{"ok":false,"error":{"code":"internal","message":"reply encoding failed"}}"#.to_vec()
    });
    bytes.push(b'\n');
    write.write_all(&bytes).await
}

/// Forwards assistant events as JSON lines until the followed round ends (returns true: the
/// connection goes on) or the client hangs up or the daemon stops (false).
async fn forward_events<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    daemon: &Daemon,
    mut f: requests::Follow,
    reader: &mut BufReader<R>,
    write: &mut W,
) -> std::io::Result<bool> {
    let mut shutdown = daemon.life().subscribe_shutdown();
    loop {
        let next = match &mut f.events {
            requests::Events::Sessions(rx) => tokio::select! {
                e = rx.recv() => Next::Session(e),
                r = reader.fill_buf() => Next::Input(r.map(|b| !b.is_empty()).unwrap_or(false)),
                _ = shutdown.recv() => return Ok(false),
            },
            requests::Events::Run(rx) => tokio::select! {
                e = rx.recv() => Next::Run(e),
                r = reader.fill_buf() => Next::Input(r.map(|b| !b.is_empty()).unwrap_or(false)),
                _ = shutdown.recv() => return Ok(false),
            },
        };
        match next {
            Next::Session(Ok(event)) => {
                if f.session
                    .as_deref()
                    .is_some_and(|s| s != event.session_id())
                {
                    continue;
                }
                write_line(write, &event).await?;
                if f.until_round_end && matches!(&event, SessionEvent::RoundEnded { .. }) {
                    return Ok(true);
                }
            }
            Next::Session(Err(broadcast::error::RecvError::Lagged(n))) => {
                write_line(
                    write,
                    &ai_smartness_replies::StreamNotice::Lagged { missed: n },
                )
                .await?;
            }
            Next::Session(Err(broadcast::error::RecvError::Closed)) => return Ok(false),
            Next::Run(Some(v)) => write_line(write, &v).await?,
            // The run is over: the connection closes, which ends the follower's stream.
            Next::Run(None) => return Ok(false),
            // A follower sends nothing: EOF ends the connection, input ends the stream.
            Next::Input(more) => return Ok(more && !f.until_round_end),
        }
    }
}

/// What woke the forwarding loop.
enum Next {
    Session(Result<SessionEvent, broadcast::error::RecvError>),
    Run(Option<ai_smartness_replies::RunLine>),
    Input(bool),
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::connections::{Connections, Limits};

    async fn registration(limits: Limits) -> Registration {
        Connections::new(limits).register_for_tests().await
    }

    #[tokio::test]
    async fn frames_over_the_limit_are_refused_without_buffering() {
        let conn = registration(Limits::for_fd_limit(1024)).await;
        let mut data = vec![b'x'; MAX_FRAME_BYTES + 10];
        data.push(b'\n');
        data.extend_from_slice(b"{\"ping\":true}\n");
        let mut r = BufReader::new(&data[..]);
        assert!(
            matches!(read_frame(&mut r, &conn).await.unwrap(), Frame::TooLarge(n) if n > MAX_FRAME_BYTES)
        );
        assert!(
            matches!(read_frame(&mut r, &conn).await.unwrap(), Frame::Line(l, _) if l.as_slice() == b"{\"ping\":true}")
        );
        assert!(matches!(
            read_frame(&mut r, &conn).await.unwrap(),
            Frame::Eof
        ));
    }

    #[tokio::test]
    async fn unfinished_requests_share_one_budget() {
        let conn = registration(Limits {
            buffered_bytes: 200 << 10,
            ..Limits::for_fd_limit(1024)
        })
        .await;
        let held = conn.connections().reserve_buffer(150 << 10).unwrap();
        let data = vec![b'x'; 100 << 10];
        let mut r = BufReader::new(&data[..]);
        assert!(matches!(
            read_frame(&mut r, &conn).await.unwrap(),
            Frame::OverBudget
        ));
        drop(held);
        let mut r = BufReader::new(&data[..]);
        assert!(matches!(
            read_frame(&mut r, &conn).await.unwrap(),
            Frame::Line(l, Some(_)) if l.len() == 100 << 10
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_or_slow_client_times_out() {
        let conn = registration(Limits::for_fd_limit(1024)).await;
        let (client, server) = tokio::io::duplex(64);
        let mut r = BufReader::new(server);
        // Closed after the 30 s the README promises, on the paused clock.
        let started = tokio::time::Instant::now();
        assert!(matches!(
            read_frame(&mut r, &conn).await.unwrap(),
            Frame::TimedOut(why) if why.contains("idle")
        ));
        assert_eq!(started.elapsed(), std::time::Duration::from_secs(30));
        let mut client = client;
        tokio::io::AsyncWriteExt::write_all(&mut client, b"{\"ping\"")
            .await
            .unwrap();
        assert!(matches!(
            read_frame(&mut r, &conn).await.unwrap(),
            Frame::TimedOut(why) if why.contains("whole")
        ));
    }
}
