//! The function words of each language the memory reads (English, French, Spanish): one list
//! per language, for everything that splits text into words worth weighing (the search index,
//! the fallback embedder, topic extraction).
//!
//! Lowercase; a word is looked up after lowercasing. Contraction stems ("don", "isn", "ll")
//! are listed because an apostrophe splits "don't" into "don" and "t". A few double as
//! programming keywords ("if", "for", "not", "while"): they carry little topic signal in code
//! or prose alike.

use std::collections::HashSet;
use std::sync::OnceLock;

/// English function words.
#[rustfmt::skip]
pub const ENGLISH: &[&str] = &[
    "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "done", "down", "during", "each", "either",
    "else", "etc", "even", "ever", "every", "few", "for", "from", "further", "get", "gets", "got",
    "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself",
    "his", "how", "however", "if", "in", "into", "is", "it", "its", "itself", "just", "let",
    "like", "may", "me", "might", "more", "most", "much", "must", "my", "myself", "no", "nor",
    "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves",
    "out", "over", "own", "same", "shall", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "upon", "us", "very", "was", "we",
    "were", "what", "when", "where", "whether", "which", "while", "who", "whom", "whose", "why",
    "will", "with", "within", "without", "would", "yet", "you", "your", "yours", "yourself",
    "yourselves", "ll", "re", "ve", "isn", "aren", "wasn", "weren", "don", "doesn", "didn", "won",
    "wouldn", "shouldn", "couldn", "cannot", "a", "i",
];

/// French function words.
#[rustfmt::skip]
pub const FRENCH: &[&str] = &[
    "au", "aux", "avec", "ce", "ceci", "cela", "ces", "cet", "cette", "chez", "comme", "dans",
    "de", "des", "du", "elle", "elles", "en", "encore", "est", "et", "etaient", "etait", "ete",
    "être", "etre", "été", "était", "étaient", "eu", "fait", "il", "ils", "je", "la", "le", "les",
    "leur", "leurs", "lui", "ma", "mais", "me", "meme", "même", "mes", "moi", "mon", "ne", "ni",
    "nos", "notre", "nous", "on", "ont", "ou", "où", "par", "pas", "peu", "plus", "pour", "quand",
    "que", "quel", "quelle", "quelles", "quels", "qui", "quoi", "sa", "sans", "se", "ses", "si",
    "sont", "sous", "suis", "sur", "ta", "te", "tes", "toi", "ton", "tous", "tout", "toute",
    "toutes", "tres", "très", "tu", "un", "une", "unes", "uns", "vos", "votre", "vous", "ça", "ca",
    "avoir", "avait", "aussi", "alors", "donc", "car", "déjà", "deja", "ici", "à",
];

/// Spanish function words.
#[rustfmt::skip]
pub const SPANISH: &[&str] = &[
    "al", "algo", "algunos", "ante", "antes", "aquel", "aquella", "aqui", "aquí", "cada", "como",
    "cómo", "con", "contra", "cual", "cuando", "de", "del", "desde", "donde", "dónde", "el", "él",
    "ella", "ellas", "ello", "ellos", "en", "entre", "era", "eran", "es", "esa", "esas", "ese",
    "eso", "esos", "esta", "está", "estaba", "estado", "estan", "están", "estar", "este", "esto",
    "estos", "fue", "fueron", "ha", "habia", "había", "han", "hasta", "hay", "la", "las", "le",
    "les", "lo", "los", "mas", "más", "me", "mi", "mis", "mismo", "muy", "nada", "ni", "no", "nos",
    "nosotros", "nuestra", "nuestro", "otra", "otro", "otros", "para", "pero", "poco", "por",
    "porque", "que", "qué", "quien", "quién", "se", "sea", "ser", "si", "sí", "sido", "siempre",
    "sino", "sobre", "son", "su", "sus", "también", "tambien", "te", "tiene", "todo", "todos",
    "tu", "tú", "tus", "un", "una", "unas", "uno", "unos", "usted", "ustedes", "ya", "yo", "a",
    "o", "y",
];

/// English words of the conversation about the work rather than of its subject: what an
/// assistant says of its own progress ("Perfect! Successfully installed"), of its method
/// ("let me explore the codebase to understand a different approach"), of its verdicts and of
/// the qualities it claims ("a comprehensive, robust test against the real API"), and what a
/// tool's output says of itself ("12 lines omitted", "output truncated"). They
/// are frequent in any coding session, so a thread's title made of them names nothing.
#[rustfmt::skip]
pub const CONVERSATION: &[&str] = &[
    "successfully", "successful", "success", "perfect", "perfectly", "great", "excellent",
    "good", "nice", "awesome", "fine", "correct", "correctly", "properly", "proper", "better",
    "best", "easier", "easy", "simple", "simpler", "different", "differently", "approach",
    "ensure", "ensures", "ensuring", "explore", "exploring", "understand", "understanding",
    "navigate", "navigating", "identified", "identify", "refer", "referring", "let", "lets",
    "now", "done", "ready", "okay", "ok", "sure", "thanks", "thank", "please",
    "actually", "already", "also", "still", "just", "really", "first", "next", "finally",
    "instead", "again", "another", "something", "anything", "everything", "things", "thing",
    "need", "needs", "want", "wants", "try", "trying", "see", "seems", "look", "looks",
    "looking", "check", "checking", "verify", "verifying", "confirm", "confirmed", "noticed",
    "found", "seeing", "working", "works", "worked", "implemented", "created", "added",
    "updated", "fixed", "completed", "complete", "start", "started", "continue", "proceed",
    "help", "helps", "able", "appears", "issue", "issues", "problem", "problems", "way",
    "step", "steps", "part", "bit", "lot", "summary", "overview", "following",
    "below", "above", "certain", "specific", "relevant", "current", "currently", "new",
    "comprehensive", "robust", "actual", "real", "thorough", "detailed", "entire", "whole",
    "quick", "quickly", "important", "additional", "nope", "lgtm", "ahead", "sounds",
    "alright", "agreed", "omitted", "truncated", "elided",
];

/// Whether `word` (lowercase) belongs to [`CONVERSATION`].
pub fn is_conversation_word(word: &str) -> bool {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| CONVERSATION.iter().copied().collect())
        .contains(word)
}

/// Words that never name a subject (interjections, politeness).
#[rustfmt::skip]
pub const FILLER: &[&str] = &[
    "hey",
    "hi",
    "hello",
    "great",
    "hmm",
    "yep",
    "yeah",
    "yes",
    "ok",
    "okay",
    "thanks",
    "thank",
    "wow",
    "cool",
    "awesome",
    "nice",
    "sure",
    "lol",
    "haha",
    "oh",
    "ah",
    "absolutely",
    "totally",
    "really",
    "definitely",
    "amazing",
    "glad",
    "sorry",
    "please",
    "bye",
    "gonna",
    "wanna",
];

/// Whether `word` (lowercase) belongs to [`FILLER`].
pub fn is_filler(word: &str) -> bool {
    FILLER.contains(&word)
}

/// Whether `word` (lowercase) can name a subject: two characters or more with a letter, not a
/// function word, not a word of the conversation, not filler.
pub fn is_subject_word(word: &str) -> bool {
    word.chars().count() >= 2
        && word.chars().any(char::is_alphabetic)
        && !is_stopword(word)
        && !is_conversation_word(word)
        && !is_filler(word)
}

/// Every language's lists at once.
pub const LANGUAGES: [&[&str]; 3] = [ENGLISH, FRENCH, SPANISH];

/// Whether `word` (lowercase) is a function word of any of [`LANGUAGES`]: texts mix them
/// (French prose about English code), so every list applies to every text.
pub fn is_stopword(word: &str) -> bool {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| LANGUAGES.iter().flat_map(|l| l.iter().copied()).collect())
        .contains(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_lowercase_without_repeats() {
        for list in LANGUAGES {
            let mut seen = HashSet::new();
            for w in list {
                assert_eq!(*w, w.to_lowercase(), "{w}");
                assert!(seen.insert(w), "{w} twice");
            }
        }
    }

    #[test]
    fn every_language_applies() {
        assert!(is_stopword("the") && is_stopword("avec") && is_stopword("pero"));
        assert!(!is_stopword("database") && !is_stopword("The"));
    }
}
