//! The daemon's log (`.ai/processor.log`, appendix B format `[YYYY-MM-DD HH:MM:SS] LEVEL: message`),
//! rotated by size so it never fills a disk: `processor.log` → `processor.log.1` → ... and the
//! oldest dropped. Written off the hot path through tracing-appender's non-blocking writer.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::{format::Writer, FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Rotate past this size.
pub const MAX_LOG_BYTES: u64 = 5 * 1024 * 1024;

/// A file that rotates itself when it grows past a size.
pub struct RotatingFile {
    path: PathBuf,
    file: File,
    written: u64,
    max_bytes: u64,
    keep: usize,
}

impl RotatingFile {
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> io::Result<RotatingFile> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let written = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            file,
            written,
            max_bytes,
            keep: keep.max(1),
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        for i in (1..self.keep).rev() {
            let from = numbered(&self.path, i);
            if from.exists() {
                std::fs::rename(&from, numbered(&self.path, i + 1))?;
            }
        }
        std::fs::rename(&self.path, numbered(&self.path, 1))?;
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

fn numbered(path: &Path, i: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{i}"));
    PathBuf::from(s)
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written + buf.len() as u64 > self.max_bytes && self.written > 0 {
            // A failed rotation must not lose the line: keep appending to the current file.
            let _ = self.rotate();
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// `[YYYY-MM-DD HH:MM:SS] LEVEL: message key=value`.
pub struct SeedFormat;

impl<S, N> FormatEvent<S, N> for SeedFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let now = chrono::Local::now().format("%Y-%m-%d %H:%M:%S");
        write!(w, "[{now}] {}: ", event.metadata().level())?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// Installs the global subscriber writing to `path`; keep the guard alive for the process.
pub fn init_file(
    path: &Path,
    keep: usize,
) -> io::Result<tracing_appender::non_blocking::WorkerGuard> {
    let file = RotatingFile::open(path, MAX_LOG_BYTES, keep)?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter = tracing_subscriber::EnvFilter::try_from_env("AI_SMARTNESS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .event_format(SeedFormat)
        .with_writer(writer)
        .try_init();
    Ok(guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_n_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.log");
        let mut f = RotatingFile::open(&p, 100, 2).unwrap();
        for _ in 0..10 {
            f.write_all(&[b'a'; 60]).unwrap();
        }
        assert!(p.exists());
        assert!(numbered(&p, 1).exists());
        assert!(numbered(&p, 2).exists());
        assert!(!numbered(&p, 3).exists());
    }
}
