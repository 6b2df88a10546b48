//! Cron schedules for automations, and the pull-based "is a run due?" rule.
//!
//! Expressions have five fields, `minute hour day-of-month month day-of-week`, each `*`, a
//! number, a range `a-b`, a step `*/n`, `a-b/n` or `a/n` (from `a` to the field's end), or a
//! comma list of those. Months take JAN..DEC and weekdays SUN..SAT (any case); weekday 0 and 7
//! are both Sunday. As in Vixie cron, when both day fields are restricted (neither starts with
//! `*`) a day matches if either matches; otherwise both must. Macros: `@yearly`, `@annually`,
//! `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`.
//!
//! Schedules are evaluated in UTC: `0 9 * * *` fires at 09:00 UTC, with no daylight saving
//! gaps or repeats.

use crate::orchestrator::model::Automation;
use chrono::{DateTime, Datelike, Days, NaiveDate, TimeZone, Timelike, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How far searches go before concluding a schedule never fires: the Gregorian calendar repeats
/// every 400 years, so a pattern that matches at all matches within that span.
const SEARCH_DAYS: u64 = 146_097 + 1;

/// One of the five fields, named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CronField {
    /// 0-59.
    Minute,
    /// 0-23.
    Hour,
    /// 1-31.
    DayOfMonth,
    /// 1-12 or JAN-DEC.
    Month,
    /// 0-7 or SUN-SAT.
    DayOfWeek,
}

impl CronField {
    const ALL: [CronField; 5] = [
        CronField::Minute,
        CronField::Hour,
        CronField::DayOfMonth,
        CronField::Month,
        CronField::DayOfWeek,
    ];

    fn bounds(self) -> (u32, u32) {
        match self {
            CronField::Minute => (0, 59),
            CronField::Hour => (0, 23),
            CronField::DayOfMonth => (1, 31),
            CronField::Month => (1, 12),
            CronField::DayOfWeek => (0, 7),
        }
    }

    fn names(self) -> &'static [&'static str] {
        match self {
            CronField::Month => &[
                "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
            ],
            CronField::DayOfWeek => &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
            _ => &[],
        }
    }
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CronField::Minute => "minute",
            CronField::Hour => "hour",
            CronField::DayOfMonth => "day-of-month",
            CronField::Month => "month",
            CronField::DayOfWeek => "day-of-week",
        })
    }
}

/// Why an expression is not a schedule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// Nothing but spaces.
    #[error("empty schedule: expected 5 fields (minute hour day-of-month month day-of-week) or a macro like @daily")]
    Empty,
    /// `@something` that is not a known macro.
    #[error("unknown macro {0:?}: expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly")]
    UnknownMacro(String),
    /// Not five fields.
    #[error("expected 5 fields (minute hour day-of-month month day-of-week), found {0}")]
    FieldCount(usize),
    /// One field is wrong.
    #[error("{field} field {text:?}: {reason}")]
    Field {
        /// Which field.
        field: CronField,
        /// The field as written.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// A parsed cron schedule. Serialised as its expression.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Schedule {
    /// The expression as given (trimmed), shown back to people.
    source: String,
    /// Bit m set: minute m fires.
    minutes: u64,
    /// Bit h set: hour h fires.
    hours: u32,
    /// Bit d set: day d of the month matches (1..=31).
    days_of_month: u32,
    /// Bit m set: month m matches (1..=12).
    months: u16,
    /// Bit w set: weekday w matches (0 = Sunday .. 6).
    days_of_week: u8,
    /// The day-of-month field starts with `*` (not a restriction for the either-day rule).
    dom_star: bool,
    /// The day-of-week field starts with `*`.
    dow_star: bool,
}

impl Schedule {
    /// Parses an expression or macro.
    pub fn parse(expr: &str) -> Result<Schedule, ScheduleError> {
        let source = expr.trim();
        if source.is_empty() {
            return Err(ScheduleError::Empty);
        }
        let body = if let Some(name) = source.strip_prefix('@') {
            match name.to_ascii_lowercase().as_str() {
                "yearly" | "annually" => "0 0 1 1 *",
                "monthly" => "0 0 1 * *",
                "weekly" => "0 0 * * 0",
                "daily" | "midnight" => "0 0 * * *",
                "hourly" => "0 * * * *",
                _ => return Err(ScheduleError::UnknownMacro(source.to_string())),
            }
        } else {
            source
        };
        let fields: Vec<&str> = body.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(ScheduleError::FieldCount(fields.len()));
        }
        let mut sets = [0u64; 5];
        for (i, field) in CronField::ALL.into_iter().enumerate() {
            sets[i] = parse_field(field, fields[i])?;
        }
        // Weekday 7 is Sunday.
        let mut dow = sets[4];
        if dow & (1 << 7) != 0 {
            dow = (dow & !(1 << 7)) | 1;
        }
        Ok(Schedule {
            source: source.to_string(),
            minutes: sets[0],
            hours: sets[1] as u32,
            days_of_month: sets[2] as u32,
            months: sets[3] as u16,
            days_of_week: dow as u8,
            dom_star: fields[2].starts_with('*'),
            dow_star: fields[4].starts_with('*'),
        })
    }

    /// The expression as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The first firing time strictly after `t` (UTC, whole minutes), or none if the schedule
    /// never fires (e.g. `0 0 30 2 *`).
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = floor_minute(t)? + chrono::Duration::minutes(1);
        let first_day = start.date_naive();
        for i in 0..SEARCH_DAYS {
            let day = first_day.checked_add_days(Days::new(i))?;
            if !self.day_matches(day) {
                continue;
            }
            let (h0, m0) = if i == 0 {
                (start.hour(), start.minute())
            } else {
                (0, 0)
            };
            if let Some((h, m)) = self.first_time_from(h0, m0) {
                return at(day, h, m);
            }
        }
        None
    }

    /// The last firing time at or before `t` (UTC), or none within the search span.
    pub fn latest_at_or_before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let end = floor_minute(t)?;
        let last_day = end.date_naive();
        for i in 0..SEARCH_DAYS {
            let day = last_day.checked_sub_days(Days::new(i))?;
            if !self.day_matches(day) {
                continue;
            }
            let (h0, m0) = if i == 0 {
                (end.hour(), end.minute())
            } else {
                (23, 59)
            };
            if let Some((h, m)) = self.last_time_until(h0, m0) {
                return at(day, h, m);
            }
        }
        None
    }

    fn day_matches(&self, d: NaiveDate) -> bool {
        if self.months & (1 << d.month()) == 0 {
            return false;
        }
        let dom = self.days_of_month & (1 << d.day()) != 0;
        let dow = self.days_of_week & (1 << d.weekday().num_days_from_sunday()) != 0;
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// Earliest (hour, minute) of a matching day at or after `h0:m0`.
    fn first_time_from(&self, h0: u32, m0: u32) -> Option<(u32, u32)> {
        (h0..24)
            .filter(|h| self.hours & (1 << h) != 0)
            .find_map(|h| {
                let from = if h == h0 { m0 } else { 0 };
                (from..60)
                    .find(|m| self.minutes & (1 << m) != 0)
                    .map(|m| (h, m))
            })
    }

    /// Latest (hour, minute) of a matching day at or before `h0:m0`.
    fn last_time_until(&self, h0: u32, m0: u32) -> Option<(u32, u32)> {
        (0..=h0)
            .rev()
            .filter(|h| self.hours & (1 << h) != 0)
            .find_map(|h| {
                let to = if h == h0 { m0 } else { 59 };
                (0..=to)
                    .rev()
                    .find(|m| self.minutes & (1 << m) != 0)
                    .map(|m| (h, m))
            })
    }
}

impl FromStr for Schedule {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, ScheduleError> {
        Schedule::parse(s)
    }
}

impl TryFrom<String> for Schedule {
    type Error = ScheduleError;
    fn try_from(s: String) -> Result<Self, ScheduleError> {
        Schedule::parse(&s)
    }
}

impl From<Schedule> for String {
    fn from(s: Schedule) -> String {
        s.source
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn floor_minute(t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    t.with_second(0)?.with_nanosecond(0)
}

fn at(day: NaiveDate, h: u32, m: u32) -> Option<DateTime<Utc>> {
    Some(Utc.from_utc_datetime(&day.and_hms_opt(h, m, 0)?))
}

/// Parses one field into a bit set over its value range.
fn parse_field(field: CronField, text: &str) -> Result<u64, ScheduleError> {
    let err = |reason: String| ScheduleError::Field {
        field,
        text: text.to_string(),
        reason,
    };
    let (lo, hi) = field.bounds();
    let mut set = 0u64;
    for item in text.split(',') {
        if item.is_empty() {
            return Err(err("empty item in list".into()));
        }
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s
                    .parse()
                    .map_err(|_| err(format!("step {s:?} is not a number")))?;
                if step == 0 {
                    return Err(err("step must be at least 1".into()));
                }
                (r, Some(step))
            }
            None => (item, None),
        };
        let (a, b) = if range == "*" {
            // `*` for weekdays is 0-6: 7 would only repeat Sunday.
            (lo, if field == CronField::DayOfWeek { 6 } else { hi })
        } else if let Some((x, y)) = range.split_once('-') {
            let a = value(field, x).map_err(err)?;
            let b = value(field, y).map_err(err)?;
            if a > b {
                return Err(err(format!("range {range} goes backwards")));
            }
            (a, b)
        } else {
            let a = value(field, range).map_err(err)?;
            // `a/n` runs from a to the end of the field.
            (a, if step.is_some() { hi } else { a })
        };
        let step = step.unwrap_or(1);
        let mut v = a;
        while v <= b {
            set |= 1 << v;
            v += step;
        }
    }
    Ok(set)
}

/// One value: a number in the field's range, or a name where the field has names.
fn value(field: CronField, s: &str) -> Result<u32, String> {
    let (lo, hi) = field.bounds();
    if s.is_empty() {
        return Err("missing value".into());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        let v: u32 = s.parse().map_err(|_| format!("{s:?} is too large"))?;
        if v < lo || v > hi {
            return Err(format!("value {v} is out of range {lo}-{hi}"));
        }
        return Ok(v);
    }
    let names = field.names();
    if names.is_empty() {
        return Err(format!("{s:?} is not a number"));
    }
    let up = s.to_ascii_uppercase();
    names
        .iter()
        .position(|n| *n == up)
        .map(|i| {
            if field == CronField::Month {
                i as u32 + 1
            } else {
                i as u32
            }
        })
        .ok_or_else(|| format!("unknown name {s:?} (expected {})", names.join(", ")))
}

/// Whether an automation should run now (pull-based: the scheduler asks at each tick).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Run now for this scheduled time: the latest one missed. Earlier missed times are
    /// skipped (one catch-up, never a burst).
    Now(DateTime<Utc>),
    /// Nothing due; the next scheduled time.
    Later(DateTime<Utc>),
    /// The schedule never fires again.
    Never,
}

/// Decides whether a scheduled run is due.
///
/// `last_scheduled` is the scheduled time the latest SCHEDULED run stood for; `created_at` is
/// when the schedule took effect (only times strictly after both count). The latest scheduled
/// time at or before `now` that is after them is due; otherwise the next one is returned.
pub fn due_execution(
    schedule: &Schedule,
    last_scheduled: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Due {
    let anchor = last_scheduled.map_or(created_at, |l| l.max(created_at));
    if let Some(latest) = schedule.latest_at_or_before(now) {
        if latest > anchor {
            return Due::Now(latest);
        }
    }
    match schedule.next_after(now.max(anchor)) {
        Some(t) => Due::Later(t),
        None => Due::Never,
    }
}

/// The automation the scheduler should start now, with the scheduled time it stands for:
/// among enabled, unpaused automations with a valid schedule, the one whose due time is the
/// oldest (ties by id). Automations whose schedule does not parse are skipped (they are checked
/// when saved).
pub fn pick_due(automations: &[Automation], now: DateTime<Utc>) -> Option<(String, DateTime<Utc>)> {
    automations
        .iter()
        .filter(|a| a.enabled && !a.paused)
        .filter_map(|a| {
            let s = Schedule::parse(a.schedule.as_deref()?).ok()?;
            match due_execution(&s, a.last_scheduled_time, a.created_at, now) {
                Due::Now(t) => Some((a.id.clone(), t)),
                _ => None,
            }
        })
        .min_by(|x, y| x.1.cmp(&y.1).then_with(|| x.0.cmp(&y.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Weekday;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    fn s(e: &str) -> Schedule {
        Schedule::parse(e).unwrap()
    }

    fn next(e: &str, t: DateTime<Utc>) -> DateTime<Utc> {
        s(e).next_after(t).unwrap()
    }

    fn err(e: &str) -> String {
        Schedule::parse(e).unwrap_err().to_string()
    }

    #[test]
    fn every_minute_is_strictly_after() {
        let t = at(2025, 3, 10, 10, 0);
        assert_eq!(next("* * * * *", t), at(2025, 3, 10, 10, 1));
        let t = Utc.with_ymd_and_hms(2025, 3, 10, 10, 0, 59).unwrap();
        assert_eq!(next("* * * * *", t), at(2025, 3, 10, 10, 1));
    }

    #[test]
    fn steps_and_ranges() {
        let t = at(2025, 3, 10, 10, 7);
        assert_eq!(next("*/5 * * * *", t), at(2025, 3, 10, 10, 10));
        assert_eq!(next("1-10/2 * * * *", t), at(2025, 3, 10, 10, 9));
        assert_eq!(
            next("1-10/2 * * * *", at(2025, 3, 10, 10, 9)),
            at(2025, 3, 10, 11, 1)
        );
        assert_eq!(next("50/5 * * * *", t), at(2025, 3, 10, 10, 50));
        assert_eq!(next("0 9-17/4 * * *", t), at(2025, 3, 10, 13, 0));
        assert_eq!(next("15,45 * * * *", t), at(2025, 3, 10, 10, 15));
    }

    #[test]
    fn hour_and_day_rollover() {
        assert_eq!(
            next("30 23 * * *", at(2025, 12, 31, 23, 30)),
            at(2026, 1, 1, 23, 30)
        );
        assert_eq!(
            next("0 0 * * *", at(2025, 12, 31, 23, 59)),
            at(2026, 1, 1, 0, 0)
        );
    }

    #[test]
    fn month_ends_skip_short_months() {
        assert_eq!(
            next("0 0 31 * *", at(2025, 1, 31, 0, 0)),
            at(2025, 3, 31, 0, 0)
        );
        assert_eq!(
            next("0 0 30 * *", at(2025, 1, 30, 12, 0)),
            at(2025, 3, 30, 0, 0)
        );
    }

    #[test]
    fn leap_day_waits_for_a_leap_year() {
        assert_eq!(
            next("0 12 29 2 *", at(2025, 1, 1, 0, 0)),
            at(2028, 2, 29, 12, 0)
        );
        // 2100 is not a leap year.
        assert_eq!(
            next("0 0 29 FEB *", at(2096, 3, 1, 0, 0)),
            at(2104, 2, 29, 0, 0)
        );
    }

    #[test]
    fn impossible_dates_never_fire() {
        assert_eq!(s("0 0 30 2 *").next_after(at(2025, 1, 1, 0, 0)), None);
        assert_eq!(
            s("0 0 31 4,6,9,11 *").latest_at_or_before(at(2025, 1, 1, 0, 0)),
            None
        );
    }

    #[test]
    fn weekly_macro_is_sunday_midnight() {
        // 2025-03-10 is a Monday.
        let t = at(2025, 3, 10, 12, 0);
        let n = next("@weekly", t);
        assert_eq!(n, at(2025, 3, 16, 0, 0));
        assert_eq!(n.weekday(), Weekday::Sun);
        assert_eq!(next("@WEEKLY", n), at(2025, 3, 23, 0, 0));
    }

    #[test]
    fn all_macros() {
        let t = at(2025, 3, 10, 12, 34);
        assert_eq!(next("@yearly", t), at(2026, 1, 1, 0, 0));
        assert_eq!(next("@annually", t), at(2026, 1, 1, 0, 0));
        assert_eq!(next("@monthly", t), at(2025, 4, 1, 0, 0));
        assert_eq!(next("@daily", t), at(2025, 3, 11, 0, 0));
        assert_eq!(next("@midnight", t), at(2025, 3, 11, 0, 0));
        assert_eq!(next("@hourly", t), at(2025, 3, 10, 13, 0));
        assert_eq!(s("@hourly").to_string(), "@hourly");
    }

    #[test]
    fn sunday_is_zero_and_seven() {
        let t = at(2025, 3, 10, 12, 0);
        assert_eq!(next("0 0 * * 0", t), next("0 0 * * 7", t));
        assert_eq!(next("0 0 * * SUN", t), at(2025, 3, 16, 0, 0));
        assert_eq!(next("0 0 * * 5-7", t), at(2025, 3, 14, 0, 0));
        assert_eq!(
            next("0 0 * * 6-7", at(2025, 3, 15, 12, 0)),
            at(2025, 3, 16, 0, 0)
        );
    }

    #[test]
    fn names_are_case_insensitive_and_work_in_ranges() {
        let t = at(2025, 3, 15, 12, 0); // a Saturday
        assert_eq!(next("0 9 * * mon-FRI", t), at(2025, 3, 17, 9, 0));
        assert_eq!(next("0 0 1 jun,Dec *", t), at(2025, 6, 1, 0, 0));
        assert_eq!(next("0 0 1 OCT-dec/2 *", t), at(2025, 10, 1, 0, 0));
    }

    #[test]
    fn both_day_fields_restricted_means_either() {
        // 1st of the month OR any Friday. From Monday 2025-03-10: Friday the 14th.
        assert_eq!(
            next("0 0 1 * 5", at(2025, 3, 10, 0, 0)),
            at(2025, 3, 14, 0, 0)
        );
        // From Saturday 2025-03-29: the 1st of April (Tuesday) comes before Friday the 4th.
        assert_eq!(
            next("0 0 1 * 5", at(2025, 3, 29, 0, 0)),
            at(2025, 4, 1, 0, 0)
        );
    }

    #[test]
    fn a_star_day_field_means_both_must_match() {
        // dow restricted, dom `*`: only Fridays.
        assert_eq!(
            next("0 0 * * 5", at(2025, 3, 10, 0, 0)),
            at(2025, 3, 14, 0, 0)
        );
        // dom `*/2` starts with `*`: odd days AND Friday (Vixie cron).
        assert_eq!(
            next("0 0 */2 * 5", at(2025, 3, 10, 0, 0)),
            at(2025, 3, 21, 0, 0)
        );
    }

    #[test]
    fn utc_has_no_dst_gap() {
        // 2025-03-30 01:00-02:00 is skipped in much of Europe; in UTC it exists.
        assert_eq!(
            next("30 1 * * *", at(2025, 3, 30, 0, 0)),
            at(2025, 3, 30, 1, 30)
        );
        // And the repeated hour in autumn fires once.
        let first = next("30 1 * * *", at(2025, 10, 26, 0, 0));
        assert_eq!(first, at(2025, 10, 26, 1, 30));
        assert_eq!(next("30 1 * * *", first), at(2025, 10, 27, 1, 30));
    }

    #[test]
    fn latest_at_or_before_is_inclusive() {
        let e = s("0 * * * *");
        assert_eq!(
            e.latest_at_or_before(at(2025, 3, 10, 10, 0)),
            Some(at(2025, 3, 10, 10, 0))
        );
        let t = Utc.with_ymd_and_hms(2025, 3, 10, 10, 59, 59).unwrap();
        assert_eq!(e.latest_at_or_before(t), Some(at(2025, 3, 10, 10, 0)));
        assert_eq!(
            s("0 9 * * 1").latest_at_or_before(at(2025, 3, 10, 8, 0)),
            Some(at(2025, 3, 3, 9, 0))
        );
        assert_eq!(
            s("0 0 29 2 *").latest_at_or_before(at(2027, 1, 1, 0, 0)),
            Some(at(2024, 2, 29, 0, 0))
        );
    }

    #[test]
    fn year_turn_and_exact_boundaries() {
        assert_eq!(
            next("0 0 1 1 *", at(2025, 1, 1, 0, 0)),
            at(2026, 1, 1, 0, 0)
        );
        assert_eq!(
            next("*/15 * * * *", at(2025, 3, 10, 10, 15)),
            at(2025, 3, 10, 10, 30)
        );
        assert_eq!(
            next("59 23 31 12 *", at(2025, 12, 31, 23, 58)),
            at(2025, 12, 31, 23, 59)
        );
    }

    #[test]
    fn latest_honours_the_either_day_rule() {
        // 1st of the month OR Friday: before Monday 2025-03-10 the latest is Friday the 7th.
        let e = s("0 0 1 * 5");
        assert_eq!(
            e.latest_at_or_before(at(2025, 3, 9, 12, 0)),
            Some(at(2025, 3, 7, 0, 0))
        );
        assert_eq!(
            e.latest_at_or_before(at(2025, 3, 3, 12, 0)),
            Some(at(2025, 3, 1, 0, 0))
        );
    }

    #[test]
    fn parse_errors_name_the_field() {
        assert_eq!(
            err("* * * *"),
            "expected 5 fields (minute hour day-of-month month day-of-week), found 4"
        );
        assert_eq!(
            err("* * * * * *"),
            "expected 5 fields (minute hour day-of-month month day-of-week), found 6"
        );
        assert!(err("   ").starts_with("empty schedule"));
        assert_eq!(
            err("60 * * * *"),
            "minute field \"60\": value 60 is out of range 0-59"
        );
        assert_eq!(
            err("* 24 * * *"),
            "hour field \"24\": value 24 is out of range 0-23"
        );
        assert_eq!(
            err("* * 0 * *"),
            "day-of-month field \"0\": value 0 is out of range 1-31"
        );
        assert_eq!(
            err("* * * 13 *"),
            "month field \"13\": value 13 is out of range 1-12"
        );
        assert_eq!(
            err("* * * * 8"),
            "day-of-week field \"8\": value 8 is out of range 0-7"
        );
        assert_eq!(
            err("*/0 * * * *"),
            "minute field \"*/0\": step must be at least 1"
        );
        assert_eq!(
            err("* * * * FRI-MON"),
            "day-of-week field \"FRI-MON\": range FRI-MON goes backwards"
        );
        assert_eq!(err("* * * FOO *"), "month field \"FOO\": unknown name \"FOO\" (expected JAN, FEB, MAR, APR, MAY, JUN, JUL, AUG, SEP, OCT, NOV, DEC)");
        assert_eq!(
            err("MON * * * *"),
            "minute field \"MON\": \"MON\" is not a number"
        );
        assert_eq!(
            err("1,,2 * * * *"),
            "minute field \"1,,2\": empty item in list"
        );
        assert_eq!(err("1- * * * *"), "minute field \"1-\": missing value");
        assert_eq!(
            err("*/x * * * *"),
            "minute field \"*/x\": step \"x\" is not a number"
        );
        assert!(err("@reboot").starts_with("unknown macro \"@reboot\""));
        assert!(err("-1 * * * *").starts_with("minute field"));
    }

    #[test]
    fn serde_is_the_expression() {
        let v = serde_json::to_value(s("0 9 * * MON-FRI")).unwrap();
        assert_eq!(v, serde_json::json!("0 9 * * MON-FRI"));
        assert_eq!(
            serde_json::from_value::<Schedule>(v).unwrap(),
            s("0 9 * * MON-FRI")
        );
        assert!(serde_json::from_value::<Schedule>(serde_json::json!("bad")).is_err());
    }

    #[test]
    fn due_one_catch_up_after_three_missed_runs() {
        let e = s("0 * * * *");
        let created = at(2025, 3, 10, 6, 30);
        let last = Some(at(2025, 3, 10, 8, 0));
        // 09:00, 10:00 and 11:00 were missed: only 11:00 runs.
        let now = at(2025, 3, 10, 11, 20);
        assert_eq!(
            due_execution(&e, last, created, now),
            Due::Now(at(2025, 3, 10, 11, 0))
        );
        // Once 11:00 is recorded, nothing until 12:00.
        let last = Some(at(2025, 3, 10, 11, 0));
        assert_eq!(
            due_execution(&e, last, created, now),
            Due::Later(at(2025, 3, 10, 12, 0))
        );
    }

    #[test]
    fn due_first_run_counts_only_times_after_creation() {
        let e = s("0 * * * *");
        let created = at(2025, 3, 10, 9, 30);
        assert_eq!(
            due_execution(&e, None, created, at(2025, 3, 10, 9, 45)),
            Due::Later(at(2025, 3, 10, 10, 0))
        );
        assert_eq!(
            due_execution(&e, None, created, at(2025, 3, 10, 10, 0)),
            Due::Now(at(2025, 3, 10, 10, 0))
        );
        // Created exactly on a slot: that slot is not owed.
        let created = at(2025, 3, 10, 10, 0);
        assert_eq!(
            due_execution(&e, None, created, at(2025, 3, 10, 10, 0)),
            Due::Later(at(2025, 3, 10, 11, 0))
        );
    }

    #[test]
    fn due_never_and_future_last() {
        let created = at(2025, 1, 1, 0, 0);
        assert_eq!(
            due_execution(&s("0 0 30 2 *"), None, created, at(2025, 3, 1, 0, 0)),
            Due::Never
        );
        // A recorded time ahead of now (clock moved back): wait past it.
        let e = s("0 * * * *");
        let last = Some(at(2025, 3, 10, 12, 0));
        assert_eq!(
            due_execution(&e, last, created, at(2025, 3, 10, 10, 30)),
            Due::Later(at(2025, 3, 10, 13, 0))
        );
    }

    #[test]
    fn due_daily_after_days_offline() {
        let e = s("5 0 * * *");
        let last = Some(at(2025, 3, 1, 0, 5));
        let now = at(2025, 3, 10, 10, 0);
        assert_eq!(
            due_execution(&e, last, at(2025, 1, 1, 0, 0), now),
            Due::Now(at(2025, 3, 10, 0, 5))
        );
    }

    fn auto(id: &str, schedule: Option<&str>, last: Option<DateTime<Utc>>) -> Automation {
        Automation {
            id: id.into(),
            name: id.into(),
            prompt: "p".into(),
            seed_session_id: None,
            schedule: schedule.map(str::to_string),
            enabled: true,
            paused: false,
            created_at: at(2025, 3, 1, 0, 0),
            last_trigger: None,
            last_execution_at: None,
            last_scheduled_time: last,
            require_validation: false,
        }
    }

    #[test]
    fn pick_due_takes_the_oldest_due_time() {
        let now = at(2025, 3, 10, 10, 30);
        let mut off = auto("off", Some("* * * * *"), None);
        off.enabled = false;
        let mut paused = auto("paused", Some("* * * * *"), None);
        paused.paused = true;
        let list = vec![
            off,
            paused,
            auto("manual", None, None),
            auto("broken", Some("nope"), None),
            auto("hourly", Some("0 * * * *"), Some(at(2025, 3, 10, 9, 0))),
            auto("daily", Some("0 6 * * *"), Some(at(2025, 3, 9, 6, 0))),
            auto("done", Some("0 6 * * *"), Some(at(2025, 3, 10, 6, 0))),
        ];
        assert_eq!(
            pick_due(&list, now),
            Some(("daily".into(), at(2025, 3, 10, 6, 0)))
        );
        assert_eq!(
            pick_due(&list[..5], now),
            Some(("hourly".into(), at(2025, 3, 10, 10, 0)))
        );
        assert_eq!(pick_due(&list[..4], now), None);
    }

    #[test]
    fn pick_due_breaks_ties_by_id() {
        let now = at(2025, 3, 10, 10, 30);
        let last = Some(at(2025, 3, 10, 9, 0));
        let list = vec![
            auto("b", Some("0 * * * *"), last),
            auto("a", Some("0 * * * *"), last),
        ];
        assert_eq!(pick_due(&list, now).unwrap().0, "a");
    }
}
