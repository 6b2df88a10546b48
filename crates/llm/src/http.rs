//! What the HTTP providers share: the client, sending with classified errors, reading an SSE
//! body, the key lookup.

use crate::sse::{SseDecoder, SseEvent};
use crate::{ChatRequest, ChatResponse, EnvLookup, ErrorKind, LlmError};
use futures_util::StreamExt;
use std::future::Future;
use std::time::Duration;

/// Error bodies are read up to this size (a proxy's HTML page must not fill the memory).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A client with a connect timeout; each call sets its own overall deadline.
pub(crate) fn client(connect_timeout: Duration) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("ai-smartness/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::internal(format!("cannot build the HTTP client: {e}")))
}

/// The key from its variable, read now. `Ok(None)` when the provider needs none.
pub(crate) fn api_key(env: &EnvLookup, var: Option<&str>) -> Result<Option<String>, LlmError> {
    match var {
        None => Ok(None),
        Some(var) => env(var).map(Some).ok_or_else(|| {
            LlmError::new(
                ErrorKind::AuthError,
                format!("no API key: the environment variable {var} is not set"),
            )
        }),
    }
}

/// Sends; a non-2xx answer becomes a classified error (its body read, bounded).
pub(crate) async fn send(req: reqwest::RequestBuilder) -> Result<reqwest::Response, LlmError> {
    let resp = req.send().await.map_err(|e| LlmError::from_reqwest(&e))?;
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let headers = resp.headers().clone();
    let body = read_bounded(resp, MAX_ERROR_BODY).await;
    Err(LlmError::from_http(status.as_u16(), &headers, &body))
}

async fn read_bounded(resp: reqwest::Response, max: usize) -> String {
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        out.extend_from_slice(&chunk);
        if out.len() >= max {
            out.truncate(max);
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the answer is an event stream (else a server ignored `stream: true`).
pub(crate) fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// The whole body as JSON (for servers that answer without streaming).
pub(crate) async fn json_body(resp: reqwest::Response) -> Result<serde_json::Value, LlmError> {
    let bytes = resp.bytes().await.map_err(|e| LlmError::from_reqwest(&e))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        LlmError::internal(format!(
            "the answer is not JSON ({e}): {}",
            crate::truncate(&String::from_utf8_lossy(&bytes), 200)
        ))
    })
}

/// Feeds each SSE event of the body to `on_event` until the body ends.
pub(crate) async fn for_each_event(
    resp: reqwest::Response,
    mut on_event: impl FnMut(SseEvent) -> Result<(), LlmError>,
) -> Result<(), LlmError> {
    let mut decoder = SseDecoder::default();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| LlmError::from_reqwest(&e))?;
        for ev in decoder.push(&chunk) {
            on_event(ev)?;
        }
    }
    if let Some(ev) = decoder.finish() {
        on_event(ev)?;
    }
    Ok(())
}

/// Runs `fut` within `limit`, else a [`ErrorKind::Timeout`] naming `what`.
pub(crate) async fn deadline<T>(
    limit: Duration,
    what: &str,
    fut: impl Future<Output = Result<T, LlmError>>,
) -> Result<T, LlmError> {
    tokio::time::timeout(limit, fut).await.unwrap_or_else(|_| {
        Err(LlmError::new(
            ErrorKind::Timeout,
            format!("{what}: no complete answer within {limit:?}"),
        ))
    })
}

/// Parses a JSON event payload.
pub(crate) fn parse_event(ev: &SseEvent) -> Result<serde_json::Value, LlmError> {
    serde_json::from_str(&ev.data).map_err(|e| {
        LlmError::internal(format!(
            "malformed stream event {:?} ({e}): {}",
            ev.event,
            crate::truncate(&ev.data, 200)
        ))
    })
}

/// `base` without trailing slashes, then `path`.
pub(crate) fn join(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

/// Pings an API by its model listing (free, and it proves the endpoint and the key); an
/// endpoint without that route (404/405: a proxy, a bare server) is pinged with a one-token
/// completion through `complete` instead.
pub(crate) async fn ping_by_listing<F, Fut>(
    listing: reqwest::RequestBuilder,
    timeout: Duration,
    complete: F,
) -> Result<(), LlmError>
where
    F: FnOnce(ChatRequest) -> Fut,
    Fut: Future<Output = Result<ChatResponse, LlmError>>,
{
    match send(listing).await {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.status, Some(404) | Some(405)) => {
            let req = ChatRequest {
                max_tokens: 1,
                timeout,
                ..ChatRequest::simple("", "ping")
            };
            complete(req).await.map(|_| ())
        }
        Err(e) => Err(e),
    }
}
