//! Tokens and dollars spent on LLM calls, per UTC day, persisted in `llm_usage.json` (its
//! `tokenTracker`), and the limits checked before each call: the [`Spending`] the daemon gives
//! its LLM client.
//!
//! The file is replaced atomically (temp file, fsync, rename, fsync of the folder). A file that
//! does not parse is moved aside and counting starts afresh: a broken ledger never stops the
//! daemon. The counters and the limits themselves are records (`ai_smartness_records::cost`).

use ai_smartness_core::clock::SharedClock;
use ai_smartness_llm::cost::{CallEstimate, Spending};
use ai_smartness_llm::{ErrorKind, LlmError, Usage};
use ai_smartness_proto::atomic::write_atomic;
use ai_smartness_records::cost::{DayUsage, Limits, Totals, UsageSnapshot};
use chrono::{DateTime, Duration as Days, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The ledger's file name in the folder given to [`CostTracker::open`].
pub const FILE_NAME: &str = "llm_usage.json";
/// Days of history kept, today included.
pub const DAYS_KEPT: i64 = 31;

/// Counts one answered call in `totals`.
fn add(totals: &mut Totals, usage: &Usage, cost: f64) {
    totals.calls += 1;
    totals.input_tokens += usage.input_tokens;
    totals.output_tokens += usage.output_tokens;
    totals.cache_read_tokens += usage.cache_read_tokens;
    totals.cache_write_tokens += usage.cache_write_tokens;
    totals.cost_usd += cost;
}

/// The file's content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct Ledger {
    version: u32,
    /// `YYYY-MM-DD` (UTC) → usage, the last [`DAYS_KEPT`] days.
    days: BTreeMap<String, DayUsage>,
    /// Since the ledger was started (not pruned).
    total: Totals,
}

/// The ledger of one project.
pub struct CostTracker {
    path: PathBuf,
    /// Where "today" comes from: the daemon's clock, so tests cross midnight by hand.
    clock: SharedClock,
    limits: Mutex<Limits>,
    ledger: Mutex<Ledger>,
    /// Held across update and write, so saves land in the order of the updates.
    save: Mutex<()>,
    /// When the file was last written, and whether counts changed since: calls close together
    /// are saved together, at most one write per [`SAVE_EVERY`] (see [`CostTracker::flush`]).
    written: Mutex<(Option<std::time::Instant>, bool)>,
}

/// The ledger is written at most this often while calls come; [`CostTracker::flush`] writes
/// what is left (the daemon calls it on its periodic tick and when it stops). The limits are
/// checked against the counts in memory, so a later write never lets a call through.
pub const SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl std::fmt::Debug for CostTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CostTracker")
            .field("path", &self.path)
            .field("limits", &*lock(&self.limits))
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CostTracker {
    /// Opens (or starts) `dir/llm_usage.json` on the system clock.
    pub fn open(dir: &Path, limits: Limits) -> CostTracker {
        Self::open_with_clock(dir, limits, ai_smartness_core::clock::system())
    }

    /// [`CostTracker::open`] with an injected clock.
    pub fn open_with_clock(dir: &Path, limits: Limits, clock: SharedClock) -> CostTracker {
        let path = dir.join(FILE_NAME);
        let ledger = load(&path, clock.now());
        CostTracker {
            path,
            clock,
            limits: Mutex::new(limits),
            ledger: Mutex::new(ledger),
            save: Mutex::new(()),
            written: Mutex::new((None, false)),
        }
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        *lock(&self.limits)
    }

    /// Replaces the limits (a config reload).
    pub fn set_limits(&self, limits: Limits) {
        *lock(&self.limits) = limits;
    }

    fn today(&self) -> NaiveDate {
        self.clock.now().date_naive()
    }

    /// Refuses a call that would break a limit ([`ErrorKind::BudgetExceeded`]).
    pub fn check(&self, estimate: &CallEstimate) -> Result<(), LlmError> {
        let limits = self.limits();
        if let Some(max) = limits.max_tokens_per_call {
            let want = estimate.input_tokens + u64::from(estimate.max_output_tokens);
            if want > u64::from(max) {
                return Err(LlmError::new(
                    ErrorKind::BudgetExceeded,
                    format!(
                        "this call may use {want} tokens (about {} in, up to {} out); the limit \
                         is {max} per call",
                        estimate.input_tokens, estimate.max_output_tokens
                    ),
                ));
            }
        }
        if let Some(max) = limits.max_cost_per_day_usd {
            let spent = lock(&self.ledger)
                .days
                .get(&self.today().to_string())
                .map_or(0.0, |d| d.totals.cost_usd);
            if spent + estimate.max_cost_usd > max {
                return Err(LlmError::new(
                    ErrorKind::BudgetExceeded,
                    format!(
                        "daily LLM budget: ${spent:.4} spent today (UTC), this call may cost up \
                         to ${:.4}, the limit is ${max:.2}",
                        estimate.max_cost_usd
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Counts an answered call and saves. The count holds in memory even if saving fails.
    pub fn count(
        &self,
        provider: &str,
        model: &str,
        usage: &Usage,
        cost_usd: f64,
    ) -> io::Result<()> {
        self.update(|day, ledger| {
            add(&mut day.totals, usage, cost_usd);
            add(
                day.by_model
                    .entry(format!("{provider}/{model}"))
                    .or_default(),
                usage,
                cost_usd,
            );
            add(ledger, usage, cost_usd);
        })
    }

    /// Counts a call that failed after its retries, and saves.
    pub fn count_failure(&self, provider: &str, model: &str) -> io::Result<()> {
        self.update(|day, ledger| {
            day.totals.failed_calls += 1;
            day.by_model
                .entry(format!("{provider}/{model}"))
                .or_default()
                .failed_calls += 1;
            ledger.failed_calls += 1;
        })
    }

    fn update(&self, f: impl FnOnce(&mut DayUsage, &mut Totals)) -> io::Result<()> {
        let today = self.today();
        let _order = lock(&self.save);
        {
            let mut ledger = lock(&self.ledger);
            ledger.version = 1;
            let Ledger { days, total, .. } = &mut *ledger;
            f(days.entry(today.to_string()).or_default(), total);
            prune(&mut ledger, today);
        }
        let due = {
            let mut written = lock(&self.written);
            written.1 = true;
            written.0.is_none_or(|at| at.elapsed() >= SAVE_EVERY)
        };
        if due {
            self.write()
        } else {
            Ok(())
        }
    }

    /// Writes the counts not saved yet, if any.
    pub fn flush(&self) -> io::Result<()> {
        let _order = lock(&self.save);
        if lock(&self.written).1 {
            self.write()
        } else {
            Ok(())
        }
    }

    /// Writes the ledger as it is now (the caller holds `save`).
    fn write(&self) -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(&*lock(&self.ledger)).map_err(io::Error::other)?;
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir)?;
        }
        write_atomic(&self.path, &bytes)?;
        *lock(&self.written) = (Some(std::time::Instant::now()), false);
        Ok(())
    }

    /// A save that failed: the counts stay in memory and go with the next save.
    fn save_failed(&self, e: &io::Error) {
        tracing::warn!(
            target: "llm",
            event = "llm_usage_save_failed",
            path = %self.path.display(),
            error = %e,
        );
    }

    /// Today and all time, for `ai status`.
    pub fn snapshot(&self) -> UsageSnapshot {
        let day = self.today().to_string();
        let ledger = lock(&self.ledger);
        UsageSnapshot {
            today: ledger.days.get(&day).cloned().unwrap_or_default(),
            day,
            total: ledger.total.clone(),
            limits: self.limits(),
        }
    }

    /// The kept days, oldest first.
    pub fn days(&self) -> Vec<(String, DayUsage)> {
        lock(&self.ledger)
            .days
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// What the client asks and tells; a ledger that cannot be saved is logged, never the call's
/// failure (the counts stay in memory and go with the next save).
impl Spending for CostTracker {
    fn check(&self, estimate: &CallEstimate) -> Result<(), LlmError> {
        CostTracker::check(self, estimate)
    }

    fn record(&self, provider: &str, model: &str, usage: &Usage, cost_usd: f64) {
        if let Err(e) = self.count(provider, model, usage, cost_usd) {
            self.save_failed(&e);
        }
    }

    fn record_failure(&self, provider: &str, model: &str) {
        if let Err(e) = self.count_failure(provider, model) {
            self.save_failed(&e);
        }
    }
}

/// Drops days older than [`DAYS_KEPT`] (and unparsable keys).
fn prune(ledger: &mut Ledger, today: NaiveDate) {
    let oldest = today - Days::days(DAYS_KEPT - 1);
    ledger
        .days
        .retain(|k, _| NaiveDate::parse_from_str(k, "%Y-%m-%d").is_ok_and(|d| d >= oldest));
}

/// Reads the ledger; a missing file starts one, a corrupt one is moved aside.
fn load(path: &Path, now: DateTime<Utc>) -> Ledger {
    let fresh = || Ledger {
        version: 1,
        ..Ledger::default()
    };
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return fresh(),
        Err(e) => {
            tracing::warn!(target: "llm", event = "llm_usage_unreadable", path = %path.display(), error = %e);
            return fresh();
        }
    };
    match serde_json::from_slice::<Ledger>(&bytes) {
        Ok(mut l) => {
            prune(&mut l, now.date_naive());
            l
        }
        Err(e) => {
            let mut aside = path.as_os_str().to_owned();
            aside.push(format!(".corrupt-{}", now.format("%Y%m%dT%H%M%S")));
            let moved = fs::rename(path, &aside);
            tracing::warn!(
                target: "llm",
                event = "llm_usage_corrupt",
                path = %path.display(),
                moved_to = %PathBuf::from(&aside).display(),
                moved = moved.is_ok(),
                error = %e,
            );
            fresh()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ai_smartness_core::clock::ManualClock;
    use ai_smartness_llm::registry::Pricing;
    use ai_smartness_llm::ChatRequest;
    use chrono::TimeZone;
    use std::sync::Arc;

    /// A clock the test moves: the ledger's handle, and the test's.
    fn manual(start: DateTime<Utc>) -> (SharedClock, ManualClock) {
        let now = ManualClock::new(start);
        (Arc::new(now.clone()), now)
    }

    fn usage(i: u64, o: u64) -> Usage {
        Usage {
            input_tokens: i,
            output_tokens: o,
            ..Usage::default()
        }
    }

    #[test]
    fn limits_refuse_before_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let (clock, _) = manual(Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap());
        let limits = Limits {
            max_tokens_per_call: Some(1000),
            max_cost_per_day_usd: Some(0.01),
        };
        let t = CostTracker::open_with_clock(dir.path(), limits, clock);
        let pricing = Pricing::new(1.0, 5.0, 0.1, 1.25);
        let small = ChatRequest {
            max_tokens: 100,
            ..ChatRequest::simple("", "hello")
        };
        let est = CallEstimate::for_request(&small, &pricing);
        assert!(est.input_tokens > 0 && est.input_tokens < 50);
        assert!(t.check(&est).is_ok());
        let big = ChatRequest {
            max_tokens: 990,
            ..small.clone()
        };
        let e = t
            .check(&CallEstimate::for_request(&big, &pricing))
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::BudgetExceeded);
        assert!(!e.retryable());
        // Spend close to the daily limit: the next call's worst case no longer fits.
        t.count("anthropic", "m", &usage(1000, 1000), 0.0095)
            .unwrap();
        let e = t.check(&est).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BudgetExceeded);
        assert!(e.message.contains("daily LLM budget"), "{e}");
        t.set_limits(Limits::default());
        assert!(t.check(&CallEstimate::for_request(&big, &pricing)).is_ok());
    }

    #[test]
    fn days_roll_over_at_utc_midnight_and_old_days_go() {
        let dir = tempfile::tempdir().unwrap();
        let (clock, now) = manual(Utc.with_ymd_and_hms(2026, 3, 1, 23, 59, 0).unwrap());
        let limits = Limits {
            max_tokens_per_call: None,
            max_cost_per_day_usd: Some(1.0),
        };
        let t = CostTracker::open_with_clock(dir.path(), limits, clock.clone());
        t.count("anthropic", "haiku", &usage(10, 5), 0.9).unwrap();
        t.count_failure("anthropic", "haiku").unwrap();
        let est = CallEstimate {
            input_tokens: 1,
            max_output_tokens: 1,
            max_cost_usd: 0.2,
        };
        assert!(t.check(&est).is_err());
        let s = t.snapshot();
        assert_eq!(
            (
                s.day.as_str(),
                s.today.totals.calls,
                s.today.totals.failed_calls
            ),
            ("2026-03-01", 1, 1)
        );
        assert_eq!(s.today.by_model["anthropic/haiku"].output_tokens, 5);

        now.set(Utc.with_ymd_and_hms(2026, 3, 2, 0, 0, 1).unwrap());
        assert!(t.check(&est).is_ok(), "a new day, a new budget");
        t.count("openai", "gpt", &usage(1, 1), 0.1).unwrap();
        let s = t.snapshot();
        assert_eq!((s.day.as_str(), s.today.totals.calls), ("2026-03-02", 1));
        assert_eq!(
            (s.total.calls, s.total.failed_calls, s.total.tokens()),
            (2, 1, 17)
        );
        assert!((s.total.cost_usd - 1.0).abs() < 1e-9);

        // 31 days later the first day is gone, the total stays.
        now.set(Utc.with_ymd_and_hms(2026, 4, 1, 8, 0, 0).unwrap());
        t.count("openai", "gpt", &usage(1, 1), 0.0).unwrap();
        let days: Vec<String> = t.days().into_iter().map(|d| d.0).collect();
        assert_eq!(days, ["2026-03-02", "2026-04-01"]);
        assert_eq!(t.snapshot().total.calls, 3);

        // Calls close together are saved together: the file lags until a flush.
        let on_disk = CostTracker::open_with_clock(dir.path(), limits, clock.clone());
        assert!(
            on_disk.snapshot().total.calls < 3,
            "saved at most every {SAVE_EVERY:?}"
        );
        t.flush().unwrap();
        // Reopened from the file: the same.
        let again = CostTracker::open_with_clock(dir.path(), limits, clock);
        assert_eq!(again.snapshot(), t.snapshot());
    }

    #[test]
    fn a_corrupt_file_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let (clock, _) = manual(Utc.with_ymd_and_hms(2026, 3, 1, 10, 0, 0).unwrap());
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, b"{\"days\": {\"2026-03-01\": tru").unwrap();
        let t = CostTracker::open_with_clock(dir.path(), Limits::default(), clock.clone());
        assert_eq!(t.snapshot().total, Totals::default());
        let aside = dir
            .path()
            .join(format!("{FILE_NAME}.corrupt-20260301T100000"));
        assert_eq!(
            std::fs::read(&aside).unwrap(),
            b"{\"days\": {\"2026-03-01\": tru"
        );
        assert!(!path.exists());
        t.count("p", "m", &usage(1, 2), 0.5).unwrap();
        let again = CostTracker::open_with_clock(dir.path(), Limits::default(), clock.clone());
        assert_eq!(again.snapshot().total.calls, 1);
        // Wrong types count as corrupt too; a missing folder is created on the first save.
        std::fs::write(&path, b"[1, 2]").unwrap();
        assert_eq!(
            CostTracker::open_with_clock(dir.path(), Limits::default(), clock.clone())
                .snapshot()
                .total
                .calls,
            0
        );
        let nested = dir.path().join("a/b");
        let t = CostTracker::open_with_clock(&nested, Limits::default(), clock);
        t.count("p", "m", &usage(1, 1), 0.0).unwrap();
        assert!(nested.join(FILE_NAME).is_file());
    }

    #[test]
    fn saves_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let (clock, _) = manual(Utc.with_ymd_and_hms(2026, 3, 1, 10, 0, 0).unwrap());
        let t = Arc::new(CostTracker::open_with_clock(
            dir.path(),
            Limits::default(),
            clock.clone(),
        ));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..25 {
                        t.count("p", "m", &usage(1, 1), 0.001).unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|h| h.join().unwrap());
        t.flush().unwrap();
        // Only the ledger is left, and it is whole JSON with every call.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [FILE_NAME]);
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(t.path()).unwrap()).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(v["total"]["calls"], 100);
        assert_eq!(v["days"]["2026-03-01"]["calls"], 100);
        assert_eq!(
            v["days"]["2026-03-01"]["by_model"]["p/m"]["input_tokens"],
            100
        );
        let again = CostTracker::open_with_clock(dir.path(), Limits::default(), clock);
        assert_eq!(again.snapshot().total.calls, 100);
    }
}
