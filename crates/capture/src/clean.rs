//! Cleaning: turn a raw tool output into readable semantic text.
//!
//! Claude Code hands us tool responses as JSON (`{"stdout": ..., "stderr":
//! ..., "interrupted": false, ...}`, `{"type":"text","file":{...}}`). Only
//! the human-meaningful strings are worth remembering; flags, counters, ids
//! and whole-file snapshots are noise that would dilute embeddings and waste
//! every unit of evidence. Terminal output also carries ANSI
//! colours and `\r` progress bars that must not reach the store.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What a capture keeps whole, in characters, unless the config says otherwise: a long file
/// read or build log is kept, so every part of it can be found later.
pub const MAX_CAPTURE_CHARS: usize = 256 * 1024;

/// Of a capture over its bound, the share of the room for its head; as much again minus the
/// errors' share goes to its tail.
const HEAD_SHARE: usize = 45;
/// The share of the room for the lines between head and tail that look like errors.
const ERRORS_SHARE: usize = 20;
/// A kept error line is cut to this many characters.
const ERROR_LINE_CHARS: usize = 400;

/// Lines that say something failed: what a person looks for in the middle of a long log.
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(error|errors|fail|failed|failure|failing|panic|panicked|exception|traceback|fatal|abort|aborted|denied|refused|segfault|assert(ion)?|cannot|can't|unable|undefined|not found|no such|timed out)\b|^E\d|^\s*at \S+:\d+|✗|✘",
    )
    .expect("valid ERROR_LINE regex")
});

/// Whether `line` says something failed ("API Error: Request timed out.", "permission
/// denied"): what a person looks for later, however short.
pub fn says_something_failed(line: &str) -> bool {
    ERROR_LINE.is_match(line)
}

/// `text` whole when it holds at most `max_chars` characters; else its head, its tail and the
/// lines between that look like errors or failures (at most a fifth of the room), with a line
/// saying how much was left out. Cuts fall between lines. Never over `max_chars` characters.
pub fn keep_within(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_string();
    }
    if max_chars < 4096 {
        return truncate_smart(text, max_chars);
    }
    // Room for two marker lines.
    let room = max_chars - 2 * 120;
    let head_room = room * HEAD_SHARE / 100;
    let errors_room = room * ERRORS_SHARE / 100;
    let tail_room = room - head_room - errors_room;
    let head_end = cut_backward(text, byte_index(text, head_room), head_room / 5);
    let tail_start = cut_forward(text, byte_index(text, total - tail_room), tail_room / 5);
    let (head, middle, tail) = (
        &text[..head_end],
        &text[head_end..tail_start],
        &text[tail_start..],
    );
    let mut errors = String::new();
    let mut kept = 0usize;
    for line in middle.lines() {
        if !ERROR_LINE.is_match(line) {
            continue;
        }
        let line: String = line.chars().take(ERROR_LINE_CHARS).collect();
        let n = line.chars().count() + 1;
        if kept + n > errors_room {
            break;
        }
        kept += n;
        errors.push_str(&line);
        errors.push('\n');
    }
    let middle_lines = middle.lines().count();
    let left_out = middle.chars().count() - kept;
    let mut out = String::with_capacity(head.len() + errors.len() + tail.len() + 240);
    out.push_str(head.trim_end_matches('\n'));
    if errors.is_empty() {
        out.push_str(&format!(
            "\n[… {left_out} characters ({middle_lines} lines) left out here …]\n"
        ));
    } else {
        out.push_str(&format!(
            "\n[… {left_out} characters of {middle_lines} lines left out here; the lines among them that look like errors follow …]\n"
        ));
        out.push_str(&errors);
        out.push_str("[… end of the lines kept from the middle …]\n");
    }
    out.push_str(tail.trim_start_matches('\n'));
    out
}

/// Guard against pathological nesting (JSON inside strings inside JSON...).
const MAX_DEPTH: usize = 32;

/// Strings without whitespace at least this long, made only of base64
/// characters, are binary payloads (images, archives), not text.
const BLOB_MIN_CHARS: usize = 200;

/// Parses `text` as a JSON document when it plausibly is one.
///
/// Only objects, arrays and JSON strings are considered: a bare `42` or
/// `true` is left as text (it will be dropped as too short anyway) so that
/// prose starting with a number is never mistaken for JSON.
pub fn parse_json_document(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    match trimmed.as_bytes().first() {
        Some(b'{') | Some(b'[') | Some(b'"') => serde_json::from_str(trimmed).ok(),
        _ => None,
    }
}

/// Recursively collects the semantic strings of a JSON value.
///
/// * Numbers, booleans and null are dropped (counters and flags).
/// * Keys that are noise (`id`, `*_id`, `type`, `interrupted`, `isImage`,
///   `numLines`, `originalFile`, `structuredPatch`, `usage`, ...) are
///   skipped with their whole subtree.
/// * Path-like keys (`filePath`, `url`, `command`, `pattern`) come first so
///   the text starts with what it is about, then content keys (`content`,
///   `text`, `stdout`, `result`, ...), then everything else, alphabetically.
/// * A string that itself parses as a JSON object/array is recursed into
///   (Bash printing JSON, MCP tools returning serialized JSON).
/// * Identifier-like values (UUIDs, long hex hashes, `toolu_...`) and base64
///   blobs are dropped; duplicate strings are kept once.
///
/// Parts are joined with newlines.
pub fn extract_semantic_text(value: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    collect(value, 0, &mut parts, &mut seen);
    parts.join("\n")
}

fn collect(value: &Value, depth: usize, out: &mut Vec<String>, seen: &mut HashSet<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::String(s) => collect_string(s, depth, out, seen),
        Value::Array(items) => {
            for item in items {
                collect(item, depth + 1, out, seen);
            }
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> =
                map.iter().filter(|(k, _)| !is_noise_key(k)).collect();
            // Stable sort: keys of equal rank keep the map's (alphabetical) order.
            entries.sort_by_key(|(k, _)| key_rank(k));
            for (_, v) in entries {
                collect(v, depth + 1, out, seen);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn collect_string(s: &str, depth: usize, out: &mut Vec<String>, seen: &mut HashSet<String>) {
    let trimmed = s.trim();
    if trimmed.is_empty() {
        return;
    }
    if matches!(trimmed.as_bytes().first(), Some(b'{') | Some(b'[')) {
        if let Ok(inner) = serde_json::from_str::<Value>(trimmed) {
            collect(&inner, depth + 1, out, seen);
            return;
        }
    }
    if is_blob(trimmed) || is_identifier_value(trimmed) {
        return;
    }
    if seen.insert(trimmed.to_string()) {
        out.push(trimmed.to_string());
    }
}

/// Lowercases and drops `_`/`-` so `file_path`, `filePath` and `file-path`
/// compare equal.
fn normalize_key(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Keys whose values never carry meaning worth remembering.
const NOISE_KEYS: &[&str] = &[
    "id",
    "uuid",
    "type",
    "interrupted",
    "isimage",
    "nooutputexpected",
    "numlines",
    "startline",
    "totallines",
    "numfiles",
    "durationms",
    "durationseconds",
    "totaldurationms",
    "totaltokens",
    "totaltoolusecount",
    "usage",
    "truncated",
    "mode",
    "status",
    "code",
    "codetext",
    "bytes",
    "exitcode",
    "returncode",
    "timestamp",
    "createdat",
    "updatedat",
    "replaceall",
    "usermodified",
    "originalfile",
    "originalfilecontents",
    "structuredpatch",
    "base64",
    "mimetype",
    "mediatype",
    "encoding",
    "originalsize",
    "sessionid",
    "transcriptpath",
    "cwd",
    "hookeventname",
    "permissionmode",
    "toolname",
    "activeform",
    "role",
    "model",
    "stopreason",
    "stopsequence",
    "signature",
];

fn is_noise_key(key: &str) -> bool {
    if key.ends_with("_id")
        || key.ends_with("-id")
        || key.ends_with("Id")
        || key.ends_with("ID")
        || key.ends_with("_ids")
        || key.ends_with("Ids")
    {
        return true;
    }
    let norm = normalize_key(key);
    NOISE_KEYS.contains(&norm.as_str())
}

/// Preferred order of keys; unknown keys sort after all of these.
const KEY_ORDER: &[&str] = &[
    "filepath",
    "notebookpath",
    "path",
    "file",
    "filename",
    "filenames",
    "url",
    "command",
    "description",
    "pattern",
    "query",
    "title",
    "name",
    "prompt",
    "oldstring",
    "newstring",
    "edits",
    "content",
    "text",
    "stdout",
    "output",
    "result",
    "results",
    "message",
    "body",
    "summary",
    "answer",
    "response",
    "stderr",
    "error",
    "errors",
];

fn key_rank(key: &str) -> usize {
    let norm = normalize_key(key);
    KEY_ORDER
        .iter()
        .position(|k| *k == norm)
        .unwrap_or(KEY_ORDER.len())
}

/// Long runs of base64 without whitespace, or `data:...;base64,` URIs.
fn is_blob(s: &str) -> bool {
    if s.starts_with("data:") && s.contains(";base64,") {
        return true;
    }
    s.len() >= BLOB_MIN_CHARS
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'))
}

static IDENTIFIER_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|(?:toolu|msg|req|call)_[A-Za-z0-9]{8,})$",
    )
    .expect("valid IDENTIFIER_VALUE regex")
});

/// UUIDs, long hex hashes and API object ids: unique but meaningless.
fn is_identifier_value(s: &str) -> bool {
    s.len() <= 64 && IDENTIFIER_VALUE.is_match(s)
}

/// ANSI escape sequences: CSI (`ESC [ ... final`), OSC (`ESC ] ... BEL/ST`)
/// and two-byte escapes.
static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
        .expect("valid ANSI regex")
});

/// Line-number gutters of the Read tool's display format (`    12→code`).
static LINE_GUTTER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^ *\d+→").expect("valid LINE_GUTTER regex"));

/// Cleans a raw capture: extracts the semantic text when it is JSON, then
/// normalises it with [`normalize_text`].
pub fn clean(raw: &str) -> String {
    match parse_json_document(raw) {
        Some(value) => normalize_text(&extract_semantic_text(&value)),
        None => normalize_text(raw),
    }
}

/// Normalises terminal/text output:
///
/// * removes ANSI escape codes and other control characters (tabs and
///   newlines excepted);
/// * resolves carriage-return progress bars (`10%\r50%\r100%`) to the last
///   state of each line, and CRLF to LF;
/// * removes Read-tool line-number gutters;
/// * trims line ends, collapses interior runs of spaces/tabs to one space
///   (leading indentation is kept: code stays readable), and collapses runs
///   of blank lines to a single blank line.
pub fn normalize_text(text: &str) -> String {
    let no_ansi = if text.contains('\x1b') {
        ANSI.replace_all(text, "")
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    let no_gutter = if no_ansi.contains('→') {
        LINE_GUTTER.replace_all(&no_ansi, "").into_owned()
    } else {
        no_ansi.into_owned()
    };

    let mut out = String::with_capacity(no_gutter.len());
    let mut blank_run = 0usize;
    for raw_line in no_gutter.split('\n') {
        let line = last_cr_segment(raw_line);
        let normalized = normalize_line(line);
        if normalized.is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if blank_run > 0 {
                out.push('\n');
            }
        }
        blank_run = 0;
        out.push_str(&normalized);
    }
    out
}

/// For `a\rb\rc` keep what a terminal would show last: the last non-empty
/// segment. A trailing `\r` (CRLF) is therefore harmless.
fn last_cr_segment(line: &str) -> &str {
    if !line.contains('\r') {
        return line;
    }
    line.rsplit('\r')
        .find(|seg| !seg.trim().is_empty())
        .unwrap_or("")
}

fn normalize_line(line: &str) -> String {
    let line = line.trim_end();
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    // Keep leading indentation as-is.
    while let Some(&c) = chars.peek() {
        if c == ' ' || c == '\t' {
            out.push(c);
            chars.next();
        } else {
            break;
        }
    }
    let mut pending_space = false;
    for c in chars {
        if c.is_whitespace() {
            pending_space = true;
        } else if c.is_control() {
            // Bell, backspace, NUL...: never meaningful in stored text.
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    if out.trim().is_empty() {
        String::new()
    } else {
        out
    }
}

/// Truncates `text` to at most `max_chars` characters, keeping the head and
/// a short tail around a `[... N chars truncated ...]` marker.
///
/// The head is cut at the latest line end or sentence end in its last
/// fifth (falling back to whitespace, then to a plain char boundary); the
/// tail starts at a line start when possible. The tail is worth keeping
/// because tool outputs put their verdict last (test summaries, errors).
/// The result never exceeds `max_chars` characters, marker included; for
/// tiny limits (< 80) the text is simply cut without a marker.
pub fn truncate_smart(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_string();
    }
    const MIN_FOR_MARKER: usize = 80;
    if max_chars < MIN_FOR_MARKER {
        let end = byte_index(text, max_chars);
        let cut = cut_backward(text, end, max_chars / 4);
        return text[..cut].trim_end().to_string();
    }
    // The removed count is < total, so this bounds the marker's length.
    let marker_budget = marker(total).chars().count();
    let available = max_chars - marker_budget;
    let tail_budget = (available / 10).min(600);
    let head_budget = available - tail_budget;

    let head_end = byte_index(text, head_budget);
    let head_cut = cut_backward(text, head_end, head_budget / 5);
    let tail_start = byte_index(text, total - tail_budget);
    let tail_cut = cut_forward(text, tail_start, tail_budget / 2);

    let head = text[..head_cut].trim_end();
    let tail = text[tail_cut..].trim_start();
    let removed = total - head.chars().count() - tail.chars().count();
    let mut out = String::with_capacity(head.len() + tail.len() + marker_budget);
    out.push_str(head);
    out.push_str(&marker(removed));
    out.push_str(tail);
    out
}

fn marker(removed: usize) -> String {
    format!("\n[... {removed} chars truncated ...]\n")
}

/// Byte offset of the `n`-th character (or the end of the string).
fn byte_index(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// Best cut position at or before `end`, looking back at most `window`
/// characters: after the last line end or sentence end, else at the last
/// whitespace, else `end`.
fn cut_backward(text: &str, end: usize, window: usize) -> usize {
    let start = text[..end]
        .char_indices()
        .rev()
        .nth(window)
        .map_or(0, |(i, _)| i);
    let region = &text[start..end];
    let newline = region.rfind('\n');
    let sentence = rfind_sentence_end(region);
    let best = match (newline, sentence) {
        (Some(n), Some(s)) => Some(n.max(s)),
        (n, s) => n.or(s),
    };
    if let Some(rel) = best {
        if start + rel > 0 {
            return start + rel;
        }
    }
    match region.rfind(char::is_whitespace) {
        Some(rel) if start + rel > 0 => start + rel,
        _ => end,
    }
}

/// Position just after the last `.`, `!` or `?` that is followed by
/// whitespace, relative to `region`.
fn rfind_sentence_end(region: &str) -> Option<usize> {
    let bytes = region.as_bytes();
    (0..bytes.len().saturating_sub(1))
        .rev()
        .find(|&i| matches!(bytes[i], b'.' | b'!' | b'?') && bytes[i + 1].is_ascii_whitespace())
        .map(|i| i + 1)
}

/// Best start position at or after `start`, looking ahead at most `window`
/// characters: the start of the next line, else after whitespace, else
/// `start`.
fn cut_forward(text: &str, start: usize, window: usize) -> usize {
    let end = text[start..]
        .char_indices()
        .nth(window)
        .map_or(text.len(), |(i, _)| start + i);
    let region = &text[start..end];
    if let Some(rel) = region.find('\n') {
        return start + rel + 1;
    }
    match region.char_indices().find(|(_, c)| c.is_whitespace()) {
        Some((rel, c)) => start + rel + c.len_utf8(),
        None => start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_tool_response() {
        let raw = r#"{"stdout":"running 3 tests\ntest store::atomic::tests::rename_is_atomic ... ok\ntest store::atomic::tests::fsync_parent_dir ... FAILED\n\nfailures:\n\n---- store::atomic::tests::fsync_parent_dir stdout ----\nthread 'store::atomic::tests::fsync_parent_dir' panicked at src/store/atomic.rs:88:9:\nassertion failed: dir_synced\n\ntest result: FAILED. 2 passed; 1 failed; 0 ignored","stderr":"   Compiling ai-smartness v0.1.0 (/home/dev/ai-smartness)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.21s","interrupted":false,"isImage":false,"noOutputExpected":false}"#;
        let out = clean(raw);
        assert!(out.starts_with("running 3 tests\n"), "{out}");
        assert!(out.contains("test result: FAILED. 2 passed; 1 failed; 0 ignored"));
        // stderr comes after stdout and its spacing is normalised.
        let stdout_pos = out.find("running 3 tests");
        let stderr_pos = out.find("Compiling ai-smartness");
        assert!(stdout_pos < stderr_pos);
        assert!(out.contains("\nCompiling ai-smartness v0.1.0"), "{out}");
        assert!(!out.contains("interrupted"));
        assert!(!out.contains("false"));
    }

    #[test]
    fn read_tool_response() {
        let raw = r#"{"type":"text","file":{"filePath":"/home/dev/project/src/main.rs","content":"use std::env;\n\nfn main() {\n    let args: Vec<String> = env::args().collect();\n    println!(\"{:?}\", args);\n}\n","numLines":40,"startLine":1,"totalLines":40}}"#;
        let out = clean(raw);
        assert!(
            out.starts_with("/home/dev/project/src/main.rs\nuse std::env;"),
            "{out}"
        );
        assert!(out.contains("\n    let args: Vec<String> = env::args().collect();"));
        assert!(!out.contains("numLines"));
        assert!(!out.contains("40"));
        assert!(!out.contains("text\n"));
    }

    #[test]
    fn edit_tool_response() {
        let raw = r#"{"filePath":"/home/dev/project/src/store/atomic.rs","oldString":"file.sync_all()?;","newString":"file.sync_all()?;\n    dir.sync_all()?;","originalFile":"// the whole original file, thousands of chars...\nfn write_atomic() {}","structuredPatch":[{"oldStart":40,"oldLines":1,"newStart":40,"newLines":2,"lines":["     file.sync_all()?;","+    dir.sync_all()?;"]}],"userModified":false,"replaceAll":false}"#;
        let out = clean(raw);
        assert_eq!(
            out,
            "/home/dev/project/src/store/atomic.rs\nfile.sync_all()?;\nfile.sync_all()?;\n    dir.sync_all()?;"
        );
    }

    #[test]
    fn grep_and_glob_responses() {
        let raw = r#"{"mode":"files_with_matches","filenames":["src/store/atomic.rs","src/store/mod.rs","tests/store.rs"],"numFiles":3}"#;
        assert_eq!(
            clean(raw),
            "src/store/atomic.rs\nsrc/store/mod.rs\ntests/store.rs"
        );
        let glob = r#"{"filenames":["/home/dev/project/src/lib.rs"],"durationMs":12,"numFiles":1,"truncated":false}"#;
        assert_eq!(clean(glob), "/home/dev/project/src/lib.rs");
    }

    #[test]
    fn task_response_with_content_blocks() {
        let raw = r#"{"content":[{"type":"text","text":"The store writes through a temp file and renames it."}],"totalDurationMs":5321,"totalTokens":1200,"totalToolUseCount":4,"usage":{"input_tokens":10,"service_tier":"standard"},"agentId":"a1b2c3"}"#;
        assert_eq!(
            clean(raw),
            "The store writes through a temp file and renames it."
        );
    }

    #[test]
    fn nested_json_string_is_recursed() {
        let raw = r#"{"stdout":"{\"message\":\"deployed to staging\",\"ok\":true,\"id\":\"c0ffee\"}","stderr":""}"#;
        assert_eq!(clean(raw), "deployed to staging");
    }

    #[test]
    fn identifiers_and_blobs_are_dropped() {
        let blob = "iVBORw0KGgo".repeat(30);
        let raw = format!(
            r#"{{"sha":"9fceb02d0ae598e95dc970b74767f19372d61af8","ref":"550e8400-e29b-41d4-a716-446655440000","img":"{blob}","note":"kept text","tool":"toolu_01ABCdefGHIjkl"}}"#
        );
        assert_eq!(clean(&raw), "kept text");
    }

    #[test]
    fn duplicates_are_kept_once() {
        let raw = r#"{"oldTodos":[{"content":"Write tests","status":"pending"}],"newTodos":[{"content":"Write tests","status":"completed","activeForm":"Writing tests"}]}"#;
        assert_eq!(clean(raw), "Write tests");
    }

    #[test]
    fn plain_text_passes_through() {
        assert_eq!(clean("hello   world \n\n\n\nbye  "), "hello world\n\nbye");
        assert_eq!(clean("[not json"), "[not json");
    }

    #[test]
    fn ansi_and_progress_bars() {
        let raw = "\x1b[32m   Compiling\x1b[0m serde v1.0\r\nDownloading  10%\rDownloading  55%\rDownloading 100%\n\x1b]0;title\x07done\x07!";
        assert_eq!(
            normalize_text(raw),
            "   Compiling serde v1.0\nDownloading 100%\ndone!"
        );
    }

    #[test]
    fn read_gutter_removed() {
        let raw = "     1→use std::fs;\n     2→\n    10→fn main() {}";
        assert_eq!(normalize_text(raw), "use std::fs;\n\nfn main() {}");
    }

    #[test]
    fn truncation_keeps_head_and_tail_within_budget() {
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!(
                "Line {i}: the writer flushes the buffer before rename.\n"
            ));
        }
        text.push_str("test result: FAILED. 41 passed; 1 failed");
        let out = truncate_smart(&text, 5000);
        assert!(out.chars().count() <= 5000);
        assert!(out.starts_with("Line 0:"));
        assert!(out.ends_with("test result: FAILED. 41 passed; 1 failed"));
        assert!(
            out.contains(" chars truncated ...]\nLine "),
            "tail starts on a line"
        );
        // head ends on a full line
        let marker_at = out.find("\n[... ").unwrap_or(0);
        assert!(out[..marker_at].ends_with("rename."));
        // the count is exact
        let shown = out.chars().count();
        let marker_line = out
            .lines()
            .find(|l| l.starts_with("[... "))
            .unwrap_or_default();
        let n: usize = marker_line
            .trim_start_matches("[... ")
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        assert_eq!(
            n + shown - marker_line.chars().count() - 2,
            text.chars().count()
        );
    }

    #[test]
    fn truncation_respects_char_boundaries_and_limits() {
        let text = "é😀ñ漢字 ".repeat(3000);
        for max in [0, 1, 5, 79, 80, 81, 100, 500, 4999, 5000] {
            let out = truncate_smart(&text, max);
            assert!(
                out.chars().count() <= max,
                "max {max}: {}",
                out.chars().count()
            );
        }
        let no_space = "é".repeat(10_000);
        let out = truncate_smart(&no_space, 5000);
        assert!(out.chars().count() <= 5000);
        assert!(out.contains("chars truncated"));
    }

    #[test]
    fn truncation_with_multibyte_whitespace() {
        // U+3000 (ideographic space) and NBSP are multi-byte whitespace.
        let text = "字\u{3000}".repeat(4000) + &"é\u{a0}".repeat(4000);
        let out = truncate_smart(&text, 5000);
        assert!(out.chars().count() <= 5000);
    }

    #[test]
    fn short_text_untouched() {
        assert_eq!(truncate_smart("short", 5000), "short");
    }
}
