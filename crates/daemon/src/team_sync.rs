//! Sending shared memory to the team store, in the background: hooks never wait on the
//! network.
//!
//! The outbox is the memory itself plus a log of what the store has taken
//! (`db/team_sent.log`, one message id a line, fsynced per batch): a shared thread's messages
//! not in the log are pending. They go in batches, each written to the store idempotently
//! (by id), then noted in the log. With the store down, nothing moves and nothing is lost;
//! when it is back, everything pending goes, once (a batch the store took but the log did not
//! note is sent again and stored once). Failures back off from one second to a minute.
//!
//! What goes: threads shared by hand, or every thread when `team.share` is `all`; never a
//! thread marked private; and of those, only the kinds of message `team.share_kinds` names
//! (every kind when it is empty). It was cleaned and redacted when it was captured (secrets and
//! `<private>` spans never reach the memory).
//!
//! Thread metadata (title, status) goes when it changes here, stamped with when the sender saw
//! it change; the store keeps the latest edit (last writer wins). What the store was last
//! told of each thread is kept in `db/team_threads.json`, so a restart does not send an old
//! title again as if it were new.

use crate::state::{ConfigHandle, Lifecycle, MemoryHandle};
use ai_smartness_config::{TeamConfig, TeamShare};
use ai_smartness_team::outbox::{self, Origin, SharedMessage, SharedThread};
use ai_smartness_team::search::Depth;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Messages sent in one round (two transactions, one per connection).
const BATCH: usize = 500;
/// First wait after a failure; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Extra rows a search asks for, for this machine's own messages it leaves out.
const OWN_HITS_ALLOWANCE: usize = 20;
/// After the store failed a prompt (an error, or no answer within the budget), prompts go on
/// without it this long: a store that hangs costs one prompt its budget, not every prompt.
/// Searches a person asks for (`ai search --team`, recall) still try, and a success ends it.
const PROMPT_PAUSE: Duration = Duration::from_secs(30);
/// How often an idle sender looks again (config changes, a share made while it slept).
const IDLE_CHECK: Duration = Duration::from_secs(5);

use ai_smartness_replies::{TeamHitView, TeamResults, TeamSyncState};

/// The ids the store has taken, kept in a log.
struct SentLog {
    path: PathBuf,
    ids: HashSet<String>,
}

impl SentLog {
    /// Loads the log; a line torn by a crash is ignored (its message is sent again, and stored
    /// once).
    fn load(path: PathBuf) -> SentLog {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        let ids = complete.lines().map(str::to_string).collect();
        SentLog { path, ids }
    }

    fn append(&self, ids: &[String]) -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let mut text = String::new();
        for id in ids {
            text.push_str(id);
            text.push('\n');
        }
        f.write_all(text.as_bytes())?;
        f.sync_data()
    }

    /// Rewrites the log with only `live` (the ids of messages the memory still holds), when it
    /// holds many more: a forgotten thread's ids would otherwise stay in it, and in memory,
    /// for ever. Returns whether it rewrote.
    fn compact(&mut self, live: HashSet<String>) -> std::io::Result<bool> {
        if self.ids.len() <= 2 * live.len() + COMPACT_SLACK {
            return Ok(false);
        }
        let mut text = String::with_capacity(live.len() * 32);
        for id in &live {
            text.push_str(id);
            text.push('\n');
        }
        ai_smartness_proto::atomic::write_atomic(&self.path, text.as_bytes())?;
        self.ids = live;
        Ok(true)
    }
}

/// Ids of forgotten messages the sent log may hold before it is rewritten without them.
const COMPACT_SLACK: usize = 10_000;

/// What the store was last told of a thread's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SentMeta {
    title: String,
    status: String,
    /// When this machine's title and status became these.
    edited_at: DateTime<Utc>,
}

/// What the store was last told of each shared thread, kept across restarts.
struct SentThreads {
    path: PathBuf,
    threads: HashMap<String, SentMeta>,
}

impl SentThreads {
    /// Loads the record; an unreadable one starts empty (each thread's metadata is then sent
    /// again, stamped with its last activity, and an edit the store has that is newer stays).
    fn load(path: PathBuf) -> SentThreads {
        let threads = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        SentThreads { path, threads }
    }

    fn save(&self) -> std::io::Result<()> {
        ai_smartness_proto::atomic::write_json_atomic(&self.path, &self.threads)
    }
}

/// The sender and what it reports.
#[derive(Clone)]
pub struct TeamSync {
    memory: MemoryHandle,
    config: ConfigHandle,
    life: Lifecycle,
    /// The project folder: its git remote is its identity in the team.
    root: PathBuf,
    sent: Arc<Mutex<SentLog>>,
    /// The thread metadata the store has (the sender's alone; shared for its file writes).
    threads_sent: Arc<Mutex<SentThreads>>,
    state: Arc<Mutex<TeamSyncState>>,
    /// The connection searches use (the sender has its own): made when first needed, dropped
    /// after a failure.
    reader: Arc<tokio::sync::Mutex<Option<ai_smartness_team::search::Searcher>>>,
    /// The project's identity, once read from git.
    project: Arc<tokio::sync::OnceCell<String>>,
    /// This machine's name, on what it shares.
    machine: String,
    /// Until when prompts skip the store (see [`PROMPT_PAUSE`]).
    prompts_paused_until: Arc<Mutex<Option<tokio::time::Instant>>>,
}

impl TeamSync {
    pub fn new(
        memory: MemoryHandle,
        config: ConfigHandle,
        life: Lifecycle,
        root: PathBuf,
        db: PathBuf,
    ) -> TeamSync {
        TeamSync {
            memory,
            config,
            life,
            root,
            sent: Arc::new(Mutex::new(SentLog::load(db.join("team_sent.log")))),
            threads_sent: Arc::new(Mutex::new(SentThreads::load(db.join("team_threads.json")))),
            state: Arc::default(),
            reader: Arc::default(),
            project: Arc::default(),
            machine: machine_name(),
            prompts_paused_until: Arc::default(),
        }
    }

    /// [`TeamSync::search`] for a prompt's context, whose vector is still being made: the
    /// lexical order is asked at once, the dense one when `vector` comes (`None`: the prompt
    /// could not be embedded). Skipped at once while the store is known to fail (see
    /// [`PROMPT_PAUSE`]).
    pub async fn search_for_prompt(
        &self,
        terms: &[String],
        vector: impl std::future::Future<Output = Option<Vec<f32>>>,
        limit: usize,
        budget: Duration,
    ) -> TeamResults {
        let paused = *self
            .prompts_paused_until
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(until) = paused.filter(|u| *u > tokio::time::Instant::now()) {
            let left = until - tokio::time::Instant::now();
            return TeamResults::failed(format!(
                "skipped: the store failed a prompt moments ago (tried again in {}s)",
                left.as_secs() + 1
            ));
        }
        let found = self
            .search_within(terms, vector, limit, budget, Depth::Prompt)
            .await;
        self.settle(found)
    }

    /// The team store's best messages for a query (its distinctive words, see
    /// [`lexical_terms`], and its vector), within `budget`; or why there are none (the caller
    /// goes on with local memory).
    pub async fn search(
        &self,
        terms: &[String],
        vector: &[f32],
        limit: usize,
        budget: Duration,
        depth: Depth,
    ) -> TeamResults {
        let vector = vector.to_vec();
        let found = self
            .search_within(terms, async { Some(vector) }, limit, budget, depth)
            .await;
        self.settle(found)
    }

    /// A search's outcome as results; a store that failed pauses prompts' searches for
    /// [`PROMPT_PAUSE`], a success ends the pause.
    fn settle(&self, found: Result<Vec<TeamHitView>, SearchFailure>) -> TeamResults {
        let (found, store_failed) = match found {
            Ok(hits) => (TeamResults { hits, error: None }, false),
            Err(SearchFailure::Store(e)) => (TeamResults::failed(e), true),
            Err(SearchFailure::NoVector) => (TeamResults::failed("the query has no vector"), false),
        };
        *self
            .prompts_paused_until
            .lock()
            .unwrap_or_else(|p| p.into_inner()) =
            store_failed.then(|| tokio::time::Instant::now() + PROMPT_PAUSE);
        found
    }

    /// Both orders, in two requests: the lexical one needs only `terms`, so it is on its way
    /// while `vector` is made. The connection is not held in between, and `budget` is the
    /// store's: the wait for the vector (the model's work, not the store's) is not counted.
    async fn search_within(
        &self,
        terms: &[String],
        vector: impl std::future::Future<Output = Option<Vec<f32>>>,
        limit: usize,
        budget: Duration,
        depth: Depth,
    ) -> Result<Vec<TeamHitView>, SearchFailure> {
        let team = self.config.get().team;
        if !team.joined() {
            return Err(SearchFailure::Store(
                "this project is not in a team (ai team join)".into(),
            ));
        }
        let late = || SearchFailure::Store(format!("no answer within {budget:?}"));
        let asked = tokio::time::Instant::now();
        let lexical = tokio::time::timeout(budget, async {
            let project = self.project().await.map_err(|e| e.to_string())?;
            let order = self
                .ask(&team, async |searcher| {
                    searcher.lexical(&team.name, &project, terms, depth).await
                })
                .await
                .map_err(|e| e.to_string())?;
            Ok((project, order))
        })
        .await
        .map_err(|_| late())?
        .map_err(SearchFailure::Store)?;
        let (project, lexical) = lexical;
        let left = budget.saturating_sub(asked.elapsed());
        let Some(vector) = vector.await else {
            return Err(SearchFailure::NoVector);
        };
        tokio::time::timeout(left, async {
            let found = self
                .ask(&team, async |searcher| {
                    searcher
                        .fused(
                            &team.name,
                            &project,
                            &vector,
                            &lexical,
                            // What this machine shared itself is in its own memory already:
                            // room for more.
                            (limit + OWN_HITS_ALLOWANCE) as i64,
                            depth,
                        )
                        .await
                })
                .await
                .map_err(|e| e.to_string())?;
            Ok(self.own_left_out(found, limit))
        })
        .await
        .map_err(|_| late())?
        .map_err(SearchFailure::Store)
    }

    /// The hits not shared by this machine itself, `limit` at most.
    fn own_left_out(
        &self,
        hits: Vec<ai_smartness_team::search::TeamHit>,
        limit: usize,
    ) -> Vec<TeamHitView> {
        let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        hits.into_iter()
            .filter(|h| !sent.ids.contains(&h.id))
            .take(limit)
            .map(|h| TeamHitView {
                message_id: h.id,
                thread_id: h.thread_id,
                thread_title: h.thread_title,
                author: h.author,
                machine: h.machine,
                at: h.created_at,
                snippet: ai_smartness_core::retrieve::one_line(&h.content, 300),
                score: (h.score * 10_000.0).round() / 10_000.0,
                dense: (h.dense * 1000.0).round() / 1000.0,
            })
            .collect()
    }

    /// `query`'s answer on the search connection, opened first when there is none. A failed
    /// query drops the connection: the next one opens a fresh one.
    async fn ask<T>(
        &self,
        team: &TeamConfig,
        query: impl AsyncFnOnce(
            &ai_smartness_team::search::Searcher,
        ) -> Result<T, ai_smartness_team::TeamError>,
    ) -> Result<T, ai_smartness_team::TeamError> {
        let mut reader = self.reader.lock().await;
        let searcher = match reader.as_ref() {
            Some(searcher) => searcher,
            None => reader.insert(Self::open_reader(team).await?),
        };
        query(searcher).await.inspect_err(|_| *reader = None)
    }

    /// A new search connection to the team store.
    async fn open_reader(
        team: &TeamConfig,
    ) -> Result<ai_smartness_team::search::Searcher, ai_smartness_team::TeamError> {
        let password = ai_smartness_team::password_for(&team.url, team.password_env.as_deref());
        let client = ai_smartness_team::connect(&team.url, password.as_deref()).await?;
        // Two statements prepared and one catalog read: bounded like the connection itself.
        let bound = ai_smartness_team::CONNECT_TIMEOUT;
        tokio::time::timeout(bound, ai_smartness_team::search::Searcher::new(client))
            .await
            .map_err(|_| ai_smartness_team::TeamError::Timeout(bound))?
    }

    /// The project's identity in the team, read from git once (sender and searches share it).
    async fn project(&self) -> Result<String, ProjectIdError> {
        let root = self.root.clone();
        self.project
            .get_or_try_init(|| async move {
                Ok(
                    tokio::task::spawn_blocking(move || ai_smartness_team::project_id(&root))
                        .await??,
                )
            })
            .await
            .cloned()
    }

    /// Whether the project is in a team (`team.url` set).
    pub fn joined(&self) -> bool {
        self.config.get().team.joined()
    }

    pub fn state(&self) -> TeamSyncState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_error(&self, e: Option<String>) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).error = e;
    }

    /// Runs until the daemon stops.
    pub async fn run(self) {
        let mut stop = self.life.subscribe_shutdown();
        let mut saved = self.memory.subscribe_saved();
        // Two connections, each writing half of a batch: an HNSW insert is CPU work for the
        // server, one core per connection, so two nearly double the rate.
        let mut writers: Option<(tokio_postgres::Client, tokio_postgres::Client)> = None;
        let mut backoff = FIRST_BACKOFF;
        let mut compacted = false;
        // The first prompt should not pay for opening the search connection.
        let team = self.config.get().team;
        if team.joined() {
            if let Err(e) = self.ask(&team, async |_| Ok(())).await {
                tracing::info!("team store not reachable yet: {e}");
            }
        }
        loop {
            let team = self.config.get().team;
            if !team.joined() {
                writers = None;
                tokio::select! {
                    _ = tokio::time::sleep(IDLE_CHECK) => {}
                    _ = stop.recv() => return,
                }
                continue;
            }
            let project = match self.project().await {
                Ok(p) => p,
                Err(e) => {
                    self.set_error(Some(e.to_string()));
                    tokio::select! {
                        _ = tokio::time::sleep(MAX_BACKOFF) => {}
                        _ = stop.recv() => return,
                    }
                    continue;
                }
            };
            let o = Origin {
                team: team.name.clone(),
                project,
                author: team.author.clone(),
                machine: self.machine.clone(),
            };
            let (threads, messages) = self.pending(&team);
            if messages.is_empty() && threads.is_empty() {
                if !compacted {
                    // Once per start, when caught up: the log loses forgotten messages' ids.
                    compacted = true;
                    self.compact_sent_log().await;
                }
                tokio::select! {
                    _ = saved.changed() => {}
                    _ = tokio::time::sleep(IDLE_CHECK) => {}
                    _ = stop.recv() => return,
                }
                continue;
            }
            if writers.is_none() {
                let password =
                    ai_smartness_team::password_for(&team.url, team.password_env.as_deref());
                let connect = || ai_smartness_team::connect(&team.url, password.as_deref());
                let connected = async {
                    let (mut first, second) = tokio::try_join!(connect(), connect())?;
                    // A store joined by an older build is brought up to this one's schema
                    // (joining does it too; the check costs one query).
                    if ai_smartness_team::migrate::current_version(&first).await?
                        < ai_smartness_team::SCHEMA_VERSION
                    {
                        ai_smartness_team::migrate(&mut first).await?;
                    }
                    Ok::<_, ai_smartness_team::TeamError>((first, second))
                };
                match connected.await {
                    Ok(pair) => writers = Some(pair),
                    Err(e) => {
                        tracing::warn!("team store: {e}; retrying in {backoff:?}");
                        self.set_error(Some(e.to_string()));
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = stop.recv() => return,
                        }
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        continue;
                    }
                }
            }
            let Some((first, second)) = writers.as_mut() else {
                continue;
            };
            // Thread rows go with the first half only: two transactions upserting one row
            // would wait on each other.
            let (a, b) = messages.split_at(messages.len() / 2);
            let sent = tokio::try_join!(
                outbox::send(first, &o, &threads, a),
                outbox::send(second, &o, &[], b)
            );
            match sent.map(|(x, y)| x + y) {
                Ok(new) => {
                    let ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
                    let sent = self.sent.clone();
                    let noted = tokio::task::spawn_blocking(move || {
                        let mut log = sent.lock().unwrap_or_else(|p| p.into_inner());
                        log.append(&ids)?;
                        log.ids.extend(ids);
                        Ok::<_, std::io::Error>(())
                    })
                    .await;
                    if let Ok(Err(e)) | Err(e) = noted.map_err(std::io::Error::other) {
                        // The store has them; they will be sent again and stored once.
                        tracing::warn!("team: what was sent is not noted: {e}");
                    }
                    self.note_threads(threads).await;
                    let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                    state.sent += new;
                    state.error = None;
                    backoff = FIRST_BACKOFF;
                }
                Err(e) => {
                    tracing::warn!("team store: {e}; retrying in {backoff:?}");
                    self.set_error(Some(e.to_string()));
                    // A half the store took is sent again and stored once.
                    writers = None;
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.recv() => return,
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// Drops from the sent log the ids of messages the memory no longer holds.
    async fn compact_sent_log(&self) {
        let live: HashSet<String> = {
            let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
            let mem = self.memory.lock();
            mem.graph
                .threads()
                .flat_map(|t| t.messages.iter())
                .filter(|m| sent.ids.contains(&m.id))
                .map(|m| m.id.clone())
                .collect()
        };
        let sent = self.sent.clone();
        let done = tokio::task::spawn_blocking(move || {
            sent.lock().unwrap_or_else(|p| p.into_inner()).compact(live)
        })
        .await;
        match done {
            Ok(Ok(true)) => tracing::info!("team: sent log rewritten without forgotten messages"),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::warn!("team: the sent log could not be rewritten: {e}"),
            Err(e) => tracing::warn!("team: the sent log could not be rewritten: {e}"),
        }
    }

    /// Notes the thread metadata the store now has.
    async fn note_threads(&self, threads: Vec<SharedThread>) {
        if threads.is_empty() {
            return;
        }
        let record = self.threads_sent.clone();
        // An unreadable stamp counts as edited now, by the daemon's clock.
        let now = self.memory.now();
        let saved = tokio::task::spawn_blocking(move || {
            let mut record = record.lock().unwrap_or_else(|p| p.into_inner());
            for t in threads {
                let edited_at = DateTime::parse_from_rfc3339(&t.edited_at)
                    .map_or(now, |d| d.with_timezone(&Utc));
                record.threads.insert(
                    t.id,
                    SentMeta {
                        title: t.title,
                        status: t.status,
                        edited_at,
                    },
                );
            }
            record.save()
        })
        .await;
        if let Ok(Err(e)) | Err(e) = saved.map_err(std::io::Error::other) {
            // Sent again at the next start, with the same or an older stamp: harmless.
            tracing::warn!("team: the threads sent are not noted: {e}");
        }
    }

    /// Shared threads whose metadata the store lacks, and up to [`BATCH`] messages it lacks
    /// (with their threads' metadata). Read under the memory lock: no I/O there.
    fn pending(&self, team: &TeamConfig) -> (Vec<SharedThread>, Vec<SharedMessage>) {
        let share_all = team.share == TeamShare::All;
        let now = self.memory.now();
        let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        let threads_sent = self.threads_sent.lock().unwrap_or_else(|p| p.into_inner());
        let mem = self.memory.lock();
        let mut threads = Vec::new();
        let mut messages = Vec::new();
        let mut pending = 0;
        for t in mem.graph.threads() {
            if !t.sharing.shares(share_all) || t.merged_into.is_some() {
                continue;
            }
            let status = t.status.as_str();
            let mut shareable = t
                .messages
                .iter()
                .filter(|m| {
                    team.shares_kind(m.metadata.get("source_type").and_then(|v| v.as_str()))
                })
                .peekable();
            if shareable.peek().is_none() {
                // Nothing of it may leave: not even its title.
                continue;
            }
            let unsent = shareable.filter(|m| !sent.ids.contains(&m.id));
            let mut any = false;
            for m in unsent {
                pending += 1;
                if messages.len() >= BATCH {
                    continue;
                }
                any = true;
                messages.push(SharedMessage {
                    id: m.id.clone(),
                    thread_id: t.id.clone(),
                    content: m.content.clone(),
                    embedding: m.embedding.as_ref().map(|v| v.to_f32()),
                    created_at: m.timestamp.to_rfc3339(),
                });
            }
            let known = threads_sent.threads.get(&t.id);
            let changed = known.is_none_or(|k| k.title != t.title || k.status != status);
            if !(any || changed) {
                continue;
            }
            // Seen changed now; never seen: as old as its last activity, so a newer edit the
            // store already has from elsewhere stays.
            let edited_at = match known {
                Some(k) if !changed => k.edited_at,
                Some(_) => now,
                None => t.last_active.min(now),
            };
            threads.push(SharedThread {
                id: t.id.clone(),
                title: t.title.clone(),
                status: status.to_string(),
                edited_at: edited_at.to_rfc3339(),
            });
        }
        self.state.lock().unwrap_or_else(|p| p.into_inner()).pending = pending;
        (threads, messages)
    }
}

/// Why the project's identity in the team could not be read.
#[derive(Debug, thiserror::Error)]
enum ProjectIdError {
    /// No git remote, or one that cannot be read.
    #[error(transparent)]
    Git(#[from] ai_smartness_team::TeamError),
    /// The blocking task reading it panicked or was cancelled.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

/// Why a team search found nothing.
enum SearchFailure {
    /// The store failed or was late: prompts skip it for a while.
    Store(String),
    /// The query could not be embedded: the store is not to blame.
    NoVector,
}

/// The words a team search asks the full-text index for: the query's words the memory does
/// not find common (their stems), else its topics' words.
pub fn lexical_terms<'a>(
    stems: impl IntoIterator<Item = &'a str>,
    topics: &[String],
) -> Vec<String> {
    // Stems are asked as prefixes of the store's words; a stem that turned a final y into i
    // (nightly, nightli) is no prefix of the word: without its i it is.
    let words: Vec<String> = stems
        .into_iter()
        .map(|w| match w.strip_suffix('i') {
            Some(root) if root.len() >= 3 => root.to_string(),
            _ => w.to_string(),
        })
        .collect();
    if !words.is_empty() {
        return words;
    }
    topics
        .iter()
        .flat_map(|t| t.split_whitespace())
        .map(str::to_string)
        .collect()
}

/// This machine's name, for the items it shares.
fn machine_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sent_log_forgets_ids_of_forgotten_messages_once_they_pile_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("team_sent.log");
        let mut log = SentLog::load(path.clone());
        let ids: Vec<String> = (0..COMPACT_SLACK + 10)
            .map(|i| format!("msg_{i}"))
            .collect();
        log.append(&ids).unwrap();
        log.ids.extend(ids);
        let live: HashSet<String> = ["msg_1".to_string(), "msg_7".to_string()].into();
        // A few forgotten ids are not worth a rewrite.
        let mut small = SentLog::load(path.clone());
        assert!(!small
            .compact(small.ids.iter().take(COMPACT_SLACK).cloned().collect())
            .unwrap());
        assert!(log.compact(live.clone()).unwrap());
        assert_eq!(log.ids, live);
        // What is on disk says the same, and a torn last line is still ignored.
        assert_eq!(SentLog::load(path.clone()).ids, live);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"msg_torn")
            .unwrap();
        assert_eq!(SentLog::load(path).ids, live);
    }
}
