//! The memory as a person sees and steers it: threads and bridges listed, shown and edited
//! (`ai threads`, `ai thread`, `ai bridges`, their edits), and search (`ai search`). Each call
//! takes the memory's lock only for the reads or the edit it needs; ranking runs on a blocking
//! thread; an edit answers once it is saved.

use crate::service_error::ServiceError;
use crate::state::MemoryHandle;
use crate::team_sync::TeamSync;
use ai_smartness_capture::source::SourceType;
use ai_smartness_core::memory::decay::{bridge_weight, heaviest_first, thread_weight};
use ai_smartness_core::memory::engine::{normalize_topics, EditError};
use ai_smartness_core::memory::graph::Graph;
use ai_smartness_core::memory::types::{Sharing, ThinkBridge, Thread, ThreadStatus};
use ai_smartness_proto::protocol::{
    BridgeAction, BridgeEdit, BridgesQuery, ErrorCode, StatusFilter, ThreadAction, ThreadEdit,
    ThreadQuery, ThreadsQuery,
};
use ai_smartness_replies::{
    BridgeList, BridgeView, Edited, MessagePage, SearchHit, SearchResults, ThreadDetail,
    ThreadHeader, ThreadList, ThreadSummary,
};
use ai_smartness_team::search::Depth;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// How long `search --team` waits for the team store (a person asked: longer than a prompt's).
const TEAM_SEARCH_BUDGET: Duration = Duration::from_secs(5);

/// Results `ai search` may ask for at most.
const MAX_SEARCH_RESULTS: usize = 200;

#[derive(Clone)]
pub struct MemoryService {
    /// The memory read and edited.
    memory: MemoryHandle,
    /// The team store, for `search --team`.
    team_sync: TeamSync,
}

impl MemoryService {
    pub fn new(memory: MemoryHandle, team_sync: TeamSync) -> MemoryService {
        MemoryService { memory, team_sync }
    }

    /// `ai threads`: those of the status asked (active by default), heaviest first.
    pub fn threads(&self, q: &ThreadsQuery) -> ThreadList {
        let filter = q.status.unwrap_or(StatusFilter::Active);
        let now = self.memory.now();
        let mem = self.memory.lock();
        let suspended = mem.graph.count_by_status(ThreadStatus::Suspended);
        let mut list: Vec<&Thread> = mem
            .graph
            .threads()
            .filter(|t| match filter {
                StatusFilter::Active => t.status == ThreadStatus::Active,
                StatusFilter::Suspended => t.status == ThreadStatus::Suspended,
                StatusFilter::Archived => t.status == ThreadStatus::Archived,
                StatusFilter::Live => t.status != ThreadStatus::Archived,
                StatusFilter::All => true,
            })
            .collect();
        list.sort_by(|a, b| heaviest_first(a, b, now));
        let total = list.len();
        let threads = list
            .into_iter()
            .take(q.limit.unwrap_or(usize::MAX))
            .map(|t| thread_summary(t, now))
            .collect();
        ThreadList {
            total,
            threads,
            suspended,
        }
    }

    /// `ai thread ID`: the thread (a merged thread's id names the one that took its messages),
    /// its bridges, and its messages or the page of them asked for.
    pub fn thread(&self, q: &ThreadQuery) -> Result<ThreadDetail, ServiceError> {
        let now = self.memory.now();
        let mem = self.memory.lock();
        let t = mem
            .graph
            .resolve(&q.id)
            .ok_or_else(|| ServiceError::not_found(format!("no thread {}", q.id)))?;
        let bridges = mem
            .graph
            .bridges_of(&t.id)
            .map(|b| bridge_view(b, &mem.graph, now))
            .collect();
        let resolved_from = (t.id != q.id).then(|| q.id.clone());
        // A page is cut before anything is copied: a long thread's other messages (and their
        // vectors) are not cloned under the lock to be dropped.
        let page = (q.offset.is_some() || q.limit.is_some()).then(|| {
            let total = t.messages.len();
            let offset = q.offset.unwrap_or(0).min(total);
            let end = offset
                .saturating_add(q.limit.unwrap_or(usize::MAX))
                .min(total);
            (offset..end, MessagePage { offset, total })
        });
        Ok(thread_detail(t, now, bridges, resolved_from, page))
    }

    /// A person's edit of a thread, answered once it is saved.
    pub async fn edit_thread(&self, e: ThreadEdit) -> Result<Edited<ThreadAction>, ServiceError> {
        let now = self.memory.now();
        let (id, result) = {
            let mut mem = self.memory.lock();
            // The id of a merged thread names the thread that took its messages; a delete acts
            // on exactly the id given (what is left of a merge goes, nothing else).
            let id = match e.action {
                ThreadAction::Delete => e.id.clone(),
                _ => mem
                    .graph
                    .resolve(&e.id)
                    .map_or_else(|| e.id.clone(), |t| t.id.clone()),
            };
            let id = id.as_str();
            let result = match (e.action, e.title.as_deref()) {
                (ThreadAction::Rename, Some(title)) => mem.rename_thread(id, title),
                (ThreadAction::Rename, None) => {
                    Err(EditError::Invalid("rename needs a title".into()))
                }
                (_, Some(_)) => Err(EditError::Invalid("only rename takes a title".into())),
                (ThreadAction::Suspend, None) => {
                    mem.set_thread_status(id, ThreadStatus::Suspended, now)
                }
                (ThreadAction::Reactivate, None) => {
                    mem.set_thread_status(id, ThreadStatus::Active, now)
                }
                (ThreadAction::Archive, None) => {
                    mem.set_thread_status(id, ThreadStatus::Archived, now)
                }
                (ThreadAction::Delete, None) => mem.delete_thread(id).map(|_| ()),
                (ThreadAction::Pin, None) => mem.set_thread_pinned(id, true),
                (ThreadAction::Unpin, None) => mem.set_thread_pinned(id, false),
                (ThreadAction::NeverRecall, None) => mem.set_thread_never_recall(id, true),
                (ThreadAction::AllowRecall, None) => mem.set_thread_never_recall(id, false),
                (ThreadAction::Share, None) => mem.set_thread_sharing(id, Sharing::Shared),
                (ThreadAction::Private, None) => mem.set_thread_sharing(id, Sharing::Private),
                (ThreadAction::ProjectSharing, None) => {
                    mem.set_thread_sharing(id, Sharing::Project)
                }
            };
            (id.to_string(), result)
        };
        let edited = self
            .saved(
                result,
                Edited {
                    id,
                    action: e.action,
                },
            )
            .await?;
        tracing::info!("thread {} edited: {:?}", edited.id, edited.action);
        Ok(edited)
    }

    /// `ai bridges`: all of them, or one thread's, strongest first.
    pub fn bridges(&self, q: &BridgesQuery) -> Result<BridgeList, ServiceError> {
        let now = self.memory.now();
        let mem = self.memory.lock();
        if let Some(t) = &q.thread {
            if mem.graph.thread(t).is_none() {
                return Err(ServiceError::not_found(format!("no thread {t}")));
            }
        }
        let mut list: Vec<&ThinkBridge> = match &q.thread {
            Some(t) => mem.graph.bridges_of(t).collect(),
            None => mem.graph.bridges().collect(),
        };
        list.sort_by(|a, b| {
            bridge_weight(b, now)
                .total_cmp(&bridge_weight(a, now))
                .then_with(|| a.id.cmp(&b.id))
        });
        let bridges: Vec<BridgeView> = list
            .iter()
            .map(|b| bridge_view(b, &mem.graph, now))
            .collect();
        Ok(BridgeList {
            total: bridges.len(),
            bridges,
        })
    }

    /// `ai bridge ID`.
    pub fn bridge(&self, id: &str) -> Result<BridgeView, ServiceError> {
        let now = self.memory.now();
        let mem = self.memory.lock();
        mem.graph
            .bridge(id)
            .map(|b| bridge_view(b, &mem.graph, now))
            .ok_or_else(|| ServiceError::not_found(format!("no bridge {id}")))
    }

    /// A person's edit of a bridge, answered once it is saved.
    pub async fn edit_bridge(&self, e: BridgeEdit) -> Result<Edited<BridgeAction>, ServiceError> {
        let now = self.memory.now();
        let result = {
            let mut mem = self.memory.lock();
            match e.action {
                BridgeAction::Delete => mem.delete_bridge(&e.id).map(|_| ()),
                BridgeAction::Invalidate => mem.set_bridge_valid(&e.id, false, now),
                BridgeAction::Validate => mem.set_bridge_valid(&e.id, true, now),
            }
        };
        self.saved(
            result,
            Edited {
                id: e.id,
                action: e.action,
            },
        )
        .await
    }

    /// An edit's outcome: `edited` once the change is saved; a storage error when it is only in
    /// memory (the next flush that works saves it); the edit's own error when it was refused.
    async fn saved<A>(
        &self,
        applied: Result<(), EditError>,
        edited: Edited<A>,
    ) -> Result<Edited<A>, ServiceError> {
        applied?;
        if !self.memory.flush().await {
            return Err(ServiceError::storage(
                "the change is in memory but could not be saved yet",
            ));
        }
        Ok(edited)
    }

    /// `ai search QUERY`: the threads closest to it, best first; with `team`, the team store's
    /// matches too (within [`TEAM_SEARCH_BUDGET`]).
    pub async fn search(
        &self,
        query: &str,
        limit: usize,
        team: bool,
    ) -> Result<SearchResults, ServiceError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(ServiceError::bad_request("empty query"));
        }
        let limit = limit.clamp(1, MAX_SEARCH_RESULTS);
        let extraction = self
            .memory
            .extractor()
            .extract(query, SourceType::Prompt)
            .unwrap_or_default();
        let words: Vec<String> = query.split_whitespace().map(str::to_string).collect();
        let topics = normalize_topics(
            extraction
                .subjects
                .iter()
                .chain(&extraction.key_concepts)
                .chain(words.iter()),
        );
        let vectors = self
            .memory
            .embed_query(query.to_string())
            .await
            .map_err(|e| ServiceError::new(ErrorCode::Embedding, e.to_string()))?;
        let now = self.memory.now();
        let team = if team {
            let terms = crate::team_sync::lexical_terms(vectors.stems(), &topics);
            Some(
                self.team_sync
                    .search(
                        &terms,
                        &vectors.embedding,
                        limit,
                        TEAM_SEARCH_BUDGET,
                        Depth::Asked,
                    )
                    .await,
            )
        } else {
            None
        };
        // Ranking every thread is CPU work under the memory's lock: on a blocking thread.
        let memory = self.memory.clone();
        let embedding = vectors.embedding;
        let results = tokio::task::spawn_blocking(move || {
            let mem = memory.lock();
            mem.rank(&embedding, &topics, limit)
                .into_iter()
                .filter_map(|(id, score)| {
                    let t = mem.graph.thread(&id)?;
                    Some(SearchHit {
                        thread: thread_summary(t, now),
                        score: round3(score),
                    })
                })
                .collect()
        })
        .await
        .map_err(|e| ServiceError::internal(format!("search panicked: {e}")))?;
        Ok(SearchResults {
            query: query.to_string(),
            results,
            team,
        })
    }
}

pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// What a thread's listing line and its page share.
fn thread_header(t: &Thread, now: DateTime<Utc>) -> ThreadHeader {
    ThreadHeader {
        id: t.id.clone(),
        title: t.title.clone(),
        status: t.status.as_str().to_string(),
        weight: round3(thread_weight(t, now)),
        origin_type: t.origin_type,
        parent_id: t.parent_id.clone(),
        last_active: t.last_active.to_rfc3339(),
        created_at: t.created_at.to_rfc3339(),
        activation_count: t.activation_count,
        summary: t.summary.clone(),
        pinned: t.pinned,
        never_recall: t.never_recall,
    }
}

/// One line of `ai threads`.
pub fn thread_summary(t: &Thread, now: DateTime<Utc>) -> ThreadSummary {
    ThreadSummary {
        header: thread_header(t, now),
        messages: t.messages.len(),
        topics: t.topics.iter().take(6).cloned().collect(),
    }
}

/// `ai thread ID`: everything but the raw embedding, with its bridges; with `page`, only the
/// messages in its range.
pub fn thread_detail(
    t: &Thread,
    now: DateTime<Utc>,
    bridges: Vec<BridgeView>,
    resolved_from: Option<String>,
    page: Option<(std::ops::Range<usize>, MessagePage)>,
) -> ThreadDetail {
    let (messages, page) = match page {
        Some((range, page)) => (
            t.messages.get(range).map(<[_]>::to_vec).unwrap_or_default(),
            Some(page),
        ),
        None => (t.messages.clone(), None),
    };
    ThreadDetail {
        header: thread_header(t, now),
        messages,
        topics: t.topics.clone(),
        drift_history: t.drift_history.clone(),
        child_ids: t.child_ids.clone(),
        decisions: t.decisions.clone(),
        questions: t.questions.clone(),
        embedded: t.embedding.is_some(),
        // What the thread is about now (its title comes from these unless a person or an LLM
        // wrote it), and what is left of a merge.
        title_by: t.title_by,
        profile: t.profile.clone(),
        merged_into: t.merged_into.clone(),
        bridges,
        resolved_from,
        page,
    }
}

/// A bridge as `ai bridges` shows it, with the titles of the threads it joins.
pub fn bridge_view(b: &ThinkBridge, g: &Graph, now: DateTime<Utc>) -> BridgeView {
    let title = |id: &str| g.thread(id).map(|t| t.title.clone()).unwrap_or_default();
    BridgeView {
        id: b.id.clone(),
        source_id: b.source_id.clone(),
        source_title: title(&b.source_id),
        target_id: b.target_id.clone(),
        target_title: title(&b.target_id),
        relation_type: b.relation_type,
        status: b.status.as_str().to_string(),
        weight: round3(bridge_weight(b, now)),
        confidence: round3(b.confidence),
        shared_concepts: b.shared_concepts.clone(),
        reason: b.reason.clone(),
        propagated_from: b.propagated_from.clone(),
        propagation_depth: b.propagation_depth,
        use_count: b.use_count,
        last_used: b.last_used.map(|d| d.to_rfc3339()),
        created_at: b.created_at.to_rfc3339(),
    }
}
