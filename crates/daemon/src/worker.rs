//! The capture worker: takes journaled captures in journal order, prepares them (filter, clean,
//! redact), extracts, embeds (on the embedding thread), places them in the memory, saves, and
//! only then checkpoints the journal. The hook has long returned by then. The units of long
//! captures get their vectors afterwards, when the model is free ([`crate::unit_vectors`]).
//! With an LLM in use, it then queues the LLM's refinements of what it placed
//! ([`super::llm_tasks`]) and moves on.

use super::llm_tasks::{self, Refiner};
use super::state::{CaptureHandle, Lifecycle, MemoryHandle, StatsHandle};
use crate::service_error::ServiceError;
use crate::unit_vectors::UnitVectors;
use ai_smartness_capture::admit::CaptureRecord;
use ai_smartness_capture::extract::Extraction;
use ai_smartness_capture::source::SourceType;
use ai_smartness_core::memory::engine::Capture;
use ai_smartness_core::memory::types::{Author, Unit};
use ai_smartness_replies::Synced;
use ai_smartness_store::journal::JournalEntry;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Metadata key holding the journal seq a message came from.
pub const JOURNAL_SEQ: &str = "journal_seq";

/// Captures taken from the queue at once: one embedding batch, one flush, one checkpoint.
const BATCH: usize = 128;

/// One journal entry, ready for the memory: a capture to place, or the mark of a request with
/// nothing to keep.
enum Entry {
    Capture(Box<Prepared>),
    RequestMark {
        at: DateTime<Utc>,
        session: Option<String>,
    },
}

/// A capture after the CPU-cheap steps, before embedding.
struct Prepared {
    tool: String,
    source_type: SourceType,
    author: Author,
    content: String,
    extraction: Extraction,
    at: DateTime<Utc>,
    metadata: serde_json::Map<String, Value>,
    /// Its units, when it is long enough to be cut (see [`ai_smartness_capture::units`]).
    spans: Vec<ai_smartness_capture::units::Span>,
}

/// How far [`sync`] waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncUntil {
    /// Every capture acknowledged so far is placed and saved (`ai import` goes on from there).
    Placed,
    /// ... and every unit of those captures has its vector (`ai sync`: nothing left in flight).
    Settled,
}

/// `ai sync`: waits until every capture acknowledged so far is processed (and, for
/// [`SyncUntil::Settled`], its units embedded), and says whether it is saved (processed but not
/// saved is never "saved").
pub async fn sync(
    capture: &CaptureHandle,
    stats: &StatsHandle,
    units: &UnitVectors,
    life: &Lifecycle,
    until: SyncUntil,
) -> Result<Synced, ServiceError> {
    let target = capture.last_seq();
    let mut shutdown = life.subscribe_shutdown();
    let wait = async {
        let processed = capture.wait_processed(target).await;
        if processed && until == SyncUntil::Settled {
            units.settled().await;
        }
        processed
    };
    tokio::select! {
        processed = wait => match processed {
            true => match stats.lock().save_failing.clone() {
                Some(failing) => Err(ServiceError::storage(format!(
                    "captures up to {target} are processed but could not be saved ({}); they \
                     stay in the journal and are saved as soon as the disk allows",
                    failing.reason
                ))),
                None => Ok(Synced {
                    processed: target,
                    saved: true,
                }),
            },
            false => Err(ServiceError::shutting_down()),
        },
        _ = shutdown.recv() => Err(ServiceError::shutting_down()),
    }
}

/// Places journaled captures in the memory, one batch at a time.
#[derive(Clone)]
pub struct Worker {
    /// Where captures are placed, embedded and saved.
    memory: MemoryHandle,
    /// Where captures wait, and where the journal is checkpointed once they are saved.
    capture: CaptureHandle,
    /// Captures processed, skipped and redacted are counted there.
    stats: StatsHandle,
    /// Gets the LLM's refinements of what was placed, when an LLM is in use.
    refiner: Refiner,
    /// Told when placed captures have units waiting for their vectors.
    units: UnitVectors,
    /// The stop the worker drains the queue at.
    life: Lifecycle,
}

impl Worker {
    pub fn new(
        memory: MemoryHandle,
        capture: CaptureHandle,
        stats: StatsHandle,
        refiner: Refiner,
        units: UnitVectors,
        life: Lifecycle,
    ) -> Worker {
        Worker {
            memory,
            capture,
            stats,
            refiner,
            units,
            life,
        }
    }

    /// Runs until shutdown, then drains what is queued.
    pub async fn run(self) {
        let mut shutdown = self.life.subscribe_shutdown();
        loop {
            let batch = self.capture.take_captures(BATCH);
            if batch.is_empty() {
                tokio::select! {
                    _ = self.capture.captures_queued() => continue,
                    _ = shutdown.recv() => break,
                }
            }
            self.process_batch(batch).await;
        }
        // Finish what was acknowledged before stopping (whatever is left is replayed at next
        // start).
        loop {
            let batch = self.capture.take_captures(BATCH);
            if batch.is_empty() {
                break;
            }
            self.process_batch(batch).await;
        }
    }

    /// Places one batch; public so `ai import` and tests go through exactly the same path.
    pub async fn process_batch(&self, batch: Vec<JournalEntry<CaptureRecord>>) {
        let Some(last_seq) = batch.last().map(|e| e.seq) else {
            return;
        };
        let started = std::time::Instant::now();
        let n = batch.len();
        let worker = self.clone();
        let entries: Vec<Entry> = tokio::task::spawn_blocking(move || {
            batch
                .into_iter()
                .filter_map(|e| worker.prepare(e))
                .collect()
        })
        .await
        .unwrap_or_default();

        let t_prepare = started.elapsed();
        // Each capture's own text: what places it. Its units (the whole text, cut) get their
        // vectors after, when the model is free.
        let captures = || {
            entries.iter().filter_map(|e| match e {
                Entry::Capture(p) => Some(p),
                Entry::RequestMark { .. } => None,
            })
        };
        let texts: Vec<String> = captures().map(|p| embedding_text(p)).collect();
        let with_units = captures().any(|p| !p.spans.is_empty());
        let wanted = texts.len();
        let embeddings = match self.memory.embed().embed(texts).await {
            Ok(v) if v.len() == wanted => v,
            Ok(_) => {
                tracing::error!("the embedder answered for fewer texts than asked: captures kept without embeddings");
                vec![Vec::new(); wanted]
            }
            Err(e) => {
                tracing::error!("embedding failed, captures kept without embeddings: {e}");
                vec![Vec::new(); wanted]
            }
        };
        let t_embed = started.elapsed();
        // Placing captures is CPU work (each is scored against every thread): on a blocking
        // thread, taking the memory lock per capture, so a hook waiting for the memory gets it
        // between two captures rather than after the whole batch.
        let memory = self.memory.clone();
        let llm_in_use = self.refiner.runtime().is_some();
        let placed = tokio::task::spawn_blocking(move || {
            let mut llm_jobs = Vec::new();
            let words_before = memory.lock().index.new_word_count();
            let mut embeddings = embeddings.into_iter();
            for entry in entries {
                let p = match entry {
                    Entry::Capture(p) => *p,
                    Entry::RequestMark { at, session } => {
                        memory.lock().mark_request(at, session);
                        continue;
                    }
                };
                let embedding = embeddings.next().unwrap_or_default();
                // What the LLM will refine later (only kept when an LLM is in use).
                let for_llm =
                    llm_in_use.then(|| (p.source_type, p.content.clone(), p.extraction.clone()));
                let units = p
                    .spans
                    .iter()
                    .map(|s| Unit {
                        start: s.start as u32,
                        end: s.end as u32,
                        label: s.label.clone(),
                        embedding: None,
                    })
                    .collect();
                let cap = Capture {
                    tool: p.tool,
                    source_type: p.source_type,
                    author: p.author,
                    content: p.content,
                    extraction: p.extraction,
                    embedding,
                    at: p.at,
                    metadata: p.metadata,
                    units,
                };
                let mut mem = memory.lock();
                let outcome = mem.ingest(cap);
                tracing::debug!(
                "capture → {:?} {} (sim {:.2}, {} new bridges, coherence {:?}, borderline {:?})",
                outcome.decision,
                outcome.thread_id,
                outcome.similarity,
                outcome.bridges_created,
                outcome.coherence,
                outcome.borderline_suspended
            );
                if let Some((source, content, local)) = for_llm {
                    let title_before = mem
                        .graph
                        .thread(&outcome.thread_id)
                        .map(|t| t.title.clone())
                        .unwrap_or_default();
                    drop(mem);
                    llm_jobs.extend(llm_tasks::jobs_for(llm_tasks::Placed {
                        outcome: &outcome,
                        source,
                        content: &content,
                        local,
                        title_before,
                    }));
                }
            }
            let new_words = {
                let mut mem = memory.lock();
                // Ranking's table takes this batch's changes now, not when the next prompt waits.
                mem.sync_table();
                mem.index.new_word_count().saturating_sub(words_before)
            };
            (new_words, llm_jobs)
        })
        .await;
        let (new_words, llm_jobs) = match placed {
            Ok(placed) => placed,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        // The words this batch brought get their vectors before it counts as processed, so a
        // question asked after `sync` finds them related.
        self.memory.embed_new_words(new_words).await;
        let t_ingest = started.elapsed();
        let saved = self.memory.flush().await;
        tracing::debug!(
            "batch of {n}: prepare {:?}, embed {:?}, ingest {:?}, save {:?}",
            t_prepare,
            t_embed - t_prepare,
            t_ingest - t_embed,
            started.elapsed() - t_ingest
        );
        if with_units {
            // Before the batch counts as processed, so a `sync` after it waits for its units.
            self.units.request();
        }
        if saved {
            // The checkpoint writes and fsyncs: a blocking thread does, not an async worker.
            let capture = self.capture.clone();
            let checkpoint =
                tokio::task::spawn_blocking(move || capture.checkpoint_blocking(last_seq)).await;
            match checkpoint {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!(
                    "journal checkpoint failed (captures will replay, not be lost): {e}"
                ),
                Err(e) => {
                    tracing::error!("journal checkpoint panicked (captures will replay): {e}")
                }
            }
            self.capture.mark_processed(last_seq);
        } else {
            // Not saved: leave the journal as it is; the next successful flush covers these too.
            tracing::warn!("batch up to seq {last_seq} kept in the journal until it can be saved");
            self.capture.mark_processed(last_seq);
        }
        // The LLM refines what was just saved, in the background: never waited for here.
        self.refiner.submit(llm_jobs);
    }

    fn prepare(&self, entry: JournalEntry<CaptureRecord>) -> Option<Entry> {
        let mut req = entry.record;
        if req.request_mark {
            return Some(Entry::RequestMark {
                at: entry_time(req.at.as_deref(), entry.received_at),
                session: req.session_id,
            });
        }
        // Admitted records were prepared before they were journaled; a journal written by an older
        // version holds raw captures, prepared here as they were then.
        let prepared = match req.prepared {
            Some(mark) => ai_smartness_capture::Prepared {
                source: mark.source_type,
                content: std::mem::take(&mut req.content),
                redactions: mark.redactions,
            },
            None => match ai_smartness_capture::prepare(&req.tool, &req.content) {
                Ok(mut p) => {
                    if let Some(m) = req.metadata.take() {
                        let (m, n) = ai_smartness_capture::admit::redact_map(m);
                        p.redactions += n;
                        req.metadata = Some(m);
                    }
                    p
                }
                Err(reason) => {
                    tracing::debug!("capture {} from {} skipped: {reason}", entry.seq, req.tool);
                    self.stats.lock().captures_skipped += 1;
                    return None;
                }
            },
        };
        let at = entry_time(req.at.as_deref(), entry.received_at);
        let author = match req.source.as_deref() {
            Some("user") => Author::User,
            Some("assistant") => Author::Assistant,
            _ if prepared.source == SourceType::Prompt => Author::User,
            _ => Author::Assistant,
        };
        let extraction = self
            .memory
            .extractor()
            .extract(&prepared.content, prepared.source)
            .unwrap_or_else(|e| {
                tracing::warn!("extraction failed, using an empty one: {e}");
                Extraction::default()
            });
        let mut metadata = req.metadata.unwrap_or_default();
        // Lets a replay after a crash between save and checkpoint skip what is already stored.
        metadata.insert(JOURNAL_SEQ.into(), Value::from(entry.seq));
        if let Some(s) = req.session_id {
            metadata.insert("session_id".into(), Value::String(s));
        }
        if prepared.redactions > 0 {
            metadata.insert("redactions".into(), Value::from(prepared.redactions));
        }
        {
            let mut st = self.stats.lock();
            st.captures_processed += 1;
            st.secrets_redacted += prepared.redactions as u64;
            st.last_capture = Some(at);
        }
        let spans = ai_smartness_capture::units::split(&req.tool, &prepared.content);
        Some(Entry::Capture(Box::new(Prepared {
            tool: req.tool,
            source_type: prepared.source,
            author,
            content: prepared.content,
            extraction,
            at,
            metadata,
            spans,
        })))
    }
}

/// When a journaled entry happened: its own time (clamped to when it was received), or when it
/// was received.
fn entry_time(at: Option<&str>, received_at: DateTime<Utc>) -> DateTime<Utc> {
    at.and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| ai_smartness_capture::admit::clamp_future(d.with_timezone(&Utc), received_at).0)
        .unwrap_or(received_at)
}

fn embedding_text(p: &Prepared) -> String {
    ai_smartness_capture::embedding_text(&p.content, &p.extraction, p.source_type)
}
