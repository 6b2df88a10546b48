//! What the capture worker hands the LLM: the jobs, made from where a capture was placed.

use super::*;
/// Jobs waiting for the LLM at most; beyond, new jobs are skipped and counted.
pub const QUEUE_CAPACITY: usize = 256;
/// Bridges typed in one call.
pub const RELATION_BATCH: usize = 8;
/// A reachability result older than this is refreshed in the background when `ai health` asks.
pub const REACH_TTL_SECS: i64 = 60;
/// Capture-thread/suspended-thread pairs already asked about are not asked again (bounded).
pub(super) const MAX_ASKED_PAIRS: usize = 4096;
/// Recent messages per thread quoted in a synthesis prompt.
pub(super) const SYNTHESIS_RECENT: usize = 3;

/// One piece of background work for the LLM.
#[derive(Debug, Clone)]
pub enum Job {
    /// Extract a stored capture and refine its thread.
    Refine(RefineJob),
    /// Decide an uncertain coherence with a Glob/Grep result.
    Coherence(CoherenceJob),
    /// Decide a borderline reactivation.
    Reactivation(ReactivationJob),
    /// Type new gossip bridges (batched by the task).
    Bridges(Vec<String>),
}

/// See [`Job::Refine`].
#[derive(Debug, Clone)]
pub struct RefineJob {
    /// The thread the capture went to.
    pub thread_id: String,
    /// The stored message.
    pub message_id: String,
    /// The thread's title just after the capture was placed (a later rename wins).
    pub title_before: String,
    /// Which extraction prompt to use.
    pub source: SourceType,
    /// The prepared (cleaned, redacted) content.
    pub content: Arc<str>,
    /// What the local extractor found, replaced by the LLM's.
    pub local: Extraction,
}

/// See [`Job::Coherence`].
#[derive(Debug, Clone)]
pub struct CoherenceJob {
    /// The thread the capture started.
    pub child: String,
    /// The Glob/Grep thread it may belong under.
    pub parent: String,
    /// The local score (orphan band), for the log.
    pub local_score: f64,
    /// The capture's source type.
    pub source: SourceType,
    /// The prepared content.
    pub content: Arc<str>,
}

/// See [`Job::Reactivation`].
#[derive(Debug, Clone)]
pub struct ReactivationJob {
    /// The suspended thread.
    pub suspended: String,
    /// The thread the capture went to (linked to the suspended one on a yes).
    pub related: String,
    /// The local similarity (borderline band), for the log.
    pub similarity: f64,
    /// The prepared content.
    pub content: Arc<str>,
}

/// What the worker knows of one placed capture, to derive the LLM's jobs from.
#[derive(Debug)]
pub struct Placed<'a> {
    /// Where the local pipeline put it.
    pub outcome: &'a Outcome,
    /// Its source type.
    pub source: SourceType,
    /// Its prepared content.
    pub content: &'a str,
    /// The local extraction.
    pub local: Extraction,
    /// Its thread's title just after.
    pub title_before: String,
}

/// The jobs one placed capture gives the LLM: always an extraction; a coherence check when the
/// local score was uncertain and the capture started a thread; a reactivation question for a
/// borderline suspended thread; the new gossip bridges to type.
pub fn jobs_for(p: Placed<'_>) -> Vec<Job> {
    let o = p.outcome;
    // A repeat stored nothing new: nothing to refine, no token spent on it.
    if o.decision == Decision::Repeat {
        return Vec::new();
    }
    let content: Arc<str> = Arc::from(p.content);
    let mut jobs = vec![Job::Refine(RefineJob {
        thread_id: o.thread_id.clone(),
        message_id: o.message_id.clone(),
        title_before: p.title_before,
        source: p.source,
        content: content.clone(),
        local: p.local,
    })];
    if let (Some((score, CoherenceBand::Orphan)), Some(parent), Decision::NewThread) =
        (o.coherence, &o.context_thread, o.decision)
    {
        jobs.push(Job::Coherence(CoherenceJob {
            child: o.thread_id.clone(),
            parent: parent.clone(),
            local_score: score,
            source: p.source,
            content: content.clone(),
        }));
    }
    if let Some((suspended, similarity)) = &o.borderline_suspended {
        jobs.push(Job::Reactivation(ReactivationJob {
            suspended: suspended.clone(),
            related: o.thread_id.clone(),
            similarity: *similarity,
            content,
        }));
    }
    if !o.new_bridges.is_empty() {
        jobs.push(Job::Bridges(o.new_bridges.clone()));
    }
    jobs
}
