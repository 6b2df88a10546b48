//! AssistantService sessions and automations on disk: one JSON file each under
//! `.ai/db/sessions/` and `.ai/db/automations/`, written atomically like threads, so a crash at
//! any point leaves every file either old or new. A file that does not parse is moved to
//! `quarantine/` with its reason and the rest loads: one bad file never loses the others.

use super::atomic::{remove_durable, remove_stray_temp_files, write_json_redacted_atomic};
use super::files::quarantine_file;
use super::{io_at, StoreError};
use crate::assistant::types::{AISession, Automation};
use crate::memory::ids;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};

/// Id prefix of sessions (`session_YYYYMMdd_HHMMSS_hex`).
pub const SESSION_PREFIX: &str = "session";
/// Id prefix of automations.
pub const AUTOMATION_PREFIX: &str = "automation";

/// The two folders and the quarantine.
#[derive(Debug, Clone)]
pub struct SessionStore {
    sessions_dir: PathBuf,
    automations_dir: PathBuf,
    quarantine_dir: PathBuf,
}

/// What loading found.
#[derive(Debug, Default)]
pub struct LoadedSessions {
    pub sessions: Vec<AISession>,
    pub automations: Vec<Automation>,
    /// Files moved to quarantine, with why.
    pub quarantined: Vec<(PathBuf, String)>,
}

impl SessionStore {
    /// Opens (creating the folders) under the database folder.
    pub fn open(db_dir: &Path) -> Result<SessionStore, StoreError> {
        let store = SessionStore {
            sessions_dir: db_dir.join("sessions"),
            automations_dir: db_dir.join("automations"),
            quarantine_dir: db_dir.join("quarantine"),
        };
        for dir in [&store.sessions_dir, &store.automations_dir] {
            fs::create_dir_all(dir).map_err(io_at(dir))?;
            // Leftovers of writes a crash interrupted; the real files are intact.
            remove_stray_temp_files(dir).map_err(io_at(dir))?;
        }
        Ok(store)
    }

    /// Every session and automation; damaged files quarantined.
    pub fn load(&self) -> Result<LoadedSessions, StoreError> {
        let mut out = LoadedSessions::default();
        let q = &self.quarantine_dir;
        out.sessions = load_json_dir(
            &self.sessions_dir,
            SESSION_PREFIX,
            q,
            &mut out.quarantined,
            |s: &AISession| &s.id,
        )?
        .into_iter()
        .map(|(_, s)| s)
        .collect();
        out.automations = load_json_dir(
            &self.automations_dir,
            AUTOMATION_PREFIX,
            q,
            &mut out.quarantined,
            |a: &Automation| &a.id,
        )?
        .into_iter()
        .map(|(_, a)| a)
        .collect();
        Ok(out)
    }

    /// Writes a session atomically.
    pub fn save_session(&self, s: &AISession) -> Result<(), StoreError> {
        self.save(&self.sessions_dir, SESSION_PREFIX, &s.id, s)
    }

    /// Writes an automation atomically.
    pub fn save_automation(&self, a: &Automation) -> Result<(), StoreError> {
        self.save(&self.automations_dir, AUTOMATION_PREFIX, &a.id, a)
    }

    /// Removes a session's file (an ended session past its retention).
    pub fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let path = self.path(&self.sessions_dir, SESSION_PREFIX, id)?;
        remove_durable(&path).map_err(io_at(&path))
    }

    /// Removes an automation's file (its past sessions stay, for the record).
    pub fn delete_automation(&self, id: &str) -> Result<(), StoreError> {
        let path = self.path(&self.automations_dir, AUTOMATION_PREFIX, id)?;
        remove_durable(&path).map_err(io_at(&path))
    }

    fn save<T: Serialize>(
        &self,
        dir: &Path,
        prefix: &str,
        id: &str,
        value: &T,
    ) -> Result<(), StoreError> {
        let path = self.path(dir, prefix, id)?;
        // What people and the model said: no secret of it is written.
        write_json_redacted_atomic(&path, value).map_err(io_at(&path))
    }

    /// `DIR/ID.json` for a valid id only: no id may name a path outside the folder.
    fn path(&self, dir: &Path, prefix: &str, id: &str) -> Result<PathBuf, StoreError> {
        if ids::is_valid(prefix, id) {
            Ok(dir.join(format!("{id}.json")))
        } else {
            Err(StoreError::InvalidId(id.to_string()))
        }
    }
}

/// Every `ID.json` in `dir` whose content parses as `T` and names the same id (a valid
/// `prefix` id), with its path, in name order. The others are moved to `quarantine_dir` with
/// their reason (also listed in `quarantined`): one bad file never loses the rest.
pub fn load_json_dir<T: DeserializeOwned>(
    dir: &Path,
    prefix: &str,
    quarantine_dir: &Path,
    quarantined: &mut Vec<(PathBuf, String)>,
    id_of: impl Fn(&T) -> &String,
) -> Result<Vec<(PathBuf, T)>, StoreError> {
    let mut out = Vec::new();
    let entries = fs::read_dir(dir).map_err(io_at(dir))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        let parsed = fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<T>(&b).map_err(|e| e.to_string()))
            .and_then(|v| {
                if !ids::is_valid(prefix, &stem) {
                    Err(format!("{stem:?} is not a {prefix} id"))
                } else if id_of(&v) != &stem {
                    Err(format!("the file holds {:?}, not {stem:?}", id_of(&v)))
                } else {
                    Ok(v)
                }
            });
        match parsed {
            Ok(v) => out.push((path, v)),
            Err(reason) => {
                quarantine_file(quarantine_dir, &path, &reason)?;
                quarantined.push((path, reason));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::types::SessionKind;
    use chrono::Utc;

    #[test]
    fn sessions_round_trip_and_bad_files_are_quarantined() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let now = Utc::now();
        let s = AISession::new(
            ids::new_id(SESSION_PREFIX, now),
            "chat",
            SessionKind::Chat,
            now,
        );
        store.save_session(&s).unwrap();
        let a = Automation {
            id: ids::new_id(AUTOMATION_PREFIX, now),
            name: "daily".into(),
            prompt: "Review yesterday".into(),
            seed_session_id: None,
            schedule: Some("@daily".into()),
            timezone: None,
            enabled: true,
            paused: false,
            created_at: now,
            last_trigger: None,
            last_execution_at: None,
            last_scheduled_time: None,
            require_validation: false,
        };
        store.save_automation(&a).unwrap();
        fs::write(
            dir.path()
                .join("sessions/session_20260101_000000_deadbeef.json"),
            b"{ torn",
        )
        .unwrap();
        // A file whose name does not match its content is not trusted either.
        let mut other = s.clone();
        other.id = "session_20260101_000000_0000beef".into();
        fs::write(
            dir.path()
                .join("sessions/session_20260101_000000_00000001.json"),
            serde_json::to_vec(&other).unwrap(),
        )
        .unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.sessions, vec![s]);
        assert_eq!(loaded.automations, vec![a.clone()]);
        assert_eq!(loaded.quarantined.len(), 2);
        assert!(dir.path().join("quarantine").read_dir().unwrap().count() >= 2);
        store.delete_automation(&a.id).unwrap();
        assert!(store.load().unwrap().automations.is_empty());
        assert!(matches!(
            store.delete_automation("../../etc/passwd"),
            Err(StoreError::InvalidId(_))
        ));
    }
}
