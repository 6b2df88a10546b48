//! Questions about a cause: "why did the first launch die?", "what was the cause of the
//! garbled versions?". What answers them is the sentence that diagnosed it, usually a short
//! line after a failure ("The issue is with the shell directory change"), which shares few
//! words with the question and little of its meaning: the question tells of the symptom, the
//! line of the cause. Such lines say so in a few set ways, and carry a label for it, which a
//! question asking for a cause names as "what did Caroline say" names a speaker (the same gain,
//! see `rank::LABEL_GAIN`).

use super::phrase;

/// Words of a question that asks for a cause.
const ASKING: &[&str] = &["why", "cause", "caused", "causes", "reason", "reasons"];

/// Ways a sentence says it gives a cause, lowercase.
const STATING: &[&str] = &[
    "the issue is",
    "the issue was",
    "the issue here",
    "see the issue",
    "found the issue",
    "found both issues",
    "the problem is",
    "the problem was",
    "see the problem",
    "found the problem",
    "root cause",
    "caused by",
    "because",
    "due to",
    "the reason is",
    "the reason was",
    "that's why",
    "which is why",
    "this is why",
    "the culprit",
];

/// Whether `question` asks for a cause ("why", "cause", "reason" as words).
pub(super) fn asks_for_a_cause(question: &str) -> bool {
    question
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| ASKING.iter().any(|a| w.eq_ignore_ascii_case(a)))
}

/// Whether `text` (what someone said, not a tool's output) states a cause.
pub(crate) fn states_a_cause(text: &str) -> bool {
    phrase::contains_any(&phrase::lowercase(text), STATING)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_asking_for_a_cause_is_told_apart() {
        assert!(asks_for_a_cause(
            "Why did the very first launch of the server die?"
        ));
        assert!(asks_for_a_cause(
            "What was the cause of the garbled version strings?"
        ));
        assert!(asks_for_a_cause("For what reason was the file deleted?"));
        assert!(!asks_for_a_cause("What port does the dev server use?"));
        assert!(!asks_for_a_cause("Which whys and wherefores?"));
    }

    #[test]
    fn a_diagnosis_is_told_apart() {
        assert!(states_a_cause(
            "The issue is with the shell directory change. Let me run it from the right place:"
        ));
        assert!(states_a_cause(
            "I see the issue - print_status is called inside command substitution."
        ));
        assert!(states_a_cause("It fails because the token is unset."));
        assert!(states_a_cause("That\u{2019}s why the port was taken."));
        assert!(!states_a_cause("Let me run the tests again."));
        assert!(!states_a_cause("See issue #377 for the roadmap."));
    }
}
