//! Compaction syntheses: one file each, the newest readable one read back.

use super::*;

impl Store {
    /// Writes `synthesis/synthesis_YYYYMMdd_HHMMSS.json` (a second save in the same second
    /// replaces the first) and returns its path.
    pub fn save_synthesis(
        &self,
        at: DateTime<Utc>,
        synthesis: &impl serde::Serialize,
    ) -> Result<PathBuf, StoreError> {
        let path = self.synthesis_dir.join(format!(
            "{SYNTHESIS_PREFIX}{}.json",
            at.format("%Y%m%d_%H%M%S")
        ));
        let value = serde_json::to_value(synthesis).map_err(|source| StoreError::Json {
            path: path.clone(),
            source,
        })?;
        // Its fields come from outside too (the session id, the trigger, an LLM's text).
        let (value, _) = ai_smartness_capture::admit::redact_json(value);
        write_pretty(&path, &value)?;
        Ok(path)
    }

    /// The newest readable synthesis; an unreadable one is quarantined and the next older one
    /// is tried.
    pub fn latest_synthesis(&self) -> Result<Option<serde_json::Value>, StoreError> {
        let dir = &self.synthesis_dir;
        for name in synthesis_names(dir)? {
            let path = dir.join(&name);
            let parsed = fs::read(&path)
                .map_err(|e| format!("unreadable: {e}"))
                .and_then(|bytes| {
                    serde_json::from_slice(&bytes).map_err(|e| format!("invalid JSON: {e}"))
                });
            match parsed {
                Ok(value) => return Ok(Some(value)),
                Err(reason) => {
                    self.quarantine(&path, &reason)?;
                }
            }
        }
        Ok(None)
    }
}

/// The newest readable synthesis under `db_dir` (a project's `.ai/db/`), with its path. Read
/// only, for readers without the daemon's [`Store`]: an unreadable file is skipped, not
/// quarantined, and a missing folder means no synthesis.
pub fn read_latest_synthesis(
    db_dir: &Path,
) -> Result<Option<(PathBuf, serde_json::Value)>, StoreError> {
    let dir = db_dir.join("synthesis");
    for name in synthesis_names(&dir)? {
        let path = dir.join(&name);
        let parsed = fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        if let Some(value) = parsed {
            return Ok(Some((path, value)));
        }
    }
    Ok(None)
}

/// The synthesis file names in `dir`, newest first (none when `dir` does not exist).
pub(super) fn synthesis_names(dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_at(dir)(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_at(dir))?;
        if let Some(name) = entry.file_name().to_str() {
            if is_synthesis_name(name) {
                names.push(name.to_owned());
            }
        }
    }
    // The timestamp format sorts chronologically as text.
    names.sort_unstable_by(|a, b| b.cmp(a));
    Ok(names)
}

/// `synthesis_YYYYMMdd_HHMMSS.json`.
pub(super) fn is_synthesis_name(name: &str) -> bool {
    let Some(stamp) = name
        .strip_prefix(SYNTHESIS_PREFIX)
        .and_then(|r| r.strip_suffix(".json"))
    else {
        return false;
    };
    let b = stamp.as_bytes();
    b.len() == 15
        && b[8] == b'_'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 8 || c.is_ascii_digit())
}
