//! The compaction synthesis: before Claude Code compacts its context,
//! `ai-compact` asks for a synthesis of the five most active threads (summary, decisions made,
//! open questions, key insights), saved under `.ai/db/synthesis/`; `SessionStart` with
//! `source == "compact"` injects it as a session continuation. Built locally, at once; with an
//! LLM in use, the LLM's synthesis of the same threads replaces the file when it comes, in the
//! background (the hook never waits for it).

use crate::protocol::{CompactRequest, Response};
use crate::state::Daemon;

// The synthesis itself is the memory engine's (pure): built here, saved, injected at the next
// session start.
pub use crate::memory::synthesis::{build, continuation_text, SYNTHESIS_THREADS};

pub async fn handle_compact(daemon: &Daemon, req: CompactRequest) -> Response {
    let now = daemon.now();
    daemon.stats().hooks.insert("ai-compact".into(), now);
    // Captures acknowledged just before the compaction belong in the synthesis: give the worker
    // a moment, but never hold the hook long.
    let target = daemon.capture().last_seq();
    let _ = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        daemon.capture().wait_processed(target),
    )
    .await;

    let synthesis = {
        let mem = daemon.memory();
        build(&mem, now, req.session_id.as_deref(), req.trigger.as_deref())
    };
    let d = daemon.clone();
    let saved = tokio::task::spawn_blocking(move || {
        d.store()
            .save_synthesis(now, &synthesis)
            .map(|p| (p, synthesis))
    })
    .await;
    match saved {
        Ok(Ok((path, synthesis))) => {
            tracing::info!("synthesis written to {}", path.display());
            let threads = synthesis["threads"].as_array().map_or(0, Vec::len);
            crate::llm_tasks::spawn_synthesis(daemon, now, synthesis);
            Response::reply(&crate::replies::Compacted {
                path: path.display().to_string(),
                threads,
            })
        }
        Ok(Err(e)) => Response::error("storage", format!("synthesis not saved: {e}")),
        Err(e) => Response::error("internal", e.to_string()),
    }
}
