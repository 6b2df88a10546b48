//! Questions about a stretch of the work rather than one moment of it: "how did the migration
//! progress?", "in what order did I bring up the caching changes?", "give me a summary of the
//! auth work". Their answer is many moments, each said briefly, not the best few said at
//! length: the context quotes every message in the short window, and the same room shows
//! about twice as many.

/// Phrases that ask for a stretch of the work, lowercase, matched as whole words.
const ASKING: &[&str] = &[
    "in order",
    "the order",
    "what order",
    "which order",
    "chronological",
    "chronologically",
    "timeline",
    "progress",
    "progressed",
    "progression",
    "evolve",
    "evolved",
    "evolution",
    "over time",
    "throughout",
    "walk me through",
    "summarize",
    "summarise",
    "a summary",
    "an overview",
    "recap",
];

/// Whether `question` asks for a stretch of the work. "In order to" gives a purpose, not an
/// order; "the summary" names one message ("what did the final summary say?"), where "a
/// summary" asks for one to be made.
pub(super) fn asks_for_a_span(question: &str) -> bool {
    let lower = question.to_lowercase();
    ASKING.iter().any(|phrase| {
        lower.match_indices(phrase).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let rest = &lower[at + phrase.len()..];
            let whole = !before.is_some_and(char::is_alphanumeric)
                && !rest.chars().next().is_some_and(char::is_alphanumeric);
            whole && !(*phrase == "in order" && rest.trim_start().starts_with("to "))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_about_a_stretch_of_the_work_is_told_apart() {
        for q in [
            "How did my discussions about the message store progress, in order?",
            "Can you list the order in which I brought up the caching changes?",
            "Walk me through how the deploy script evolved.",
            "Give me a summary of everything about the auth tokens.",
            "Summarize what we did on the importer",
            "What changed throughout the migration?",
        ] {
            assert!(asks_for_a_span(q), "{q}");
        }
        for q in [
            "What did the final summary say about the cache TTL?",
            "Which flag did I pass in order to skip the tests?",
            "Why did the progressbar crate fail to build?",
            "What port does the dev server use?",
            "Sort the orders table by date",
        ] {
            assert!(!asks_for_a_span(q), "{q}");
        }
    }
}
