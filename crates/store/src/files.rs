//! The file store: one JSON file per thread and per bridge, derived index files, syntheses and
//! the quarantine (see the layout in the parent module).

use super::atomic::{self, write_atomic};
use super::{io_at, StoreError};
use crate::memory::graph::{MessageChange, ThreadChange};
use crate::memory::ids;
use crate::memory::types::{Message, ThinkBridge, Thread, ThreadStatus};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

const THREAD_PREFIX: &str = "thread";
const BRIDGE_PREFIX: &str = "bridge";
const SYNTHESIS_PREFIX: &str = "synthesis_";
const ACTIVE_INDEX: &str = "_active.json";
const SUSPENDED_INDEX: &str = "_suspended.json";
const ARCHIVED_INDEX: &str = "_archived.json";
const BRIDGE_INDEX: &str = "_index.json";
/// A thread's messages, one JSON object a line, appended as they arrive: `ID.messages.jsonl`
/// beside the thread's own file `ID.json` (its header).
const MESSAGES_SUFFIX: &str = ".messages.jsonl";
/// Where thread files of the single-file layout are kept while their migration is verified.
const BEFORE_LOGS_DIR: &str = ".before-message-logs";
/// Where message logs are kept while their cutting into units is verified.
const BEFORE_UNITS_DIR: &str = ".before-units";

/// The files of one project's memory (`.ai/db/`).
///
/// All methods take `&self`, so a `Store` can be shared between threads; index writes are
/// serialised internally. Writes of the same thread or bridge from two places at once are the
/// caller's business (the last rename wins; neither file is ever torn).
pub struct Store {
    db_dir: PathBuf,
    threads_dir: PathBuf,
    bridges_dir: PathBuf,
    synthesis_dir: PathBuf,
    quarantine_dir: PathBuf,
    journal_dir: PathBuf,
    /// Bytes of each index file as last read or written by this store, so [`Store::write_indexes`]
    /// can skip an identical rewrite without reading the disk. The lock also serialises index
    /// writers. (An index edited behind the daemon's back is repaired at the next `load`.)
    index_cache: Mutex<HashMap<PathBuf, Vec<u8>>>,
    /// The valid length of each thread's message log, as loaded or written by this store: an
    /// append first cuts off whatever a failed write left after it, so a log never holds a torn
    /// line between whole ones.
    logs: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the index cache: it can hold megabytes.
        f.debug_struct("Store")
            .field("db_dir", &self.db_dir)
            .finish_non_exhaustive()
    }
}

/// What [`Store::load`] found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Valid threads, sorted by id (ids sort by creation time).
    pub threads: Vec<Thread>,
    /// Valid bridges whose both ends exist, sorted by id.
    pub bridges: Vec<ThinkBridge>,
    /// Where each file moved to quarantine during this load now is.
    pub quarantined: Vec<PathBuf>,
    /// Whether at least one index file was missing, unreadable or inconsistent and was rewritten.
    pub indexes_rebuilt: bool,
}

/// `bridges/_index.json`: bridge ids by the thread at each end, for lookups without a scan.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct BridgeIndex {
    by_source: BTreeMap<String, Vec<String>>,
    by_target: BTreeMap<String, Vec<String>>,
}

impl BridgeIndex {
    /// Sorts every list so two indexes compare by content, whatever order a writer used.
    fn normalised(mut self) -> Self {
        for list in self
            .by_source
            .values_mut()
            .chain(self.by_target.values_mut())
        {
            list.sort_unstable();
        }
        self
    }
}

/// What one index file should contain.
/// The index files' expected contents, taken from the memory (see [`Store::index_snapshot`]).
pub struct IndexSnapshot([(PathBuf, IndexContent); 4]);

enum IndexContent {
    Ids(Vec<String>),
    Bridges(BridgeIndex),
}

impl IndexContent {
    /// The bytes the store writes for this content (pretty JSON, final newline).
    fn to_bytes(&self, path: &Path) -> Result<Vec<u8>, StoreError> {
        let json = match self {
            IndexContent::Ids(ids) => serde_json::to_vec_pretty(ids),
            IndexContent::Bridges(index) => serde_json::to_vec_pretty(index),
        };
        let mut bytes = json.map_err(|source| StoreError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Whether `bytes` (an index file as found on disk) says the same thing, order aside.
    fn matches(&self, bytes: &[u8]) -> bool {
        match self {
            IndexContent::Ids(expected) => serde_json::from_slice::<Vec<String>>(bytes)
                .map(|mut found| {
                    found.sort_unstable();
                    &found == expected
                })
                .unwrap_or(false),
            IndexContent::Bridges(expected) => serde_json::from_slice::<BridgeIndex>(bytes)
                .map(|found| &found.normalised() == expected)
                .unwrap_or(false),
        }
    }
}

impl Store {
    /// Opens the store rooted at `db_dir` (the project's `.ai/db/`), creating its folders.
    pub fn open(db_dir: &Path) -> Result<Store, StoreError> {
        let store = Store {
            db_dir: db_dir.to_path_buf(),
            threads_dir: db_dir.join("threads"),
            bridges_dir: db_dir.join("bridges"),
            synthesis_dir: db_dir.join("synthesis"),
            quarantine_dir: db_dir.join("quarantine"),
            journal_dir: db_dir.join("journal"),
            index_cache: Mutex::new(HashMap::new()),
            logs: Mutex::new(HashMap::new()),
        };
        for dir in [
            &store.threads_dir,
            &store.bridges_dir,
            &store.synthesis_dir,
            &store.quarantine_dir,
            &store.journal_dir,
        ] {
            fs::create_dir_all(dir).map_err(io_at(dir))?;
        }
        Ok(store)
    }

    pub fn db_dir(&self) -> &Path {
        &self.db_dir
    }

    /// `db/journal/`, to give to [`super::Journal::open`].
    pub fn journal_dir(&self) -> &Path {
        &self.journal_dir
    }

    /// `db/quarantine/`, to give to [`super::Journal::open`].
    pub fn quarantine_dir(&self) -> &Path {
        &self.quarantine_dir
    }

    /// Reads every thread and bridge, quarantining what cannot be used, removes stray temporary
    /// files, and repairs the index files.
    ///
    /// Meant for start-up: the stray-file cleanup spares only this process's own temporary
    /// files, so it is harmless but pointless to call it again later.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        for dir in [
            &self.db_dir,
            &self.threads_dir,
            &self.bridges_dir,
            &self.synthesis_dir,
        ] {
            let removed = atomic::remove_stray_temp_files(dir).map_err(io_at(dir))?;
            for path in removed {
                tracing::info!(file = %path.display(), "removed a temporary file left by a crash");
            }
        }

        let mut quarantined = Vec::new();
        let mut threads: Vec<Thread> = self.load_dir(
            &self.threads_dir,
            THREAD_PREFIX,
            |t: &Thread| &t.id,
            &mut quarantined,
        )?;
        self.recover_headers(&mut threads)?;
        // In id order, the order the search index reads them in: each thread's vectors are
        // packed in one block as its log is read, and ranking then reads the blocks in order.
        threads.sort_by(|a, b| a.id.cmp(&b.id));
        self.load_messages(&mut threads, &mut quarantined)?;
        self.cut_into_units(&mut threads)?;
        let all_bridges: Vec<ThinkBridge> = self.load_dir(
            &self.bridges_dir,
            BRIDGE_PREFIX,
            |b: &ThinkBridge| &b.id,
            &mut quarantined,
        )?;

        let thread_ids: HashSet<&str> = threads.iter().map(|t| t.id.as_str()).collect();
        let mut bridges = Vec::with_capacity(all_bridges.len());
        for bridge in all_bridges {
            let missing: Vec<&str> = [bridge.source_id.as_str(), bridge.target_id.as_str()]
                .into_iter()
                .filter(|id| !thread_ids.contains(id))
                .collect();
            if missing.is_empty() {
                bridges.push(bridge);
            } else {
                let path = self.bridge_path_unchecked(&bridge.id);
                let reason = format!(
                    "dangling bridge: thread(s) {} do not exist",
                    missing.join(", ")
                );
                quarantined.push(self.quarantine(&path, &reason)?);
            }
        }

        let indexes_rebuilt = self.repair_indexes(&threads, &bridges)?;
        Ok(Loaded {
            threads,
            bridges,
            quarantined,
            indexes_rebuilt,
        })
    }

    /// A message log whose header did not load (corrupt, truncated, or never written: a crash
    /// between the two) still holds acknowledged messages: its header is made again from them
    /// and written, so the thread stays visible. The unreadable header stays in quarantine.
    fn recover_headers(&self, threads: &mut Vec<Thread>) -> Result<(), StoreError> {
        let known: HashSet<String> = threads.iter().map(|t| t.id.clone()).collect();
        let dir = &self.threads_dir;
        let mut recovered = Vec::new();
        for entry in fs::read_dir(dir).map_err(io_at(dir))? {
            let entry = entry.map_err(io_at(dir))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(MESSAGES_SUFFIX)) else {
                continue;
            };
            if known.contains(id) || !ids::is_valid(THREAD_PREFIX, id) {
                continue;
            }
            let read = read_log(&entry.path())?;
            if read.messages.is_empty() {
                continue;
            }
            let header = self.entity_path(dir, THREAD_PREFIX, id)?;
            let thread = crate::memory::consolidate::rebuilt_header(id, read.messages);
            write_pretty(&header, &thread.header_clone())?;
            tracing::warn!(
                thread = id,
                messages = thread.messages.len(),
                "a thread's header was unreadable or missing: made again from its message log"
            );
            recovered.push(thread.header_clone());
        }
        if !recovered.is_empty() {
            threads.extend(recovered);
            threads.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        }
        Ok(())
    }

    /// Cuts the long messages stored before units existed into units (their vectors are made
    /// later, in the background: until then each reads as its message). Each log changed is
    /// copied aside first and written afresh; the copies go once every one reads back with the
    /// same messages, now in units.
    fn cut_into_units(&self, threads: &mut [Thread]) -> Result<(), StoreError> {
        let backup = self.threads_dir.join(BEFORE_UNITS_DIR);
        let mut cut: Vec<(String, Vec<String>)> = Vec::new();
        for t in threads.iter_mut() {
            let mut changed = false;
            for m in &mut t.messages {
                if !m.units.is_empty() || m.content.len() <= crate::capture::units::UNIT_MAX {
                    continue;
                }
                let tool = m
                    .metadata
                    .get("tool")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
                let spans = crate::capture::units::split(&tool, &m.content);
                if spans.len() < 2 {
                    continue;
                }
                m.units = spans
                    .into_iter()
                    .map(|s| crate::memory::types::Unit {
                        start: s.start as u32,
                        end: s.end as u32,
                        label: s.label,
                        embedding: None,
                    })
                    .collect();
                changed = true;
            }
            if !changed {
                continue;
            }
            let header = self.entity_path(&self.threads_dir, THREAD_PREFIX, &t.id)?;
            let log = messages_path(&header);
            fs::create_dir_all(&backup).map_err(io_at(&backup))?;
            let kept = backup.join(log.file_name().unwrap_or_default());
            if log.exists() && !kept.exists() {
                fs::copy(&log, &kept).map_err(io_at(&kept))?;
            }
            self.rewrite_messages(&t.id, &log, &t.messages)?;
            cut.push((
                t.id.clone(),
                t.messages.iter().map(|m| m.id.clone()).collect(),
            ));
        }
        if cut.is_empty() {
            return Ok(());
        }
        atomic::sync_dir(&self.threads_dir).map_err(io_at(&self.threads_dir))?;
        if self.logs_read_back(&cut) {
            fs::remove_dir_all(&backup).map_err(io_at(&backup))?;
            tracing::info!(
                "the long messages of {} threads were cut into units (their vectors follow in the background)",
                cut.len()
            );
        } else {
            tracing::error!(
                "a thread cut into units did not read back the same; its old log stays in {}",
                backup.display()
            );
        }
        Ok(())
    }

    /// Reads every `PREFIX_*.json` of `dir`; what cannot be used goes to quarantine.
    fn load_dir<E: DeserializeOwned>(
        &self,
        dir: &Path,
        prefix: &str,
        id_of: impl Fn(&E) -> &str,
        quarantined: &mut Vec<PathBuf>,
    ) -> Result<Vec<E>, StoreError> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).map_err(io_at(dir))? {
            let entry = entry.map_err(io_at(dir))?;
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str() else {
                tracing::debug!(file = ?file_name, "ignoring a file whose name is not UTF-8");
                continue;
            };
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            // `_active.json`, `_index.json` and foreign files are not entities.
            if stem.len() <= prefix.len()
                || !stem.starts_with(prefix)
                || stem.as_bytes()[prefix.len()] != b'_'
            {
                continue;
            }
            let path = entry.path();
            if !ids::is_valid(prefix, stem) {
                let reason = format!("file name {name:?} is not a valid {prefix} id");
                quarantined.push(self.quarantine(&path, &reason)?);
                continue;
            }
            let bytes = match fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    quarantined.push(self.quarantine(&path, &format!("unreadable: {e}"))?);
                    continue;
                }
            };
            match serde_json::from_slice::<E>(&bytes) {
                Ok(value) if id_of(&value) == stem => out.push(value),
                Ok(value) => {
                    let reason = format!(
                        "id {:?} inside does not match the file name {name:?}",
                        id_of(&value)
                    );
                    quarantined.push(self.quarantine(&path, &reason)?);
                }
                Err(e) => {
                    quarantined.push(self.quarantine(&path, &format!("invalid {prefix}: {e}"))?);
                }
            }
        }
        out.sort_unstable_by(|a, b| id_of(a).cmp(id_of(b)));
        Ok(out)
    }

    /// Writes what changed of each thread: its message log, appended to (or written afresh
    /// when its messages moved), then its header, replaced atomically; one folder fsync for
    /// the lot. What a capture costs to write is its own message and the header, whatever the
    /// thread's size. Every id is checked before anything is written.
    pub fn save_threads(&self, changes: &[ThreadChange]) -> Result<(), StoreError> {
        let paths = changes
            .iter()
            .map(|c| {
                let header = self.entity_path(&self.threads_dir, THREAD_PREFIX, c.id())?;
                Ok((header.clone(), messages_path(&header)))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut result = Ok(());
        for (c, (header, log)) in changes.iter().zip(&paths) {
            let written = match &c.messages {
                MessageChange::Append(messages) => self.append_messages(c.id(), log, messages),
                MessageChange::Rewrite(messages) => self.rewrite_messages(c.id(), log, messages),
            }
            .and_then(|()| {
                let bytes = pretty_bytes(header, &c.header)?;
                atomic::replace_file(header, &bytes).map_err(io_at(header))
            });
            if let Err(e) = written {
                result = Err(e);
                break;
            }
        }
        if !changes.is_empty() {
            atomic::sync_dir(&self.threads_dir).map_err(io_at(&self.threads_dir))?;
        }
        result
    }

    /// Writes one thread whole, header and every message.
    pub fn save_thread(&self, thread: &Thread) -> Result<(), StoreError> {
        self.save_threads(&[ThreadChange::whole(thread)])
    }

    /// Writes threads whole (a new store, a seeded benchmark).
    pub fn save_whole_threads(&self, threads: &[Thread]) -> Result<(), StoreError> {
        let whole: Vec<ThreadChange> = threads.iter().map(ThreadChange::whole).collect();
        self.save_threads(&whole)
    }

    /// Appends messages to a thread's log and makes them durable, after cutting off anything
    /// past its known valid end.
    fn append_messages(
        &self,
        id: &str,
        log: &Path,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        use std::io::{Seek, SeekFrom, Write};
        if messages.is_empty() {
            return Ok(());
        }
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = message_lines(log, messages)?;
        let mut file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(log)
            .map_err(io_at(log))?;
        let on_disk = file.metadata().map_err(io_at(log))?.len();
        let valid = logs.get(id).copied().unwrap_or(0).min(on_disk);
        if on_disk != valid {
            file.set_len(valid).map_err(io_at(log))?;
        }
        file.seek(SeekFrom::Start(valid)).map_err(io_at(log))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_data())
            .map_err(io_at(log))?;
        logs.insert(id.to_string(), valid + bytes.len() as u64);
        Ok(())
    }

    /// Writes a thread's whole log afresh (atomically).
    fn rewrite_messages(
        &self,
        id: &str,
        log: &Path,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = message_lines(log, messages)?;
        atomic::replace_file(log, &bytes).map_err(io_at(log))?;
        logs.insert(id.to_string(), bytes.len() as u64);
        Ok(())
    }

    /// Reads each thread's message log into it. A thread of the single-file layout (its
    /// messages inside its file) is migrated: its log written, its file rewritten as a header,
    /// the old file kept aside until every migrated thread reads back the same.
    fn load_messages(
        &self,
        threads: &mut [Thread],
        quarantined: &mut Vec<PathBuf>,
    ) -> Result<(), StoreError> {
        let mut migrated: Vec<(String, Vec<String>)> = Vec::new();
        let backup = self.threads_dir.join(BEFORE_LOGS_DIR);
        let mut packing = VectorPacking::default();
        for i in 0..threads.len() {
            packing.loaded(threads, i);
            let t = &mut threads[i];
            let header = self.entity_path(&self.threads_dir, THREAD_PREFIX, &t.id)?;
            let log = messages_path(&header);
            let inline = std::mem::take(&mut t.messages);
            if log.exists() {
                let read = read_log(&log)?;
                if read.damaged {
                    let reason = "a message log with unreadable lines (the readable ones are kept)";
                    let name = log.file_name().unwrap_or_default().to_string_lossy();
                    let bytes = fs::read(&log).map_err(io_at(&log))?;
                    quarantined.push(quarantine_bytes(
                        &self.quarantine_dir,
                        &name,
                        &log,
                        &bytes,
                        reason,
                    )?);
                }
                let compact = read.lines > read.messages.len() * 2 + 16 || read.damaged;
                self.logs
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(t.id.clone(), read.valid_len);
                if read.valid_len < read.file_len {
                    tracing::info!(file = %log.display(), "cut off a message a crash left half written");
                    let f = fs::OpenOptions::new()
                        .write(true)
                        .open(&log)
                        .map_err(io_at(&log))?;
                    f.set_len(read.valid_len)
                        .and_then(|()| f.sync_data())
                        .map_err(io_at(&log))?;
                }
                t.messages = read.messages;
                if compact {
                    self.rewrite_messages(&t.id, &log, &t.messages)?;
                }
                if !inline.is_empty() {
                    // A migration cut short between the log and the header.
                    write_pretty(&header, &*t)?;
                }
            } else if !inline.is_empty() {
                fs::create_dir_all(&backup).map_err(io_at(&backup))?;
                let kept = backup.join(header.file_name().unwrap_or_default());
                fs::copy(&header, &kept).map_err(io_at(&kept))?;
                self.rewrite_messages(&t.id, &log, &inline)?;
                write_pretty(&header, &*t)?;
                migrated.push((t.id.clone(), inline.iter().map(|m| m.id.clone()).collect()));
                t.messages = inline;
            }
        }
        packing.loaded(threads, threads.len());
        if migrated.is_empty() {
            return Ok(());
        }
        atomic::sync_dir(&self.threads_dir).map_err(io_at(&self.threads_dir))?;
        if self.logs_read_back(&migrated) {
            fs::remove_dir_all(&backup).map_err(io_at(&backup))?;
            tracing::info!(
                "{} threads moved to the message-log layout (their messages appended, not rewritten)",
                migrated.len()
            );
        } else {
            tracing::error!(
                "a thread moved to the message-log layout did not read back the same; the old files stay in {}",
                backup.display()
            );
        }
        Ok(())
    }

    /// Removes `threads/ID.json` and its message log (no error if they are already gone).
    pub fn delete_thread(&self, id: &str) -> Result<(), StoreError> {
        let path = self.entity_path(&self.threads_dir, THREAD_PREFIX, id)?;
        let log = messages_path(&path);
        atomic::remove_durable(&log).map_err(io_at(&log))?;
        self.logs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        atomic::remove_durable(&path).map_err(io_at(&path))
    }

    /// Writes `bridges/ID.json`.
    pub fn save_bridge(&self, bridge: &ThinkBridge) -> Result<(), StoreError> {
        let path = self.entity_path(&self.bridges_dir, BRIDGE_PREFIX, &bridge.id)?;
        write_pretty(&path, bridge)
    }

    /// Writes many bridges with one folder fsync (see [`Store::save_threads`]).
    pub fn save_bridges<'a>(
        &self,
        bridges: impl IntoIterator<Item = &'a ThinkBridge>,
    ) -> Result<(), StoreError> {
        let bridges: Vec<&ThinkBridge> = bridges.into_iter().collect();
        let paths = bridges
            .iter()
            .map(|b| self.entity_path(&self.bridges_dir, BRIDGE_PREFIX, &b.id))
            .collect::<Result<Vec<_>, _>>()?;
        save_many(&self.bridges_dir, paths.iter().zip(bridges))
    }

    /// Removes `bridges/ID.json` (no error if it is already gone).
    pub fn delete_bridge(&self, id: &str) -> Result<(), StoreError> {
        let path = self.entity_path(&self.bridges_dir, BRIDGE_PREFIX, id)?;
        atomic::remove_durable(&path).map_err(io_at(&path))
    }

    /// Rewrites the index files that differ from what the given threads/bridges imply (no write
    /// when equal), so callers can call it after every change without wearing the disk.
    pub fn write_indexes<'a>(
        &self,
        threads: impl IntoIterator<Item = &'a Thread>,
        bridges: impl IntoIterator<Item = &'a ThinkBridge>,
    ) -> Result<(), StoreError> {
        self.write_index_snapshot(self.index_snapshot(threads, bridges))
    }

    /// What the index files must hold for these threads and bridges: cheap (ids only), so it
    /// can be taken under the memory's lock and written after it is released.
    pub fn index_snapshot<'a>(
        &self,
        threads: impl IntoIterator<Item = &'a Thread>,
        bridges: impl IntoIterator<Item = &'a ThinkBridge>,
    ) -> IndexSnapshot {
        IndexSnapshot(self.expected_indexes(threads, bridges))
    }

    /// [`Store::write_indexes`] from a snapshot.
    pub fn write_index_snapshot(&self, snapshot: IndexSnapshot) -> Result<(), StoreError> {
        let mut cache = self
            .index_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (path, content) in snapshot.0 {
            let bytes = content.to_bytes(&path)?;
            let same = match cache.get(&path) {
                Some(known) => *known == bytes,
                None => match fs::read(&path) {
                    Ok(on_disk) => on_disk == bytes,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                    Err(e) => return Err(io_at(&path)(e)),
                },
            };
            if !same {
                write_atomic(&path, &bytes).map_err(io_at(&path))?;
            }
            cache.insert(path, bytes);
        }
        Ok(())
    }

    /// Compares each index file with the loaded data and rewrites the wrong ones.
    fn repair_indexes(
        &self,
        threads: &[Thread],
        bridges: &[ThinkBridge],
    ) -> Result<bool, StoreError> {
        let mut cache = self
            .index_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut rebuilt = false;
        // A new store has no index yet: writing the first ones is not a repair.
        let new_store = threads.is_empty() && bridges.is_empty();
        for (path, content) in self.expected_indexes(threads, bridges) {
            let (problem, missing) = match fs::read(&path) {
                Ok(bytes) if content.matches(&bytes) => {
                    cache.insert(path, bytes);
                    continue;
                }
                Ok(_) => ("unparsable or inconsistent with the data files", false),
                Err(e) if e.kind() == io::ErrorKind::NotFound => ("missing", true),
                Err(_) => ("unreadable", false),
            };
            let bytes = content.to_bytes(&path)?;
            write_atomic(&path, &bytes).map_err(io_at(&path))?;
            if new_store && missing {
                tracing::debug!(file = %path.display(), "wrote the index of a new store");
            } else {
                tracing::warn!(file = %path.display(), problem, "rebuilt an index file");
                rebuilt = true;
            }
            cache.insert(path, bytes);
        }
        Ok(rebuilt)
    }

    /// The four index files and what they should contain, lists sorted and without duplicates.
    fn expected_indexes<'a>(
        &self,
        threads: impl IntoIterator<Item = &'a Thread>,
        bridges: impl IntoIterator<Item = &'a ThinkBridge>,
    ) -> [(PathBuf, IndexContent); 4] {
        let mut active = BTreeSet::new();
        let mut suspended = BTreeSet::new();
        let mut archived = BTreeSet::new();
        for t in threads {
            let set = match t.status {
                ThreadStatus::Active => &mut active,
                ThreadStatus::Suspended => &mut suspended,
                ThreadStatus::Archived => &mut archived,
            };
            set.insert(t.id.clone());
        }
        let mut by_source: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut by_target: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for b in bridges {
            by_source
                .entry(b.source_id.clone())
                .or_default()
                .insert(b.id.clone());
            by_target
                .entry(b.target_id.clone())
                .or_default()
                .insert(b.id.clone());
        }
        let to_vecs = |m: BTreeMap<String, BTreeSet<String>>| {
            m.into_iter()
                .map(|(k, v)| (k, v.into_iter().collect()))
                .collect()
        };
        let ids = |s: BTreeSet<String>| IndexContent::Ids(s.into_iter().collect());
        [
            (self.threads_dir.join(ACTIVE_INDEX), ids(active)),
            (self.threads_dir.join(SUSPENDED_INDEX), ids(suspended)),
            (self.threads_dir.join(ARCHIVED_INDEX), ids(archived)),
            (
                self.bridges_dir.join(BRIDGE_INDEX),
                IndexContent::Bridges(BridgeIndex {
                    by_source: to_vecs(by_source),
                    by_target: to_vecs(by_target),
                }),
            ),
        ]
    }

    /// Writes `synthesis/synthesis_YYYYMMdd_HHMMSS.json` (a second save in the same second
    /// replaces the first) and returns its path.
    pub fn save_synthesis(
        &self,
        at: DateTime<Utc>,
        synthesis: &impl serde::Serialize,
    ) -> Result<PathBuf, StoreError> {
        let path = self.synthesis_dir.join(format!(
            "{SYNTHESIS_PREFIX}{}.json",
            at.format("%Y%m%d_%H%M%S")
        ));
        let value = serde_json::to_value(synthesis).map_err(|source| StoreError::Json {
            path: path.clone(),
            source,
        })?;
        // Its fields come from outside too (the session id, the trigger, an LLM's text).
        let (value, _) = crate::capture::admit::redact_json(value);
        write_pretty(&path, &value)?;
        Ok(path)
    }

    /// The newest readable synthesis; an unreadable one is quarantined and the next older one
    /// is tried.
    pub fn latest_synthesis(&self) -> Result<Option<serde_json::Value>, StoreError> {
        let dir = &self.synthesis_dir;
        for name in synthesis_names(dir)? {
            let path = dir.join(&name);
            let parsed = fs::read(&path)
                .map_err(|e| format!("unreadable: {e}"))
                .and_then(|bytes| {
                    serde_json::from_slice(&bytes).map_err(|e| format!("invalid JSON: {e}"))
                });
            match parsed {
                Ok(value) => return Ok(Some(value)),
                Err(reason) => {
                    self.quarantine(&path, &reason)?;
                }
            }
        }
        Ok(None)
    }

    /// Whether every thread of a migration reads back from its message log with the same
    /// messages, in order (thread id, message ids): only then may its backup go.
    fn logs_read_back(&self, threads: &[(String, Vec<String>)]) -> bool {
        threads.iter().all(|(id, ids)| {
            self.entity_path(&self.threads_dir, THREAD_PREFIX, id)
                .ok()
                .and_then(|h| read_log(&messages_path(&h)).ok())
                .is_some_and(|r| r.messages.iter().map(|m| &m.id).eq(ids.iter()))
        })
    }

    /// Moves `path` into `quarantine/` under a timestamped name, writes the reason beside it
    /// (`NAME.reason.txt`) and logs a warning. Returns the new path.
    pub fn quarantine(&self, path: &Path, reason: &str) -> Result<PathBuf, StoreError> {
        quarantine_file(&self.quarantine_dir, path, reason)
    }

    /// `DIR/ID.json` for a valid id; anything else could name a path outside `DIR`.
    fn entity_path(&self, dir: &Path, prefix: &str, id: &str) -> Result<PathBuf, StoreError> {
        if ids::is_valid(prefix, id) {
            Ok(dir.join(format!("{id}.json")))
        } else {
            Err(StoreError::InvalidId(id.to_owned()))
        }
    }

    /// The file a loaded bridge came from (its id was checked against the file name).
    fn bridge_path_unchecked(&self, id: &str) -> PathBuf {
        self.bridges_dir.join(format!("{id}.json"))
    }
}

fn write_pretty<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), StoreError> {
    let bytes = pretty_bytes(path, value)?;
    write_atomic(path, &bytes).map_err(io_at(path))
}

/// Compact JSON with a final newline: thread files carry a 384-float embedding, which pretty
/// printing would spread over 384 lines (people read threads through `ai thread`).
fn pretty_bytes<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<Vec<u8>, StoreError> {
    let mut bytes = serde_json::to_vec(value).map_err(|source| StoreError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// `threads/ID.messages.jsonl` for `threads/ID.json`.
fn messages_path(header: &Path) -> PathBuf {
    let stem = header.file_stem().unwrap_or_default().to_string_lossy();
    header.with_file_name(format!("{stem}{MESSAGES_SUFFIX}"))
}

/// Messages as log lines: compact JSON, one a line.
fn message_lines(path: &Path, messages: &[Message]) -> Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::new();
    for m in messages {
        serde_json::to_writer(&mut bytes, m).map_err(|source| StoreError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        bytes.push(b'\n');
    }
    Ok(bytes)
}

/// What a message log holds.
struct LogRead {
    /// Each message once, in the order first written; a later line for the same id (its new
    /// version) replaces the earlier.
    messages: Vec<Message>,
    /// Whole lines read.
    lines: usize,
    /// Bytes up to the end of the last whole, readable line.
    valid_len: u64,
    file_len: u64,
    /// A line other than the last could not be read.
    damaged: bool,
}

fn read_log(path: &Path) -> Result<LogRead, StoreError> {
    let bytes = fs::read(path).map_err(io_at(path))?;
    let mut out = LogRead {
        messages: Vec::new(),
        lines: 0,
        valid_len: 0,
        file_len: bytes.len() as u64,
        damaged: false,
    };
    let mut position: HashMap<String, usize> = HashMap::new();
    let mut start = 0usize;
    while start < bytes.len() {
        let Some(end) = bytes[start..].iter().position(|&b| b == b'\n') else {
            // No newline: a last line a crash cut short. It was never acknowledged as saved.
            break;
        };
        let line = &bytes[start..start + end];
        match serde_json::from_slice::<Message>(line) {
            Ok(m) => {
                out.lines += 1;
                match position.get(&m.id) {
                    Some(&i) => out.messages[i] = m,
                    None => {
                        position.insert(m.id.clone(), out.messages.len());
                        out.messages.push(m);
                    }
                }
                out.valid_len = (start + end + 1) as u64;
            }
            Err(_) if start + end + 1 == bytes.len() => break,
            Err(_) => {
                out.damaged = true;
                out.valid_len = (start + end + 1) as u64;
            }
        }
        start += end + 1;
    }
    Ok(out)
}

/// Packs the vectors of threads loaded one after another into shared blocks of about
/// [`VectorPacking::BLOCK_VECTORS`]: ranking reads every unit's vector per question, in the
/// order threads load in, and one vector per allocation scattered among the messages' text
/// made that pass several times slower than reading blocks in order. The vectors read since
/// the last block wait in their own small allocations, which the next threads' reuse.
#[derive(Default)]
struct VectorPacking {
    /// The first thread whose vectors are not packed yet.
    from: usize,
    /// How many vectors those threads hold.
    pending: usize,
}

impl VectorPacking {
    const BLOCK_VECTORS: usize = 8192;

    /// Thread `upto - 1` was just loaded (called once for each `upto` in increasing order,
    /// from 0 to the end): packs the pending threads when they are enough, or at the end.
    fn loaded(&mut self, threads: &mut [Thread], upto: usize) {
        if let Some(t) = upto.checked_sub(1).and_then(|last| threads.get(last)) {
            self.pending += t.messages.iter().map(Message::vector_count).sum::<usize>();
        }
        if self.pending >= Self::BLOCK_VECTORS || (upto == threads.len() && self.pending > 0) {
            let batch = &mut threads[self.from..upto];
            Message::pack_vectors(batch.iter_mut().flat_map(|t| t.messages.iter_mut()));
            self.from = upto;
            self.pending = 0;
        }
    }
}

/// Replaces each file, then fsyncs `dir` once (even after a failure, for the files already
/// renamed).
fn save_many<'a, T: Serialize + 'a>(
    dir: &Path,
    items: impl IntoIterator<Item = (&'a PathBuf, &'a T)>,
) -> Result<(), StoreError> {
    let mut result = Ok(());
    let mut written = 0usize;
    for (path, value) in items {
        written += 1;
        let bytes = match pretty_bytes(path, value) {
            Ok(bytes) => bytes,
            Err(e) => {
                result = Err(e);
                break;
            }
        };
        if let Err(e) = atomic::replace_file(path, &bytes) {
            result = Err(io_at(path)(e));
            break;
        }
    }
    if written > 0 {
        atomic::sync_dir(dir).map_err(io_at(dir))?;
    }
    result
}

/// The newest readable synthesis under `db_dir` (a project's `.ai/db/`), with its path. Read
/// only, for readers without the daemon's [`Store`]: an unreadable file is skipped, not
/// quarantined, and a missing folder means no synthesis.
pub fn read_latest_synthesis(
    db_dir: &Path,
) -> Result<Option<(PathBuf, serde_json::Value)>, StoreError> {
    let dir = db_dir.join("synthesis");
    for name in synthesis_names(&dir)? {
        let path = dir.join(&name);
        let parsed = fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        if let Some(value) = parsed {
            return Ok(Some((path, value)));
        }
    }
    Ok(None)
}

/// The synthesis file names in `dir`, newest first (none when `dir` does not exist).
fn synthesis_names(dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_at(dir)(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_at(dir))?;
        if let Some(name) = entry.file_name().to_str() {
            if is_synthesis_name(name) {
                names.push(name.to_owned());
            }
        }
    }
    // The timestamp format sorts chronologically as text.
    names.sort_unstable_by(|a, b| b.cmp(a));
    Ok(names)
}

/// `synthesis_YYYYMMdd_HHMMSS.json`.
fn is_synthesis_name(name: &str) -> bool {
    let Some(stamp) = name
        .strip_prefix(SYNTHESIS_PREFIX)
        .and_then(|r| r.strip_suffix(".json"))
    else {
        return false;
    };
    let b = stamp.as_bytes();
    b.len() == 15
        && b[8] == b'_'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 8 || c.is_ascii_digit())
}

/// A free name `quarantine/STAMP_NAME[.N]` whose reason file is free too.
fn quarantine_target(quarantine_dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let stamp = Utc::now().format("%Y%m%d_%H%M%S%.3f");
    let mut n = 0u32;
    loop {
        let file = if n == 0 {
            format!("{stamp}_{name}")
        } else {
            format!("{stamp}_{name}.{n}")
        };
        let dest = quarantine_dir.join(&file);
        let reason = quarantine_dir.join(format!("{file}.reason.txt"));
        if !dest.exists() && !reason.exists() {
            return (dest, reason);
        }
        n += 1;
    }
}

fn reason_text(original: &Path, reason: &str) -> String {
    format!(
        "file: {}\nquarantined at: {}\nreason: {reason}\n",
        original.display(),
        Utc::now().to_rfc3339()
    )
}

/// Moves a file into quarantine (see [`Store::quarantine`]).
pub(crate) fn quarantine_file(
    quarantine_dir: &Path,
    path: &Path,
    reason: &str,
) -> Result<PathBuf, StoreError> {
    fs::create_dir_all(quarantine_dir).map_err(io_at(quarantine_dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unnamed".to_owned());
    let (dest, reason_path) = quarantine_target(quarantine_dir, &name);
    // The reason first: a crash in between leaves the file in place, to be quarantined again.
    write_atomic(&reason_path, reason_text(path, reason).as_bytes())
        .map_err(io_at(&reason_path))?;
    if let Err(e) = fs::rename(path, &dest) {
        if e.kind() != io::ErrorKind::CrossesDevices {
            return Err(io_at(path)(e));
        }
        // A quarantine folder on another file system (a symlink): copy, then remove.
        fs::copy(path, &dest).map_err(io_at(&dest))?;
        fs::File::open(&dest)
            .and_then(|f| f.sync_all())
            .map_err(io_at(&dest))?;
        atomic::remove_durable(path).map_err(io_at(path))?;
    }
    atomic::sync_dir(quarantine_dir).map_err(io_at(quarantine_dir))?;
    let source_dir = atomic::parent_dir(path);
    atomic::sync_dir(source_dir).map_err(io_at(source_dir))?;
    tracing::warn!(
        file = %path.display(),
        moved_to = %dest.display(),
        reason,
        "quarantined a file that could not be used"
    );
    Ok(dest)
}

/// Saves a copy of `bytes` (e.g. one bad journal line) into quarantine as `STAMP_NAME`, with its
/// reason file, and logs a warning. Used where the original must stay in place.
pub(crate) fn quarantine_bytes(
    quarantine_dir: &Path,
    name: &str,
    origin: &Path,
    bytes: &[u8],
    reason: &str,
) -> Result<PathBuf, StoreError> {
    fs::create_dir_all(quarantine_dir).map_err(io_at(quarantine_dir))?;
    let (dest, reason_path) = quarantine_target(quarantine_dir, name);
    write_atomic(&reason_path, reason_text(origin, reason).as_bytes())
        .map_err(io_at(&reason_path))?;
    write_atomic(&dest, bytes).map_err(io_at(&dest))?;
    tracing::warn!(
        file = %origin.display(),
        copied_to = %dest.display(),
        reason,
        "quarantined unusable data"
    );
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::source::OriginType;
    use crate::memory::types::{BridgeStatus, BridgeType};
    use chrono::TimeZone;
    use std::time::Instant;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 30, 12, 0, 0).unwrap()
    }

    fn tid(n: u32) -> String {
        format!("thread_20260130_120000_{n:08x}")
    }

    fn bid(n: u32) -> String {
        format!("bridge_20260130_120000_{n:08x}")
    }

    fn thread(n: u32, status: ThreadStatus) -> Thread {
        Thread {
            id: tid(n),
            title: format!("Topic {n}"),
            status,
            messages: Vec::new(),
            summary: "summary".into(),
            topics: vec!["pool".into(), "timeout".into()],
            origin_type: OriginType::Prompt,
            drift_history: Vec::new(),
            parent_id: None,
            child_ids: Vec::new(),
            decisions: Vec::new(),
            questions: Vec::new(),
            weight: 1.0,
            weight_at: at(),
            created_at: at(),
            last_active: at(),
            activation_count: 1,
            embedding: None,
            pinned: false,
            never_recall: false,
            sharing: Default::default(),
            profile: Vec::new(),
            title_by: Default::default(),
            merged_into: None,
        }
    }

    fn bridge(n: u32, source: &str, target: &str) -> ThinkBridge {
        ThinkBridge {
            id: bid(n),
            source_id: source.into(),
            target_id: target.into(),
            relation_type: BridgeType::Extends,
            reason: "shared concepts".into(),
            shared_concepts: vec!["pool".into()],
            confidence: 0.8,
            status: BridgeStatus::Active,
            propagated_from: None,
            propagation_depth: 0,
            use_count: 0,
            last_used: None,
            weight: 1.0,
            weight_at: at(),
            created_at: at(),
        }
    }

    /// A store with threads 1 (active), 2 (suspended), 3 (archived) and bridges 1 (1→2),
    /// 2 (1→3), indexes written.
    fn populated() -> (tempfile::TempDir, Store, Vec<Thread>, Vec<ThinkBridge>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let threads = vec![
            thread(1, ThreadStatus::Active),
            thread(2, ThreadStatus::Suspended),
            thread(3, ThreadStatus::Archived),
        ];
        let bridges = vec![bridge(1, &tid(1), &tid(2)), bridge(2, &tid(1), &tid(3))];
        store.save_whole_threads(&threads).unwrap();
        store.save_bridge(&bridges[0]).unwrap();
        store.save_bridges(&bridges[1..]).unwrap();
        store.write_indexes(&threads, &bridges).unwrap();
        (dir, store, threads, bridges)
    }

    #[test]
    fn batch_save_checks_every_id_before_writing() {
        let (_dir, store, threads, _) = populated();
        let mut changed = threads.clone();
        changed[0].title = "Changed".into();
        changed[2].id = "thread_../x".into();
        assert!(matches!(
            store.save_whole_threads(&changed),
            Err(StoreError::InvalidId(_))
        ));
        assert_eq!(store.load().unwrap().threads, threads);
        changed[2] = threads[2].clone();
        store.save_whole_threads(&changed).unwrap();
        assert_eq!(store.load().unwrap().threads[0].title, "Changed");
    }

    fn reason_of(quarantined: &Path) -> String {
        let mut name = quarantined.file_name().unwrap().to_os_string();
        name.push(".reason.txt");
        fs::read_to_string(quarantined.with_file_name(name)).unwrap()
    }

    #[test]
    fn saved_data_loads_back_with_consistent_indexes() {
        let (_dir, store, threads, bridges) = populated();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.threads, threads);
        assert_eq!(loaded.bridges, bridges);
        assert!(loaded.quarantined.is_empty());
        assert!(!loaded.indexes_rebuilt);
        let active: Vec<String> =
            serde_json::from_slice(&fs::read(store.threads_dir.join(ACTIVE_INDEX)).unwrap())
                .unwrap();
        assert_eq!(active, vec![tid(1)]);
        let index: serde_json::Value =
            serde_json::from_slice(&fs::read(store.bridges_dir.join(BRIDGE_INDEX)).unwrap())
                .unwrap();
        assert_eq!(
            index["by_source"][tid(1)],
            serde_json::json!([bid(1), bid(2)])
        );
        assert_eq!(index["by_target"][tid(3)], serde_json::json!([bid(2)]));
    }

    #[test]
    fn write_indexes_skips_identical_content() {
        let (_dir, store, threads, bridges) = populated();
        let path = store.threads_dir.join(ACTIVE_INDEX);
        let before = fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        store.write_indexes(&threads, &bridges).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), before);

        let mut changed = threads.clone();
        changed[1].status = ThreadStatus::Active;
        store.write_indexes(&changed, &bridges).unwrap();
        let active: Vec<String> = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(active, vec![tid(1), tid(2)]);
    }

    /// A new store's first load writes its indexes without calling it a repair (the daemon's
    /// first start warned about four missing files); a store emptied of its data whose index
    /// still lists something is repaired as before.
    #[test]
    fn a_new_store_writes_its_indexes_without_a_repair() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let loaded = store.load().unwrap();
        assert!(!loaded.indexes_rebuilt);
        assert!(store.threads_dir.join(ACTIVE_INDEX).exists());
        assert!(store.bridges_dir.join(BRIDGE_INDEX).exists());
        assert!(!store.load().unwrap().indexes_rebuilt);

        fs::write(store.threads_dir.join(ACTIVE_INDEX), br#"["gone"]"#).unwrap();
        assert!(store.load().unwrap().indexes_rebuilt);
    }

    #[test]
    fn delete_removes_files_and_tolerates_missing_ones() {
        let (_dir, store, _, _) = populated();
        store.delete_bridge(&bid(2)).unwrap();
        store.delete_thread(&tid(3)).unwrap();
        store.delete_thread(&tid(3)).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.threads.len(), 2);
        assert_eq!(loaded.bridges.len(), 1);
        // Thread 3 left the archived list and bridge 2 the bridge index.
        assert!(loaded.indexes_rebuilt);
        assert!(loaded.quarantined.is_empty());
    }

    #[test]
    fn ids_that_could_escape_the_folder_are_refused() {
        let (_dir, store, _, _) = populated();
        let mut t = thread(9, ThreadStatus::Active);
        t.id = "thread_../../evil".into();
        assert!(matches!(
            store.save_thread(&t),
            Err(StoreError::InvalidId(_))
        ));
        assert!(matches!(
            store.delete_thread("../threads/x"),
            Err(StoreError::InvalidId(_))
        ));
        assert!(matches!(
            store.delete_bridge(&tid(1)),
            Err(StoreError::InvalidId(_))
        ));
        let mut b = bridge(9, &tid(1), &tid(2));
        b.id = "bridge_/etc/passwd".into();
        assert!(matches!(
            store.save_bridge(&b),
            Err(StoreError::InvalidId(_))
        ));
    }

    #[test]
    fn stray_temp_file_from_a_crash_is_cleaned_at_load() {
        let (_dir, store, threads, _) = populated();
        // What a crash between the temp write and the rename leaves behind.
        let stray = store
            .threads_dir
            .join(format!(".{}.json.tmp.4000000000.3", tid(1)));
        fs::write(&stray, b"{\"id\": \"thread_2026").unwrap();
        let loaded = store.load().unwrap();
        assert!(!stray.exists());
        assert_eq!(loaded.threads, threads);
        assert!(loaded.quarantined.is_empty());
    }

    #[test]
    fn corrupt_thread_is_quarantined_with_a_reason_and_the_rest_loads() {
        let (_dir, store, _, _) = populated();
        let path = store.threads_dir.join(format!("{}.json", tid(2)));
        fs::write(&path, b"{\"id\": \"thread_20260130_120000_0000").unwrap();
        let loaded = store.load().unwrap();
        assert!(!path.exists());
        assert_eq!(
            loaded
                .threads
                .iter()
                .map(|t| t.id.clone())
                .collect::<Vec<_>>(),
            vec![tid(1), tid(3)]
        );
        // Bridge 1 pointed at thread 2: dangling now, quarantined too.
        assert_eq!(loaded.quarantined.len(), 2);
        assert_eq!(loaded.bridges.len(), 1);
        let q = &loaded.quarantined[0];
        assert!(q.starts_with(&store.quarantine_dir));
        assert!(fs::read(q).unwrap().starts_with(b"{\"id\""));
        assert!(reason_of(q).contains("invalid thread"), "{}", reason_of(q));
        assert!(reason_of(&loaded.quarantined[1]).contains("dangling"));
        assert!(loaded.indexes_rebuilt);
        // A second load finds a clean store.
        let again = store.load().unwrap();
        assert!(again.quarantined.is_empty() && !again.indexes_rebuilt);
    }

    #[test]
    fn id_that_does_not_match_the_file_name_is_quarantined() {
        let (_dir, store, _, _) = populated();
        let other = store.threads_dir.join(format!("{}.json", tid(7)));
        fs::copy(store.threads_dir.join(format!("{}.json", tid(1))), &other).unwrap();
        let bad_name = store.threads_dir.join("thread_not-an-id.json");
        fs::write(&bad_name, b"{}").unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.threads.len(), 3);
        assert_eq!(loaded.quarantined.len(), 2);
        assert!(!other.exists() && !bad_name.exists());
        let reasons: Vec<String> = loaded.quarantined.iter().map(|q| reason_of(q)).collect();
        assert!(reasons.iter().any(|r| r.contains("does not match")));
        assert!(reasons.iter().any(|r| r.contains("not a valid thread id")));
    }

    #[test]
    fn dangling_bridge_is_quarantined() {
        let (_dir, store, _, _) = populated();
        store.save_bridge(&bridge(5, &tid(1), &tid(42))).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.bridges.len(), 2);
        assert_eq!(loaded.quarantined.len(), 1);
        assert!(reason_of(&loaded.quarantined[0]).contains(&tid(42)));
        assert!(!store.bridges_dir.join(format!("{}.json", bid(5))).exists());
    }

    #[test]
    fn missing_corrupt_and_inconsistent_indexes_are_rebuilt() {
        let (_dir, store, threads, bridges) = populated();
        let fresh = Store::open(store.db_dir()).unwrap();
        let active = store.threads_dir.join(ACTIVE_INDEX);
        let suspended = store.threads_dir.join(SUSPENDED_INDEX);
        let archived = store.threads_dir.join(ARCHIVED_INDEX);
        let bridge_index = store.bridges_dir.join(BRIDGE_INDEX);
        let good: Vec<Vec<u8>> = [&active, &suspended, &archived, &bridge_index]
            .iter()
            .map(|p| fs::read(p).unwrap())
            .collect();

        fs::remove_file(&active).unwrap();
        fs::write(&suspended, b"[\"thread_2026").unwrap();
        fs::write(&archived, format!("[\"{}\", \"{}\"]", tid(3), tid(1))).unwrap();
        fs::write(&bridge_index, b"{\"by_source\": {}, \"by_target\": {}}").unwrap();
        let loaded = fresh.load().unwrap();
        assert!(loaded.indexes_rebuilt);
        assert_eq!(loaded.threads, threads);
        assert_eq!(loaded.bridges, bridges);
        for (p, g) in [&active, &suspended, &archived, &bridge_index]
            .iter()
            .zip(&good)
        {
            assert_eq!(&fs::read(p).unwrap(), g, "{}", p.display());
        }

        // Same content in another order and layout is consistent: no rewrite.
        fs::write(&archived, format!("[ \"{}\" ]", tid(3))).unwrap();
        assert!(!fresh.load().unwrap().indexes_rebuilt);
    }

    #[test]
    fn latest_synthesis_is_the_newest_readable_one() {
        let (_dir, store, _, _) = populated();
        assert!(store.latest_synthesis().unwrap().is_none());
        let older = serde_json::json!({"n": 1});
        store.save_synthesis(at(), &older).unwrap();
        let newer_at = at() + chrono::Duration::hours(1);
        let newer = store
            .save_synthesis(newer_at, &serde_json::json!({"n": 2}))
            .unwrap();
        assert!(newer.ends_with("synthesis_20260130_130000.json"));
        assert_eq!(store.latest_synthesis().unwrap().unwrap()["n"], 2);
        let (path, value) = read_latest_synthesis(store.db_dir()).unwrap().unwrap();
        assert_eq!((path, value["n"].as_i64()), (newer.clone(), Some(2)));
        fs::write(&newer, b"{broken").unwrap();
        // The read-only reader skips a broken file and leaves it where it is.
        assert_eq!(
            read_latest_synthesis(store.db_dir()).unwrap().unwrap().1,
            older
        );
        assert!(newer.exists());
        assert_eq!(store.latest_synthesis().unwrap(), Some(older));
        assert!(!newer.exists());
        let none = tempfile::tempdir().unwrap();
        assert!(read_latest_synthesis(none.path()).unwrap().is_none());
    }

    /// Run with `--release -- --ignored --nocapture` to see the numbers.
    #[test]
    #[ignore]
    fn perf_load_10000_threads() {
        for embedding in [None, Some(vec![0.012_345_678_f32; 384])] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(&dir.path().join("db")).unwrap();
            let n = 10_000u32;
            let mut threads = Vec::new();
            for i in 0..n {
                let mut t = thread(i, ThreadStatus::Active);
                t.summary = "A short summary of what happened in this thread.".into();
                t.embedding = embedding
                    .as_deref()
                    .map(crate::embed::quant::QVec::from_unit);
                threads.push(t);
            }
            // Set-up without fsyncs; the durable save is timed on a sample below.
            let mut bytes_total = 0;
            for t in &threads {
                let bytes = pretty_bytes(Path::new("x"), t).unwrap();
                bytes_total += bytes.len();
                fs::write(store.threads_dir.join(format!("{}.json", t.id)), bytes).unwrap();
            }
            store.write_indexes(&threads, &[]).unwrap();
            let start = Instant::now();
            let loaded = store.load().unwrap();
            let elapsed = start.elapsed();
            assert_eq!(loaded.threads.len(), n as usize);
            assert!(!loaded.indexes_rebuilt);
            let start = Instant::now();
            for t in &threads[..200] {
                store.save_thread(t).unwrap();
            }
            let one_by_one = start.elapsed() / 200;
            let start = Instant::now();
            store.save_whole_threads(&threads[..1000]).unwrap();
            let batched = start.elapsed() / 1000;
            let kind = if embedding.is_some() {
                "with 384-dim embeddings"
            } else {
                "small"
            };
            println!(
                "{n} threads, {kind} ({} MB): load {elapsed:?}; save_thread {one_by_one:?} each, \
                 save_threads {batched:?} each",
                bytes_total / 1_000_000
            );
        }
    }
}

#[cfg(test)]
mod message_log_tests {
    use super::*;
    use crate::capture::source::OriginType;
    use crate::memory::graph::Graph;
    use crate::memory::types::Author;
    use chrono::TimeZone;

    fn at(min: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).unwrap() + chrono::Duration::minutes(min)
    }

    fn message(n: usize) -> Message {
        Message {
            id: format!("msg_20260501_090000_{n:08x}"),
            content: format!(
                "message number {n}: {}",
                "the pool timed out again. ".repeat(20)
            ),
            source: Author::Assistant,
            timestamp: at(n as i64),
            metadata: serde_json::Map::new(),
            embedding: None,
            terms: Vec::new(),
            units: Vec::new(),
        }
    }

    fn thread(messages: usize) -> Thread {
        Thread {
            id: "thread_20260501_090000_0000abcd".into(),
            title: "Pool timeouts".into(),
            status: ThreadStatus::Active,
            messages: (0..messages).map(message).collect(),
            summary: "summary".into(),
            topics: vec!["pool".into()],
            origin_type: OriginType::Prompt,
            drift_history: Vec::new(),
            parent_id: None,
            child_ids: Vec::new(),
            decisions: Vec::new(),
            questions: Vec::new(),
            weight: 1.0,
            weight_at: at(0),
            created_at: at(0),
            last_active: at(0),
            activation_count: 1,
            embedding: None,
            pinned: false,
            never_recall: false,
            sharing: Default::default(),
            profile: Vec::new(),
            title_by: Default::default(),
            merged_into: None,
        }
    }

    fn log_len(store: &Store, id: &str) -> u64 {
        fs::metadata(store.threads_dir.join(format!("{id}{MESSAGES_SUFFIX}")))
            .unwrap()
            .len()
    }

    /// Storing one more message writes that message and the header, whatever the thread's
    /// size; a reload holds every message once.
    #[test]
    fn a_capture_writes_its_message_not_the_thread() {
        for size in [10, 1000] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(&dir.path().join("db")).unwrap();
            let t = thread(size);
            let id = t.id.clone();
            store.save_thread(&t).unwrap();
            let mut graph = Graph::from_loaded(vec![t], Vec::new());
            let before = log_len(&store, &id);
            graph.thread_mut(&id).unwrap().messages.push(message(size));
            let changes = graph.take_changes();
            store.save_threads(&changes.save_threads).unwrap();
            graph.saved(&changes);
            let grew = log_len(&store, &id) - before;
            let one = message_lines(Path::new("x"), &[message(size)])
                .unwrap()
                .len() as u64;
            assert_eq!(grew, one, "size {size}");
            let loaded = store.load().unwrap();
            assert_eq!(loaded.threads[0].messages.len(), size + 1);
        }
    }

    /// A message changed in place is appended as its new version; the reload keeps the last
    /// version at the first one's place.
    #[test]
    fn a_changed_message_is_appended_and_read_back_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let t = thread(3);
        let id = t.id.clone();
        store.save_thread(&t).unwrap();
        let mut graph = Graph::from_loaded(vec![t], Vec::new());
        graph.thread_mut(&id).unwrap().messages[1]
            .metadata
            .insert("repeats".into(), 4.into());
        graph.message_updated(&id, 1);
        let changes = graph.take_changes();
        store.save_threads(&changes.save_threads).unwrap();
        let loaded = store.load().unwrap();
        let m = &loaded.threads[0].messages;
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].metadata["repeats"], 4);
        assert_eq!(m[1].id, message(1).id);
    }

    /// A last line a crash cut short is cut off (its capture replays from the journal); a
    /// damaged line in the middle is skipped, the log copied to quarantine, the rest kept; an
    /// append after a failed one starts at the valid end.
    #[test]
    fn torn_and_damaged_lines_never_lose_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let t = thread(4);
        let id = t.id.clone();
        store.save_thread(&t).unwrap();
        let log = store.threads_dir.join(format!("{id}{MESSAGES_SUFFIX}"));
        let whole = fs::read(&log).unwrap();
        let mut bytes = whole.clone();
        bytes.extend_from_slice(b"{\"id\": \"msg_torn");
        fs::write(&log, &bytes).unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.threads[0].messages.len(), 4);
        assert_eq!(fs::read(&log).unwrap(), whole, "the torn line is cut off");
        // A damaged line in the middle.
        let mut lines: Vec<&[u8]> = whole.split(|&b| b == b'\n').collect();
        lines[1] = b"not json";
        fs::write(&log, lines.join(&b'\n')).unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.threads[0].messages.len(), 3);
        assert_eq!(loaded.quarantined.len(), 1);
        // Garbage after the valid end (a failed append) is cut before the next append.
        let valid = fs::metadata(&log).unwrap().len();
        let mut f = fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, b"half a line").unwrap();
        let mut graph = Graph::from_loaded(loaded.threads, Vec::new());
        graph.thread_mut(&id).unwrap().messages.push(message(9));
        let changes = graph.take_changes();
        store.save_threads(&changes.save_threads).unwrap();
        let grown = fs::read(&log).unwrap();
        assert!(!grown.windows(11).any(|w| w == b"half a line"));
        assert_eq!(grown.len() as u64 - valid, {
            message_lines(Path::new("x"), &[message(9)]).unwrap().len() as u64
        });
        assert_eq!(store.load().unwrap().threads[0].messages.len(), 4);
    }

    /// A store of the single-file layout (messages inside each thread's file) is moved to the
    /// log layout on first load, with nothing lost and the old files gone once verified.
    #[test]
    fn a_single_file_store_is_migrated_and_verified() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let store = Store::open(&db).unwrap();
        let t = thread(5);
        let header = store.threads_dir.join(format!("{}.json", t.id));
        // The old format: the whole thread, messages inline.
        fs::write(&header, serde_json::to_vec(&t).unwrap()).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.threads[0].messages, t.messages);
        let on_disk: serde_json::Value =
            serde_json::from_slice(&fs::read(&header).unwrap()).unwrap();
        assert!(
            on_disk.get("messages").is_none(),
            "the header holds no messages"
        );
        assert!(!store.threads_dir.join(BEFORE_LOGS_DIR).exists());
        let again = Store::open(&db).unwrap().load().unwrap();
        assert_eq!(again.threads[0].messages, t.messages);
    }

    /// A long message stored before units existed is cut into units on load, once: its text
    /// is untouched, the cut is written back, and the copy kept aside is gone once verified.
    #[test]
    fn long_messages_of_an_old_store_are_cut_into_units() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let store = Store::open(&db).unwrap();
        let mut t = thread(3);
        let long: String = (1..=200)
            .map(|i| format!("line {i}: connection pool exhausted after {i} retries\n"))
            .collect();
        t.messages[1].content = long.clone();
        t.messages[1]
            .metadata
            .insert("tool".into(), serde_json::json!("Bash"));
        store.save_thread(&t).unwrap();

        let loaded = Store::open(&db).unwrap().load().unwrap();
        let m = &loaded.threads[0].messages;
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].content, long, "the text is never changed");
        assert!(m[1].units.len() >= 2, "the long message is in units");
        assert!(m[1].units.iter().all(|u| u.embedding.is_none()));
        assert!(m[0].units.is_empty(), "a short message stays whole");
        let covered: usize = m[1].units.iter().map(|u| (u.end - u.start) as usize).sum();
        assert!(covered <= long.len() && covered > long.len() / 2);
        assert!(!store.threads_dir.join(BEFORE_UNITS_DIR).exists());
        // Written back: the next load finds the same units without cutting again.
        let again = Store::open(&db).unwrap().load().unwrap();
        assert_eq!(again.threads[0].messages, loaded.threads[0].messages);
    }

    #[test]
    fn a_corrupt_header_does_not_hide_its_messages() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let t = thread(60);
        store.save_thread(&t).unwrap();
        let header = store.threads_dir.join(format!("{}.json", t.id));
        fs::write(&header, b"{ \"id\": \"thread_2026").unwrap();

        let loaded = Store::open(&dir.path().join("db")).unwrap().load().unwrap();
        assert_eq!(
            loaded.quarantined.len(),
            1,
            "the broken header is kept aside"
        );
        assert_eq!(loaded.threads.len(), 1);
        let back = &loaded.threads[0];
        assert_eq!(back.id, t.id);
        assert_eq!(back.messages.len(), 60, "every message of the log is there");
        assert_eq!(back.status, ThreadStatus::Active);
        assert!(!back.title.is_empty());
        assert_eq!(back.last_active, at(59));
        // The header was written again: the next start loads it as it is.
        let again = Store::open(&dir.path().join("db")).unwrap().load().unwrap();
        assert!(again.quarantined.is_empty());
        assert_eq!(again.threads[0].messages.len(), 60);
        assert_eq!(again.threads[0].title, back.title);
    }
}
