//! The compaction synthesis: before Claude Code compacts its context,
//! `ai-compact` asks for a synthesis of the five most active threads (summary, decisions made,
//! open questions, key insights), saved under `.ai/db/synthesis/`; `SessionStart` with
//! `source == "compact"` injects it as a session continuation. Built locally, at once; with an
//! LLM in use, the LLM's synthesis of the same threads replaces the file when it comes, in the
//! background (the hook never waits for it).

use crate::llm_tasks::Refiner;
use crate::state::{CaptureHandle, MemoryHandle, StatsHandle};
use ai_smartness_proto::protocol::{CompactRequest, ErrorCode, Response};

// The synthesis itself is the memory engine's (pure): built here, saved, injected at the next
// session start.
use ai_smartness_core::memory::synthesis::build;

/// Writes the synthesis `ai-compact` asks for.
#[derive(Clone)]
pub struct Compact {
    /// The threads synthesised, and the store the synthesis is saved in.
    memory: MemoryHandle,
    /// The captures the synthesis waits a moment for.
    capture: CaptureHandle,
    /// When `ai-compact` last came, for `ai health`.
    stats: StatsHandle,
    /// The LLM's synthesis that replaces the local one, when an LLM is in use.
    refiner: Refiner,
}

impl Compact {
    pub fn new(
        memory: MemoryHandle,
        capture: CaptureHandle,
        stats: StatsHandle,
        refiner: Refiner,
    ) -> Compact {
        Compact {
            memory,
            capture,
            stats,
            refiner,
        }
    }

    pub async fn handle_compact(&self, req: CompactRequest) -> Response {
        let now = self.memory.now();
        self.stats.note_hook("ai-compact", now);
        // Captures acknowledged just before the compaction belong in the synthesis: give the worker
        // a moment, but never hold the hook long.
        let target = self.capture.last_seq();
        let _ = tokio::time::timeout(
            std::time::Duration::from_millis(300),
            self.capture.wait_processed(target),
        )
        .await;

        let synthesis = {
            let mem = self.memory.lock();
            build(&mem, now, req.session_id.as_deref(), req.trigger.as_deref())
        };
        let memory = self.memory.clone();
        let saved = tokio::task::spawn_blocking(move || {
            memory
                .store()
                .save_synthesis(now, &synthesis)
                .map(|p| (p, synthesis))
        })
        .await;
        match saved {
            Ok(Ok((path, synthesis))) => {
                tracing::info!("synthesis written to {}", path.display());
                let threads = synthesis.threads.len();
                self.refiner.spawn_synthesis(now, synthesis);
                Response::reply(&ai_smartness_replies::Compacted {
                    path: path.display().to_string(),
                    threads,
                })
            }
            Ok(Err(e)) => Response::error(ErrorCode::Storage, format!("synthesis not saved: {e}")),
            Err(e) => Response::error(ErrorCode::Internal, e.to_string()),
        }
    }
}
