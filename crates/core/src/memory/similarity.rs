//! The original similarity between a text and a thread (gossip and coherence still use it).

use ai_smartness_vectors::quant::QVec;

/// An active thread above this continues; below, a new thread starts.
pub const CONTINUE_THRESHOLD: f64 = 0.35;
/// A suspended thread above this is reactivated by a capture.
pub const REACTIVATE_THRESHOLD: f64 = 0.50;
/// Two threads above this get a gossip bridge.
pub const GOSSIP_THRESHOLD: f64 = 0.50;
/// Added when at least one topic is shared.
pub const TOPIC_BOOST: f64 = 0.15;

/// `0.7 × cosine + 0.3 × topic_overlap + 0.15 if any topic is shared`.
pub fn similarity(
    emb_a: Option<&QVec>,
    emb_b: Option<&QVec>,
    topics_a: &[String],
    topics_b: &[String],
) -> f64 {
    let cos = match (emb_a, emb_b) {
        (Some(a), Some(b)) => f64::from(a.cosine_q(b)),
        _ => 0.0,
    };
    from_cosine(cos, topics_a, topics_b)
}

/// The same formula when the cosine is already known.
pub fn from_cosine(cos: f64, topics_a: &[String], topics_b: &[String]) -> f64 {
    let (overlap, shared) = topic_overlap(topics_a, topics_b);
    from_parts(cos, overlap, shared)
}

/// [`from_cosine`] from its parts: the cosine, and the topic overlap and count
/// [`topic_overlap`] gives.
pub fn from_parts(cos: f64, overlap: f64, shared: usize) -> f64 {
    0.7 * cos.max(0.0) + 0.3 * overlap + if shared > 0 { TOPIC_BOOST } else { 0.0 }
}

/// The share of topics in common, over the smaller set (a capture has a handful of topics, a
/// thread accumulates many: a ratio over the union would drown every match), and their count.
pub fn topic_overlap(a: &[String], b: &[String]) -> (f64, usize) {
    if a.is_empty() || b.is_empty() {
        return (0.0, 0);
    }
    let shared = a.iter().filter(|t| b.contains(t)).count();
    (shared as f64 / a.len().min(b.len()) as f64, shared)
}

/// Topics both lists hold, in the order of `a`.
pub fn shared_topics(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|t| b.contains(t)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_seed_formula() {
        let e = QVec::from_unit(&[1.0f32, 0.0]);
        let sim = similarity(Some(&e), Some(&e), &s(&["a", "b"]), &s(&["b", "c", "d"]));
        assert!((sim - (0.7 + 0.3 * 0.5 + 0.15)).abs() < 1e-6);
        assert_eq!(similarity(None, Some(&e), &[], &[]), 0.0);
    }
}
