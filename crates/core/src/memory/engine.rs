//! The memory engine: the thread decision (NEW_THREAD / CONTINUE / FORK / REACTIVATE), child
//! linking after Glob/Grep, gossip bridges with bounded propagation,
//! pruning, and the edits a person makes. Pure state: no socket, no disk, no clock of its own.

use super::decay::{self, boost_bridge, boost_thread, bridge_status_at, thread_weight};
use super::graph::Graph;
use super::ids::new_id;
use super::similarity::{shared_topics, similarity, GOSSIP_THRESHOLD};
use super::subject::{self, Affinity, Background, Probe, Target, CONTINUE_BAR, REACTIVATE_BAR};
use super::types::{
    Author, BridgeStatus, BridgeType, Message, Sharing, ThinkBridge, Thread, ThreadStatus,
    TitleSource, Unit,
};
use crate::retrieve::index::SearchIndex;
use crate::retrieve::related::WordVectors;
use crate::retrieve::table::ThreadTable;
use ai_smartness_capture::extract::Extraction;
use ai_smartness_capture::source::{origin_for_source, OriginType, SourceType};
use ai_smartness_vectors::normalize;
use ai_smartness_vectors::quant::QVec;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Topics a thread keeps (most recent first): old focus fades out.
pub(super) const MAX_THREAD_TOPICS: usize = 24;
/// Decisions and questions a thread keeps.
pub(super) const MAX_THREAD_NOTES: usize = 12;
/// A thread's summary stays short enough to inject.
pub(super) const MAX_SUMMARY_CHARS: usize = 480;
/// Propagated bridges stop at this depth (A-B + B-C → A-C at depth 1, never further).
const MAX_PROPAGATION_DEPTH: u32 = 1;
/// A thread's vector follows its last messages: a running mean over at most this many, then a
/// moving average, so a long thread keeps a focus instead of drifting to the average of
/// everything (which would make it the closest thread to every new capture).
const FOCUS_WINDOW: f32 = 10.0;
/// A propagated bridge needs at least this confidence (product of the two it comes from).
const MIN_PROPAGATED_CONFIDENCE: f64 = 0.3;
/// At most this many bridges propagated from one new bridge.
const MAX_PROPAGATIONS: usize = 5;
/// At most this many direct bridges made by one gossip round (the strongest): a thread similar
/// to everything would otherwise link to everything, and the links would mean nothing.
const MAX_GOSSIP_BRIDGES: usize = 8;
/// A Glob/Grep result waits this long for the content it introduces.
pub const PENDING_CONTEXT_TTL_MINUTES: i64 = 10;
/// Coherence above this makes the next content a child of the Glob/Grep thread.
pub const COHERENCE_CHILD: f64 = 0.6;
/// Coherence under this means the pending context was noise and is forgotten.
pub const COHERENCE_FORGET: f64 = 0.3;
/// A suspended thread at least this similar to a capture is a borderline match: too weak to
/// reactivate on its own, worth asking an LLM about.
pub const BORDERLINE_REACTIVATE_MIN: f64 = 0.15;
/// Top of the borderline band.
pub const BORDERLINE_REACTIVATE_MAX: f64 = 0.35;
/// Confidence of the bridge an LLM-confirmed borderline reactivation makes: the LLM judged the
/// two related, so the link is as strong as a sibling's, whatever the low similarity said.
pub const REACTIVATION_BRIDGE_CONFIDENCE: f64 = 0.6;
/// A capture scoring less than this above the bar to continue may fork (see `is_fork`).
const FORK_BAND: f64 = 0.1;
/// ...when its topics agree with the thread's less than this.
const FORK_MAX_TOPIC_AGREEMENT: f64 = 0.05;
/// A tool result or an answer this soon after the previous capture of its session serves the
/// same request: it goes where that capture went, whatever file or command it reads. Only a
/// prompt (a person's new request) or a pause this long decides afresh.
pub const EPISODE_GAP_MINUTES: i64 = 10;
/// Longest title an edit may set (`ai thread --rename` and LLM titles alike).
pub(super) const MAX_TITLE_CHARS: usize = 200;

/// One prepared capture, ready to be placed in the memory.
#[derive(Debug, Clone)]
pub struct Capture {
    pub tool: String,
    pub source_type: SourceType,
    pub author: Author,
    /// Cleaned and redacted.
    pub content: String,
    pub extraction: Extraction,
    /// The content's embedding (may be empty when embedding failed).
    pub embedding: Vec<f32>,
    pub at: DateTime<Utc>,
    pub metadata: Map<String, Value>,
    /// Its units, when it was cut into several (see [`Unit`]), with their embeddings.
    pub units: Vec<Unit>,
}

impl Capture {
    /// The capture's terms for the thread decision: its topics and the folders it names.
    pub fn terms(&self) -> Vec<String> {
        let file = self.metadata.get("file_path").and_then(Value::as_str);
        subject::capture_terms(&self.topics(), &subject::places(&self.content, file))
    }

    /// The capture's topics: subjects and key concepts, lowercase, deduplicated, ≥ 3 chars.
    pub fn topics(&self) -> Vec<String> {
        normalize_topics(
            self.extraction
                .subjects
                .iter()
                .chain(&self.extraction.key_concepts),
        )
    }
}

/// Lowercase, trimmed, at least 3 characters, first occurrence kept.
pub fn normalize_topics<'a>(raw: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in raw {
        let t = t.trim().to_lowercase();
        if t.chars().count() >= 3 && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Where a capture went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Decision {
    /// The same text as a message already stored: that message counts one more sighting
    /// (`metadata.repeats`, `metadata.last_seen`) instead of a copy being stored.
    Repeat,
    NewThread,
    Continue,
    Fork,
    Reactivate,
    /// A child of the pending Glob/Grep thread (coherence above 0.6).
    Child,
}

/// The coherence band of child linking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoherenceBand {
    Child,
    Orphan,
    Forget,
}

impl CoherenceBand {
    pub fn of(score: f64) -> CoherenceBand {
        if score > COHERENCE_CHILD {
            CoherenceBand::Child
        } else if score >= COHERENCE_FORGET {
            CoherenceBand::Orphan
        } else {
            CoherenceBand::Forget
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub decision: Decision,
    pub thread_id: String,
    pub message_id: String,
    /// Similarity with the thread it joined (0 for a new thread).
    pub similarity: f64,
    pub bridges_created: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coherence: Option<(f64, CoherenceBand)>,
    /// The Glob/Grep thread the coherence was scored against, so an LLM can revisit an
    /// uncertain (orphan-band) score later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_thread: Option<String>,
    /// The best suspended thread and its similarity when it lies in the borderline band
    /// (0.15–0.35) and was not reactivated: an LLM may decide later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borderline_suspended: Option<(String, f64)>,
    /// Direct EXTENDS bridges gossip made for this capture, which an LLM may retype.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_bridges: Vec<String>,
}

/// A Glob/Grep result waiting for the content it introduces.
#[derive(Debug, Clone)]
pub struct PendingContext {
    pub thread_id: String,
    pub embedding: Option<QVec>,
    pub topics: Vec<String>,
    pub at: DateTime<Utc>,
}

/// Scores the coherence of a content with a pending context, locally (an LLM can take over
/// behind the same signature): the original similarity, capped at 1.
pub fn local_coherence(pending: &PendingContext, capture: Option<&QVec>, topics: &[String]) -> f64 {
    similarity(pending.embedding.as_ref(), capture, &pending.topics, topics).min(1.0)
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PruneReport {
    pub suspended_by_decay: usize,
    pub suspended_by_quota: usize,
    pub bridges_deleted: usize,
    pub bridges_weakened: usize,
    pub bridges_restored: usize,
    pub active_threads: usize,
    pub bridges: usize,
}

/// Edits refused by the engine.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EditError {
    #[error("no thread {0}")]
    NoThread(String),
    #[error("no bridge {0}")]
    NoBridge(String),
    #[error("{0}")]
    Invalid(String),
}

/// The memory: the graph plus the short-lived state of the capture flow.
#[derive(Debug, Default)]
pub struct Memory {
    pub graph: Graph,
    /// The last Glob/Grep result, waiting for its follow-up (expires after 10 minutes).
    pub pending: Option<PendingContext>,
    /// BM25 over every message, kept current as messages arrive and threads go.
    pub index: SearchIndex,
    /// The embedding of each word the messages use, for related words; filled by the daemon
    /// (see [`crate::retrieve::related`]).
    pub words: WordVectors,
    /// The mean of every message's vector: what the whole memory shares, taken off before
    /// comparing a capture with a thread.
    background: Background,
    /// The thread the previous capture went to: work goes on where it was.
    last_placed: Option<String>,
    /// When the previous capture was made, and in which session: a request's work is the
    /// captures that follow its prompt closely, in its session ([`EPISODE_GAP_MINUTES`]).
    last_placed_at: Option<(DateTime<Utc>, Option<String>)>,
    /// The previous capture was tool work or an answer, not a prompt.
    previous_was_work: bool,
    /// The session of the previous capture has made requests (prompts): its tool results serve
    /// them. (Tool results with no prompt before them in their session, as from a client that
    /// sends none, are placed one by one, by what each is about.)
    in_request: bool,
    /// A person made a request too short to keep ("continue", "fully verify", "ok merge"),
    /// when, and in which session: nothing of it is stored, but the work that follows serves a
    /// new request, so the next capture of that session is placed by what it is about, not
    /// by the request before.
    request_mark: Option<(DateTime<Utc>, Option<String>)>,
    /// What ranking reads of every thread, in arrays ([`Memory::sync_table`] keeps it current).
    table: ThreadTable,
}

/// The search index and ranking's table built from every thread, as at start: the threads'
/// changes so far are in both.
fn indexes_of(graph: &mut Graph) -> (SearchIndex, ThreadTable) {
    let index = SearchIndex::build(graph);
    graph.take_changed_threads();
    let table = ThreadTable::build(graph, &index);
    (index, table)
}

impl Memory {
    /// The index takes thread `id`'s message vectors again (they were embedded again in
    /// place).
    pub fn refresh_vectors(&mut self, id: &str) {
        if let Some(t) = self.graph.thread(id) {
            self.index.refresh_vectors(id, &t.messages);
        }
    }

    /// [`Memory::refresh_vectors`] for every thread at once, after the whole memory was
    /// embedded again (perhaps at another length).
    pub fn refresh_all_vectors(&mut self) {
        self.index.refresh_all_vectors(&self.graph);
    }

    /// Ranking's table of the threads (current or not: ranking checks).
    pub fn table(&self) -> &ThreadTable {
        &self.table
    }

    /// Brings ranking's table up to date with the threads changed since it last was: cheap,
    /// and what keeps a prompt's ranking from reading every thread (call it, under the same
    /// lock, before ranking).
    pub fn sync_table(&mut self) {
        self.table.sync(&mut self.graph, &self.index);
    }

    /// Builds the search index again from the threads when the docs that died in it (threads
    /// merged or split, each indexed again) reach a fifth of the live ones: dead docs still
    /// count in every term's document frequency, and a thread merged into again and again
    /// (consolidation runs at every prune) would skew what each word weighs. As a load builds
    /// it, so the index is the one the next start would have.
    pub fn compact_index_if_stale(&mut self) {
        if self.index.dead_docs() * 5 < self.index.live_docs().max(1) {
            return;
        }
        (self.index, self.table) = indexes_of(&mut self.graph);
        let words = &self.words;
        self.index.retain_new_words(|stem| !words.contains(stem));
    }

    pub fn new(mut graph: Graph) -> Memory {
        let (index, table) = indexes_of(&mut graph);
        let mut background = Background::default();
        for m in graph.threads().flat_map(|t| &t.messages) {
            if let Some(e) = &m.embedding {
                background.add(&e.to_f32());
            }
        }
        Memory {
            graph,
            pending: None,
            index,
            words: WordVectors::default(),
            background,
            last_placed: None,
            last_placed_at: None,
            previous_was_work: false,
            in_request: false,
            request_mark: None,
            table,
        }
    }

    /// Word vectors kept from an earlier run (the word file): their words no longer wait for
    /// one. (At start every term of the index is new to it.)
    pub fn load_word_vectors(&mut self, rows: Vec<(String, QVec)>) {
        for (stem, v) in &rows {
            self.words.insert(stem, v);
        }
        let words = &self.words;
        self.index.retain_new_words(|stem| !words.contains(stem));
    }

    /// A request with nothing to keep was made in `session` at `at` (see `request_mark`).
    pub fn mark_request(&mut self, at: DateTime<Utc>, session: Option<String>) {
        self.request_mark = Some((at, session));
    }

    /// Places a capture: decides its thread, updates it, links it by gossip.
    pub fn ingest(&mut self, cap: Capture) -> Outcome {
        if let Some(outcome) = self.record_repeat(&cap) {
            return outcome;
        }
        // The first capture after a request mark, in the mark's session, starts that request
        // (another session's capture leaves the mark for it).
        let marked = self.request_mark.as_ref().is_some_and(|(at, session)| {
            cap.at >= *at
                && match (session.as_deref(), session_of(&cap).as_deref()) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        });
        if marked {
            self.request_mark = None;
        }
        let topics = cap.topics();
        // Topics most threads share (a project's name) would glue every capture to every thread.
        let specific = self.graph.specific_topics(&topics);
        let qemb = (!cap.embedding.is_empty()).then(|| QVec::from_unit(&cap.embedding));
        let emb = qemb.as_ref();
        let is_context = ai_smartness_capture::source::is_context_tool(&cap.tool);

        // Child linking: the first non-context content after a Glob/Grep result.
        let mut coherence = None;
        let mut context_thread = None;
        let mut child_of = None;
        if !is_context {
            if let Some(p) = self.pending.take() {
                let fresh = cap.at - p.at <= Duration::minutes(PENDING_CONTEXT_TTL_MINUTES)
                    && cap.at >= p.at;
                if fresh && self.graph.thread(&p.thread_id).is_some() {
                    let score = local_coherence(&p, emb, &specific);
                    let band = CoherenceBand::of(score);
                    coherence = Some((score, band));
                    context_thread = Some(p.thread_id.clone());
                    if band == CoherenceBand::Child {
                        child_of = Some((p.thread_id.clone(), score));
                    }
                }
            }
        }

        // The best active and the best suspended thread by what each is about now.
        let terms = cap.terms();
        let mean = self.background.mean();
        let probe = Probe {
            vector: (!cap.embedding.is_empty()).then_some(cap.embedding.as_slice()),
            terms: &terms,
            at: cap.at,
        };
        let scorer = subject::Scorer::new(&probe, &mean, self.graph.idf());
        // A person's request after a run of tool work opens a new step: it is placed by what
        // it is about, without the lift the thread of the work just done gets otherwise (a
        // conversation's turns, one after another, keep it).
        // A request too short to say much ("use treefmt") is kept but weighs as its mark does:
        // it goes with the work it names or the work just done, and the capture after it is
        // placed by what it is about (unless it named nothing the memory holds and opened a
        // thread: then the work after it is that new step's).
        let brief_request = is_brief_request(&cap);
        // A recap the client sent as the user's turn names every subject so far: it weighs as
        // a brief request's mark does, and never opens a step of its own.
        let recap = is_recap(&cap);
        let weighs_as_mark = brief_request || recap;
        let keeps_going =
            !(cap.source_type == SourceType::Prompt && self.previous_was_work && !weighs_as_mark)
                && self.same_session_as_previous(&cap);
        let mut best_active: Option<(&str, Affinity)> = None;
        let mut best_suspended: Option<(&str, Affinity)> = None;
        for t in self.graph.threads() {
            let slot = match t.status {
                ThreadStatus::Active => &mut best_active,
                ThreadStatus::Suspended => &mut best_suspended,
                ThreadStatus::Archived => continue,
            };
            let target = Target {
                focus: t.embedding.as_ref(),
                profile: &t.profile,
                last_active: t.last_active,
                current: keeps_going && self.last_placed.as_deref() == Some(t.id.as_str()),
            };
            let a = scorer.score(&target);
            if slot.is_none_or(|(_, b)| a.score > b.score) {
                *slot = Some((t.id.as_str(), a));
            }
        }
        let fork_of = best_active
            .filter(|(_, a)| a.score > CONTINUE_BAR && Self::is_fork(a, &topics))
            .map(|(id, _)| id.to_string());
        let best_active = best_active.map(|(id, a)| (id.to_string(), a.score));
        let best_suspended = best_suspended.map(|(id, a)| (id.to_string(), a.score));
        let borderline_suspended = best_suspended
            .clone()
            .filter(|(_, s)| (BORDERLINE_REACTIVATE_MIN..=BORDERLINE_REACTIVATE_MAX).contains(s));

        let same_session = self.same_session_as_previous(&cap);
        let episode = (!marked)
            .then(|| self.episode_thread(&cap))
            .flatten()
            .map(|id| {
                let a = self.graph.thread(&id).map_or(0.0, |t| {
                    scorer
                        .score(&Target {
                            focus: t.embedding.as_ref(),
                            profile: &t.profile,
                            last_active: t.last_active,
                            current: true,
                        })
                        .score
                });
                (id, a)
            });

        let (decision, thread_id, sim) = if ai_smartness_capture::source::is_note(&cap.tool) {
            // A note someone asked to keep is a subject of its own, titled as they said.
            let id = self.new_thread(&cap, &topics, &terms, None, OriginType::Prompt);
            let title = cap
                .metadata
                .get("title")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty());
            if let Some(title) = title {
                // The daemon checks the title's length before journaling the note.
                if let Err(e) = self.rename_thread(&id, title) {
                    tracing::warn!("a note's title was not kept: {e}");
                }
            }
            (Decision::NewThread, id, 0.0)
        } else if let Some((id, score)) = episode {
            // Part of the request the previous capture served: no thread of its own for a
            // file read or a command along the way.
            self.add_to_thread(&id, &cap, &topics, &terms, false);
            (Decision::Continue, id, score)
        } else if let Some((parent, score)) = child_of {
            let id = self.new_thread(&cap, &topics, &terms, Some(&parent), OriginType::Split);
            self.link(
                &id,
                &parent,
                BridgeType::ChildOf,
                score,
                "follows the Glob/Grep result it came from",
                cap.at,
            );
            (Decision::Child, id, score)
        } else if let Some((sid, s)) = best_suspended
            .as_ref()
            .filter(|(_, s)| *s > REACTIVATE_BAR)
            .filter(|(_, s)| best_active.as_ref().is_none_or(|(_, a)| s > a))
        {
            self.graph.set_status(sid, ThreadStatus::Active);
            self.add_to_thread(sid, &cap, &topics, &terms, true);
            (Decision::Reactivate, sid.clone(), *s)
        } else if let Some((aid, s)) = best_active.filter(|(_, s)| *s > CONTINUE_BAR) {
            if fork_of.as_deref() == Some(aid.as_str())
                && self
                    .graph
                    .thread(&aid)
                    .is_some_and(|t| t.messages.len() >= 2)
            {
                let id = self.new_thread(&cap, &topics, &terms, Some(&aid), OriginType::Split);
                self.link(
                    &id,
                    &aid,
                    BridgeType::ChildOf,
                    s.min(1.0),
                    "sub-topic of its parent thread",
                    cap.at,
                );
                (Decision::Fork, id, s)
            } else {
                self.add_to_thread(&aid, &cap, &topics, &terms, false);
                (Decision::Continue, aid, s)
            }
        } else {
            let origin = origin_for_source(cap.source_type);
            let id = self.new_thread(&cap, &topics, &terms, None, origin);
            (Decision::NewThread, id, 0.0)
        };

        // A brief request that opened a thread of its own named a new step: the work after it
        // is that step's, as after any request. One that joined a thread leaves the work after
        // it to be placed by what it is about; so does a recap, which names every step.
        if recap || (brief_request && decision != Decision::NewThread) {
            self.request_mark = Some((cap.at, session_of(&cap)));
        }
        self.last_placed = Some(thread_id.clone());
        self.last_placed_at = Some((cap.at, session_of(&cap)));
        self.previous_was_work = cap.source_type != SourceType::Prompt;
        self.in_request =
            marked || cap.source_type == SourceType::Prompt || (self.in_request && same_session);
        if !cap.embedding.is_empty() {
            self.background.add(&cap.embedding);
        }
        if is_context {
            self.pending = Some(PendingContext {
                thread_id: thread_id.clone(),
                embedding: qemb.clone(),
                topics: topics.clone(),
                at: cap.at,
            });
        }

        let message_id = self
            .graph
            .thread(&thread_id)
            .and_then(|t| t.messages.last())
            .map(|m| m.id.clone())
            .unwrap_or_default();
        let (bridges_created, new_bridges) = self.gossip_with_ids(&thread_id, cap.at);
        Outcome {
            decision,
            thread_id,
            message_id,
            similarity: sim,
            bridges_created,
            coherence,
            context_thread,
            borderline_suspended,
            new_bridges,
        }
    }

    /// A sub-topic: close enough to continue (by its vector or its folders), but saying
    /// something the thread's recent topics do not: none of its own topics agree with them.
    fn is_fork(a: &Affinity, topics: &[String]) -> bool {
        a.score < CONTINUE_BAR + FORK_BAND
            && a.topics < FORK_MAX_TOPIC_AGREEMENT
            && topics.len() >= 3
    }

    fn new_message(cap: &Capture, terms: &[String]) -> Message {
        let mut metadata = cap.metadata.clone();
        metadata
            .entry("source_type")
            .or_insert_with(|| Value::String(cap.source_type.to_string()));
        metadata
            .entry("tool")
            .or_insert_with(|| Value::String(cap.tool.clone()));
        Message {
            id: new_id("msg", cap.at),
            content: cap.content.clone(),
            source: cap.author,
            timestamp: cap.at,
            metadata,
            embedding: (!cap.embedding.is_empty()).then(|| QVec::from_unit(&cap.embedding)),
            terms: terms.to_vec(),
            units: cap.units.clone(),
        }
    }

    pub(super) fn new_thread(
        &mut self,
        cap: &Capture,
        topics: &[String],
        terms: &[String],
        parent: Option<&str>,
        origin: OriginType,
    ) -> String {
        let id = new_id("thread", cap.at);
        // A fork inherits its parent's current weight.
        let weight = parent
            .and_then(|p| self.graph.thread(p))
            .map(|p| thread_weight(p, cap.at))
            .unwrap_or(decay::MAX_WEIGHT);
        let first = Self::new_message(cap, terms);
        let mut profile = Vec::new();
        subject::fold_profile(&mut profile, &first.terms);
        let title = self
            .local_title(&profile, &[], &[cap.content.as_str()], None)
            .unwrap_or_else(|| fallback_title(cap));
        let first = Self::new_message(cap, terms);
        self.index.add(&id, 0, &first);
        let thread = Thread {
            id: id.clone(),
            title,
            status: ThreadStatus::Active,
            messages: vec![first],
            summary: truncate_chars(&cap.extraction.summary, MAX_SUMMARY_CHARS),
            topics: topics.iter().take(MAX_THREAD_TOPICS).cloned().collect(),
            origin_type: origin,
            drift_history: Vec::new(),
            parent_id: parent.map(str::to_string),
            child_ids: Vec::new(),
            decisions: cap
                .extraction
                .decisions
                .iter()
                .take(MAX_THREAD_NOTES)
                .cloned()
                .collect(),
            questions: cap
                .extraction
                .questions
                .iter()
                .take(MAX_THREAD_NOTES)
                .cloned()
                .collect(),
            weight,
            weight_at: cap.at,
            created_at: cap.at,
            last_active: cap.at,
            activation_count: 1,
            embedding: (!cap.embedding.is_empty()).then(|| QVec::from_unit(&cap.embedding)),
            pinned: false,
            never_recall: false,
            sharing: Default::default(),
            profile,
            title_by: TitleSource::Local,
            merged_into: None,
        };
        self.graph.insert_thread(thread);
        if let Some(p) = parent.and_then(|p| self.graph.thread_mut(p)) {
            p.child_ids.push(id.clone());
        }
        if let Some(parent) = parent {
            self.link_siblings(&id, parent, cap.at);
        }
        id
    }

    /// The memory's mean vector (what every message shares), shrunk while the memory is small.
    pub(super) fn background_mean(&self) -> Vec<f32> {
        self.background.mean()
    }

    /// The local title for a profile, distinct from every other active thread's title (see
    /// [`subject::said_or_title`]).
    pub(super) fn local_title(
        &self,
        profile: &[subject::ProfileTerm],
        said: &[&str],
        texts: &[&str],
        own_id: Option<&str>,
    ) -> Option<String> {
        let taken = |text: &str| {
            let key = subject::title_key(text);
            let words = text.split_whitespace().count();
            self.graph.threads().any(|t| {
                t.status == ThreadStatus::Active
                    && Some(t.id.as_str()) != own_id
                    // Stemming every title on each capture would hold the memory's lock for
                    // milliseconds in a large memory: only titles that start alike and have as
                    // many words are (a stem keeps a word's first letters).
                    && same_start(&t.title, text)
                    && t.title.split_whitespace().count() == words
                    && subject::title_key(&t.title) == key
            })
        };
        subject::said_or_title(profile, self.graph.idf(), said, texts, taken)
    }

    /// The thread of the request a capture belongs to, when it is not a prompt and follows the
    /// previous capture of its session closely, in a session that makes requests: where that
    /// one went, if still active.
    fn episode_thread(&self, cap: &Capture) -> Option<String> {
        if !self.in_request
            || cap.source_type == SourceType::Prompt
            || ai_smartness_capture::source::is_note(&cap.tool)
        {
            return None;
        }
        let (at, _) = self.last_placed_at.as_ref()?;
        let gap = cap.at - *at;
        // A short report that the work failed often comes after a long wait, and it is about
        // the work it stopped, whatever the wait (read only past the gap: it runs a pattern).
        let waited = gap > Duration::minutes(EPISODE_GAP_MINUTES);
        if gap < Duration::zero()
            || (waited && !ai_smartness_capture::is_short_failure_report(&cap.content))
        {
            return None;
        }
        if !self.same_session_as_previous(cap) {
            return None;
        }
        let id = self.last_placed.as_ref()?;
        self.graph
            .thread(id)
            .filter(|t| t.status == ThreadStatus::Active)
            .map(|t| t.id.clone())
    }

    /// Whether the previous capture came from the capture's session (or either does not say).
    fn same_session_as_previous(&self, cap: &Capture) -> bool {
        let previous = self.last_placed_at.as_ref().and_then(|(_, s)| s.as_deref());
        match (previous, session_of(cap).as_deref()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }

    /// Children of one parent are SIBLINGs.
    pub(super) fn link_siblings(&mut self, child: &str, parent: &str, at: DateTime<Utc>) {
        let siblings: Vec<String> = self
            .graph
            .thread(parent)
            .map(|p| {
                p.child_ids
                    .iter()
                    .filter(|c| *c != child)
                    .take(5)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for s in siblings {
            if self.graph.bridge_between(child, &s).is_none() {
                self.link(
                    child,
                    &s,
                    BridgeType::Sibling,
                    0.6,
                    "children of the same parent thread",
                    at,
                );
            }
        }
    }

    fn add_to_thread(
        &mut self,
        id: &str,
        cap: &Capture,
        topics: &[String],
        terms: &[String],
        reactivation: bool,
    ) {
        let Some(t) = self.graph.thread_mut(id) else {
            return;
        };
        let n = t.messages.len();
        let message = Self::new_message(cap, terms);
        self.index.add(id, t.messages.len(), &message);
        t.messages.push(message);
        boost_thread(t, cap.at);
        t.last_active = t.last_active.max(cap.at);
        t.activation_count = t.activation_count.saturating_add(1);

        if reactivation {
            push_drift(
                &mut t.drift_history,
                format!("{}: reactivated", cap.at.format("%Y-%m-%d %H:%M")),
            );
        }
        let mut merged = topics.to_vec();
        merged.extend(t.topics.iter().filter(|x| !topics.contains(x)).cloned());
        merged.truncate(MAX_THREAD_TOPICS);

        let s = cap.extraction.summary.trim();
        if !s.is_empty() && !t.summary.contains(s) {
            t.summary = if t.summary.is_empty() {
                s.to_string()
            } else {
                format!("{} {}", t.summary, s)
            };
            t.summary = keep_tail_chars(&t.summary, MAX_SUMMARY_CHARS);
        }
        push_bounded(&mut t.decisions, &cap.extraction.decisions);
        push_bounded(&mut t.questions, &cap.extraction.questions);

        // The message's vector as stored (just pushed above), not as the model gave it: the
        // model's last bits depend on what the capture was batched with (padding), and a
        // thread's vector must not depend on how fast captures arrived.
        let stored = t.messages.last().and_then(|m| m.embedding.as_ref());
        if let Some(stored) = stored.map(QVec::to_f32) {
            let old = t.embedding.take().map(|q| q.to_f32());
            let focus = fold_focus(old.as_deref(), n, &stored);
            t.embedding = Some(QVec::from_unit(&focus));
        }
        let mut profile = t.profile.clone();
        if let Some(m) = t.messages.last() {
            subject::fold_profile(&mut profile, &m.terms);
        }
        self.graph.set_topics(id, merged);
        self.graph.set_profile(id, profile);
    }

    pub(super) fn link(
        &mut self,
        source: &str,
        target: &str,
        relation: BridgeType,
        confidence: f64,
        reason: &str,
        at: DateTime<Utc>,
    ) -> Option<String> {
        if source == target || self.graph.bridge_between(source, target).is_some() {
            return None;
        }
        let shared = match (self.graph.thread(source), self.graph.thread(target)) {
            (Some(a), Some(b)) => shared_topics(&a.topics, &b.topics),
            _ => return None,
        };
        let id = new_id("bridge", at);
        self.graph.insert_bridge(ThinkBridge {
            id: id.clone(),
            source_id: source.to_string(),
            target_id: target.to_string(),
            relation_type: relation,
            reason: reason.to_string(),
            shared_concepts: shared,
            confidence: confidence.clamp(0.0, 1.0),
            status: BridgeStatus::Active,
            propagated_from: None,
            propagation_depth: 0,
            use_count: 0,
            last_used: None,
            weight: decay::MAX_WEIGHT,
            weight_at: at,
            created_at: at,
        });
        Some(id)
    }

    /// Gossip: bridges from `id` to every thread above 0.5, then one bounded propagation step.
    pub fn gossip(&mut self, id: &str, at: DateTime<Utc>) -> usize {
        self.gossip_with_ids(id, at).0
    }

    /// [`Memory::gossip`], also returning the direct EXTENDS bridges it made (the ones an LLM
    /// may retype as DEPENDS, CONTRADICTS or REPLACES).
    fn gossip_with_ids(&mut self, id: &str, at: DateTime<Utc>) -> (usize, Vec<String>) {
        let Some(t) = self.graph.thread(id) else {
            return (0, Vec::new());
        };
        let emb = t.embedding.as_ref();
        let own_topics = self.graph.specific_topics(&t.topics);
        let mut candidates: Vec<(String, f64, BridgeType)> = Vec::new();
        for other in self.graph.threads() {
            if other.id == t.id || other.status == ThreadStatus::Archived {
                continue;
            }
            let s = similarity(emb, other.embedding.as_ref(), &own_topics, &other.topics);
            if s <= GOSSIP_THRESHOLD || self.graph.bridge_between(id, &other.id).is_some() {
                continue;
            }
            let relation = if t.parent_id.is_some() && t.parent_id == other.parent_id {
                BridgeType::Sibling
            } else if t.parent_id.as_deref() == Some(other.id.as_str())
                || other.parent_id.as_deref() == Some(id)
            {
                BridgeType::ChildOf
            } else {
                BridgeType::Extends
            };
            candidates.push((other.id.clone(), s, relation));
        }
        candidates.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
        candidates.truncate(MAX_GOSSIP_BRIDGES);
        let mut created = 0;
        let mut extends = Vec::new();
        for (other, s, relation) in candidates {
            let reason = format!("similarity {:.2}", s);
            let Some(bid) = self.link(id, &other, relation, s.min(1.0), &reason, at) else {
                continue;
            };
            created += 1;
            created += self.propagate(&bid, at);
            if relation == BridgeType::Extends {
                extends.push(bid);
            }
        }
        (created, extends)
    }

    /// A-B new, B-C existing → A-C at depth 1 with confidence conf(AB) × conf(BC); the same from
    /// A's side (C-A + A-B → C-B). Propagated bridges never propagate again.
    fn propagate(&mut self, new_bridge: &str, at: DateTime<Utc>) -> usize {
        let Some(ab) = self.graph.bridge(new_bridge).cloned() else {
            return 0;
        };
        if ab.propagation_depth >= MAX_PROPAGATION_DEPTH {
            return 0;
        }
        let mut plans: Vec<(String, String, f64, String)> = Vec::new();
        for (from, via) in [
            (&ab.source_id, &ab.target_id),
            (&ab.target_id, &ab.source_id),
        ] {
            for bc in self.graph.bridges_of(via) {
                if bc.id == ab.id
                    || bc.status == BridgeStatus::Invalid
                    || bc.propagation_depth >= MAX_PROPAGATION_DEPTH
                {
                    continue;
                }
                let Some(c) = bc.other_end(via) else { continue };
                let conf = ab.confidence * bc.confidence;
                if c == from.as_str()
                    || conf < MIN_PROPAGATED_CONFIDENCE
                    || self.graph.bridge_between(from, c).is_some()
                    || plans.iter().any(|p| p.0 == *from && p.1 == c)
                {
                    continue;
                }
                plans.push((from.clone(), c.to_string(), conf, via.clone()));
            }
        }
        plans.sort_by(|x, y| y.2.total_cmp(&x.2));
        plans.truncate(MAX_PROPAGATIONS);
        let mut n = 0;
        for (from, c, conf, via) in plans {
            let reason = format!("propagated through {via}");
            if let Some(id) = self.link(&from, &c, BridgeType::Extends, conf, &reason, at) {
                if let Some(br) = self.graph.bridge_mut(&id) {
                    br.propagated_from = Some(ab.id.clone());
                    br.propagation_depth = ab.propagation_depth + 1;
                }
                n += 1;
            }
        }
        n
    }

    /// Decay + suspension of threads, then the quota (lightest first). Idempotent: weights are
    /// derived from time, only statuses change.
    pub fn prune_threads(&mut self, now: DateTime<Utc>, quota: usize) -> PruneReport {
        let mut report = PruneReport::default();
        let mut active: Vec<(String, f64)> = self
            .graph
            .threads()
            .filter(|t| t.status == ThreadStatus::Active && !t.pinned)
            .map(|t| (t.id.clone(), thread_weight(t, now)))
            .collect();
        // Pinned threads are a person's choice: neither decay nor the quota suspends them,
        // and they do not take the quota's room.
        active.retain(|(id, w)| {
            if *w < decay::THREAD_SUSPEND_THRESHOLD {
                self.graph.set_status(id, ThreadStatus::Suspended);
                report.suspended_by_decay += 1;
                false
            } else {
                true
            }
        });
        if active.len() > quota {
            // Lightest first; ties go to the least recently created.
            active.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            let excess = active.len() - quota;
            for (id, _) in active.drain(..excess) {
                self.graph.set_status(&id, ThreadStatus::Suspended);
                report.suspended_by_quota += 1;
            }
        }
        report.active_threads = active.len()
            + self
                .graph
                .threads()
                .filter(|t| t.pinned && t.status == ThreadStatus::Active)
                .count();
        report.bridges = self.graph.bridge_count();
        report
    }

    /// Decay of bridges: WEAK under 0.3, deleted under 0.05, and bridges to missing threads go.
    pub fn prune_bridges(&mut self, now: DateTime<Utc>) -> PruneReport {
        let mut report = PruneReport::default();
        let plan: Vec<(String, Option<BridgeStatus>, BridgeStatus)> = self
            .graph
            .bridges()
            .map(|b| {
                let ends_exist = self.graph.thread(&b.source_id).is_some()
                    && self.graph.thread(&b.target_id).is_some();
                let next = if ends_exist {
                    bridge_status_at(b, now)
                } else {
                    None
                };
                (b.id.clone(), next, b.status)
            })
            .filter(|(_, next, cur)| *next != Some(*cur))
            .collect();
        for (id, next, cur) in plan {
            match next {
                None => {
                    self.graph.remove_bridge(&id);
                    report.bridges_deleted += 1;
                }
                Some(s) => {
                    if let Some(b) = self.graph.bridge_mut(&id) {
                        b.status = s;
                    }
                    if s == BridgeStatus::Weak {
                        report.bridges_weakened += 1;
                    } else if cur == BridgeStatus::Weak {
                        report.bridges_restored += 1;
                    }
                }
            }
        }
        report.active_threads = self.graph.count_by_status(ThreadStatus::Active);
        report.bridges = self.graph.bridge_count();
        report
    }

    /// A thread was retrieved and used: its use boost.
    pub fn mark_thread_used(&mut self, id: &str, now: DateTime<Utc>) {
        if let Some(t) = self.graph.thread_mut(id) {
            boost_thread(t, now);
        }
    }

    /// When the capture's text is already stored (the same prompt sent again, the same file
    /// read again unchanged), counts the sighting on that message and uses its thread, and
    /// stores nothing new.
    fn record_repeat(&mut self, cap: &Capture) -> Option<Outcome> {
        let doc = self.index.doc_with_content(&cap.content)?;
        let (thread_id, position) = (doc.thread_id.to_string(), doc.position);
        let t = self.graph.thread_mut(&thread_id)?;
        if t.status == ThreadStatus::Archived {
            return None;
        }
        let m = t.messages.get_mut(position)?;
        if !crate::retrieve::index::same_text(&m.content, &cap.content) {
            return None;
        }
        let repeats = m
            .metadata
            .get("repeats")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            + 1;
        m.metadata.insert("repeats".into(), Value::from(repeats));
        let last = m
            .metadata
            .get("last_seen")
            .and_then(Value::as_str)
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map(|d| d.with_timezone(&Utc));
        if last.is_none_or(|l| cap.at > l) && cap.at > m.timestamp {
            m.metadata
                .insert("last_seen".into(), Value::from(cap.at.to_rfc3339()));
        }
        let message_id = m.id.clone();
        if t.status == ThreadStatus::Active && cap.at >= t.last_active {
            t.last_active = cap.at;
        }
        boost_thread(t, cap.at);
        self.graph.message_updated(&thread_id, position);
        Some(Outcome {
            decision: Decision::Repeat,
            thread_id,
            message_id,
            similarity: 1.0,
            bridges_created: 0,
            coherence: None,
            context_thread: None,
            borderline_suspended: None,
            new_bridges: Vec::new(),
        })
    }

    /// A bridge was traversed: its use boost.
    pub fn mark_bridge_used(&mut self, id: &str, now: DateTime<Utc>) {
        if let Some(b) = self.graph.bridge_mut(id) {
            boost_bridge(b, now);
        }
    }

    /// Pins or unpins a thread. A pinned thread that was suspended is active again.
    pub fn set_thread_pinned(&mut self, id: &str, pinned: bool) -> Result<(), EditError> {
        let t = self
            .graph
            .thread_mut(id)
            .ok_or_else(|| EditError::NoThread(id.into()))?;
        t.pinned = pinned;
        if pinned && t.status == ThreadStatus::Suspended {
            self.graph.set_status(id, ThreadStatus::Active);
        }
        Ok(())
    }

    /// Keeps a thread out of every injected context (or lets it back in).
    pub fn set_thread_never_recall(&mut self, id: &str, never: bool) -> Result<(), EditError> {
        let t = self
            .graph
            .thread_mut(id)
            .ok_or_else(|| EditError::NoThread(id.into()))?;
        t.never_recall = never;
        Ok(())
    }

    /// What the team store gets of a thread (a person's choice).
    pub fn set_thread_sharing(&mut self, id: &str, sharing: Sharing) -> Result<(), EditError> {
        let t = self
            .graph
            .thread_mut(id)
            .ok_or_else(|| EditError::NoThread(id.into()))?;
        t.sharing = sharing;
        Ok(())
    }

    pub fn rename_thread(&mut self, id: &str, title: &str) -> Result<(), EditError> {
        // A title is stored, injected and shared with the team: a secret typed in it is not.
        let title = ai_smartness_redact::redact(title.trim()).text;
        let title = title.trim();
        if title.is_empty() || title.chars().count() > MAX_TITLE_CHARS {
            return Err(EditError::Invalid(format!(
                "a title has 1 to {MAX_TITLE_CHARS} characters"
            )));
        }
        let t = self
            .graph
            .thread_mut(id)
            .ok_or_else(|| EditError::NoThread(id.into()))?;
        t.title = title.to_string();
        t.title_by = TitleSource::Person;
        Ok(())
    }

    pub fn set_thread_status(
        &mut self,
        id: &str,
        status: ThreadStatus,
        now: DateTime<Utc>,
    ) -> Result<(), EditError> {
        let t = self
            .graph
            .thread(id)
            .ok_or_else(|| EditError::NoThread(id.into()))?;
        let was = t.status;
        self.graph.set_status(id, status);
        if status == ThreadStatus::Active && was != ThreadStatus::Active {
            self.woken(id, now, "reactivated by hand");
        }
        Ok(())
    }

    /// What a reactivation does besides the status: the boost (from at least the suspension
    /// threshold), the count, and a line in the drift history saying why.
    pub(super) fn woken(&mut self, id: &str, now: DateTime<Utc>, why: &str) {
        if let Some(t) = self.graph.thread_mut(id) {
            boost_thread(t, now);
            t.weight = t
                .weight
                .max(decay::THREAD_SUSPEND_THRESHOLD + decay::USE_BOOST);
            t.activation_count = t.activation_count.saturating_add(1);
            push_drift(
                &mut t.drift_history,
                format!("{}: {why}", now.format("%Y-%m-%d %H:%M")),
            );
        }
    }

    pub fn delete_thread(&mut self, id: &str) -> Result<Thread, EditError> {
        if self.pending.as_ref().is_some_and(|p| p.thread_id == id) {
            self.pending = None;
        }
        self.graph
            .remove_thread(id)
            .ok_or_else(|| EditError::NoThread(id.into()))
    }

    pub fn delete_bridge(&mut self, id: &str) -> Result<ThinkBridge, EditError> {
        self.graph
            .remove_bridge(id)
            .ok_or_else(|| EditError::NoBridge(id.into()))
    }

    pub fn set_bridge_valid(
        &mut self,
        id: &str,
        valid: bool,
        now: DateTime<Utc>,
    ) -> Result<(), EditError> {
        let b = self
            .graph
            .bridge_mut(id)
            .ok_or_else(|| EditError::NoBridge(id.into()))?;
        b.status = if !valid {
            BridgeStatus::Invalid
        } else {
            b.status = BridgeStatus::Active;
            bridge_status_at(b, now).unwrap_or(BridgeStatus::Weak)
        };
        Ok(())
    }

    /// The `limit` heaviest active threads at `now`.
    pub fn most_active(&self, now: DateTime<Utc>, limit: usize) -> Vec<&Thread> {
        let mut active: Vec<&Thread> = self
            .graph
            .threads()
            .filter(|t| t.status == ThreadStatus::Active)
            .collect();
        active.sort_by(|a, b| super::decay::heaviest_first(a, b, now));
        active.truncate(limit);
        active
    }

    /// Every thread ranked by the original similarity to a query (archived ones excluded).
    pub fn rank(&self, embedding: &[f32], topics: &[String], limit: usize) -> Vec<(String, f64)> {
        let q = (!embedding.is_empty()).then(|| QVec::from_unit(embedding));
        let emb = q.as_ref();
        let mut scored: Vec<(String, f64)> = self
            .graph
            .threads()
            .filter(|t| t.status != ThreadStatus::Archived)
            .map(|t| {
                (
                    t.id.clone(),
                    similarity(emb, t.embedding.as_ref(), topics, &t.topics),
                )
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        scored.truncate(limit);
        scored
    }
}

/// A person's request (a prompt, not a note).
fn is_request(cap: &Capture) -> bool {
    cap.source_type == SourceType::Prompt && !ai_smartness_capture::source::is_note(&cap.tool)
}

/// A person's request shorter than a capture must otherwise be to be kept: it was kept for
/// the thing it names, and says too little to decide where the work goes.
fn is_brief_request(cap: &Capture) -> bool {
    is_request(cap) && cap.content.chars().count() < ai_smartness_capture::MIN_CAPTURE_CHARS
}

/// A recap of the conversation the client sent as the user's turn: it says too much to
/// decide where the work goes, naming every subject so far.
fn is_recap(cap: &Capture) -> bool {
    is_request(cap) && ai_smartness_capture::source::is_recap(&cap.metadata)
}

/// The session a capture came from, when its client said.
fn session_of(cap: &Capture) -> Option<String> {
    ["session_id", "sessionId"]
        .iter()
        .find_map(|k| cap.metadata.get(*k).and_then(Value::as_str))
        .map(str::to_string)
}

/// Whether two titles' first three letters are the same, case aside.
fn same_start(a: &str, b: &str) -> bool {
    fn head(s: &str) -> impl Iterator<Item = char> + '_ {
        s.chars().take(3).flat_map(char::to_lowercase)
    }
    head(a).eq(head(b))
}

fn fallback_title(cap: &Capture) -> String {
    if let Some(path) = cap.metadata.get("file_path").and_then(Value::as_str) {
        let p = std::path::Path::new(path);
        let name = p.file_name().map(|n| n.to_string_lossy().to_string());
        let dir = p
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().to_string());
        match (name, dir) {
            (Some(n), Some(d)) => return format!("{n} in {d}"),
            (Some(n), None) => return format!("File {n}"),
            _ => {}
        }
    }
    subject::words_title(&cap.content)
        .unwrap_or_else(|| format!("{} {}", cap.tool, cap.at.format("%Y-%m-%d %H:%M")))
}

/// Lines of drift history a thread keeps (the latest).
const MAX_DRIFT_LINES: usize = 50;

/// Adds a line to a drift history, keeping the latest [`MAX_DRIFT_LINES`].
pub(super) fn push_drift(history: &mut Vec<String>, line: String) {
    history.push(line);
    if history.len() > MAX_DRIFT_LINES {
        let excess = history.len() - MAX_DRIFT_LINES;
        history.drain(..excess);
    }
}

pub(super) fn push_bounded(list: &mut Vec<String>, new: &[String]) {
    for n in new {
        if !list.contains(n) {
            list.push(n.clone());
        }
    }
    if list.len() > MAX_THREAD_NOTES {
        let excess = list.len() - MAX_THREAD_NOTES;
        list.drain(..excess);
    }
}

/// A thread's vector after its `n`-th message (counted from 0) with embedding `e`: the running
/// mean of its messages' vectors while it has fewer than [`FOCUS_WINDOW`], then a moving
/// average (see there). The capture path and `ai reindex` fold messages through this one
/// function, so both give the same vector.
pub fn fold_focus(old: Option<&[f32]>, n: usize, e: &[f32]) -> Vec<f32> {
    let mut c: Vec<f32> = match old {
        Some(old) if old.len() == e.len() && n > 0 => {
            let w = (n as f32).min(FOCUS_WINDOW);
            old.iter()
                .zip(e)
                .map(|(o, x)| (o * w + x) / (w + 1.0))
                .collect()
        }
        _ => e.to_vec(),
    };
    normalize(&mut c);
    c
}

pub(super) fn truncate_chars(s: &str, max: usize) -> String {
    s.trim().chars().take(max).collect()
}

/// The last `max` characters, starting at a word boundary.
pub(super) fn keep_tail_chars(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n - max).collect();
    match tail.find(' ') {
        Some(i) => tail[i + 1..].to_string(),
        None => tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::decay::{bridge_weight, THREAD_SUSPEND_THRESHOLD};
    use crate::memory::test_support::{emb, t0};

    fn cap(tool: &str, text: &str, topics: &[&str], axes: &[usize], at: DateTime<Utc>) -> Capture {
        Capture {
            tool: tool.into(),
            source_type: ai_smartness_capture::source::source_for_tool(tool),
            author: Author::Assistant,
            content: text.into(),
            extraction: Extraction {
                title: format!("{} notes", topics.first().unwrap_or(&"misc")),
                summary: text.into(),
                subjects: topics.iter().map(|s| s.to_string()).collect(),
                ..Extraction::default()
            },
            embedding: emb(axes),
            at,
            metadata: Map::new(),
            units: Vec::new(),
        }
    }

    /// `c`, made in session `s`.
    fn with_session(mut c: Capture, s: &str) -> Capture {
        c.metadata
            .insert("session_id".into(), Value::String(s.into()));
        c
    }

    /// A command about the database schema, in session `s1`: work on another subject.
    fn schema_command(at: DateTime<Utc>) -> Capture {
        with_session(
            cap("Bash", "schema", &["database", "schema"], &[0, 1, 2, 3], at),
            "s1",
        )
    }

    /// A person's request about the css grid, in session `s1`.
    fn css_grid_prompt(at: DateTime<Utc>) -> Capture {
        css_work("UserPrompt", "fix the css grid of the settings page", at)
    }

    /// The css grid request of session `s1` at `at`, and a file read of its work a minute
    /// later: a request under way. Its outcome is the prompt's.
    fn css_request_under_way(m: &mut Memory, at: DateTime<Utc>) -> Outcome {
        let prompt = m.ingest(css_grid_prompt(at));
        m.ingest(css_work("Read", "grid", at + Duration::minutes(1)));
        prompt
    }

    /// A capture of session `s1` about the css grid.
    fn css_work(tool: &str, text: &str, at: DateTime<Utc>) -> Capture {
        with_session(
            cap(tool, text, &["css", "grid", "layout"], &[12, 13], at),
            "s1",
        )
    }

    /// The same prompt sent fifteen times is one message that counts fourteen repeats and
    /// knows when it was last seen; a text that differs is stored.
    #[test]
    fn a_repeated_capture_is_counted_not_stored_again() {
        let mut mem = Memory::default();
        let text = "Why does the staging gateway drop websocket connections after ten minutes?";
        let first = mem.ingest(cap("UserPrompt", text, &["gateway"], &[0, 1], t0()));
        for i in 1..15 {
            let again = format!("{}  ", text.replace(' ', "  "));
            let o = mem.ingest(cap(
                "UserPrompt",
                &again,
                &["gateway"],
                &[0, 1],
                t0() + Duration::minutes(i),
            ));
            assert_eq!(o.decision, Decision::Repeat);
            assert_eq!(o.message_id, first.message_id);
        }
        let t = mem.graph.thread(&first.thread_id).unwrap();
        assert_eq!(t.messages.len(), 1);
        let m = &t.messages[0];
        assert_eq!(m.metadata["repeats"], 14);
        let last: DateTime<Utc> = m.metadata["last_seen"].as_str().unwrap().parse().unwrap();
        assert_eq!(last, t0() + Duration::minutes(14));
        let other = mem.ingest(cap(
            "UserPrompt",
            "Why does the staging gateway drop websocket connections after five minutes?",
            &["gateway"],
            &[0, 1],
            t0() + Duration::minutes(20),
        ));
        assert_ne!(other.decision, Decision::Repeat);
        assert_eq!(
            mem.graph.threads().map(|t| t.messages.len()).sum::<usize>(),
            2
        );
    }

    /// A thread's vector is made of its messages' vectors as stored: two model vectors that
    /// differ below the stored precision (the model's last bits depend on what a capture was
    /// batched with) leave the same thread vector.
    #[test]
    fn a_thread_vector_depends_on_the_stored_message_vectors_only() {
        // Two close unit vectors of the model's size, from a fixed pseudo-random sequence.
        let mut seed = 0x2545_f491_u32;
        let mut noise = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let mut first: Vec<f32> = (0..ai_smartness_vectors::DIM).map(|_| noise()).collect();
        normalize(&mut first);
        let mut second: Vec<f32> = first.iter().map(|x| x + 0.02 * noise()).collect();
        normalize(&mut second);
        let stored = QVec::from_unit(&second).to_f32();
        // 0.4 of a step up or down: stored the same.
        let shifted: Vec<f32> = stored
            .iter()
            .enumerate()
            .map(|(i, x)| x + if i % 2 == 0 { 0.4 } else { -0.4 } / 127.0)
            .collect();
        assert_eq!(QVec::from_unit(&shifted), QVec::from_unit(&stored));
        let thread_vector = |second: &[f32]| {
            let mut m = Memory::default();
            let mut a = cap("Read", "postgres pool", &["postgres"], &[], t0());
            a.embedding = first.clone();
            let a = m.ingest(a);
            let mut b = cap("Bash", "pool timeout", &["postgres"], &[], t0());
            b.embedding = second.to_vec();
            let b = m.ingest(b);
            assert_eq!(b.thread_id, a.thread_id);
            m.graph.thread(&a.thread_id).unwrap().embedding.clone()
        };
        assert_eq!(thread_vector(&stored), thread_vector(&shifted));
    }

    #[test]
    fn similar_content_continues_and_unrelated_content_starts_a_thread() {
        let mut m = Memory::default();
        let a = m.ingest(cap(
            "Read",
            "postgres pool",
            &["postgres", "pool"],
            &[0, 1],
            t0(),
        ));
        assert_eq!(a.decision, Decision::NewThread);
        let b = m.ingest(cap(
            "Bash",
            "pool timeout",
            &["postgres", "timeout"],
            &[0, 1],
            t0(),
        ));
        assert_eq!(b.decision, Decision::Continue);
        assert_eq!(b.thread_id, a.thread_id);
        let later = t0() + Duration::hours(1);
        let c = m.ingest(cap("Read", "css grid", &["css", "grid"], &[7, 8], later));
        assert_eq!(c.decision, Decision::NewThread);
        let t = m.graph.thread(&a.thread_id).unwrap();
        assert_eq!(t.messages.len(), 2);
        assert_eq!(t.activation_count, 2);
        assert!(t.topics.contains(&"timeout".to_string()));
    }

    /// Twenty messages on one subject then ten on another: a plain mean would still point at
    /// the first subject; the thread's vector points at what it is about now.
    #[test]
    fn a_long_thread_follows_its_recent_focus() {
        let (a, b) = (emb(&[0]), emb(&[1]));
        let mut focus: Option<Vec<f32>> = None;
        for i in 0..30 {
            let e = if i < 20 { &a } else { &b };
            focus = Some(fold_focus(focus.as_deref(), i, e));
        }
        let f = focus.unwrap();
        assert!(f[1] > f[0], "{:?}", &f[..2]);
        // Short threads are the plain mean.
        let two = fold_focus(Some(&a), 1, &b);
        assert!((two[0] - two[1]).abs() < 1e-6);
    }

    #[test]
    fn suspended_threads_are_reactivated_above_half() {
        let mut m = Memory::default();
        let a = m.ingest(cap("Read", "auth tokens", &["auth", "jwt"], &[2, 3], t0()));
        m.set_thread_status(&a.thread_id, ThreadStatus::Suspended, t0())
            .unwrap();
        let b = m.ingest(cap(
            "Read",
            "jwt expiry",
            &["auth", "jwt"],
            &[2, 3],
            t0() + Duration::hours(1),
        ));
        assert_eq!(b.decision, Decision::Reactivate);
        assert_eq!(b.thread_id, a.thread_id);
        assert_eq!(
            m.graph.thread(&a.thread_id).unwrap().status,
            ThreadStatus::Active
        );
    }

    #[test]
    fn a_requests_tool_work_follows_its_prompt_and_the_next_request_is_decided_afresh() {
        let mut m = Memory::default();
        let at = |min: i64| t0() + Duration::minutes(min);
        let prompt = m.ingest(css_grid_prompt(at(0)));
        // A file read along the way, about something else entirely: the same request's work.
        let read = m.ingest(with_session(
            cap("Read", "ci config", &["pipeline", "yaml"], &[6, 7], at(1)),
            "s1",
        ));
        assert_eq!(read.thread_id, prompt.thread_id);
        assert_eq!(read.decision, Decision::Continue);
        // Another session's capture is not part of it.
        let other = m.ingest(with_session(
            cap("Read", "auth tokens", &["auth", "tokens"], &[14, 15], at(2)),
            "s2",
        ));
        assert_ne!(other.thread_id, prompt.thread_id);
        // A new request after the work, about the database, goes by what it is about.
        m.ingest(css_work("Bash", "css build", at(3)));
        let next = m.ingest(with_session(
            cap(
                "UserPrompt",
                "now the schema of the invoices table",
                &["database", "schema"],
                &[0, 1, 2, 3],
                at(4),
            ),
            "s1",
        ));
        assert_ne!(next.thread_id, prompt.thread_id);
        // After a pause, a tool result is decided by what it is about.
        let late = m.ingest(css_work("Read", "grid", at(60)));
        assert_eq!(late.thread_id, prompt.thread_id);
    }

    /// A short report that the work failed goes with the work it stopped, however long the
    /// wait before it; a longer capture after as long a pause is decided afresh.
    #[test]
    fn a_failure_that_stopped_the_work_goes_with_it_after_any_wait() {
        let mut m = Memory::default();
        let at = |min: i64| t0() + Duration::minutes(min);
        let prompt = m.ingest(css_grid_prompt(at(0)));
        let failed = m.ingest(with_session(
            cap(
                "Response",
                "API Error: Request timed out.",
                &["api", "request"],
                &[0, 1],
                at(25),
            ),
            "s1",
        ));
        assert_eq!(failed.thread_id, prompt.thread_id);
        let later = m.ingest(with_session(
            cap(
                "Response",
                "The invoices table has a\nnew schema with failed rows.",
                &["database", "schema"],
                &[4, 5],
                at(60),
            ),
            "s1",
        ));
        assert_ne!(later.thread_id, prompt.thread_id);
    }

    #[test]
    fn a_brief_request_is_kept_and_weighs_as_a_mark() {
        let mut m = Memory::default();
        let at = |min: i64| t0() + Duration::minutes(min);
        let prompt = css_request_under_way(&mut m, t0());
        // "use subgrid": kept, with the work it names.
        let brief = m.ingest(with_session(
            cap(
                "UserPrompt",
                "use subgrid",
                &["css", "grid"],
                &[12, 13],
                at(2),
            ),
            "s1",
        ));
        assert_eq!(brief.thread_id, prompt.thread_id);
        let thread = m.graph.thread(&prompt.thread_id).unwrap();
        assert!(thread
            .messages
            .iter()
            .any(|msg| msg.content == "use subgrid"));
        // Two words do not decide where the work after them goes: it goes by what it is about,
        // as after a request with nothing to keep.
        let schema = m.ingest(schema_command(at(3)));
        assert_ne!(schema.thread_id, prompt.thread_id);
    }

    #[test]
    fn a_brief_request_that_opens_a_step_keeps_the_work_after_it() {
        let mut m = Memory::default();
        let at = |min: i64| t0() + Duration::minutes(min);
        let prompt = css_request_under_way(&mut m, t0());
        // "fully verify": about nothing the memory holds, a step of its own.
        let brief = m.ingest(with_session(
            cap("UserPrompt", "fully verify", &["verify"], &[8, 9], at(2)),
            "s1",
        ));
        assert_eq!(brief.decision, Decision::NewThread);
        // Its first check reads like the earlier work, but it is the new step's.
        let check = m.ingest(css_work("Bash", "css build", at(3)));
        assert_eq!(check.thread_id, brief.thread_id);
        assert_ne!(check.thread_id, prompt.thread_id);
    }

    #[test]
    fn a_recap_of_the_session_weighs_as_a_mark() {
        let mut m = Memory::default();
        let at = |min: i64| t0() + Duration::minutes(min);
        let prompt = css_request_under_way(&mut m, t0());
        // The client's summary at a compaction says what was done: the work after it is not
        // part of it, and goes by what it is about.
        let mut recap = cap(
            "UserPrompt",
            "This session is being continued from a previous conversation: the css grid \
             layout was reworked, and the invoices table schema comes next.",
            &["css", "grid", "layout", "history"],
            &[12, 13, 14, 15],
            at(2),
        );
        recap.metadata.insert(
            ai_smartness_capture::source::RECAP_KEY.into(),
            Value::Bool(true),
        );
        let recap = m.ingest(with_session(recap, "s1"));
        let schema = m.ingest(schema_command(at(3)));
        assert_ne!(schema.thread_id, recap.thread_id);
        assert_ne!(schema.thread_id, prompt.thread_id);
        assert_eq!(schema.decision, Decision::NewThread);
    }

    #[test]
    fn a_request_with_nothing_to_keep_still_ends_the_request_before_it() {
        let mut m = Memory::default();
        let at = |min: i64| t0() + Duration::minutes(min);
        let prompt = css_request_under_way(&mut m, t0());
        // Another session's short request does not end this one.
        m.mark_request(at(2), Some("s2".into()));
        let glued = m.ingest(with_session(
            cap("Read", "ci config", &["pipeline", "yaml"], &[6, 7], at(2)),
            "s1",
        ));
        assert_eq!(glued.thread_id, prompt.thread_id);
        // "ok, now the schema": too short to keep, but the work after it serves a new request,
        // and goes by what it is about; another session's capture in between leaves the mark.
        m.mark_request(at(3), Some("s1".into()));
        m.ingest(with_session(
            cap("Read", "auth tokens", &["auth", "tokens"], &[14, 15], at(3)),
            "s2",
        ));
        let schema = m.ingest(schema_command(at(3)));
        assert_ne!(schema.thread_id, prompt.thread_id);
        assert_eq!(schema.decision, Decision::NewThread);
        // ...and the rest of that request's work follows it, whatever it reads.
        let along = m.ingest(css_work("Read", "grid areas", at(4)));
        assert_eq!(along.thread_id, schema.thread_id);
    }

    #[test]
    fn forks_inherit_the_parent_weight_and_get_a_child_of_bridge() {
        let mut m = Memory::default();
        for i in 0..4 {
            let text = format!("css {i}");
            m.ingest(cap(
                "Read",
                &text,
                &["frontend", "css", "layout"],
                &[12, 13],
                t0(),
            ));
        }
        let mut a = None;
        for i in 0..4 {
            let text = format!("db {i}");
            let topics = ["database", "schema", "tables"];
            // An hour later: other work, decided afresh.
            let at = t0() + Duration::hours(1);
            a = Some(m.ingest(cap("Read", &text, &topics, &[0, 1, 2, 3], at)));
        }
        let a = a.unwrap();
        // Ten days later the parent weighs less than 1; the sub-topic is close by its vector
        // but none of its topics are the thread's.
        let later = t0() + Duration::days(10);
        let f = m.ingest(cap(
            "Read",
            "migrations",
            &["migrations", "rollback", "versioning"],
            &[0, 1, 2, 9],
            later,
        ));
        assert_eq!(f.decision, Decision::Fork, "sim {}", f.similarity);
        let child = m.graph.thread(&f.thread_id).unwrap();
        let parent = m.graph.thread(&a.thread_id).unwrap();
        assert_eq!(child.parent_id.as_deref(), Some(a.thread_id.as_str()));
        assert!(parent.child_ids.contains(&f.thread_id));
        assert!((child.weight - thread_weight(parent, later)).abs() < 1e-9);
        let bridge = m.graph.bridge_between(&f.thread_id, &a.thread_id).unwrap();
        assert_eq!(bridge.relation_type, BridgeType::ChildOf);
    }

    #[test]
    fn glob_results_adopt_coherent_follow_ups_within_ten_minutes() {
        let mut m = Memory::default();
        let g = m.ingest(cap(
            "Glob",
            "src/store/*.rs",
            &["store", "atomic"],
            &[4, 5],
            t0(),
        ));
        let r = m.ingest(cap(
            "Read",
            "atomic writes",
            &["store", "atomic"],
            &[4, 5],
            t0() + Duration::minutes(2),
        ));
        assert_eq!(r.decision, Decision::Child);
        assert_eq!(r.coherence.unwrap().1, CoherenceBand::Child);
        assert_eq!(
            m.graph.thread(&r.thread_id).unwrap().parent_id.as_deref(),
            Some(g.thread_id.as_str())
        );

        // Expired: eleven minutes later the pending context no longer applies.
        m.ingest(cap(
            "Grep",
            "fn main",
            &["entrypoint", "binary"],
            &[11, 12],
            t0(),
        ));
        let late = m.ingest(cap(
            "Read",
            "main.rs",
            &["entrypoint", "binary"],
            &[11, 12],
            t0() + Duration::minutes(11),
        ));
        assert!(late.coherence.is_none());
        assert_ne!(late.decision, Decision::Child);

        // Unrelated follow-up: forget band, normal flow.
        m.ingest(cap("Grep", "TODO", &["todo", "markers"], &[13], t0()));
        let other = m.ingest(cap(
            "Read",
            "css",
            &["css", "layout"],
            &[14, 15],
            t0() + Duration::minutes(1),
        ));
        assert_eq!(other.coherence.unwrap().1, CoherenceBand::Forget);
        assert_eq!(other.decision, Decision::NewThread);
    }

    #[test]
    fn gossip_links_threads_above_half_and_only_those() {
        let mut m = Memory::default();
        let mk = |m: &mut Memory, topics: &[&str], axes: &[usize]| {
            let c = cap("Read", "x", topics, axes, t0());
            let topics = c.topics();
            m.new_thread(&c, &topics, &c.terms(), None, OriginType::FileRead)
        };
        let a = mk(&mut m, &["alpha", "beta"], &[0, 1]);
        let b = mk(&mut m, &["beta", "gamma"], &[0, 1, 2]);
        let c = mk(&mut m, &["omega", "zeta"], &[9]);
        assert_eq!(m.gossip(&b, t0()), 1);
        let ab = m.graph.bridge_between(&a, &b).unwrap();
        assert_eq!(ab.relation_type, BridgeType::Extends);
        assert_eq!(ab.shared_concepts, vec!["beta".to_string()]);
        assert!(ab.confidence > GOSSIP_THRESHOLD);
        assert!(m.graph.bridge_between(&b, &c).is_none());
        assert_eq!(m.gossip(&b, t0()), 0, "no duplicate bridges");
    }

    #[test]
    fn propagation_is_bounded_to_depth_one() {
        let mut m = Memory::default();
        let mk = |m: &mut Memory, topics: &[&str], axes: &[usize]| {
            let c = cap("Read", "x", topics, axes, t0());
            let topics = c.topics();
            m.new_thread(&c, &topics, &c.terms(), None, OriginType::FileRead)
        };
        let a = mk(&mut m, &["alpha"], &[0]);
        let b = mk(&mut m, &["beta"], &[1]);
        let c = mk(&mut m, &["gamma"], &[2]);
        let d = mk(&mut m, &["delta"], &[3]);
        let bc = m
            .link(&b, &c, BridgeType::Extends, 0.9, "test", t0())
            .unwrap();
        m.link(&c, &d, BridgeType::Extends, 0.9, "test", t0())
            .unwrap();
        let ab = m
            .link(&a, &b, BridgeType::Extends, 0.8, "test", t0())
            .unwrap();
        assert_eq!(m.propagate(&ab, t0()), 1);
        let ac = m.graph.bridge_between(&a, &c).unwrap();
        assert_eq!(ac.propagation_depth, 1);
        assert!(
            (ac.confidence - 0.72).abs() < 1e-9,
            "lower confidence: {}",
            ac.confidence
        );
        assert_eq!(ac.propagated_from.as_deref(), Some(ab.as_str()));
        // A-C is depth 1: it never propagates further, so A-D does not appear from it.
        let ac_id = ac.id.clone();
        assert_eq!(m.propagate(&ac_id, t0()), 0);
        assert!(m.graph.bridge_between(&a, &d).is_none());
        let _ = bc;
    }

    /// A pinned thread is neither suspended by decay nor by the quota, and takes no room in it.
    #[test]
    fn a_pinned_thread_stays_active_whatever_its_weight() {
        let mut m = Memory::default();
        for i in 0..4 {
            m.ingest(cap(
                "Read",
                &format!("note number {i}"),
                &[&format!("topic{i}")],
                &[i],
                t0() + Duration::hours(i as i64),
            ));
        }
        let oldest = m
            .graph
            .threads()
            .min_by_key(|t| t.created_at)
            .unwrap()
            .id
            .clone();
        m.set_thread_pinned(&oldest, true).unwrap();
        // Months later every weight is under the suspension threshold; the quota is 2.
        let r = m.prune_threads(t0() + Duration::days(120), 2);
        assert_eq!(
            m.graph.thread(&oldest).unwrap().status,
            ThreadStatus::Active
        );
        assert_eq!(r.suspended_by_decay, 3);
        assert_eq!(r.active_threads, 1);
        // Suspended then pinned: active again.
        let other = m
            .graph
            .threads()
            .find(|t| t.status == ThreadStatus::Suspended)
            .unwrap()
            .id
            .clone();
        m.set_thread_pinned(&other, true).unwrap();
        assert_eq!(m.graph.thread(&other).unwrap().status, ThreadStatus::Active);
    }

    #[test]
    fn prune_is_idempotent_and_suspends_by_decay_and_quota() {
        let mut m = Memory::default();
        for i in 0..6 {
            m.ingest(cap(
                "Read",
                &format!("x{i}"),
                &[&format!("topic{i}")],
                &[i],
                t0() + Duration::hours(i as i64),
            ));
        }
        let a = m.graph.threads().map(|t| t.id.clone()).next().unwrap();
        let b = m.graph.threads().map(|t| t.id.clone()).nth(1).unwrap();
        m.link(&a, &b, BridgeType::Extends, 0.9, "t", t0()).unwrap();
        let later = t0() + Duration::days(10);
        let first = m.prune_threads(later, 4);
        assert_eq!(first.suspended_by_quota, 2);
        assert_eq!(first.active_threads, 4);
        let weights: Vec<f64> = m.graph.threads().map(|t| thread_weight(t, later)).collect();
        for _ in 0..300 {
            m.prune_threads(later, 4);
            m.prune_bridges(later);
        }
        let again: Vec<f64> = m.graph.threads().map(|t| thread_weight(t, later)).collect();
        assert_eq!(weights, again, "300 prunes change no weight");
        assert_eq!(m.graph.count_by_status(ThreadStatus::Active), 4);

        // 10 days: bridge weight 0.5^(10/3) ≈ 0.099: WEAK, alive. 14 days: 0.039: dead.
        let bid = m.graph.bridge_between(&a, &b).unwrap().id.clone();
        assert!(
            (bridge_weight(m.graph.bridge(&bid).unwrap(), later) - 0.5f64.powf(10.0 / 3.0)).abs()
                < 1e-9
        );
        assert_eq!(m.graph.bridge(&bid).unwrap().status, BridgeStatus::Weak);
        m.prune_bridges(t0() + Duration::days(14));
        assert!(m.graph.bridge(&bid).is_none());

        // Seven weeks: 0.5^7 < 0.1: everything suspended by decay.
        let r = m.prune_threads(t0() + Duration::days(49), 100);
        assert_eq!(r.suspended_by_decay, 4);
        assert!(
            thread_weight(m.graph.thread(&a).unwrap(), t0() + Duration::days(49))
                < THREAD_SUSPEND_THRESHOLD
        );
    }

    #[test]
    fn edits_refuse_unknown_ids_and_delete_cleans_links() {
        let mut m = Memory::default();
        assert_eq!(
            m.rename_thread("thread_x", "New"),
            Err(EditError::NoThread("thread_x".into()))
        );
        let a = m
            .ingest(cap("Read", "a", &["alpha", "one"], &[0], t0()))
            .thread_id;
        let b = m
            .ingest(cap(
                "Read",
                "b",
                &["beta", "two"],
                &[5],
                t0() + Duration::hours(1),
            ))
            .thread_id;
        m.link(&a, &b, BridgeType::Depends, 0.7, "t", t0()).unwrap();
        assert!(m.rename_thread(&a, "  ").is_err());
        m.rename_thread(&a, "Alpha subsystem").unwrap();
        m.delete_thread(&b).unwrap();
        assert_eq!(m.graph.bridge_count(), 0);
        assert_eq!(m.graph.bridges_of(&a).count(), 0);
    }
}
