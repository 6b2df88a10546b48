//! Cron schedules for automations, and the pull-based "is a run due?" rule.
//!
//! Expressions have five fields, `minute hour day-of-month month day-of-week`, with the usual
//! cron syntax (`*`, numbers, ranges `a-b`, steps `*/n`, lists; JAN..DEC and SUN..SAT in any
//! case; weekday 0 and 7 are both Sunday; `L` for the last day of the month, `FRI#2` for the
//! second Friday), or a macro: `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
//! `@midnight`, `@hourly`. As in Vixie cron, when both day fields are restricted a day matches
//! if either does. Parsing and the search are the `croner` crate's.
//!
//! Each automation is scheduled in a time zone: the IANA name it was given (`Europe/Paris`),
//! else the machine's. `0 9 * * *` fires at 09:00 on the wall clock there, summer and winter.
//! On the night the clock springs forward, a time that does not exist fires at the first minute
//! after the gap; on the night it falls back, a fixed time fires once.

use ai_smartness_records::assistant::types::Automation;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds};
use croner::Cron;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

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
    /// Five fields, but not a valid pattern (what is wrong, as the parser says it).
    #[error("not a valid cron pattern: {0}")]
    Invalid(String),
    /// A time zone that is not an IANA name.
    #[error("unknown time zone {0:?}: expected an IANA name such as Europe/Paris, America/New_York or UTC")]
    UnknownZone(String),
}

/// Macros (lower case) and the expression each stands for.
const MACROS: [(&str, &str); 7] = [
    ("yearly", "0 0 1 1 *"),
    ("annually", "0 0 1 1 *"),
    ("monthly", "0 0 1 * *"),
    ("weekly", "0 0 * * 0"),
    ("daily", "0 0 * * *"),
    ("midnight", "0 0 * * *"),
    ("hourly", "0 * * * *"),
];

/// A parsed cron schedule. Serialised as its expression.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Schedule {
    /// The expression as given (trimmed), shown back to people.
    source: String,
    cron: Cron,
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for Schedule {}

impl Schedule {
    /// Parses an expression or macro.
    pub fn parse(expr: &str) -> Result<Schedule, ScheduleError> {
        let source = expr.trim();
        if source.is_empty() {
            return Err(ScheduleError::Empty);
        }
        let pattern = match source.strip_prefix('@') {
            Some(name) => {
                let name = name.to_ascii_lowercase();
                MACROS
                    .iter()
                    .find(|(m, _)| *m == name)
                    .map(|(_, expr)| *expr)
                    .ok_or_else(|| ScheduleError::UnknownMacro(source.to_string()))?
            }
            None => source,
        };
        let fields = pattern.split_whitespace().count();
        if fields != 5 {
            return Err(ScheduleError::FieldCount(fields));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            // `a/n`: from a to the field's end, every n (as older crons read it).
            .sloppy_ranges(true)
            .build()
            .parse(pattern)
            .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        Ok(Schedule {
            source: source.to_string(),
            cron,
        })
    }

    /// The expression as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The first firing time strictly after `t` on the wall clock of `zone`, or none if the
    /// schedule never fires (e.g. `0 0 30 2 *`).
    pub fn next_after(&self, t: DateTime<Utc>, zone: Tz) -> Option<DateTime<Utc>> {
        self.cron
            .find_next_occurrence(&t.with_timezone(&zone), false)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }

    /// The last firing time at or before `t` on the wall clock of `zone`, if any.
    pub fn latest_at_or_before(&self, t: DateTime<Utc>, zone: Tz) -> Option<DateTime<Utc>> {
        self.cron
            .find_previous_occurrence(&t.with_timezone(&zone), true)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }
}

/// The time zone named `name` (an IANA name), or the machine's when none is given: the zone
/// `TZ` names, else the system's, else UTC.
pub fn zone(name: Option<&str>) -> Result<Tz, ScheduleError> {
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => n
            .parse::<Tz>()
            .map_err(|_| ScheduleError::UnknownZone(n.to_string())),
        None => Ok(machine_zone()),
    }
}

/// The machine's time zone, UTC when it cannot be told.
pub fn machine_zone() -> Tz {
    let tz_var = std::env::var("TZ")
        .ok()
        .map(|v| v.trim_start_matches(':').to_string());
    tz_var
        .and_then(|v| v.parse::<Tz>().ok())
        .or_else(|| iana_time_zone::get_timezone().ok()?.parse::<Tz>().ok())
        .unwrap_or(Tz::UTC)
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
    zone: Tz,
    last_scheduled: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Due {
    let anchor = last_scheduled.map_or(created_at, |l| l.max(created_at));
    if let Some(latest) = schedule.latest_at_or_before(now, zone) {
        if latest > anchor {
            return Due::Now(latest);
        }
    }
    match schedule.next_after(now.max(anchor), zone) {
        Some(t) => Due::Later(t),
        None => Due::Never,
    }
}

/// The automation the scheduler should start now, with the scheduled time it stands for:
/// among enabled, unpaused automations with a valid schedule, the one whose due time is the
/// oldest (ties by id). Automations whose schedule or time zone does not parse are skipped
/// (both are checked when saved).
pub fn pick_due(automations: &[Automation], now: DateTime<Utc>) -> Option<(String, DateTime<Utc>)> {
    automations
        .iter()
        .filter(|a| a.enabled && !a.paused)
        .filter_map(|a| {
            let s = Schedule::parse(a.schedule.as_deref()?).ok()?;
            let zone = zone(a.timezone.as_deref()).ok()?;
            match due_execution(&s, zone, a.last_scheduled_time, a.created_at, now) {
                Due::Now(t) => Some((a.id.clone(), t)),
                _ => None,
            }
        })
        .min_by(|x, y| x.1.cmp(&y.1).then_with(|| x.0.cmp(&y.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Datelike, TimeZone, Weekday};

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    fn s(e: &str) -> Schedule {
        Schedule::parse(e).unwrap()
    }

    fn next(e: &str, t: DateTime<Utc>) -> DateTime<Utc> {
        s(e).next_after(t, Tz::UTC).unwrap()
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
        assert_eq!(
            s("0 0 30 2 *").next_after(at(2025, 1, 1, 0, 0), Tz::UTC),
            None
        );
        assert_eq!(
            s("0 0 31 4,6,9,11 *").latest_at_or_before(at(2025, 1, 1, 0, 0), Tz::UTC),
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
            e.latest_at_or_before(at(2025, 3, 10, 10, 0), Tz::UTC),
            Some(at(2025, 3, 10, 10, 0))
        );
        let t = Utc.with_ymd_and_hms(2025, 3, 10, 10, 59, 59).unwrap();
        assert_eq!(
            e.latest_at_or_before(t, Tz::UTC),
            Some(at(2025, 3, 10, 10, 0))
        );
        assert_eq!(
            s("0 9 * * 1").latest_at_or_before(at(2025, 3, 10, 8, 0), Tz::UTC),
            Some(at(2025, 3, 3, 9, 0))
        );
        assert_eq!(
            s("0 0 29 2 *").latest_at_or_before(at(2027, 1, 1, 0, 0), Tz::UTC),
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
            e.latest_at_or_before(at(2025, 3, 9, 12, 0), Tz::UTC),
            Some(at(2025, 3, 7, 0, 0))
        );
        assert_eq!(
            e.latest_at_or_before(at(2025, 3, 3, 12, 0), Tz::UTC),
            Some(at(2025, 3, 1, 0, 0))
        );
    }

    #[test]
    fn parse_errors_say_what_is_wrong() {
        assert_eq!(
            err("* * * *"),
            "expected 5 fields (minute hour day-of-month month day-of-week), found 4"
        );
        assert_eq!(
            err("0 * * * * *"),
            "expected 5 fields (minute hour day-of-month month day-of-week), found 6"
        );
        assert!(err("   ").starts_with("empty schedule"));
        assert!(err("@reboot").starts_with("unknown macro \"@reboot\""));
        for bad in [
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 8",
            "*/0 * * * *",
            "* * * FOO *",
            "*/x * * * *",
        ] {
            assert!(
                err(bad).starts_with("not a valid cron pattern: "),
                "{bad}: {}",
                err(bad)
            );
        }
    }

    /// The wall clock of the automation's zone, summer and winter; the night the clock springs
    /// forward, a time in the gap fires just after it; the night it falls back, once.
    #[test]
    fn schedules_follow_the_wall_clock_of_their_zone() {
        let paris: Tz = zone(Some("Europe/Paris")).unwrap();
        let nine = s("0 9 * * *");
        assert_eq!(
            nine.next_after(at(2025, 1, 10, 0, 0), paris),
            Some(at(2025, 1, 10, 8, 0))
        );
        assert_eq!(
            nine.next_after(at(2025, 7, 10, 0, 0), paris),
            Some(at(2025, 7, 10, 7, 0))
        );
        assert_eq!(
            nine.latest_at_or_before(at(2025, 7, 10, 12, 0), paris),
            Some(at(2025, 7, 10, 7, 0))
        );
        // 2025-03-30: 02:00 becomes 03:00 in Paris (01:00 UTC).
        let half_two = s("30 2 * * *");
        assert_eq!(
            half_two.next_after(at(2025, 3, 29, 23, 0), paris),
            Some(at(2025, 3, 30, 1, 0))
        );
        // 2025-10-26: 03:00 becomes 02:00 again; 02:30 fires once, the first time.
        let first = half_two.next_after(at(2025, 10, 25, 23, 0), paris).unwrap();
        assert_eq!(first, at(2025, 10, 26, 0, 30));
        assert_eq!(
            half_two.next_after(first, paris),
            Some(at(2025, 10, 27, 1, 30))
        );
        let due = due_execution(
            &nine,
            paris,
            None,
            at(2025, 1, 10, 0, 0),
            at(2025, 1, 10, 8, 5),
        );
        assert_eq!(due, Due::Now(at(2025, 1, 10, 8, 0)));
    }

    #[test]
    fn zones_are_iana_names_and_default_to_the_machines() {
        assert_eq!(zone(Some("UTC")).unwrap(), Tz::UTC);
        assert_eq!(
            zone(Some(" America/New_York ")).unwrap(),
            Tz::America__New_York
        );
        let e = zone(Some("Mars/Olympus")).unwrap_err().to_string();
        assert!(e.contains("unknown time zone \"Mars/Olympus\""), "{e}");
        assert_eq!(zone(None).unwrap(), machine_zone());
        assert_eq!(zone(Some("")).unwrap(), machine_zone());
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
            due_execution(&e, Tz::UTC, last, created, now),
            Due::Now(at(2025, 3, 10, 11, 0))
        );
        // Once 11:00 is recorded, nothing until 12:00.
        let last = Some(at(2025, 3, 10, 11, 0));
        assert_eq!(
            due_execution(&e, Tz::UTC, last, created, now),
            Due::Later(at(2025, 3, 10, 12, 0))
        );
    }

    #[test]
    fn due_first_run_counts_only_times_after_creation() {
        let e = s("0 * * * *");
        let created = at(2025, 3, 10, 9, 30);
        assert_eq!(
            due_execution(&e, Tz::UTC, None, created, at(2025, 3, 10, 9, 45)),
            Due::Later(at(2025, 3, 10, 10, 0))
        );
        assert_eq!(
            due_execution(&e, Tz::UTC, None, created, at(2025, 3, 10, 10, 0)),
            Due::Now(at(2025, 3, 10, 10, 0))
        );
        // Created exactly on a slot: that slot is not owed.
        let created = at(2025, 3, 10, 10, 0);
        assert_eq!(
            due_execution(&e, Tz::UTC, None, created, at(2025, 3, 10, 10, 0)),
            Due::Later(at(2025, 3, 10, 11, 0))
        );
    }

    #[test]
    fn due_never_and_future_last() {
        let created = at(2025, 1, 1, 0, 0);
        assert_eq!(
            due_execution(
                &s("0 0 30 2 *"),
                Tz::UTC,
                None,
                created,
                at(2025, 3, 1, 0, 0)
            ),
            Due::Never
        );
        // A recorded time ahead of now (clock moved back): wait past it.
        let e = s("0 * * * *");
        let last = Some(at(2025, 3, 10, 12, 0));
        assert_eq!(
            due_execution(&e, Tz::UTC, last, created, at(2025, 3, 10, 10, 30)),
            Due::Later(at(2025, 3, 10, 13, 0))
        );
    }

    #[test]
    fn due_daily_after_days_offline() {
        let e = s("5 0 * * *");
        let last = Some(at(2025, 3, 1, 0, 5));
        let now = at(2025, 3, 10, 10, 0);
        assert_eq!(
            due_execution(&e, Tz::UTC, last, at(2025, 1, 1, 0, 0), now),
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
            timezone: None,
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
