//! The listener, the per-connection handler and the framing (one JSON line per request and per
//! reply). A connection that misbehaves (garbage, an oversized frame) gets an error reply and,
//! for an oversized frame, is closed: only that connection pays.

use super::commands;
use super::orchestrator::{requests, Event};
use super::state::Daemon;
use crate::protocol::{parse_request, ProtocolError, Response, MAX_FRAME_BYTES};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::broadcast;

/// Accepts connections until shutdown.
pub async fn listen(daemon: Daemon, listener: UnixListener) {
    let mut shutdown = daemon.subscribe_shutdown();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let d = daemon.clone();
                    tokio::spawn(async move {
                        if let Err(e) = handle_connection(d, stream).await {
                            tracing::debug!("connection ended: {e}");
                        }
                    });
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.recv() => break,
        }
    }
}

/// What reading one frame gave.
enum Frame {
    Line(Vec<u8>),
    TooLarge(usize),
    Eof,
}

/// Reads up to the next newline, refusing to buffer more than the frame limit.
async fn read_frame<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> std::io::Result<Frame> {
    let mut line = Vec::new();
    let mut too_large = 0usize;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(if line.is_empty() && too_large == 0 {
                Frame::Eof
            } else if too_large > 0 {
                Frame::TooLarge(too_large)
            } else {
                Frame::Line(line)
            });
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if too_large > 0 || line.len() + chunk.len() > MAX_FRAME_BYTES {
            // Discard the rest of the oversized frame without keeping it.
            too_large = too_large.max(line.len()) + chunk.len();
            line = Vec::new();
        } else {
            line.extend_from_slice(chunk);
        }
        let consumed = done.unwrap_or(buf.len());
        reader.consume(consumed);
        if done.is_some() {
            return Ok(if too_large > 0 {
                Frame::TooLarge(too_large)
            } else {
                Frame::Line(line)
            });
        }
    }
}

async fn handle_connection(daemon: Daemon, stream: UnixStream) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut shutdown = daemon.subscribe_shutdown();
    loop {
        let frame = tokio::select! {
            f = read_frame(&mut reader) => f?,
            _ = shutdown.recv() => return Ok(()),
        };
        let (reply, close) = match frame {
            Frame::Eof => return Ok(()),
            Frame::TooLarge(bytes) => {
                daemon.stats().bad_requests += 1;
                let e = ProtocolError::TooLarge { bytes };
                (Response::error(e.code(), e.to_string()), true)
            }
            Frame::Line(line) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Frame::Line(line) => match parse_request(&line) {
                Ok(crate::protocol::Request::Command(cmd)) if requests::is_orchestrator(&cmd) => {
                    daemon.stats().requests += 1;
                    let (reply, follow) = requests::handle(&daemon, cmd).await;
                    write_line(&mut write, &reply).await?;
                    if let Some(f) = follow {
                        if !forward_events(&daemon, f, &mut reader, &mut write).await? {
                            return Ok(());
                        }
                    }
                    continue;
                }
                Ok(req) => {
                    daemon.stats().requests += 1;
                    (commands::handle(&daemon, req).await, false)
                }
                Err(e) => {
                    daemon.stats().bad_requests += 1;
                    (Response::error(e.code(), e.to_string()), false)
                }
            },
        };
        write_line(&mut write, &reply).await?;
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

/// Forwards orchestrator events as JSON lines until the followed round ends (returns true: the
/// connection goes on) or the client hangs up or the daemon stops (false).
async fn forward_events<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    daemon: &Daemon,
    mut f: requests::Follow,
    reader: &mut BufReader<R>,
    write: &mut W,
) -> std::io::Result<bool> {
    let mut shutdown = daemon.subscribe_shutdown();
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
                if f.until_round_end && matches!(&event, Event::RoundEnded { .. }) {
                    return Ok(true);
                }
            }
            Next::Session(Err(broadcast::error::RecvError::Lagged(n))) => {
                write_line(write, &serde_json::json!({"event": "lagged", "missed": n})).await?;
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
    Session(Result<Event, broadcast::error::RecvError>),
    Run(Option<serde_json::Value>),
    Input(bool),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_over_the_limit_are_refused_without_buffering() {
        let mut data = vec![b'x'; MAX_FRAME_BYTES + 10];
        data.push(b'\n');
        data.extend_from_slice(b"{\"ping\":true}\n");
        let mut r = BufReader::new(&data[..]);
        assert!(
            matches!(read_frame(&mut r).await.unwrap(), Frame::TooLarge(n) if n > MAX_FRAME_BYTES)
        );
        assert!(
            matches!(read_frame(&mut r).await.unwrap(), Frame::Line(l) if l == b"{\"ping\":true}")
        );
        assert!(matches!(read_frame(&mut r).await.unwrap(), Frame::Eof));
    }
}
