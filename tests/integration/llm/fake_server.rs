//! A scripted HTTP/1.1 server on 127.0.0.1 (tokio, raw sockets) that answers with what the real
//! APIs send: SSE bodies in chunks cut anywhere, JSON errors with headers, or nothing at all
//! (a stall). Every request is recorded for assertions. One request per connection
//! (`connection: close`), request bodies by `content-length` or chunked.

#![allow(dead_code)]

use serde_json::Value;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    /// JSON, or `Null` when empty, or a JSON string when not JSON.
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with a request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status, headers, and a body sent as chunks, each after its delay.
    Body {
        status: u16,
        headers: Vec<(String, String)>,
        pieces: Vec<(Duration, Vec<u8>)>,
    },
    /// Headers sent at once, then silence for that long (a model that never finishes).
    StallAfterHeaders(Duration),
    /// No answer at all for that long, then the connection closes.
    Stall(Duration),
}

impl Reply {
    /// `200 text/event-stream` with the body in one chunk.
    pub fn sse(body: &str) -> Reply {
        Reply::Body {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            pieces: vec![(Duration::ZERO, body.as_bytes().to_vec())],
        }
    }

    /// `200 text/event-stream` with the body cut every `size` bytes (inside lines, inside
    /// UTF-8 characters), each piece flushed on its own.
    pub fn sse_cut(body: &str, size: usize) -> Reply {
        Reply::Body {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            pieces: body
                .as_bytes()
                .chunks(size)
                .map(|c| (Duration::from_millis(1), c.to_vec()))
                .collect(),
        }
    }

    /// A JSON body with that status.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::Body {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            pieces: vec![(Duration::ZERO, body.to_string().into_bytes())],
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Body { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

type Handler = dyn Fn(&Recorded, usize) -> Reply + Send + Sync;

/// The running server; stops accepting when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// `handler` gets each request and its number (0 for the first).
    pub async fn start(
        handler: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
    ) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let recs = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (recs, handler) = (recs.clone(), handler.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, &recs, &*handler).await;
                });
            }
        });
        FakeServer {
            addr,
            requests,
            task,
        }
    }

    /// Answers every request with the replies in order (the last one repeats).
    pub async fn queue(replies: Vec<Reply>) -> FakeServer {
        FakeServer::start(move |_, n| replies[n.min(replies.len() - 1)].clone()).await
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    stream: TcpStream,
    recs: &Mutex<Vec<Recorded>>,
    handler: &Handler,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let get = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v): &(String, String)| v.clone())
    };
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            line.clear();
            reader.read_line(&mut line).await?;
            let size =
                usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16).unwrap_or(0);
            if size == 0 {
                line.clear();
                reader.read_line(&mut line).await?;
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..]).await?;
            line.clear();
            reader.read_line(&mut line).await?;
        }
    } else if let Some(len) = get("content-length").and_then(|l| l.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body).await?;
    }
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    };
    let rec = Recorded {
        method,
        path,
        headers,
        body,
    };
    let n = {
        let mut r = recs.lock().unwrap();
        r.push(rec.clone());
        r.len() - 1
    };
    let mut stream = reader.into_inner();
    match handler(&rec, n) {
        Reply::Stall(d) => tokio::time::sleep(d).await,
        Reply::StallAfterHeaders(d) => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
                .await?;
            stream.flush().await?;
            tokio::time::sleep(d).await;
        }
        Reply::Body {
            status,
            headers,
            pieces,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ntransfer-encoding: chunked\r\nconnection: close\r\n"
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            for (delay, piece) in pieces {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if piece.is_empty() {
                    continue;
                }
                stream
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                stream.write_all(&piece).await?;
                stream.write_all(b"\r\n").await?;
                stream.flush().await?;
            }
            stream.write_all(b"0\r\n\r\n").await?;
            stream.flush().await?;
        }
    }
    Ok(())
}

/// `event: NAME\ndata: JSON\n\n` for each event (Anthropic's framing).
pub fn sse_events(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

/// `data: JSON\n\n` for each chunk, then `data: [DONE]` (OpenAI's framing).
pub fn sse_chunks(chunks: &[Value]) -> String {
    let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

/// A port nothing listens on.
pub async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}
