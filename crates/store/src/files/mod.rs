//! The file store: one JSON file per thread and per bridge, derived index files, syntheses and
//! the quarantine (see the layout in the parent module).

use super::{io_at, StoreError};
use ai_smartness_core::memory::graph::{MessageChange, ThreadChange};
use ai_smartness_core::memory::ids;
use ai_smartness_core::memory::types::{Message, ThinkBridge, Thread, ThreadStatus};
use ai_smartness_proto::atomic::{self, write_atomic};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

mod indexes;
mod quarantine;
mod synthesis;
mod threads;

pub use indexes::IndexSnapshot;
pub(crate) use quarantine::{quarantine_bytes, quarantine_file};
pub use synthesis::read_latest_synthesis;

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

    /// Reads every `PREFIX_*.json` of `dir`; what cannot be used goes to quarantine.
    pub(super) fn load_dir<E: DeserializeOwned>(
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

    /// `DIR/ID.json` for a valid id; anything else could name a path outside `DIR`.
    pub(super) fn entity_path(
        &self,
        dir: &Path,
        prefix: &str,
        id: &str,
    ) -> Result<PathBuf, StoreError> {
        if ids::is_valid(prefix, id) {
            Ok(dir.join(format!("{id}.json")))
        } else {
            Err(StoreError::InvalidId(id.to_owned()))
        }
    }
}

pub(super) fn write_pretty<T: Serialize + ?Sized>(
    path: &Path,
    value: &T,
) -> Result<(), StoreError> {
    let bytes = pretty_bytes(path, value)?;
    write_atomic(path, &bytes).map_err(io_at(path))
}

/// Compact JSON with a final newline: thread files carry a 384-float embedding, which pretty
/// printing would spread over 384 lines (people read threads through `ai thread`).
pub(super) fn pretty_bytes<T: Serialize + ?Sized>(
    path: &Path,
    value: &T,
) -> Result<Vec<u8>, StoreError> {
    let mut bytes = serde_json::to_vec(value).map_err(|source| StoreError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Replaces each file, then fsyncs `dir` once (even after a failure, for the files already
/// renamed).
pub(super) fn save_many<'a, T: Serialize + 'a>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use ai_smartness_capture::source::OriginType;
    use ai_smartness_core::memory::types::{BridgeStatus, BridgeType};
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
                    .map(ai_smartness_vectors::quant::QVec::from_unit);
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
