//! `ai import FILE [--format jsonl|claude-transcript]`: captures replayed in timestamp order with
//! the time they carry (decay and ids use it), metadata kept on each message.

use super::{into_result, Ctx};
use ai_smartness_proto::protocol::{
    CaptureRequest, Command, ConsolidateRequest, ErrorCode, Flag, Request,
};
use ai_smartness_replies::{ConsolidationReport, StatusReply};
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;

use ai_smartness_hooks::content::{build_content, file_path, Built};

/// One line of the jsonl format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonlLine {
    content: String,
    #[serde(default = "default_tool")]
    tool: String,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// Consolidation passes after an import, at most: each merges a thread once, so a session
/// whose subjects came back many times takes a few; the bound keeps a pathological store from
/// holding the import.
const MAX_CONSOLIDATION_PASSES: usize = 8;

/// What `ai import --json` prints.
#[derive(Debug, Serialize)]
struct ImportSummary {
    imported: usize,
    invalid_lines: usize,
    refused: usize,
    /// Threads the consolidation after the import split along their subjects.
    threads_split: usize,
    /// Groups of threads it merged.
    threads_merged: usize,
    /// Units of long captures whose vectors the daemon is still making (found by their words
    /// until then; `ai sync` waits for them).
    units_pending: usize,
}

fn default_tool() -> String {
    "UserPrompt".into()
}

pub(crate) fn import(ctx: &Ctx, file: &Path, format: &str) -> Result<ExitCode> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let (mut captures, errors) = match format {
        "jsonl" => parse_jsonl(&text),
        "claude-transcript" => parse_transcript(&text, file),
        other => bail!("unknown format {other}"),
    };
    for e in &errors {
        eprintln!("{}: {e}", file.display());
    }
    in_time_order(&mut captures);
    let mut client = ctx.connect()?;
    let mut sent = 0usize;
    let mut refused = 0usize;
    for (line, (_, c)) in captures.into_iter().enumerate() {
        let reply = client.request(&Request::Capture(c))?;
        // A capture the daemon refuses (an oversized field, say) is reported and skipped; any
        // other failure (the journal cannot write) stops the import.
        match reply.error.as_ref() {
            Some(e) if e.code == ErrorCode::BadRequest => {
                eprintln!("{}: capture {}: {}", file.display(), line + 1, e.message);
                refused += 1;
            }
            _ => {
                into_result(reply)?;
                sent += 1;
            }
        }
    }
    client.set_timeout(None)?;
    // Placed, not settled: the units' vectors are made in the background, and the memory
    // answers by their words meanwhile.
    into_result(client.request(&Request::Command(Command::Placed(Flag)))?)?;
    // Captures replayed one after another are placed as they would be live, where one session's
    // work follows its last prompt; the threads a person would list come from consolidation,
    // which reads the whole history and which the daemon would otherwise run only at its next
    // prunes. A pass merges each thread once at most: passes run until one changes nothing.
    let (mut threads_split, mut threads_merged) = (0, 0);
    for _ in 0..MAX_CONSOLIDATION_PASSES {
        let pass: ConsolidationReport = serde_json::from_value(into_result(client.request(
            &Request::Command(Command::Consolidate(ConsolidateRequest { dry_run: false })),
        )?)?)
        .context("decoding the consolidation report")?;
        threads_split += pass.consolidation.splits.len();
        threads_merged += pass.consolidation.merges.len();
        if pass.consolidation.merges.is_empty() && pass.consolidation.splits.is_empty() {
            break;
        }
    }
    let status: StatusReply = serde_json::from_value(into_result(
        client.request(&Request::Command(Command::Status(Flag)))?,
    )?)
    .context("decoding the status")?;
    let summary = ImportSummary {
        imported: sent,
        invalid_lines: errors.len(),
        refused,
        threads_split,
        threads_merged,
        units_pending: status.embedder.units_pending,
    };
    if ctx.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        println!(
            "imported {sent} captures ({} invalid lines skipped, {refused} refused by the daemon); \
             consolidation split {} threads and merged {}",
            errors.len(),
            summary.threads_split,
            summary.threads_merged,
        );
        if summary.units_pending > 0 {
            println!(
                "{} units of long captures are being embedded in the background: they are \
                 found by their words until then (`ai status` counts them, `ai sync` waits)",
                summary.units_pending
            );
        }
    }
    Ok(if errors.is_empty() && refused == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

/// Sorts captures by time (a stable sort: lines with the same time keep the file's order), then
/// gives each timed one a time of its own: one transcript record becomes several captures (its
/// text, each tool result) stamped with the same millisecond, and memory orders messages by
/// time. A microsecond apart, in the file's order, they keep that order wherever they are
/// stored, instead of one that changes between runs.
fn in_time_order(captures: &mut [(Option<DateTime<Utc>>, CaptureRequest)]) {
    captures.sort_by_key(|(at, _)| *at);
    let mut last: Option<DateTime<Utc>> = None;
    for (at, capture) in captures.iter_mut() {
        let Some(t) = at.as_mut() else { continue };
        if let Some(prev) = last.filter(|p| *t <= *p) {
            *t = prev + chrono::Duration::microseconds(1);
            capture.at = Some(t.to_rfc3339());
        }
        last = Some(*t);
    }
}

type Parsed = (Vec<(Option<DateTime<Utc>>, CaptureRequest)>, Vec<String>);

fn parse_jsonl(text: &str) -> Parsed {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: JsonlLine = match serde_json::from_str(line) {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("line {}: {e}", i + 1));
                continue;
            }
        };
        if let Some(s) = parsed.source.as_deref() {
            if s != "user" && s != "assistant" {
                errors.push(format!("line {}: source must be user or assistant", i + 1));
                continue;
            }
        }
        let at = match parsed.timestamp.as_deref() {
            Some(ts) => match parse_time(ts) {
                Some(t) => Some(t),
                None => {
                    errors.push(format!("line {}: timestamp is not RFC 3339: {ts}", i + 1));
                    continue;
                }
            },
            None => None,
        };
        out.push((
            at,
            CaptureRequest {
                tool: parsed.tool,
                content: parsed.content,
                at: at.map(|t| t.to_rfc3339()),
                source: parsed.source,
                session_id: None,
                metadata: parsed.metadata,
                hook: None,
            },
        ));
    }
    (out, errors)
}

/// Text the client writes into a transcript as a user record that no person typed: a local
/// command's name and output (`/clear`, `/model`) or the note that a request was interrupted,
/// which name no work.
fn is_client_marker(text: &str) -> bool {
    let t = text.trim_start();
    [
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "[Request interrupted by user",
    ]
    .iter()
    .any(|m| t.starts_with(m))
}

/// A tool call seen in a transcript, waiting for its result.
struct Call {
    name: String,
    input: Value,
    /// The record that made the call.
    uuid: Option<String>,
}

/// One line of a Claude Code session file. Only turns are read; other records (summaries,
/// snapshots, system lines) are skipped whatever their shape.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum TranscriptRecord {
    User(Turn),
    Assistant(Turn),
    #[serde(other)]
    Other,
}

/// A user or assistant turn.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Turn {
    /// Lines the client adds itself (caveats, command echoes): no one's words.
    #[serde(default)]
    is_meta: bool,
    /// The client's summary of the session so far, sent as the user's turn when it compacted
    /// the session: kept (it answers "what was done"), marked as a recap, not a request.
    #[serde(default)]
    is_compact_summary: bool,
    timestamp: Option<String>,
    uuid: Option<String>,
    session_id: Option<String>,
    message: Option<TurnMessage>,
    /// The structured result a tool gave, as the live hook receives it: passed on whole to the
    /// same content builder.
    tool_use_result: Option<Value>,
}

#[derive(Deserialize)]
struct TurnMessage {
    content: Option<TurnContent>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TurnContent {
    Text(String),
    /// Read block by block, so one block of an unknown shape costs only itself.
    Blocks(Vec<Value>),
    Other(serde::de::IgnoredAny),
}

/// A block of a turn's content.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        #[serde(default)]
        tool_use_id: String,
        #[serde(default)]
        content: ResultContent,
    },
    #[serde(other)]
    Other,
}

/// A tool result's own content: a text, or parts of which the text ones are kept.
#[derive(Deserialize)]
#[serde(untagged)]
enum ResultContent {
    Text(String),
    Parts(Vec<ResultPart>),
    Other(Value),
}

impl Default for ResultContent {
    fn default() -> Self {
        ResultContent::Other(Value::Null)
    }
}

impl ResultContent {
    fn into_value(self) -> Value {
        match self {
            ResultContent::Text(s) => Value::String(s),
            ResultContent::Parts(parts) => Value::String(
                parts
                    .into_iter()
                    .filter_map(|p| p.text)
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            ResultContent::Other(v) => v,
        }
    }
}

#[derive(Deserialize)]
struct ResultPart {
    text: Option<String>,
}

/// Claude Code session files: user prompts, assistant text, and tool calls with their results,
/// made into the text the `ai-capture` hook would have sent live (the command and its output,
/// the file and its content), from the call's input and the record's structured result.
fn parse_transcript(text: &str, file: &Path) -> Parsed {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut calls: HashMap<String, Call> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (turn, from_user) = match serde_json::from_str(line) {
            Ok(TranscriptRecord::User(t)) => (t, true),
            Ok(TranscriptRecord::Assistant(t)) => (t, false),
            Ok(TranscriptRecord::Other) => continue,
            Err(e) => {
                errors.push(format!("line {}: {e}", i + 1));
                continue;
            }
        };
        if turn.is_meta {
            continue;
        }
        let at = turn.timestamp.as_deref().and_then(parse_time);
        let mut meta = Map::new();
        if let Some(uuid) = &turn.uuid {
            meta.insert("uuid".into(), Value::String(uuid.clone()));
        }
        if let Some(session) = &turn.session_id {
            meta.insert("sessionId".into(), Value::String(session.clone()));
        }
        meta.insert(
            "transcript".into(),
            Value::String(file.display().to_string()),
        );
        if turn.is_compact_summary {
            meta.insert(
                ai_smartness_capture::source::RECAP_KEY.into(),
                Value::Bool(true),
            );
        }
        let session = turn.session_id.clone();
        let (said_tool, said_source) = if from_user {
            ("UserPrompt", "user")
        } else {
            ("Response", "assistant")
        };
        let mut push = |tool: &str, source: &str, content: String, extra: Map<String, Value>| {
            if content.trim().is_empty() || is_client_marker(&content) {
                return;
            }
            let mut metadata = meta.clone();
            metadata.extend(extra);
            out.push((
                at,
                CaptureRequest {
                    tool: tool.to_string(),
                    content,
                    at: at.map(|t| t.to_rfc3339()),
                    source: Some(source.to_string()),
                    session_id: session.clone(),
                    metadata: Some(metadata),
                    hook: None,
                },
            ));
        };
        let blocks = match turn.message.and_then(|m| m.content) {
            Some(TurnContent::Text(s)) => {
                push(said_tool, said_source, s, Map::new());
                continue;
            }
            Some(TurnContent::Blocks(blocks)) => blocks,
            Some(TurnContent::Other(_)) | None => continue,
        };
        let structured = turn.tool_use_result;
        for block in blocks {
            match serde_json::from_value(block) {
                Ok(Block::Text { text }) => push(said_tool, said_source, text, Map::new()),
                Ok(Block::ToolUse { id, name, input }) => {
                    calls.insert(
                        id,
                        Call {
                            name,
                            input,
                            uuid: turn.uuid.clone(),
                        },
                    );
                }
                Ok(Block::ToolResult {
                    tool_use_id: id,
                    content,
                }) => {
                    let call = calls.remove(&id);
                    let tool = call.as_ref().map_or("Tool", |c| c.name.as_str());
                    // The structured result the hook would have got; the text result for a
                    // record without one.
                    let response = match &structured {
                        Some(r) if !r.is_null() => r.clone(),
                        _ => content.into_value(),
                    };
                    let input = call.as_ref().map_or(Value::Null, |c| c.input.clone());
                    let content = match build_content(tool, &input, &response) {
                        Built::Text(t) => t,
                        Built::Skip(_) => continue,
                    };
                    let mut extra = Map::new();
                    if let Some(uuid) = call.as_ref().and_then(|c| c.uuid.clone()) {
                        extra.insert("call_uuid".into(), Value::String(uuid));
                    }
                    if !id.is_empty() {
                        extra.insert("tool_use_id".into(), Value::String(id.clone()));
                    }
                    if let Some(path) = file_path(&input, &response) {
                        extra.insert("file_path".into(), Value::String(path.to_string()));
                    }
                    push(tool, "assistant", content, extra);
                }
                Ok(Block::Other) | Err(_) => {}
            }
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_lines_keep_time_and_metadata_and_bad_lines_are_reported() {
        let text = r#"{"content": "Alice: I adopted a dog named Rex last week", "source": "user", "timestamp": "2023-05-08T13:56:00Z", "metadata": {"dia_id": "D1:3"}}
not json
{"content": "x", "timestamp": "yesterday"}
{"content": "second", "tool": "Bash", "unknown": 1}
"#;
        let (ok, errors) = parse_jsonl(text);
        assert_eq!(ok.len(), 1);
        assert_eq!(errors.len(), 3);
        let c = &ok[0].1;
        assert_eq!(c.tool, "UserPrompt");
        assert_eq!(c.metadata.as_ref().unwrap()["dia_id"], "D1:3");
        assert_eq!(c.at.as_deref(), Some("2023-05-08T13:56:00+00:00"));
    }

    #[test]
    fn transcripts_name_tool_results_by_their_tool_use() {
        let text = r#"{"type":"user","message":{"role":"user","content":"Please look at the failing database migration tests"},"timestamp":"2026-01-01T10:00:00Z","uuid":"u1","sessionId":"s"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Let me run them."},{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"cargo test"}}]},"timestamp":"2026-01-01T10:00:01Z","uuid":"u2","sessionId":"s"}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu1","content":"test migrations::up ... FAILED"}]},"timestamp":"2026-01-01T10:00:02Z","uuid":"u3","sessionId":"s"}
{"type":"summary","summary":"x"}
{"type":"user","message":{"role":"user","content":"<command-name>/clear</command-name>\n<command-message>clear</command-message>"},"timestamp":"2026-01-01T10:00:03Z","uuid":"u4","sessionId":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"timestamp":"2026-01-01T10:00:04Z","uuid":"u5","sessionId":"s"}
{"type":"user","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation. The migrations were fixed."},"timestamp":"2026-01-01T11:00:00Z","uuid":"u6","sessionId":"s"}
"#;
        let (ok, errors) = parse_transcript(text, Path::new("t.jsonl"));
        assert!(errors.is_empty());
        let tools: Vec<&str> = ok.iter().map(|(_, c)| c.tool.as_str()).collect();
        assert_eq!(tools, ["UserPrompt", "Response", "Bash", "UserPrompt"]);
        // The client's recap at a compaction is kept, marked as a recap; a request is not.
        let recap =
            |i: usize| ai_smartness_capture::source::is_recap(ok[i].1.metadata.as_ref().unwrap());
        assert!(!recap(0));
        assert!(recap(3));
    }

    #[test]
    fn captures_of_one_moment_get_times_of_their_own_in_file_order() {
        let text = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Running both."},{"type":"tool_use","id":"a","name":"Bash","input":{"command":"make"}},{"type":"tool_use","id":"b","name":"Bash","input":{"command":"make test"}}]},"timestamp":"2026-01-01T10:00:00.500Z"}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"built"},{"type":"tool_result","tool_use_id":"b","content":"1 passed"}]},"timestamp":"2026-01-01T10:00:00.500Z"}
{"type":"user","message":{"content":"Thanks"},"timestamp":"2026-01-01T10:00:00.500001Z"}
"#;
        let (mut ok, _) = parse_transcript(text, Path::new("t.jsonl"));
        in_time_order(&mut ok);
        let got: Vec<(&str, &str)> = ok
            .iter()
            .map(|(_, c)| (c.content.as_str(), c.at.as_deref().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                ("Running both.", "2026-01-01T10:00:00.500+00:00"),
                ("$ make\nbuilt", "2026-01-01T10:00:00.500001+00:00"),
                ("$ make test\n1 passed", "2026-01-01T10:00:00.500002+00:00"),
                ("Thanks", "2026-01-01T10:00:00.500003+00:00"),
            ]
        );
    }

    #[test]
    fn odd_records_cost_only_themselves() {
        // A record of another kind in any shape is skipped; a block of an unknown or broken
        // shape is skipped alone; a turn whose fields have the wrong types is reported.
        let text = r#"{"type":"file-history-snapshot","message":7,"snapshot":{"a":1}}
{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hm"},{"type":"tool_use","name":"Bash"},{"type":"text","text":"The pool size is 40."}]},"uuid":"a1"}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"gone","content":[{"type":"image"},{"type":"text","text":"port 5173"}]}]},"uuid":"u1"}
{"type":"user","isMeta":true,"message":{"content":"Caveat: the messages below were generated"}}
{"type":"user","uuid":42,"message":{"content":"kept out"}}
{"type":"assistant","message":{"content":null}}
"#;
        let (ok, errors) = parse_transcript(text, Path::new("t.jsonl"));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("line 5:"), "{errors:?}");
        let got: Vec<(&str, &str)> = ok
            .iter()
            .map(|(_, c)| (c.tool.as_str(), c.content.as_str()))
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], ("Response", "The pool size is 40."));
        assert_eq!(got[1].0, "Tool");
        assert!(got[1].1.contains("port 5173"), "{got:?}");
        let meta = ok[0].1.metadata.as_ref().unwrap();
        assert_eq!(meta["uuid"], "a1");
    }
}
