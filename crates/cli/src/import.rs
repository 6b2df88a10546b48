//! `ai import FILE [--format jsonl|claude-transcript]`: captures replayed in timestamp order with
//! the time they carry (decay and ids use it), metadata kept on each message.

use super::{into_result, Ctx};
use crate::protocol::{CaptureRequest, Command, ConsolidateRequest, ErrorCode, Flag, Request};
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
    // Stable sort: lines with the same time keep the file's order.
    captures.sort_by_key(|(at, _)| *at);
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
    uuid: Option<Value>,
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
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                errors.push(format!("line {}: {e}", i + 1));
                continue;
            }
        };
        let kind = v["type"].as_str().unwrap_or("");
        if (kind != "user" && kind != "assistant") || v["isMeta"].as_bool() == Some(true) {
            continue;
        }
        let at = v["timestamp"].as_str().and_then(parse_time);
        let mut meta = Map::new();
        for key in ["uuid", "sessionId"] {
            if let Some(x) = v.get(key) {
                meta.insert(key.to_string(), x.clone());
            }
        }
        meta.insert(
            "transcript".into(),
            Value::String(file.display().to_string()),
        );
        let session = v["sessionId"].as_str().map(str::to_string);
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
        let content = &v["message"]["content"];
        if let Some(s) = content.as_str() {
            let (tool, source) = if kind == "user" {
                ("UserPrompt", "user")
            } else {
                ("Response", "assistant")
            };
            push(tool, source, s.to_string(), Map::new());
            continue;
        }
        for block in content.as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => {
                    let text = block["text"].as_str().unwrap_or_default().to_string();
                    let (tool, source) = if kind == "user" {
                        ("UserPrompt", "user")
                    } else {
                        ("Response", "assistant")
                    };
                    push(tool, source, text, Map::new());
                }
                Some("tool_use") => {
                    if let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) {
                        calls.insert(
                            id.to_string(),
                            Call {
                                name: name.to_string(),
                                input: block["input"].clone(),
                                uuid: v.get("uuid").cloned(),
                            },
                        );
                    }
                }
                Some("tool_result") => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    let call = calls.remove(id);
                    let tool = call.as_ref().map_or("Tool", |c| c.name.as_str());
                    // The structured result the hook would have got; the text result for a
                    // record without one.
                    let response = match v.get("toolUseResult") {
                        Some(r) if !r.is_null() => r.clone(),
                        _ => match &block["content"] {
                            Value::String(s) => Value::String(s.clone()),
                            Value::Array(parts) => Value::String(
                                parts
                                    .iter()
                                    .filter_map(|p| p["text"].as_str())
                                    .collect::<Vec<_>>()
                                    .join("\n"),
                            ),
                            other => other.clone(),
                        },
                    };
                    let input = call.as_ref().map_or(Value::Null, |c| c.input.clone());
                    let content = match build_content(tool, &input, &response) {
                        Built::Text(t) => t,
                        Built::Skip(_) => continue,
                    };
                    let mut extra = Map::new();
                    if let Some(uuid) = call.as_ref().and_then(|c| c.uuid.clone()) {
                        extra.insert("call_uuid".into(), uuid);
                    }
                    if !id.is_empty() {
                        extra.insert("tool_use_id".into(), Value::String(id.to_string()));
                    }
                    if let Some(path) = file_path(&input, &response) {
                        extra.insert("file_path".into(), Value::String(path.to_string()));
                    }
                    push(tool, "assistant", content, extra);
                }
                _ => {}
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
"#;
        let (ok, errors) = parse_transcript(text, Path::new("t.jsonl"));
        assert!(errors.is_empty());
        let tools: Vec<&str> = ok.iter().map(|(_, c)| c.tool.as_str()).collect();
        assert_eq!(tools, ["UserPrompt", "Response", "Bash"]);
    }
}
