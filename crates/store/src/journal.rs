//! The durable capture journal: nothing the daemon acknowledged is ever lost.
//!
//! A capture is appended to `journal/capture.jsonl` (one JSON [`JournalEntry`] per line) and
//! fsynced *before* the daemon acknowledges it. Once the daemon has processed entries and saved
//! the result, it calls [`Journal::checkpoint`], which records the last processed seq in
//! `journal/checkpoint` (replaced atomically). After a crash or kill -9, [`Journal::open`] returns
//! every entry above the checkpoint for replay.
//!
//! Appends go through one dedicated OS thread that drains every request queued while it was busy,
//! writes all their lines and does a single `sync_data` for the lot (group commit): an fsync costs
//! milliseconds, so many concurrent captures share one instead of queueing for one each.
//!
//! Crash safety of the pieces:
//! * a crash mid-append leaves at most a torn last line, which was never acknowledged: `open`
//!   copies it to quarantine and cuts it off;
//! * a line that cannot be parsed in the middle of the log (disk damage, a record type that
//!   changed) is copied to quarantine and skipped, never silently dropped;
//! * the checkpoint file only grows, is written durably before the log is truncated, and the log
//!   is truncated (on the writer thread, so no append can interleave) only when every entry in
//!   it is at or below the checkpoint. After a crash at any point the log is either whole or
//!   empty, and seqs continue from `max(last line, checkpoint)`, so replay never loses an
//!   unprocessed entry, never replays one at or below the checkpoint, and seqs never repeat.
//!
//! The guarantee is at-least-once: an entry can be replayed when the daemon processed it but died
//! before checkpointing. The daemon stamps each message with its seq and skips replayed seqs it
//! finds already stored.

use super::files::quarantine_bytes;
use super::{io_at, StoreError};
use ai_smartness_proto::atomic::{self, write_atomic};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

/// Size over which a fully processed log is truncated.
pub const DEFAULT_TRUNCATE_OVER_BYTES: u64 = 1024 * 1024;
const LOG_FILE: &str = "capture.jsonl";
const CHECKPOINT_FILE: &str = "checkpoint";
const LOCK_FILE: &str = "lock";
/// Bounds one group commit so a flood cannot make the first caller of a batch wait forever.
const MAX_BATCH: usize = 4096;

/// One journaled capture.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct JournalEntry<T> {
    /// Strictly increasing, across restarts too.
    pub seq: u64,
    pub received_at: DateTime<Utc>,
    pub record: T,
}

/// Tuning of a [`Journal`].
#[derive(Debug, Clone, Copy)]
pub struct JournalOptions {
    /// A fully processed log larger than this is truncated at the next checkpoint.
    pub truncate_over_bytes: u64,
}

impl Default for JournalOptions {
    fn default() -> Self {
        JournalOptions {
            truncate_over_bytes: DEFAULT_TRUNCATE_OVER_BYTES,
        }
    }
}

/// Handle to the journal; cheap to clone (all clones share one writer thread). The writer stops
/// when the last clone is dropped, after answering what was already queued.
pub struct Journal<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for Journal<T> {
    fn clone(&self) -> Self {
        Journal {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// Counters shared between the handles and the writer thread.
struct Shared {
    /// Last durable seq (at open: `max(last line, checkpoint)`).
    last_seq: AtomicU64,
    /// Last seq whose checkpoint is durable on disk.
    checkpointed: AtomicU64,
    /// Current size of the log file.
    log_len: AtomicU64,
    /// The log still holds lines that were quarantined at open: truncate it as soon as it is
    /// fully processed, whatever its size, so they are not quarantined again at every start.
    dirty: AtomicBool,
    /// Number of group commits (fsyncs of appended data), to measure batching.
    syncs: AtomicU64,
}

struct Inner<T> {
    /// `None` only while dropping.
    tx: Option<mpsc::Sender<Request<T>>>,
    writer: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    checkpoint_path: PathBuf,
    /// Serialises checkpoint writes so the file can only grow.
    checkpoint_lock: Mutex<()>,
    truncate_over: u64,
    /// Seqs returned by `open` for replay (sorted), for an exact `pending`.
    replayed: Vec<u64>,
    /// `last_seq` at open: appends since then are exactly the seqs above it.
    open_base: u64,
    /// Holds the folder's exclusive lock; released when dropped (after the writer stopped) or
    /// by the kernel when the process dies.
    _lock: File,
}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        // Closing the channel ends the writer's loop once it has answered what is queued.
        drop(self.tx.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

type AppendResult<T> = Result<JournalEntry<T>, StoreError>;

/// Where the writer sends an append's outcome.
enum Reply<T> {
    Async(oneshot::Sender<AppendResult<T>>),
    Blocking(mpsc::SyncSender<AppendResult<T>>),
}

impl<T> Reply<T> {
    fn send(self, result: AppendResult<T>) {
        // A caller that stopped waiting is not an error: its entry simply stays unacknowledged.
        match self {
            Reply::Async(tx) => {
                let _ = tx.send(result);
            }
            Reply::Blocking(tx) => {
                let _ = tx.send(result);
            }
        }
    }
}

enum Request<T> {
    Append {
        received_at: DateTime<Utc>,
        record: T,
        reply: Reply<T>,
    },
    /// Truncate the log if everything in it is checkpointed; answers whether it did.
    Truncate {
        reply: mpsc::SyncSender<Result<bool, StoreError>>,
    },
}

impl<T: Serialize + DeserializeOwned + Send + 'static> Journal<T> {
    /// Opens `dir` (`db/journal/`, created if needed), returns the journal and every entry not
    /// yet checkpointed, in seq order (the replay). Damaged lines are copied to `quarantine_dir`.
    pub fn open(
        dir: &Path,
        quarantine_dir: &Path,
    ) -> Result<(Journal<T>, Vec<JournalEntry<T>>), StoreError> {
        Self::open_with(dir, quarantine_dir, JournalOptions::default())
    }

    /// [`Journal::open`] with a [`Sink`] that receives every new durable entry in seq order.
    pub fn open_with_sink(
        dir: &Path,
        quarantine_dir: &Path,
        options: JournalOptions,
        sink: Sink<T>,
    ) -> Result<(Journal<T>, Vec<JournalEntry<T>>), StoreError>
    where
        T: Clone,
    {
        Self::open_inner(dir, quarantine_dir, options, Some((sink, T::clone)))
    }

    /// [`Journal::open`] with explicit options.
    pub fn open_with(
        dir: &Path,
        quarantine_dir: &Path,
        options: JournalOptions,
    ) -> Result<(Journal<T>, Vec<JournalEntry<T>>), StoreError> {
        Self::open_inner(dir, quarantine_dir, options, None)
    }

    fn open_inner(
        dir: &Path,
        quarantine_dir: &Path,
        options: JournalOptions,
        sink: Option<SinkWithClone<T>>,
    ) -> Result<(Journal<T>, Vec<JournalEntry<T>>), StoreError> {
        fs::create_dir_all(dir).map_err(io_at(dir))?;
        let lock = lock_dir(dir)?;
        for path in atomic::remove_stray_temp_files(dir).map_err(io_at(dir))? {
            tracing::info!(file = %path.display(), "removed a temporary file left by a crash");
        }
        let checkpoint_path = dir.join(CHECKPOINT_FILE);
        let checkpointed = read_checkpoint(&checkpoint_path, quarantine_dir)?;

        let log_path = dir.join(LOG_FILE);
        let existed = log_path.exists();
        // O_APPEND: every write lands at the current end, also after a truncation.
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&log_path)
            .map_err(io_at(&log_path))?;
        if !existed {
            // Make the new file's name durable, not only its future contents.
            atomic::sync_dir(dir).map_err(io_at(dir))?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_at(&log_path))?;
        let scan = scan_log::<T>(&bytes, &log_path, quarantine_dir)?;
        let mut len = bytes.len() as u64;
        drop(bytes);
        if (scan.valid_len as u64) < len {
            file.set_len(scan.valid_len as u64)
                .and_then(|()| file.sync_all())
                .map_err(io_at(&log_path))?;
            len = scan.valid_len as u64;
        }

        let base = scan.last_seq.max(checkpointed);
        let replay: Vec<JournalEntry<T>> = scan
            .entries
            .into_iter()
            .filter(|e| e.seq > checkpointed)
            .collect();
        let mut dirty = scan.quarantined_lines > 0;
        if replay.is_empty() && len > 0 && (dirty || len > options.truncate_over_bytes) {
            // Everything in the log is processed (and `base` equals the checkpoint).
            file.set_len(0)
                .and_then(|()| file.sync_all())
                .map_err(io_at(&log_path))?;
            tracing::info!(bytes = len, "truncated the fully processed capture journal");
            len = 0;
            dirty = false;
        }
        if !replay.is_empty() {
            tracing::info!(
                entries = replay.len(),
                after_seq = checkpointed,
                "capture journal has unprocessed entries to replay"
            );
        }

        let shared = Arc::new(Shared {
            last_seq: AtomicU64::new(base),
            checkpointed: AtomicU64::new(checkpointed),
            log_len: AtomicU64::new(len),
            dirty: AtomicBool::new(dirty),
            syncs: AtomicU64::new(0),
        });
        let (tx, rx) = mpsc::channel();
        let writer = Writer {
            file,
            path: log_path,
            len,
            next_seq: base + 1,
            shared: Arc::clone(&shared),
            truncate_over: options.truncate_over_bytes,
            failed: None,
            rx,
            sink,
        };
        let handle = std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || writer.run())
            .map_err(io_at(dir))?;
        let journal = Journal {
            inner: Arc::new(Inner {
                tx: Some(tx),
                writer: Some(handle),
                shared,
                checkpoint_path,
                checkpoint_lock: Mutex::new(()),
                truncate_over: options.truncate_over_bytes,
                replayed: replay.iter().map(|e| e.seq).collect(),
                open_base: base,
                _lock: lock,
            }),
        };
        Ok((journal, replay))
    }

    /// Appends and fsyncs; returns the entry once it is durable. Concurrent callers share one
    /// fsync. Only acknowledge the capture after this returns `Ok`.
    ///
    /// If this future is dropped before it completes the entry may still have been written; it
    /// is then replayed at the next start (unless a later checkpoint covers its seq), so do not
    /// cancel appends whose captures matter.
    pub async fn append(
        &self,
        received_at: DateTime<Utc>,
        record: T,
    ) -> Result<JournalEntry<T>, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Append {
            received_at,
            record,
            reply: Reply::Async(tx),
        })?;
        rx.await.map_err(|_| StoreError::JournalClosed)?
    }

    /// [`Journal::append`] for synchronous code (blocks the calling thread; fine outside async
    /// code or inside `spawn_blocking`).
    pub fn append_blocking(
        &self,
        received_at: DateTime<Utc>,
        record: T,
    ) -> Result<JournalEntry<T>, StoreError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(Request::Append {
            received_at,
            record,
            reply: Reply::Blocking(tx),
        })?;
        rx.recv().map_err(|_| StoreError::JournalClosed)?
    }

    /// Everything up to and including `seq` has been processed and saved: records it durably
    /// (a lower seq than the current checkpoint is a no-op). When nothing is left unprocessed and
    /// the log is over the size limit, the log is truncated before this returns.
    ///
    /// Blocks for a file write and fsyncs (and possibly for the writer's current batch): call it
    /// from `spawn_blocking` in async code, and batch checkpoints when captures arrive quickly.
    pub fn checkpoint(&self, seq: u64) -> Result<(), StoreError> {
        let inner = &*self.inner;
        {
            let _guard = inner
                .checkpoint_lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if seq > inner.shared.checkpointed.load(Ordering::Acquire) {
                let last = inner.shared.last_seq.load(Ordering::Acquire);
                if seq > last {
                    return Err(StoreError::CheckpointAhead { seq, last });
                }
                let path = &inner.checkpoint_path;
                write_atomic(path, format!("{seq}\n").as_bytes()).map_err(io_at(path))?;
                // Only now that it is durable may the writer rely on it to truncate.
                inner.shared.checkpointed.store(seq, Ordering::Release);
            }
        }
        let len = inner.shared.log_len.load(Ordering::Acquire);
        let wanted = len > inner.truncate_over || inner.shared.dirty.load(Ordering::Acquire);
        if len > 0 && wanted && self.pending() == 0 {
            let (tx, rx) = mpsc::sync_channel(1);
            self.send(Request::Truncate { reply: tx })?;
            rx.recv().map_err(|_| StoreError::JournalClosed)??;
        }
        Ok(())
    }

    fn send(&self, request: Request<T>) -> Result<(), StoreError> {
        self.inner
            .tx
            .as_ref()
            .ok_or(StoreError::JournalClosed)?
            .send(request)
            .map_err(|_| StoreError::JournalClosed)
    }
}

impl<T> Journal<T> {
    /// The last durable seq (0 for a journal that never held anything).
    pub fn last_seq(&self) -> u64 {
        self.inner.shared.last_seq.load(Ordering::Acquire)
    }

    /// The last checkpointed seq.
    pub fn checkpointed(&self) -> u64 {
        self.inner.shared.checkpointed.load(Ordering::Acquire)
    }

    /// Entries appended (or returned for replay) but not checkpointed yet.
    pub fn pending(&self) -> u64 {
        let inner = &*self.inner;
        let checkpointed = inner.shared.checkpointed.load(Ordering::Acquire);
        let last = inner.shared.last_seq.load(Ordering::Acquire);
        let replayed = &inner.replayed;
        let replay_left = replayed.len() - replayed.partition_point(|&s| s <= checkpointed);
        // Seqs since open are contiguous: the writer reuses the seqs of a batch it undid.
        replay_left as u64 + last.saturating_sub(inner.open_base.max(checkpointed))
    }
}

impl<T> fmt::Debug for Journal<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal")
            .field("last_seq", &self.last_seq())
            .field("checkpointed", &self.checkpointed())
            .field("pending", &self.pending())
            .finish_non_exhaustive()
    }
}

/// Takes an exclusive lock (`flock`, through std) on `dir/lock`, so a second daemon (or a second `open` in this
/// process) cannot append to the same log.
fn lock_dir(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_at(&path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(StoreError::JournalLocked(dir.to_path_buf())),
        Err(fs::TryLockError::Error(e)) => Err(io_at(&path)(e)),
    }
}

/// The checkpoint on disk; 0 when there is none. An unreadable one is copied to quarantine and
/// taken as 0, which replays the whole log: duplicates are harmless, losses are not.
fn read_checkpoint(path: &Path, quarantine_dir: &Path) -> Result<u64, StoreError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_at(path)(e)),
    };
    let parsed = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&seq| seq < u64::MAX);
    match parsed {
        Some(seq) => Ok(seq),
        None => {
            quarantine_bytes(
                quarantine_dir,
                CHECKPOINT_FILE,
                path,
                &bytes,
                "unparsable journal checkpoint: replaying the whole journal",
            )?;
            Ok(0)
        }
    }
}

/// What `open` found in the log.
struct Scan<T> {
    entries: Vec<JournalEntry<T>>,
    /// Highest seq among `entries` (0 if none).
    last_seq: u64,
    /// Length of the log without its torn tail.
    valid_len: usize,
    /// Damaged lines before the end, copied to quarantine and skipped.
    quarantined_lines: usize,
}

fn scan_log<T: DeserializeOwned>(
    bytes: &[u8],
    log_path: &Path,
    quarantine_dir: &Path,
) -> Result<Scan<T>, StoreError> {
    let mut lines = Vec::new();
    let mut start = 0;
    while let Some(offset) = bytes[start..].iter().position(|&b| b == b'\n') {
        lines.push((start, start + offset));
        start += offset + 1;
    }
    // Bytes after the last newline are a line whose write never finished.
    let mut valid_len = start;
    let mut entries = Vec::with_capacity(lines.len());
    let mut last_seq = 0;
    let mut quarantined_lines = 0;
    for (i, &(from, to)) in lines.iter().enumerate() {
        let line = &bytes[from..to];
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let problem = match serde_json::from_slice::<JournalEntry<T>>(line) {
            // u64::MAX is refused so that `seq + 1` can never overflow.
            Ok(entry) if entry.seq > last_seq && entry.seq < u64::MAX => {
                last_seq = entry.seq;
                entries.push(entry);
                continue;
            }
            Ok(entry) => format!("seq {} does not follow seq {last_seq}", entry.seq),
            Err(e) => format!("unparsable journal entry: {e}"),
        };
        if i + 1 == lines.len() {
            // The final line: most likely a write cut short, handled with the torn tail.
            valid_len = from;
        } else {
            quarantine_bytes(
                quarantine_dir,
                &format!("{LOG_FILE}.line{}", i + 1),
                log_path,
                line,
                &format!("line {} skipped: {problem}", i + 1),
            )?;
            quarantined_lines += 1;
        }
    }
    if valid_len < bytes.len() {
        let torn = &bytes[valid_len..];
        tracing::warn!(
            bytes = torn.len(),
            "dropping a torn final capture-journal line (its append was never acknowledged)"
        );
        if !torn.iter().all(u8::is_ascii_whitespace) {
            quarantine_bytes(
                quarantine_dir,
                &format!("{LOG_FILE}.torn"),
                log_path,
                torn,
                "torn or unparsable final line of the capture journal, cut off at open",
            )?;
        }
    }
    Ok(Scan {
        entries,
        last_seq,
        valid_len,
        quarantined_lines,
    })
}

/// State owned by the writer thread.
struct Writer<T> {
    file: File,
    path: PathBuf,
    len: u64,
    next_seq: u64,
    shared: Arc<Shared>,
    truncate_over: u64,
    /// Set when a failed write could not be undone: the log's tail is unknown, so nothing more
    /// may be acknowledged.
    failed: Option<String>,
    rx: mpsc::Receiver<Request<T>>,
    /// Copies of durable entries go here (see [`Sink`]); needs `T: Clone`, hence the function.
    sink: Option<SinkWithClone<T>>,
}

type PendingAppend<T> = (DateTime<Utc>, T, Reply<T>);

/// Receives every entry once it is durable, in seq order, on the writer thread, before any
/// caller is answered: a consumer fed by the sink sees entries in exactly the journal's order,
/// which concurrent callers forwarding their own entries could not guarantee.
pub type Sink<T> = Box<dyn FnMut(Vec<JournalEntry<T>>) + Send>;

/// A sink with the record's clone function (the writer keeps the originals for the replies).
type SinkWithClone<T> = (Sink<T>, fn(&T) -> T);

impl<T: Serialize> Writer<T> {
    fn run(mut self) {
        let mut appends: Vec<PendingAppend<T>> = Vec::new();
        let mut truncates = Vec::new();
        while let Ok(first) = self.rx.recv() {
            let mut next = Some(first);
            while let Some(request) = next {
                match request {
                    Request::Append {
                        received_at,
                        record,
                        reply,
                    } => appends.push((received_at, record, reply)),
                    Request::Truncate { reply } => truncates.push(reply),
                }
                next = if appends.len() + truncates.len() < MAX_BATCH {
                    self.rx.try_recv().ok()
                } else {
                    None
                };
            }
            if !appends.is_empty() {
                self.write_batch(&mut appends);
            }
            for reply in truncates.drain(..) {
                let _ = reply.send(self.truncate_if_processed());
            }
        }
    }

    /// Writes every queued append with one write and one fsync, then answers each caller.
    fn write_batch(&mut self, appends: &mut Vec<PendingAppend<T>>) {
        let mut buf = Vec::with_capacity(appends.len() * 256);
        let mut done = Vec::with_capacity(appends.len());
        let first_seq = self.next_seq;
        for (received_at, record, reply) in appends.drain(..) {
            if let Some(why) = &self.failed {
                reply.send(Err(StoreError::JournalFailed(why.clone())));
                continue;
            }
            let entry = JournalEntry {
                seq: self.next_seq,
                received_at,
                record,
            };
            let mark = buf.len();
            // Compact JSON escapes newlines inside strings, so one entry is one line.
            match serde_json::to_writer(&mut buf, &entry) {
                Ok(()) => {
                    buf.push(b'\n');
                    self.next_seq += 1;
                    done.push((entry, reply));
                }
                Err(source) => {
                    buf.truncate(mark);
                    reply.send(Err(StoreError::Json {
                        path: self.path.clone(),
                        source,
                    }));
                }
            }
        }
        if done.is_empty() {
            return;
        }
        match self
            .file
            .write_all(&buf)
            .and_then(|()| self.file.sync_data())
        {
            Ok(()) => {
                self.len += buf.len() as u64;
                self.shared.log_len.store(self.len, Ordering::Release);
                self.shared
                    .last_seq
                    .store(self.next_seq - 1, Ordering::Release);
                self.shared.syncs.fetch_add(1, Ordering::Relaxed);
                if let Some((sink, clone)) = &mut self.sink {
                    sink(
                        done.iter()
                            .map(|(e, _)| JournalEntry {
                                seq: e.seq,
                                received_at: e.received_at,
                                record: clone(&e.record),
                            })
                            .collect(),
                    );
                }
                for (entry, reply) in done {
                    reply.send(Ok(entry));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, entries = done.len(), "capture journal write failed");
                // Cut the batch off so the log ends on a whole line again and its seqs can be
                // reused (the callers are told it failed). If even that fails, stop accepting.
                match self
                    .file
                    .set_len(self.len)
                    .and_then(|()| self.file.sync_all())
                {
                    Ok(()) => self.next_seq = first_seq,
                    Err(undo) => {
                        tracing::error!(error = %undo, "could not undo the failed journal write");
                        self.failed = Some(format!("{e}; undoing it failed: {undo}"));
                    }
                }
                for (_, reply) in done {
                    reply.send(Err(StoreError::Io {
                        path: self.path.clone(),
                        source: io::Error::new(e.kind(), e.to_string()),
                    }));
                }
            }
        }
    }

    /// Empties the log when every entry in it is checkpointed and it is worth it. Runs on the
    /// writer thread, so no append can slip in between the check and the truncation.
    fn truncate_if_processed(&mut self) -> Result<bool, StoreError> {
        if self.failed.is_some() || self.len == 0 {
            return Ok(false);
        }
        let written = self.next_seq - 1;
        let dirty = self.shared.dirty.load(Ordering::Acquire);
        if self.shared.checkpointed.load(Ordering::Acquire) < written
            || !(dirty || self.len > self.truncate_over)
        {
            return Ok(false);
        }
        // The checkpoint (>= every seq in the log) is already durable, so after a crash at any
        // point the log is whole or empty and both replay nothing; seqs continue from the
        // checkpoint. `ftruncate` itself is atomic.
        self.file
            .set_len(0)
            .and_then(|()| self.file.sync_all())
            .map_err(io_at(&self.path))?;
        tracing::info!(
            bytes = self.len,
            "truncated the fully processed capture journal"
        );
        self.len = 0;
        self.shared.log_len.store(0, Ordering::Release);
        self.shared.dirty.store(false, Ordering::Release);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashSet};
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::Instant;

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    struct Rec {
        task: u32,
        n: u32,
        text: String,
    }

    fn rec(task: u32, n: u32) -> Rec {
        Rec {
            task,
            n,
            text: format!("captured \"text\"\nwith a newline, task {task} item {n}"),
        }
    }

    struct Dirs {
        _tmp: tempfile::TempDir,
        journal: PathBuf,
        quarantine: PathBuf,
    }

    fn dirs() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        Dirs {
            journal: tmp.path().join("journal"),
            quarantine: tmp.path().join("quarantine"),
            _tmp: tmp,
        }
    }

    fn open(d: &Dirs) -> (Journal<Rec>, Vec<JournalEntry<Rec>>) {
        open_with(d, JournalOptions::default())
    }

    fn open_small(d: &Dirs) -> (Journal<Rec>, Vec<JournalEntry<Rec>>) {
        let options = JournalOptions {
            truncate_over_bytes: 1024,
        };
        open_with(d, options)
    }

    /// Reopens, retrying while the folder is locked: when another test spawns a child process,
    /// the child shares our lock's open file until its `exec` closes it (O_CLOEXEC), so a lock
    /// released just before can look held for a moment.
    fn open_with(d: &Dirs, options: JournalOptions) -> (Journal<Rec>, Vec<JournalEntry<Rec>>) {
        for _ in 0..500 {
            match Journal::open_with(&d.journal, &d.quarantine, options) {
                Err(StoreError::JournalLocked(_)) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                other => return other.unwrap(),
            }
        }
        panic!("journal still locked after 5 s");
    }

    fn log_len(d: &Dirs) -> u64 {
        fs::metadata(d.journal.join(LOG_FILE)).unwrap().len()
    }

    fn quarantined(d: &Dirs) -> Vec<String> {
        match fs::read_dir(&d.quarantine) {
            Ok(entries) => entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn seqs(entries: &[JournalEntry<Rec>]) -> Vec<u64> {
        entries.iter().map(|e| e.seq).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_appends_all_replay_with_unique_increasing_seqs() {
        let d = dirs();
        let (journal, replay) = open(&d);
        assert!(replay.is_empty());
        let mut tasks = Vec::new();
        for task in 0..8u32 {
            let journal = journal.clone();
            tasks.push(tokio::spawn(async move {
                let mut got = Vec::new();
                for n in 0..200u32 {
                    let entry = journal.append(Utc::now(), rec(task, n)).await.unwrap();
                    assert_eq!(entry.record, rec(task, n));
                    got.push(entry.seq);
                }
                got
            }));
        }
        let mut all = HashSet::new();
        for t in tasks {
            let got = t.await.unwrap();
            assert!(got.windows(2).all(|w| w[0] < w[1]));
            all.extend(got);
        }
        assert_eq!(all.len(), 1600);
        assert_eq!(journal.last_seq(), 1600);
        assert_eq!(journal.pending(), 1600);
        let syncs = journal.inner.shared.syncs.load(Ordering::Relaxed);
        assert!(syncs <= 1600);
        drop(journal);

        let (journal, replay) = open(&d);
        assert_eq!(seqs(&replay), (1..=1600).collect::<Vec<_>>());
        let mut per_task = vec![Vec::new(); 8];
        for e in &replay {
            per_task[e.record.task as usize].push(e.record.n);
        }
        for list in per_task {
            assert_eq!(list, (0..200).collect::<Vec<_>>());
        }
        assert_eq!(journal.pending(), 1600);
        assert_eq!(
            journal.append_blocking(Utc::now(), rec(9, 0)).unwrap().seq,
            1601
        );
    }

    #[test]
    fn checkpoint_then_reopen_replays_only_later_entries() {
        let d = dirs();
        let (journal, _) = open(&d);
        for n in 0..10 {
            journal.append_blocking(Utc::now(), rec(0, n)).unwrap();
        }
        journal.checkpoint(6).unwrap();
        journal.checkpoint(4).unwrap(); // lower: no-op
        assert_eq!(journal.checkpointed(), 6);
        assert_eq!(journal.pending(), 4);
        assert!(matches!(
            journal.checkpoint(11),
            Err(StoreError::CheckpointAhead { seq: 11, last: 10 })
        ));
        drop(journal);

        let (journal, replay) = open(&d);
        assert_eq!(seqs(&replay), vec![7, 8, 9, 10]);
        assert_eq!(replay[0].record, rec(0, 6));
        assert_eq!(journal.pending(), 4);
        journal.checkpoint(8).unwrap();
        assert_eq!(journal.pending(), 2);
        journal.append_blocking(Utc::now(), rec(0, 10)).unwrap();
        assert_eq!(journal.pending(), 3);
        drop(journal);
        let (_, replay) = open(&d);
        assert_eq!(seqs(&replay), vec![9, 10, 11]);
    }

    #[test]
    fn torn_last_line_is_dropped_and_cut_off() {
        let d = dirs();
        let (journal, _) = open(&d);
        for n in 0..3 {
            journal.append_blocking(Utc::now(), rec(0, n)).unwrap();
        }
        drop(journal);
        let good_len = log_len(&d);
        // A crash in the middle of writing entry 4.
        let mut f = OpenOptions::new()
            .append(true)
            .open(d.journal.join(LOG_FILE))
            .unwrap();
        f.write_all(b"{\"seq\":4,\"received_at\":\"2026-01-30T12:")
            .unwrap();
        drop(f);

        let (journal, replay) = open(&d);
        assert_eq!(seqs(&replay), vec![1, 2, 3]);
        assert_eq!(log_len(&d), good_len);
        assert!(quarantined(&d).iter().any(|n| n.contains("torn")));
        assert_eq!(
            journal.append_blocking(Utc::now(), rec(0, 3)).unwrap().seq,
            4
        );
        drop(journal);

        // A complete but unparsable final line is treated the same way.
        let mut f = OpenOptions::new()
            .append(true)
            .open(d.journal.join(LOG_FILE))
            .unwrap();
        f.write_all(b"\0\0\0\0garbage\n").unwrap();
        drop(f);
        let (_, replay) = open(&d);
        assert_eq!(seqs(&replay), vec![1, 2, 3, 4]);
    }

    #[test]
    fn damaged_middle_line_is_quarantined_and_skipped() {
        let d = dirs();
        let (journal, _) = open(&d);
        for n in 0..3 {
            journal.append_blocking(Utc::now(), rec(0, n)).unwrap();
        }
        drop(journal);
        let path = d.journal.join(LOG_FILE);
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        fs::write(
            &path,
            format!("{}\n{{\"seq\": broken\n{}\n", lines[0], lines[2]),
        )
        .unwrap();

        let (journal, replay) = open(&d);
        assert_eq!(seqs(&replay), vec![1, 3]);
        let q = quarantined(&d);
        assert!(
            q.iter().any(|n| n.ends_with("capture.jsonl.line2")),
            "{q:?}"
        );
        assert!(q
            .iter()
            .any(|n| n.ends_with("capture.jsonl.line2.reason.txt")));
        // Once processed, the damaged log is emptied at once so the line is not quarantined again.
        journal.checkpoint(3).unwrap();
        assert_eq!(log_len(&d), 0);
        drop(journal);
        let (_, replay) = open(&d);
        assert!(replay.is_empty());
        assert_eq!(quarantined(&d).len(), q.len());
    }

    #[test]
    fn truncation_after_full_checkpoint_keeps_seqs_and_replay_right() {
        let d = dirs();
        let (journal, _) = open_small(&d);
        for n in 0..30 {
            journal.append_blocking(Utc::now(), rec(0, n)).unwrap();
        }
        assert!(log_len(&d) > 1024);
        journal.checkpoint(29).unwrap();
        assert!(log_len(&d) > 1024, "one entry is still unprocessed");
        journal.checkpoint(30).unwrap();
        assert_eq!(log_len(&d), 0);
        assert_eq!(journal.pending(), 0);
        for n in 30..35 {
            let e = journal.append_blocking(Utc::now(), rec(0, n)).unwrap();
            assert_eq!(e.seq, u64::from(n) + 1);
        }
        drop(journal);

        let (journal, replay) = open_small(&d);
        assert_eq!(seqs(&replay), vec![31, 32, 33, 34, 35]);
        assert_eq!(replay[0].record, rec(0, 30));
        journal.checkpoint(33).unwrap();
        drop(journal);
        let (journal, replay) = open_small(&d);
        assert_eq!(seqs(&replay), vec![34, 35]);
        journal.checkpoint(35).unwrap();
        drop(journal);

        // A crash right after the truncation: empty log, checkpoint says 35.
        let (journal, replay) = open_small(&d);
        assert!(replay.is_empty());
        assert_eq!(journal.last_seq(), 35);
        assert_eq!(
            journal.append_blocking(Utc::now(), rec(0, 35)).unwrap().seq,
            36
        );
    }

    #[test]
    fn crash_between_checkpoint_and_truncation_replays_nothing() {
        let d = dirs();
        let (journal, _) = open_small(&d);
        for n in 0..30 {
            journal.append_blocking(Utc::now(), rec(0, n)).unwrap();
        }
        drop(journal);
        // The checkpoint file reached the disk, the truncation did not happen.
        atomic::write_atomic(&d.journal.join(CHECKPOINT_FILE), b"30\n").unwrap();
        let (journal, replay) = open_small(&d);
        assert!(replay.is_empty());
        assert_eq!(log_len(&d), 0, "truncated at open since all was processed");
        assert_eq!(
            journal.append_blocking(Utc::now(), rec(0, 30)).unwrap().seq,
            31
        );
    }

    #[test]
    fn a_second_open_of_the_same_folder_is_refused() {
        let d = dirs();
        let (journal, _) = open(&d);
        assert!(matches!(
            Journal::<Rec>::open(&d.journal, &d.quarantine),
            Err(StoreError::JournalLocked(_))
        ));
        let clone = journal.clone();
        drop(journal);
        assert!(Journal::<Rec>::open(&d.journal, &d.quarantine).is_err());
        drop(clone);
        let _ = open(&d);
    }

    #[test]
    fn unparsable_checkpoint_replays_everything() {
        let d = dirs();
        let (journal, _) = open(&d);
        for n in 0..3 {
            journal.append_blocking(Utc::now(), rec(0, n)).unwrap();
        }
        journal.checkpoint(2).unwrap();
        drop(journal);
        fs::write(d.journal.join(CHECKPOINT_FILE), b"two\n").unwrap();
        let (_, replay) = open(&d);
        assert_eq!(seqs(&replay), vec![1, 2, 3]);
        assert!(quarantined(&d).iter().any(|n| n.ends_with("_checkpoint")));
    }

    #[test]
    fn a_record_that_cannot_be_serialised_fails_alone() {
        let d = dirs();
        let (journal, _) =
            Journal::<BTreeMap<Vec<u8>, u32>>::open(&d.journal, &d.quarantine).unwrap();
        let bad = BTreeMap::from([(vec![1u8], 1u32)]);
        assert!(matches!(
            journal.append_blocking(Utc::now(), bad),
            Err(StoreError::Json { .. })
        ));
        let ok = journal
            .append_blocking(Utc::now(), BTreeMap::new())
            .unwrap();
        assert_eq!(ok.seq, 1);
    }

    const CHILD_ENV: &str = "AI_SMARTNESS_JOURNAL_KILL_TEST_DIR";
    const ACKS_BEFORE_KILL: usize = 300;

    /// Not a test on its own (hence ignored, so it is never counted as one): when re-executed
    /// by `acknowledged_entries_survive_sigkill` with CHILD_ENV set, appends forever and prints
    /// each acknowledgement.
    #[test]
    #[ignore = "the child process of acknowledged_entries_survive_sigkill, not a test"]
    fn sigkill_child_appends_until_killed() {
        let Some(dir) = std::env::var_os(CHILD_ENV) else {
            return;
        };
        let dir = PathBuf::from(dir);
        let (journal, _) =
            Journal::<Rec>::open(&dir.join("journal"), &dir.join("quarantine")).unwrap();
        let mut out = io::stdout().lock();
        for n in 0u32.. {
            let entry = journal.append_blocking(Utc::now(), rec(0, n)).unwrap();
            writeln!(out, "ACK {} {n}", entry.seq).unwrap();
            out.flush().unwrap();
        }
    }

    #[test]
    fn acknowledged_entries_survive_sigkill() {
        let d = dirs();
        let root = d.journal.parent().unwrap();
        let module = module_path!().split_once("::").unwrap().1;
        let name = format!("{module}::sigkill_child_appends_until_killed");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                name.as_str(),
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut acked = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            // libtest may print "test NAME ... " on the same line as our first output.
            let Some(at) = line.rfind("ACK ") else {
                continue;
            };
            let mut parts = line[at + 4..].split(' ');
            let seq: u64 = parts.next().unwrap().parse().unwrap();
            let n: u32 = parts.next().unwrap().parse().unwrap();
            acked.push((seq, n));
            if acked.len() == ACKS_BEFORE_KILL {
                break;
            }
        }
        child.kill().unwrap(); // SIGKILL: the child is still appending
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert_eq!(acked.len(), ACKS_BEFORE_KILL, "the child stopped early");

        let (journal, replay) = open(&d);
        assert!(replay.len() >= ACKS_BEFORE_KILL);
        assert!(replay.windows(2).all(|w| w[0].seq < w[1].seq));
        for (seq, n) in &acked {
            let entry = replay.iter().find(|e| e.seq == *seq);
            assert_eq!(entry.map(|e| e.record.n), Some(*n), "seq {seq} lost");
        }
        let last = replay.last().unwrap().seq;
        assert_eq!(
            journal.append_blocking(Utc::now(), rec(1, 0)).unwrap().seq,
            last + 1
        );
    }

    /// Run with `--release -- --ignored --nocapture` to see the numbers.
    #[tokio::test(flavor = "multi_thread", worker_threads = 8)]
    #[ignore]
    async fn perf_group_commit() {
        let d = dirs();
        let (journal, _) = open(&d);
        let start = Instant::now();
        for n in 0..300 {
            journal.append(Utc::now(), rec(0, n)).await.unwrap();
        }
        let one = start.elapsed();
        println!(
            "1 task: 300 appends in {one:?} = {:.0}/s",
            300.0 / one.as_secs_f64()
        );

        for tasks in [8u32, 64] {
            let per_task = 16_000 / tasks;
            let syncs_before = journal.inner.shared.syncs.load(Ordering::Relaxed);
            let start = Instant::now();
            let mut handles = Vec::new();
            for task in 0..tasks {
                let journal = journal.clone();
                handles.push(tokio::spawn(async move {
                    for n in 0..per_task {
                        journal.append(Utc::now(), rec(task, n)).await.unwrap();
                    }
                }));
            }
            for h in handles {
                h.await.unwrap();
            }
            let elapsed = start.elapsed();
            let syncs = journal.inner.shared.syncs.load(Ordering::Relaxed) - syncs_before;
            let total = tasks * per_task;
            println!(
                "{tasks} tasks: {total} appends in {elapsed:?} = {:.0}/s, {syncs} fsyncs ({:.1} appends per fsync)",
                f64::from(total) / elapsed.as_secs_f64(),
                f64::from(total) / syncs as f64
            );
        }
        let start = Instant::now();
        journal.checkpoint(journal.last_seq()).unwrap();
        println!(
            "checkpoint + truncation of {} entries: {:?}",
            journal.last_seq(),
            start.elapsed()
        );
    }
}
