//! Strict validation over the real socket.

use crate::harness::*;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

#[test]
fn bad_requests_get_json_errors_and_the_connection_goes_on() {
    let mut p = Project::new();
    p.start();
    let mut s = UnixStream::connect(p.paths.socket()).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for bad in [
        "not json",
        r#"{"ping": true, "extra": 1}"#,
        r#"{"tool": "Bash", "content": 42}"#,
        r#"{"tool": "Bash", "content": "x", "colour": "red"}"#,
        r#"{"threads": {"status": "sleeping"}}"#,
        r#"{"thread": {"id": "thread_20990101_000000_0000"}}"#,
        r#"{"thread_edit": {"id": "nope", "action": "explode"}}"#,
        r#"{"tool": "Bash", "content": "x", "at": "yesterday"}"#,
    ] {
        s.write_all(format!("{bad}\n").as_bytes()).unwrap();
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["ok"], false, "{bad} → {line}");
        assert!(v["error"]["message"].as_str().is_some());
    }
    s.write_all(b"{\"ping\": true}\n").unwrap();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.contains("pong"));
}

#[test]
fn an_oversized_frame_is_refused_and_only_its_connection_pays() {
    let mut p = Project::new();
    p.start();
    let mut other = p.client();
    let mut s = UnixStream::connect(p.paths.socket()).unwrap();
    let big = format!(
        "{{\"tool\": \"Bash\", \"content\": \"{}\"}}\n",
        "a".repeat(2 << 20)
    );
    // The daemon may close before we finish writing: that is fine.
    let _ = s.write_all(big.as_bytes());
    let mut line = String::new();
    let _ = BufReader::new(&s).read_line(&mut line);
    if !line.is_empty() {
        assert!(line.contains("frame_too_large"), "{line}");
    }
    let r = other.send_raw(b"{\"ping\": true}\n").unwrap();
    assert_eq!(r.pong, Some(true));
    assert_eq!(
        p.threads("all").len(),
        0,
        "nothing stored from the oversized frame"
    );
}
