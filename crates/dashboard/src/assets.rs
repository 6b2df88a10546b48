//! The page, embedded in the binary: one HTML shell, one script, one style sheet, an icon.
//! No library and no network at run time.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");
const ICON: &str = include_str!("../assets/icon.svg");

/// Where the CSRF token goes in the HTML.
const CSRF_SLOT: &str = "{{csrf}}";

/// The page, with this start's CSRF token for the script to send with every change.
pub fn index(csrf: &str) -> Response {
    let html = INDEX.replace(CSRF_SLOT, csrf);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

/// `/assets/NAME`.
pub fn file(name: &str) -> Response {
    let (body, kind) = match name {
        "app.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        "app.css" => (STYLE, "text/css; charset=utf-8"),
        "icon.svg" => (ICON, "image/svg+xml"),
        _ => return (StatusCode::NOT_FOUND, "no such file").into_response(),
    };
    let mut response = ([(header::CONTENT_TYPE, kind)], body).into_response();
    // The same binary serves the same bytes: the browser may keep them for the session.
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    response
}

/// The page's weight: what a first visit downloads (the benchmark prints it).
pub fn page_weight() -> usize {
    INDEX.len() + SCRIPT.len() + STYLE.len() + ICON.len()
}
