//! Path parameters: resolved like `realpath(3)` and kept inside the workspace, and the
//! helpers that name a missing file or folder for plan B.

use super::*;

impl Toolbox {
    /// The real path of a path parameter, which must lie inside the workspace.
    pub(super) fn resolve(&self, raw: &str) -> Result<PathBuf, ToolError> {
        if raw.contains('\0') {
            return Err(err(ErrorCode::InvalidParams, "a path cannot contain NUL"));
        }
        let raw = if raw.is_empty() { "." } else { raw };
        let joined = if Path::new(raw).is_absolute() {
            PathBuf::from(raw)
        } else {
            self.root.join(raw)
        };
        let real = real_path(&joined).map_err(|e| err(ErrorCode::Io, format!("{raw}: {e}")))?;
        if !real.starts_with(&self.root) {
            return Err(err(
                ErrorCode::PathForbidden,
                format!(
                    "{raw}: outside the workspace {} (resolves to {})",
                    self.root.display(),
                    real.display()
                ),
            ));
        }
        Ok(real)
    }

    /// A resolved path as the model should write it: relative to the workspace.
    pub(super) fn rel(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(r) if r.as_os_str().is_empty() => ".".to_string(),
            Ok(r) => r.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// The error for a missing file: `E_DIR_NOT_FOUND` when its folder is missing too.
    pub(super) fn file_not_found(&self, path: &Path) -> ToolError {
        match path.parent() {
            Some(parent) if !parent.is_dir() => err(
                ErrorCode::DirNotFound,
                format!(
                    "directory not found: {} (for {})",
                    self.rel(parent),
                    self.rel(path)
                ),
            ),
            _ => err(
                ErrorCode::FileNotFound,
                format!("file not found: {}", self.rel(path)),
            ),
        }
    }

    /// The file name plan B searches for after `E_FILE_NOT_FOUND`.
    pub(super) fn missing_file_name(&self, params: &Value) -> Option<String> {
        let raw = params.get("path")?.as_str()?;
        let name = Path::new(raw).file_name()?.to_string_lossy().into_owned();
        Some(name).filter(|n| !n.is_empty())
    }

    /// The directory name plan B searches for after `E_DIR_NOT_FOUND`: the topmost missing
    /// directory of the path (for `backend/src/main.rs` with no `backend`, `backend`), the one
    /// the model got wrong; what follows it is relative to it.
    pub(super) fn missing_dir_name(&self, tool: &str, params: &Value) -> Option<String> {
        let raw = params.get("path").and_then(Value::as_str).unwrap_or(".");
        let path = self.resolve(raw).ok()?;
        let mut dir = if tool == "read_file" {
            path.parent()?.to_path_buf()
        } else {
            path
        };
        let mut missing = None;
        while !dir.is_dir() {
            missing = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            if !dir.pop() {
                break;
            }
        }
        missing
    }

    /// Resolves a directory parameter: missing gives `E_DIR_NOT_FOUND`, a file `E_INVALID_PARAMS`.
    pub(super) fn resolve_dir(&self, raw: &str, tool: &str) -> Result<PathBuf, ToolError> {
        let path = self.resolve(raw)?;
        match fs::metadata(&path) {
            Ok(m) if m.is_dir() => Ok(path),
            Ok(_) => Err(err(
                ErrorCode::InvalidParams,
                format!("{} is a file, not a directory ({tool})", self.rel(&path)),
            )),
            Err(e) => Err(match e.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => err(
                    ErrorCode::DirNotFound,
                    format!("directory not found: {}", self.rel(&path)),
                ),
                _ => io_error(&e, &self.rel(&path), ErrorCode::DirNotFound),
            }),
        }
    }
}

pub(super) fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

/// `realpath(3)` that tolerates a missing tail: each existing component is looked at, symlinks
/// are followed (relative targets from their folder), `..` goes to the *real* parent. Missing
/// components are kept as written. Only a symlink loop is an error. `path` must be absolute.
pub(super) fn real_path(path: &Path) -> io::Result<PathBuf> {
    // The components still to walk, next on top.
    let mut todo: Vec<OsString> = Vec::new();
    push_components(&mut todo, path);
    let mut cur = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            // `cur` holds no symlink, so its lexical parent is its real parent.
            cur.pop();
            continue;
        }
        let next = cur.join(&part);
        match fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(io::Error::other("too many levels of symbolic links"));
                }
                let target = fs::read_link(&next)?;
                if target.is_absolute() {
                    cur = PathBuf::from("/");
                }
                push_components(&mut todo, &target);
            }
            // Existing, or missing (or unreadable: the real access reports that): go on.
            _ => cur = next,
        }
    }
    Ok(cur)
}

pub(super) fn push_components(todo: &mut Vec<OsString>, path: &Path) {
    for c in path.components().rev() {
        match c {
            Component::Normal(s) => todo.push(s.to_os_string()),
            Component::ParentDir => todo.push(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}
