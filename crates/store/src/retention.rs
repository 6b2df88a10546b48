//! Limits on what piles up beside the memory: ended assistant sessions, finished workflow runs,
//! synthesis files and quarantined files are each kept up to a count and an age
//! ([`Keep`], set in `config.json` under `retention`), and the periodic prune deletes the rest.
//! Threads and bridges are not concerned: decay and the quota govern them.

use ai_smartness_records::retention::Keep;
use chrono::{DateTime, Utc};
use std::fs;
use std::io;
use std::path::Path;
use std::time::SystemTime;

/// Of `items`, each with the time it ended, those `keep` no longer keeps: older than its age,
/// or beyond its count from the newest. Oldest first.
pub fn expired<T>(mut items: Vec<(DateTime<Utc>, T)>, keep: Keep, now: DateTime<Utc>) -> Vec<T> {
    items.sort_by_key(|item| std::cmp::Reverse(item.0));
    let oldest_kept = now - chrono::Duration::days(i64::from(keep.max_age_days));
    let mut out: Vec<T> = items
        .into_iter()
        .enumerate()
        .filter(|(rank, (at, _))| *rank >= keep.max_count || *at < oldest_kept)
        .map(|(_, (_, item))| item)
        .collect();
    out.reverse();
    out
}

/// Suffix of the note that explains why a file was quarantined; it goes with its file.
const REASON_SUFFIX: &str = ".reason.txt";

/// Deletes the files of `dir` (not its folders) that `keep` no longer keeps, judged by their
/// modification time; with `notes`, a file's `NAME.reason.txt` goes with it and does not count
/// on its own. Files whose name `is_record` refuses are left alone; `keep_newest` spares the
/// newest whatever its age (the synthesis a continuation reads). Returns how many were deleted;
/// a missing folder is empty.
pub fn prune_folder(
    dir: &Path,
    keep: Keep,
    now: DateTime<Utc>,
    notes: bool,
    keep_newest: bool,
    is_record: impl Fn(&str) -> bool,
) -> io::Result<usize> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let meta = entry.metadata()?;
        if !meta.is_file() || (notes && name.ends_with(REASON_SUFFIX)) || !is_record(&name) {
            continue;
        }
        let modified: DateTime<Utc> = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH).into();
        files.push((modified, name));
    }
    let newest = files.iter().max().map(|(_, n)| n.clone());
    let mut deleted = 0;
    for name in expired(files, keep, now) {
        if keep_newest && newest.as_ref() == Some(&name) {
            continue;
        }
        remove_if_present(&dir.join(&name))?;
        if notes {
            remove_if_present(&dir.join(format!("{name}{REASON_SUFFIX}")))?;
        }
        deleted += 1;
    }
    if deleted > 0 {
        ai_smartness_proto::atomic::sync_dir(dir)?;
    }
    Ok(deleted)
}

/// Removes `path`; one already gone is not an error (the goal, no file, is reached).
pub fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn day(d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, d, 12, 0, 0).unwrap()
    }

    #[test]
    fn the_oldest_go_first_past_the_count_or_the_age() {
        let items = (1..=10).map(|d| (day(d), d)).collect::<Vec<_>>();
        let keep = |max_count, max_age_days| Keep {
            max_count,
            max_age_days,
        };
        assert_eq!(
            expired(items.clone(), keep(3, 365), day(10)),
            (1..=7).collect::<Vec<_>>()
        );
        assert_eq!(
            expired(items.clone(), keep(100, 4), day(10)),
            vec![1, 2, 3, 4, 5]
        );
        assert_eq!(
            expired(items.clone(), keep(100, 365), day(10)),
            Vec::<u32>::new()
        );
        assert_eq!(expired(items, keep(0, 365), day(10)).len(), 10);
    }

    #[test]
    fn a_folder_keeps_its_newest_and_quarantine_notes_go_with_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let set_age = |name: &str, days_ago: u64| {
            let path = dir.path().join(name);
            fs::write(&path, name).unwrap();
            let at = SystemTime::now() - std::time::Duration::from_secs(days_ago * 86_400);
            fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(at)
                .unwrap();
        };
        set_age("a.json", 40);
        set_age("a.json.reason.txt", 40);
        set_age("b.json", 1);
        set_age("b.json.reason.txt", 1);
        set_age("other.txt", 400);
        let keep = Keep {
            max_count: 10,
            max_age_days: 30,
        };
        let n = prune_folder(dir.path(), keep, Utc::now(), true, false, |n| {
            n.ends_with(".json")
        })
        .unwrap();
        assert_eq!(n, 1);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["b.json", "b.json.reason.txt", "other.txt"]);

        // Everything is past its age, but the newest stays when asked.
        let old = Keep {
            max_count: 10,
            max_age_days: 0,
        };
        let later = Utc::now() + chrono::Duration::days(2);
        assert_eq!(
            prune_folder(dir.path(), old, later, false, true, |n| n
                .ends_with(".json"))
            .unwrap(),
            0
        );
        assert_eq!(
            prune_folder(dir.path(), old, later, false, false, |n| n
                .ends_with(".json"))
            .unwrap(),
            1
        );
        assert_eq!(
            prune_folder(
                &dir.path().join("missing"),
                old,
                later,
                false,
                false,
                |_| true
            )
            .unwrap(),
            0
        );
    }
}
