//! Detects user rules in a prompt ("always run the tests before committing", "rappelle-toi : pas
//! de unwrap", "recuerda usar tabs"): standing instructions worth injecting with every prompt.
//! Only imperative uses count: the marker must open a sentence (after an optional "please"), so
//! "I always forget how this works" is not a rule.

use regex::Regex;
use std::sync::LazyLock;

/// Longer than this it is a request, not a rule.
const MAX_RULE_CHARS: usize = 300;

/// A sentence that opens with a rule marker, in English, French or Spanish.
static RULE_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)^
        (?:please[,\s]+|s'il\s+te\s+pla[iî]t[,\s]+|stp[,\s]+|por\s+favor[,\s]+)?
        (?:
            remember(?:\s+(?:that|to))?[\s:,]
          | don'?t\s+forget(?:\s+(?:that|to))?[\s:,]
          | from\s+now\s+on[\s:,]
          | always\s | never\s
          | rappelle[-\s]toi(?:\s+(?:que|de|d'))?[\s:,]
          | souviens[-\s]toi(?:\s+(?:que|de|d'))?[\s:,]
          | n'oublie\s+pas(?:\s+(?:que|de|d'))?[\s:,]
          | d[ée]sormais[\s:,] | [àa]\s+partir\s+de\s+maintenant[\s:,]
          | toujours\s | jamais\s | ne\s+jamais\s
          | recuerda(?:\s+que)?[\s:,]
          | no\s+olvides(?:\s+que)?[\s:,]
          | a\s+partir\s+de\s+ahora[\s:,] | de\s+ahora\s+en\s+adelante[\s:,]
          | siempre\s | nunca\s
        )",
    )
    .expect("valid rule regex")
});

/// Splits at sentence ends and line breaks.
static SENTENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[^.!?\n]+[.!?]?").expect("valid sentence regex"));

/// The rules stated in `prompt`, cleaned, in order.
pub fn detect(prompt: &str) -> Vec<String> {
    let mut out = Vec::new();
    for m in SENTENCE.find_iter(prompt) {
        let sentence = m.as_str().trim().trim_start_matches(['-', '*', '•']).trim();
        if sentence.ends_with('?') || !RULE_START.is_match(sentence) {
            continue;
        }
        let n = sentence.chars().count();
        if (ai_smartness_core::memory::rules::MIN_RULE_CHARS..=MAX_RULE_CHARS).contains(&n) {
            out.push(sentence.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_in_three_languages() {
        assert_eq!(
            detect("Always run cargo fmt before committing. Now fix the parser."),
            ["Always run cargo fmt before committing."]
        );
        assert_eq!(
            detect("remember: the staging DB is read-only")[0],
            "remember: the staging DB is read-only"
        );
        assert_eq!(
            detect("Rappelle-toi que les tests tournent en CI")[0],
            "Rappelle-toi que les tests tournent en CI"
        );
        assert_eq!(
            detect("Toujours utiliser des tabulations")[0],
            "Toujours utiliser des tabulations"
        );
        assert_eq!(
            detect("Recuerda usar la rama develop")[0],
            "Recuerda usar la rama develop"
        );
        assert_eq!(
            detect("Nunca hagas push a main")[0],
            "Nunca hagas push a main"
        );
        assert_eq!(
            detect("please never commit secrets to the repo")[0],
            "please never commit secrets to the repo"
        );
    }

    #[test]
    fn ordinary_sentences_are_not_rules() {
        assert!(detect("I always forget how the borrow checker works with closures").is_empty());
        assert!(detect("Should we always retry on 503?").is_empty());
        assert!(detect("never").is_empty(), "too short");
        assert!(detect("Why does the build fail on CI but never locally").is_empty());
    }
}
