//! Records kept one JSON file each in a folder of their own (assistant sessions and
//! automations, workflow runs), written atomically like threads, so a crash at any point
//! leaves every file either old or new. A file that does not parse is moved to `quarantine/`
//! with its reason and the rest loads: one bad file never loses the others. The folder knows
//! nothing of the records but what their `Record` trait (in `ai-smartness-records`) says:
//! their folder, their id.

use super::atomic::write_json_redacted_atomic;
use super::files::quarantine_file;
use super::{io_at, StoreError};
use ai_smartness_core::memory::ids;
use ai_smartness_proto::atomic::{remove_durable, remove_stray_temp_files};
use ai_smartness_records::Record;
use serde::de::DeserializeOwned;
use std::fs;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// One folder of records of one kind, and the quarantine beside it.
#[derive(Debug)]
pub struct JsonFolder<T> {
    /// Where the records are, one `ID.json` each.
    dir: PathBuf,
    /// Where a file that does not load goes, with its reason.
    quarantine_dir: PathBuf,
    /// The kind of record (no value of it is held).
    records: PhantomData<fn() -> T>,
}

impl<T> Clone for JsonFolder<T> {
    fn clone(&self) -> Self {
        JsonFolder {
            dir: self.dir.clone(),
            quarantine_dir: self.quarantine_dir.clone(),
            records: PhantomData,
        }
    }
}

/// What loading a folder found.
#[derive(Debug)]
pub struct FolderContents<T> {
    /// The records, each with its file, in name order (ids sort by time).
    pub records: Vec<(PathBuf, T)>,
    /// Files moved to quarantine, with why.
    pub quarantined: Vec<(PathBuf, String)>,
}

impl<T: Record> JsonFolder<T> {
    /// Opens (creating the folder) under the database folder.
    pub fn open(db_dir: &Path) -> Result<JsonFolder<T>, StoreError> {
        let folder = JsonFolder {
            dir: db_dir.join(T::FOLDER),
            quarantine_dir: db_dir.join("quarantine"),
            records: PhantomData,
        };
        fs::create_dir_all(&folder.dir).map_err(io_at(&folder.dir))?;
        // Leftovers of writes a crash interrupted; the real files are intact.
        remove_stray_temp_files(&folder.dir).map_err(io_at(&folder.dir))?;
        Ok(folder)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every record; damaged files quarantined.
    pub fn load(&self) -> Result<FolderContents<T>, StoreError> {
        let mut quarantined = Vec::new();
        let records = load_json_dir(
            &self.dir,
            T::PREFIX,
            &self.quarantine_dir,
            &mut quarantined,
            |r: &T| r.id(),
        )?;
        Ok(FolderContents {
            records,
            quarantined,
        })
    }

    /// Writes a record atomically, every string redacted first: records hold what people and
    /// models said, and no secret of it is written.
    pub fn save(&self, record: &T) -> Result<(), StoreError> {
        let path = self.path(record.id())?;
        write_json_redacted_atomic(&path, record).map_err(io_at(&path))
    }

    /// Removes a record's file.
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        let path = self.path(id)?;
        remove_durable(&path).map_err(io_at(&path))
    }

    /// `DIR/ID.json` for a valid id only: no id may name a path outside the folder.
    pub fn path(&self, id: &str) -> Result<PathBuf, StoreError> {
        if ids::is_valid(T::PREFIX, id) {
            Ok(self.dir.join(format!("{id}.json")))
        } else {
            Err(StoreError::InvalidId(id.to_string()))
        }
    }
}

/// Every `ID.json` in `dir` whose content parses as `T` and names the same id (a valid
/// `prefix` id), with its path, in name order. The others are moved to `quarantine_dir` with
/// their reason (also listed in `quarantined`): one bad file never loses the rest.
fn load_json_dir<T: DeserializeOwned>(
    dir: &Path,
    prefix: &str,
    quarantine_dir: &Path,
    quarantined: &mut Vec<(PathBuf, String)>,
    id_of: impl Fn(&T) -> &str,
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
                } else if id_of(&v) != stem {
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
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Note {
        id: String,
        text: String,
    }

    impl Record for Note {
        const FOLDER: &'static str = "notes";
        const PREFIX: &'static str = "note";
        fn id(&self) -> &str {
            &self.id
        }
    }

    #[test]
    fn records_round_trip_and_bad_files_are_quarantined() {
        let dir = tempfile::tempdir().unwrap();
        let folder: JsonFolder<Note> = JsonFolder::open(dir.path()).unwrap();
        let note = Note {
            id: ids::new_id(Note::PREFIX, chrono::Utc::now()),
            text: "the key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789".into(),
        };
        folder.save(&note).unwrap();
        let written = fs::read_to_string(folder.path(&note.id).unwrap()).unwrap();
        assert!(!written.contains("sk-ant-api03"), "{written}");
        fs::write(
            dir.path().join("notes/note_20260101_000000_deadbeef.json"),
            b"{ torn",
        )
        .unwrap();
        // A file whose name does not match its content is not trusted either.
        let other = Note {
            id: "note_20260101_000000_0000beef".into(),
            text: "x".into(),
        };
        fs::write(
            dir.path().join("notes/note_20260101_000000_00000001.json"),
            serde_json::to_vec(&other).unwrap(),
        )
        .unwrap();
        let loaded = folder.load().unwrap();
        assert_eq!(loaded.records.len(), 1);
        assert_eq!(loaded.records[0].1.id, note.id);
        assert_eq!(loaded.quarantined.len(), 2);
        assert!(dir.path().join("quarantine").read_dir().unwrap().count() >= 2);
        folder.delete(&note.id).unwrap();
        assert!(folder.load().unwrap().records.is_empty());
        assert!(matches!(
            folder.delete("../../etc/passwd"),
            Err(StoreError::InvalidId(_))
        ));
    }
}
