//! Crash-safe file replacement.
//!
//! A plain `fs::write` that is interrupted (crash, kill -9, power loss) can leave a file empty or
//! half written, and the store would then lose a thread. Here the new content goes to a temporary
//! file in the same folder, is flushed to disk, and only then renamed over the target: a rename
//! within one file system is atomic, so a reader sees either the old file or the new one, never a
//! mix. The folder itself is fsynced afterwards so the rename (a change of the folder) survives a
//! power loss too.
//!
//! Temporary files are named `.NAME.tmp.PID.N`. A crash can leave one behind; the store removes
//! such strays when it loads (see [`remove_stray_temp_files`]). This is the project's one
//! atomic writer: the store, the config, the user rules and the CLI all write through it.

use serde::Serialize;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes temporary names unique among the writes of this process (the pid covers other ones).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The part of a temporary file's name that marks it as one.
const TEMP_MARK: &str = ".tmp.";

/// Replaces `path` with `bytes` atomically and durably (see the module doc).
///
/// On error the target is untouched and the temporary file is removed (best effort: a leftover
/// is cleaned at the next load).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_file(path, bytes)?;
    sync_dir(parent_dir(path))
}

/// [`write_atomic`] without the final folder fsync, for writing many files of one folder: call
/// [`sync_dir`] once after the last one, before relying on any of the renames being durable.
/// (Each file's own data is still fsynced before its rename.)
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_file_with(path, bytes, None)
}

/// [`replace_file`], the new file given `permissions` (a replaced script stays executable).
pub fn replace_file_with(
    path: &Path,
    bytes: &[u8],
    permissions: Option<fs::Permissions>,
) -> io::Result<()> {
    let dir = parent_dir(path);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} has no file name", path.display()),
        )
    })?;
    let tmp = dir.join(format!(
        ".{}{TEMP_MARK}{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    if let Err(e) = write_then_rename(&tmp, path, bytes, permissions) {
        // Nothing useful to do if this fails too: the load-time cleanup catches it.
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

fn write_then_rename(
    tmp: &Path,
    path: &Path,
    bytes: &[u8],
    permissions: Option<fs::Permissions>,
) -> io::Result<()> {
    // create_new: never write through a file some other writer is using.
    let mut file = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    file.write_all(bytes)?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    // The data must be on disk before the rename makes it visible under the real name,
    // otherwise a power loss could expose an empty file under the new name.
    file.sync_all()?;
    drop(file);
    rename_durable(tmp, path)
}

#[cfg(unix)]
fn rename_durable(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)
}

/// Windows: a folder cannot be opened as a file to fsync it (see [`sync_dir`]); the rename is
/// asked to reach the disk before it returns instead.
#[cfg(windows)]
fn rename_durable(from: &Path, to: &Path) -> io::Result<()> {
    use std::os::windows::ffi::OsStrExt;
    use windows_sys::Win32::Storage::FileSystem::{
        MoveFileExW, MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH,
    };
    let wide = |p: &Path| -> Vec<u16> { p.as_os_str().encode_wide().chain([0]).collect() };
    let (from, to) = (wide(from), wide(to));
    // SAFETY: two NUL-terminated wide strings that live through the call.
    let ok = unsafe {
        MoveFileExW(
            from.as_ptr(),
            to.as_ptr(),
            MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Serialises `value` as pretty JSON (with a final newline, for people reading the files) and
/// writes it with [`write_atomic`]. A serialisation failure is reported as `InvalidData`.
pub fn write_json_atomic<T: Serialize + ?Sized>(path: &Path, value: &T) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::from)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Removes `path` and fsyncs its folder, so a deleted thread cannot come back after a power
/// loss. A file that does not exist is not an error: the goal (no file) is reached.
pub fn remove_durable(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Ok(()) => sync_dir(parent_dir(path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Flushes a folder's entries (creations, renames, removals) to disk.
#[cfg(unix)]
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

/// Windows: a folder is no file to open and flush. NTFS journals its entries itself, and our
/// renames are written through ([`rename_durable`]).
#[cfg(windows)]
pub fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Whether `name` is one of our temporary file names (`.NAME.tmp.PID.N`).
pub fn is_temp_file_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARK)
}

/// The pid that made a temporary file, when its name carries one.
fn temp_file_pid(name: &str) -> Option<u32> {
    let (_, rest) = name.rsplit_once(TEMP_MARK)?;
    rest.split('.').next()?.parse().ok()
}

/// Removes the temporary files a crashed writer left in `dir` and returns their paths.
///
/// Files made by this very process are left alone: one of our own writes may be in flight.
/// A missing folder has nothing to clean.
pub fn remove_stray_temp_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let me = std::process::id();
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_temp_file_name(name) || temp_file_pid(name) == Some(me) {
            continue;
        }
        let path = entry.path();
        match fs::remove_file(&path) {
            Ok(()) => removed.push(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    if !removed.is_empty() {
        sync_dir(dir)?;
    }
    Ok(removed)
}

/// The folder holding `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn write_atomic_replaces_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(names(dir.path()), vec!["a.json"]);
    }

    #[test]
    fn write_json_atomic_writes_pretty_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.json");
        write_json_atomic(&path, &serde_json::json!({"a": [1, 2]})).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains('\n') && text.ends_with('\n'));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["a"][1], 2);
    }

    #[test]
    fn failed_write_cleans_its_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty folder: the rename fails after the temp file was written.
        let target = dir.path().join("busy");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("x"), b"x").unwrap();
        assert!(write_atomic(&target, b"data").is_err());
        assert_eq!(names(dir.path()), vec!["busy"]);
    }

    #[test]
    fn stray_temp_files_of_other_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join(".a.json.tmp.999999999.0");
        let mine = dir
            .path()
            .join(format!(".a.json.tmp.{}.7", std::process::id()));
        fs::write(&other, b"half").unwrap();
        fs::write(&mine, b"in flight").unwrap();
        fs::write(dir.path().join("a.json"), b"{}").unwrap();
        let removed = remove_stray_temp_files(dir.path()).unwrap();
        assert_eq!(removed, vec![other]);
        assert!(mine.exists());
    }

    #[test]
    fn remove_durable_accepts_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.json");
        remove_durable(&path).unwrap();
        fs::write(&path, b"x").unwrap();
        remove_durable(&path).unwrap();
        assert!(!path.exists());
    }
}
