//! The file tools: `read_file`, `list_dir`, `search_files`, `search_directory`, `write_file`,
//! and the bounded walk the searches share.

use super::*;
use serde::Serialize;

impl Toolbox {
    pub(super) fn read_file(&self, p: ReadFileParams) -> Outcome {
        let path = self.resolve(&p.path)?;
        let rel = self.rel(&path);
        let max = p
            .max_bytes
            .unwrap_or(DEFAULT_READ_BYTES)
            .clamp(1, MAX_READ_BYTES);
        let meta = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                return Err(self.file_not_found(&path).into())
            }
            Err(e) => return Err(io_error(&e, &rel, ErrorCode::FileNotFound).into()),
        };
        if meta.is_dir() {
            return Err(err(
                ErrorCode::InvalidParams,
                format!("{rel} is a directory: use list_dir"),
            )
            .into());
        }
        if !meta.is_file() {
            // Opening a FIFO would block until someone writes to it.
            return Err(err(
                ErrorCode::InvalidParams,
                format!("{rel} is not a regular file"),
            )
            .into());
        }
        let read = || -> io::Result<Vec<u8>> {
            let mut buf = Vec::new();
            File::open(&path)?.take(max + 1).read_to_end(&mut buf)?;
            Ok(buf)
        };
        let mut buf = read().map_err(|e| io_error(&e, &rel, ErrorCode::FileNotFound))?;
        let truncated = buf.len() as u64 > max;
        if truncated {
            buf.truncate(max as usize);
            // Do not end on half a character (it would show as U+FFFD).
            if let Err(e) = std::str::from_utf8(&buf) {
                if e.error_len().is_none() {
                    buf.truncate(e.valid_up_to());
                }
            }
        }
        done(FileRead {
            path: rel,
            content: String::from_utf8_lossy(&buf).into_owned(),
            size: meta.len(),
            truncated,
        })
    }

    pub(super) fn list_dir(&self, p: ListDirParams) -> Outcome {
        let dir = self.resolve_dir(p.path.as_deref().unwrap_or("."), "list_dir")?;
        let rel = self.rel(&dir);
        let reader = fs::read_dir(&dir).map_err(|e| io_error(&e, &rel, ErrorCode::DirNotFound))?;
        let mut entries: Vec<(String, &'static str, Option<u64>)> = Vec::new();
        for entry in reader.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // file_type does not follow symlinks: a link is shown as one, not as its target.
            let (kind, size) = match entry.file_type() {
                Ok(t) if t.is_dir() => ("dir", None),
                Ok(t) if t.is_file() => ("file", entry.metadata().ok().map(|m| m.len())),
                Ok(t) if t.is_symlink() => ("symlink", None),
                _ => ("other", None),
            };
            entries.push((name, kind, size));
        }
        entries.sort();
        let truncated = entries.len() > MAX_LIST_ENTRIES;
        entries.truncate(MAX_LIST_ENTRIES);
        let entries: Vec<DirEntry> = entries
            .into_iter()
            .map(|(name, kind, size)| DirEntry { name, kind, size })
            .collect();
        done(DirListing {
            path: rel,
            count: entries.len(),
            entries,
            truncated,
        })
    }

    pub(super) fn search_files(&self, p: SearchFilesParams) -> Outcome {
        let pattern = p.pattern.trim();
        if pattern.is_empty() {
            return Err(err(ErrorCode::InvalidParams, "search_files: empty pattern").into());
        }
        let base = self.resolve_dir(p.path.as_deref().unwrap_or("."), "search_files")?;
        let max = p
            .max_results
            .unwrap_or(MAX_FILE_MATCHES as u64)
            .clamp(1, MAX_FILE_MATCHES as u64) as usize;
        let (mut found, cut) = walk(&base, usize::MAX, pattern, false);
        rank(&mut found);
        let truncated = cut || found.len() > max;
        found.truncate(max);
        let matches: Vec<Match> = found
            .iter()
            .map(|m| Match::of(m, self.rel(&m.path)))
            .collect();
        let suggestion = found.first().map(|m| self.rel(&m.path));
        done(FilesFound {
            pattern: pattern.to_string(),
            path: self.rel(&base),
            count: matches.len(),
            matches,
            truncated,
            suggestion,
        })
    }

    pub(super) fn search_directory(&self, p: SearchDirectoryParams) -> Outcome {
        let query = p.name.trim();
        if query.is_empty() || query.contains('/') || query.contains('\0') {
            return Err(err(
                ErrorCode::InvalidParams,
                "search_directory: `name` must be a non-empty directory name, not a path",
            )
            .into());
        }
        let raw = p.base.as_deref().unwrap_or("");
        if raw.contains('\0') {
            return Err(err(ErrorCode::InvalidParams, "a path cannot contain NUL").into());
        }
        let joined = if raw.is_empty() {
            self.root.clone()
        } else if Path::new(raw).is_absolute() {
            PathBuf::from(raw)
        } else {
            self.root.join(raw)
        };
        let base = real_path(&joined).map_err(|e| err(ErrorCode::Io, format!("{raw}: {e}")))?;
        if !self.search_roots.iter().any(|r| base.starts_with(r)) {
            let allowed: Vec<String> = self
                .search_roots
                .iter()
                .map(|r| r.display().to_string())
                .collect();
            return Err(err(
                ErrorCode::PathForbidden,
                format!(
                    "{} is not under an allowed search base ({})",
                    base.display(),
                    allowed.join(", ")
                ),
            )
            .into());
        }
        match fs::metadata(&base) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(err(
                    ErrorCode::InvalidParams,
                    format!("{} is a file, not a directory", base.display()),
                )
                .into())
            }
            Err(e) => {
                return Err(
                    io_error(&e, &base.display().to_string(), ErrorCode::PathNotFound).into(),
                )
            }
        }
        let max_depth = p.max_depth.unwrap_or(MAX_DIR_DEPTH).clamp(1, MAX_DIR_DEPTH);
        let (mut found, _) = walk(&base, max_depth as usize, query, true);
        rank(&mut found);
        found.truncate(MAX_DIR_MATCHES);
        let matches: Vec<Match> = found
            .iter()
            .map(|m| Match::of(m, m.path.display().to_string()))
            .collect();
        let suggestion = found.first().map(|m| m.path.display().to_string());
        done(DirsFound {
            query: query.to_string(),
            base: base.display().to_string(),
            max_depth,
            count: matches.len(),
            matches,
            suggestion,
        })
    }

    pub(super) fn write_file(&self, p: WriteFileParams) -> Outcome {
        let path = self.resolve(&p.path)?;
        let rel = self.rel(&path);
        if path == self.root {
            return Err(err(
                ErrorCode::InvalidParams,
                "write_file: a file path is needed",
            )
            .into());
        }
        let old = match fs::metadata(&path) {
            Ok(m) if m.is_dir() => {
                return Err(err(ErrorCode::InvalidParams, format!("{rel} is a directory")).into())
            }
            Ok(m) => Some(m.permissions()),
            Err(_) => None,
        };
        // `path` is real: its missing components are plain names, so creating them stays inside.
        let parent = path.parent().unwrap_or(&self.root);
        fs::create_dir_all(parent)
            .map_err(|e| io_error(&e, &self.rel(parent), ErrorCode::DirNotFound))?;
        let created = old.is_none();
        write_replace(&path, p.content.as_bytes(), old)
            .map_err(|e| io_error(&e, &rel, ErrorCode::DirNotFound))?;
        done(FileWritten {
            path: rel,
            bytes: p.content.len(),
            created,
        })
    }
}

/// `read_file`'s result.
#[derive(Serialize)]
struct FileRead {
    path: String,
    content: String,
    size: u64,
    truncated: bool,
}

/// `list_dir`'s result.
#[derive(Serialize)]
struct DirListing {
    path: String,
    count: usize,
    entries: Vec<DirEntry>,
    truncated: bool,
}

#[derive(Serialize)]
struct DirEntry {
    name: String,
    /// `dir`, `file`, `symlink` or `other`.
    kind: &'static str,
    /// Files only.
    size: Option<u64>,
}

/// `search_files`'s result.
#[derive(Serialize)]
struct FilesFound {
    pattern: String,
    path: String,
    matches: Vec<Match>,
    count: usize,
    truncated: bool,
    suggestion: Option<String>,
}

/// `search_directory`'s result: exactly the protocol's keys.
#[derive(Serialize)]
struct DirsFound {
    query: String,
    base: String,
    max_depth: u64,
    matches: Vec<Match>,
    count: usize,
    suggestion: Option<String>,
}

/// One search hit as the model reads it.
#[derive(Serialize)]
struct Match {
    path: String,
    name: String,
    depth: usize,
}

impl Match {
    fn of(hit: &Hit, path: String) -> Match {
        Match {
            path,
            name: hit.name.clone(),
            depth: hit.depth,
        }
    }
}

/// `write_file`'s result.
#[derive(Serialize)]
struct FileWritten {
    path: String,
    bytes: usize,
    created: bool,
}

/// One search hit.
pub(super) struct Hit {
    pub(super) path: PathBuf,
    pub(super) name: String,
    pub(super) depth: usize,
    pub(super) exact: bool,
}

/// Walks `base` (with `ignore`: what the workspace's `.gitignore` and `.ignore` files leave out
/// is not searched, symlinks are not followed, [`SKIPPED_DIRS`] are skipped, hidden files are
/// searched like any other) collecting files (or directories, with `dirs`) whose name contains
/// `query`, case-insensitively, down to `max_depth` (children of `base` are at depth 1). Returns
/// the hits and whether the walk was cut at [`MAX_VISITED`]. Unreadable directories are skipped.
pub(super) fn walk(base: &Path, max_depth: usize, query: &str, dirs: bool) -> (Vec<Hit>, bool) {
    let query = query.to_lowercase();
    let mut hits = Vec::new();
    let walker = ignore::WalkBuilder::new(base)
        .hidden(false)
        .follow_links(false)
        // A sandbox copy has no `.git`: its `.gitignore` still says what is not source.
        .require_git(false)
        .git_global(false)
        .max_depth(Some(max_depth))
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| {
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && e.file_name()
                    .to_str()
                    .is_some_and(|n| SKIPPED_DIRS.contains(&n)))
        })
        .build();
    let mut visited = 0usize;
    // Unreadable entries come as errors: skipped.
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        visited += 1;
        if visited > MAX_VISITED {
            return (hits, true);
        }
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if !(kind.is_dir() || kind.is_file()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let lower = name.to_lowercase();
        if kind.is_dir() == dirs && lower.contains(&query) {
            hits.push(Hit {
                path: entry.path().to_path_buf(),
                exact: lower == query,
                name,
                depth: entry.depth(),
            });
        }
    }
    (hits, false)
}

/// Best first: exact names, then the shallowest, then by path.
pub(super) fn rank(hits: &mut [Hit]) {
    hits.sort_by(|a, b| (!a.exact, a.depth, &a.path).cmp(&(!b.exact, b.depth, &b.path)));
}

/// Replaces `path` with `bytes` through a temporary file in the same folder and a rename, so a
/// reader (or a crash) sees the old file or the new one, never half of it. An existing file
/// keeps its permissions (a script stays executable).
pub(super) fn write_replace(
    path: &Path,
    bytes: &[u8],
    perms: Option<fs::Permissions>,
) -> io::Result<()> {
    ai_smartness_proto::atomic::replace_file_with(path, bytes, perms)
}
