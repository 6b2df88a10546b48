//! What the model reads of each tool's answer: compact text, each answer cut to a token bound
//! (characters / 4) with a line saying how to ask for more.

use ai_smartness_core::retrieve::{one_line, CHARS_PER_TOKEN};
use ai_smartness_proto::protocol::ThreadAction;
use ai_smartness_replies::{
    ContextReply, MessageHit, RecallReply, Remembered, ThreadDetail, TimelineReply,
};
use std::fmt::Write;

/// Tokens an answer holds at most.
pub const MAX_ANSWER_TOKENS: usize = 4_000;
/// A message shown whole by get_thread is cut to this many characters.
const MESSAGE_CHARS: usize = 1_500;

/// `text` cut to [`MAX_ANSWER_TOKENS`] on a line boundary, saying so and what to do.
fn bounded(text: String, more: &str) -> String {
    let max = MAX_ANSWER_TOKENS * CHARS_PER_TOKEN;
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind('\n').map_or(cut, |n| n + 1);
    format!(
        "{}[cut at about {MAX_ANSWER_TOKENS} tokens: {more}]\n",
        &text[..cut]
    )
}

/// `2026-11-26 10:02` from RFC 3339.
fn when(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|_| rfc3339.to_string())
}

/// `Bash`, `Read src/pool.rs`, `user prompt`: where a message came from.
fn source(m: &MessageHit) -> String {
    match (m.tool.as_deref(), m.file.as_deref()) {
        (Some("UserPrompt"), _) => "user prompt".into(),
        (Some("Response"), _) => "assistant answer".into(),
        (Some("Note"), _) => "note".into(),
        (Some(tool), Some(file)) => format!("{tool} {file}"),
        (Some(tool), None) => tool.to_string(),
        (None, _) => m.author.clone(),
    }
}

pub fn recall(r: &RecallReply) -> String {
    let team_found = r.team.as_ref().is_some_and(|t| !t.hits.is_empty());
    if r.hits.is_empty() && !team_found {
        return format!(
            "Nothing in memory matches \"{}\".\n",
            one_line(&r.query, 80)
        );
    }
    let mut out = format!(
        "{} result(s) for \"{}\"{}:\n",
        r.hits.len(),
        one_line(&r.query, 80),
        if r.relevant {
            ""
        } else {
            " (none is a strong match: weigh them with care)"
        }
    );
    for (i, h) in r.hits.iter().enumerate() {
        let m = &h.message;
        let _ = writeln!(
            out,
            "\n{}. {} · {} · score {:.2}\n   thread {} \"{}\"{} · message {}\n   {}",
            i + 1,
            when(&m.at),
            source(m),
            h.why.score,
            m.thread_id,
            one_line(&m.thread_title, 60),
            if m.thread_status == "active" {
                String::new()
            } else {
                format!(" ({})", m.thread_status)
            },
            m.message_id,
            m.snippet
        );
    }
    if let Some(team) = &r.team {
        if let Some(e) = &team.error {
            let _ = writeln!(out, "\n(The team store did not answer: {e}.)");
        }
        for h in &team.hits {
            let _ = writeln!(
                out,
                "\nteam · {} · by {} on {} · closeness {:.2}\n   thread \"{}\" · {}",
                when(&h.at),
                h.author,
                h.machine,
                h.dense,
                one_line(&h.thread_title, 60),
                h.snippet
            );
        }
    }
    out.push_str("\nMore: get_thread with a thread id, timeline with around = a message id.\n");
    bounded(out, "ask for fewer results")
}

pub fn thread(t: &ThreadDetail) -> String {
    let h = &t.header;
    let mut out = format!(
        "# {}\n{} · {} · weight {:.2}",
        h.title, h.id, h.status, h.weight
    );
    if h.pinned {
        out.push_str(" · pinned");
    }
    if h.never_recall {
        out.push_str(" · never recalled");
    }
    let _ = writeln!(
        out,
        "\ncreated {} · last active {}",
        when(&h.created_at),
        when(&h.last_active)
    );
    if let Some(from) = &t.resolved_from {
        let _ = writeln!(out, "({from} was merged into this thread)");
    }
    if !h.summary.is_empty() {
        let _ = writeln!(out, "\nSummary: {}", one_line(&h.summary, 600));
    }
    if !t.topics.is_empty() {
        let _ = writeln!(out, "Topics: {}", t.topics.join(", "));
    }
    for (label, items) in [
        ("Decisions", &t.decisions),
        ("Open questions", &t.questions),
    ] {
        if !items.is_empty() {
            let _ = writeln!(out, "{label}:");
            for d in items.iter().take(10) {
                let _ = writeln!(out, "- {}", one_line(d, 200));
            }
        }
    }
    if !t.bridges.is_empty() {
        let _ = writeln!(out, "Linked threads:");
        for b in t.bridges.iter().take(10) {
            let (id, title) = if b.source_id == h.id {
                (&b.target_id, &b.target_title)
            } else {
                (&b.source_id, &b.source_title)
            };
            let _ = writeln!(
                out,
                "- {:?} {id} \"{}\" (weight {:.2})",
                b.relation_type,
                one_line(title, 60),
                b.weight
            );
        }
    }
    let (offset, total) = t
        .page
        .map_or((0, t.messages.len()), |p| (p.offset, p.total));
    let shown = t.messages.len();
    let _ = writeln!(
        out,
        "\nMessages {}–{} of {total} (oldest first):",
        if shown == 0 { offset } else { offset + 1 },
        offset + shown
    );
    for m in &t.messages {
        let tool = m
            .metadata
            .get("tool")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let file = m
            .metadata
            .get("file_path")
            .and_then(|v| v.as_str())
            .map(|f| format!(" {f}"))
            .unwrap_or_default();
        let mut content: String = m.content.chars().take(MESSAGE_CHARS).collect();
        if m.content.chars().count() > MESSAGE_CHARS {
            content.push_str(" […]");
        }
        let _ = writeln!(
            out,
            "\n[{}] {} · {}{tool}{file}\n{}",
            m.id,
            m.timestamp.format("%Y-%m-%d %H:%M"),
            m.source.as_str(),
            content.trim_end()
        );
    }
    if offset + shown < total {
        let _ = writeln!(out, "\nNext page: offset = {}.", offset + shown);
    }
    bounded(out, "ask for a smaller page (limit)")
}

pub fn timeline(t: &TimelineReply, heading: &str) -> String {
    if t.messages.is_empty() {
        return "Nothing recorded in that period.\n".into();
    }
    let mut out = format!("{heading} (oldest first):\n");
    let mut last_thread = "";
    for m in &t.messages {
        if m.thread_id != last_thread {
            let _ = writeln!(
                out,
                "\n## {} \"{}\"",
                m.thread_id,
                one_line(&m.thread_title, 60)
            );
            last_thread = &m.thread_id;
        }
        let mark = if t.around.as_deref() == Some(m.message_id.as_str()) {
            " ←"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "- {} · {} · {}{mark}\n  {}",
            when(&m.at),
            source(m),
            m.message_id,
            m.snippet
        );
    }
    if t.more > 0 {
        let _ = writeln!(
            out,
            "\n{} earlier message(s) in the period not shown (narrow the period).",
            t.more
        );
    }
    bounded(out, "ask for fewer messages (limit)")
}

pub fn why(c: &ContextReply) -> String {
    bounded(
        ai_smartness_replies::render::explain(c),
        "ask with a shorter prompt",
    )
}

pub fn remembered(r: &Remembered) -> String {
    format!(
        "Remembered as thread {} \"{}\" (message {}).\n",
        r.thread_id, r.title, r.message_id
    )
}

pub fn edited(id: &str, action: ThreadAction) -> String {
    let what = match action {
        ThreadAction::Suspend => "suspended (kept; no longer recalled by itself)",
        ThreadAction::Delete => "deleted",
        ThreadAction::Pin => "pinned",
        ThreadAction::Unpin => "unpinned",
        ThreadAction::NeverRecall => "marked never-recall (kept and searchable, never injected)",
        ThreadAction::AllowRecall => "recallable again",
        other => other.as_str(),
    };
    format!("Thread {id} {what}.\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_answer_is_cut_on_a_line_and_says_so() {
        let text: String = (0..5_000).map(|i| format!("line {i}\n")).collect();
        let cut = bounded(text, "ask for less");
        assert!(cut.len() <= MAX_ANSWER_TOKENS * CHARS_PER_TOKEN + 100);
        assert!(
            cut.ends_with("ask for less]\n"),
            "{}",
            &cut[cut.len() - 80..]
        );
        let before_note = cut.rsplit_once("[cut").unwrap().0;
        assert!(before_note.ends_with('\n'));
        assert_eq!(bounded("short\n".into(), "x"), "short\n");
    }
}
