//! The server's stdin and stdout, with JSON-RPC's parse error: a line that is not JSON gets
//! `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,...}}` (the SDK drops such lines without a
//! word, and a client then waits for an answer that never comes). Every other line goes to the
//! SDK as it came, and its replies come out as they are; the two never interleave inside a line.
//!
//! A client that keeps sending garbage gets at most [`ERRORS_QUEUED`] answers waiting at a
//! time (the rest are dropped): an answer never feeds a storm.

use serde::Serialize;
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;

/// A request line longer than this is refused (as a parse error) without being held whole.
const MAX_LINE_BYTES: usize = 16 << 20;
/// Parse errors waiting to be written, at most.
const ERRORS_QUEUED: usize = 16;
/// The pipes' buffers between the SDK and the real stdin and stdout.
const PIPE_BYTES: usize = 256 << 10;

/// JSON-RPC's parse error, for a request whose id cannot be known.
#[derive(Serialize)]
struct ParseError {
    jsonrpc: &'static str,
    id: Option<()>,
    error: ErrorBody,
}

#[derive(Serialize)]
struct ErrorBody {
    code: i32,
    message: String,
}

impl ParseError {
    fn line(why: &str) -> Vec<u8> {
        let e = ParseError {
            jsonrpc: "2.0",
            id: None,
            error: ErrorBody {
                code: -32700,
                message: format!("Parse error: {why}"),
            },
        };
        let mut line = serde_json::to_vec(&e).unwrap_or_default();
        line.push(b'\n');
        line
    }
}

/// The SDK's ends: what it reads (the client's valid lines) and where it writes. The tasks
/// that move the lines run until stdin closes and the SDK's writer is dropped.
pub fn with_parse_errors<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sdk_in, mut to_sdk) = tokio::io::duplex(PIPE_BYTES);
    let (sdk_out, from_sdk) = tokio::io::duplex(PIPE_BYTES);
    let (errors, mut errors_rx) = mpsc::channel::<Vec<u8>>(ERRORS_QUEUED);

    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut input)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .await;
            match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") {
                // Skip the rest of the oversized line.
                let mut rest = Vec::new();
                while matches!(input.read_until(b'\n', &mut rest).await, Ok(n) if n > 0)
                    && !rest.ends_with(b"\n")
                {
                    rest.clear();
                }
                let _ = errors.try_send(ParseError::line("the message is too large"));
                continue;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                if e.is_syntax() || e.is_eof() {
                    let _ = errors.try_send(ParseError::line(&e.to_string()));
                    continue;
                }
            }
            if to_sdk.write_all(&line).await.is_err() {
                break;
            }
            if !line.ends_with(b"\n") && to_sdk.write_all(b"\n").await.is_err() {
                break;
            }
        }
        // The client closed its end: so does the SDK's input.
        let _ = to_sdk.shutdown().await;
    });

    tokio::spawn(async move {
        let mut output = output;
        let mut from_sdk = BufReader::new(from_sdk);
        // A line of the SDK's, kept across a parse error written meanwhile (a read cut short
        // leaves its bytes here, and the next read goes on from them).
        let mut line = Vec::new();
        let mut sdk_open = true;
        loop {
            tokio::select! {
                read = from_sdk.read_until(b'\n', &mut line), if sdk_open => {
                    match read {
                        Ok(0) | Err(_) => sdk_open = false,
                        Ok(_) => {
                            if output.write_all(&line).await.is_err() {
                                return;
                            }
                            line.clear();
                        }
                    }
                }
                error = errors_rx.recv() => match error {
                    Some(e) => {
                        if output.write_all(&e).await.is_err() {
                            return;
                        }
                    }
                    None if !sdk_open => return,
                    None => {
                        // No more errors can come; the SDK's lines still can.
                        while let Ok(n) = from_sdk.read_until(b'\n', &mut line).await {
                            if n == 0 || output.write_all(&line).await.is_err() {
                                break;
                            }
                            let _ = output.flush().await;
                            line.clear();
                        }
                        return;
                    }
                },
            }
            if output.flush().await.is_err() {
                return;
            }
        }
    });

    (sdk_in, sdk_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn garbage_gets_a_parse_error_and_json_goes_through() {
        let (client, server_in) = tokio::io::duplex(4096);
        let (server_out, mut client_out) = tokio::io::duplex(4096);
        let (mut sdk_in, mut sdk_out) = with_parse_errors(server_in, server_out);
        let mut client = client;
        client
            .write_all(b"{not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n[1,\n")
            .await
            .unwrap();
        drop(client);
        // The SDK sees the valid line only.
        let mut seen = String::new();
        sdk_in.read_to_string(&mut seen).await.unwrap();
        assert_eq!(seen, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        // Its reply and the two parse errors reach the client, each a line of its own.
        sdk_out
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .await
            .unwrap();
        drop(sdk_out);
        let mut out = String::new();
        client_out.read_to_string(&mut out).await.unwrap();
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{out}");
        let errors: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|l| l["error"]["code"] == -32700)
            .collect();
        assert_eq!(errors.len(), 2, "{out}");
        assert!(errors
            .iter()
            .all(|e| e["id"].is_null() && e["jsonrpc"] == "2.0"));
        assert!(lines
            .iter()
            .any(|l| l["id"] == 1 && l["result"].is_object()));
    }
}
