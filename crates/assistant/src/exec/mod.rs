//! Runs the model's parsed commands against the memory. Data commands read it and answer in
//! compact plain text; action commands are checked first ([`check_action`], before a person is
//! asked to approve them) and then change it ([`run_action`]).
//!
//! Every thread an answer mentions is named by id and title (`thread_… "DB pool"`), so the
//! model can quote ids back without guessing. Nothing here panics on any input: an unknown id,
//! an unreadable file or a period out of range gives a Failed result whose text says what to do
//! instead. Embeddings are computed by the caller beforehand (they need the async embedder),
//! so this module stays synchronous and runs under the memory lock.

use ai_smartness_capture::extract::{Extractor, LocalExtractor};
use ai_smartness_capture::source::SourceType;
use ai_smartness_core::memory::decay::thread_weight;
use ai_smartness_core::memory::engine::{normalize_topics, EditError, Memory};
use ai_smartness_core::memory::types::{
    Author, BridgeStatus, BridgeType, ThinkBridge, Thread, ThreadStatus,
};
use ai_smartness_core::retrieve::{self, Query, QueryVectors};
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_records::assistant::period::{Period, PeriodConfig};
use ai_smartness_records::assistant::types::{CommandResult, CommandStatus, SessionKind};
use ai_smartness_records::assistant::vocabulary::{
    ActionCommand, DataCommand, Direction, Relation, DEFAULT_EXPLORE_DEPTH, DEFAULT_SEARCH_LIMIT,
    MAX_SEARCH_LIMIT, MAX_TITLE_CHARS,
};
use ai_smartness_redact::redact;
use ai_smartness_store::read_latest_synthesis;
use ai_smartness_store::rules::RulesFile;
use ai_smartness_vectors::normalize;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod action;
mod data;
mod error;
mod helpers;

use action::*;
pub use data::load_synthesis;
use data::*;
pub use error::ExecError;
pub use helpers::outcome;
use helpers::*;

/// Lines of a listing (bridges, neighbourhood, period) before the rest is left out.
pub const MAX_LIST_LINES: usize = 100;
/// Messages READ_THREAD shows: the most recent ones.
pub const READ_MESSAGES: usize = 40;
/// Characters of one message READ_THREAD shows.
pub const MESSAGE_CHARS: usize = 600;
/// Threads in each list of the overview.
pub const OVERVIEW_THREADS: usize = 10;
/// Bridges READ_THREAD shows (LIST_BRIDGES has them all).
const READ_BRIDGES: usize = 30;
/// A one-line gist of a thread.
const GIST_CHARS: usize = 160;
/// A search lists threads scoring at least this: below, nothing of the query was found.
const MIN_SEARCH_SCORE: f32 = 0.01;
const NO_THREAD_HINT: &str = "use an id from SEARCH_THREADS or MEMORY_OVERVIEW";
const NO_BRIDGE_HINT: &str = "use an id from LIST_BRIDGES";

/// What commands run against besides the memory.
#[derive(Debug, Clone, Copy)]
pub struct ExecEnv<'a> {
    /// The session's kind: decides which period form THREADS_IN_PERIOD accepts.
    pub kind: SessionKind,
    /// Relative periods resolve against this (scheduledExecutionTime, or the session's creation).
    pub reference: DateTime<Utc>,
    /// The current time: weights, and the time stamped on changes.
    pub now: DateTime<Utc>,
    /// How days and weeks are cut.
    pub periods: &'a PeriodConfig,
    /// Where the synthesis lives.
    pub paths: &'a ProjectPaths,
    /// The user rules, through their one owner.
    pub rules: &'a RulesFile,
}

/// The outcome of one command: the result kept for audit, and the text for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// Type, status, and on failure the error (for an action that ran: what changed).
    pub result: CommandResult,
    /// Compact plain text for the model (on failure, the error and what to do instead).
    pub text: String,
}

/// Runs a data command. `vectors`: the caller embeds SEARCH_THREADS queries beforehand
/// (None or empty: lexical and topic matching only).
/// `synthesis` is the latest synthesis, read beforehand ([`load_synthesis`]) by a caller that
/// holds the memory's lock: MEMORY_OVERVIEW and READ_SYNTHESIS use it.
pub fn run_data(
    mem: &Memory,
    env: &ExecEnv,
    cmd: &DataCommand,
    vectors: Option<&QueryVectors>,
    synthesis: &SynthesisRead,
) -> Executed {
    let answer = match cmd {
        DataCommand::MemoryOverview => Ok(overview(mem, env, synthesis)),
        DataCommand::SearchThreads { query, limit } => Ok(search(mem, env, query, *limit, vectors)),
        DataCommand::ExploreNeighborhood {
            thread_id,
            depth,
            direction,
        } => explore(mem, thread_id, *depth, *direction),
        DataCommand::ReadThread { thread_id } => read_thread(mem, env, thread_id),
        DataCommand::ListBridges { thread_id } => list_bridges(mem, thread_id.as_deref()),
        DataCommand::ListRules => Ok(list_rules(env)),
        DataCommand::ReadSynthesis => read_synthesis(mem, synthesis),
        DataCommand::ThreadsInPeriod { period } => threads_in_period(mem, env, cmd, period),
    };
    finish(cmd.type_name(), answer, false)
}

/// Validation before anything runs or is shown for approval: unknown thread or bridge ids, a
/// merge of a thread into itself, a rule number out of range, a bridge that already exists, a
/// duplicate rule, a note left empty by redaction. `Err` prints as the message for the model.
pub fn check_action(mem: &Memory, env: &ExecEnv, cmd: &ActionCommand) -> Result<(), ExecError> {
    let name = cmd.type_name();
    match cmd {
        ActionCommand::RenameThread { thread_id, title } => {
            thread(mem, name, thread_id)?;
            let n = title.trim().chars().count();
            if n == 0 || n > MAX_TITLE_CHARS {
                return Err(ExecError::TitleLength { command: name });
            }
        }
        ActionCommand::SuspendThread { thread_id }
        | ActionCommand::ReactivateThread { thread_id }
        | ActionCommand::ArchiveThread { thread_id } => {
            thread(mem, name, thread_id)?;
        }
        ActionCommand::MergeThreads {
            source_id,
            target_id,
        } => {
            if source_id == target_id {
                return Err(ExecError::MergeIntoItself { command: name });
            }
            thread(mem, name, source_id)?;
            thread(mem, name, target_id)?;
        }
        ActionCommand::CreateBridge {
            source_id,
            target_id,
            reason,
            ..
        } => {
            if source_id == target_id {
                return Err(ExecError::BridgeToItself { command: name });
            }
            if reason.trim().is_empty() {
                return Err(ExecError::BridgeWithoutReason { command: name });
            }
            let a = thread(mem, name, source_id)?;
            let b = thread(mem, name, target_id)?;
            if let Some(existing) = mem.graph.bridge_between(source_id, target_id) {
                return Err(ExecError::AlreadyLinked {
                    command: name,
                    source_thread: tref(a),
                    target_thread: tref(b),
                    bridge_id: existing.id.clone(),
                    relation: existing.relation_type.as_str(),
                });
            }
        }
        ActionCommand::DeleteBridge { bridge_id } => {
            bridge(mem, name, bridge_id)?;
        }
        ActionCommand::AddRule { text } => {
            env.rules
                .rules()
                .add(text)
                .map_err(|e| ExecError::rule(name, e))?;
        }
        ActionCommand::RemoveRule { index } => {
            let count = env.rules.rules().rules.len();
            if *index == 0 || *index as usize > count {
                return Err(ExecError::NoRuleNumber {
                    command: name,
                    number: *index,
                    count,
                });
            }
        }
        ActionCommand::WriteNote { title, content } => {
            note_parts(title, content)?;
        }
        ActionCommand::StartRun { task } => {
            if task.trim().is_empty() {
                return Err(ExecError::EmptyTask { command: name });
            }
        }
    }
    Ok(())
}

/// Runs an action (after [`check_action`], which it repeats: the memory may have changed while
/// a person was deciding). `note_embedding`: the caller embeds WRITE_NOTE's "title\ncontent"
/// beforehand (None: the note has no vector and is found by its words and topics).
pub fn run_action(
    mem: &mut Memory,
    env: &ExecEnv,
    cmd: &ActionCommand,
    note_embedding: Option<Vec<f32>>,
) -> Executed {
    let answer = check_action(mem, env, cmd).and_then(|()| apply(mem, env, cmd, note_embedding));
    finish(cmd.type_name(), answer, true)
}

/// Thread ids an action names (for per-thread validation settings). DELETE_BRIDGE names none:
/// its ends are in the memory, see [`touched_threads`].
pub fn action_threads(cmd: &ActionCommand) -> Vec<String> {
    match cmd {
        ActionCommand::RenameThread { thread_id, .. }
        | ActionCommand::SuspendThread { thread_id }
        | ActionCommand::ReactivateThread { thread_id }
        | ActionCommand::ArchiveThread { thread_id } => vec![thread_id.clone()],
        ActionCommand::MergeThreads {
            source_id,
            target_id,
        }
        | ActionCommand::CreateBridge {
            source_id,
            target_id,
            ..
        } => vec![source_id.clone(), target_id.clone()],
        ActionCommand::DeleteBridge { .. }
        | ActionCommand::AddRule { .. }
        | ActionCommand::RemoveRule { .. }
        | ActionCommand::WriteNote { .. }
        | ActionCommand::StartRun { .. } => Vec::new(),
    }
}

/// [`action_threads`] plus the two ends of the bridge DELETE_BRIDGE removes (when it exists).
pub fn touched_threads(mem: &Memory, cmd: &ActionCommand) -> Vec<String> {
    match cmd {
        ActionCommand::DeleteBridge { bridge_id } => mem
            .graph
            .bridge(bridge_id)
            .map(|b| vec![b.source_id.clone(), b.target_id.clone()])
            .unwrap_or_default(),
        _ => action_threads(cmd),
    }
}

/// The memory overview: counts by status, user rules, the latest synthesis, the heaviest active
/// threads and the most recently active ones. The level-2 prompt and MEMORY_OVERVIEW share it.
/// MEMORY_OVERVIEW, with the latest synthesis already read ([`load_synthesis`]: file I/O is
/// never done under the memory's lock).
pub fn overview(mem: &Memory, env: &ExecEnv, synthesis: &SynthesisRead) -> String {
    let g = &mem.graph;
    let mut out = String::new();
    let _ = writeln!(out, "Memory overview ({}):", ts(env.now));
    let count = |s| g.count_by_status(s);
    let bridges = |s| g.bridges().filter(|b| b.status == s).count();
    let rules = env.rules.rules().rules.len().to_string();
    let synthesis = match synthesis {
        Ok(Some((path, v))) => synthesis_time(path, v),
        Ok(None) => "none".into(),
        Err(_) => "unreadable".into(),
    };
    let _ = writeln!(
        out,
        "threads: {} ({} active, {} suspended, {} archived); bridges: {} ({} active, {} weak, {} invalid); user rules: {rules}; latest synthesis: {synthesis}",
        g.thread_count(),
        count(ThreadStatus::Active),
        count(ThreadStatus::Suspended),
        count(ThreadStatus::Archived),
        g.bridge_count(),
        bridges(BridgeStatus::Active),
        bridges(BridgeStatus::Weak),
        bridges(BridgeStatus::Invalid),
    );
    if g.thread_count() == 0 {
        out.push_str("The memory holds no thread yet.\n");
        return out;
    }
    let heavy = mem.most_active(env.now, OVERVIEW_THREADS);
    if !heavy.is_empty() {
        out.push_str("Heaviest active threads:\n");
        for t in heavy {
            let _ = writeln!(
                out,
                "- {} weight {:.2}, {}",
                tref(t),
                thread_weight(t, env.now),
                plural(t.messages.len(), "message")
            );
        }
    }
    let mut recent: Vec<&Thread> = g.threads().collect();
    recent.sort_by(|a, b| b.last_active.cmp(&a.last_active).then(a.id.cmp(&b.id)));
    out.push_str("Most recently active threads:\n");
    for t in recent.iter().take(OVERVIEW_THREADS) {
        let _ = writeln!(
            out,
            "- {} [{}] last active {}",
            tref(t),
            t.status.as_str(),
            ts(t.last_active)
        );
    }
    out
}

/// One line describing an action for a person approving it, e.g.
/// `MERGE_THREADS "Pool timeouts" (thread_…) into "DB pool" (thread_…)`.
pub fn describe_action(mem: &Memory, cmd: &ActionCommand) -> String {
    let t = |id: &str| match mem.graph.thread(id) {
        Some(t) => format!("{:?} ({})", one_line(&t.title, 120), t.id),
        None => format!("unknown thread ({id})"),
    };
    let name = cmd.type_name();
    match cmd {
        ActionCommand::RenameThread { thread_id, title } => {
            format!("{name} {} to {:?}", t(thread_id), one_line(title, 200))
        }
        ActionCommand::SuspendThread { thread_id }
        | ActionCommand::ReactivateThread { thread_id }
        | ActionCommand::ArchiveThread { thread_id } => format!("{name} {}", t(thread_id)),
        ActionCommand::MergeThreads {
            source_id,
            target_id,
        } => format!("{name} {} into {}", t(source_id), t(target_id)),
        ActionCommand::CreateBridge {
            source_id,
            target_id,
            relation,
            reason,
        } => format!(
            "{name} {} {} {}: {:?}",
            t(source_id),
            relation.as_str(),
            t(target_id),
            one_line(reason, 200)
        ),
        ActionCommand::DeleteBridge { bridge_id } => match mem.graph.bridge(bridge_id) {
            Some(b) => format!(
                "{name} {bridge_id} ({} {} {})",
                t(&b.source_id),
                b.relation_type.as_str(),
                t(&b.target_id)
            ),
            None => format!("{name} unknown bridge ({bridge_id})"),
        },
        ActionCommand::AddRule { text } => format!("{name} {:?}", one_line(text, 500)),
        ActionCommand::RemoveRule { index } => {
            format!("{name} number {index} (as numbered by LIST_RULES)")
        }
        ActionCommand::WriteNote { title, content } => format!(
            "{name} {:?}: {:?}",
            one_line(&redact(title).text, 200),
            one_line(&redact(content).text, 200)
        ),
        ActionCommand::StartRun { task } => format!("{name} {:?}", one_line(task, 300)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ai_smartness_core::memory::rules::UserRules;
    use ai_smartness_core::memory::test_support::{emb, t0};
    use ai_smartness_core::memory::types::Message;
    use chrono::{Duration, TimeZone};
    use serde_json::json;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    struct Fx {
        _dir: tempfile::TempDir,
        paths: ProjectPaths,
        periods: PeriodConfig,
        mem: Memory,
        pool: String,
        db: String,
        css: String,
    }

    /// Three threads a day apart; the first DEPENDS on the second.
    fn fixture() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let paths = ProjectPaths::new(dir.path());
        std::fs::create_dir_all(&paths.ai_dir).unwrap();
        let mut mem = Memory::default();
        let pool = mem.add_note(
            "Database pool timeouts",
            "The postgres pool times out under load; max connections raised to 40.",
            emb(&[0, 1]),
            strings(&["postgres", "pool", "timeout"]),
            t0() - Duration::days(1),
        );
        let db = mem.add_note(
            "Connection pool config",
            "Pool size and idle timeout live in config/db.toml.",
            emb(&[2]),
            strings(&["config", "database"]),
            t0(),
        );
        let css = mem.add_note(
            "CSS grid layout",
            "The dashboard uses a 12-column CSS grid.",
            emb(&[9]),
            strings(&["css", "grid"]),
            t0() + Duration::hours(1),
        );
        mem.create_bridge(
            &pool,
            &db,
            BridgeType::Depends,
            "the timeouts depend on the pool config",
            t0(),
        )
        .unwrap();
        Fx {
            _dir: dir,
            paths,
            periods: PeriodConfig::default(),
            mem,
            pool,
            db,
            css,
        }
    }

    fn env<'a>(
        paths: &'a ProjectPaths,
        periods: &'a PeriodConfig,
        kind: SessionKind,
    ) -> ExecEnv<'a> {
        ExecEnv {
            kind,
            reference: t0(),
            now: t0() + Duration::hours(2),
            periods,
            paths,
            // Opened afresh for each command, as the files the tests write are then read.
            rules: Box::leak(Box::new(RulesFile::open(paths.user_rules()).0)),
        }
    }

    fn data(v: Value) -> DataCommand {
        DataCommand::from_value(&v).unwrap()
    }

    fn action(v: Value) -> ActionCommand {
        ActionCommand::from_value(&v).unwrap()
    }

    fn named(id: &str, title: &str) -> String {
        format!("{id} {title:?}")
    }

    #[test]
    fn every_data_command_names_ids_and_titles() {
        let fx = fixture();
        ai_smartness_store::rules::write_rules(
            &fx.paths.user_rules(),
            &UserRules {
                rules: strings(&["Always answer in English please"]),
            },
        )
        .unwrap();
        ai_smartness_store::Store::open(&fx.paths.db())
            .unwrap()
            .save_synthesis(
                t0(),
                &ai_smartness_core::memory::synthesis::build(&fx.mem, t0(), None, None),
            )
            .unwrap();
        let e = env(&fx.paths, &fx.periods, SessionKind::Chat);
        let pool = named(&fx.pool, "Database pool timeouts");
        let db = named(&fx.db, "Connection pool config");
        let css = named(&fx.css, "CSS grid layout");
        let run = |v: Value| {
            let c = data(v);
            let out = run_data(
                &fx.mem,
                &e,
                &c,
                Some(&emb(&[0, 1]).into()),
                &load_synthesis(&e),
            );
            assert_eq!(out.result.command_type, c.type_name());
            assert_eq!(out.result.status, CommandStatus::Success, "{}", out.text);
            assert!(out.result.detail.is_none());
            out.text
        };

        let o = run(json!({"type": "MEMORY_OVERVIEW"}));
        assert_eq!(o, overview(&fx.mem, &e, &load_synthesis(&e)));
        assert!(o.contains("threads: 3 (3 active, 0 suspended, 0 archived); bridges: 1 (1 active, 0 weak, 0 invalid); user rules: 1; latest synthesis: 2026-05-04T09:00Z"), "{o}");
        assert!(o.contains(&pool) && o.contains(&css), "{o}");
        // Most recent first.
        assert!(o.rfind(&css) < o.rfind(&pool), "{o}");

        let o =
            run(json!({"type": "SEARCH_THREADS", "params": {"query": "postgres pool timeouts"}}));
        assert!(o.contains(&format!("1. {pool} score ")), "{o}");
        assert!(o.contains("topics: postgres, pool, timeout"), "{o}");

        let o = run(json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": fx.db}}));
        assert!(
            o.starts_with(&format!(
                "EXPLORE_NEIGHBORHOOD from {db} (depth 1, direction both): 1 thread reached"
            )),
            "{o}"
        );
        assert!(
            o.contains(&format!("- depth 1: {pool} [active] via bridge_")),
            "{o}"
        );
        assert!(
            o.contains(&format!(
                "({} -DEPENDS-> {}, confidence 1.00)",
                fx.pool, fx.db
            )),
            "{o}"
        );

        let o = run(json!({"type": "READ_THREAD", "params": {"thread_id": fx.pool}}));
        assert!(
            o.starts_with(&format!("READ_THREAD {pool}\nstatus active, weight ")),
            "{o}"
        );
        assert!(
            o.contains(&format!(
                "{pool} -DEPENDS-> {db}, confidence 1.00, active: the timeouts"
            )),
            "{o}"
        );
        assert!(o.contains("messages, oldest first (1):\n[2026-05-03T09:00Z assistant note] The postgres pool times out"), "{o}");

        let o = run(json!({"type": "LIST_BRIDGES"}));
        assert!(o.contains(&format!("{pool} -DEPENDS-> {db}")), "{o}");
        let o = run(json!({"type": "LIST_BRIDGES", "params": {"thread_id": fx.css}}));
        assert_eq!(o, format!("LIST_BRIDGES of {css}: no bridges\n"));

        let o = run(json!({"type": "LIST_RULES"}));
        assert_eq!(o, "LIST_RULES: 1 user rule (REMOVE_RULE takes the number):\n1. Always answer in English please\n");

        let o = run(json!({"type": "READ_SYNTHESIS"}));
        assert!(
            o.starts_with(
                "READ_SYNTHESIS: synthesis of 2026-05-04T09:00Z (made by the local generator)"
            ),
            "{o}"
        );
        assert!(o.contains(&format!("- {pool}: ")), "{o}");

        let o = run(
            json!({"type": "THREADS_IN_PERIOD", "params": {"period": {"from": "2026-05-03", "to": "2026-05-03"}}}),
        );
        assert!(o.starts_with("THREADS_IN_PERIOD {\"from\":\"2026-05-03\",\"to\":\"2026-05-03\"} = [2026-05-03T00:00Z, 2026-05-04T00:00Z): 1 thread,"), "{o}");
        assert!(
            o.contains(&format!("- {pool} [active]: 1 of 1 message in the period")),
            "{o}"
        );
        assert!(!o.contains(&fx.db) && !o.contains(&fx.css), "{o}");
    }

    #[test]
    fn unknown_ids_fail_with_a_useful_text() {
        let mut fx = fixture();
        let e = env(&fx.paths, &fx.periods, SessionKind::Chat);
        for v in [
            json!({"type": "READ_THREAD", "params": {"thread_id": "thread_x"}}),
            json!({"type": "EXPLORE_NEIGHBORHOOD", "params": {"thread_id": "thread_x"}}),
            json!({"type": "LIST_BRIDGES", "params": {"thread_id": "thread_x"}}),
        ] {
            let c = data(v);
            let out = run_data(&fx.mem, &e, &c, None, &load_synthesis(&e));
            assert_eq!(out.result.status, CommandStatus::Failed);
            assert_eq!(
                out.text,
                format!(
                    "{}: no thread thread_x; use an id from SEARCH_THREADS or MEMORY_OVERVIEW",
                    c.type_name()
                )
            );
            assert_eq!(out.result.detail.as_deref(), Some(out.text.as_str()));
        }
        let (threads, bridges) = (fx.mem.graph.thread_count(), fx.mem.graph.bridge_count());
        for (v, expected) in [
            (
                json!({"type": "RENAME_THREAD", "params": {"thread_id": "thread_x", "title": "New"}}),
                "RENAME_THREAD: no thread thread_x; use an id",
            ),
            (
                json!({"type": "ARCHIVE_THREAD", "params": {"thread_id": "thread_x"}}),
                "ARCHIVE_THREAD: no thread thread_x",
            ),
            (
                json!({"type": "MERGE_THREADS", "params": {"source_id": "thread_x", "target_id": fx.pool}}),
                "MERGE_THREADS: no thread thread_x",
            ),
            (
                json!({"type": "MERGE_THREADS", "params": {"source_id": fx.pool, "target_id": "thread_y"}}),
                "MERGE_THREADS: no thread thread_y",
            ),
            (
                json!({"type": "CREATE_BRIDGE", "params": {"source_id": fx.pool, "target_id": "thread_y", "relation": "EXTENDS", "reason": "r"}}),
                "CREATE_BRIDGE: no thread thread_y",
            ),
            (
                json!({"type": "DELETE_BRIDGE", "params": {"bridge_id": "bridge_x"}}),
                "DELETE_BRIDGE: no bridge bridge_x; use an id from LIST_BRIDGES",
            ),
            (
                json!({"type": "REMOVE_RULE", "params": {"index": 3}}),
                "REMOVE_RULE: no rule number 3 (there are 0); see LIST_RULES",
            ),
        ] {
            let c = action(v);
            let err = check_action(&fx.mem, &e, &c).unwrap_err().to_string();
            assert!(err.starts_with(expected), "{err}");
            let out = run_action(&mut fx.mem, &e, &c, None);
            assert_eq!(out.result.status, CommandStatus::Failed);
            assert_eq!(out.text, err);
        }
        assert_eq!(
            (fx.mem.graph.thread_count(), fx.mem.graph.bridge_count()),
            (threads, bridges)
        );
    }

    /// Callers can tell what went wrong without reading the text.
    #[test]
    fn failures_are_told_apart_by_variant() {
        let fx = fixture();
        let e = env(&fx.paths, &fx.periods, SessionKind::Chat);
        let archive =
            action(json!({"type": "ARCHIVE_THREAD", "params": {"thread_id": "thread_x"}}));
        assert_eq!(
            check_action(&fx.mem, &e, &archive),
            Err(ExecError::NoThread {
                command: "ARCHIVE_THREAD",
                id: "thread_x".into()
            })
        );
        // The parser refuses this one already; the check holds without it.
        let merge = ActionCommand::MergeThreads {
            source_id: fx.db.clone(),
            target_id: fx.db.clone(),
        };
        assert!(matches!(
            check_action(&fx.mem, &e, &merge),
            Err(ExecError::MergeIntoItself { .. })
        ));
        let link = action(
            json!({"type": "CREATE_BRIDGE", "params": {"source_id": fx.db, "target_id": fx.pool, "relation": "EXTENDS", "reason": "again"}}),
        );
        assert!(matches!(
            check_action(&fx.mem, &e, &link),
            Err(ExecError::AlreadyLinked {
                command: "CREATE_BRIDGE",
                ..
            })
        ));
        e.rules.update(|r| r.add("Always use tabs please")).unwrap();
        let dup = action(json!({"type": "ADD_RULE", "params": {"text": "Always use tabs please"}}));
        assert_eq!(
            check_action(&fx.mem, &e, &dup),
            Err(ExecError::RuleRefused {
                command: "ADD_RULE",
                error: ai_smartness_core::memory::rules::RuleError::Duplicate
            })
        );
    }

    /// An automation scheduled for 06:00 on May 4 runs a day late: "-1_DAY" is still May 3 and
    /// "0_DAY" May 4, whatever the clock says.
    #[test]
    fn relative_periods_follow_the_scheduled_time_not_the_clock() {
        let dir = tempfile::tempdir().unwrap();
        let paths = ProjectPaths::new(dir.path());
        let periods = PeriodConfig::default();
        let mut mem = Memory::default();
        let at = |d: u32, h: u32| Utc.with_ymd_and_hms(2026, 5, d, h, 0, 0).unwrap();
        let mut note = |title: &str, axis: usize, t: DateTime<Utc>| {
            mem.add_note(title, &format!("{title} happened"), emb(&[axis]), vec![], t)
        };
        let before = note("Eve of the run", 0, at(3, 15));
        let scheduled = note("Day of the run", 3, at(4, 12));
        let late = note("Evening of the run", 6, at(4, 20));
        let today = note("Day the run really ran", 9, at(5, 7));
        let e = ExecEnv {
            kind: SessionKind::Automation,
            reference: at(4, 6),
            now: at(5, 8),
            periods: &periods,
            paths: &paths,
            rules: &RulesFile::open(paths.user_rules()).0,
        };
        let run = |p: &str| {
            run_data(
                &mem,
                &e,
                &data(json!({"type": "THREADS_IN_PERIOD", "params": {"period": p}})),
                None,
                &Ok(None),
            )
        };
        let o = run("-1_DAY");
        assert_eq!(o.result.status, CommandStatus::Success);
        assert!(
            o.text.starts_with(
                "THREADS_IN_PERIOD \"-1_DAY\" = [2026-05-03T00:00Z, 2026-05-04T00:00Z): 1 thread,"
            ),
            "{}",
            o.text
        );
        assert!(o.text.contains(&named(&before, "Eve of the run")));
        let o = run("0_DAY").text;
        assert!(o.contains(&scheduled) && o.contains(&late), "{o}");
        assert!(!o.contains(&before) && !o.contains(&today), "{o}");
        // The busiest first, then the latest.
        assert!(o.find(&late) < o.find(&scheduled), "{o}");

        // A chat takes absolute periods only.
        let chat = ExecEnv {
            kind: SessionKind::Chat,
            ..e
        };
        let c = data(json!({"type": "THREADS_IN_PERIOD", "params": {"period": "-1_DAY"}}));
        let o = run_data(&mem, &chat, &c, None, &load_synthesis(&chat));
        assert_eq!(o.result.status, CommandStatus::Failed);
        assert!(
            o.text
                .starts_with("THREADS_IN_PERIOD: in a chat, use an absolute period"),
            "{}",
            o.text
        );
    }

    #[test]
    fn rules_added_and_removed_persist() {
        let mut fx = fixture();
        let e = env(&fx.paths, &fx.periods, SessionKind::Chat);
        let add = |t: &str| action(json!({"type": "ADD_RULE", "params": {"text": t}}));
        for t in [
            "Always use tabs for indentation",
            "Answer in French when asked in French",
        ] {
            let o = run_action(&mut fx.mem, &e, &add(t), None);
            assert_eq!(o.result.status, CommandStatus::Success, "{}", o.text);
            assert!(o.result.detail.is_some());
        }
        let dup = add("always use tabs for indentation.");
        assert_eq!(
            check_action(&fx.mem, &e, &dup).map_err(|e| e.to_string()),
            Err("ADD_RULE: that rule is already there".into())
        );
        assert_eq!(
            run_action(&mut fx.mem, &e, &dup, None).result.status,
            CommandStatus::Failed
        );
        let o = run_data(
            &fx.mem,
            &e,
            &DataCommand::ListRules,
            None,
            &load_synthesis(&e),
        )
        .text;
        assert!(
            o.contains("1. Always use tabs for indentation\n2. Answer in French"),
            "{o}"
        );

        let rm = action(json!({"type": "REMOVE_RULE", "params": {"index": 1}}));
        let o = run_action(&mut fx.mem, &e, &rm, None);
        assert_eq!(
            o.text,
            "REMOVE_RULE: rule 1 removed: \"Always use tabs for indentation\"; 1 rule left (the ones after it moved up by one)"
        );
        let stored = ai_smartness_store::rules::read_rules(&fx.paths.user_rules()).unwrap();
        assert_eq!(
            stored.rules,
            strings(&["Answer in French when asked in French"])
        );
        let out_of_range = action(json!({"type": "REMOVE_RULE", "params": {"index": 2}}));
        assert!(check_action(&fx.mem, &e, &out_of_range).is_err());

        // An unreadable rules file is an error, never replaced.
        std::fs::write(fx.paths.user_rules(), b"{not json").unwrap();
        let o = run_action(&mut fx.mem, &e, &add("Prefer small focused commits"), None);
        assert_eq!(o.result.status, CommandStatus::Failed);
        assert!(
            o.text
                .starts_with("ADD_RULE: the user rules cannot be read"),
            "{}",
            o.text
        );
        assert_eq!(std::fs::read(fx.paths.user_rules()).unwrap(), b"{not json");
        // The last valid rules stay in force meanwhile.
        let o = run_data(
            &fx.mem,
            &e,
            &DataCommand::MemoryOverview,
            None,
            &load_synthesis(&e),
        );
        assert!(o.text.contains("user rules: 1"), "{}", o.text);
    }

    #[test]
    fn merge_and_bridges_through_actions() {
        let mut fx = fixture();
        let e = env(&fx.paths, &fx.periods, SessionKind::Chat);
        let link = action(
            json!({"type": "CREATE_BRIDGE", "params": {"source_id": fx.css, "target_id": fx.db, "relation": "SIBLING", "reason": "both are settings"}}),
        );
        assert_eq!(
            describe_action(&fx.mem, &link),
            format!(
                "CREATE_BRIDGE \"CSS grid layout\" ({}) SIBLING \"Connection pool config\" ({}): \"both are settings\"",
                fx.css, fx.db
            )
        );
        let o = run_action(&mut fx.mem, &e, &link, None);
        assert_eq!(o.result.status, CommandStatus::Success, "{}", o.text);
        assert!(
            o.text.contains(&format!(
                "{} -SIBLING-> {}, confidence 1.00, active: both are settings",
                named(&fx.css, "CSS grid layout"),
                named(&fx.db, "Connection pool config")
            )),
            "{}",
            o.text
        );
        // Either direction counts as existing.
        let back = action(
            json!({"type": "CREATE_BRIDGE", "params": {"source_id": fx.db, "target_id": fx.css, "relation": "EXTENDS", "reason": "again"}}),
        );
        let err = check_action(&fx.mem, &e, &back).unwrap_err().to_string();
        assert!(err.contains("are already linked by bridge_"), "{err}");

        let merge = action(
            json!({"type": "MERGE_THREADS", "params": {"source_id": fx.pool, "target_id": fx.db}}),
        );
        assert_eq!(
            describe_action(&fx.mem, &merge),
            format!(
                "MERGE_THREADS \"Database pool timeouts\" ({}) into \"Connection pool config\" ({})",
                fx.pool, fx.db
            )
        );
        assert_eq!(action_threads(&merge), vec![fx.pool.clone(), fx.db.clone()]);
        let o = run_action(&mut fx.mem, &e, &merge, None);
        assert_eq!(o.result.status, CommandStatus::Success, "{}", o.text);
        assert!(o.text.contains("1 message moved (2 in all)"), "{}", o.text);
        assert!(fx.mem.graph.thread(&fx.pool).is_none());
        // The pool-db bridge would loop: gone; the css-db one stays.
        assert_eq!(fx.mem.graph.bridge_count(), 1);
        let read = data(json!({"type": "READ_THREAD", "params": {"thread_id": fx.db}}));
        let o = run_data(&fx.mem, &e, &read, None, &load_synthesis(&e)).text;
        assert!(
            o.contains("The postgres pool times out") && o.contains("config/db.toml"),
            "{o}"
        );
        // The moved message is found by its words, in its new thread.
        let s = data(json!({"type": "SEARCH_THREADS", "params": {"query": "postgres load"}}));
        let o = run_data(&fx.mem, &e, &s, None, &load_synthesis(&e)).text;
        assert!(
            o.contains(&format!("1. {}", named(&fx.db, "Connection pool config"))),
            "{o}"
        );

        // Delete the remaining bridge; describing it names both ends.
        let bid = fx.mem.graph.bridges().next().unwrap().id.clone();
        let del = action(json!({"type": "DELETE_BRIDGE", "params": {"bridge_id": bid}}));
        assert!(describe_action(&fx.mem, &del).contains("\"CSS grid layout\""));
        assert_eq!(action_threads(&del), Vec::<String>::new());
        assert_eq!(
            touched_threads(&fx.mem, &del),
            vec![fx.css.clone(), fx.db.clone()]
        );
        assert_eq!(
            run_action(&mut fx.mem, &e, &del, None).result.status,
            CommandStatus::Success
        );
        assert_eq!(fx.mem.graph.bridge_count(), 0);
    }

    #[test]
    fn status_changes_rename_and_notes() {
        let mut fx = fixture();
        let e = env(&fx.paths, &fx.periods, SessionKind::Chat);
        let mut act =
            |v: Value, emb: Option<Vec<f32>>| run_action(&mut fx.mem, &e, &action(v), emb);
        let o = act(
            json!({"type": "SUSPEND_THREAD", "params": {"thread_id": fx.css}}),
            None,
        );
        assert_eq!(
            o.text,
            format!(
                "SUSPEND_THREAD: {} is now suspended (was active)",
                named(&fx.css, "CSS grid layout")
            )
        );
        let o = act(
            json!({"type": "SUSPEND_THREAD", "params": {"thread_id": fx.css}}),
            None,
        );
        assert!(o.text.ends_with("was already suspended"), "{}", o.text);
        let o = act(
            json!({"type": "REACTIVATE_THREAD", "params": {"thread_id": fx.css}}),
            None,
        );
        assert!(
            o.text.ends_with("is now active (was suspended)"),
            "{}",
            o.text
        );
        let o = act(
            json!({"type": "RENAME_THREAD", "params": {"thread_id": fx.css, "title": "Dashboard grid"}}),
            None,
        );
        assert_eq!(
            o.text,
            format!(
                "RENAME_THREAD: {} renamed (was \"CSS grid layout\")",
                named(&fx.css, "Dashboard grid")
            )
        );
        let o = act(
            json!({"type": "ARCHIVE_THREAD", "params": {"thread_id": fx.css}}),
            None,
        );
        assert_eq!(o.result.status, CommandStatus::Success);

        let o = act(
            json!({"type": "WRITE_NOTE", "params": {"title": "Staging deploy checklist", "content": "Run the migrations before the deploy.\nThe staging password=hunter2secret rotates weekly."}}),
            Some(emb(&[12])),
        );
        assert_eq!(o.result.status, CommandStatus::Success, "{}", o.text);
        let id = fx
            .mem
            .graph
            .threads()
            .find(|t| t.title == "Staging deploy checklist")
            .unwrap()
            .id
            .clone();
        assert!(
            o.text.starts_with(&format!(
                "WRITE_NOTE: note stored as {}",
                named(&id, "Staging deploy checklist")
            )),
            "{}",
            o.text
        );
        let t = fx.mem.graph.thread(&id).unwrap();
        assert!(!t.topics.is_empty() && t.embedding.is_some());
        assert!(
            !t.messages[0].content.contains("hunter2secret"),
            "{}",
            t.messages[0].content
        );
        // Found again by its words.
        let s = data(
            json!({"type": "SEARCH_THREADS", "params": {"query": "staging migrations checklist"}}),
        );
        let o = run_data(&fx.mem, &e, &s, None, &load_synthesis(&e)).text;
        assert!(
            o.contains(&format!("1. {}", named(&id, "Staging deploy checklist"))),
            "{o}"
        );

        let blank = action(
            json!({"type": "WRITE_NOTE", "params": {"title": "Secret", "content": "<private>all of it</private>"}}),
        );
        assert!(check_action(&fx.mem, &e, &blank).is_err());
    }

    #[test]
    fn odd_inputs_never_panic_and_long_listings_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let paths = ProjectPaths::new(dir.path());
        let periods = PeriodConfig::default();
        let e = env(&paths, &periods, SessionKind::Chat);
        let empty = Memory::default();
        for c in [
            DataCommand::MemoryOverview,
            DataCommand::SearchThreads {
                query: String::new(),
                limit: Some(u32::MAX),
            },
            DataCommand::ListBridges { thread_id: None },
            DataCommand::ListRules,
            DataCommand::ReadSynthesis,
        ] {
            let o = run_data(
                &empty,
                &e,
                &c,
                Some(&vec![f32::NAN, 1.0].into()),
                &load_synthesis(&e),
            );
            assert_eq!(o.result.status, CommandStatus::Success, "{}", o.text);
        }
        assert!(
            overview(&empty, &e, &load_synthesis(&e)).contains("The memory holds no thread yet.")
        );
        assert!(run_data(
            &empty,
            &e,
            &DataCommand::ReadSynthesis,
            None,
            &load_synthesis(&e)
        )
        .text
        .contains("no synthesis yet"));

        // A hub with 105 notes linked to it, and 70 messages of its own.
        let mut mem = Memory::default();
        let hub = mem.add_note("Hub \"quoted\"\ntitle", "hub", vec![], vec![], t0());
        for i in 0..105 {
            let n = mem.add_note(&format!("Leaf {i}"), "leaf", vec![], vec![], t0());
            mem.create_bridge(&n, &hub, BridgeType::ChildOf, "part of it", t0())
                .unwrap();
        }
        let first = mem.graph.thread(&hub).unwrap().messages[0].clone();
        for i in 0..69 {
            let m = Message {
                id: format!("msg_{i}"),
                content: "é".repeat(900),
                timestamp: t0() + Duration::minutes(i + 1),
                ..first.clone()
            };
            mem.graph.thread_mut(&hub).unwrap().messages.push(m);
        }
        let o = run_data(
            &mem,
            &e,
            &data(json!({"type": "READ_THREAD", "params": {"thread_id": hub}})),
            Some(&vec![1.0].into()),
            &load_synthesis(&e),
        )
        .text;
        assert!(
            o.starts_with(&format!("READ_THREAD {hub} \"Hub \\\"quoted\\\" title\"")),
            "{o}"
        );
        assert!(
            o.contains("messages, oldest first (the last 40 of 70; 30 older ones left out):"),
            "{o}"
        );
        assert!(
            o.contains("(75 more: LIST_BRIDGES with this thread_id lists them all)"),
            "{o}"
        );
        assert!(o.contains(&format!("{}…", "é".repeat(600))));
        let o = run_data(
            &mem,
            &e,
            &DataCommand::ListBridges { thread_id: None },
            None,
            &load_synthesis(&e),
        )
        .text;
        assert!(o.ends_with("(5 more left out, the weakest)\n"), "{o}");
        let o = run_data(
            &mem,
            &e,
            &DataCommand::ExploreNeighborhood {
                thread_id: hub.clone(),
                depth: Some(200),
                direction: Some(Direction::Out),
            },
            None,
            &load_synthesis(&e),
        )
        .text;
        assert!(
            o.contains("(depth 3, direction out): no thread reached"),
            "{o}"
        );
        let o = run_data(
            &mem,
            &e,
            &DataCommand::ExploreNeighborhood {
                thread_id: hub.clone(),
                depth: Some(0),
                direction: Some(Direction::In),
            },
            None,
            &load_synthesis(&e),
        )
        .text;
        assert!(
            o.contains("(depth 1, direction in): 105 threads reached"),
            "{o}"
        );
        let q = DataCommand::SearchThreads {
            query: "leaf".into(),
            limit: Some(3),
        };
        let o = run_data(
            &mem,
            &e,
            &q,
            Some(&vec![0.0; 3].into()),
            &load_synthesis(&e),
        )
        .text;
        assert!(o.contains("3 threads, best first"), "{o}");
        // Bad ids in actions are refused before anything runs.
        let weird = ActionCommand::RenameThread {
            thread_id: "../../etc".into(),
            title: "x".into(),
        };
        assert!(describe_action(&mem, &weird).contains("unknown thread (../../etc)"));
        assert!(check_action(&mem, &e, &weird).is_err());
    }
}
