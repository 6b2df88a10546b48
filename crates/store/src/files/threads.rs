//! Threads: each one's header and its append-only message log, loaded, saved and cut into units.

use super::*;

impl Store {
    /// A message log whose header did not load (corrupt, truncated, or never written: a crash
    /// between the two) still holds acknowledged messages: its header is made again from them
    /// and written, so the thread stays visible. The unreadable header stays in quarantine.
    pub(super) fn recover_headers(&self, threads: &mut Vec<Thread>) -> Result<(), StoreError> {
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
            let thread = ai_smartness_core::memory::consolidate::rebuilt_header(
                id,
                read.messages,
                // A repair of a file as it is read: the day it was made, by the wall clock.
                chrono::Utc::now(),
            );
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
    pub(super) fn cut_into_units(&self, threads: &mut [Thread]) -> Result<(), StoreError> {
        let backup = self.threads_dir.join(BEFORE_UNITS_DIR);
        let mut cut: Vec<(String, Vec<String>)> = Vec::new();
        for t in threads.iter_mut() {
            let mut changed = false;
            for m in &mut t.messages {
                if !m.units.is_empty() || m.content.len() <= ai_smartness_capture::units::UNIT_MAX {
                    continue;
                }
                let tool = m
                    .metadata
                    .get("tool")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
                let spans = ai_smartness_capture::units::split(&tool, &m.content);
                if spans.len() < 2 {
                    continue;
                }
                m.units = spans
                    .into_iter()
                    .map(|s| ai_smartness_core::memory::types::Unit {
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
    pub(super) fn append_messages(
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
    pub(super) fn rewrite_messages(
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
    pub(super) fn load_messages(
        &self,
        threads: &mut [Thread],
        quarantined: &mut Vec<PathBuf>,
    ) -> Result<(), StoreError> {
        let mut migrated: Vec<(String, Vec<String>)> = Vec::new();
        let backup = self.threads_dir.join(BEFORE_LOGS_DIR);
        let mut packing = VectorPacking::default();
        for i in 0..threads.len() {
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
            packing.loaded(threads, i);
        }
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

    /// Whether every thread of a migration reads back from its message log with the same
    /// messages, in order (thread id, message ids): only then may its backup go.
    pub(super) fn logs_read_back(&self, threads: &[(String, Vec<String>)]) -> bool {
        threads.iter().all(|(id, ids)| {
            self.entity_path(&self.threads_dir, THREAD_PREFIX, id)
                .ok()
                .and_then(|h| read_log(&messages_path(&h)).ok())
                .is_some_and(|r| r.messages.iter().map(|m| &m.id).eq(ids.iter()))
        })
    }
}

/// `threads/ID.messages.jsonl` for `threads/ID.json`.
pub(super) fn messages_path(header: &Path) -> PathBuf {
    let stem = header.file_stem().unwrap_or_default().to_string_lossy();
    header.with_file_name(format!("{stem}{MESSAGES_SUFFIX}"))
}

/// Messages as log lines: compact JSON, one a line.
pub(super) fn message_lines(path: &Path, messages: &[Message]) -> Result<Vec<u8>, StoreError> {
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
pub(super) struct LogRead {
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

pub(super) fn read_log(path: &Path) -> Result<LogRead, StoreError> {
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
pub(super) struct VectorPacking {
    /// The first thread whose vectors are not packed yet.
    from: usize,
    /// How many vectors those threads hold.
    pending: usize,
}

impl VectorPacking {
    const BLOCK_VECTORS: usize = 8192;

    /// Thread `i` was just loaded (called for each thread, in order): packs the threads loaded
    /// since the last block once they hold enough vectors, or once the last thread is in.
    fn loaded(&mut self, threads: &mut [Thread], i: usize) {
        let upto = i + 1;
        self.pending += threads[i]
            .messages
            .iter()
            .map(Message::vector_count)
            .sum::<usize>();
        if self.pending >= Self::BLOCK_VECTORS || (upto == threads.len() && self.pending > 0) {
            let batch = &mut threads[self.from..upto];
            Message::pack_vectors(batch.iter_mut().flat_map(|t| t.messages.iter_mut()));
            self.from = upto;
            self.pending = 0;
        }
    }
}

#[cfg(test)]
mod message_log_tests {
    use super::*;
    use ai_smartness_capture::source::OriginType;
    use ai_smartness_core::memory::graph::Graph;
    use ai_smartness_core::memory::types::Author;
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
