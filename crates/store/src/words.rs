//! `db/word_vectors.bin`: the embedding of each word the memory uses, so that a restart does
//! not embed the whole vocabulary again (see the engine's `retrieve::related`).
//!
//! ```text
//! header  AIWV1\n, the embedder (1 byte), the dimension (u16, little endian)
//! row     the word's length in bytes (u8), the word (UTF-8), its vector (dim × i8)
//! ```
//!
//! Rows are only ever appended. The file is derived data: a row cut short by a crash is cut
//! off at the next load, and a file from another embedder or that cannot be read is started
//! over (its words are embedded again). It is never worth failing the daemon for.

use ai_smartness_vectors::quant::QVec;
use ai_smartness_vectors::EmbedderKind;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file's name under `db/`.
const FILE_NAME: &str = "word_vectors.bin";
const MAGIC: &[u8] = b"AIWV1\n";
const HEADER_LEN: usize = MAGIC.len() + 3;
/// Longer words are not kept (a row's length is one byte).
pub const MAX_WORD_BYTES: usize = 255;

/// The file, and a lock so two writers never interleave their rows.
#[derive(Debug)]
pub struct WordVectorFile {
    path: PathBuf,
    header: Vec<u8>,
    dim: usize,
    /// Appends come from the capture worker and the start-up backlog at once.
    lock: Mutex<()>,
}

impl WordVectorFile {
    /// The file of a store's `db/` folder, for vectors of `kind`.
    pub fn in_db(db_dir: &Path, kind: EmbedderKind) -> WordVectorFile {
        WordVectorFile::new(&db_dir.join(FILE_NAME), kind, ai_smartness_vectors::DIM)
    }

    pub fn new(path: &Path, kind: EmbedderKind, dim: usize) -> WordVectorFile {
        let mut header = MAGIC.to_vec();
        header.push(match kind {
            // Comparable vectors (see `EmbedderKind::comparable_with`): one file serves both.
            EmbedderKind::MiniLm | EmbedderKind::MiniLmInt8 => 1,
            EmbedderKind::HashedTfidf => 2,
        });
        header.extend_from_slice(&(dim as u16).to_le_bytes());
        WordVectorFile {
            path: path.to_path_buf(),
            header,
            dim,
            lock: Mutex::new(()),
        }
    }

    /// Every whole row. A torn last row is cut off; a file of another embedder or dimension,
    /// or that cannot be parsed, is removed (all of it is derived from the memory).
    pub fn load(&self) -> Vec<(String, QVec)> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                tracing::warn!("cannot read {}: {e}", self.path.display());
                return Vec::new();
            }
        };
        if bytes.len() < HEADER_LEN || bytes[..HEADER_LEN] != self.header[..] {
            tracing::info!(
                "{} was made by another embedder: its words will be embedded again",
                self.path.display()
            );
            let _ = fs::remove_file(&self.path);
            return Vec::new();
        }
        let (rows, valid) = parse_rows(&bytes[HEADER_LEN..], self.dim);
        let end = HEADER_LEN + valid;
        if end < bytes.len() {
            tracing::warn!(
                "{}: {} bytes after the last whole row cut off",
                self.path.display(),
                bytes.len() - end
            );
            let cut = OpenOptions::new()
                .write(true)
                .open(&self.path)
                .and_then(|f| f.set_len(end as u64));
            if let Err(e) = cut {
                tracing::warn!("cannot cut {}, starting over: {e}", self.path.display());
                let _ = fs::remove_file(&self.path);
                return Vec::new();
            }
        }
        rows
    }

    /// Appends rows (words too long for a row, or vectors of the wrong size, are skipped).
    pub fn append(&self, rows: &[(String, QVec)]) -> io::Result<()> {
        let mut buf = Vec::with_capacity(rows.len() * (self.dim + 12));
        for (word, v) in rows {
            if word.is_empty() || word.len() > MAX_WORD_BYTES || v.len() != self.dim {
                continue;
            }
            buf.push(word.len() as u8);
            buf.extend_from_slice(word.as_bytes());
            buf.extend(v.iter().map(|x| *x as u8));
        }
        if buf.is_empty() {
            return Ok(());
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        if f.metadata()?.len() == 0 {
            f.write_all(&self.header)?;
        }
        // One write: a crash leaves whole rows and at most one torn one, cut at the next load.
        f.write_all(&buf)
    }
}

/// The whole rows of `body`, and how many of its bytes they span.
fn parse_rows(body: &[u8], dim: usize) -> (Vec<(String, QVec)>, usize) {
    let mut rows = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let len = usize::from(body[at]);
        let end = at + 1 + len + dim;
        if len == 0 || end > body.len() {
            break;
        }
        let Ok(word) = std::str::from_utf8(&body[at + 1..at + 1 + len]) else {
            break;
        };
        let v: Vec<i8> = body[at + 1 + len..end].iter().map(|b| *b as i8).collect();
        rows.push((word.to_string(), QVec::from(v)));
        at = end;
    }
    (rows, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(word: &str, x: i8) -> (String, QVec) {
        (word.to_string(), QVec::from(vec![x; 4]))
    }

    #[test]
    fn rows_survive_a_restart_and_a_torn_row_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("word_vectors.bin");
        let file = WordVectorFile::new(&path, EmbedderKind::MiniLm, 4);
        assert!(file.load().is_empty(), "no file yet");
        file.append(&[row("violin", 1), row("clarinet", -2)])
            .unwrap();
        file.append(&[row("guitar", 3), (String::new(), QVec::from(vec![0; 4]))])
            .unwrap();
        // A crash in the middle of a row.
        let whole = fs::metadata(&path).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[5, b'p', b'i']).unwrap();
        let again = WordVectorFile::new(&path, EmbedderKind::MiniLm, 4);
        let rows = again.load();
        assert_eq!(
            rows,
            vec![row("violin", 1), row("clarinet", -2), row("guitar", 3)]
        );
        assert_eq!(
            fs::metadata(&path).unwrap().len(),
            whole,
            "torn row cut off"
        );
        again.append(&[row("piano", 4)]).unwrap();
        assert_eq!(again.load().len(), 4);
    }

    #[test]
    fn a_file_of_another_embedder_or_garbage_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("word_vectors.bin");
        WordVectorFile::new(&path, EmbedderKind::HashedTfidf, 4)
            .append(&[row("violin", 1)])
            .unwrap();
        let minilm = WordVectorFile::new(&path, EmbedderKind::MiniLm, 4);
        assert!(minilm.load().is_empty());
        assert!(!path.exists(), "removed, to be made again");
        fs::write(&path, b"\x00garbage").unwrap();
        assert!(minilm.load().is_empty());
        minilm.append(&[row("piano", 2)]).unwrap();
        assert_eq!(minilm.load(), vec![row("piano", 2)]);
    }
}
