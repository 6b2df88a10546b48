//! What the data and action commands share: lookups and the way they print.

use super::*;

/// The result of an action the caller ran itself (START_RUN), in the usual shape.
pub fn outcome(cmd: &ActionCommand, answer: Result<String, ExecError>) -> Executed {
    finish(cmd.type_name(), answer, true)
}

pub(super) fn finish(
    name: &str,
    answer: Result<String, ExecError>,
    detail_on_success: bool,
) -> Executed {
    let (status, detail, text) = match answer {
        Ok(text) => {
            let detail = detail_on_success.then(|| one_line(&text, 300));
            (CommandStatus::Success, detail, text)
        }
        Err(e) => {
            let text = e.to_string();
            (CommandStatus::Failed, Some(one_line(&text, 300)), text)
        }
    };
    Executed {
        result: CommandResult {
            command_type: name.to_string(),
            status,
            detail,
        },
        text,
    }
}

pub(super) fn thread<'m>(
    mem: &'m Memory,
    command: &'static str,
    id: &str,
) -> Result<&'m Thread, ExecError> {
    mem.graph.thread(id).ok_or_else(|| ExecError::NoThread {
        command,
        id: id.to_string(),
    })
}

pub(super) fn bridge<'m>(
    mem: &'m Memory,
    command: &'static str,
    id: &str,
) -> Result<&'m ThinkBridge, ExecError> {
    mem.graph.bridge(id).ok_or_else(|| ExecError::NoBridge {
        command,
        id: id.to_string(),
    })
}

/// A copy of a finite, non-zero vector scaled to unit length; anything else is no vector.
pub(super) fn unit_vector(v: &[f32]) -> Vec<f32> {
    if v.is_empty() || !v.iter().all(|x| x.is_finite()) || v.iter().all(|x| *x == 0.0) {
        return Vec::new();
    }
    let mut v = v.to_vec();
    normalize(&mut v);
    v
}

/// The topics of a query, as `ai search` finds them: the extractor's subjects and concepts,
/// and the query's own words.
pub(super) fn query_topics(query: &str) -> Vec<String> {
    let e = LocalExtractor
        .extract(query, SourceType::Prompt)
        .unwrap_or_default();
    let words: Vec<String> = query.split_whitespace().map(str::to_string).collect();
    normalize_topics(e.subjects.iter().chain(&e.key_concepts).chain(&words))
}

/// `thread_… "Title"`: how every answer names a thread.
pub(super) fn tref(t: &Thread) -> String {
    format!("{} {:?}", t.id, one_line(&t.title, 120))
}

/// [`tref`] by id, for ends that may be gone.
pub(super) fn tref_id(mem: &Memory, id: &str) -> String {
    match mem.graph.thread(id) {
        Some(t) => tref(t),
        None => format!("{id} (missing)"),
    }
}

pub(super) fn bridge_line(mem: &Memory, b: &ThinkBridge) -> String {
    let mut line = format!(
        "{}: {} -{}-> {}, confidence {:.2}, {}",
        b.id,
        tref_id(mem, &b.source_id),
        b.relation_type.as_str(),
        tref_id(mem, &b.target_id),
        b.confidence,
        b.status.as_str()
    );
    if !b.reason.trim().is_empty() {
        let _ = write!(line, ": {}", one_line(&b.reason, 200));
    }
    line
}

/// Active before weak before invalid, then the most confident, then by id (creation order).
pub(super) fn sort_bridges(bridges: &mut [&ThinkBridge]) {
    let rank = |s: BridgeStatus| match s {
        BridgeStatus::Active => 0,
        BridgeStatus::Weak => 1,
        BridgeStatus::Invalid => 2,
    };
    bridges.sort_by(|a, b| {
        rank(a.status)
            .cmp(&rank(b.status))
            .then(b.confidence.total_cmp(&a.confidence))
            .then(a.id.cmp(&b.id))
    });
}

pub(super) fn topics(t: &Thread, max: usize) -> String {
    if t.topics.is_empty() {
        return "none".into();
    }
    t.topics
        .iter()
        .take(max)
        .map(|x| one_line(x, 60))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A thread in one line: its summary, else its last message.
pub(super) fn gist(t: &Thread) -> String {
    if !t.summary.trim().is_empty() {
        return one_line(&t.summary, GIST_CHARS);
    }
    t.messages
        .last()
        .map(|m| format!("last message: {}", one_line(&m.content, GIST_CHARS)))
        .unwrap_or_default()
}

/// A note closing a listing cut at [`MAX_LIST_LINES`].
pub(super) fn left_out(out: &mut String, total: usize, which: &str) {
    if total > MAX_LIST_LINES {
        let _ = writeln!(out, "({} more left out, {which})", total - MAX_LIST_LINES);
    }
}

/// When a synthesis was written: its `created_at`, else its file name.
pub(super) fn synthesis_time(path: &Path, v: &Value) -> String {
    v.get("created_at")
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| ts(t.with_timezone(&Utc)))
        .unwrap_or_else(|| {
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
}

pub(super) fn ts(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%MZ").to_string()
}

/// `1 thread`, `2 threads`.
pub(super) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Whitespace flattened to single spaces, cut at `max` characters with an ellipsis.
pub(super) fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('…');
    cut
}
