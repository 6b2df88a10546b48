//! Identifiers of the form `PREFIX_YYYYMMdd_HHMMSS_hex`: sortable by creation time, readable in a
//! listing, and unique even when many are made in the same second.

use chrono::{DateTime, Utc};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Mixed into every id so two ids made in the same nanosecond still differ.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new id `prefix_YYYYMMdd_HHMMSS_xxxxxxxx` for an entity created at `at`.
pub fn new_id(prefix: &str, at: DateTime<Utc>) -> String {
    // RandomState is seeded randomly per process, so the suffix differs between runs too.
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_i64(at.timestamp_nanos_opt().unwrap_or_default());
    hasher.write_u32(std::process::id());
    let suffix = hasher.finish() as u32;
    format!("{prefix}_{}_{suffix:08x}", at.format("%Y%m%d_%H%M%S"))
}

/// Whether `id` looks like an id this module made with `prefix` (used to refuse path tricks).
pub fn is_valid(prefix: &str, id: &str) -> bool {
    let Some(rest) = id.strip_prefix(prefix).and_then(|r| r.strip_prefix('_')) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('_').collect();
    parts.len() == 3
        && parts[0].len() == 8
        && parts[1].len() == 6
        && parts[0]
            .bytes()
            .chain(parts[1].bytes())
            .all(|b| b.is_ascii_digit())
        && !parts[2].is_empty()
        && parts[2].len() <= 16
        && parts[2].bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ids_have_the_seed_shape_and_are_unique() {
        let at = Utc.with_ymd_and_hms(2026, 1, 30, 12, 34, 56).unwrap();
        let a = new_id("thread", at);
        let b = new_id("thread", at);
        assert!(a.starts_with("thread_20260130_123456_"), "{a}");
        assert_ne!(a, b);
        assert!(is_valid("thread", &a));
        assert!(!is_valid("bridge", &a));
        assert!(!is_valid("thread", "thread_../../etc_passwd"));
    }
}
