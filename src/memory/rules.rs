//! User rules (`.ai/user_rules.json`): short standing instructions a person gave ("always use
//! tabs"), injected with every prompt. At most 20, each at least 10 characters, no duplicates.
//! The file is small and people edit it by hand, so it is read afresh on every use.

use serde::{Deserialize, Serialize};
use std::path::Path;

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
    #[error("no rule number {0} (there are {1})")]
    NoSuchRule(usize, usize),
    #[error("{0}")]
    Io(String),
}

impl UserRules {
    /// Reads the rules; a missing file means none. A file that is not valid JSON is an error
    /// (never silently replaced: a person wrote it).
    pub fn load(path: &Path) -> Result<UserRules, RuleError> {
        match std::fs::read(path) {
            Ok(bytes) => {
                // Accept both `{"rules": [...]}` and a bare array.
                if let Ok(list) = serde_json::from_slice::<Vec<String>>(&bytes) {
                    return Ok(UserRules { rules: list });
                }
                serde_json::from_slice(&bytes)
                    .map_err(|e| RuleError::Io(format!("{} is not valid: {e}", path.display())))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(UserRules::default()),
            Err(e) => Err(RuleError::Io(format!("{}: {e}", path.display()))),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), RuleError> {
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| RuleError::Io(e.to_string()))?;
        crate::store::atomic::write_atomic(path, &bytes).map_err(|e| RuleError::Io(e.to_string()))
    }

    /// Adds a rule; past 20 the oldest goes. Returns whether it was added.
    pub fn add(&mut self, text: &str) -> Result<(), RuleError> {
        let text = text.trim();
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

fn normalize(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_end_matches(['.', '!'])
        .to_string()
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
}
