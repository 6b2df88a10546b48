//! Human output: short tables with weight indicators. Programs use `--json` instead.

use crate::memory::decay::weight_bar;
use crate::memory::engine::PruneReport;
use crate::memory::types::TitleSource;
use crate::replies::{
    BridgeList, BridgeView, ConsolidationReport, ContextReply, ModeReply, RulesReply,
    SearchResults, ThreadDetail, ThreadList,
};
use crate::retrieve::Why;
use serde_json::Value;
use std::fmt::Write;

/// A JSON value as plain text (strings without quotes).
pub(crate) fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
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

pub(crate) fn threads(v: &ThreadList, show_weight: bool) -> String {
    if v.threads.is_empty() {
        return "no threads\n".into();
    }
    let mut out = String::new();
    for t in &v.threads {
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
            t.messages,
            moved,
            cut(&t.title, 60)
        );
    }
    if v.total > v.threads.len() {
        let _ = writeln!(out, "… {} of {} shown", v.threads.len(), v.total);
    }
    out
}

pub(crate) fn thread(t: &ThreadDetail) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n  {}", t.title, t.id);
    let _ = writeln!(
        out,
        "  status {}  weight {} {:.2}  origin {}  activations {}",
        t.status,
        weight_bar(t.weight),
        t.weight,
        t.origin_type.as_str(),
        t.activation_count
    );
    let _ = writeln!(
        out,
        "  created {}  last active {}",
        t.created_at, t.last_active
    );
    if let Some(parent) = &t.parent_id {
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
    if !t.summary.is_empty() {
        let _ = writeln!(out, "  summary: {}", cut(&t.summary, 300));
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

pub(crate) fn bridges(v: &BridgeList, show_weight: bool) -> String {
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

pub(crate) fn bridge(b: &BridgeView) -> String {
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

pub(crate) fn search(v: &SearchResults) -> String {
    if v.results.is_empty() {
        return "nothing found\n".into();
    }
    let mut out = String::new();
    for hit in &v.results {
        let t = &hit.thread;
        let _ = writeln!(out, "{:.3}  {}  {}", hit.score, t.id, cut(&t.title, 60));
        if !t.summary.is_empty() {
            let _ = writeln!(out, "       {}", cut(&t.summary, 100));
        }
    }
    out
}

pub(crate) fn prune(r: &PruneReport) -> String {
    format!(
        "pruned: {} suspended by decay, {} by quota, {} bridges deleted, {} weakened\n",
        r.suspended_by_decay, r.suspended_by_quota, r.bridges_deleted, r.bridges_weakened
    )
}

pub(crate) fn mode(v: &ModeReply) -> String {
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

pub(crate) fn rules(v: &RulesReply) -> String {
    if v.rules.is_empty() {
        return "no user rules\n".into();
    }
    v.rules
        .iter()
        .enumerate()
        .map(|(i, r)| format!("{:>2}. {r}\n", i + 1))
        .collect()
}

pub(crate) fn status(v: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "=== AI Smartness Status ===");
    let _ = writeln!(
        out,
        "Project: {} ({})",
        s(&v["project_name"]),
        s(&v["project"])
    );
    let _ = writeln!(
        out,
        "Daemon: pid {}, up {} s, protocol {}",
        v["pid"], v["uptime_secs"], v["protocol"]
    );
    let _ = writeln!(out, "Mode: {} (quota {})", s(&v["mode"]), v["quota"]);
    let t = &v["threads"];
    let _ = writeln!(
        out,
        "Threads: {} total ({} active, {} suspended, {} archived)",
        t["total"], t["active"], t["suspended"], t["archived"]
    );
    let b = &v["bridges"];
    let _ = writeln!(
        out,
        "Bridges: {} ({} weak, {} invalid)",
        b["total"], b["weak"], b["invalid"]
    );
    let e = &v["embedder"];
    if e["degraded"].as_bool() == Some(true) {
        let _ = writeln!(
            out,
            "Embeddings: DEGRADED: {} ({})",
            s(&e["name"]),
            s(&e["reason"])
        );
    } else {
        let _ = writeln!(
            out,
            "Embeddings: {} ({} words for related words{})",
            s(&e["name"]),
            e["words"].as_u64().unwrap_or(0),
            match e["words_pending"].as_u64().unwrap_or(0) {
                0 => String::new(),
                n => format!(", {n} waiting"),
            }
        );
    }
    let _ = writeln!(
        out,
        "Extractor: {}  LLM: {}",
        s(&v["extractor"]),
        llm_name(&v["llm"])
    );
    out.push_str(&llm_usage(&v["llm"]));
    let a = &v["assistant"];
    if a["sessions"].as_u64().unwrap_or(0) + a["automations"].as_u64().unwrap_or(0) > 0 {
        let _ = writeln!(
            out,
            "Assistant: {} session(s), {} automation(s) ({} enabled), active: {}, queued: {}",
            a["sessions"],
            a["automations"],
            a["automations_enabled"],
            a["active"].as_str().unwrap_or("none"),
            a["queued"]
        );
        for id in a["waiting_for_you"].as_array().into_iter().flatten() {
            let _ = writeln!(out, "  waiting for you: {} (`ai session {}`)", s(id), s(id));
        }
    }
    let r = &v["runs"];
    if r["total"].as_u64().unwrap_or(0) > 0 {
        let _ = writeln!(
            out,
            "Runs: {} ({} passed, {} failed), running: {}",
            r["total"],
            r["passed"],
            r["failed"],
            r["running"]
                .as_array()
                .filter(|l| !l.is_empty())
                .map(|l| l.iter().map(s).collect::<Vec<_>>().join(", "))
                .unwrap_or_else(|| "none".into())
        );
    }
    let st = &v["stats"];
    let _ = writeln!(
        out,
        "Captures: {} received, {} stored, {} skipped, {} secrets redacted, {} pending",
        st["captures_received"],
        st["captures_processed"],
        st["captures_skipped"],
        st["secrets_redacted"],
        v["journal_pending"]
    );
    if !st["last_prune"].is_null() {
        let _ = writeln!(out, "Last prune: {}", s(&st["last_prune"]));
    }
    out
}

/// `ai consolidate`: what was (or would be) merged, split and retitled.
pub(crate) fn consolidation(r: &ConsolidationReport) -> String {
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

pub(crate) fn health(v: &Value) -> String {
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
    let e = &v["embedder"];
    let degraded = e["degraded"].as_bool() == Some(true);
    let _ = writeln!(out, "{} daemon running (pid {})", check(true), v["pid"]);
    for (file, problem) in v["config_problems"].as_object().into_iter().flatten() {
        let _ = writeln!(
            out,
            "{} {file} is not valid since {}: {}",
            check(false),
            s(&problem["since"]),
            cut(&s(&problem["error"]), 200)
        );
        let _ = writeln!(
            out,
            "     the last valid version stays in force until the file is fixed"
        );
    }
    let refusing = &v["captures"]["refusing"];
    if refusing.is_object() {
        let _ = writeln!(
            out,
            "{} captures REFUSED since {}: {}",
            check(false),
            s(&refusing["since"]),
            cut(&s(&refusing["reason"]), 200)
        );
        let _ = writeln!(
            out,
            "     nothing is acknowledged until the journal can write again (free some disk space)"
        );
    } else {
        let _ = writeln!(out, "{} captures accepted", check(true));
    }
    let failing = &v["saving"]["failing"];
    if failing.is_object() {
        let needs = v["saving"]["needs_bytes"].as_u64().unwrap_or(0);
        let _ = writeln!(
            out,
            "{} saving the memory FAILS since {}: {}",
            check(false),
            s(&failing["since"]),
            cut(&s(&failing["reason"]), 200)
        );
        let _ = writeln!(
            out,
            "     what is not saved stays in the journal; saving a capture needs about {} free (its message is appended, its thread's header replaced)",
            bytes(needs)
        );
    }
    if degraded {
        let _ = writeln!(
            out,
            "{} embeddings DEGRADED: {} ({})",
            check(false),
            s(&e["name"]),
            s(&e["reason"])
        );
        let _ = writeln!(
            out,
            "     fix: run scripts/fetch-assets.sh (or install.sh), then `ai daemon restart`"
        );
    } else {
        let _ = writeln!(out, "{} embeddings: {}", check(true), s(&e["name"]));
    }
    let _ = writeln!(out, "{} extraction: {}", check(true), s(&v["extractor"]));
    out.push_str(&llm_health(&v["llm"]));
    let cov = f(&v["embedding_coverage"]);
    let threads = v["threads"].as_u64().unwrap_or(0);
    let enough = threads >= 5;
    let _ = writeln!(
        out,
        "{} embedding coverage {:.0}% (target 100%)",
        judged(threads > 0, cov >= 0.999),
        cov * 100.0
    );
    let cont = f(&v["continuation_rate"]);
    let _ = writeln!(
        out,
        "{} continuation rate {:.0}% (target > 20%){}",
        judged(enough, cont > 0.2),
        cont * 100.0,
        if enough {
            ""
        } else {
            ": too few threads to judge"
        }
    );
    let br = f(&v["bridge_ratio"]);
    let _ = writeln!(
        out,
        "{} bridge ratio {:.2} (target > 0.5){}",
        judged(enough, br > 0.5),
        br,
        if enough {
            ""
        } else {
            ": too few threads to judge"
        }
    );
    let q = v["quarantined_files"].as_u64().unwrap_or(0);
    let _ = writeln!(out, "{} {} files in quarantine", check(q == 0), q);
    let pe = v["persist_errors"].as_u64().unwrap_or(0);
    let _ = writeln!(
        out,
        "{} {} save errors; {} captures pending",
        check(pe == 0),
        pe,
        v["journal_pending"]
    );
    if let Some(hooks) = v["hooks"].as_object() {
        for (name, h) in hooks {
            let errors = h["errors"].as_u64().unwrap_or(0);
            let last = match s(&h["last_run"]) {
                x if x.is_empty() => "not seen since the daemon started".to_string(),
                x => format!("last run {x}"),
            };
            let _ = writeln!(
                out,
                "{} {name}: {last}, {errors} errors",
                check(errors == 0)
            );
            if errors > 0 {
                let _ = writeln!(
                    out,
                    "     last error ({}): {}",
                    s(&h["last_error_at"]),
                    cut(&s(&h["last_error"]), 120)
                );
            }
        }
    }
    let _ = writeln!(out, "     log: {}", s(&v["log"]));
    out
}

/// "anthropic (claude-haiku-5-5)", or what runs instead of an LLM.
fn llm_name(l: &Value) -> String {
    match s(&l["in_use"]).as_str() {
        "local fallback" if s(&l["provider"]) == "none" => "none (local fallbacks)".into(),
        "local fallback" => format!(
            "{} NOT IN USE ({}): local fallbacks",
            s(&l["provider"]),
            cut(&s(&l["error"]), 100)
        ),
        name if l["model"].is_string() => format!("{name} ({})", s(&l["model"])),
        name => name.to_string(),
    }
}

fn dollars(v: &Value) -> String {
    format!("${:.4}", f(v))
}

/// The ledger lines of `ai status`: today, all time, the limits, the background work.
fn llm_usage(l: &Value) -> String {
    let u = &l["usage"];
    if u.is_null() {
        return String::new();
    }
    let mut out = String::new();
    let line = |t: &Value| {
        let tokens: u64 = [
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        ]
        .iter()
        .map(|k| t[*k].as_u64().unwrap_or(0))
        .sum();
        format!(
            "{} calls ({} failed), {} tokens ({} in, {} out), {}",
            t["calls"],
            t["failed_calls"],
            tokens,
            t["input_tokens"],
            t["output_tokens"],
            dollars(&t["cost_usd"])
        )
    };
    let _ = writeln!(
        out,
        "LLM usage today ({} UTC): {}",
        s(&u["day"]),
        line(&u["today"])
    );
    let _ = writeln!(out, "LLM usage in total: {}", line(&u["total"]));
    let lim = &u["limits"];
    let per_call = match lim["max_tokens_per_call"].as_u64() {
        Some(n) => format!("{n} tokens per call"),
        None => "no token limit per call".into(),
    };
    let per_day = match lim["max_cost_per_day_usd"].as_f64() {
        Some(d) => format!("${d:.2} per day"),
        None => "no daily cost limit".into(),
    };
    let _ = writeln!(out, "LLM limits: {per_call}, {per_day}");
    let j = &l["jobs"];
    let _ = writeln!(
        out,
        "LLM work: {} extractions applied ({} kept local), {} children, {} reactivations, {} bridges retyped, {} syntheses; {} queued now, {} skipped (queue full)",
        j["extractions"],
        j["extractions_kept_local"],
        j["coherence_children"],
        j["reactivations"],
        j["bridges_retyped"],
        j["syntheses"],
        l["queue"],
        j["skipped_queue_full"]
    );
    out
}

/// The LLM line of `ai health`: in use or not, whether it answers (cached), today's usage.
fn llm_health(l: &Value) -> String {
    let provider = s(&l["provider"]);
    if s(&l["in_use"]) == "local fallback" {
        return if provider == "none" {
            "ok   LLM: none (local fallbacks in use)\n".into()
        } else {
            format!(
                "WARN LLM: {provider} not in use ({}); local fallbacks in use\n",
                cut(&s(&l["error"]), 120)
            )
        };
    }
    let today = &l["usage_today"];
    let usage = format!(
        "today {} calls, {} tokens, {}",
        today["calls"],
        today["tokens"],
        dollars(&today["cost_usd"])
    );
    match l["answers"].as_bool() {
        Some(true) => format!(
            "ok   LLM: {provider} answers ({} ms, checked {}); {usage}\n",
            l["latency_ms"],
            s(&l["checked_at"])
        ),
        Some(false) => format!(
            "WARN LLM: {provider} does not answer ({}; checked {}); local results are kept meanwhile; {usage}\n",
            cut(&s(&l["error"]), 90),
            s(&l["checked_at"])
        ),
        None => format!("ok   LLM: {provider} (reachability being checked); {usage}\n"),
    }
}

pub(crate) fn context(v: &ContextReply) -> String {
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
pub(crate) fn explain(v: &ContextReply) -> String {
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
    } else {
        let _ = writeln!(
            out,
            "The memory speaks: evidence {evidence:.2} >= bar {bar:.2} ({messages_in_memory} messages in memory)."
        );
    }
    let _ = writeln!(
        out,
        "  evidence: how close to the prompt (cosine) is the message its meaning and its words agree on best;
           bar: what chance alone reaches among that many messages."
    );
    let why_line = |w: &Why| {
        format!(
            "score {:.3} = dense {:.3} x 0.5 + lexical {:.3} x 0.5 + label {:.3} + neighbour {:.3} + episode {:.3} (its thread scores {:.3})",
            w.score, w.dense, w.lexical, w.label, w.neighbour, w.episode, w.thread
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

    fn health_of(threads: u64, continuation: f64, bridges: f64) -> String {
        health(&json!({
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
        let mut v: Value = serde_json::from_str(
            r#"{"pid": 1, "embedder": {"name": "m"}, "threads": 0,
                "captures": {"refusing": {"reason": "No space left on device", "since": "t"}},
                "saving": {"failing": {"reason": "No space left on device", "since": "t"}, "needs_bytes": 3145728},
                "config_problems": {"config.json": {"error": "line 2", "since": "t"}}}"#,
        )
        .unwrap();
        let h = health(&v);
        assert!(
            h.contains("WARN captures REFUSED since t: No space left"),
            "{h}"
        );
        assert!(h.contains("WARN saving the memory FAILS"), "{h}");
        assert!(h.contains("about 3.0 MB free"), "{h}");
        assert!(
            h.contains("WARN config.json is not valid since t: line 2"),
            "{h}"
        );
        v["captures"]["refusing"] = Value::Null;
        assert!(health(&v).contains("ok   captures accepted"));
    }
}
