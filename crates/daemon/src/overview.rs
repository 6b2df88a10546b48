//! `ai status` and `ai health`: what every service and handle says of itself, in one reply.
//! Above the services (it reads them all), beside the router.

use crate::app::Daemon;
use crate::assistant::requests;
use crate::memory_service::round3;
use ai_smartness_core::memory::types::{BridgeStatus, ThreadStatus};
use ai_smartness_proto::protocol::PROTOCOL_VERSION;
use ai_smartness_replies::{
    BridgeCounts, CapturesHealth, EmbedderHealth, EmbedderStatus, HealthReply, HookHealth,
    SavingHealth, StatusReply, ThreadCounts,
};

pub fn status(daemon: &Daemon) -> StatusReply {
    let now = daemon.now();
    let config = daemon.config().get();
    let llm = daemon.refiner().status(&config);
    let stats = daemon.stats().snapshot();
    let assistant = requests::overview(daemon.assistant());
    let runs = daemon.runs().overview();
    let embed = daemon.memory().embed();
    let mem = daemon.memory().lock();
    let g = &mem.graph;
    let mut weak = 0;
    let mut invalid = 0;
    for b in g.bridges() {
        match b.status {
            BridgeStatus::Weak => weak += 1,
            BridgeStatus::Invalid => invalid += 1,
            BridgeStatus::Active => {}
        }
    }
    StatusReply {
        project: daemon.paths().root.display().to_string(),
        project_name: config.project_name.clone(),
        pid: std::process::id(),
        protocol: PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_secs: (now - daemon.life().started_at()).num_seconds().max(0),
        mode: config.mode,
        quota: config.quota(),
        threads: ThreadCounts {
            total: g.thread_count(),
            active: g.count_by_status(ThreadStatus::Active),
            suspended: g.count_by_status(ThreadStatus::Suspended),
            archived: g.count_by_status(ThreadStatus::Archived),
        },
        bridges: BridgeCounts {
            total: g.bridge_count(),
            weak,
            invalid,
        },
        embedder: EmbedderStatus {
            kind: embed.kind(),
            name: embed.kind().to_string(),
            degraded: embed.degraded_reason().is_some(),
            reason: embed.degraded_reason(),
            // Words of the memory with a vector for related words, and those still waiting.
            words: mem.words.len(),
            words_pending: mem.index.new_word_count(),
            units_pending: crate::unit_vectors::missing_count(&mem),
        },
        extractor: daemon.memory().extractor().name().to_string(),
        llm,
        journal_pending: daemon.capture().pending(),
        assistant,
        runs,
        stats,
    }
}

pub fn health(daemon: &Daemon) -> HealthReply {
    // The cached reachability: never waits for the provider.
    let llm = daemon.refiner().health();
    // Counted under the memory's lock; the files below are read after it is released.
    let (total, embedded, multi, bridge_count) = {
        let mem = daemon.memory().lock();
        let g = &mem.graph;
        (
            g.thread_count(),
            g.threads().filter(|t| t.embedding.is_some()).count(),
            g.threads().filter(|t| t.messages.len() > 1).count(),
            g.bridge_count(),
        )
    };
    let ratio = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            round3(a as f64 / b as f64)
        }
    };
    let embed = daemon.memory().embed();
    let stats = daemon.stats().snapshot();
    let quarantine = std::fs::read_dir(daemon.paths().db().join("quarantine"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| !e.file_name().to_string_lossy().ends_with(".reason.txt"))
                .count()
        })
        .unwrap_or(0);
    // Saving a capture appends its message and replaces its thread's header (a small file):
    // while saving fails, say how much room that takes (the largest header, twice, for its
    // temporary copy, and room for a message).
    let save_needs_bytes = stats.save_failing.as_ref().map(|_| {
        let largest_header = std::fs::read_dir(daemon.paths().db().join("threads"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        2 * largest_header + 64 * 1024
    });
    HealthReply {
        daemon: "running".to_string(),
        pid: std::process::id(),
        captures: CapturesHealth {
            refusing: stats.capture_refusals.refusing.clone(),
            refused_total: stats.capture_refusals.total,
        },
        saving: SavingHealth {
            failing: stats.save_failing.clone(),
            needs_bytes: save_needs_bytes,
        },
        config_problems: stats.config_problems.clone(),
        embedder: EmbedderHealth {
            name: embed.kind().to_string(),
            degraded: embed.degraded_reason().is_some(),
            reason: embed.degraded_reason(),
        },
        extractor: daemon.memory().extractor().name().to_string(),
        llm,
        embedding_coverage: ratio(embedded, total),
        continuation_rate: ratio(multi, total),
        bridge_ratio: ratio(bridge_count, total),
        threads: total,
        journal_pending: daemon.capture().pending(),
        quarantined_files: quarantine,
        persist_errors: stats.persist_errors,
        bad_requests: stats.bad_requests,
        last_prune: stats.last_prune.map(|d| d.to_rfc3339()),
        reindexing: stats.reindexing,
        log: daemon.paths().daemon_log().display().to_string(),
        hooks: hooks_health(daemon, &stats),
    }
}

/// Per hook: when it last reached the daemon, and the errors it recorded itself in
/// `.ai/hooks/NAME.json` (a hook that cannot reach the daemon can only tell a file).
fn hooks_health(
    daemon: &Daemon,
    stats: &ai_smartness_replies::Stats,
) -> std::collections::BTreeMap<String, HookHealth> {
    let mut out = std::collections::BTreeMap::new();
    for hook in ["ai-inject", "ai-capture", "ai-compact"] {
        let file = daemon
            .paths()
            .ai_dir
            .join("hooks")
            .join(format!("{hook}.json"));
        // What the hook wrote; a file that does not read is no record.
        let recorded: ai_smartness_proto::HookErrors = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        out.insert(
            hook.to_string(),
            HookHealth {
                last_run: stats.hooks.get(hook).map(|d| d.to_rfc3339()),
                errors: recorded.errors,
                last_error: recorded.last_error,
                last_error_at: recorded.last_error_at,
            },
        );
    }
    out
}
