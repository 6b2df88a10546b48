//! What a tool call becomes as text: the command and its output, the file and its content,
//! the edit. The `ai-capture` hook sends this for each `PostToolUse`, and `ai import` builds the
//! same text from a transcript's records, so a session imported later is remembered as it would
//! have been live.

use serde_json::{Map, Value};

/// What a tool call becomes.
#[derive(Debug, PartialEq)]
pub enum Built {
    Text(String),
    /// Nothing worth sending (an image), with the reason for the log.
    Skip(&'static str),
}

/// Readable text for one tool call. Tools whose response has an unexpected shape, MCP tools and
/// unknown tools are sent as one JSON document that the daemon's cleaner reduces to its text.
pub fn build_content(tool: &str, input: &Value, response: &Value) -> Built {
    let specific = match tool {
        "Bash" => {
            if response.get("isImage").and_then(Value::as_bool) == Some(true) {
                return Built::Skip("the output is an image");
            }
            bash(input, response)
        }
        "Read" => read(input, response),
        "Edit" | "MultiEdit" => edit(input, response),
        "Write" => write(input, response),
        "NotebookEdit" => notebook_edit(input),
        "Grep" => grep(input, response),
        "Glob" => glob(input, response),
        "WebFetch" => web_fetch(input, response),
        "WebSearch" => web_search(input, response),
        "Task" | "Agent" => task(input, response),
        _ => None,
    };
    Built::Text(specific.unwrap_or_else(|| generic(input, response)))
}

/// A string field, when present and not blank.
fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// Appends `part` on its own line(s).
fn push(out: &mut String, part: &str) {
    if part.trim().is_empty() {
        return;
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(part.trim_end());
}

fn compact_json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// `$ command`, then stdout, then stderr.
fn bash(input: &Value, response: &Value) -> Option<String> {
    let mut out = String::new();
    if let Some(cmd) = text(input, "command") {
        out.push_str("$ ");
        out.push_str(cmd.trim());
    }
    match response {
        Value::String(s) => push(&mut out, s),
        Value::Object(_)
            if response.get("stdout").is_some() || response.get("stderr").is_some() =>
        {
            push(&mut out, text(response, "stdout").unwrap_or_default());
            push(&mut out, text(response, "stderr").unwrap_or_default());
            if response.get("interrupted").and_then(Value::as_bool) == Some(true) {
                push(&mut out, "(interrupted)");
            }
        }
        _ => return None,
    }
    Some(out)
}

/// The file's path and, for text, its content; images, notebooks and PDFs are just named.
fn read(input: &Value, response: &Value) -> Option<String> {
    let file = response.get("file")?;
    let path = text(file, "filePath").or_else(|| text(input, "file_path"))?;
    let kind = text(response, "type").unwrap_or("text");
    let mut out = path.to_string();
    match (kind, text(file, "content")) {
        ("text", Some(content)) => push(&mut out, content),
        ("text", None) => out.push_str(" (empty)"),
        (other, _) => {
            out.push_str(" (");
            out.push_str(other);
            out.push(')');
        }
    }
    Some(out)
}

/// The path, then the diff hunks when Claude Code sent them, else the replaced strings.
fn edit(input: &Value, response: &Value) -> Option<String> {
    let path = text(input, "file_path").or_else(|| text(response, "filePath"))?;
    let mut out = path.to_string();
    let hunks = response
        .get("structuredPatch")
        .and_then(Value::as_array)
        .filter(|h| !h.is_empty());
    if let Some(hunks) = hunks {
        for hunk in hunks {
            let n = |k: &str| hunk.get(k).and_then(Value::as_u64).unwrap_or(0);
            push(
                &mut out,
                &format!(
                    "@@ -{},{} +{},{} @@",
                    n("oldStart"),
                    n("oldLines"),
                    n("newStart"),
                    n("newLines")
                ),
            );
            for line in hunk
                .get("lines")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                out.push('\n');
                out.push_str(line);
            }
        }
        return Some(out);
    }
    let edits = match input.get("edits").and_then(Value::as_array) {
        Some(list) => list.as_slice(),
        None => std::slice::from_ref(input),
    };
    for e in edits {
        if let Some(old) = text(e, "old_string") {
            push(&mut out, "old:");
            push(&mut out, old);
        }
        if let Some(new) = e.get("new_string").and_then(Value::as_str) {
            push(&mut out, "new:");
            push(&mut out, new);
        }
    }
    Some(out)
}

/// The path and what was written.
fn write(input: &Value, response: &Value) -> Option<String> {
    let path = text(input, "file_path").or_else(|| text(response, "filePath"))?;
    let content = text(input, "content").or_else(|| text(response, "content"))?;
    let mut out = path.to_string();
    push(&mut out, content);
    Some(out)
}

fn notebook_edit(input: &Value) -> Option<String> {
    let path = text(input, "notebook_path")?;
    let mut out = path.to_string();
    push(&mut out, text(input, "new_source").unwrap_or_default());
    Some(out)
}

/// The search, then what it found: matching lines, or files, and how many.
fn grep(input: &Value, response: &Value) -> Option<String> {
    let pattern = text(input, "pattern")?;
    let mut out = format!("grep {pattern}");
    if let Some(path) = text(input, "path") {
        out.push_str(" in ");
        out.push_str(path);
    }
    if let Some(glob) = text(input, "glob") {
        out.push_str(" (");
        out.push_str(glob);
        out.push(')');
    }
    let mut found = false;
    if let Some(content) = text(response, "content") {
        push(&mut out, content);
        found = true;
    } else if let Some(files) = response.get("filenames").and_then(Value::as_array) {
        for f in files.iter().filter_map(Value::as_str) {
            push(&mut out, f);
        }
        found = true;
    }
    if let Some(n) = response.get("numMatches").and_then(Value::as_u64) {
        push(&mut out, &format!("{n} matches"));
        found = true;
    }
    found.then_some(out)
}

fn glob(input: &Value, response: &Value) -> Option<String> {
    let pattern = text(input, "pattern")?;
    let files = response.get("filenames").and_then(Value::as_array)?;
    let mut out = format!("glob {pattern}");
    if let Some(path) = text(input, "path") {
        out.push_str(" in ");
        out.push_str(path);
    }
    for f in files.iter().filter_map(Value::as_str) {
        push(&mut out, f);
    }
    Some(out)
}

/// The URL, what was asked of the page, and the answer.
fn web_fetch(input: &Value, response: &Value) -> Option<String> {
    let url = text(input, "url").or_else(|| text(response, "url"))?;
    let result = match response {
        Value::String(s) => Some(s.as_str()),
        _ => text(response, "result").or_else(|| text(response, "content")),
    }?;
    let mut out = url.to_string();
    push(&mut out, text(input, "prompt").unwrap_or_default());
    push(&mut out, result);
    Some(out)
}

/// The query, then each result: link titles and URLs, and the text summaries.
fn web_search(input: &Value, response: &Value) -> Option<String> {
    let query = text(input, "query").or_else(|| text(response, "query"))?;
    let results = response.get("results").and_then(Value::as_array)?;
    let mut out = format!("web search: {query}");
    for r in results {
        match r {
            Value::String(s) => push(&mut out, s),
            Value::Object(_) => match r.get("content").and_then(Value::as_array) {
                Some(links) => {
                    for link in links {
                        let title = text(link, "title").unwrap_or_default();
                        let url = text(link, "url").unwrap_or_default();
                        let snippet = text(link, "snippet")
                            .or_else(|| text(link, "text"))
                            .unwrap_or_default();
                        let line = [title, url, snippet]
                            .into_iter()
                            .filter(|s| !s.is_empty())
                            .collect::<Vec<_>>()
                            .join(" — ");
                        push(&mut out, &line);
                    }
                }
                None => push(&mut out, &compact_json(r)),
            },
            other => push(&mut out, &compact_json(other)),
        }
    }
    Some(out)
}

/// What the sub-agent was asked (description, first line of the prompt), then its report.
fn task(input: &Value, response: &Value) -> Option<String> {
    let mut report = String::new();
    match response {
        Value::String(s) => push(&mut report, s),
        _ => match response.get("content") {
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match b {
                        Value::String(s) => push(&mut report, s),
                        _ => push(&mut report, text(b, "text").unwrap_or_default()),
                    }
                }
            }
            Some(Value::String(s)) => push(&mut report, s),
            _ => push(&mut report, text(response, "result").unwrap_or_default()),
        },
    }
    if report.is_empty() {
        return None;
    }
    let mut out = String::new();
    if let Some(d) = text(input, "description") {
        out.push_str("Task: ");
        out.push_str(d.trim());
    }
    if let Some(first) =
        text(input, "prompt").and_then(|p| p.lines().find(|l| !l.trim().is_empty()))
    {
        push(&mut out, first);
    }
    push(&mut out, &report);
    Some(out)
}

/// One JSON document holding the input and the response: the daemon's cleaner keeps its
/// strings (recursively, JSON-in-strings included) and drops ids, flags and counters. Two
/// documents on two lines would not parse, and the raw JSON would be stored as text.
fn generic(input: &Value, response: &Value) -> String {
    let mut doc = Map::new();
    if !input.is_null() {
        doc.insert("input".into(), input.clone());
    }
    doc.insert("response".into(), response.clone());
    compact_json(&Value::Object(doc))
}

/// The file a tool call is about, for the stored message's metadata.
pub fn file_path<'a>(input: &'a Value, response: &'a Value) -> Option<&'a str> {
    ["file_path", "notebook_path"]
        .iter()
        .find_map(|k| text(input, k))
        .or_else(|| response.get("file").and_then(|f| text(f, "filePath")))
        .or_else(|| text(response, "filePath"))
}
