//! Log files that never fill a disk: past a size, `NAME` becomes `NAME.1`, `NAME.1` becomes
//! `NAME.2` and so on, the oldest beyond the count kept dropped. The daemon's log and the hooks'
//! logs rotate the same way, through this.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// `path` with `.i` appended (`processor.log.2`).
pub fn numbered(path: &Path, i: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{i}"));
    PathBuf::from(s)
}

/// Shifts `path` to `path.1` (and each older file one further), keeping `keep` old files.
pub fn rotate(path: &Path, keep: usize) -> io::Result<()> {
    let keep = keep.max(1);
    for i in (1..keep).rev() {
        let from = numbered(path, i);
        if from.exists() {
            fs::rename(&from, numbered(path, i + 1))?;
        }
    }
    fs::rename(path, numbered(path, 1))
}

/// Appends `line` to `path` in one write (concurrent writers on an `O_APPEND` file never
/// interleave within a line), rotating first when the file is past `max_bytes`.
pub fn append_line(path: &Path, line: &str, max_bytes: u64, keep: usize) -> io::Result<()> {
    if fs::metadata(path).is_ok_and(|m| m.len() > max_bytes) {
        // A failed rotation must not lose the line: append to the current file.
        let _ = rotate(path, keep);
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_rotate_past_the_size_and_the_oldest_go() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("capture.log");
        for i in 0..6 {
            append_line(&log, &format!("line {i} {}\n", "x".repeat(20)), 40, 2).unwrap();
        }
        let read = |p: &Path| fs::read_to_string(p).unwrap_or_default();
        assert!(read(&log).contains("line 5"));
        assert!(read(&numbered(&log, 1)).contains("line 3"));
        assert!(read(&numbered(&log, 2)).contains("line 1"));
        assert!(!numbered(&log, 3).exists(), "two old files kept");
    }
}
