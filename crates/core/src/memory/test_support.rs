//! Fixtures shared by the memory, retrieval and orchestrator unit tests.

use ai_smartness_vectors::normalize;
use chrono::{DateTime, TimeZone, Utc};

/// A fixed start time.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 4, 9, 0, 0).unwrap()
}

/// A unit vector along a few axes: texts about the same thing share axes.
pub fn emb(axes: &[usize]) -> Vec<f32> {
    let mut v = vec![0f32; 16];
    for &a in axes {
        v[a] = 1.0;
    }
    normalize(&mut v);
    v
}
