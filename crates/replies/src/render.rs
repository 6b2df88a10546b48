//! The replies as text for people: short tables with weight indicators (the CLI, the CLI run
//! from a prompt, the MCP `why` tool). Programs use `--json` instead.

use crate::{
    BridgeList, BridgeView, ConsolidationReport, ContextReply, ModeReply, RulesReply,
    SearchResults, ThreadDetail, ThreadList,
};
use crate::{HealthReply, LlmView, StatusReply};
use ai_smartness_core::memory::decay::weight_bar;
use ai_smartness_core::memory::engine::PruneReport;
use ai_smartness_core::memory::types::TitleSource;
use ai_smartness_core::retrieve::Why;
use serde_json::Value;
use std::fmt::Write;

/// A JSON value as plain text (strings without quotes).
pub fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn cut(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        format!(
            "{}…",
            one_line
                .chars()
                .take(max.saturating_sub(1))
                .collect::<String>()
        )
    }
}

/// 🟢 / 🟡 / 🔴 would not survive every terminal; letters do.
fn weight_mark(w: f64) -> &'static str {
    if w >= 0.5 {
        "+"
    } else if w >= 0.2 {
        "~"
    } else {
        "-"
    }
}

fn weight_cell(w: f64, show_weight: bool) -> String {
    if show_weight {
        format!("{} {:.2}", weight_bar(w), w)
    } else {
        format!("{} {:.2}", weight_mark(w), w)
    }
}

pub fn threads(v: &ThreadList, show_weight: bool) -> String {
    if v.threads.is_empty() {
        return match v.suspended {
            0 => "no threads\n".into(),
            n => format!(
                "no threads listed; {n} suspended (faded with time, still searchable): \
                 `ai threads --status live` lists them\n"
            ),
        };
    }
    let mut out = String::new();
    for thread in &v.threads {
        let t = &thread.header;
        let mut marks = String::new();
        if t.pinned {
            marks.push_str("[pinned] ");
        }
        if t.never_recall {
            marks.push_str("[never recalled] ");
        }
        let moved: String = t.last_active.chars().take(10).collect();
        let _ = writeln!(
            out,
            "{}  {:<9} {}  {:>3} msg  moved {:<10}  {marks}{}",
            t.id,
            t.status,
            weight_cell(t.weight, show_weight),
            thread.messages,
            moved,
            cut(&t.title, 60)
        );
    }
    if v.total > v.threads.len() {
        let _ = writeln!(out, "… {} of {} shown", v.threads.len(), v.total);
    }
    out
}

pub fn thread(t: &ThreadDetail) -> String {
    let h = &t.header;
    let mut out = String::new();
    let _ = writeln!(out, "{}\n  {}", h.title, h.id);
    let _ = writeln!(
        out,
        "  status {}  weight {} {:.2}  origin {}  activations {}",
        h.status,
        weight_bar(h.weight),
        h.weight,
        h.origin_type.as_str(),
        h.activation_count
    );
    let _ = writeln!(
        out,
        "  created {}  last active {}",
        h.created_at, h.last_active
    );
    if let Some(parent) = &h.parent_id {
        let _ = writeln!(out, "  parent {parent}");
    }
    if let Some(from) = &t.resolved_from {
        let _ = writeln!(out, "  ({from} was merged into this thread)");
    }
    let now_about: Vec<String> = t
        .profile
        .iter()
        .take(8)
        .map(|p| format!("{} {:.1}", p.term, p.weight))
        .collect();
    if !now_about.is_empty() {
        let by = match t.title_by {
            TitleSource::Person => "title by a person (kept)",
            TitleSource::Llm => "title by the LLM",
            TitleSource::Local => "title from these",
        };
        let _ = writeln!(out, "  about now: {} ({by})", now_about.join(", "));
    }
    if !t.topics.is_empty() {
        let _ = writeln!(out, "  topics: {}", t.topics.join(", "));
    }
    if !h.summary.is_empty() {
        let _ = writeln!(out, "  summary: {}", cut(&h.summary, 300));
    }
    for (label, items) in [
        ("decision", &t.decisions),
        ("question", &t.questions),
        ("drift", &t.drift_history),
    ] {
        for x in items {
            let _ = writeln!(out, "  {label}: {}", cut(x, 160));
        }
    }
    let _ = writeln!(out, "  messages ({}):", t.messages.len());
    for m in &t.messages {
        let tool = m.metadata.get("tool").map(s).unwrap_or_default();
        let _ = writeln!(
            out,
            "    [{}] {} {}: {}",
            m.timestamp
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            m.source.as_str(),
            tool,
            cut(&m.content, 140)
        );
    }
    if !t.bridges.is_empty() {
        let _ = writeln!(out, "  bridges ({}):", t.bridges.len());
        for b in &t.bridges {
            let _ = writeln!(
                out,
                "    {} {} → {} ({} {:.2})",
                b.relation_type.as_str(),
                cut(&b.source_title, 40),
                cut(&b.target_title, 40),
                b.status,
                b.weight
            );
        }
    }
    out
}

pub fn bridges(v: &BridgeList, show_weight: bool) -> String {
    if v.bridges.is_empty() {
        return "no bridges\n".into();
    }
    let mut out = String::new();
    for b in &v.bridges {
        let _ = writeln!(
            out,
            "{}  {:<11} {:<7} {}  {} → {}",
            b.id,
            b.relation_type.as_str(),
            b.status,
            weight_cell(b.weight, show_weight),
            cut(&b.source_title, 35),
            cut(&b.target_title, 35)
        );
    }
    out
}

pub fn bridge(b: &BridgeView) -> String {
    format!(
        "{}\n  {} {} → {}\n  {} ({}) → {} ({})\n  status {}  weight {} {:.2}  confidence {:.2}  uses {}  depth {}\n  shared: {}\n  reason: {}\n",
        b.id,
        b.relation_type.as_str(),
        b.source_id,
        b.target_id,
        cut(&b.source_title, 50),
        b.source_id,
        cut(&b.target_title, 50),
        b.target_id,
        b.status,
        weight_bar(b.weight),
        b.weight,
        b.confidence,
        b.use_count,
        b.propagation_depth,
        b.shared_concepts.join(", "),
        b.reason
    )
}

pub fn search(v: &SearchResults) -> String {
    let mut out = String::new();
    if v.results.is_empty() {
        out.push_str("nothing found\n");
    }
    for hit in &v.results {
        let t = &hit.thread.header;
        let _ = writeln!(out, "{:.3}  {}  {}", hit.score, t.id, cut(&t.title, 60));
        if !t.summary.is_empty() {
            let _ = writeln!(out, "       {}", cut(&t.summary, 100));
        }
    }
    if let Some(team) = &v.team {
        out.push_str("team:\n");
        if let Some(e) = &team.error {
            let _ = writeln!(out, "  (the team store did not answer: {e})");
        } else if team.hits.is_empty() {
            out.push_str("  nothing found\n");
        }
        for h in &team.hits {
            let _ = writeln!(
                out,
                "{:.3}  {}  {} (by {} on {})",
                h.dense,
                h.thread_id,
                cut(&h.thread_title, 50),
                h.author,
                h.machine
            );
            let _ = writeln!(out, "       {}", cut(&h.snippet, 100));
        }
    }
    out
}

pub fn prune(r: &PruneReport) -> String {
    format!(
        "pruned: {} suspended by decay, {} by quota, {} bridges deleted, {} weakened\n",
        r.suspended_by_decay, r.suspended_by_quota, r.bridges_deleted, r.bridges_weakened
    )
}

pub fn mode(v: &ModeReply) -> String {
    let mut out = format!(
        "mode {} (quota {} active threads)\n",
        v.mode.as_str(),
        v.quota
    );
    if let Some(n) = v.suspended {
        let _ = writeln!(out, "{n} threads suspended to fit the quota");
    }
    let _ = writeln!(out, "{} active threads", v.active_threads);
    out
}

pub fn rules(v: &RulesReply) -> String {
    if v.rules.is_empty() {
        return "no user rules\n".into();
    }
    v.rules
        .iter()
        .enumerate()
        .map(|(i, r)| format!("{:>2}. {r}\n", i + 1))
        .collect()
}

pub fn status(v: &StatusReply) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "=== AI Smartness Status ===");
    let _ = writeln!(out, "Project: {} ({})", v.project_name, v.project);
    let _ = writeln!(
        out,
        "Daemon: pid {}, up {} s, protocol {}",
        v.pid, v.uptime_secs, v.protocol
    );
    let _ = writeln!(out, "Mode: {} (quota {})", v.mode.as_str(), v.quota);
    let t = &v.threads;
    let _ = writeln!(
        out,
        "Threads: {} total ({} active, {} suspended, {} archived)",
        t.total, t.active, t.suspended, t.archived
    );
    let b = &v.bridges;
    let _ = writeln!(
        out,
        "Bridges: {} ({} weak, {} invalid)",
        b.total, b.weak, b.invalid
    );
    let e = &v.embedder;
    if e.degraded {
        let _ = writeln!(
            out,
            "Embeddings: DEGRADED: {} ({})",
            e.name,
            e.reason.as_deref().unwrap_or_default()
        );
    } else {
        let _ = writeln!(
            out,
            "Embeddings: {} ({} words for related words{})",
            e.name,
            e.words,
            match e.words_pending {
                0 => String::new(),
                n => format!(", {n} waiting"),
            }
        );
        if e.units_pending > 0 {
            let _ = writeln!(
                out,
                "            {} units of long captures waiting for their vectors (found by \
                 their words meanwhile)",
                e.units_pending
            );
        }
    }
    let _ = writeln!(
        out,
        "Extractor: {}  LLM: {}",
        v.extractor,
        v.llm.as_ref().map(llm_name).unwrap_or_default()
    );
    if let Some(l) = &v.llm {
        out.push_str(&llm_usage(l));
    }
    let a = &v.assistant;
    if a.sessions + a.automations > 0 {
        let _ = writeln!(
            out,
            "Assistant: {} session(s), {} automation(s) ({} enabled), active: {}, queued: {}",
            a.sessions,
            a.automations,
            a.automations_enabled,
            a.active.as_deref().unwrap_or("none"),
            a.queued
        );
        for id in &a.waiting_for_you {
            let _ = writeln!(out, "  waiting for you: {id} (`ai session {id}`)");
        }
    }
    let r = &v.runs;
    if r.total > 0 {
        let _ = writeln!(
            out,
            "Runs: {} ({} passed, {} failed), running: {}",
            r.total,
            r.passed,
            r.failed,
            if r.running.is_empty() {
                "none".to_string()
            } else {
                r.running.join(", ")
            }
        );
    }
    let st = &v.stats;
    let _ = writeln!(
        out,
        "Captures: {} received, {} stored, {} skipped, {} secrets redacted, {} pending",
        st.captures_received,
        st.captures_processed,
        st.captures_skipped,
        st.secrets_redacted,
        v.journal_pending
    );
    if let Some(at) = st.last_prune {
        let _ = writeln!(
            out,
            "Last prune: {}",
            at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        );
    }
    out
}

/// `ai consolidate`: what was (or would be) merged, split and retitled.
pub fn consolidation(r: &ConsolidationReport) -> String {
    let c = &r.consolidation;
    let will = if r.dry_run { "would " } else { "" };
    let mut out = String::new();
    if c.is_empty() {
        out.push_str("nothing to do: every thread holds one subject under a title that names it\n");
    }
    for m in &c.merges {
        let _ = writeln!(
            out,
            "{will}merge {} {:?} into {} {:?} (score {:.2})",
            m.from, m.from_title, m.into, m.into_title, m.score
        );
    }
    for sp in &c.splits {
        let sizes: Vec<String> = sp.parts.iter().map(|p| p.len().to_string()).collect();
        let _ = writeln!(
            out,
            "{will}split {} {:?} into {} threads of {} messages",
            sp.thread,
            sp.title,
            sp.parts.len(),
            sizes.join(", ")
        );
    }
    for r in &c.retitles {
        let _ = writeln!(out, "{will}retitle {}: {:?} → {:?}", r.thread, r.from, r.to);
    }
    if c.partial {
        out.push_str("(stopped at its time budget: run it again for the rest)\n");
    }
    out
}

pub fn health(v: &HealthReply) -> String {
    let mut out = String::new();
    let check = |ok: bool| if ok { "ok  " } else { "WARN" };
    // A figure is judged against its target only when there is enough to judge it on.
    let judged = |enough: bool, ok: bool| {
        if !enough {
            "--  "
        } else {
            check(ok)
        }
    };
    let stamp =
        |d: &chrono::DateTime<chrono::Utc>| d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
    let _ = writeln!(out, "{} daemon running (pid {})", check(true), v.pid);
    for (file, problem) in &v.config_problems {
        let _ = writeln!(
            out,
            "{} {file} is not valid since {}: {}",
            check(false),
            stamp(&problem.since),
            cut(&problem.error, 200)
        );
        let _ = writeln!(
            out,
            "     the last valid version stays in force until the file is fixed"
        );
    }
    if let Some(refusing) = &v.captures.refusing {
        let _ = writeln!(
            out,
            "{} captures REFUSED since {}: {}",
            check(false),
            stamp(&refusing.since),
            cut(&refusing.reason, 200)
        );
        let _ = writeln!(
            out,
            "     nothing is acknowledged until the journal can write again (free some disk space)"
        );
    } else {
        let _ = writeln!(out, "{} captures accepted", check(true));
    }
    if let Some(failing) = &v.saving.failing {
        let needs = v.saving.needs_bytes.unwrap_or(0);
        let _ = writeln!(
            out,
            "{} saving the memory FAILS since {}: {}",
            check(false),
            stamp(&failing.since),
            cut(&failing.reason, 200)
        );
        let _ = writeln!(
            out,
            "     what is not saved stays in the journal; saving a capture needs about {} free (its message is appended, its thread's header replaced)",
            bytes(needs)
        );
    }
    let e = &v.embedder;
    if e.degraded {
        let _ = writeln!(
            out,
            "{} embeddings DEGRADED: {} ({})",
            check(false),
            e.name,
            e.reason.as_deref().unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "     fix: run scripts/fetch-assets.sh (or install.sh), then `ai daemon restart`"
        );
    } else {
        let _ = writeln!(out, "{} embeddings: {}", check(true), e.name);
    }
    let _ = writeln!(out, "{} extraction: {}", check(true), v.extractor);
    if let Some(l) = &v.llm {
        out.push_str(&llm_health(l));
    }
    let cov = v.embedding_coverage;
    let enough = v.threads >= 5;
    let _ = writeln!(
        out,
        "{} embedding coverage {:.0}% (target 100%)",
        judged(v.threads > 0, cov >= 0.999),
        cov * 100.0
    );
    let too_few = if enough {
        ""
    } else {
        ": too few threads to judge"
    };
    let cont = v.continuation_rate;
    let _ = writeln!(
        out,
        "{} continuation rate {:.0}% (target > 20%){too_few}",
        judged(enough, cont > 0.2),
        cont * 100.0,
    );
    let br = v.bridge_ratio;
    let _ = writeln!(
        out,
        "{} bridge ratio {:.2} (target > 0.5){too_few}",
        judged(enough, br > 0.5),
        br,
    );
    let q = v.quarantined_files;
    let _ = writeln!(out, "{} {} files in quarantine", check(q == 0), q);
    let pe = v.persist_errors;
    let _ = writeln!(
        out,
        "{} {} save errors; {} captures pending",
        check(pe == 0),
        pe,
        v.journal_pending
    );
    for (name, h) in &v.hooks {
        let last = match &h.last_run {
            None => "not seen since the daemon started".to_string(),
            Some(x) => format!("last run {x}"),
        };
        let _ = writeln!(
            out,
            "{} {name}: {last}, {} errors",
            check(h.errors == 0),
            h.errors
        );
        if h.errors > 0 {
            let _ = writeln!(
                out,
                "     last error ({}): {}",
                h.last_error_at.as_deref().unwrap_or_default(),
                cut(h.last_error.as_deref().unwrap_or_default(), 120)
            );
        }
    }
    let _ = writeln!(out, "     log: {}", v.log);
    out
}

/// "anthropic (claude-haiku-5-5)", or what runs instead of an LLM.
fn llm_name(l: &LlmView) -> String {
    match l.in_use.as_str() {
        "local fallback" if l.provider == "none" => "none (local fallbacks)".into(),
        "local fallback" => format!(
            "{} NOT IN USE ({}): local fallbacks",
            l.provider,
            cut(l.error.as_deref().unwrap_or_default(), 100)
        ),
        name => match &l.model {
            Some(model) => format!("{name} ({model})"),
            None => name.to_string(),
        },
    }
}

fn dollars(usd: f64) -> String {
    format!("${usd:.4}")
}

/// The ledger lines of `ai status`: today, all time, the limits, the background work.
fn llm_usage(l: &LlmView) -> String {
    let Some(u) = &l.usage else {
        return String::new();
    };
    let mut out = String::new();
    let line = |t: &ai_smartness_records::cost::Totals| {
        let tokens = t.input_tokens + t.output_tokens + t.cache_read_tokens + t.cache_write_tokens;
        format!(
            "{} calls ({} failed), {} tokens ({} in, {} out), {}",
            t.calls,
            t.failed_calls,
            tokens,
            t.input_tokens,
            t.output_tokens,
            dollars(t.cost_usd)
        )
    };
    let _ = writeln!(
        out,
        "LLM usage today ({} UTC): {}",
        u.day,
        line(&u.today.totals)
    );
    let _ = writeln!(out, "LLM usage in total: {}", line(&u.total));
    let per_call = match u.limits.max_tokens_per_call {
        Some(n) => format!("{n} tokens per call"),
        None => "no token limit per call".into(),
    };
    let per_day = match u.limits.max_cost_per_day_usd {
        Some(d) => format!("${d:.2} per day"),
        None => "no daily cost limit".into(),
    };
    let _ = writeln!(out, "LLM limits: {per_call}, {per_day}");
    let j = l.jobs.clone().unwrap_or_default();
    let _ = writeln!(
        out,
        "LLM work: {} extractions applied ({} kept local), {} children, {} reactivations, {} bridges retyped, {} syntheses; {} queued now, {} skipped (queue full)",
        j.extractions,
        j.extractions_kept_local,
        j.coherence_children,
        j.reactivations,
        j.bridges_retyped,
        j.syntheses,
        l.queue.unwrap_or(0),
        j.skipped_queue_full
    );
    out
}

/// The LLM line of `ai health`.
fn llm_health(l: &LlmView) -> String {
    let provider = &l.provider;
    if l.in_use == "local fallback" {
        return if provider == "none" {
            "ok   LLM: none (local fallbacks in use)\n".into()
        } else {
            format!(
                "WARN LLM: {provider} not in use ({}); local fallbacks in use\n",
                cut(l.error.as_deref().unwrap_or_default(), 120)
            )
        };
    }
    let today = l.usage_today.clone().unwrap_or_default();
    let usage = format!(
        "today {} calls, {} tokens, {}",
        today.calls,
        today.tokens,
        dollars(today.cost_usd)
    );
    let checked = l.checked_at.as_deref().unwrap_or_default();
    match l.answers {
        Some(true) => format!(
            "ok   LLM: {provider} answers ({} ms, checked {checked}); {usage}\n",
            l.latency_ms.unwrap_or(0)
        ),
        Some(false) => format!(
            "WARN LLM: {provider} does not answer ({}; checked {checked}); local results are kept meanwhile; {usage}\n",
            cut(l.error.as_deref().unwrap_or_default(), 90)
        ),
        None => format!("ok   LLM: {provider} (reachability being checked); {usage}\n"),
    }
}

pub fn context(v: &ContextReply) -> String {
    if v.context.is_empty() {
        return "nothing would be injected for this prompt\n".into();
    }
    let (threads, messages) = v
        .retrieval
        .as_ref()
        .map_or((0, 0), |r| (r.threads.len(), r.messages.len()));
    format!(
        "{}\n({} tokens; {threads} threads, {messages} messages)\n",
        v.context, v.tokens
    )
}

/// `ai context --explain`: the decision, and what made each included message's score.
pub fn explain(v: &ContextReply) -> String {
    let mut out = String::new();
    let Some(r) = &v.retrieval else {
        let why = v
            .skipped
            .as_deref()
            .unwrap_or("the memory was not consulted");
        return format!("Nothing looked up: {why}.\n");
    };
    let d = &r.decision;
    let messages_in_memory = r.gate.messages;
    let (evidence, bar) = (d.evidence, d.bar);
    if r.abstained {
        let _ = writeln!(
            out,
            "The memory stays silent: evidence {evidence:.2} < bar {bar:.2} ({messages_in_memory} messages in memory)."
        );
    } else if evidence < bar && r.gate.about_this_work {
        let _ = writeln!(
            out,
            "The memory speaks: the prompt asks what was done in this work (\"did the assistant\", \"I said\"), so no bar (evidence {evidence:.2}, bar {bar:.2}, {messages_in_memory} messages in memory)."
        );
    } else if r.gate.recalls_this_work {
        let _ = writeln!(
            out,
            "The memory speaks: evidence {evidence:.2} >= bar {bar:.2}, lowered because the prompt asks about the past in this memory's own words ({messages_in_memory} messages in memory)."
        );
    } else {
        let _ = writeln!(
            out,
            "The memory speaks: evidence {evidence:.2} >= bar {bar:.2} ({messages_in_memory} messages in memory)."
        );
    }
    let _ = writeln!(
        out,
        "  evidence: how close to the prompt (cosine) the three closest units are, on average;
           bar: what chance alone reaches among that many messages."
    );
    let why_line = |w: &Why| {
        format!(
            "score {:.3} = dense {:.3} x 0.5 + lexical {:.3} x 0.5 + label {:.3} + neighbour {:.3} + episode {:.3} + place in time {:.3} (its thread scores {:.3})",
            w.score, w.dense, w.lexical, w.label, w.neighbour, w.episode, w.order, w.thread
        )
    };
    if let Some(c) = &r.candidate {
        let _ = writeln!(
            out,
            "Best candidate: {} \"{}\" {}\n  {}\n  \"{}\"",
            c.thread_id,
            cut(&c.title, 60),
            c.message_id,
            why_line(&c.why),
            c.snippet
        );
    }
    if !r.messages.is_empty() {
        let _ = writeln!(
            out,
            "Included: {} messages, {} tokens (message bar {:.3}):",
            r.messages.len(),
            v.tokens,
            d.message_bar
        );
        for m in &r.messages {
            let _ = writeln!(
                out,
                "  {} {}: {}",
                m.thread_id,
                m.message_id,
                why_line(&m.why)
            );
        }
    }
    if !v.context.is_empty() {
        let _ = writeln!(out, "\n{}", v.context);
    }
    out
}

/// A byte count for people: `12.3 MB`.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GB", n as f64 / f64::from(1u32 << 30)),
        n if n >= 1 << 20 => format!("{:.1} MB", n as f64 / f64::from(1u32 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `ai health` for a reply given as JSON (missing keys take their defaults).
    fn health_json(v: &Value) -> String {
        health(&serde_json::from_value(v.clone()).unwrap())
    }

    fn health_of(threads: u64, continuation: f64, bridges: f64) -> String {
        health_json(&json!({
            "pid": 1, "embedder": {"name": "minilm", "degraded": false}, "extractor": "local",
            "llm": {}, "embedding_coverage": 1.0, "threads": threads,
            "continuation_rate": continuation, "bridge_ratio": bridges,
            "quarantined_files": 0, "persist_errors": 0, "journal_pending": 0,
            "captures": {"refusing": null}, "saving": {"failing": null}, "config_problems": {},
        }))
    }

    #[test]
    fn a_figure_below_its_target_is_a_warning_and_too_little_data_is_not_judged() {
        let h = health_of(40, 0.05, 0.1);
        assert!(h.contains("WARN continuation rate 5%"), "{h}");
        assert!(h.contains("WARN bridge ratio 0.10"), "{h}");
        let h = health_of(40, 0.5, 0.9);
        assert!(h.contains("ok   continuation rate 50%"), "{h}");
        assert!(h.contains("ok   bridge ratio 0.90"), "{h}");
        let h = health_of(2, 0.0, 0.0);
        assert!(h.contains("--   continuation rate 0%"), "{h}");
        assert!(!h.contains("ok   continuation"), "{h}");
    }

    #[test]
    fn refused_captures_and_failing_saves_are_warnings() {
        let t = "2026-03-01T10:00:00Z";
        let mut v = json!({"pid": 1, "embedder": {"name": "m"}, "threads": 0,
            "captures": {"refusing": {"reason": "No space left on device", "since": t}},
            "saving": {"failing": {"reason": "No space left on device", "since": t}, "needs_bytes": 3145728},
            "config_problems": {"config.json": {"error": "line 2", "since": t}}});
        let h = health_json(&v);
        assert!(
            h.contains(&format!("WARN captures REFUSED since {t}: No space left")),
            "{h}"
        );
        assert!(h.contains("WARN saving the memory FAILS"), "{h}");
        assert!(h.contains("about 3.0 MB free"), "{h}");
        assert!(
            h.contains(&format!("WARN config.json is not valid since {t}: line 2")),
            "{h}"
        );
        v["captures"]["refusing"] = Value::Null;
        assert!(health_json(&v).contains("ok   captures accepted"));
    }
}
