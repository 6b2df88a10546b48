//! Recall on demand: `recall` (the best messages for a query), `timeline` (the memory in time
//! order) and `remember` (a note kept as a thread of its own). What the MCP tools ask.

use super::state::{CaptureError, CaptureHandle, Journaled, MemoryHandle};
use ai_smartness_capture::source::NOTE_TOOL;
use ai_smartness_core::memory::engine::Memory;
use ai_smartness_core::memory::types::{Thread, ThreadStatus};
use ai_smartness_core::retrieve::recall::{self, Found, Scope};
use ai_smartness_proto::protocol::{
    CaptureRequest, ErrorCode, RecallQuery, RememberRequest, Response, StatusFilter, TimelineQuery,
};
use ai_smartness_replies::{MessageHit, RecallHit, RecallReply, Remembered, TimelineReply};
use ai_smartness_team::search::Depth;
use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};
use std::time::Duration;

/// Results a recall or a timeline lists at most.
pub const MAX_LIMIT: usize = 100;
/// A note is placed within this, or the reply says it is still on its way.
const REMEMBER_WAIT: Duration = Duration::from_secs(10);
/// A note's title at most (a thread title's limit).
const MAX_NOTE_TITLE_CHARS: usize = 120;

/// A time bound as given: RFC 3339, or a day (`YYYY-MM-DD`, UTC), which starts at midnight
/// (`end_of_day`: the next midnight, so `until` a day includes that day).
fn parse_bound(field: &str, text: &str, end_of_day: bool) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    match NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        Ok(day) => {
            let day = if end_of_day {
                day.succ_opt().unwrap_or(day)
            } else {
                day
            };
            Ok(day.and_time(chrono::NaiveTime::MIN).and_utc())
        }
        Err(_) => Err(format!(
            "`{field}` is neither an RFC 3339 time nor a day (YYYY-MM-DD): {text:?}"
        )),
    }
}

/// The scope a request names.
fn scope(
    since: Option<&str>,
    until: Option<&str>,
    status: StatusFilter,
) -> Result<Scope, Response> {
    let bad = |e: String| Response::error(ErrorCode::BadRequest, e);
    let since = since
        .map(|s| parse_bound("since", s, false))
        .transpose()
        .map_err(bad)?;
    let until = until
        .map(|s| parse_bound("until", s, true))
        .transpose()
        .map_err(bad)?;
    let statuses = match status {
        StatusFilter::Active => vec![ThreadStatus::Active],
        StatusFilter::Suspended => vec![ThreadStatus::Suspended],
        StatusFilter::Archived => vec![ThreadStatus::Archived],
        StatusFilter::Live => vec![ThreadStatus::Active, ThreadStatus::Suspended],
        StatusFilter::All => vec![
            ThreadStatus::Active,
            ThreadStatus::Suspended,
            ThreadStatus::Archived,
        ],
    };
    Ok(Scope {
        since,
        until,
        statuses,
    })
}

/// What a listing shows of a found message.
fn message_hit(f: &Found<'_>) -> MessageHit {
    let text = |key: &str| {
        f.message
            .metadata
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    MessageHit {
        thread_id: f.thread.id.clone(),
        thread_title: f.thread.title.clone(),
        thread_status: f.thread.status.as_str().to_string(),
        message_id: f.message.id.clone(),
        at: f.message.timestamp.to_rfc3339(),
        author: f.message.source.as_str().to_string(),
        tool: text("tool"),
        file: text("file_path"),
        snippet: f.snippet.clone(),
        chars: f.message.content.chars().count(),
    }
}

/// Answers what the MCP tools ask of the memory.
#[derive(Clone)]
pub struct Recall {
    /// What is searched.
    memory: MemoryHandle,
    /// Where a note is journaled, and how long until it is placed.
    capture: CaptureHandle,
    /// The team store, searched too when the project is in a team.
    team: crate::team_sync::TeamSync,
}

/// How long a recall waits for the team store before answering with local memory alone.
const TEAM_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

impl Recall {
    pub fn new(
        memory: MemoryHandle,
        capture: CaptureHandle,
        team: crate::team_sync::TeamSync,
    ) -> Recall {
        Recall {
            memory,
            capture,
            team,
        }
    }

    pub async fn recall(&self, q: RecallQuery) -> Response {
        let text = q.query.trim().to_string();
        if text.is_empty() {
            return Response::error(ErrorCode::BadRequest, "empty query");
        }
        let limit = q.limit.unwrap_or(8).clamp(1, MAX_LIMIT);
        let scope = match scope(
            q.since.as_deref(),
            q.until.as_deref(),
            q.status.unwrap_or_default(),
        ) {
            Ok(s) => s,
            Err(r) => return r,
        };
        let query = match crate::inject::prepare_query(&self.memory, &text).await {
            Ok(q) => q,
            Err(e) => return Response::error(ErrorCode::Embedding, e.to_string()),
        };
        let now = self.memory.now();
        let team = if self.team.joined() {
            Some(
                self.team
                    .search(
                        &crate::team_sync::lexical_terms(query.stems(), &query.topics),
                        &query.embedding,
                        limit,
                        TEAM_BUDGET,
                        Depth::Asked,
                    )
                    .await,
            )
        } else {
            None
        };
        // Ranking is CPU work under the memory's lock: a blocking thread takes it.
        let memory = self.memory.clone();
        let reply = tokio::task::spawn_blocking(move || {
            let mut mem = memory.lock();
            mem.sync_table();
            let cache = memory.retrieval_cache();
            let (found, gate) = recall::recall(&mem, cache, &query, &scope, limit, now);
            RecallReply {
                query: text,
                relevant: !gate.abstained,
                hits: found
                    .iter()
                    .map(|f| RecallHit {
                        message: message_hit(f),
                        why: f.why,
                    })
                    .collect(),
                decision: gate,
                team,
            }
        })
        .await;
        match reply {
            Ok(r) => Response::reply(&r),
            Err(e) => Response::error(ErrorCode::Internal, format!("recall panicked: {e}")),
        }
    }

    pub async fn timeline(&self, q: TimelineQuery) -> Response {
        let limit = q.limit.unwrap_or(20).clamp(1, MAX_LIMIT);
        // A timeline is a record of what happened: archived work is part of it.
        let scope = match scope(q.since.as_deref(), q.until.as_deref(), StatusFilter::All) {
            Ok(s) => s,
            Err(r) => return r,
        };
        if q.around.is_some() && (scope.since.is_some() || scope.until.is_some()) {
            return Response::error(
                ErrorCode::BadRequest,
                "`around` names a message: give it without `since` or `until`",
            );
        }
        let memory = self.memory.clone();
        let reply = tokio::task::spawn_blocking(move || {
            let mem = memory.lock();
            recall::timeline(&mem, q.around.as_deref(), &scope, limit).map(|t| TimelineReply {
                messages: t.messages.iter().map(message_hit).collect(),
                more: t.more,
                around: q.around.clone(),
            })
        })
        .await;
        match reply {
            Ok(Ok(r)) => Response::reply(&r),
            Ok(Err(e)) => Response::error(ErrorCode::NotFound, e.to_string()),
            Err(e) => Response::error(ErrorCode::Internal, format!("timeline panicked: {e}")),
        }
    }

    pub async fn remember(&self, r: RememberRequest) -> Response {
        let title = r.title.as_deref().map(str::trim).filter(|t| !t.is_empty());
        if let Some(t) = title {
            if t.chars().count() > MAX_NOTE_TITLE_CHARS {
                return Response::error(
                    ErrorCode::BadRequest,
                    format!("a title has at most {MAX_NOTE_TITLE_CHARS} characters"),
                );
            }
        }
        // What the pipeline will store (cleaned, secrets redacted): how the note is found again.
        let stored = match ai_smartness_capture::prepare(NOTE_TOOL, &r.text) {
            Ok(p) => p.content,
            Err(reason) => {
                return Response::error(
                    ErrorCode::BadRequest,
                    format!("nothing to remember: {reason}"),
                )
            }
        };
        let mut metadata = Map::new();
        if let Some(t) = title {
            // Metadata is redacted on admission like the text.
            metadata.insert("title".into(), Value::String(t.to_string()));
        }
        let req = CaptureRequest {
            tool: NOTE_TOOL.into(),
            content: r.text,
            at: None,
            source: Some("user".into()),
            session_id: r.session_id,
            metadata: Some(metadata),
            hook: None,
        };
        let seq = match self.capture.journal_capture(req).await {
            Ok(Journaled::Queued(seq)) => seq,
            Ok(Journaled::Skipped(reason)) => {
                return Response::error(
                    ErrorCode::BadRequest,
                    format!("nothing to remember: {reason}"),
                )
            }
            Err(CaptureError::Refused(e)) => {
                return Response::error(ErrorCode::BadRequest, e.to_string())
            }
            Err(e) => return Response::error(ErrorCode::Journal, e.to_string()),
        };
        // Journaled: it is kept whatever happens next. Wait for it to be placed, to say where.
        let placed = tokio::time::timeout(REMEMBER_WAIT, self.capture.wait_processed(seq)).await;
        if placed != Ok(true) {
            return Response::error(
                ErrorCode::Busy,
                format!(
                    "the note is saved (capture {seq}) but not yet placed in a thread; it will be \
                 shortly"
                ),
            );
        }
        let mem = self.memory.lock();
        match note_thread(&mem, &stored) {
            Some((t, message_id)) => Response::reply(&Remembered {
                thread_id: t.id.clone(),
                message_id,
                title: t.title.clone(),
            }),
            None => Response::error(
                ErrorCode::Internal,
                format!("the note (capture {seq}) was processed but its thread is not found"),
            ),
        }
    }
}

/// The thread that holds a note's text (as the capture pipeline stored it).
fn note_thread<'m>(mem: &'m Memory, stored: &str) -> Option<(&'m Thread, String)> {
    let doc = mem.index.doc_with_content(stored)?;
    let t = mem.graph.thread(&doc.thread_id)?;
    let m = t.messages.get(doc.position)?;
    Some((t, m.id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_days_and_times() {
        let day = parse_bound("since", "2026-11-02", false).unwrap();
        assert_eq!(day.to_rfc3339(), "2026-11-02T00:00:00+00:00");
        let end = parse_bound("until", "2026-11-02", true).unwrap();
        assert_eq!(end.to_rfc3339(), "2026-11-03T00:00:00+00:00");
        let t = parse_bound("since", "2026-11-02T10:00:00+02:00", false).unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-02T08:00:00+00:00");
        let e = parse_bound("until", "last tuesday", true).unwrap_err();
        assert!(e.contains("`until`"), "{e}");
    }
}
