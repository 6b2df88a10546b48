//! The quarantine: unusable data copied aside with the reason, never deleted.

use super::*;

impl Store {
    /// Moves `path` into `quarantine/` under a timestamped name, writes the reason beside it
    /// (`NAME.reason.txt`) and logs a warning. Returns the new path.
    pub fn quarantine(&self, path: &Path, reason: &str) -> Result<PathBuf, StoreError> {
        quarantine_file(&self.quarantine_dir, path, reason)
    }
}

/// A free name `quarantine/STAMP_NAME[.N]` whose reason file is free too.
pub(super) fn quarantine_target(quarantine_dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    // Wall clock: a file name for people sorting the quarantine, not memory logic.
    let stamp = Utc::now().format("%Y%m%d_%H%M%S%.3f");
    let mut n = 0u32;
    loop {
        let file = if n == 0 {
            format!("{stamp}_{name}")
        } else {
            format!("{stamp}_{name}.{n}")
        };
        let dest = quarantine_dir.join(&file);
        let reason = quarantine_dir.join(format!("{file}.reason.txt"));
        if !dest.exists() && !reason.exists() {
            return (dest, reason);
        }
        n += 1;
    }
}

pub(super) fn reason_text(original: &Path, reason: &str) -> String {
    format!(
        "file: {}\nquarantined at: {}\nreason: {reason}\n",
        original.display(),
        // Wall clock: when it really happened, for the person reading the reason.
        Utc::now().to_rfc3339()
    )
}

/// Moves a file into quarantine (see [`Store::quarantine`]).
pub(crate) fn quarantine_file(
    quarantine_dir: &Path,
    path: &Path,
    reason: &str,
) -> Result<PathBuf, StoreError> {
    fs::create_dir_all(quarantine_dir).map_err(io_at(quarantine_dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unnamed".to_owned());
    let (dest, reason_path) = quarantine_target(quarantine_dir, &name);
    // The reason first: a crash in between leaves the file in place, to be quarantined again.
    write_atomic(&reason_path, reason_text(path, reason).as_bytes())
        .map_err(io_at(&reason_path))?;
    if let Err(e) = fs::rename(path, &dest) {
        if e.kind() != io::ErrorKind::CrossesDevices {
            return Err(io_at(path)(e));
        }
        // A quarantine folder on another file system (a symlink): copy, then remove.
        fs::copy(path, &dest).map_err(io_at(&dest))?;
        fs::File::open(&dest)
            .and_then(|f| f.sync_all())
            .map_err(io_at(&dest))?;
        atomic::remove_durable(path).map_err(io_at(path))?;
    }
    atomic::sync_dir(quarantine_dir).map_err(io_at(quarantine_dir))?;
    let source_dir = atomic::parent_dir(path);
    atomic::sync_dir(source_dir).map_err(io_at(source_dir))?;
    tracing::warn!(
        file = %path.display(),
        moved_to = %dest.display(),
        reason,
        "quarantined a file that could not be used"
    );
    Ok(dest)
}

/// Saves a copy of `bytes` (e.g. one bad journal line) into quarantine as `STAMP_NAME`, with its
/// reason file, and logs a warning. Used where the original must stay in place.
pub(crate) fn quarantine_bytes(
    quarantine_dir: &Path,
    name: &str,
    origin: &Path,
    bytes: &[u8],
    reason: &str,
) -> Result<PathBuf, StoreError> {
    fs::create_dir_all(quarantine_dir).map_err(io_at(quarantine_dir))?;
    let (dest, reason_path) = quarantine_target(quarantine_dir, name);
    write_atomic(&reason_path, reason_text(origin, reason).as_bytes())
        .map_err(io_at(&reason_path))?;
    write_atomic(&dest, bytes).map_err(io_at(&dest))?;
    tracing::warn!(
        file = %origin.display(),
        copied_to = %dest.display(),
        reason,
        "quarantined unusable data"
    );
    Ok(dest)
}
