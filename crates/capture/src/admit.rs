//! Admission: what happens to a capture before it is journaled, so that no byte of a secret is
//! ever written, not even to the journal.
//!
//! Every capture (a hook's, `ai capture`, `ai import`, a prompt inject captures, a finished run)
//! passes here first: its fields are checked and bounded, a time from the future is clamped to
//! now, and the capture pipeline ([`super::prepare`]) runs, redacting secrets and dropping
//! `<private>` spans. What the journal then holds is the prepared text, marked as such, so the
//! worker does not prepare it again. A capture with nothing worth keeping is not journaled at all.

use super::{SkipReason, SourceType};
use ai_smartness_proto::protocol::CaptureRequest;
use ai_smartness_redact as redact;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool name is a short identifier (`Bash`, `mcp__server__tool`).
pub const MAX_TOOL_CHARS: usize = 200;
/// Claude Code's session ids are UUIDs; this leaves room for other clients' ids and no more.
pub const MAX_SESSION_ID_CHARS: usize = 200;
/// Metadata describes a capture (a path, a tool use id, an import's ids): a few hundred bytes.
/// Bounded so that a client cannot make every stored message carry megabytes.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;
/// A clock a little ahead (another machine's transcript, a drifting VM) is accepted as it is;
/// beyond this, a time is a mistake, and a thread dated in the future would never decay.
pub const FUTURE_TOLERANCE_SECS: i64 = 5 * 60;

/// A capture as the journal holds it: checked, bounded and prepared (cleaned and redacted).
///
/// Journals written before admission existed hold raw requests, which parse as records whose
/// `prepared` is absent: the worker prepares those itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureRecord {
    pub tool: String,
    /// The prepared text when `prepared` is set; the raw content otherwise (old journals).
    pub content: String,
    /// RFC 3339; for admitted records, already clamped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Redacted like the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// Set when the capture pipeline already ran on `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared: Option<PreparedMark>,
    /// A person's request with nothing worth keeping ("continue", "ok merge"): no content, only
    /// its time and session, so that the work after it is known to serve a new request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub request_mark: bool,
}

impl CaptureRecord {
    /// The mark of a request made in `session_id` (checked and redacted) at `at`.
    fn request_mark(tool: String, at: Option<String>, session_id: Option<String>) -> Self {
        CaptureRecord {
            tool,
            content: String::new(),
            at,
            source: Some("user".into()),
            session_id,
            metadata: None,
            hook: None,
            prepared: None,
            request_mark: true,
        }
    }
}

/// What the capture pipeline found, kept beside its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreparedMark {
    pub source_type: SourceType,
    /// Secrets redacted and `<private>` spans dropped, in the content and the metadata.
    pub redactions: usize,
}

/// The outcome of admitting a capture.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// To be journaled. `clamped_from` names a time from the future that was replaced by now.
    Journal {
        record: Box<CaptureRecord>,
        clamped_from: Option<String>,
    },
    /// Nothing worth keeping: not journaled at all.
    Skip(SkipReason),
}

/// Why a capture was refused: the client sent something invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Checks, bounds and prepares one capture, keeping at most `max_chars` characters of it (CPU
/// work: call it off the async workers).
pub fn admit(
    req: CaptureRequest,
    now: DateTime<Utc>,
    max_chars: usize,
) -> Result<Admission, Refused> {
    let tool = req.tool.trim();
    if tool.is_empty() || tool.chars().count() > MAX_TOOL_CHARS || has_control(tool) {
        return Err(Refused(format!(
            "`tool` must be a name of 1 to {MAX_TOOL_CHARS} characters"
        )));
    }
    if let Some(s) = &req.source {
        if s != "user" && s != "assistant" {
            return Err(Refused("`source` is `user` or `assistant`".into()));
        }
    }
    if let Some(id) = &req.session_id {
        if id.chars().count() > MAX_SESSION_ID_CHARS || has_control(id) {
            return Err(Refused(format!(
                "`session_id` must be at most {MAX_SESSION_ID_CHARS} characters, without control characters"
            )));
        }
    }
    if let Some(hook) = &req.hook {
        if hook.chars().count() > MAX_TOOL_CHARS || has_control(hook) {
            return Err(Refused(format!(
                "`hook` must be a name of at most {MAX_TOOL_CHARS} characters"
            )));
        }
    }
    if let Some(m) = &req.metadata {
        let bytes = serde_json::to_vec(m).map(|v| v.len()).unwrap_or(usize::MAX);
        if bytes > MAX_METADATA_BYTES {
            return Err(Refused(format!(
                "`metadata` is {bytes} bytes once encoded; at most {MAX_METADATA_BYTES} are kept per capture"
            )));
        }
    }
    let (at, clamped_from) = match req.at.as_deref() {
        None => (None, None),
        Some(text) => {
            let Ok(parsed) = DateTime::parse_from_rfc3339(text) else {
                return Err(Refused("`at` is not an RFC 3339 time".into()));
            };
            let (at, clamped) = clamp_future(parsed.with_timezone(&Utc), now);
            (Some(at.to_rfc3339()), clamped.then(|| parsed.to_rfc3339()))
        }
    };
    let prepared = match super::prepare_within(tool, &req.content, max_chars) {
        Ok(p) => p,
        Err(SkipReason::TooShort { .. } | SkipReason::Empty)
            if super::source::source_for_tool(tool) == SourceType::Prompt
                && !super::source::is_note(tool) =>
        {
            // Nothing to keep, but a request was made: its mark is journaled in its place.
            let session_id = req.session_id.map(|s| redact::redact(&s).text);
            return Ok(Admission::Journal {
                record: Box::new(CaptureRecord::request_mark(
                    tool.to_string(),
                    at,
                    session_id,
                )),
                clamped_from,
            });
        }
        Err(reason) => return Ok(Admission::Skip(reason)),
    };
    let mut redactions = prepared.redactions;
    // Every field reaches the journal and the memory: the names too.
    let mut redact_field = |s: &str| {
        let r = redact::redact(s);
        redactions += r.count;
        r.text
    };
    let tool = redact_field(tool);
    let hook = req.hook.as_deref().map(&mut redact_field);
    let metadata = req.metadata.map(|m| {
        let (m, n) = redact_map(m);
        redactions += n;
        m
    });
    let session_id = req.session_id.map(|s| {
        let r = redact::redact(&s);
        redactions += r.count;
        r.text
    });
    Ok(Admission::Journal {
        record: Box::new(CaptureRecord {
            tool,
            content: prepared.content,
            at,
            source: req.source,
            session_id,
            metadata,
            hook,
            prepared: Some(PreparedMark {
                source_type: prepared.source,
                redactions,
            }),
            request_mark: false,
        }),
        clamped_from,
    })
}

/// `at`, or `now` when `at` is further ahead of `now` than [`FUTURE_TOLERANCE_SECS`]; with
/// whether it was clamped. Every time that comes from outside goes through this.
pub fn clamp_future(at: DateTime<Utc>, now: DateTime<Utc>) -> (DateTime<Utc>, bool) {
    if at > now + Duration::seconds(FUTURE_TOLERANCE_SECS) {
        (now, true)
    } else {
        (at, false)
    }
}

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// Redacts every string of a metadata object: values by their text and by their key (a
/// `"password": "..."` pair is a secret whatever its value looks like), and the keys
/// themselves. Returns the count.
pub fn redact_map(map: Map<String, Value>) -> (Map<String, Value>, usize) {
    let mut count = 0;
    let out = redact_entries(map, &mut count);
    (out, count)
}

fn redact_entries(map: Map<String, Value>, count: &mut usize) -> Map<String, Value> {
    map.into_iter()
        .map(|(k, v)| {
            let v = redact_value(Some(&k), v, count);
            let key = redact::redact(&k);
            *count += key.count;
            (key.text, v)
        })
        .collect()
}

/// Redacts every string inside a JSON value (for metadata, sessions, run records).
pub fn redact_json(value: Value) -> (Value, usize) {
    let mut count = 0;
    let v = redact_value(None, value, &mut count);
    (v, count)
}

/// A string that is itself a JSON document (a model's raw reply, a tool's JSON output) holds
/// its lines escaped, where the rules that read a line (a config file's, a table's) cannot see
/// them: it is redacted as the document it is, then written back. None when it is not one, or
/// holds nothing to redact (then it is kept byte for byte).
fn redact_embedded_json(s: &str, count: &mut usize) -> Option<String> {
    let t = s.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) || !s.contains("\\n") {
        return None;
    }
    let doc: Value = serde_json::from_str(s).ok()?;
    let mut found = 0;
    let redacted = redact_value(None, doc, &mut found);
    if found == 0 {
        return None;
    }
    *count += found;
    serde_json::to_string(&redacted).ok()
}

fn redact_value(key: Option<&str>, value: Value, count: &mut usize) -> Value {
    match value {
        Value::String(s) => {
            if let Some(kind) = key.and_then(|k| redact::secret_field(k, &s)) {
                *count += 1;
                return Value::String(format!("[REDACTED:{kind}]"));
            }
            if let Some(text) = redact_embedded_json(&s, count) {
                return Value::String(text);
            }
            let r = redact::redact(&s);
            *count += r.count;
            Value::String(r.text)
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| redact_value(key, v, count))
                .collect(),
        ),
        Value::Object(map) => Value::Object(redact_entries(map, count)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(content: &str) -> CaptureRequest {
        CaptureRequest {
            tool: "Bash".into(),
            content: content.into(),
            at: None,
            source: None,
            session_id: None,
            metadata: None,
            hook: None,
        }
    }

    fn now() -> DateTime<Utc> {
        "2026-11-24T12:00:00Z".parse().unwrap()
    }

    fn journaled(a: Admission) -> (CaptureRecord, Option<String>) {
        match a {
            Admission::Journal {
                record,
                clamped_from,
            } => (*record, clamped_from),
            Admission::Skip(r) => panic!("skipped: {r}"),
        }
    }

    #[test]
    fn the_journaled_record_holds_no_secret_of_content_or_metadata() {
        let mut r = req(
            "deploying with GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 set <private>my diary</private> and done",
        );
        r.metadata = Some(
            json!({"command": "curl -H 'Authorization: Bearer abcdef0123456789abcdef0123'", "password": "hunter2", "nested": {"list": ["sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"]}})
                .as_object()
                .unwrap()
                .clone(),
        );
        let (rec, _) = journaled(admit(r, now(), crate::MAX_CAPTURE_CHARS).unwrap());
        let line = serde_json::to_string(&rec).unwrap();
        for secret in [
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "my diary",
            "abcdef0123456789abcdef0123",
            "hunter2",
            "sk-ant-api03",
        ] {
            assert!(!line.contains(secret), "{secret} in {line}");
        }
        let mark = rec.prepared.unwrap();
        assert!(mark.redactions >= 5, "{mark:?}");
        assert_eq!(mark.source_type, SourceType::Command);
    }

    #[test]
    fn a_time_from_the_future_is_clamped_and_a_near_one_kept() {
        let mut r = req("a capture long enough to be kept in the memory of the project");
        r.at = Some("9999-12-31T00:00:00Z".into());
        let (rec, clamped) = journaled(admit(r.clone(), now(), crate::MAX_CAPTURE_CHARS).unwrap());
        assert_eq!(rec.at.as_deref(), Some(now().to_rfc3339().as_str()));
        assert!(clamped.unwrap().starts_with("9999-12-31"));
        r.at = Some("2026-11-24T12:04:00Z".into());
        let (rec, clamped) = journaled(admit(r.clone(), now(), crate::MAX_CAPTURE_CHARS).unwrap());
        assert_eq!(clamped, None);
        assert!(rec.at.unwrap().starts_with("2026-11-24T12:04:00"));
        r.at = Some("2019-01-01T00:00:00Z".into());
        assert_eq!(
            journaled(admit(r, now(), crate::MAX_CAPTURE_CHARS).unwrap()).1,
            None
        );
    }

    #[test]
    fn oversized_or_invalid_fields_are_refused_with_the_field_named() {
        let mut r = req("a capture long enough to be kept in the memory of the project");
        let big: Map<String, Value> = (0..50_000).map(|i| (format!("k{i}"), json!(i))).collect();
        r.metadata = Some(big);
        assert!(admit(r, now(), crate::MAX_CAPTURE_CHARS)
            .unwrap_err()
            .0
            .contains("`metadata`"));
        let mut r = req("a capture long enough to be kept in the memory of the project");
        r.session_id = Some("s".repeat(MAX_SESSION_ID_CHARS + 1));
        assert!(admit(r, now(), crate::MAX_CAPTURE_CHARS)
            .unwrap_err()
            .0
            .contains("`session_id`"));
        let mut r = req("a capture long enough to be kept in the memory of the project");
        r.at = Some("yesterday".into());
        assert!(admit(r, now(), crate::MAX_CAPTURE_CHARS)
            .unwrap_err()
            .0
            .contains("`at`"));
        let mut r = req("a capture long enough to be kept in the memory of the project");
        r.tool = " ".into();
        assert!(admit(r, now(), crate::MAX_CAPTURE_CHARS)
            .unwrap_err()
            .0
            .contains("`tool`"));
    }

    #[test]
    fn nothing_worth_keeping_is_not_journaled() {
        assert_eq!(
            admit(
                req("<private>all of it, a long private text</private>"),
                now(),
                crate::MAX_CAPTURE_CHARS
            )
            .unwrap(),
            Admission::Skip(SkipReason::PrivateOnly)
        );
        assert!(matches!(
            admit(req("ok"), now(), crate::MAX_CAPTURE_CHARS).unwrap(),
            Admission::Skip(SkipReason::TooShort { .. })
        ));
    }

    #[test]
    fn a_request_too_short_to_keep_is_journaled_as_its_mark_alone() {
        let mut r = req("ok, continue");
        r.tool = "UserPrompt".into();
        r.session_id = Some("s1".into());
        r.at = Some("2026-01-01T10:00:00Z".into());
        let (record, _) = journaled(admit(r, now(), crate::MAX_CAPTURE_CHARS).unwrap());
        assert!(record.request_mark);
        assert_eq!(record.content, "", "nothing of the request is kept");
        assert_eq!(record.session_id.as_deref(), Some("s1"));
        assert_eq!(record.at.as_deref(), Some("2026-01-01T10:00:00+00:00"));
        // What `ai-inject` sends for a prompt it does not keep: the request, without its text.
        let mut r = req("");
        r.tool = "UserPrompt".into();
        let (record, _) = journaled(admit(r, now(), crate::MAX_CAPTURE_CHARS).unwrap());
        assert!(record.request_mark);
        // A tool's short output is nobody's request: skipped as before.
        assert!(matches!(
            admit(req("ok"), now(), crate::MAX_CAPTURE_CHARS).unwrap(),
            Admission::Skip(SkipReason::TooShort { .. })
        ));
        // Greetings and interjections name nothing either.
        for said in ["hello there!", "wow, haha"] {
            let mut r = req(said);
            r.tool = "UserPrompt".into();
            let (record, _) = journaled(admit(r, now(), crate::MAX_CAPTURE_CHARS).unwrap());
            assert!(record.request_mark, "{said}");
        }
        // A short request that names something is kept whole: it is what was asked.
        for asked in ["use treefmt", "bump serde to 1.0.220"] {
            let mut r = req(asked);
            r.tool = "UserPrompt".into();
            let (record, _) = journaled(admit(r, now(), crate::MAX_CAPTURE_CHARS).unwrap());
            assert!(!record.request_mark, "{asked}");
            assert_eq!(record.content, asked);
        }
        // Marks are written only when set: older readers see the records they know.
        let kept = req("a capture long enough to be kept in the memory of the project");
        let (record, _) = journaled(admit(kept, now(), crate::MAX_CAPTURE_CHARS).unwrap());
        assert!(!serde_json::to_string(&record)
            .unwrap()
            .contains("request_mark"));
    }

    #[test]
    fn records_of_older_journals_still_parse_and_are_unprepared() {
        let old =
            r#"{"tool":"Bash","content":"raw","at":"2026-01-01T00:00:00Z","hook":"ai-capture"}"#;
        let rec: CaptureRecord = serde_json::from_str(old).unwrap();
        assert_eq!(rec.prepared, None);
        assert_eq!(rec.content, "raw");
    }

    #[test]
    fn a_document_inside_a_string_is_redacted_line_by_line() {
        let reply = json!({"content": "db:\n  password: yamlsecretword\n| Host | Password |\n|---|---|\n| db1 | Tb1-secret |"}).to_string();
        let record = json!({"raw_reply": reply, "plain": "nothing here"});
        let (out, n) = redact_json(record.clone());
        let text = out.to_string();
        assert!(
            !text.contains("yamlsecretword") && !text.contains("Tb1-secret"),
            "{text}"
        );
        assert_eq!(n, 2);
        // Still the same document, and a string with nothing to redact is kept byte for byte.
        let inner: Value = serde_json::from_str(out["raw_reply"].as_str().unwrap()).unwrap();
        assert!(inner["content"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:password]"));
        assert_eq!(out["plain"], "nothing here");
    }

    #[test]
    fn names_are_redacted_like_values() {
        let token = "ghp_R8f2kLq9ZxW4mN7vB3cT6yH1jP5sD0gAeU2i";
        let mut r = req("the deploy finished cleanly on every host");
        r.tool = format!("mcp__x__{token}");
        r.hook = Some(format!("hook {token}"));
        r.metadata = Some(
            json!({token: "x", "nested": {token: 1}})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let Admission::Journal { record, .. } = admit(r, now(), crate::MAX_CAPTURE_CHARS).unwrap()
        else {
            panic!("skipped");
        };
        let stored = serde_json::to_string(&record).unwrap();
        assert!(!stored.contains("R8f2kLq9"), "{stored}");
        assert!(
            record.tool.starts_with("mcp__x__[REDACTED"),
            "{}",
            record.tool
        );
    }
}
