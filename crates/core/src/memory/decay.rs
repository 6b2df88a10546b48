//! Decay as a pure function of time. The seed multiplied the stored weight at
//! every prune, which compounds: run every five minutes it kills every thread within a day. Here
//! the stored weight is exact at its reference time and the current weight is derived, so pruning
//! once or three hundred times over the same period gives the same weights.

use super::types::{BridgeStatus, ThinkBridge, Thread};
use chrono::{DateTime, Utc};

/// A thread's weight halves every 7 days without activity.
pub const THREAD_HALF_LIFE_DAYS: f64 = 7.0;
/// Under this weight a thread is suspended (never deleted by decay).
pub const THREAD_SUSPEND_THRESHOLD: f64 = 0.1;
/// A bridge's weight halves every 3 days without use.
pub const BRIDGE_HALF_LIFE_DAYS: f64 = 3.0;
/// Under this weight a bridge dies (is deleted).
pub const BRIDGE_DEATH_THRESHOLD: f64 = 0.05;
/// Under this weight a bridge is WEAK.
pub const BRIDGE_WEAK_THRESHOLD: f64 = 0.3;
/// Added on every activation or use, capped at [`MAX_WEIGHT`].
pub const USE_BOOST: f64 = 0.1;
pub const MAX_WEIGHT: f64 = 1.0;

const SECONDS_PER_DAY: f64 = 86_400.0;

/// `weight * 0.5^(elapsed_days / half_life)`, with fractional days; time running backwards (a
/// clock change, an import of older data) never raises a weight.
pub fn decayed(weight: f64, since: DateTime<Utc>, now: DateTime<Utc>, half_life_days: f64) -> f64 {
    decayed_after(weight, (now - since).num_milliseconds(), half_life_days)
}

/// [`decayed`] after `elapsed_ms` milliseconds: for a scan over many weights, which reads each
/// reference time as a number.
pub fn decayed_after(weight: f64, elapsed_ms: i64, half_life_days: f64) -> f64 {
    let elapsed = elapsed_ms.max(0) as f64 / 1000.0 / SECONDS_PER_DAY;
    (weight * (-elapsed / half_life_days).exp2()).clamp(0.0, MAX_WEIGHT)
}

/// A boost applies to the current weight and resets the reference time.
pub fn boosted(current: f64) -> f64 {
    (current + USE_BOOST).min(MAX_WEIGHT)
}

/// The thread's weight now.
pub fn thread_weight(thread: &Thread, now: DateTime<Utc>) -> f64 {
    decayed(thread.weight, thread.weight_at, now, THREAD_HALF_LIFE_DAYS)
}

/// The bridge's weight now.
pub fn bridge_weight(bridge: &ThinkBridge, now: DateTime<Utc>) -> f64 {
    decayed(bridge.weight, bridge.weight_at, now, BRIDGE_HALF_LIFE_DAYS)
}

/// Boost a thread (an activation: new message, reactivation, retrieval).
pub fn boost_thread(thread: &mut Thread, now: DateTime<Utc>) {
    thread.weight = boosted(thread_weight(thread, now));
    thread.weight_at = now.max(thread.weight_at);
}

/// Boost a bridge (it was used: traversed by retrieval or confirmed again by gossip).
pub fn boost_bridge(bridge: &mut ThinkBridge, now: DateTime<Utc>) {
    bridge.weight = boosted(bridge_weight(bridge, now));
    bridge.weight_at = now.max(bridge.weight_at);
    bridge.use_count = bridge.use_count.saturating_add(1);
    bridge.last_used = Some(now);
}

/// The status a bridge should have at `now`, or `None` when it is dead and must be deleted.
/// INVALID is a judgement, not a weight: it stays until the bridge dies.
pub fn bridge_status_at(bridge: &ThinkBridge, now: DateTime<Utc>) -> Option<BridgeStatus> {
    let w = bridge_weight(bridge, now);
    if w < BRIDGE_DEATH_THRESHOLD {
        None
    } else if bridge.status == BridgeStatus::Invalid {
        Some(BridgeStatus::Invalid)
    } else if w < BRIDGE_WEAK_THRESHOLD {
        Some(BridgeStatus::Weak)
    } else {
        Some(BridgeStatus::Active)
    }
}

/// Heaviest thread first at `now`, the most recently active first among equals: the order of
/// `ai threads`, the session brief and the compaction synthesis.
pub fn heaviest_first(a: &Thread, b: &Thread, now: DateTime<Utc>) -> std::cmp::Ordering {
    thread_weight(b, now)
        .total_cmp(&thread_weight(a, now))
        .then_with(|| b.last_active.cmp(&a.last_active))
}

/// A weight as a five-cell bar for people: `█████` full, `░░░░░` empty.
pub fn weight_bar(w: f64) -> String {
    let filled = (w.clamp(0.0, 1.0) * 5.0).round() as usize;
    format!("{}{}", "█".repeat(filled), "░".repeat(5 - filled))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap()
    }

    #[test]
    fn seven_days_halve_a_thread_and_three_days_halve_a_bridge() {
        let w = decayed(1.0, t0(), t0() + Duration::days(7), THREAD_HALF_LIFE_DAYS);
        assert!((w - 0.5).abs() < 1e-9);
        let w = decayed(1.0, t0(), t0() + Duration::days(3), BRIDGE_HALF_LIFE_DAYS);
        assert!((w - 0.5).abs() < 1e-9);
        let w = decayed(0.8, t0(), t0() + Duration::hours(84), THREAD_HALF_LIFE_DAYS);
        assert!(
            (w - 0.8 * 0.5f64.sqrt()).abs() < 1e-9,
            "fractional days count"
        );
    }

    #[test]
    fn time_going_backwards_never_raises_a_weight() {
        assert_eq!(decayed(0.4, t0(), t0() - Duration::days(2), 7.0), 0.4);
    }

    #[test]
    fn boosts_are_capped() {
        assert!((boosted(0.5) - 0.6).abs() < 1e-12);
        assert_eq!(boosted(0.95), 1.0);
    }

    #[test]
    fn weight_bars() {
        assert_eq!(weight_bar(1.0), "█████");
        assert_eq!(weight_bar(0.0), "░░░░░");
        assert_eq!(weight_bar(0.5).chars().count(), 5);
    }
}
