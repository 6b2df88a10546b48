//! Who may use the dashboard: whoever holds this start's token, from this machine's loopback,
//! through a page the dashboard served itself.
//!
//! - The token comes once in the URL `ai ui` prints to the terminal (`/?token=...`); the server
//!   answers with a cookie (HttpOnly, SameSite=Strict) and a redirect that drops it from the
//!   address bar. Scripts may send it as `Authorization: Bearer ...` instead. Anything else
//!   gets 401.
//! - The browser `ai ui` opens gets a one-time code instead (`/?code=...`), exchanged for the
//!   same cookie: a browser's command line can be read by any local user, so what it carries
//!   is spent at its first use and dies within [`CODE_LIFETIME`].
//! - The `Host` header must name the loopback address and this port: a page on another site
//!   that points a name of its own at 127.0.0.1 (DNS rebinding) is refused.
//! - A request that changes something also needs the CSRF token (given to the page only, in a
//!   `<meta>` of the HTML it serves) in `X-CSRF-Token`, and, when the browser says where it
//!   comes from, the same origin.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cookie that carries the token after the first visit.
pub const COOKIE: &str = "ai_smartness_ui";
/// The header a page sends its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// How long a one-time code may open the dashboard.
pub const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// Codes not yet spent, at most: each `ai ui` adds one, the oldest goes first.
const MAX_CODES: usize = 8;

/// This start's secrets and the address they are good for.
#[derive(Debug)]
pub struct Guard {
    /// Opens the dashboard; printed by `ai ui` to the terminal.
    token: String,
    /// One-time codes given to browsers, with when each expires.
    codes: Mutex<VecDeque<(String, Instant)>>,
    /// Proves a state-changing request comes from a page this server served.
    csrf: String,
    /// `127.0.0.1:PORT` and `localhost:PORT`: the hosts a request may name.
    hosts: [String; 2],
}

/// A random token of 32 bytes, in hex.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Guard {
    pub fn new(port: u16) -> std::io::Result<Guard> {
        Ok(Guard {
            token: random_token()?,
            codes: Mutex::new(VecDeque::new()),
            csrf: random_token()?,
            hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
        })
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// A new code that opens the dashboard once, within [`CODE_LIFETIME`].
    pub fn mint_code(&self) -> std::io::Result<String> {
        let code = random_token()?;
        let now = Instant::now();
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        codes.retain(|(_, expires)| *expires > now);
        if codes.len() >= MAX_CODES {
            codes.pop_front();
        }
        codes.push_back((code.clone(), now + CODE_LIFETIME));
        Ok(code)
    }

    /// Spends the `?code=...` of a query: true when it was a live code (it is gone now).
    fn spend_code(&self, code: &str) -> bool {
        let now = Instant::now();
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        codes.retain(|(_, expires)| *expires > now);
        match codes.iter().position(|(c, _)| same(c, code)) {
            Some(i) => {
                codes.remove(i);
                true
            }
            None => false,
        }
    }

    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .is_some_and(|h| self.hosts.iter().any(|a| a == h))
    }

    /// The token the request carries, by cookie or bearer header.
    fn carries_token(&self, headers: &HeaderMap) -> bool {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == COOKIE)
            .map(|(_, value)| value);
        [bearer, cookie]
            .into_iter()
            .flatten()
            .any(|t| same(t, &self.token))
    }

    /// A change asked from this server's own page (or by a script holding both tokens).
    fn same_origin_with_csrf(&self, headers: &HeaderMap) -> bool {
        let csrf = headers
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| same(t, &self.csrf));
        let origin_ok = match headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
            None => true,
            Some(origin) => self
                .hosts
                .iter()
                .any(|h| origin.strip_prefix("http://") == Some(h.as_str())),
        };
        let site_ok = match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
            None => true,
            Some(site) => site == "same-origin" || site == "none",
        };
        csrf && origin_ok && site_ok
    }

    /// The token from a `?token=...` query, when it is this start's.
    fn token_in_query(&self, query: Option<&str>) -> bool {
        query_value(query, "token").is_some_and(|value| same(value, &self.token))
    }
}

/// The value of `name` in a query string.
fn query_value<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|pair| pair.split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value)
}

/// Compares in time independent of where the strings differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The one path served without the token: browsers fetch it by themselves, even for the
/// refusal page, and it holds nothing private.
pub const PUBLIC_ICON: &str = "/favicon.ico";

/// The middleware in front of every route.
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if !guard.host_allowed(headers) {
        return refuse(
            StatusCode::FORBIDDEN,
            "this dashboard answers on 127.0.0.1 only",
        );
    }
    if request.method() == Method::GET && request.uri().path() == PUBLIC_ICON {
        let mut response = next.run(request).await;
        secure_headers(response.headers_mut());
        return response;
    }
    let query = request.uri().query();
    let opens = request.method() == Method::GET
        && match query_value(query, "code") {
            Some(code) if !guard.spend_code(code) => {
                return refuse(
                    StatusCode::UNAUTHORIZED,
                    "this link opens the dashboard once, within a minute: it was used or has \
                     expired. Run `ai ui` again, or open the address it printed",
                )
            }
            Some(_) => true,
            None => guard.token_in_query(query),
        };
    if opens {
        // Keep the token in a cookie and out of the address bar and the history.
        let cookie = format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            guard.token
        );
        let mut response = Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header(header::LOCATION, request.uri().path())
            .body(Body::empty())
            .unwrap_or_default();
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, v);
        }
        return response;
    }
    if !guard.carries_token(headers) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "open the address `ai ui` printed: it carries this start's token",
        );
    }
    let changes = !matches!(*request.method(), Method::GET | Method::HEAD);
    if changes && !guard.same_origin_with_csrf(headers) {
        return refuse(
            StatusCode::FORBIDDEN,
            "a change must come from the dashboard's own page (CSRF token, same origin)",
        );
    }
    let mut response = next.run(request).await;
    secure_headers(response.headers_mut());
    response
}

fn refuse(status: StatusCode, why: &'static str) -> Response {
    let mut response = (status, why).into_response();
    secure_headers(response.headers_mut());
    response
}

/// What every answer carries: no framing by other sites, no sniffing, no caching of private
/// data, scripts and styles from this server only.
fn secure_headers(headers: &mut HeaderMap) {
    let set = |headers: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    if !headers.contains_key(header::CACHE_CONTROL) {
        set(headers, header::CACHE_CONTROL, "no-store");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_token_opens_by_cookie_or_bearer_and_nothing_else_does() {
        let g = Guard::new(4100).unwrap();
        assert_eq!(g.token().len(), 64);
        assert_ne!(g.token(), g.csrf());
        let cookie = format!("theme=dark; {COOKIE}={}", g.token());
        assert!(g.carries_token(&headers(&[("cookie", &cookie)])));
        let bearer = format!("Bearer {}", g.token());
        assert!(g.carries_token(&headers(&[("authorization", &bearer)])));
        assert!(!g.carries_token(&headers(&[])));
        assert!(!g.carries_token(&headers(&[("cookie", &format!("{COOKIE}=nope"))])));
        // The CSRF token is not the door key.
        let csrf_as_cookie = format!("{COOKIE}={}", g.csrf());
        assert!(!g.carries_token(&headers(&[("cookie", &csrf_as_cookie)])));
        assert!(g.token_in_query(Some(&format!("a=1&token={}", g.token()))));
        assert!(!g.token_in_query(Some("token=abc")));
    }

    #[test]
    fn a_code_opens_once_and_the_oldest_go_first() {
        let g = Guard::new(4100).unwrap();
        let code = g.mint_code().unwrap();
        assert_ne!(code, g.token());
        assert!(!g.spend_code("nope"));
        assert!(g.spend_code(&code));
        assert!(!g.spend_code(&code), "spent at its first use");
        let first = g.mint_code().unwrap();
        let later: Vec<String> = (0..MAX_CODES).map(|_| g.mint_code().unwrap()).collect();
        assert!(!g.spend_code(&first), "pushed out by newer ones");
        assert!(later.iter().all(|c| g.spend_code(c)));
    }

    #[test]
    fn only_the_loopback_host_and_port_are_answered() {
        let g = Guard::new(4100).unwrap();
        assert!(g.host_allowed(&headers(&[("host", "127.0.0.1:4100")])));
        assert!(g.host_allowed(&headers(&[("host", "localhost:4100")])));
        assert!(!g.host_allowed(&headers(&[("host", "evil.example:4100")])));
        assert!(!g.host_allowed(&headers(&[("host", "127.0.0.1:4101")])));
        assert!(!g.host_allowed(&headers(&[])));
    }

    #[test]
    fn a_change_needs_the_csrf_token_and_the_same_origin() {
        let g = Guard::new(4100).unwrap();
        let csrf = g.csrf().to_string();
        assert!(g.same_origin_with_csrf(&headers(&[(CSRF_HEADER, &csrf)])));
        assert!(g.same_origin_with_csrf(&headers(&[
            (CSRF_HEADER, &csrf),
            ("origin", "http://127.0.0.1:4100"),
            ("sec-fetch-site", "same-origin"),
        ])));
        assert!(!g.same_origin_with_csrf(&headers(&[])));
        assert!(!g.same_origin_with_csrf(&headers(&[
            (CSRF_HEADER, &csrf),
            ("origin", "http://evil.example"),
        ])));
        assert!(!g.same_origin_with_csrf(&headers(&[
            (CSRF_HEADER, &csrf),
            ("sec-fetch-site", "cross-site"),
        ])));
        assert!(!g.same_origin_with_csrf(&headers(&[(CSRF_HEADER, g.token())])));
    }
}
