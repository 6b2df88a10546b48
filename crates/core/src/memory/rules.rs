//! User rules (`.ai/user_rules.json`): short standing instructions a person gave ("always use
//! tabs"), injected with every prompt. At most 20, each at least 10 characters, no duplicates.
//! [`detect`] finds them in what a person says. The file itself is read and written by the
//! store's `RulesFile`, its one owner.

use regex::Regex;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

pub const MAX_RULES: usize = 20;
pub const MIN_RULE_CHARS: usize = 10;
/// A rule is one instruction, not a document.
pub const MAX_RULE_CHARS: usize = 500;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserRules {
    #[serde(default)]
    pub rules: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RuleError {
    #[error("a rule needs at least {MIN_RULE_CHARS} characters")]
    TooShort,
    #[error("a rule has at most {MAX_RULE_CHARS} characters")]
    TooLong,
    #[error("that rule is already there")]
    Duplicate,
    #[error("that rule is mostly a secret, and secrets are never kept: say it without the secret (the rule may name where the secret lives, such as an environment variable)")]
    MostlySecret,
    #[error("no rule number {0} (there are {1})")]
    NoSuchRule(usize, usize),
    #[error("{0}")]
    Io(String),
}

impl UserRules {
    /// Adds a rule, redacted like a capture (secrets replaced, `<private>` spans dropped); past
    /// 20 the oldest goes. A rule that is mostly a secret is refused.
    pub fn add(&mut self, text: &str) -> Result<(), RuleError> {
        let redacted = ai_smartness_redact::redact(text.trim());
        if redacted.count > 0 && is_mostly_secret(text.trim(), &redacted.text) {
            return Err(RuleError::MostlySecret);
        }
        let text = redacted.text.trim();
        let n = text.chars().count();
        if n < MIN_RULE_CHARS {
            return Err(RuleError::TooShort);
        }
        if n > MAX_RULE_CHARS {
            return Err(RuleError::TooLong);
        }
        let key = normalize(text);
        if self.rules.iter().any(|r| normalize(r) == key) {
            return Err(RuleError::Duplicate);
        }
        self.rules.push(text.to_string());
        if self.rules.len() > MAX_RULES {
            self.rules.remove(0);
        }
        Ok(())
    }

    /// Removes rule `n` (1-based, as listed).
    pub fn remove(&mut self, n: usize) -> Result<String, RuleError> {
        if n == 0 || n > self.rules.len() {
            return Err(RuleError::NoSuchRule(n, self.rules.len()));
        }
        Ok(self.rules.remove(n - 1))
    }
}

/// Whether what is left of a rule once its secrets are out is too little to be an instruction:
/// shorter than a rule may be, or less than half of what was written.
fn is_mostly_secret(original: &str, redacted: &str) -> bool {
    let placeholders = placeholder_chars(redacted);
    let left = redacted.chars().count().saturating_sub(placeholders);
    let left_words = redacted
        .split_whitespace()
        .filter(|w| !w.contains("[REDACTED"))
        .count();
    left < MIN_RULE_CHARS || left_words < 2 || left * 2 < original.chars().count()
}

/// Characters taken by `[REDACTED:kind]` placeholders.
fn placeholder_chars(text: &str) -> usize {
    let mut total = 0;
    let mut rest = text;
    while let Some(start) = rest.find("[REDACTED") {
        let after = &rest[start..];
        let end = after.find(']').map_or(after.len(), |i| i + 1);
        total += after[..end].chars().count();
        rest = &after[end..];
    }
    total
}

fn normalize(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_end_matches(['.', '!'])
        .to_string()
}

/// A sentence stating a rule is at most this long: longer, it is a request.
const MAX_STATED_RULE_CHARS: usize = 300;

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

/// The rules `prompt` states, cleaned, in order ("always run the tests before committing",
/// "rappelle-toi : pas de unwrap", "recuerda usar tabs"): standing instructions for the work
/// to come. Only imperative uses count: the marker must open a sentence (after an optional
/// "please"), so "I always forget how this works" is not a rule. Inject saves them as user
/// rules; retrieval lifts a stored prompt that states one for the requests it is about.
pub fn detect(prompt: &str) -> Vec<String> {
    stated_rules(prompt).map(str::to_string).collect()
}

/// Whether `text` states a rule ([`detect`]), without collecting them: the search index asks
/// it of every message a person said.
pub fn states_a_rule(text: &str) -> bool {
    stated_rules(text).next().is_some()
}

/// The sentences of `text` that state a rule, trimmed, in order.
fn stated_rules(text: &str) -> impl Iterator<Item = &str> {
    SENTENCE.find_iter(text).filter_map(|m| {
        let sentence = m.as_str().trim().trim_start_matches(['-', '*', '•']).trim();
        let n = sentence.chars().count();
        (!sentence.ends_with('?')
            && RULE_START.is_match(sentence)
            && (MIN_RULE_CHARS..=MAX_STATED_RULE_CHARS).contains(&n))
        .then_some(sentence)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_dedup() {
        let mut r = UserRules::default();
        assert_eq!(r.add("short"), Err(RuleError::TooShort));
        r.add("Always use tabs for indentation").unwrap();
        assert_eq!(
            r.add("always use  tabs for indentation."),
            Err(RuleError::Duplicate)
        );
        for i in 0..25 {
            r.add(&format!("rule number {i} is a long rule")).unwrap();
        }
        assert_eq!(r.rules.len(), MAX_RULES);
        assert_eq!(r.remove(0), Err(RuleError::NoSuchRule(0, 20)));
        assert!(r.remove(1).is_ok());
    }

    #[test]
    fn a_rule_is_kept_without_its_secret_and_refused_when_it_is_mostly_one() {
        let mut r = UserRules::default();
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        r.add(&format!(
            "Remember that the deploy token is {token} and always pass it to the release script"
        ))
        .unwrap();
        assert!(!r.rules[0].contains(token), "{}", r.rules[0]);
        assert!(r.rules[0].contains("release script"), "{}", r.rules[0]);
        assert_eq!(
            r.add(&format!("always {token}")),
            Err(RuleError::MostlySecret)
        );
        assert_eq!(
            r.add("never forget <private>the whole rule is private</private>"),
            Err(RuleError::MostlySecret)
        );
        assert_eq!(
            r.add(&format!("Remember: API_KEY={token}")),
            Err(RuleError::MostlySecret)
        );
        assert_eq!(r.rules.len(), 1);
    }

    #[test]
    fn rules_in_three_languages() {
        assert_eq!(
            detect("Always run cargo fmt before committing. Now fix the parser."),
            ["Always run cargo fmt before committing."]
        );
        // A sentence that is a rule on its own is stated whole.
        for rule in [
            "remember: the staging DB is read-only",
            "Rappelle-toi que les tests tournent en CI",
            "Toujours utiliser des tabulations",
            "Recuerda usar la rama develop",
            "Nunca hagas push a main",
            "please never commit secrets to the repo",
        ] {
            assert_eq!(detect(rule)[0], rule);
            assert!(states_a_rule(rule), "{rule}");
        }
    }

    #[test]
    fn ordinary_sentences_are_not_rules() {
        assert!(detect("I always forget how the borrow checker works with closures").is_empty());
        assert!(detect("Should we always retry on 503?").is_empty());
        assert!(detect("never").is_empty(), "too short");
        assert!(detect("Why does the build fail on CI but never locally").is_empty());
        assert!(!states_a_rule("Should we always retry on 503?"));
    }
}
