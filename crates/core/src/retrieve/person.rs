//! Questions about the person's own words: "what did I ask for?", "which tool did I say to
//! use?", "how did I tell the assistant to finish?". The memory's prompts are that person's
//! words; such a question names their speaker as "what did Caroline say" names hers, and the
//! same gain applies (see `rank::LABEL_GAIN`).

/// Verbs of saying, in the forms a question takes after "I".
const SAYING: &[&str] = &[
    "ask",
    "asked",
    "say",
    "said",
    "tell",
    "told",
    "request",
    "requested",
    "mention",
    "mentioned",
    "write",
    "wrote",
    "type",
    "typed",
    "paste",
    "pasted",
    "instruct",
    "instructed",
    "bring",
    "brought",
    "discuss",
    "discussed",
];

/// The words of a question, lowercase, apostrophes kept ("didn't", "I'd").
pub(super) fn question_words(question: &str) -> Vec<String> {
    question
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `question` asks what the person ("I") said: "I" followed, within two words, by a
/// verb of saying.
pub(super) fn asks_for_the_persons_words(question: &str) -> bool {
    let words = question_words(question);
    words.iter().enumerate().any(|(i, w)| {
        w == "i"
            && words
                .iter()
                .skip(i + 1)
                .take(2)
                .any(|v| SAYING.contains(&v.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_about_what_i_said_is_told_apart() {
        assert!(asks_for_the_persons_words("What did I first ask for?"));
        assert!(asks_for_the_persons_words(
            "When I asked for a formatter output, which tool did I say to use?"
        ));
        assert!(asks_for_the_persons_words(
            "How did I tell the assistant to finish the work on the PR?"
        ));
        assert!(asks_for_the_persons_words(
            "In what order did I bring up the caching changes?"
        ));
        assert!(!asks_for_the_persons_words(
            "What did the assistant say about the pool?"
        ));
        assert!(!asks_for_the_persons_words(
            "Why did I get a 403 from the API?"
        ));
        assert!(!asks_for_the_persons_words(
            "fix the build, I think it says 403"
        ));
    }
}
