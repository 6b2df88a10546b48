//! The user rules file (`.ai/user_rules.json`), with one owner: the daemon opens it once and
//! every part (inject, the router, the assistant, the config watch) goes through that handle.
//! Reads take the copy in memory (no file read on a prompt); changes are made one at a time,
//! each on the file as it is at that moment (a hand edit is kept), then saved atomically, so
//! two changes at once lose neither.

use ai_smartness_core::memory::rules::{RuleError, UserRules};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Reads the rules; a missing file means none. A file that is not valid JSON is an error (never
/// silently replaced: a person wrote it).
pub fn read_rules(path: &Path) -> Result<UserRules, RuleError> {
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

/// Writes `rules` to a new rules file (`ai init`); the daemon's [`RulesFile`] writes the rest.
pub fn write_rules(path: &Path, rules: &UserRules) -> Result<(), RuleError> {
    let bytes = serde_json::to_vec_pretty(rules).map_err(|e| RuleError::Io(e.to_string()))?;
    ai_smartness_proto::atomic::write_atomic(path, &bytes).map_err(|e| RuleError::Io(e.to_string()))
}

/// The project's user rules, loaded once.
#[derive(Debug)]
pub struct RulesFile {
    /// `.ai/user_rules.json`.
    path: PathBuf,
    /// The last valid rules read or written: what every prompt gets.
    current: Mutex<UserRules>,
    /// Held through a change's read, edit and save, so changes do not interleave.
    writer: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RulesFile {
    /// Opens the file: its rules, or none and why when it is not valid (the file is left as
    /// it is for its writer to fix).
    pub fn open(path: PathBuf) -> (RulesFile, Option<RuleError>) {
        let (rules, problem) = match read_rules(&path) {
            Ok(r) => (r, None),
            Err(e) => (UserRules::default(), Some(e)),
        };
        let file = RulesFile {
            path,
            current: Mutex::new(rules),
            writer: Mutex::new(()),
        };
        (file, problem)
    }

    /// The rules in force (a copy; no file read).
    pub fn rules(&self) -> UserRules {
        lock(&self.current).clone()
    }

    /// Reads the file again after it changed on disk; an invalid file leaves the last valid
    /// rules in force and says why.
    pub fn reload(&self) -> Result<(), RuleError> {
        let _w = lock(&self.writer);
        let rules = read_rules(&self.path)?;
        *lock(&self.current) = rules;
        Ok(())
    }

    /// Changes the rules: `edit` gets them as the file holds them now; what it leaves is saved
    /// and in force. Nothing is written when `edit` fails. Blocking (file I/O): call it off
    /// async workers.
    pub fn update<T>(
        &self,
        edit: impl FnOnce(&mut UserRules) -> Result<T, RuleError>,
    ) -> Result<(T, UserRules), RuleError> {
        let _w = lock(&self.writer);
        let mut rules = read_rules(&self.path)?;
        let out = edit(&mut rules)?;
        write_rules(&self.path, &rules)?;
        *lock(&self.current) = rules.clone();
        Ok((out, rules))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn concurrent_changes_lose_no_rule_and_a_hand_edit_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("user_rules.json");
        std::fs::write(&path, r#"["Always run cargo fmt before committing"]"#).unwrap();
        let (file, problem) = RulesFile::open(path.clone());
        assert!(problem.is_none());
        let file = Arc::new(file);
        // A person adds a rule by hand; the handle has not reloaded yet.
        std::fs::write(
            &path,
            r#"["Always run cargo fmt before committing", "Use tabs in the Makefile please"]"#,
        )
        .unwrap();
        let workers: Vec<_> = (0..8)
            .map(|i| {
                let file = file.clone();
                std::thread::spawn(move || {
                    file.update(|r| r.add(&format!("Rule number {i} from a prompt")))
                        .unwrap();
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let on_disk = read_rules(&path).unwrap();
        assert_eq!(on_disk.rules.len(), 10, "{on_disk:?}");
        assert!(on_disk
            .rules
            .contains(&"Use tabs in the Makefile please".to_string()));
        assert_eq!(file.rules(), on_disk);
    }

    #[test]
    fn an_invalid_file_keeps_the_last_valid_rules_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("user_rules.json");
        std::fs::write(&path, r#"{"rules": ["Never push to main directly"]}"#).unwrap();
        let (file, _) = RulesFile::open(path.clone());
        std::fs::write(&path, "{ not json").unwrap();
        assert!(file.reload().is_err());
        assert_eq!(file.rules().rules, ["Never push to main directly"]);
        assert!(file.update(|r| r.add("Another rule here")).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");
        // A missing file is no rules, and the first change creates it.
        let (fresh, problem) = RulesFile::open(dir.path().join("none.json"));
        assert!(problem.is_none() && fresh.rules().rules.is_empty());
        fresh.update(|r| r.add("Prefer small commits")).unwrap();
        assert_eq!(
            read_rules(&dir.path().join("none.json"))
                .unwrap()
                .rules
                .len(),
            1
        );
    }
}
