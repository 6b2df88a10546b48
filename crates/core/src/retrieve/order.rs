//! Questions about *when* in the work: "what did I first ask?", "what was the original
//! error?", "which command finally worked?". Work repeats itself (the server launched five
//! times, the build run again and again), and the messages about each repeat score alike; the
//! question's own words say which one it means. Among the best-scoring messages, the earliest
//! (or the latest) gains a share of score.

use super::rank::Scored;
use super::timeline::Timeline;

/// Which end of the work a question points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cue {
    Earliest,
    Latest,
}

/// Words that point at the start of the work.
const EARLIEST: &[&str] = &[
    "first",
    "initial",
    "initially",
    "original",
    "originally",
    "earliest",
    "beginning",
];
/// Words that point at its end.
const LATEST: &[&str] = &["last", "latest", "final", "finally", "recent", "recently"];

/// The best-scoring messages that compete on time: more than the largest context shows, so
/// the first of a repeated event is in the running even when its repeats outscore it.
/// Set on the tuning sessions (30 and 100 tried).
pub(super) const ORDER_POOL: usize = 100;
/// The most a message gains for being the earliest (the latest) of the pool; the latest (the
/// earliest) gains nothing, the others in proportion to their place in time. Half the share
/// of an episode: time picks among the relevant, it does not make a message relevant. Set on
/// the tuning sessions (0.15 and 0.3 tried).
pub(super) const ORDER_SHARE: f32 = 0.15;

/// The end of the work `question` points at, if it points at one only. A word that orders
/// the prompt itself ("First, fix the build", "first of all", "Finally, run the tests") points
/// at nothing in the memory.
pub(super) fn cue(question: &str) -> Option<Cue> {
    let lower = question.to_lowercase();
    let mut words: Vec<&str> = Vec::new();
    let mut rest = lower.as_str();
    while let Some(start) = rest.find(char::is_alphanumeric) {
        rest = &rest[start..];
        let end = rest
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        let orders_the_prompt = after.starts_with(',') || after.starts_with(" of all");
        if !orders_the_prompt {
            words.push(word);
        }
        rest = after;
    }
    let earliest = words.iter().any(|w| EARLIEST.contains(w)) || lower.contains("at the start");
    let latest = words.iter().any(|w| LATEST.contains(w)) || lower.contains("in the end");
    match (earliest, latest) {
        (true, false) => Some(Cue::Earliest),
        (false, true) => Some(Cue::Latest),
        _ => None,
    }
}

/// Lifts the earliest (or latest) of the first [`ORDER_POOL`] of `ranked` (best first) by
/// their place in time, each in proportion to its score against the best's (time picks among
/// the relevant: a stray early file read is not lifted as high as the early run the question
/// is about), and sorts them again; the rest keep their order below.
pub(super) fn prefer(ranked: &mut [Scored], cue: Cue, timeline: &Timeline) {
    let pool = ranked.len().min(ORDER_POOL);
    if pool < 2 {
        return;
    }
    // Each pooled message's place in time; one the timeline does not know competes as the
    // latest (nothing says it is early).
    let mut by_time: Vec<(usize, usize)> = (0..pool)
        .map(|i| (timeline.slot(ranked[i].doc).unwrap_or(usize::MAX), i))
        .collect();
    by_time.sort_unstable();
    if cue == Cue::Latest {
        by_time.reverse();
    }
    // Units of one message share its place: they gain alike.
    let mut rank = 0usize;
    let mut last_slot = None;
    let steps = (pool - 1) as f32;
    let best = ranked[0].score().max(f32::EPSILON);
    for (k, &(slot, i)) in by_time.iter().enumerate() {
        if last_slot != Some(slot) {
            rank = k;
            last_slot = Some(slot);
        }
        let relevance = (ranked[i].score() / best).clamp(0.0, 1.0);
        let gain = ORDER_SHARE * (1.0 - rank as f32 / steps) * relevance;
        ranked[i].why.order = gain;
        ranked[i].why.score += gain;
    }
    ranked[..pool].sort_by(|a, b| b.score().total_cmp(&a.score()).then(a.doc.cmp(&b.doc)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_points_at_one_end_of_the_work_or_at_none() {
        assert_eq!(cue("What did I first ask for?"), Some(Cue::Earliest));
        assert_eq!(cue("What was the original error?"), Some(Cue::Earliest));
        assert_eq!(cue("Which command finally worked?"), Some(Cue::Latest));
        assert_eq!(cue("what did the latest run print"), Some(Cue::Latest));
        assert_eq!(cue("Which port does the dev server use?"), None);
        // Both ends: nothing to prefer.
        assert_eq!(cue("the first and the last build"), None);
        // A word holding a cue is not one.
        assert_eq!(cue("where is the lastname column?"), None);
        // Words that order the prompt itself.
        assert_eq!(cue("First, fix the build. Then deploy."), None);
        assert_eq!(cue("first of all, read the config"), None);
        assert_eq!(cue("Finally, run the tests"), None);
    }
}
