//! Questions about this memory's own past: "which port did the assistant start the second
//! instance on?", "what did I say I was using?", "which library did you suggest?". Such a
//! question names the conversation's own people in something they did; it is about what the
//! memory holds by its own words, however generic its subject sounds, so the relevance gate
//! does not guard it against chance (`gate::gate`). A question in the past asked mostly in this
//! memory's own words ("how much did the first package build need to download from the binary
//! cache?" in a memory of that build) is held to a lower bar: its words already point at the
//! memory. A question that does neither ("how do I profile a slow query?") is left to the gate.

/// The conversation's people, as a question names them.
const PEOPLE: &[&str] = &["i", "we", "you"];

/// Auxiliaries that put a question in the past: "did I", "were we", "had you".
const PAST_AUXILIARIES: &[&str] = &["did", "was", "were", "had"];

/// What the people of a conversation did in it, in the past: what was said, decided, tried.
/// Present forms ("I set up", "I run") are left out: "how do I set up X" is about no past.
const PAST_DOINGS: &[&str] = &[
    "said",
    "asked",
    "told",
    "mentioned",
    "wrote",
    "typed",
    "pasted",
    "interrupted",
    "decided",
    "chose",
    "picked",
    "tried",
    "used",
    "brought",
    "discussed",
    "suggested",
    "recommended",
    "proposed",
    "agreed",
    "planned",
    "settled",
];

/// The share of a question's weight ([`super::index::SearchIndex::known_share`]) that must be in
/// words this memory holds for a question in the past to be about it: most of it.
pub const KNOWN_MAJORITY: f32 = 0.5;

/// Whether `question` recalls something of this memory's past: it is in the past (an auxiliary
/// of the past: "how much did the build need", "was the API pulling") and most of its weight,
/// `known`, is in words this memory holds. A question about history can still be mostly in
/// the words of a large memory (ten long chats): the gate lowers its bar for these, it does
/// not lift it.
pub(super) fn recalls_this_work(question: &str, known: f32) -> bool {
    known > KNOWN_MAJORITY
        && super::person::question_words(question)
            .iter()
            .any(|w| PAST_AUXILIARIES.contains(&w.as_str()))
}

/// Whether `question` asks about what this conversation's people did: it names "the
/// assistant", or "I", "we" or "you" with an auxiliary of the past just before ("did I",
/// "were we") or a past doing just after ("I said", "you suggested").
pub(super) fn asks_about_this_work(question: &str) -> bool {
    let words = super::person::question_words(question);
    words.iter().enumerate().any(|(i, w)| {
        let person = PEOPLE.contains(&w.as_str());
        let after_past = i > 0 && PAST_AUXILIARIES.contains(&words[i - 1].as_str());
        let before_doing = words
            .get(i + 1)
            .is_some_and(|v| PAST_DOINGS.contains(&v.as_str()));
        let assistant = w == "assistant" && i > 0 && words[i - 1] == "the";
        assistant || (person && (after_past || before_doing))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_about_what_this_conversation_did_is_told_apart() {
        for q in [
            "Which extra port did the assistant start a second instance on?",
            "Which versions of the software did I say I was using?",
            "What pub-cache path was searched before I interrupted it?",
            "Which library did you suggest for the retries?",
            "What did we decide about the cache TTL?",
        ] {
            assert!(asks_about_this_work(q), "{q}");
        }
        for q in [
            "How do I profile a slow SQL query in MySQL?",
            "How can I set up a Kubernetes autoscaler?",
            "When did the Berlin Wall fall?",
            "Give me tips for improving sleep quality.",
            "Can you explain what an assistant professor does?",
            "What port does the dev server use?",
        ] {
            assert!(!asks_about_this_work(q), "{q}");
        }
    }

    #[test]
    fn a_question_in_the_past_in_this_memorys_words_recalls_it() {
        let past = "How much did the first package build need to download from the binary cache?";
        assert!(recalls_this_work(past, 0.9));
        // The same question where most of its words are unknown: about something else.
        assert!(!recalls_this_work(past, 0.3));
        // A question in the present, however well known its words, is left to the gate.
        assert!(!recalls_this_work(
            "How do I make a bash script exit on the first error?",
            1.0
        ));
    }
}
