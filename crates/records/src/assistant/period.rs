//! Periods for THREADS_IN_PERIOD ("dual mode").
//!
//! - CHAT uses absolute periods: `{"from": X, "to": Y}` where each bound is an RFC 3339 instant
//!   or a `YYYY-MM-DD` date. A date as `from` means the start of that day; a date as `to` means
//!   the end of that day (inclusive), so `{"from": "2025-03-01", "to": "2025-03-01"}` is one day.
//! - AUTOMATION uses relative periods `offset_TYPE` (`-1_DAY`, `0_WEEK`, `-2_MONTH`), resolved
//!   against the run's scheduled time, never against now: a run delayed by a day still covers
//!   the days it was scheduled for.
//!
//! Days start at a configurable hour (4 means a day runs 04:00 to 04:00) and weeks on a
//! configurable weekday. Everything is computed in UTC. A resolved period is `[start, end)`.

use chrono::{DateTime, Datelike, Days, Duration, Months, NaiveDate, TimeZone, Utc, Weekday};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// Relative offsets beyond this many units are refused (they would only overflow dates).
pub const MAX_OFFSET: i64 = 1000;

/// Why a period could not be parsed or resolved; the text is fit to send back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeriodError {
    /// Neither an object (absolute) nor a string (relative).
    #[error("a period is an object {{\"from\": ..., \"to\": ...}} or a string like \"-1_DAY\"")]
    WrongShape,
    /// The absolute object has a key other than `from` and `to`.
    #[error("unknown key {0:?} in period (allowed: from, to)")]
    UnknownKey(String),
    /// The absolute object lacks `from` or `to`.
    #[error("period needs \"{0}\"")]
    MissingKey(&'static str),
    /// A bound is not a string, or not a valid date or instant.
    #[error("period \"{key}\": {reason}")]
    BadBound {
        /// `from` or `to`.
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The period is empty or backwards.
    #[error("period \"from\" must be before \"to\"")]
    Backwards,
    /// The relative string is not `offset_TYPE`.
    #[error("relative period {0:?} must look like OFFSET_TYPE: an integer, '_', then HOUR, DAY, WEEK, MONTH or YEAR (e.g. \"-1_DAY\", \"0_WEEK\")")]
    BadRelative(String),
    /// The offset is too large.
    #[error("relative period offset {0} is beyond +/-{MAX_OFFSET}")]
    OffsetTooLarge(i64),
    /// Absolute periods are for CHAT, relative ones for AUTOMATION.
    #[error("{0}")]
    WrongMode(&'static str),
    /// The day start hour is not 0..=23.
    #[error("day start hour {0} is not in 0..=23")]
    BadDayStartHour(u32),
    /// A date went beyond what the calendar can represent.
    #[error("period is out of the representable date range")]
    OutOfRange,
}

/// How days and weeks are cut (`dayStartHour`, `weekStartDay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawPeriodConfig")]
pub struct PeriodConfig {
    /// Hour (UTC, 0..=23) at which a day starts: late-night work belongs to the day before.
    day_start_hour: u32,
    /// First day of a week.
    week_start_day: Weekday,
}

/// The unchecked JSON shape of [`PeriodConfig`], so a bad hour in a config file is refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPeriodConfig {
    day_start_hour: u32,
    week_start_day: Weekday,
}

impl TryFrom<RawPeriodConfig> for PeriodConfig {
    type Error = PeriodError;
    fn try_from(r: RawPeriodConfig) -> Result<Self, PeriodError> {
        PeriodConfig::new(r.day_start_hour, r.week_start_day)
    }
}

impl Default for PeriodConfig {
    fn default() -> Self {
        PeriodConfig {
            day_start_hour: 0,
            week_start_day: Weekday::Mon,
        }
    }
}

impl PeriodConfig {
    /// A config; fails on an hour outside 0..=23.
    pub fn new(day_start_hour: u32, week_start_day: Weekday) -> Result<Self, PeriodError> {
        if day_start_hour > 23 {
            return Err(PeriodError::BadDayStartHour(day_start_hour));
        }
        Ok(PeriodConfig {
            day_start_hour,
            week_start_day,
        })
    }

    /// The hour a day starts at.
    pub fn day_start_hour(&self) -> u32 {
        self.day_start_hour
    }

    /// The weekday a week starts on.
    pub fn week_start_day(&self) -> Weekday {
        self.week_start_day
    }

    /// The instant a calendar day starts under this config.
    fn day_start(&self, d: NaiveDate) -> DateTime<Utc> {
        // The hour is checked by `new` and on deserialisation, so this is always a time.
        Utc.from_utc_datetime(&d.and_hms_opt(self.day_start_hour, 0, 0).unwrap_or_default())
    }

    /// The calendar day an instant belongs to (before the start hour: the day before).
    fn day_of(&self, t: DateTime<Utc>) -> NaiveDate {
        (t - Duration::hours(i64::from(self.day_start_hour))).date_naive()
    }
}

/// A resolved period: `[start, end)` in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeRange {
    /// First instant inside.
    pub start: DateTime<Utc>,
    /// First instant after.
    pub end: DateTime<Utc>,
}

impl TimeRange {
    /// Whether `t` falls inside.
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        self.start <= t && t < self.end
    }
}

/// One bound of an absolute period, kept as written until resolved (a date depends on the day
/// start hour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// An exact instant.
    Instant(DateTime<Utc>),
    /// A whole day.
    Date(NaiveDate),
}

impl Bound {
    fn parse(key: &'static str, v: &Value) -> Result<Self, PeriodError> {
        let s = v.as_str().ok_or_else(|| PeriodError::BadBound {
            key,
            reason: "must be a string (RFC 3339 or YYYY-MM-DD)".into(),
        })?;
        if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            if s.len() == 10 {
                return Ok(Bound::Date(d));
            }
        }
        DateTime::parse_from_rfc3339(s)
            .map(|t| Bound::Instant(t.with_timezone(&Utc)))
            .map_err(|_| PeriodError::BadBound {
                key,
                reason: format!(
                    "{s:?} is neither YYYY-MM-DD nor RFC 3339 (e.g. 2025-03-01T08:00:00Z)"
                ),
            })
    }

    /// The bound as written back: an RFC 3339 instant or a date.
    fn text(self) -> String {
        match self {
            Bound::Instant(t) => t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            Bound::Date(d) => d.format("%Y-%m-%d").to_string(),
        }
    }
}

/// The unit of a relative period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeriodUnit {
    /// A clock hour.
    Hour,
    /// A day, starting at the day start hour.
    Day,
    /// A week, starting on the week start day at the day start hour.
    Week,
    /// A calendar month, from its first day at the day start hour.
    Month,
    /// A calendar year, from January 1st at the day start hour.
    Year,
}

impl PeriodUnit {
    /// The spelling in `offset_TYPE`.
    pub fn as_str(self) -> &'static str {
        match self {
            PeriodUnit::Hour => "HOUR",
            PeriodUnit::Day => "DAY",
            PeriodUnit::Week => "WEEK",
            PeriodUnit::Month => "MONTH",
            PeriodUnit::Year => "YEAR",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            PeriodUnit::Hour,
            PeriodUnit::Day,
            PeriodUnit::Week,
            PeriodUnit::Month,
            PeriodUnit::Year,
        ]
        .into_iter()
        .find(|u| u.as_str() == s)
    }
}

/// A relative period: `offset` units from the one holding the reference time (0 = current,
/// -1 = previous).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelativePeriod {
    /// Units away from the current one; negative is the past.
    pub offset: i64,
    /// Hour, day, week, month or year.
    pub unit: PeriodUnit,
}

impl RelativePeriod {
    /// Parses `offset_TYPE` strictly: an optional `-`, digits, `_`, an upper-case unit.
    pub fn parse(s: &str) -> Result<Self, PeriodError> {
        let bad = || PeriodError::BadRelative(s.to_string());
        let (num, unit) = s.split_once('_').ok_or_else(bad)?;
        let digits = num.strip_prefix('-').unwrap_or(num);
        if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let offset: i64 = num.parse().map_err(|_| bad())?;
        if offset.abs() > MAX_OFFSET {
            return Err(PeriodError::OffsetTooLarge(offset));
        }
        let unit = PeriodUnit::parse(unit).ok_or_else(bad)?;
        Ok(RelativePeriod { offset, unit })
    }

    /// The period `[start, end)` relative to `reference` (an automation's scheduled time).
    pub fn resolve(
        &self,
        reference: DateTime<Utc>,
        cfg: &PeriodConfig,
    ) -> Result<TimeRange, PeriodError> {
        let oor = || PeriodError::OutOfRange;
        let k = self.offset;
        let (start, end) = match self.unit {
            PeriodUnit::Hour => {
                let hour = reference.timestamp().div_euclid(3600) * 3600;
                let base = DateTime::from_timestamp(hour, 0).ok_or_else(oor)?;
                let s = base
                    .checked_add_signed(Duration::hours(k))
                    .ok_or_else(oor)?;
                (s, s + Duration::hours(1))
            }
            PeriodUnit::Day => {
                let a = shift_days(cfg.day_of(reference), k).ok_or_else(oor)?;
                let b = shift_days(a, 1).ok_or_else(oor)?;
                (cfg.day_start(a), cfg.day_start(b))
            }
            PeriodUnit::Week => {
                let day = cfg.day_of(reference);
                let back = (7 + day.weekday().num_days_from_monday()
                    - cfg.week_start_day.num_days_from_monday())
                    % 7;
                let first = shift_days(day, -i64::from(back)).ok_or_else(oor)?;
                let a = shift_days(first, k * 7).ok_or_else(oor)?;
                let b = shift_days(a, 7).ok_or_else(oor)?;
                (cfg.day_start(a), cfg.day_start(b))
            }
            PeriodUnit::Month => {
                let day = cfg.day_of(reference);
                let first = day.with_day(1).ok_or_else(oor)?;
                let a = shift_months(first, k).ok_or_else(oor)?;
                let b = shift_months(a, 1).ok_or_else(oor)?;
                (cfg.day_start(a), cfg.day_start(b))
            }
            PeriodUnit::Year => {
                let day = cfg.day_of(reference);
                let y = i32::try_from(i64::from(day.year()) + k).map_err(|_| oor())?;
                let a = NaiveDate::from_ymd_opt(y, 1, 1).ok_or_else(oor)?;
                let b = NaiveDate::from_ymd_opt(y + 1, 1, 1).ok_or_else(oor)?;
                (cfg.day_start(a), cfg.day_start(b))
            }
        };
        Ok(TimeRange { start, end })
    }
}

impl fmt::Display for RelativePeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.offset, self.unit.as_str())
    }
}

fn shift_days(d: NaiveDate, k: i64) -> Option<NaiveDate> {
    if k >= 0 {
        d.checked_add_days(Days::new(k as u64))
    } else {
        d.checked_sub_days(Days::new(k.unsigned_abs()))
    }
}

fn shift_months(d: NaiveDate, k: i64) -> Option<NaiveDate> {
    let m = u32::try_from(k.unsigned_abs()).ok()?;
    if k >= 0 {
        d.checked_add_months(Months::new(m))
    } else {
        d.checked_sub_months(Months::new(m))
    }
}

/// A period as the model wrote it: absolute (CHAT) or relative (AUTOMATION). Serialized in
/// the form it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Period {
    /// `{"from": ..., "to": ...}`.
    Absolute {
        /// Start bound (a date means that day's start).
        #[serde(serialize_with = "bound_text")]
        from: Bound,
        /// End bound (a date means that day's end, inclusive).
        #[serde(serialize_with = "bound_text")]
        to: Bound,
    },
    /// `offset_TYPE`.
    Relative(#[serde(serialize_with = "serialize_display")] RelativePeriod),
}

fn bound_text<S: serde::Serializer>(b: &Bound, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&b.text())
}

fn serialize_display<S: serde::Serializer>(r: &RelativePeriod, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(r)
}

impl Period {
    /// Parses either form strictly: an object with exactly `from` and `to`, or a relative
    /// string.
    pub fn from_value(v: &Value) -> Result<Self, PeriodError> {
        match v {
            Value::String(s) => RelativePeriod::parse(s).map(Period::Relative),
            Value::Object(map) => {
                if let Some(k) = map.keys().find(|k| *k != "from" && *k != "to") {
                    return Err(PeriodError::UnknownKey(k.clone()));
                }
                let from = Bound::parse(
                    "from",
                    map.get("from").ok_or(PeriodError::MissingKey("from"))?,
                )?;
                let to = Bound::parse("to", map.get("to").ok_or(PeriodError::MissingKey("to"))?)?;
                // Bounds of the same shape can be checked now; mixed ones when resolved.
                match (from, to) {
                    (Bound::Instant(a), Bound::Instant(b)) if a >= b => {
                        return Err(PeriodError::Backwards)
                    }
                    (Bound::Date(a), Bound::Date(b)) if a > b => {
                        return Err(PeriodError::Backwards)
                    }
                    _ => {}
                }
                Ok(Period::Absolute { from, to })
            }
            _ => Err(PeriodError::WrongShape),
        }
    }

    /// The period back as JSON, in the form it was written.
    pub fn to_value(&self) -> Value {
        // Strings only: encoding cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Whether this is a relative (automation) period.
    pub fn is_relative(&self) -> bool {
        matches!(self, Period::Relative(_))
    }

    /// Resolves to `[start, end)`. `reference` is the automation's scheduled time; absolute
    /// periods ignore it.
    pub fn resolve(
        &self,
        reference: DateTime<Utc>,
        cfg: &PeriodConfig,
    ) -> Result<TimeRange, PeriodError> {
        match self {
            Period::Relative(r) => r.resolve(reference, cfg),
            Period::Absolute { from, to } => {
                let start = match *from {
                    Bound::Instant(t) => t,
                    Bound::Date(d) => cfg.day_start(d),
                };
                let end = match *to {
                    Bound::Instant(t) => t,
                    Bound::Date(d) => {
                        cfg.day_start(shift_days(d, 1).ok_or(PeriodError::OutOfRange)?)
                    }
                };
                if start >= end {
                    return Err(PeriodError::Backwards);
                }
                Ok(TimeRange { start, end })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    fn rel(s: &str, r: DateTime<Utc>, cfg: PeriodConfig) -> TimeRange {
        RelativePeriod::parse(s).unwrap().resolve(r, &cfg).unwrap()
    }

    fn range(a: DateTime<Utc>, b: DateTime<Utc>) -> TimeRange {
        TimeRange { start: a, end: b }
    }

    fn midnight() -> PeriodConfig {
        PeriodConfig::default()
    }

    fn four_am() -> PeriodConfig {
        PeriodConfig::new(4, Weekday::Mon).unwrap()
    }

    #[test]
    fn relative_parse_accepts_the_documented_forms() {
        let p = RelativePeriod::parse("-1_DAY").unwrap();
        assert_eq!((p.offset, p.unit), (-1, PeriodUnit::Day));
        assert_eq!(
            RelativePeriod::parse("0_WEEK").unwrap().unit,
            PeriodUnit::Week
        );
        assert_eq!(RelativePeriod::parse("-2_MONTH").unwrap().offset, -2);
        assert_eq!(
            RelativePeriod::parse("0_YEAR").unwrap().unit,
            PeriodUnit::Year
        );
        assert_eq!(
            RelativePeriod::parse("-3_HOUR").unwrap().unit,
            PeriodUnit::Hour
        );
        assert_eq!(
            RelativePeriod::parse("-1_DAY").unwrap().to_string(),
            "-1_DAY"
        );
    }

    #[test]
    fn relative_parse_is_strict() {
        for bad in [
            "",
            "DAY",
            "-1DAY",
            "-1_day",
            "+1_DAY",
            "1.5_DAY",
            "-_DAY",
            "--1_DAY",
            "-1_DAYS",
            " -1_DAY",
            "-1_DAY ",
            "-1_FORTNIGHT",
            "x_DAY",
            "-1__DAY",
        ] {
            assert!(RelativePeriod::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            RelativePeriod::parse("-1001_DAY"),
            Err(PeriodError::OffsetTooLarge(-1001))
        );
        let msg = RelativePeriod::parse("yesterday").unwrap_err().to_string();
        assert!(msg.contains("\"-1_DAY\"") && msg.contains("WEEK"), "{msg}");
    }

    #[test]
    fn day_at_midnight_start() {
        let r = at(2025, 3, 10, 15, 30);
        assert_eq!(
            rel("0_DAY", r, midnight()),
            range(at(2025, 3, 10, 0, 0), at(2025, 3, 11, 0, 0))
        );
        assert_eq!(
            rel("-1_DAY", r, midnight()),
            range(at(2025, 3, 9, 0, 0), at(2025, 3, 10, 0, 0))
        );
    }

    #[test]
    fn day_start_hour_moves_the_day() {
        // 02:00 on the 10th still belongs to the 9th when days start at 04:00.
        let r = at(2025, 3, 10, 2, 0);
        assert_eq!(
            rel("0_DAY", r, four_am()),
            range(at(2025, 3, 9, 4, 0), at(2025, 3, 10, 4, 0))
        );
        let r = at(2025, 3, 10, 4, 0);
        assert_eq!(
            rel("0_DAY", r, four_am()),
            range(at(2025, 3, 10, 4, 0), at(2025, 3, 11, 4, 0))
        );
    }

    #[test]
    fn delayed_run_resolves_against_the_scheduled_time() {
        // Scheduled Monday 2025-03-10 00:05, run Tuesday 10:00: -1_DAY is still Sunday.
        let scheduled = at(2025, 3, 10, 0, 5);
        let ran = at(2025, 3, 11, 10, 0);
        let p = Period::from_value(&json!("-1_DAY")).unwrap();
        let got = p.resolve(scheduled, &midnight()).unwrap();
        assert_eq!(got, range(at(2025, 3, 9, 0, 0), at(2025, 3, 10, 0, 0)));
        assert_ne!(got, p.resolve(ran, &midnight()).unwrap());
        // With days starting at 04:00, Monday 00:05 is still Sunday's day.
        let got = p.resolve(scheduled, &four_am()).unwrap();
        assert_eq!(got, range(at(2025, 3, 8, 4, 0), at(2025, 3, 9, 4, 0)));
    }

    #[test]
    fn weeks_start_on_the_configured_day() {
        // 2025-03-12 is a Wednesday.
        let r = at(2025, 3, 12, 12, 0);
        assert_eq!(
            rel("0_WEEK", r, midnight()),
            range(at(2025, 3, 10, 0, 0), at(2025, 3, 17, 0, 0))
        );
        assert_eq!(
            rel("-1_WEEK", r, midnight()),
            range(at(2025, 3, 3, 0, 0), at(2025, 3, 10, 0, 0))
        );
        let sunday = PeriodConfig::new(0, Weekday::Sun).unwrap();
        assert_eq!(
            rel("0_WEEK", r, sunday),
            range(at(2025, 3, 9, 0, 0), at(2025, 3, 16, 0, 0))
        );
        // Monday 02:00 with 04:00 days is still the previous week (Sunday's day).
        let r = at(2025, 3, 10, 2, 0);
        assert_eq!(
            rel("0_WEEK", r, four_am()),
            range(at(2025, 3, 3, 4, 0), at(2025, 3, 10, 4, 0))
        );
        // A week starting on the reference day itself.
        let wed = PeriodConfig::new(0, Weekday::Wed).unwrap();
        assert_eq!(
            rel("0_WEEK", at(2025, 3, 12, 0, 0), wed),
            range(at(2025, 3, 12, 0, 0), at(2025, 3, 19, 0, 0))
        );
    }

    #[test]
    fn months_handle_lengths_and_year_turns() {
        let r = at(2025, 3, 31, 12, 0);
        assert_eq!(
            rel("-1_MONTH", r, midnight()),
            range(at(2025, 2, 1, 0, 0), at(2025, 3, 1, 0, 0))
        );
        assert_eq!(
            rel("0_MONTH", r, midnight()),
            range(at(2025, 3, 1, 0, 0), at(2025, 4, 1, 0, 0))
        );
        let r = at(2025, 1, 15, 0, 0);
        assert_eq!(
            rel("-2_MONTH", r, midnight()),
            range(at(2024, 11, 1, 0, 0), at(2024, 12, 1, 0, 0))
        );
        // Leap February.
        let r = at(2024, 3, 5, 0, 0);
        assert_eq!(
            rel("-1_MONTH", r, midnight()),
            range(at(2024, 2, 1, 0, 0), at(2024, 3, 1, 0, 0))
        );
        // 1st of the month at 01:00 with 04:00 days belongs to the previous month.
        let r = at(2025, 4, 1, 1, 0);
        assert_eq!(
            rel("0_MONTH", r, four_am()),
            range(at(2025, 3, 1, 4, 0), at(2025, 4, 1, 4, 0))
        );
    }

    #[test]
    fn years_and_hours() {
        let r = at(2025, 6, 1, 0, 0);
        assert_eq!(
            rel("0_YEAR", r, midnight()),
            range(at(2025, 1, 1, 0, 0), at(2026, 1, 1, 0, 0))
        );
        assert_eq!(
            rel("-1_YEAR", r, four_am()),
            range(at(2024, 1, 1, 4, 0), at(2025, 1, 1, 4, 0))
        );
        let r = Utc.with_ymd_and_hms(2025, 6, 1, 13, 47, 12).unwrap();
        assert_eq!(
            rel("0_HOUR", r, four_am()),
            range(at(2025, 6, 1, 13, 0), at(2025, 6, 1, 14, 0))
        );
        assert_eq!(
            rel("-2_HOUR", r, midnight()),
            range(at(2025, 6, 1, 11, 0), at(2025, 6, 1, 12, 0))
        );
    }

    #[test]
    fn absolute_dates_cover_whole_days() {
        let p = Period::from_value(&json!({"from": "2025-03-01", "to": "2025-03-01"})).unwrap();
        assert!(!p.is_relative());
        let r = p.resolve(at(2030, 1, 1, 0, 0), &midnight()).unwrap();
        assert_eq!(r, range(at(2025, 3, 1, 0, 0), at(2025, 3, 2, 0, 0)));
        let r = p.resolve(at(2030, 1, 1, 0, 0), &four_am()).unwrap();
        assert_eq!(r, range(at(2025, 3, 1, 4, 0), at(2025, 3, 2, 4, 0)));
        assert!(r.contains(at(2025, 3, 1, 4, 0)) && !r.contains(at(2025, 3, 2, 4, 0)));
    }

    #[test]
    fn absolute_instants_and_offsets() {
        let p = Period::from_value(
            &json!({"from": "2025-03-01T10:00:00+02:00", "to": "2025-03-01T12:00:00Z"}),
        )
        .unwrap();
        let r = p.resolve(at(2030, 1, 1, 0, 0), &midnight()).unwrap();
        assert_eq!(r, range(at(2025, 3, 1, 8, 0), at(2025, 3, 1, 12, 0)));
        assert_eq!(
            p.to_value(),
            json!({"from": "2025-03-01T08:00:00Z", "to": "2025-03-01T12:00:00Z"})
        );
    }

    #[test]
    fn absolute_parse_is_strict() {
        let err = |v: Value| Period::from_value(&v).unwrap_err();
        assert_eq!(
            err(json!({"from": "2025-03-01"})),
            PeriodError::MissingKey("to")
        );
        assert_eq!(
            err(json!({"to": "2025-03-01"})),
            PeriodError::MissingKey("from")
        );
        assert_eq!(
            err(json!({"from": "2025-03-01", "to": "2025-03-02", "tz": "UTC"})),
            PeriodError::UnknownKey("tz".into())
        );
        assert!(matches!(
            err(json!({"from": 1, "to": "2025-03-02"})),
            PeriodError::BadBound { key: "from", .. }
        ));
        assert!(matches!(
            err(json!({"from": "2025-3-1", "to": "2025-03-02"})),
            PeriodError::BadBound { key: "from", .. }
        ));
        assert!(matches!(
            err(json!({"from": "2025-03-01", "to": "2025-02-30"})),
            PeriodError::BadBound { key: "to", .. }
        ));
        assert_eq!(
            err(json!({"from": "2025-03-02", "to": "2025-03-01"})),
            PeriodError::Backwards
        );
        assert_eq!(
            err(json!({"from": "2025-03-01T12:00:00Z", "to": "2025-03-01T12:00:00Z"})),
            PeriodError::Backwards
        );
        assert_eq!(err(json!(5)), PeriodError::WrongShape);
        assert_eq!(err(json!(["a"])), PeriodError::WrongShape);
        let msg = err(json!({"from": "yesterday", "to": "2025-03-01"})).to_string();
        assert!(msg.starts_with("period \"from\""), "{msg}");
    }

    #[test]
    fn mixed_bounds_are_checked_when_resolved() {
        let p = Period::from_value(&json!({"from": "2025-03-01T10:00:00Z", "to": "2025-02-28"}))
            .unwrap();
        assert_eq!(
            p.resolve(at(2030, 1, 1, 0, 0), &midnight()),
            Err(PeriodError::Backwards)
        );
    }

    #[test]
    fn config_validates_the_hour_and_round_trips() {
        assert_eq!(
            PeriodConfig::new(24, Weekday::Mon),
            Err(PeriodError::BadDayStartHour(24))
        );
        let c = PeriodConfig::new(4, Weekday::Sun).unwrap();
        let v = serde_json::to_value(c).unwrap();
        assert_eq!(serde_json::from_value::<PeriodConfig>(v).unwrap(), c);
        let bad = json!({"day_start_hour": 25, "week_start_day": "Mon"});
        assert!(serde_json::from_value::<PeriodConfig>(bad).is_err());
    }

    #[test]
    fn weeks_cross_the_year_turn() {
        // Thursday 2026-01-01; weeks start on Sunday.
        let sunday = PeriodConfig::new(0, Weekday::Sun).unwrap();
        assert_eq!(
            rel("0_WEEK", at(2026, 1, 1, 9, 0), sunday),
            range(at(2025, 12, 28, 0, 0), at(2026, 1, 4, 0, 0))
        );
        assert_eq!(
            rel("-1_WEEK", at(2026, 1, 1, 9, 0), sunday),
            range(at(2025, 12, 21, 0, 0), at(2025, 12, 28, 0, 0))
        );
    }

    #[test]
    fn week_start_day_reads_the_seed_spelling() {
        let c: PeriodConfig =
            serde_json::from_value(json!({"day_start_hour": 4, "week_start_day": "MONDAY"}))
                .unwrap();
        assert_eq!((c.day_start_hour(), c.week_start_day()), (4, Weekday::Mon));
        let c: PeriodConfig =
            serde_json::from_value(json!({"day_start_hour": 0, "week_start_day": "sun"})).unwrap();
        assert_eq!(c.week_start_day(), Weekday::Sun);
    }

    #[test]
    fn relative_round_trips_through_value() {
        let p = Period::from_value(&json!("-2_MONTH")).unwrap();
        assert!(p.is_relative());
        assert_eq!(p.to_value(), json!("-2_MONTH"));
    }
}
