//! Step 4: the best units packed into the token budget, grouped by thread, each quoted whole (or
//! around the query's words when it must be cut) under the label that says where it comes from.

use super::gate::gate;
use super::index;
use super::rank::Ranking;
use super::span;
use super::{Candidate, Context, MessageRef, Options, Query, ThreadHit, Why, CHARS_PER_TOKEN};
use crate::memory::engine::Memory;
use crate::memory::types::{Message, Thread};
use ai_smartness_vectors::tfidf::terms;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Heading of the messages that are alone from their thread in a context: a thread's own
/// heading and day line for one message would cost more than they tell.
pub(super) const MORE_HEADER: &str = "# More\n";
/// A message quoted from a long content is cut to this many characters around its best match.
pub(super) const EXCERPT_CHARS: usize = 360;
/// How many messages of a context are quoted at length ([`EXCERPT_CHARS`]). The best few
/// usually hold what was asked; past them, a context is worth what different moments it
/// shows, so each further message is quoted in a shorter window around the query's words
/// ([`SHORT_EXCERPT_CHARS`]) and the same room shows more of them.
pub(super) const LONG_QUOTES: usize = 10;
/// The window of a message quoted past the first [`LONG_QUOTES`].
pub(super) const SHORT_EXCERPT_CHARS: usize = 180;
/// The least of a message quoted to fill what is left of the budget: a message that ranks
/// above the rest but is too long for the room left is quoted in part rather than passed over
/// for a lower-ranked one that fits, unless this little of it would fit.
pub(super) const FITTED_EXCERPT_CHARS: usize = 100;

/// Step 4: packs the best messages into the budget. Rendering, per thread: `# Title`, then the
/// messages in time order, each run of one day under a `YYYY-MM-DD:` line ("when" questions
/// need the day; repeating it on every line would spend a tenth of the budget).
pub fn pack(mem: &Memory, q: &Query, ranking: &Ranking, opts: &Options) -> Context {
    let query_terms: HashSet<String> = terms(&q.text).collect();
    let budget = opts.budget_tokens.saturating_mul(CHARS_PER_TOKEN);
    // thread id → chosen (position, line), in the order threads were first chosen.
    let mut chosen: Vec<(String, Vec<Line>)> = Vec::new();
    let mut used = 0usize;
    // The same text twice (stored before repeats were counted) is shown once.
    let mut texts_shown: HashSet<u64> = HashSet::new();
    // Messages alone from their thread so far, and how many of them each day has.
    let mut alone = 0usize;
    // Messages chosen so far: past [`LONG_QUOTES`], quotes are short.
    let mut lines_chosen = 0usize;
    let mut more_days: HashMap<chrono::NaiveDate, usize> = HashMap::new();
    // A question about a stretch of the work is answered by many moments, each said briefly.
    let long_quotes = if span::asks_for_a_span(&q.text) {
        0
    } else {
        LONG_QUOTES
    };
    let gate = gate(&ranking.stats);
    // Scores by doc, for "the neighbour of a message that clears the bar".
    let clears: HashSet<u32> = ranking
        .messages
        .iter()
        .filter(|m| m.why.content() >= gate.message_bar)
        .map(|m| m.doc)
        .collect();
    let timeline = mem.index.timeline();
    for m in &ranking.messages {
        if gate.abstained {
            break;
        }
        if f64::from(m.score()) < opts.min_relevance {
            break;
        }
        if m.why.content() < gate.message_bar
            && !timeline
                .neighbours(m.doc)
                .into_iter()
                .flatten()
                .any(|d| clears.contains(&d))
        {
            continue;
        }
        let Some(t) = ranking
            .thread_ids
            .get(m.thread as usize)
            .and_then(|id| mem.graph.thread(id))
        else {
            continue;
        };
        // A person asked for this thread never to be injected.
        if t.never_recall {
            continue;
        }
        let position = m.position as usize;
        let part = m.part as usize;
        let Some(msg) = t.messages.get(position) else {
            continue;
        };
        let unit = msg.unit_text(part);
        let slot = chosen.iter().position(|(id, _)| *id == t.id);
        if slot.is_none() && chosen.len() >= opts.max_threads {
            continue;
        }
        // What the rendered context grows by, exactly: a thread's first message goes under the
        // shared "More" heading (with its day line unless that day is shown there); its second
        // moves both under the thread's own heading, with a line for each day.
        let day_of = |p: usize| t.messages.get(p).map(|o| o.timestamp.date_naive());
        let today = msg.timestamp.date_naive();
        let fixed: isize = match slot.map(|i| &chosen[i].1) {
            None => {
                let heading = if alone == 0 { MORE_HEADER.len() } else { 0 };
                let shown = more_days.get(&today).is_some_and(|&n| n > 0);
                (heading + if shown { 0 } else { DAY_LINE }) as isize
            }
            Some(lines) if lines.len() == 1 => {
                let first_day = day_of(lines[0].0);
                // The first message leaves the shared heading: its day line if it was the only
                // one of that day there, the heading if it was the only one there.
                let mut freed = 0;
                if first_day
                    .and_then(|d| more_days.get(&d))
                    .is_some_and(|&n| n == 1)
                {
                    freed += DAY_LINE;
                }
                if alone == 1 {
                    freed += MORE_HEADER.len();
                }
                let days = if first_day == Some(today) { 1 } else { 2 };
                (header(t).len() + days * DAY_LINE) as isize - freed as isize
            }
            Some(lines) => {
                let new_day = !lines.iter().any(|(p, _, _, _)| day_of(*p) == Some(today));
                if new_day {
                    DAY_LINE as isize
                } else {
                    0
                }
            }
        };
        // Never below zero: the budget is never exceeded.
        let fixed = fixed.max(0) as usize;
        // Most of the ranked messages come after the budget is nearly spent: the line's least
        // possible size rules them out without making the excerpt.
        let least = excerpt_chars_at_least(unit, FITTED_EXCERPT_CHARS);
        if used + fixed + MESSAGE_LINE_EXTRA + least > budget {
            continue;
        }
        let window = if lines_chosen < long_quotes {
            EXCERPT_CHARS
        } else {
            SHORT_EXCERPT_CHARS
        };
        let mut line = unit_line(msg, part, &query_terms, window);
        if used + fixed + line.len() > budget {
            match unit_line_within(msg, part, &query_terms, budget - used - fixed) {
                Some(fitted) => line = fitted,
                None => continue,
            }
        }
        let cost = line.len() + fixed;
        // The budget goes to distinct evidence: the same text twice is shown once.
        if !texts_shown.insert(index::content_key(unit)) {
            continue;
        }
        used += cost;
        lines_chosen += 1;
        match slot {
            Some(i) => {
                if chosen[i].1.len() == 1 {
                    alone -= 1;
                    let first_day = day_of(chosen[i].1[0].0);
                    if let Some(n) = first_day.and_then(|d| more_days.get_mut(&d)) {
                        *n -= 1;
                    }
                }
                chosen[i].1.push((position, part, line, m.why));
            }
            None => {
                alone += 1;
                *more_days.entry(today).or_default() += 1;
                chosen.push((t.id.clone(), vec![(position, part, line, m.why)]));
            }
        }
    }
    let candidate = ranking.messages.first().and_then(|m| {
        let t = mem
            .graph
            .thread(ranking.thread_ids.get(m.thread as usize)?)?;
        let msg = t.messages.get(m.position as usize)?;
        Some(Candidate {
            thread_id: t.id.clone(),
            title: t.title.clone(),
            message_id: msg.id.clone(),
            snippet: one_line(msg.unit_text(m.part as usize), 160),
            why: m.why.rounded(),
        })
    });
    let mut ctx = Context {
        bridges: ranking.bridges.clone(),
        stats: ranking.stats,
        gate,
        candidate,
        ..Context::default()
    };
    // Threads with several messages under their own heading, in the order they were chosen;
    // then the messages alone from their thread, under one heading, in time order.
    let mut singles: Vec<(&Thread, &Message, usize, String, Why)> = Vec::new();
    for (id, mut lines) in chosen {
        let Some(t) = mem.graph.thread(&id) else {
            continue;
        };
        let score = ranking.threads.get(&id).copied().unwrap_or(0.0);
        ctx.threads.push(ThreadHit {
            id: id.clone(),
            title: t.title.clone(),
            score: (f64::from(score) * 1000.0).round() / 1000.0,
        });
        if lines.len() == 1 {
            let (p, part, line, why) = lines.remove(0);
            if let Some(msg) = t.messages.get(p) {
                singles.push((t, msg, part, line, why));
            }
            continue;
        }
        lines.sort_by_key(|(p, part, _, _)| (*p, *part));
        ctx.text.push_str(&header(t));
        let mut current_day = String::new();
        let mut last: Option<(usize, usize)> = None;
        for (p, part, line, why) in lines {
            if let Some(msg) = t.messages.get(p) {
                // The next unit of the message just quoted continues its quote.
                let follows = last == Some((p, part.wrapping_sub(1)));
                push_line(
                    &mut ctx,
                    t,
                    msg,
                    part,
                    &line,
                    why,
                    follows,
                    &mut current_day,
                );
                last = Some((p, part));
            }
        }
    }
    singles.sort_by_key(|(_, msg, part, _, _)| (msg.timestamp, *part));
    if !singles.is_empty() {
        ctx.text.push_str(MORE_HEADER);
    }
    let mut current_day = String::new();
    for (t, msg, part, line, why) in singles {
        push_line(&mut ctx, t, msg, part, &line, why, false, &mut current_day);
    }
    ctx.tokens = ctx.text.len().div_ceil(CHARS_PER_TOKEN);
    ctx
}

/// Appends a unit's line (after its day line when the day changes) and its reference. A unit
/// that `follows` the one just quoted (the next part of the same message) continues its quote,
/// without a bullet and label of its own.
#[allow(clippy::too_many_arguments)]
pub(super) fn push_line(
    ctx: &mut Context,
    t: &Thread,
    msg: &Message,
    part: usize,
    line: &str,
    why: Why,
    follows: bool,
    current_day: &mut String,
) {
    let d = day(msg.timestamp);
    if d != *current_day {
        let _ = writeln!(ctx.text, "{d}:");
        *current_day = d;
    }
    if follows {
        ctx.text.push_str(msg.unit_text(part).trim_end());
        ctx.text.push('\n');
    } else {
        ctx.text.push_str(line);
    }
    ctx.messages.push(MessageRef {
        thread_id: t.id.clone(),
        message_id: msg.id.clone(),
        part: part as u32,
        metadata: msg.metadata.clone(),
        why: why.rounded(),
    });
}

/// One unit chosen for the context: its message's position in its thread, which unit, its
/// rendered line, and why.
pub(super) type Line = (usize, usize, String, Why);

/// `# Title`: one line per thread.
pub(super) fn header(t: &Thread) -> String {
    format!("# {}\n", one_line(&t.title, 60))
}

/// The day line's size: `YYYY-MM-DD:` and a newline.
pub(super) const DAY_LINE: usize = 12;

pub(super) fn day(d: DateTime<Utc>) -> String {
    d.format("%Y-%m-%d").to_string()
}

/// `- (where) text`: one entry per unit. A unit of a long message (a function of a file, a
/// block of a log) is quoted whole, its lines as they were, under the label that says where it
/// comes from (`(src/pool.rs:120-168)`); a short message is quoted whole, on one line; a long
/// message stored before units existed is quoted in a window of `window` characters around the
/// query's words. A tool's output says where it came from first, so the model reads it as a
/// record of earlier work.
pub(super) fn unit_line(
    m: &Message,
    part: usize,
    query_terms: &HashSet<String>,
    window: usize,
) -> String {
    let text = m.unit_text(part).trim();
    let body = if !m.units.is_empty() {
        text.to_string()
    } else if window < EXCERPT_CHARS && m.is_said() {
        excerpt_within(text, query_terms, window)
    } else if text.len() <= ai_smartness_capture::units::UNIT_MAX {
        one_line(text, usize::MAX)
    } else {
        excerpt_within(text, query_terms, window)
    };
    format!("- {}{body}\n", unit_provenance(m, part))
}

/// [`unit_line`] cut to at most `room` bytes: whole lines around the query's first word, or a
/// window of characters when even one line is too long; `None` when less than
/// [`FITTED_EXCERPT_CHARS`] of it would fit.
pub(super) fn unit_line_within(
    m: &Message,
    part: usize,
    query_terms: &HashSet<String>,
    room: usize,
) -> Option<String> {
    let from = unit_provenance(m, part);
    let text = m.unit_text(part).trim();
    let avail = room.saturating_sub(from.len() + MESSAGE_LINE_EXTRA);
    if !m.units.is_empty() && avail >= FITTED_EXCERPT_CHARS {
        if let Some(lines) = lines_around(text, query_terms, avail) {
            let line = format!("- {from}{lines}\n");
            if line.len() <= room {
                return Some(line);
            }
        }
    }
    let mut chars = avail.saturating_sub(2 * '…'.len_utf8());
    while chars >= FITTED_EXCERPT_CHARS {
        let line = format!("- {from}{}\n", excerpt_within(text, query_terms, chars));
        if line.len() <= room {
            return Some(line);
        }
        // Wider characters than one byte each: shrink the window in the ratio it is over
        // (bytes per character vary; subtracting the bytes over from a count of characters
        // would overshoot, or go below zero, when most take several).
        chars = (chars * room / line.len()).min(chars - 1);
    }
    None
}

/// Whole lines of `text` around the first line holding one of the query's words, within
/// `max_bytes` (ellipsis lines included); None when even that line is too long.
pub(super) fn lines_around(
    text: &str,
    query_terms: &HashSet<String>,
    max_bytes: usize,
) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let hit = lines
        .iter()
        .position(|l| {
            let lower = l.to_lowercase();
            query_terms.iter().any(|t| lower.contains(t.as_str()))
        })
        .unwrap_or(0);
    const MORE: usize = "…\n".len();
    let cost = |lo: usize, hi: usize| -> usize {
        let body: usize = lines[lo..hi].iter().map(|l| l.len() + 1).sum();
        body + if lo > 0 { MORE } else { 0 } + if hi < lines.len() { MORE } else { 0 }
    };
    if cost(hit, hit + 1) > max_bytes {
        return None;
    }
    let (mut lo, mut hi) = (hit, hit + 1);
    loop {
        let grown_down = hi < lines.len() && cost(lo, hi + 1) <= max_bytes;
        if grown_down {
            hi += 1;
        }
        let grown_up = lo > 0 && cost(lo - 1, hi) <= max_bytes;
        if grown_up {
            lo -= 1;
        }
        if !grown_down && !grown_up {
            break;
        }
    }
    let mut out = String::new();
    if lo > 0 {
        out.push_str("…\n");
    }
    out.push_str(&lines[lo..hi].join("\n"));
    if hi < lines.len() {
        out.push_str("\n…");
    }
    Some(out)
}

/// Where a unit comes from: its label when its message was cut into units, else where its
/// message came from ([`provenance`]).
pub(super) fn unit_provenance(m: &Message, part: usize) -> String {
    match m.unit_label(part) {
        Some(label) => format!("({}) ", one_line(label, 100)),
        None => provenance(m),
    }
}

/// `(Tool path) ` for a tool's output, nothing for what a person or the assistant said.
pub(super) fn provenance(m: &Message) -> String {
    let tool = m.metadata.get("tool").and_then(Value::as_str).unwrap_or("");
    if tool.is_empty() || matches!(tool, "UserPrompt" | "Response") {
        return String::new();
    }
    match m.metadata.get("file_path").and_then(Value::as_str) {
        Some(path) => format!("({} {}) ", one_line(tool, 20), short_path(path)),
        None => format!("({}) ", one_line(tool, 20)),
    }
}

/// A path's last two components: enough to say which file, short on tokens.
pub(super) fn short_path(path: &str) -> String {
    let parts: Vec<&str> = path.rsplit('/').take(2).collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// What [`unit_line`] adds around the excerpt: `- ` and the newline.
pub(super) const MESSAGE_LINE_EXTRA: usize = 3;

/// A lower bound of the size in bytes of [`excerpt`]`(content, _)`, whatever the query: its
/// chars (at least a byte each) are the whitespace-collapsed content's, or [`EXCERPT_CHARS`] of
/// them less the end of a word it may give up. Counts no further than that, nor than `cap`:
/// most ranked messages are only checked against the room left, and a short count says enough.
pub(super) fn excerpt_chars_at_least(content: &str, cap: usize) -> usize {
    let cap = cap.min(EXCERPT_CHARS);
    // A cut excerpt may give up the end of a word: it holds at least this many.
    let cut = EXCERPT_CHARS - MAX_WORD_CHARS;
    if cap <= cut {
        return folded_chars_upto(content, cap);
    }
    match folded_chars_upto(content, EXCERPT_CHARS + 1) {
        n if n > EXCERPT_CHARS => cut,
        n => n.min(cap),
    }
}

/// The characters of `content` with its whitespace folded to single spaces, trimmed, counted
/// no further than `limit`.
fn folded_chars_upto(content: &str, limit: usize) -> usize {
    let mut chars = 0;
    let mut in_word = false;
    for c in content.chars() {
        if c.is_whitespace() {
            in_word = false;
            continue;
        }
        if !in_word && chars > 0 {
            chars += 1; // the space joining two words
        }
        in_word = true;
        chars += 1;
        if chars >= limit {
            return limit;
        }
    }
    chars
}

/// `s` on one line (whitespace folded), cut to `max` characters with an ellipsis.
pub fn one_line(s: &str, max: usize) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        joined
    } else {
        format!("{}…", joined.chars().take(max).collect::<String>())
    }
}

/// The longest word a window moves to keep whole.
pub(super) const MAX_WORD_CHARS: usize = 30;

/// The message on one line, cut to a window around its first query term when long.
pub(super) fn excerpt(content: &str, query_terms: &HashSet<String>) -> String {
    excerpt_within(content, query_terms, EXCERPT_CHARS)
}

/// [`excerpt`] in a window of at most `max_chars` characters (ellipses not counted).
pub(super) fn excerpt_within(
    content: &str,
    query_terms: &HashSet<String>,
    max_chars: usize,
) -> String {
    let flat = content.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = flat.chars().collect();
    if chars.len() <= max_chars {
        return flat;
    }
    let lower: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let lower_s: String = lower.iter().collect();
    // Char index of the earliest query term (lowercasing char by char keeps indexes aligned).
    let hit = query_terms
        .iter()
        .filter_map(|t| {
            lower_s
                .find(t.as_str())
                .map(|b| lower_s[..b].chars().count())
        })
        .min()
        .unwrap_or(0);
    let start = hit.saturating_sub(max_chars / 4);
    let end = (start + max_chars).min(chars.len());
    let mut start = end.saturating_sub(max_chars);
    let mut end = end;
    // Whole words at both ends: "…te our policy" says less than "…violate our policy". The
    // window slides back to the start of a word it would cut, and gives up the end of the
    // word it then cuts there; a token longer than [`MAX_WORD_CHARS`] (a URL, a hash) is cut.
    let in_word = |i: usize| !chars[i - 1].is_whitespace() && !chars[i].is_whitespace();
    if start > 0 && in_word(start) {
        let word_start = (start.saturating_sub(MAX_WORD_CHARS)..start)
            .rev()
            .find(|&i| i == 0 || chars[i - 1].is_whitespace());
        if let Some(ws) = word_start {
            end -= start - ws;
            start = ws;
        }
    }
    if end < chars.len() && end > start && in_word(end) {
        if let Some(we) = (end.saturating_sub(MAX_WORD_CHARS).max(start + 1)..end)
            .rev()
            .find(|&i| chars[i].is_whitespace())
        {
            end = we;
        }
    }
    while end > start && chars[end - 1].is_whitespace() {
        end -= 1;
    }
    while start < end && chars[start].is_whitespace() {
        start += 1;
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}
