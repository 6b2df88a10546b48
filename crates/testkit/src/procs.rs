//! Other processes as a test sees them, on Linux and macOS alike: `/proc` exists on Linux only,
//! and a check that reads it would pass without looking on macOS.

use std::process::Command;

/// Whether process `pid` has ended: gone, or a zombie its parent has not reaped yet. Asks
/// `ps` (POSIX), which both systems have.
pub fn ended(pid: u32) -> bool {
    let out = Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .expect("ps runs");
    let state = String::from_utf8_lossy(&out.stdout);
    let state = state.trim();
    state.is_empty() || state.starts_with('Z')
}

/// How many files process `pid` holds open: `/proc/PID/fd` on Linux, `lsof` elsewhere.
pub fn open_files(pid: u32) -> usize {
    if cfg!(target_os = "linux") {
        return std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    }
    let out = Command::new("lsof")
        .args(["-p", &pid.to_string(), "-F", "f"])
        .output()
        .expect("lsof runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.strip_prefix('f')
                .is_some_and(|fd| fd.parse::<u32>().is_ok())
        })
        .count()
}

/// Resident memory of process `pid`, in MB, as `ps` reports it (POSIX, in KiB on both
/// systems); NaN when the process is gone.
pub fn resident_mb(pid: u32) -> f64 {
    let out = Command::new("ps")
        .args(["-o", "rss=", "-p", &pid.to_string()])
        .output()
        .expect("ps runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<f64>()
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_is_not_ended_and_a_reaped_one_is() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        assert!(!ended(child.id()));
        assert!(open_files(std::process::id()) > 2);
        let rss = resident_mb(child.id());
        assert!(
            rss > 0.0 && rss < 1024.0,
            "sleep's resident memory: {rss} MB"
        );
        child.kill().unwrap();
        // Killed, not yet reaped: a zombie counts as ended.
        while !ended(child.id()) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.wait().unwrap();
        assert!(ended(child.id()));
        assert!(resident_mb(child.id()).is_nan());
    }
}
