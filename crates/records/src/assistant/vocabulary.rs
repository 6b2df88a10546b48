//! The command vocabulary the model uses: data commands (queries, run and sent back) and action
//! commands (mutations of the memory, validated by a person when required). Each command is
//! `{"type": "NAME", "params": {...}}`.
//!
//! Parsing is strict and never panics: an unknown type, an unknown or missing param, a wrong
//! type or an out-of-range value gives a [`CommandError`] whose text is sent back to the model
//! in a FORMAT_ERROR message. One table ([`SPECS`]) drives both the checks and the level-1
//! documentation, so they cannot drift apart.

use crate::assistant::message;
use crate::assistant::period::{Period, PeriodError};
use crate::assistant::types::{AILimitsConfig, SessionKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Longest id accepted (ids are short generated strings).
pub const MAX_ID_CHARS: usize = 128;
/// Longest title (thread or note).
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest free text (query, reason).
pub const MAX_TEXT_CHARS: usize = 1_000;
/// Longest note body.
pub const MAX_NOTE_CHARS: usize = 20_000;
/// Shortest user rule (as the memory's rules require).
pub const MIN_RULE_CHARS: usize = 10;
/// Longest user rule (as the memory's rules require).
pub const MAX_RULE_CHARS: usize = 500;
/// Most user rules kept, so the highest valid rule number.
pub const MAX_RULES: i64 = 20;
/// Most results a search may ask for.
pub const MAX_SEARCH_LIMIT: i64 = 50;
/// Results of SEARCH_THREADS without `limit` (as documented to the model).
pub const DEFAULT_SEARCH_LIMIT: u32 = 10;
/// Hops of EXPLORE_NEIGHBORHOOD without `depth` (as documented to the model); direction
/// defaults to [`Direction::Both`].
pub const DEFAULT_EXPLORE_DEPTH: u8 = 1;

/// Queries or mutations: they go in different fields of the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// Read-only; results come back as DATA_ADDED.
    Data,
    /// Changes the memory; results come back as ACTIONS_EXECUTED.
    Action,
}

impl Category {
    fn noun(self) -> &'static str {
        match self {
            Category::Data => "data command",
            Category::Action => "action command",
        }
    }

    fn with_article(self) -> &'static str {
        match self {
            Category::Data => "a data command",
            Category::Action => "an action command",
        }
    }

    fn field(self) -> &'static str {
        match self {
            Category::Data => "dataCommands",
            Category::Action => "actionCommands",
        }
    }
}

/// The shape of one param, for checks and documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A thread, bridge or similar id: non-blank, no spaces.
    Id,
    /// Free text of bounded length (characters).
    Text {
        /// Fewest characters after trimming.
        min: usize,
        /// Most characters.
        max: usize,
    },
    /// An integer in a closed range.
    Int {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// One of fixed strings.
    Choice(&'static [&'static str]),
    /// A period (absolute object or relative string, by session kind).
    Period,
}

/// One param of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// The JSON key.
    pub name: &'static str,
    /// What it holds.
    pub kind: ParamKind,
    /// Whether it must be given.
    pub required: bool,
    /// One line for the documentation.
    pub doc: &'static str,
}

/// One command of the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// The `type` value.
    pub name: &'static str,
    /// Data or action.
    pub category: Category,
    /// Its params, in documentation order.
    pub params: &'static [ParamSpec],
    /// One line for the documentation.
    pub doc: &'static str,
}

const fn req(name: &'static str, kind: ParamKind, doc: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind,
        required: true,
        doc,
    }
}

const fn opt(name: &'static str, kind: ParamKind, doc: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind,
        required: false,
        doc,
    }
}

const fn text(min: usize, max: usize) -> ParamKind {
    ParamKind::Text { min, max }
}

/// The relation types a bridge may have (the six of the data model).
pub const RELATIONS: &[&str] = &[
    "EXTENDS",
    "CONTRADICTS",
    "DEPENDS",
    "REPLACES",
    "CHILD_OF",
    "SIBLING",
];
const DIRECTIONS: &[&str] = &["in", "out", "both"];

/// Every command, data first. Parsing and documentation both read this table.
pub const SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "MEMORY_OVERVIEW",
        category: Category::Data,
        params: &[],
        doc: "counts of threads and bridges by status, the heaviest threads, recent activity",
    },
    CommandSpec {
        name: "SEARCH_THREADS",
        category: Category::Data,
        params: &[
            req("query", text(1, MAX_TEXT_CHARS), "words to look for"),
            opt(
                "limit",
                ParamKind::Int {
                    min: 1,
                    max: MAX_SEARCH_LIMIT,
                },
                "most results (default 10)",
            ),
        ],
        doc: "threads ranked by relevance to the query",
    },
    CommandSpec {
        name: "EXPLORE_NEIGHBORHOOD",
        category: Category::Data,
        params: &[
            req("thread_id", ParamKind::Id, "the thread to start from"),
            opt(
                "depth",
                ParamKind::Int { min: 1, max: 3 },
                "bridge hops (default 1)",
            ),
            opt(
                "direction",
                ParamKind::Choice(DIRECTIONS),
                "bridges followed (default both)",
            ),
        ],
        doc: "the threads linked to a thread through bridges",
    },
    CommandSpec {
        name: "READ_THREAD",
        category: Category::Data,
        params: &[req("thread_id", ParamKind::Id, "the thread")],
        doc: "a thread's title, status, summary, topics and messages",
    },
    CommandSpec {
        name: "LIST_BRIDGES",
        category: Category::Data,
        params: &[opt(
            "thread_id",
            ParamKind::Id,
            "only the bridges of this thread",
        )],
        doc: "bridges with their ids, ends, relation, reason and weight",
    },
    CommandSpec {
        name: "LIST_RULES",
        category: Category::Data,
        params: &[],
        doc: "the user rules, numbered from 1",
    },
    CommandSpec {
        name: "READ_SYNTHESIS",
        category: Category::Data,
        params: &[],
        doc: "the latest compaction synthesis",
    },
    CommandSpec {
        name: "THREADS_IN_PERIOD",
        category: Category::Data,
        params: &[req("period", ParamKind::Period, "the period")],
        doc: "threads active during a period",
    },
    CommandSpec {
        name: "RENAME_THREAD",
        category: Category::Action,
        params: &[
            req("thread_id", ParamKind::Id, "the thread"),
            req(
                "title",
                text(1, MAX_TITLE_CHARS),
                "the new title: a subject, not an action",
            ),
        ],
        doc: "gives a thread a new title",
    },
    CommandSpec {
        name: "SUSPEND_THREAD",
        category: Category::Action,
        params: &[req("thread_id", ParamKind::Id, "the thread")],
        doc: "takes a thread out of automatic retrieval; it can be reactivated",
    },
    CommandSpec {
        name: "REACTIVATE_THREAD",
        category: Category::Action,
        params: &[req("thread_id", ParamKind::Id, "the thread")],
        doc: "makes a suspended or archived thread active again",
    },
    CommandSpec {
        name: "ARCHIVE_THREAD",
        category: Category::Action,
        params: &[req("thread_id", ParamKind::Id, "the thread")],
        doc: "keeps a thread for the record, out of every automatic decision",
    },
    CommandSpec {
        name: "MERGE_THREADS",
        category: Category::Action,
        params: &[
            req("source_id", ParamKind::Id, "the thread merged away"),
            req(
                "target_id",
                ParamKind::Id,
                "the thread that receives its messages",
            ),
        ],
        doc: "moves a thread's messages and bridges into another; the source is removed",
    },
    CommandSpec {
        name: "CREATE_BRIDGE",
        category: Category::Action,
        params: &[
            req("source_id", ParamKind::Id, "one end"),
            req("target_id", ParamKind::Id, "the other end"),
            req(
                "relation",
                ParamKind::Choice(RELATIONS),
                "how source relates to target",
            ),
            req(
                "reason",
                text(1, MAX_TEXT_CHARS),
                "why the link exists, in words",
            ),
        ],
        doc: "links two threads",
    },
    CommandSpec {
        name: "DELETE_BRIDGE",
        category: Category::Action,
        params: &[req(
            "bridge_id",
            ParamKind::Id,
            "the bridge (see LIST_BRIDGES)",
        )],
        doc: "removes a bridge",
    },
    CommandSpec {
        name: "ADD_RULE",
        category: Category::Action,
        params: &[req(
            "text",
            text(MIN_RULE_CHARS, MAX_RULE_CHARS),
            "one standing instruction",
        )],
        doc: "adds a user rule, injected with every prompt",
    },
    CommandSpec {
        name: "REMOVE_RULE",
        category: Category::Action,
        params: &[req(
            "index",
            ParamKind::Int {
                min: 1,
                max: MAX_RULES,
            },
            "the rule's number in LIST_RULES",
        )],
        doc: "removes a user rule",
    },
    CommandSpec {
        name: "WRITE_NOTE",
        category: Category::Action,
        params: &[
            req("title", text(1, MAX_TITLE_CHARS), "what the note is about"),
            req("content", text(1, MAX_NOTE_CHARS), "the note"),
        ],
        doc: "stores a note in the memory, as a new thread",
    },
    CommandSpec {
        name: "START_RUN",
        category: Category::Action,
        params: &[req(
            "task",
            text(1, MAX_TEXT_CHARS),
            "what to do in the project's workspace",
        )],
        doc: "starts a verified workflow run (spec, plan, execution with tools, the project's checks, repairs); it runs on its own and is remembered when it ends",
    },
];

/// The spec of a command type, if it exists (exact, upper-case name).
pub fn spec(name: &str) -> Option<&'static CommandSpec> {
    SPECS.iter().find(|s| s.name == name)
}

fn names(category: Category) -> String {
    SPECS
        .iter()
        .filter(|s| s.category == category)
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a command was refused. Each message names the command and the param, says what was
/// expected, and is short enough to send back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// Not a JSON object.
    #[error("a command must be an object {{\"type\": \"NAME\", \"params\": {{...}}}}")]
    NotAnObject,
    /// A top-level key other than `type` and `params`.
    #[error("unknown key {0:?} in command (allowed: type, params)")]
    UnknownKey(String),
    /// No `type`, or not a string.
    #[error("a command needs \"type\": a string such as \"SEARCH_THREADS\"")]
    MissingType,
    /// A type that does not exist.
    #[error("unknown {} type {name:?} ({}s: {}){}", category.noun(), category.noun(), names(*category), hint.as_ref().map(|h| format!("; did you mean {h:?}?")).unwrap_or_default())]
    UnknownType {
        /// As written.
        name: String,
        /// The list it was found in.
        category: Category,
        /// The right spelling, when only the case was wrong.
        hint: Option<String>,
    },
    /// A data command among actions, or the reverse.
    #[error("{name} is {}: put it in {}", found.with_article(), found.field())]
    WrongCategory {
        /// The command type.
        name: String,
        /// The category it really has.
        found: Category,
    },
    /// `params` is not an object.
    #[error("{0}: \"params\" must be an object")]
    ParamsNotObject(&'static str),
    /// A param key the command does not take.
    #[error("{command}: unknown param {key:?} ({allowed})")]
    UnknownParam {
        /// The command type.
        command: &'static str,
        /// As written.
        key: String,
        /// The params it takes.
        allowed: String,
    },
    /// A required param is absent (or null).
    #[error("{command}: missing param \"{key}\"")]
    MissingParam {
        /// The command type.
        command: &'static str,
        /// The param.
        key: &'static str,
    },
    /// A param of the wrong JSON type.
    #[error("{command}: \"{key}\" must be {expected}")]
    WrongType {
        /// The command type.
        command: &'static str,
        /// The param.
        key: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// An integer outside its range.
    #[error("{command}: \"{key}\" must be between {min} and {max}")]
    OutOfRange {
        /// The command type.
        command: &'static str,
        /// The param.
        key: &'static str,
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// A string not among the allowed ones.
    #[error("{command}: \"{key}\" must be one of {}", allowed.join(", "))]
    BadChoice {
        /// The command type.
        command: &'static str,
        /// The param.
        key: &'static str,
        /// The allowed values.
        allowed: &'static [&'static str],
    },
    /// Text that is blank, too short or too long, or an id with spaces.
    #[error("{command}: \"{key}\" {reason}")]
    BadText {
        /// The command type.
        command: &'static str,
        /// The param.
        key: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The period param is wrong.
    #[error("{command}: {error}")]
    BadPeriod {
        /// The command type.
        command: &'static str,
        /// What is wrong with it.
        error: PeriodError,
    },
    /// Both ends of a merge or bridge are the same thread.
    #[error("{0}: source_id and target_id must be different threads")]
    SameEnds(&'static str),
}

/// Checks the envelope and params against the table; returns the spec and the params.
fn parse_envelope(
    v: &Value,
    expected: Category,
) -> Result<(&'static CommandSpec, Map<String, Value>), CommandError> {
    let obj = v.as_object().ok_or(CommandError::NotAnObject)?;
    if let Some(k) = obj.keys().find(|k| *k != "type" && *k != "params") {
        return Err(CommandError::UnknownKey(k.clone()));
    }
    let name = obj
        .get("type")
        .and_then(Value::as_str)
        .ok_or(CommandError::MissingType)?;
    let spec = match spec(name) {
        Some(s) => s,
        None => {
            let hint = SPECS
                .iter()
                .find(|s| s.name.eq_ignore_ascii_case(name.trim()))
                .map(|s| s.name.to_string());
            return Err(CommandError::UnknownType {
                name: name.to_string(),
                category: expected,
                hint,
            });
        }
    };
    if spec.category != expected {
        return Err(CommandError::WrongCategory {
            name: spec.name.to_string(),
            found: spec.category,
        });
    }
    // A command without params may leave `params` out.
    let params = match obj.get("params") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(CommandError::ParamsNotObject(spec.name)),
    };
    if let Some(k) = params
        .keys()
        .find(|k| !spec.params.iter().any(|p| p.name == k.as_str()))
    {
        let allowed = if spec.params.is_empty() {
            "it takes no params".to_string()
        } else {
            let list: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
            format!("allowed: {}", list.join(", "))
        };
        return Err(CommandError::UnknownParam {
            command: spec.name,
            key: k.clone(),
            allowed,
        });
    }
    for p in spec.params {
        match params.get(p.name) {
            None | Some(Value::Null) if p.required => {
                return Err(CommandError::MissingParam {
                    command: spec.name,
                    key: p.name,
                })
            }
            None | Some(Value::Null) => {}
            Some(v) => check_param(spec.name, p, v)?,
        }
    }
    Ok((spec, params))
}

fn check_param(command: &'static str, p: &ParamSpec, v: &Value) -> Result<(), CommandError> {
    let key = p.name;
    let wrong = |expected| CommandError::WrongType {
        command,
        key,
        expected,
    };
    let bad_text = |reason: String| CommandError::BadText {
        command,
        key,
        reason,
    };
    match p.kind {
        ParamKind::Id => {
            let s = v.as_str().ok_or_else(|| wrong("a string id"))?;
            if s.is_empty() || s.chars().any(char::is_whitespace) {
                return Err(bad_text("must be an id without spaces".into()));
            }
            if s.chars().count() > MAX_ID_CHARS {
                return Err(bad_text(format!(
                    "is longer than {MAX_ID_CHARS} characters"
                )));
            }
        }
        ParamKind::Text { min, max } => {
            let s = v.as_str().ok_or_else(|| wrong("a string"))?;
            let n = s.trim().chars().count();
            if n == 0 {
                return Err(bad_text("must not be empty".into()));
            }
            if n < min {
                return Err(bad_text(format!("needs at least {min} characters")));
            }
            if s.chars().count() > max {
                return Err(bad_text(format!("is longer than {max} characters")));
            }
        }
        ParamKind::Int { min, max } => {
            // Integers only: 2.0 and "2" are refused.
            let n = match v {
                Value::Number(n) if n.is_i64() || n.is_u64() => n.as_i64().unwrap_or(i64::MAX),
                _ => return Err(wrong("an integer")),
            };
            if n < min || n > max {
                return Err(CommandError::OutOfRange {
                    command,
                    key,
                    min,
                    max,
                });
            }
        }
        ParamKind::Choice(allowed) => {
            let s = v.as_str().ok_or_else(|| wrong("a string"))?;
            if !allowed.contains(&s) {
                return Err(CommandError::BadChoice {
                    command,
                    key,
                    allowed,
                });
            }
        }
        ParamKind::Period => {
            Period::from_value(v).map_err(|error| CommandError::BadPeriod { command, error })?;
        }
    }
    Ok(())
}

/// Typed access to params already checked by [`parse_envelope`]; the fallbacks are never
/// reached, they only keep this panic-free.
struct Checked(Map<String, Value>);

impl Checked {
    fn string(&self, k: &str) -> String {
        self.opt_string(k).unwrap_or_default()
    }

    fn opt_string(&self, k: &str) -> Option<String> {
        self.0.get(k).and_then(Value::as_str).map(str::to_string)
    }

    fn opt_int(&self, k: &str) -> Option<i64> {
        self.0.get(k).and_then(Value::as_i64)
    }

    fn period(&self, command: &'static str, k: &str) -> Result<Period, CommandError> {
        let v = self.0.get(k).unwrap_or(&Value::Null);
        Period::from_value(v).map_err(|error| CommandError::BadPeriod { command, error })
    }
}

/// Which bridges EXPLORE_NEIGHBORHOOD follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Bridges pointing at the thread.
    In,
    /// Bridges leaving the thread.
    Out,
    /// Both.
    Both,
}

impl Direction {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
            Direction::Both => "both",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Direction::In, Direction::Out, Direction::Both]
            .into_iter()
            .find(|d| d.as_str() == s)
    }
}

/// A bridge's relation type (EXTENDS .. SIBLING).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Relation {
    /// Builds on the target.
    Extends,
    /// Disagrees with the target.
    Contradicts,
    /// Needs the target.
    Depends,
    /// Supersedes the target.
    Replaces,
    /// Is a part of the target.
    ChildOf,
    /// Shares a parent or theme with the target.
    Sibling,
}

impl Relation {
    const ALL: [Relation; 6] = [
        Relation::Extends,
        Relation::Contradicts,
        Relation::Depends,
        Relation::Replaces,
        Relation::ChildOf,
        Relation::Sibling,
    ];

    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Extends => "EXTENDS",
            Relation::Contradicts => "CONTRADICTS",
            Relation::Depends => "DEPENDS",
            Relation::Replaces => "REPLACES",
            Relation::ChildOf => "CHILD_OF",
            Relation::Sibling => "SIBLING",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// A query the model asks for; results come back as DATA_ADDED.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Value")]
pub enum DataCommand {
    /// Counts, heaviest threads, recent activity.
    MemoryOverview,
    /// Threads ranked for a query.
    SearchThreads {
        /// Words to look for.
        query: String,
        /// Most results (1..=50).
        limit: Option<u32>,
    },
    /// Threads reachable through bridges.
    ExploreNeighborhood {
        /// Where to start.
        thread_id: String,
        /// Hops (1..=3).
        depth: Option<u8>,
        /// Which bridges to follow.
        direction: Option<Direction>,
    },
    /// One thread in full.
    ReadThread {
        /// The thread.
        thread_id: String,
    },
    /// Bridges, all or of one thread.
    ListBridges {
        /// Only this thread's bridges.
        thread_id: Option<String>,
    },
    /// The user rules.
    ListRules,
    /// The latest compaction synthesis.
    ReadSynthesis,
    /// Threads active in a period.
    ThreadsInPeriod {
        /// Absolute (CHAT) or relative (AUTOMATION).
        period: Period,
    },
}

impl DataCommand {
    /// Parses `{"type", "params"}` strictly.
    pub fn from_value(v: &Value) -> Result<Self, CommandError> {
        let (spec, params) = parse_envelope(v, Category::Data)?;
        let p = Checked(params);
        Ok(match spec.name {
            "MEMORY_OVERVIEW" => DataCommand::MemoryOverview,
            "SEARCH_THREADS" => DataCommand::SearchThreads {
                query: p.string("query"),
                limit: p.opt_int("limit").map(|n| n as u32),
            },
            "EXPLORE_NEIGHBORHOOD" => DataCommand::ExploreNeighborhood {
                thread_id: p.string("thread_id"),
                depth: p.opt_int("depth").map(|n| n as u8),
                direction: p.opt_string("direction").and_then(|d| Direction::parse(&d)),
            },
            "READ_THREAD" => DataCommand::ReadThread {
                thread_id: p.string("thread_id"),
            },
            "LIST_BRIDGES" => DataCommand::ListBridges {
                thread_id: p.opt_string("thread_id"),
            },
            "LIST_RULES" => DataCommand::ListRules,
            "READ_SYNTHESIS" => DataCommand::ReadSynthesis,
            _ => DataCommand::ThreadsInPeriod {
                period: p.period(spec.name, "period")?,
            },
        })
    }

    /// The command's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            DataCommand::MemoryOverview => "MEMORY_OVERVIEW",
            DataCommand::SearchThreads { .. } => "SEARCH_THREADS",
            DataCommand::ExploreNeighborhood { .. } => "EXPLORE_NEIGHBORHOOD",
            DataCommand::ReadThread { .. } => "READ_THREAD",
            DataCommand::ListBridges { .. } => "LIST_BRIDGES",
            DataCommand::ListRules => "LIST_RULES",
            DataCommand::ReadSynthesis => "READ_SYNTHESIS",
            DataCommand::ThreadsInPeriod { .. } => "THREADS_IN_PERIOD",
        }
    }

    /// Refuses a period of the wrong mode: CHAT sessions use absolute periods, AUTOMATION
    /// (and SEED templates) relative ones, so a replayed run covers the right days.
    pub fn check_kind(&self, kind: SessionKind) -> Result<(), CommandError> {
        if let DataCommand::ThreadsInPeriod { period } = self {
            let error = match (kind, period.is_relative()) {
                (SessionKind::Chat, true) => PeriodError::WrongMode(
                    "in a chat, use an absolute period {\"from\": \"YYYY-MM-DD\", \"to\": \"YYYY-MM-DD\"}",
                ),
                (SessionKind::Automation | SessionKind::Seed, false) => PeriodError::WrongMode(
                    "in an automation, use a relative period such as \"-1_DAY\" (absolute dates would be wrong on the next run)",
                ),
                _ => return Ok(()),
            };
            return Err(CommandError::BadPeriod {
                command: "THREADS_IN_PERIOD",
                error,
            });
        }
        Ok(())
    }

    /// The command back as `{"type", "params"}`.
    pub fn to_value(&self) -> Value {
        // Strings, numbers and maps of them: encoding cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }

    fn params(&self) -> DataParams<'_> {
        match self {
            DataCommand::MemoryOverview | DataCommand::ListRules | DataCommand::ReadSynthesis => {
                DataParams::None {}
            }
            DataCommand::SearchThreads { query, limit } => DataParams::Search {
                query,
                limit: *limit,
            },
            DataCommand::ExploreNeighborhood {
                thread_id,
                depth,
                direction,
            } => DataParams::Explore {
                thread_id,
                depth: *depth,
                direction: direction.map(|d| d.as_str()),
            },
            DataCommand::ReadThread { thread_id } => DataParams::Thread { thread_id },
            DataCommand::ListBridges { thread_id } => DataParams::Bridges {
                thread_id: thread_id.as_deref(),
            },
            DataCommand::ThreadsInPeriod { period } => DataParams::Period { period },
        }
    }
}

/// A command on the wire: `{"type": "SEARCH_THREADS", "params": {...}}`.
#[derive(Serialize)]
struct Tagged<P> {
    #[serde(rename = "type")]
    kind: &'static str,
    params: P,
}

/// A data command's params as written (absent options left out).
#[derive(Serialize)]
#[serde(untagged)]
enum DataParams<'a> {
    None {},
    Search {
        query: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    Explore {
        thread_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        depth: Option<u8>,
        #[serde(skip_serializing_if = "Option::is_none")]
        direction: Option<&'static str>,
    },
    Thread {
        thread_id: &'a str,
    },
    Bridges {
        #[serde(skip_serializing_if = "Option::is_none")]
        thread_id: Option<&'a str>,
    },
    Period {
        period: &'a Period,
    },
}

impl Serialize for DataCommand {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Tagged {
            kind: self.type_name(),
            params: self.params(),
        }
        .serialize(s)
    }
}

impl TryFrom<Value> for DataCommand {
    type Error = CommandError;
    fn try_from(v: Value) -> Result<Self, CommandError> {
        DataCommand::from_value(&v)
    }
}

/// A change to the memory the model asks for; results come back as ACTIONS_EXECUTED.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Value")]
pub enum ActionCommand {
    /// New title.
    RenameThread {
        /// The thread.
        thread_id: String,
        /// Its new title.
        title: String,
    },
    /// Out of automatic retrieval.
    SuspendThread {
        /// The thread.
        thread_id: String,
    },
    /// Active again.
    ReactivateThread {
        /// The thread.
        thread_id: String,
    },
    /// Kept for the record only.
    ArchiveThread {
        /// The thread.
        thread_id: String,
    },
    /// Source folded into target.
    MergeThreads {
        /// Merged away.
        source_id: String,
        /// Receives the messages.
        target_id: String,
    },
    /// A new typed link.
    CreateBridge {
        /// One end.
        source_id: String,
        /// The other end.
        target_id: String,
        /// How they relate.
        relation: Relation,
        /// Why, in words.
        reason: String,
    },
    /// A link removed.
    DeleteBridge {
        /// The bridge.
        bridge_id: String,
    },
    /// A new user rule.
    AddRule {
        /// The instruction.
        text: String,
    },
    /// A user rule removed.
    RemoveRule {
        /// Its number in LIST_RULES (from 1).
        index: u32,
    },
    /// A note stored as a thread.
    WriteNote {
        /// What it is about.
        title: String,
        /// The note.
        content: String,
    },
    /// A workflow run started.
    StartRun {
        /// What to do.
        task: String,
    },
}

impl ActionCommand {
    /// Parses `{"type", "params"}` strictly.
    pub fn from_value(v: &Value) -> Result<Self, CommandError> {
        let (spec, params) = parse_envelope(v, Category::Action)?;
        let p = Checked(params);
        let id = || p.string("thread_id");
        let cmd = match spec.name {
            "RENAME_THREAD" => ActionCommand::RenameThread {
                thread_id: id(),
                title: p.string("title").trim().to_string(),
            },
            "SUSPEND_THREAD" => ActionCommand::SuspendThread { thread_id: id() },
            "REACTIVATE_THREAD" => ActionCommand::ReactivateThread { thread_id: id() },
            "ARCHIVE_THREAD" => ActionCommand::ArchiveThread { thread_id: id() },
            "MERGE_THREADS" => ActionCommand::MergeThreads {
                source_id: p.string("source_id"),
                target_id: p.string("target_id"),
            },
            "CREATE_BRIDGE" => ActionCommand::CreateBridge {
                source_id: p.string("source_id"),
                target_id: p.string("target_id"),
                relation: p
                    .opt_string("relation")
                    .and_then(|r| Relation::parse(&r))
                    .unwrap_or(Relation::Extends),
                reason: p.string("reason").trim().to_string(),
            },
            "DELETE_BRIDGE" => ActionCommand::DeleteBridge {
                bridge_id: p.string("bridge_id"),
            },
            "ADD_RULE" => ActionCommand::AddRule {
                text: p.string("text").trim().to_string(),
            },
            "REMOVE_RULE" => ActionCommand::RemoveRule {
                index: p.opt_int("index").unwrap_or(1) as u32,
            },
            "WRITE_NOTE" => ActionCommand::WriteNote {
                title: p.string("title").trim().to_string(),
                content: p.string("content"),
            },
            _ => ActionCommand::StartRun {
                task: p.string("task").trim().to_string(),
            },
        };
        match &cmd {
            ActionCommand::MergeThreads {
                source_id,
                target_id,
            }
            | ActionCommand::CreateBridge {
                source_id,
                target_id,
                ..
            } if source_id == target_id => Err(CommandError::SameEnds(spec.name)),
            _ => Ok(cmd),
        }
    }

    /// The command's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ActionCommand::RenameThread { .. } => "RENAME_THREAD",
            ActionCommand::SuspendThread { .. } => "SUSPEND_THREAD",
            ActionCommand::ReactivateThread { .. } => "REACTIVATE_THREAD",
            ActionCommand::ArchiveThread { .. } => "ARCHIVE_THREAD",
            ActionCommand::MergeThreads { .. } => "MERGE_THREADS",
            ActionCommand::CreateBridge { .. } => "CREATE_BRIDGE",
            ActionCommand::DeleteBridge { .. } => "DELETE_BRIDGE",
            ActionCommand::AddRule { .. } => "ADD_RULE",
            ActionCommand::RemoveRule { .. } => "REMOVE_RULE",
            ActionCommand::WriteNote { .. } => "WRITE_NOTE",
            ActionCommand::StartRun { .. } => "START_RUN",
        }
    }

    /// The command back as `{"type", "params"}`.
    pub fn to_value(&self) -> Value {
        // Strings, numbers and maps of them: encoding cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }

    fn params(&self) -> ActionParams<'_> {
        match self {
            ActionCommand::RenameThread { thread_id, title } => {
                ActionParams::Rename { thread_id, title }
            }
            ActionCommand::SuspendThread { thread_id }
            | ActionCommand::ReactivateThread { thread_id }
            | ActionCommand::ArchiveThread { thread_id } => ActionParams::Thread { thread_id },
            ActionCommand::MergeThreads {
                source_id,
                target_id,
            } => ActionParams::Merge {
                source_id,
                target_id,
            },
            ActionCommand::CreateBridge {
                source_id,
                target_id,
                relation,
                reason,
            } => ActionParams::Bridge {
                source_id,
                target_id,
                relation: relation.as_str(),
                reason,
            },
            ActionCommand::DeleteBridge { bridge_id } => ActionParams::DeleteBridge { bridge_id },
            ActionCommand::AddRule { text } => ActionParams::Rule { text },
            ActionCommand::RemoveRule { index } => ActionParams::RemoveRule { index: *index },
            ActionCommand::WriteNote { title, content } => ActionParams::Note { title, content },
            ActionCommand::StartRun { task } => ActionParams::Run { task },
        }
    }
}

/// An action's params as written.
#[derive(Serialize)]
#[serde(untagged)]
enum ActionParams<'a> {
    Rename {
        thread_id: &'a str,
        title: &'a str,
    },
    Thread {
        thread_id: &'a str,
    },
    Merge {
        source_id: &'a str,
        target_id: &'a str,
    },
    Bridge {
        source_id: &'a str,
        target_id: &'a str,
        relation: &'static str,
        reason: &'a str,
    },
    DeleteBridge {
        bridge_id: &'a str,
    },
    Rule {
        text: &'a str,
    },
    RemoveRule {
        index: u32,
    },
    Note {
        title: &'a str,
        content: &'a str,
    },
    Run {
        task: &'a str,
    },
}

impl Serialize for ActionCommand {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Tagged {
            kind: self.type_name(),
            params: self.params(),
        }
        .serialize(s)
    }
}

impl TryFrom<Value> for ActionCommand {
    type Error = CommandError;
    fn try_from(v: Value) -> Result<Self, CommandError> {
        ActionCommand::from_value(&v)
    }
}

fn param_doc(p: &ParamSpec, kind: SessionKind) -> String {
    let shape = match p.kind {
        ParamKind::Id => "id".to_string(),
        ParamKind::Text { min, max } if min > 1 => format!("string, {min}-{max} chars"),
        ParamKind::Text { max, .. } => format!("string, at most {max} chars"),
        ParamKind::Int { min, max } => format!("integer {min}..{max}"),
        ParamKind::Choice(c) => c.join("|"),
        ParamKind::Period if kind == SessionKind::Chat => {
            "{\"from\": \"YYYY-MM-DD\" or RFC 3339, \"to\": same}".to_string()
        }
        ParamKind::Period => "\"OFFSET_TYPE\"".to_string(),
    };
    let optional = if p.required { "" } else { " (optional)" };
    format!("  - \"{}\"{optional}: {shape}; {}", p.name, p.doc)
}

fn period_doc(kind: SessionKind) -> &'static str {
    if kind == SessionKind::Chat {
        "Periods are absolute: {\"from\": X, \"to\": Y}, each a date YYYY-MM-DD (from: the start of that day; to: the end of that day, inclusive) or an RFC 3339 instant (to: exclusive)."
    } else {
        "Periods are relative to the run's scheduled time: \"OFFSET_TYPE\" with TYPE in HOUR, DAY, WEEK, MONTH, YEAR and OFFSET 0 for the current one, -1 for the previous one (\"-1_DAY\" yesterday, \"0_WEEK\" this week, \"-2_MONTH\" two months ago)."
    }
}

/// The level-1 prompt documentation: the reply format, every command with its params, the
/// period form for this kind, and the loop limits (fixed values, no live counters).
pub fn documentation(limits: &AILimitsConfig, kind: SessionKind) -> String {
    let mut out = String::new();
    out.push_str(&message::format_documentation(kind));
    for category in [Category::Data, Category::Action] {
        let title = match category {
            Category::Data => "\n## Data commands (in dataCommands; results come back to you)\n",
            Category::Action => {
                "\n## Action commands (in actionCommands; they change the memory)\n"
            }
        };
        out.push_str(title);
        for s in SPECS.iter().filter(|s| s.category == category) {
            let none = if s.params.is_empty() {
                " No params."
            } else {
                ""
            };
            let _ = writeln!(out, "- {}: {}.{none}", s.name, s.doc);
            for p in s.params {
                let _ = writeln!(out, "{}", param_doc(p, kind));
            }
        }
    }
    let _ = writeln!(out, "\n{}", period_doc(kind));
    // SEED sessions are automation templates: document them as automations.
    let run_kind = if kind == SessionKind::Chat {
        SessionKind::Chat
    } else {
        SessionKind::Automation
    };
    if let Some(l) = limits.for_kind(run_kind) {
        let _ = write!(
            out,
            "\n## Limits\n- At most {} replies with dataCommands in a row.\n- At most {} retries of failed actions in a row.\n- At most {} malformed replies in a row.\n- At most {} automatic exchanges per round.\nPast a limit the round stops with LIMIT_REACHED{}.\n",
            l.max_data_query_iterations,
            l.max_action_retries,
            l.max_format_error_retries,
            l.max_autonomous_roundtrips,
            if run_kind == SessionKind::Chat {
                " and waits for the user"
            } else {
                " and the run ends"
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(v: Value) -> Result<DataCommand, CommandError> {
        DataCommand::from_value(&v)
    }

    fn action(v: Value) -> Result<ActionCommand, CommandError> {
        ActionCommand::from_value(&v)
    }

    fn data_err(v: Value) -> String {
        data(v).unwrap_err().to_string()
    }

    fn action_err(v: Value) -> String {
        action(v).unwrap_err().to_string()
    }

    /// A valid example value for a param, built from the table.
    fn example(p: &ParamSpec) -> Value {
        match p.kind {
            ParamKind::Id => json!("thread_1"),
            ParamKind::Text { min, .. } => json!("x".repeat(min.max(1))),
            ParamKind::Int { min, .. } => json!(min),
            ParamKind::Choice(c) => json!(c[0]),
            ParamKind::Period => json!("-1_DAY"),
        }
    }

    fn full_example(s: &CommandSpec) -> Value {
        let mut params = Map::new();
        for p in s.params {
            params.insert(p.name.into(), example(p));
        }
        // The two ends must differ.
        if params.contains_key("target_id") {
            params.insert("target_id".into(), json!("thread_2"));
        }
        json!({"type": s.name, "params": params})
    }

    #[test]
    fn every_spec_parses_and_round_trips() {
        for s in SPECS {
            let v = full_example(s);
            match s.category {
                Category::Data => {
                    let c = data(v.clone()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
                    assert_eq!(c.type_name(), s.name);
                    assert_eq!(c.to_value(), v, "{}", s.name);
                    assert_eq!(data(c.to_value()).unwrap(), c);
                }
                Category::Action => {
                    let c = action(v.clone()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
                    assert_eq!(c.type_name(), s.name);
                    assert_eq!(c.to_value(), v, "{}", s.name);
                    assert_eq!(action(c.to_value()).unwrap(), c);
                }
            }
        }
    }

    #[test]
    fn every_spec_rejects_an_unknown_param_and_a_missing_one() {
        for s in SPECS {
            let mut v = full_example(s);
            v["params"]["bogus"] = json!(1);
            let e = match s.category {
                Category::Data => data(v).unwrap_err(),
                Category::Action => action(v).unwrap_err(),
            };
            assert!(
                matches!(e, CommandError::UnknownParam { .. }),
                "{}: {e}",
                s.name
            );
            for p in s.params.iter().filter(|p| p.required) {
                let mut v = full_example(s);
                v["params"].as_object_mut().unwrap().remove(p.name);
                let e = match s.category {
                    Category::Data => data(v).unwrap_err(),
                    Category::Action => action(v).unwrap_err(),
                };
                assert_eq!(
                    e,
                    CommandError::MissingParam {
                        command: s.name,
                        key: p.name
                    }
                );
            }
        }
    }

    #[test]
    fn the_vocabulary_is_the_issues_eighteen_plus_start_run() {
        assert_eq!(
            SPECS
                .iter()
                .filter(|s| s.category == Category::Data)
                .count(),
            8
        );
        assert_eq!(
            SPECS
                .iter()
                .filter(|s| s.category == Category::Action)
                .count(),
            11
        );
        let start =
            ActionCommand::from_value(&json!({"type": "START_RUN", "params": {"task": "x"}}));
        assert_eq!(start.unwrap().to_value()["params"]["task"], "x");
    }

    #[test]
    fn params_may_be_left_out_when_none_are_needed() {
        assert_eq!(
            data(json!({"type": "MEMORY_OVERVIEW"})).unwrap(),
            DataCommand::MemoryOverview
        );
        assert_eq!(
            data(json!({"type": "LIST_BRIDGES"})).unwrap(),
            DataCommand::ListBridges { thread_id: None }
        );
        assert_eq!(
            data_err(json!({"type": "READ_THREAD"})),
            "READ_THREAD: missing param \"thread_id\""
        );
    }

    #[test]
    fn envelope_errors() {
        assert_eq!(
            data_err(json!("SEARCH_THREADS")),
            "a command must be an object {\"type\": \"NAME\", \"params\": {...}}"
        );
        assert_eq!(
            data_err(json!({"type": "LIST_RULES", "id": 1})),
            "unknown key \"id\" in command (allowed: type, params)"
        );
        assert_eq!(
            data_err(json!({"params": {}})),
            "a command needs \"type\": a string such as \"SEARCH_THREADS\""
        );
        assert_eq!(
            data_err(json!({"type": 3})),
            "a command needs \"type\": a string such as \"SEARCH_THREADS\""
        );
        assert_eq!(
            data_err(json!({"type": "LIST_RULES", "params": []})),
            "LIST_RULES: \"params\" must be an object"
        );
    }

    #[test]
    fn unknown_type_lists_the_vocabulary_and_hints_at_case() {
        let e = data_err(json!({"type": "FIND"}));
        assert!(e.starts_with("unknown data command type \"FIND\" (data commands: MEMORY_OVERVIEW, SEARCH_THREADS,"), "{e}");
        assert!(!e.contains("did you mean"));
        let e = data_err(json!({"type": "search_threads", "params": {"query": "x"}}));
        assert!(e.ends_with("; did you mean \"SEARCH_THREADS\"?"), "{e}");
        let e = action_err(json!({"type": "Delete"}));
        assert!(e.contains("action commands: RENAME_THREAD"), "{e}");
    }

    #[test]
    fn wrong_list_says_where_it_goes() {
        assert_eq!(
            data_err(json!({"type": "RENAME_THREAD", "params": {"thread_id": "t", "title": "x"}})),
            "RENAME_THREAD is an action command: put it in actionCommands"
        );
        assert_eq!(
            action_err(json!({"type": "READ_THREAD", "params": {"thread_id": "t"}})),
            "READ_THREAD is a data command: put it in dataCommands"
        );
    }

    #[test]
    fn search_threads_checks() {
        assert_eq!(
            data(json!({"type": "SEARCH_THREADS", "params": {"query": "pool", "limit": 5}}))
                .unwrap(),
            DataCommand::SearchThreads {
                query: "pool".into(),
                limit: Some(5)
            }
        );
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"query": "  "}})),
            "SEARCH_THREADS: \"query\" must not be empty"
        );
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"query": 4}})),
            "SEARCH_THREADS: \"query\" must be a string"
        );
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"query": "a", "limit": 0}})),
            "SEARCH_THREADS: \"limit\" must be between 1 and 50"
        );
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"query": "a", "limit": 51}})),
            "SEARCH_THREADS: \"limit\" must be between 1 and 50"
        );
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"query": "a", "limit": 2.5}})),
            "SEARCH_THREADS: \"limit\" must be an integer"
        );
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"query": "a", "limit": "5"}})),
            "SEARCH_THREADS: \"limit\" must be an integer"
        );
        assert_eq!(
            data_err(
                json!({"type": "SEARCH_THREADS", "params": {"query": "a", "limit": u64::MAX}})
            ),
            "SEARCH_THREADS: \"limit\" must be between 1 and 50"
        );
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"query": "a", "limit": -3}})),
            "SEARCH_THREADS: \"limit\" must be between 1 and 50"
        );
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"q": "a"}})),
            "SEARCH_THREADS: unknown param \"q\" (allowed: query, limit)"
        );
        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        assert_eq!(
            data_err(json!({"type": "SEARCH_THREADS", "params": {"query": long}})),
            "SEARCH_THREADS: \"query\" is longer than 1000 characters"
        );
        // null for an optional param means absent.
        assert_eq!(
            data(json!({"type": "SEARCH_THREADS", "params": {"query": "a", "limit": null}}))
                .unwrap(),
            DataCommand::SearchThreads {
                query: "a".into(),
                limit: None
            }
        );
    }

    #[test]
    fn explore_neighborhood_checks() {
        assert_eq!(
            data(json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": "t1", "depth": 3, "direction": "out"}})).unwrap(),
            DataCommand::ExploreNeighborhood { thread_id: "t1".into(), depth: Some(3), direction: Some(Direction::Out) }
        );
        assert_eq!(
            data_err(
                json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": "t1", "depth": 4}})
            ),
            "EXPLORE_NEIGHBORHOOD: \"depth\" must be between 1 and 3"
        );
        assert_eq!(
            data_err(
                json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": "t1", "direction": "up"}})
            ),
            "EXPLORE_NEIGHBORHOOD: \"direction\" must be one of in, out, both"
        );
        assert_eq!(
            data_err(
                json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": "t1", "direction": "IN"}})
            ),
            "EXPLORE_NEIGHBORHOOD: \"direction\" must be one of in, out, both"
        );
        assert_eq!(
            data_err(json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": "a b"}})),
            "EXPLORE_NEIGHBORHOOD: \"thread_id\" must be an id without spaces"
        );
        assert_eq!(
            data_err(json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": ""}})),
            "EXPLORE_NEIGHBORHOOD: \"thread_id\" must be an id without spaces"
        );
        assert_eq!(
            data_err(json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": 7}})),
            "EXPLORE_NEIGHBORHOOD: \"thread_id\" must be a string id"
        );
    }

    #[test]
    fn threads_in_period_checks_and_modes() {
        let rel =
            data(json!({"type": "THREADS_IN_PERIOD", "params": {"period": "-1_WEEK"}})).unwrap();
        let abs = data(json!({"type": "THREADS_IN_PERIOD", "params": {"period": {"from": "2025-03-01", "to": "2025-03-07"}}})).unwrap();
        assert!(rel.check_kind(SessionKind::Automation).is_ok());
        assert!(abs.check_kind(SessionKind::Chat).is_ok());
        assert!(rel
            .check_kind(SessionKind::Chat)
            .unwrap_err()
            .to_string()
            .contains("absolute period"));
        assert!(abs
            .check_kind(SessionKind::Automation)
            .unwrap_err()
            .to_string()
            .contains("relative period"));
        assert!(DataCommand::ListRules.check_kind(SessionKind::Chat).is_ok());
        let e = data_err(json!({"type": "THREADS_IN_PERIOD", "params": {"period": "yesterday"}}));
        assert!(
            e.starts_with("THREADS_IN_PERIOD: relative period \"yesterday\" must look like"),
            "{e}"
        );
        let e = data_err(
            json!({"type": "THREADS_IN_PERIOD", "params": {"period": {"from": "2025-03-01"}}}),
        );
        assert_eq!(e, "THREADS_IN_PERIOD: period needs \"to\"");
    }

    #[test]
    fn action_checks() {
        assert_eq!(
            action(json!({"type": "CREATE_BRIDGE", "params": {"source_id": "a", "target_id": "b", "relation": "CHILD_OF", "reason": " same feature "}})).unwrap(),
            ActionCommand::CreateBridge { source_id: "a".into(), target_id: "b".into(), relation: Relation::ChildOf, reason: "same feature".into() }
        );
        assert_eq!(action_err(json!({"type": "CREATE_BRIDGE", "params": {"source_id": "a", "target_id": "b", "relation": "child_of", "reason": "r"}})), "CREATE_BRIDGE: \"relation\" must be one of EXTENDS, CONTRADICTS, DEPENDS, REPLACES, CHILD_OF, SIBLING");
        assert_eq!(
            action_err(
                json!({"type": "CREATE_BRIDGE", "params": {"source_id": "a", "target_id": "a", "relation": "SIBLING", "reason": "r"}})
            ),
            "CREATE_BRIDGE: source_id and target_id must be different threads"
        );
        assert_eq!(
            action_err(
                json!({"type": "MERGE_THREADS", "params": {"source_id": "a", "target_id": "a"}})
            ),
            "MERGE_THREADS: source_id and target_id must be different threads"
        );
        assert_eq!(
            action_err(json!({"type": "REMOVE_RULE", "params": {"index": 0}})),
            "REMOVE_RULE: \"index\" must be between 1 and 20"
        );
        assert_eq!(
            action(json!({"type": "REMOVE_RULE", "params": {"index": 2}})).unwrap(),
            ActionCommand::RemoveRule { index: 2 }
        );
        assert_eq!(
            action_err(json!({"type": "ADD_RULE", "params": {"text": "tabs"}})),
            "ADD_RULE: \"text\" needs at least 10 characters"
        );
        assert_eq!(
            action_err(json!({"type": "RENAME_THREAD", "params": {"thread_id": "t", "title": ""}})),
            "RENAME_THREAD: \"title\" must not be empty"
        );
        assert_eq!(
            action_err(json!({"type": "DELETE_BRIDGE", "params": {}})),
            "DELETE_BRIDGE: missing param \"bridge_id\""
        );
        assert_eq!(
            action_err(json!({"type": "DELETE_BRIDGE", "params": {"bridge_id": null}})),
            "DELETE_BRIDGE: missing param \"bridge_id\""
        );
        assert_eq!(
            action_err(
                json!({"type": "ARCHIVE_THREAD", "params": {"thread_id": "t", "reason": "old"}})
            ),
            "ARCHIVE_THREAD: unknown param \"reason\" (allowed: thread_id)"
        );
        assert_eq!(
            data_err(json!({"type": "LIST_RULES", "params": {"all": true}})),
            "LIST_RULES: unknown param \"all\" (it takes no params)"
        );
        let long = "x".repeat(MAX_TITLE_CHARS + 1);
        assert_eq!(
            action_err(json!({"type": "WRITE_NOTE", "params": {"title": long, "content": "c"}})),
            "WRITE_NOTE: \"title\" is longer than 200 characters"
        );
    }

    #[test]
    fn documented_defaults_match_the_constants() {
        let doc = |name: &str, param: &str| {
            spec(name)
                .unwrap()
                .params
                .iter()
                .find(|p| p.name == param)
                .unwrap()
                .doc
        };
        assert!(
            doc("SEARCH_THREADS", "limit").contains(&format!("default {DEFAULT_SEARCH_LIMIT})"))
        );
        assert!(doc("EXPLORE_NEIGHBORHOOD", "depth")
            .contains(&format!("default {DEFAULT_EXPLORE_DEPTH})")));
        assert!(doc("EXPLORE_NEIGHBORHOOD", "direction").contains("default both"));
    }

    #[test]
    fn absolute_periods_round_trip_in_their_written_form() {
        let v = json!({"type": "THREADS_IN_PERIOD", "params": {"period": {"from": "2025-03-01", "to": "2025-03-01T12:00:00Z"}}});
        let c = data(v.clone()).unwrap();
        assert_eq!(c.to_value(), v);
    }

    #[test]
    fn serde_goes_through_the_strict_parser() {
        let c: DataCommand =
            serde_json::from_value(json!({"type": "READ_THREAD", "params": {"thread_id": "t"}}))
                .unwrap();
        assert_eq!(
            c,
            DataCommand::ReadThread {
                thread_id: "t".into()
            }
        );
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"type": "READ_THREAD", "params": {"thread_id": "t"}})
        );
        let e =
            serde_json::from_value::<ActionCommand>(json!({"type": "READ_THREAD"})).unwrap_err();
        assert!(e.to_string().contains("put it in dataCommands"), "{e}");
    }

    #[test]
    fn documentation_covers_every_command_and_the_limits() {
        let limits = AILimitsConfig::default();
        let chat = documentation(&limits, SessionKind::Chat);
        let auto = documentation(&limits, SessionKind::Automation);
        for s in SPECS {
            assert!(chat.contains(&format!("\n- {}: ", s.name)), "{}", s.name);
            assert!(auto.contains(&format!("\n- {}: ", s.name)), "{}", s.name);
            for p in s.params {
                assert!(
                    chat.contains(&format!("\n  - \"{}\"", p.name)),
                    "{} {}",
                    s.name,
                    p.name
                );
            }
        }
        assert!(chat.contains("- SEARCH_THREADS: threads ranked by relevance to the query.\n  - \"query\": string, at most 1000 chars; words to look for\n  - \"limit\" (optional): integer 1..50; most results (default 10)\n"), "{chat}");
        assert!(chat.contains("- LIST_RULES: the user rules, numbered from 1. No params.\n"));
        assert!(chat.contains("At most 3 replies with dataCommands in a row."));
        assert!(chat.contains("At most 10 automatic exchanges per round."));
        assert!(auto.contains("At most 5 replies with dataCommands in a row."));
        assert!(auto.contains("At most 20 automatic exchanges per round."));
        assert!(chat.contains("\"from\"") && !chat.contains("\"-1_DAY\""));
        assert!(auto.contains("\"-1_DAY\""));
        assert!(auto.contains("completed") && !chat.contains("\"completed\""));
        assert!(chat.contains("communicationModule") && !auto.contains("communicationModule"));
        assert_eq!(documentation(&limits, SessionKind::Seed), auto);
    }
}
