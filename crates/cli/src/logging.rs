//! The daemon's log (`.ai/processor.log`, appendix B format `[YYYY-MM-DD HH:MM:SS] LEVEL: message`),
//! rotated by size so it never fills a disk: `processor.log` → `processor.log.1` → ... and the
//! oldest dropped. Written off the hot path through tracing-appender's non-blocking writer.
//!
//! Events of the tracing target [`LLM_TARGET`] (one per LLM call, retry, malformed answer and
//! background decision: a structured AI logger) are written to the same file as JSON
//! lines instead, their fields at the top level, so a log aggregator can take them as they are.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::fmt::{format::Writer, FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Rotate past this size.
pub const MAX_LOG_BYTES: u64 = 5 * 1024 * 1024;
/// The tracing target whose events are logged as JSON lines.
pub const LLM_TARGET: &str = "llm";

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
        ai_smartness_proto::logfile::rotate(&self.path, self.keep)?;
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for RotatingFile {
    /// Writes `buf` with its secrets redacted: a log line quoting an error from a provider or
    /// a person's input must not be where a secret ends up on disk.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let redacted = match std::str::from_utf8(buf) {
            Ok(text) => ai_smartness_redact::redact(text).text.into_bytes(),
            Err(_) => String::from_utf8_lossy(buf).into_owned().into_bytes(),
        };
        if self.written + redacted.len() as u64 > self.max_bytes && self.written > 0 {
            // A failed rotation must not lose the line: keep appending to the current file.
            let _ = self.rotate();
        }
        self.file.write_all(&redacted)?;
        self.written += redacted.len() as u64;
        Ok(buf.len())
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
    let _ = tracing_subscriber::registry()
        .with(filter())
        .with(seed_layer(writer.clone()))
        .with(json_layer(writer))
        .try_init();
    Ok(guard)
}

/// `AI_SMARTNESS_LOG` (default `info`), with the PostgreSQL client held at `info` whatever it
/// asks: at `debug` it logs every statement's parameters, and a team search's parameters are a
/// prompt's words, which were never redacted (a prompt is only cleaned when captured).
fn filter() -> tracing_subscriber::EnvFilter {
    capped(
        tracing_subscriber::EnvFilter::try_from_env("AI_SMARTNESS_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
    )
}

fn capped(asked: tracing_subscriber::EnvFilter) -> tracing_subscriber::EnvFilter {
    asked.add_directive("tokio_postgres=info".parse().expect("a valid directive"))
}

/// Every event but the LLM's, in the appendix B format.
fn seed_layer<S, W>(writer: W) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt::layer()
        .event_format(SeedFormat)
        // A file, not a terminal: fields without colour escapes.
        .with_ansi(false)
        .with_writer(writer)
        .with_filter(filter_fn(|m| m.target() != LLM_TARGET))
}

/// The LLM's events as JSON lines: `{"timestamp", "level", "event", ...fields, "target"}`.
fn json_layer<S, W>(writer: W) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_writer(writer)
        .with_filter(filter_fn(|m| m.target() == LLM_TARGET))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ai_smartness_proto::logfile::numbered;

    /// What a test's subscriber wrote, kept in memory.
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

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

    #[test]
    fn the_postgres_client_never_logs_parameters_even_at_debug() {
        let lines = Buf::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::registry()
            .with(capped(tracing_subscriber::EnvFilter::new("debug")))
            .with(tracing_subscriber::fmt::layer().with_writer(move || writer.clone()));
        tracing::subscriber::with_default(subscriber, || {
            tracing::debug!(target: "tokio_postgres::query", "parameters: my prompt's words");
            tracing::debug!("context: ranking done");
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        assert!(text.contains("ranking done"), "{text}");
        assert!(!text.contains("my prompt's words"), "{text}");
    }

    #[test]
    fn secrets_never_reach_the_log_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.log");
        let mut f = RotatingFile::open(&p, 1 << 20, 2).unwrap();
        let line = b"[2026-11-24 10:00:00] ERROR: provider said: invalid key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345\n";
        f.write_all(line).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains("abcdefghijklmnopqrstuvwxyz012345"), "{text}");
        assert!(
            text.contains("ERROR: provider said: invalid key [REDACTED"),
            "{text}"
        );
    }

    #[test]
    fn llm_events_are_json_lines_and_the_rest_keeps_the_seed_format() {
        let buf = Buf::default();
        let w = buf.clone();
        let make = move || w.clone();
        let sub = tracing_subscriber::registry()
            .with(seed_layer(make.clone()))
            .with(json_layer(make));
        tracing::subscriber::with_default(sub, || {
            tracing::info!(kind = "minilm", "daemon started");
            tracing::info!(target: "llm", event = "llm_call", provider = "anthropic", input_tokens = 12u64);
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].ends_with("] INFO: daemon started kind=\"minilm\""),
            "{:?}",
            lines[0]
        );
        let v: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(
            (
                &v["event"],
                &v["provider"],
                &v["input_tokens"],
                &v["target"]
            ),
            (
                &"llm_call".into(),
                &"anthropic".into(),
                &12.into(),
                &"llm".into()
            )
        );
    }
}
