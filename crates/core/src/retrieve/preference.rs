//! A preference the person stated ("I prefer the lightweight tracker for now", "I've set a
//! preference for CPU-only deployment"): like a rule, it holds for the work to come, and a
//! later request for advice about that work ("what would you suggest?", "how should I ...?")
//! should be answered with it in mind. Such a message carries a label of its own (see
//! `index`), and rises with it, as a rule does, for such requests only: a preference says
//! nothing about what a number or a past event was, and lifted for every question, the
//! person's long messages that state one crowd out the evidence.

use super::phrase;

/// Ways a person says they prefer something, lowercase, matched as whole words.
const STATING: &[&str] = &[
    "i prefer",
    "i'd prefer",
    "i would prefer",
    "my preference",
    "a preference for",
    "i'd rather",
    "i would rather",
];

/// Words of a request for advice, lowercase, matched as whole words (set on the tuning
/// conversations' requests, with the usual synonyms of "suggest").
const ASKING: &[&str] = &[
    "suggest",
    "suggestion",
    "suggestions",
    "recommend",
    "advice",
    "advise",
    "should i",
    "should we",
    "approach",
    "how would you",
    "best way",
];

/// Whether `question` asks what to do: where a stated preference bears on the answer.
pub(super) fn asks_for_advice(question: &str) -> bool {
    phrase::contains_any(&phrase::lowercase(question), ASKING)
}

/// Whether `text` (what a person said) states a preference.
pub(crate) fn states_a_preference(text: &str) -> bool {
    phrase::contains_any(&phrase::lowercase(text), STATING)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_preference_is_told_apart() {
        for said in [
            "I prefer the lightweight SORT tracker for now due to its simplicity.",
            "I've set a preference for CPU-only deployment due to hardware constraints.",
            "I\u{2019}d rather keep the tokens in memory than in localStorage.",
            "My preference is Redux Toolkit over plain Redux.",
        ] {
            assert!(states_a_preference(said), "{said}");
        }
        for said in [
            "Which preferences API endpoint returns the user's settings?",
            "Set the user preferences cache TTL to 60 s.",
            "I preferably run the tests before pushing.",
            "Fix the failing build.",
        ] {
            assert!(!states_a_preference(said), "{said}");
        }
    }

    #[test]
    fn a_request_for_advice_is_told_apart() {
        for asked in [
            "What approaches would you suggest for the state management?",
            "How should I handle token refresh?",
            "How would you structure the retry loop?",
            "What is the best way to cache the results?",
        ] {
            assert!(asks_for_advice(asked), "{asked}");
        }
        for asked in [
            "What is the typical inference time per frame?",
            "How did the recommendation engine progress, in order?",
            "Which port did the dev server use?",
        ] {
            assert!(!asks_for_advice(asked), "{asked}");
        }
    }
}
