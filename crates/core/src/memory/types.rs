//! The data model: threads (topics of work), their messages, and the
//! bridges (typed semantic links) between them.
//!
//! Weights: a stored weight is exact at `weight_at`; the current weight
//! is derived from it by [`super::decay`], so reading it never changes anything.

use ai_smartness_capture::source::OriginType;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Lifecycle of a thread. Suspended threads are kept and can be reactivated; archived ones are
/// kept out of every automatic decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ThreadStatus {
    Active,
    Suspended,
    Archived,
}

impl ThreadStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Active => "active",
            ThreadStatus::Suspended => "suspended",
            ThreadStatus::Archived => "archived",
        }
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Author {
    User,
    Assistant,
}

impl Author {
    /// The name on the wire and on screen.
    pub fn as_str(self) -> &'static str {
        match self {
            Author::User => "user",
            Author::Assistant => "assistant",
        }
    }
}

/// One captured piece of work inside a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `msg_YYYYMMdd_HHMMSS_hex`.
    pub id: String,
    /// Cleaned, redacted text, whole up to `capture.max_kib` (256 KiB by default).
    pub content: String,
    pub source: Author,
    pub timestamp: DateTime<Utc>,
    /// `source_type`, `tool`, `file_path`, and whatever an import carried.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// This message's own embedding (8-bit), for message-level retrieval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<ai_smartness_vectors::quant::QVec>,
    /// Its topics and folders (see [`super::subject`]), so consolidation can regroup messages
    /// without extracting them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<String>,
    /// The parts of a long message that retrieval ranks and the context quotes (see
    /// [`ai_smartness_capture::units`]), in order, covering the content; none for a message that is
    /// one unit on its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<Unit>,
}

/// A part of a long message a person would point at: a function or a section of a file, a
/// block of a log, a paragraph of an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// Its byte range in the message's content.
    pub start: u32,
    pub end: u32,
    /// Where it comes from (`src/pool.rs:120-168`, `$ cargo test (output lines 40-62)`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// Its own embedding (8-bit); `None` until embedded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<ai_smartness_vectors::quant::QVec>,
}

impl Message {
    /// Whether a person or the assistant said it (a prompt, an answer, a sub-agent's report, a
    /// note), rather than a tool's output.
    pub fn is_said(&self) -> bool {
        matches!(
            self.metadata.get("source_type").and_then(Value::as_str),
            Some("prompt" | "response" | "task" | "note")
        )
    }

    /// How many units retrieval sees in it: its own, or the whole message as one.
    pub fn unit_count(&self) -> usize {
        self.units.len().max(1)
    }

    /// Unit `part`'s byte range in the content (the whole content for a message of one unit;
    /// an empty range for a part it does not have).
    pub fn unit_range(&self, part: usize) -> std::ops::Range<usize> {
        if self.units.is_empty() {
            return if part == 0 {
                0..self.content.len()
            } else {
                0..0
            };
        }
        match self.units.get(part) {
            Some(u) => {
                let (start, end) = (u.start as usize, u.end as usize);
                let valid = start <= end
                    && end <= self.content.len()
                    && self.content.is_char_boundary(start)
                    && self.content.is_char_boundary(end);
                if valid {
                    start..end
                } else {
                    0..0
                }
            }
            None => 0..0,
        }
    }

    /// Unit `part`'s text.
    pub fn unit_text(&self, part: usize) -> &str {
        &self.content[self.unit_range(part)]
    }

    /// Moves the vectors of `messages` (each one's units', then its own) into one shared
    /// block, in the order the search index reads them: ranking then reads a thread's vectors
    /// in order, and each costs no allocation of its own. A vector replaced later gets its own;
    /// the block goes when none of its vectors is left.
    pub fn pack_vectors<'a>(messages: impl IntoIterator<Item = &'a mut Message>) {
        ai_smartness_vectors::quant::QVec::pack(messages.into_iter().flat_map(|m| {
            let units = m.units.iter_mut().filter_map(|u| u.embedding.as_mut());
            units.chain(m.embedding.as_mut())
        }));
    }

    /// How many vectors the message holds: its units' and its own.
    pub fn vector_count(&self) -> usize {
        let units = self.units.iter().filter(|u| u.embedding.is_some()).count();
        units + usize::from(self.embedding.is_some())
    }

    /// Unit `part`'s vector: its own, or the message's for a message of one unit.
    pub fn unit_vector(&self, part: usize) -> Option<&ai_smartness_vectors::quant::QVec> {
        if self.units.is_empty() {
            return if part == 0 {
                self.embedding.as_ref()
            } else {
                None
            };
        }
        self.units.get(part).and_then(|u| u.embedding.as_ref())
    }

    /// Unit `part`'s label, when it was cut into units.
    pub fn unit_label(&self, part: usize) -> Option<&str> {
        self.units
            .get(part)
            .map(|u| u.label.as_str())
            .filter(|l| !l.is_empty())
    }
}

/// A topic of work: the unit the memory retrieves, links, decays and forgets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// `thread_YYYYMMdd_HHMMSS_hex`.
    pub id: String,
    /// A subject, not an action ("Database pool timeouts").
    pub title: String,
    pub status: ThreadStatus,
    /// Kept in the thread's own message log on disk (`ID.messages.jsonl`), not in its file:
    /// written inline only by versions before the log existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
    pub summary: String,
    /// Key concepts, lowercase, most recent first; bounded so old focus fades.
    pub topics: Vec<String>,
    pub origin_type: OriginType,
    /// One line each time the focus moved (the local title changed, the thread was merged,
    /// split or reactivated); the latest 50.
    #[serde(default)]
    pub drift_history: Vec<String>,
    #[serde(default)]
    pub parent_id: Option<String>,
    #[serde(default)]
    pub child_ids: Vec<String>,
    /// Decisions seen in the thread's content, for the compaction synthesis.
    #[serde(default)]
    pub decisions: Vec<String>,
    /// Open questions seen in the thread's content.
    #[serde(default)]
    pub questions: Vec<String>,
    /// Weight exact at `weight_at` (see module doc).
    pub weight: f64,
    pub weight_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub last_active: DateTime<Utc>,
    pub activation_count: u32,
    /// Centroid of the message embeddings, L2-normalised, 8-bit; `None` until embedded.
    #[serde(default)]
    pub embedding: Option<ai_smartness_vectors::quant::QVec>,
    /// A person's choice: always a candidate for recall, even when suspended or archived, and
    /// never suspended by decay or the quota.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// A person's choice: kept and searchable, never injected into a prompt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub never_recall: bool,
    /// A person's choice of what the team store gets of it (see [`Sharing`]).
    #[serde(default, skip_serializing_if = "Sharing::is_default")]
    pub sharing: Sharing,
    /// What the thread is about now: its recent terms, weighted (see [`super::subject`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile: Vec<super::subject::ProfileTerm>,
    /// Who wrote the title: the local titler rewrites only its own titles.
    #[serde(default, skip_serializing_if = "TitleSource::is_local")]
    pub title_by: TitleSource,
    /// Set on what is left of a thread merged into another: its id still resolves there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<String>,
}

/// What a thread gives the team store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// As the project's setting says (`team.share`): nothing, or everything not private.
    #[default]
    Project,
    /// Shared with the team, whatever the project's setting.
    Shared,
    /// Never leaves this machine, whatever the project's setting.
    Private,
}

impl Sharing {
    pub fn is_default(&self) -> bool {
        *self == Sharing::Project
    }

    /// Whether the thread goes to the team, given the project's "share everything" setting.
    pub fn shares(self, project_shares_all: bool) -> bool {
        match self {
            Sharing::Project => project_shares_all,
            Sharing::Shared => true,
            Sharing::Private => false,
        }
    }
}

/// Who wrote a thread's title.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TitleSource {
    /// Built from the thread's distinctive terms; rewritten as its focus moves.
    #[default]
    Local,
    /// The configured LLM's: kept until a person renames it.
    Llm,
    /// A person's rename: never overwritten.
    Person,
}

impl TitleSource {
    pub fn is_local(&self) -> bool {
        *self == TitleSource::Local
    }
}

impl Thread {
    /// A copy of everything but the messages (cheap whatever the thread's size).
    pub fn header_clone(&self) -> Thread {
        Thread {
            id: self.id.clone(),
            title: self.title.clone(),
            status: self.status,
            messages: Vec::new(),
            summary: self.summary.clone(),
            topics: self.topics.clone(),
            origin_type: self.origin_type,
            drift_history: self.drift_history.clone(),
            parent_id: self.parent_id.clone(),
            child_ids: self.child_ids.clone(),
            decisions: self.decisions.clone(),
            questions: self.questions.clone(),
            weight: self.weight,
            weight_at: self.weight_at,
            created_at: self.created_at,
            last_active: self.last_active,
            activation_count: self.activation_count,
            embedding: self.embedding.clone(),
            pinned: self.pinned,
            never_recall: self.never_recall,
            sharing: self.sharing,
            profile: self.profile.clone(),
            title_by: self.title_by,
            merged_into: self.merged_into.clone(),
        }
    }
}

/// The six relation types of a bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BridgeType {
    Extends,
    Contradicts,
    Depends,
    Replaces,
    ChildOf,
    Sibling,
}

impl BridgeType {
    pub const ALL: [BridgeType; 6] = [
        BridgeType::Extends,
        BridgeType::Contradicts,
        BridgeType::Depends,
        BridgeType::Replaces,
        BridgeType::ChildOf,
        BridgeType::Sibling,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BridgeType::Extends => "EXTENDS",
            BridgeType::Contradicts => "CONTRADICTS",
            BridgeType::Depends => "DEPENDS",
            BridgeType::Replaces => "REPLACES",
            BridgeType::ChildOf => "CHILD_OF",
            BridgeType::Sibling => "SIBLING",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

/// ACTIVE, WEAK (weight under 0.3) or INVALID (refuted by a person or an LLM; kept for audit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BridgeStatus {
    Active,
    Weak,
    Invalid,
}

impl BridgeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            BridgeStatus::Active => "active",
            BridgeStatus::Weak => "weak",
            BridgeStatus::Invalid => "invalid",
        }
    }
}

/// A typed semantic link between two threads ("synapse").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkBridge {
    /// `bridge_YYYYMMdd_HHMMSS_hex`.
    pub id: String,
    pub source_id: String,
    pub target_id: String,
    pub relation_type: BridgeType,
    /// Why the link exists, in words.
    pub reason: String,
    pub shared_concepts: Vec<String>,
    /// How sure we are of the link (similarity, or an LLM's judgement).
    pub confidence: f64,
    pub status: BridgeStatus,
    /// The bridge this one was propagated from (gossip), if any.
    #[serde(default)]
    pub propagated_from: Option<String>,
    /// 0 for a direct link, 1 and more for propagated ones.
    #[serde(default)]
    pub propagation_depth: u32,
    #[serde(default)]
    pub use_count: u32,
    #[serde(default)]
    pub last_used: Option<DateTime<Utc>>,
    /// Weight exact at `weight_at` (see module doc).
    pub weight: f64,
    pub weight_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

impl ThinkBridge {
    /// The other end of the bridge seen from `thread_id`.
    pub fn other_end(&self, thread_id: &str) -> Option<&str> {
        if self.source_id == thread_id {
            Some(&self.target_id)
        } else if self.target_id == thread_id {
            Some(&self.source_id)
        } else {
            None
        }
    }

    pub fn links(&self, a: &str, b: &str) -> bool {
        (self.source_id == a && self.target_id == b) || (self.source_id == b && self.target_id == a)
    }
}
