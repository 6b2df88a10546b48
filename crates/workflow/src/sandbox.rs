//! A throwaway copy of the workspace, for sandbox mode (`EXECUTE_MODE=sandbox`): the
//! executor works on the copy and the real workspace is untouched.
//!
//! What is copied:
//! - regular files (with their permissions) and directories;
//! - symlinks, as links: a relative link keeps pointing at the same place within the copy; an
//!   absolute link into the workspace is rebased onto the copy, so the tools' path check
//!   (which follows links) does not see it as leaving the sandbox;
//! - `.git`, so git tools work. A `.git` *file* (a linked worktree or a submodule) is turned into
//!   an independent repository: refs, index and HEAD are copied and the objects are borrowed
//!   read-only through `objects/info/alternates`. A commit made in the sandbox therefore never
//!   moves a branch of the real repository.
//!
//! What is skipped: `target/` and `.ai/` at the top, any `node_modules/`, any directory marked as
//! a cache by a `CACHEDIR.TAG` file (cargo's build directories), sockets and other special files,
//! and the sandbox itself when its parent lies inside the workspace.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Makes sandbox names unique within the process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A copy of a workspace, removed when dropped unless [`Sandbox::keep`] is called.
#[derive(Debug)]
pub struct Sandbox {
    path: PathBuf,
    keep: bool,
}

impl Sandbox {
    /// Copies `workspace` into a new directory under `parent` (created if needed), named
    /// `<workspace name>.sandbox-<pid>-<time>-<n>`. On error, the partial copy is removed.
    pub fn create(workspace: &Path, parent: &Path) -> io::Result<Sandbox> {
        let src = workspace
            .canonicalize()
            .map_err(|e| context(e, workspace))?;
        if !src.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{}: not a directory", src.display()),
            ));
        }
        fs::create_dir_all(parent).map_err(|e| context(e, parent))?;
        let parent = parent.canonicalize().map_err(|e| context(e, parent))?;
        let stem = src
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workspace".to_string());
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = loop {
            let candidate = parent.join(format!(
                "{stem}.sandbox-{}-{nanos}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            // create_dir, not create_dir_all: an existing directory is never reused.
            match fs::create_dir(&candidate) {
                Ok(()) => break candidate,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(context(e, &candidate)),
            }
        };
        // From here on, an early return drops the sandbox, which removes the partial copy.
        let sandbox = Sandbox { path, keep: false };
        let copy = Copy {
            src: &src,
            given: workspace,
            dst: &sandbox.path,
        };
        copy.dir(&src, &sandbox.path, true)?;
        Ok(sandbox)
    }

    /// Where the copy is: point the tools' workspace here.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the copy on disk (to inspect a run) and returns its path.
    pub fn keep(mut self) -> PathBuf {
        self.keep = true;
        std::mem::take(&mut self.path)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.keep && !self.path.as_os_str().is_empty() {
            // Best effort: a leftover copy is only disk space under the caller's parent folder.
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// An I/O error that names the path it is about.
fn context(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// One copy in progress.
struct Copy<'a> {
    /// The workspace's real path.
    src: &'a Path,
    /// The workspace as the caller wrote it (absolute links may use this spelling).
    given: &'a Path,
    /// The sandbox.
    dst: &'a Path,
}

impl Copy<'_> {
    fn dir(&self, from_dir: &Path, to_dir: &Path, top: bool) -> io::Result<()> {
        for entry in fs::read_dir(from_dir).map_err(|e| context(e, from_dir))? {
            let entry = entry.map_err(|e| context(e, from_dir))?;
            let from = entry.path();
            if from == self.dst {
                continue;
            }
            let name = entry.file_name();
            let name_str = name.to_string_lossy();
            let to = to_dir.join(&name);
            let kind = entry.file_type().map_err(|e| context(e, &from))?;
            if kind.is_symlink() {
                let target = fs::read_link(&from).map_err(|e| context(e, &from))?;
                let target = self.rebase(target);
                symlink(&target, &to).map_err(|e| context(e, &to))?;
            } else if kind.is_dir() {
                if skipped(&name_str, top, &from) {
                    continue;
                }
                fs::create_dir(&to).map_err(|e| context(e, &to))?;
                self.dir(&from, &to, false)?;
            } else if kind.is_file() {
                if top && name_str == ".git" {
                    linked_git(&from, &to)?;
                } else {
                    fs::copy(&from, &to).map_err(|e| context(e, &from))?;
                }
            }
            // Sockets, FIFOs, devices: nothing a task needs, and copying a FIFO would block.
        }
        Ok(())
    }

    /// An absolute link target inside the workspace, moved onto the copy.
    fn rebase(&self, target: PathBuf) -> PathBuf {
        if target.is_absolute() {
            for base in [self.src, self.given] {
                if let Ok(rest) = target.strip_prefix(base) {
                    return self.dst.join(rest);
                }
            }
        }
        target
    }
}

/// Whether a directory stays out of the copy (see the module doc).
fn skipped(name: &str, top: bool, path: &Path) -> bool {
    (top && (name == "target" || name == ".ai"))
        || name == "node_modules"
        || path.join("CACHEDIR.TAG").is_file()
}

/// Builds an independent `.git` directory at `dst` from a `.git` file (`gitdir: PATH`): the
/// shared part of the repository without its objects, overlaid with the worktree's own HEAD,
/// index and refs, borrowing the objects through alternates.
fn linked_git(gitfile: &Path, dst: &Path) -> io::Result<()> {
    let text = fs::read_to_string(gitfile).map_err(|e| context(e, gitfile))?;
    let Some(raw) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        // Not a gitlink after all: an ordinary file named `.git`.
        fs::copy(gitfile, dst).map_err(|e| context(e, gitfile))?;
        return Ok(());
    };
    let here = gitfile.parent().unwrap_or(Path::new("/"));
    let gitdir = here
        .join(raw)
        .canonicalize()
        .map_err(|e| context(e, &here.join(raw)))?;
    let common = match fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => gitdir
            .join(c.trim())
            .canonicalize()
            .map_err(|e| context(e, &gitdir.join(c.trim())))?,
        Err(_) => gitdir.clone(),
    };
    fs::create_dir(dst).map_err(|e| context(e, dst))?;
    if common == gitdir {
        copy_tree(&common, dst, &["objects"])?;
    } else {
        // The main worktree's HEAD and index are not ours; the other worktrees are irrelevant.
        copy_tree(&common, dst, &["objects", "worktrees", "HEAD", "index"])?;
        copy_tree(&gitdir, dst, &["commondir", "gitdir", "locked"])?;
    }
    let info = dst.join("objects").join("info");
    fs::create_dir_all(&info).map_err(|e| context(e, &info))?;
    fs::create_dir_all(dst.join("refs")).map_err(|e| context(e, dst))?;
    let alternates = format!("{}\n", common.join("objects").display());
    fs::write(info.join("alternates"), alternates).map_err(|e| context(e, &info))
}

/// Copies the tree at `from` into `to` (merging into existing folders, replacing files),
/// leaving out the top-level names in `exclude`.
fn copy_tree(from: &Path, to: &Path, exclude: &[&str]) -> io::Result<()> {
    for entry in fs::read_dir(from).map_err(|e| context(e, from))? {
        let entry = entry.map_err(|e| context(e, from))?;
        let name = entry.file_name();
        if exclude.iter().any(|x| name.as_os_str() == *x) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type().map_err(|e| context(e, &src))?;
        if kind.is_dir() {
            fs::create_dir_all(&dst).map_err(|e| context(e, &dst))?;
            copy_tree(&src, &dst, &[])?;
        } else if kind.is_symlink() {
            let _ = fs::remove_file(&dst);
            let target = fs::read_link(&src).map_err(|e| context(e, &src))?;
            symlink(&target, &dst).map_err(|e| context(e, &dst))?;
        } else if kind.is_file() {
            // Removed first: the file being replaced may be read-only.
            let _ = fs::remove_file(&dst);
            fs::copy(&src, &dst).map_err(|e| context(e, &src))?;
        }
    }
    Ok(())
}

/// A symbolic link at `link` to `target`, as in the workspace copied.
#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Windows tells a link to a folder from one to a file (`target` is read relative to the
/// link's folder, as the system will).
#[cfg(windows)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    let resolved = link
        .parent()
        .map_or_else(|| target.to_path_buf(), |d| d.join(target));
    if resolved.is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    }
}

// Symbolic links and Unix modes throughout: Unix only.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::tools::tests::{git, git_repo};
    use crate::tools::{ToolConfig, Toolbox};
    use serde_json::json;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use tempfile::TempDir;

    /// A committed repository with a build dir, dependencies and links.
    fn workspace() -> TempDir {
        let d = TempDir::new().unwrap();
        let ws = d.path();
        fs::create_dir_all(ws.join("src/nested/target")).unwrap();
        fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::write(
            ws.join("src/nested/target/kept.txt"),
            "a source dir named target",
        )
        .unwrap();
        fs::write(ws.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(ws.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(
            ws.join(".gitignore"),
            "target/\nnode_modules/\n.ai/\nbuild-cache/\n",
        )
        .unwrap();
        git_repo(ws);
        for dir in ["target/debug", "node_modules/dep", ".ai", "build-cache"] {
            fs::create_dir_all(ws.join(dir)).unwrap();
        }
        fs::write(ws.join("target/debug/big.bin"), "x").unwrap();
        fs::write(ws.join("node_modules/dep/index.js"), "x").unwrap();
        fs::write(ws.join(".ai/db.json"), "{}").unwrap();
        fs::write(
            ws.join("build-cache/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        symlink("src/main.rs", ws.join("rel_link")).unwrap();
        symlink(ws.join("src"), ws.join("abs_link")).unwrap();
        symlink("/etc", ws.join("etc_link")).unwrap();
        d
    }

    #[test]
    fn copies_the_workspace_and_git_and_skips_build_output() {
        let ws = workspace();
        let parent = TempDir::new().unwrap();
        let sandbox = Sandbox::create(ws.path(), parent.path()).unwrap();
        let sb = sandbox.path().to_path_buf();
        assert!(sb.starts_with(parent.path().canonicalize().unwrap()));
        assert_eq!(
            fs::read_to_string(sb.join("src/main.rs")).unwrap(),
            "fn main() {}\n"
        );
        assert!(sb.join("src/nested/target/kept.txt").is_file());
        assert_eq!(
            fs::metadata(sb.join("run.sh"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        assert!(sb.join(".git/HEAD").is_file());
        for skipped in ["target", "node_modules", ".ai", "build-cache"] {
            assert!(!sb.join(skipped).exists(), "{skipped} copied");
        }
        // Links stay links; an absolute one into the workspace now points into the copy.
        assert_eq!(
            fs::read_link(sb.join("rel_link")).unwrap(),
            Path::new("src/main.rs")
        );
        assert_eq!(fs::read_link(sb.join("abs_link")).unwrap(), sb.join("src"));
        assert_eq!(
            fs::read_link(sb.join("etc_link")).unwrap(),
            Path::new("/etc")
        );

        // The tools work in the copy, and changes there stay there.
        let mut config = ToolConfig::new(&sb);
        config.sandbox = true;
        config.write_enabled = true;
        let tb = Toolbox::new(config);
        assert!(
            tb.call("read_file", &json!({"path": "abs_link/main.rs"}))
                .success
        );
        let status = tb.call("git_status", &json!({}));
        assert!(status.success && status.meta.sandbox, "{status:?}");
        // Same status as the original: the copy is faithful (the links are untracked in both).
        let before = git(ws.path(), &["status", "--short"]);
        assert_eq!(
            status.data.unwrap()["stdout"],
            json!(format!("## main\n{before}"))
        );
        assert!(
            tb.call(
                "write_file",
                &json!({"path": "src/main.rs", "content": "changed"})
            )
            .success
        );
        let diff = tb.call("git_diff", &json!({})).data.unwrap();
        assert!(diff["stdout"].as_str().unwrap().contains("+changed"));
        assert_eq!(
            fs::read_to_string(ws.path().join("src/main.rs")).unwrap(),
            "fn main() {}\n"
        );
        assert_eq!(git(ws.path(), &["status", "--short"]), before);

        drop(sandbox);
        assert!(!sb.exists());
    }

    #[test]
    fn keep_leaves_the_copy() {
        let ws = workspace();
        let parent = TempDir::new().unwrap();
        let kept = Sandbox::create(ws.path(), parent.path()).unwrap().keep();
        assert!(kept.join("src/main.rs").is_file());
        // Two sandboxes of one workspace never share a folder.
        let a = Sandbox::create(ws.path(), parent.path()).unwrap();
        assert_ne!(a.path(), kept.as_path());
    }

    #[test]
    fn a_parent_inside_the_workspace_is_not_copied_into_itself() {
        let ws = workspace();
        let parent = ws.path().join("sandboxes");
        let sandbox = Sandbox::create(ws.path(), &parent).unwrap();
        assert!(sandbox.path().join("src/main.rs").is_file());
        let copied: Vec<_> = fs::read_dir(sandbox.path().join("sandboxes"))
            .unwrap()
            .collect();
        assert!(copied.is_empty());
    }

    #[test]
    fn a_missing_workspace_is_an_error() {
        let parent = TempDir::new().unwrap();
        assert!(Sandbox::create(&parent.path().join("nope"), parent.path()).is_err());
    }

    #[test]
    fn a_linked_worktree_becomes_an_independent_repository() {
        let ws = workspace();
        let wt_parent = TempDir::new().unwrap();
        let wt = wt_parent.path().join("wt");
        git(
            ws.path(),
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "feature",
                wt.to_str().unwrap(),
            ],
        );
        fs::write(wt.join("src/main.rs"), "fn main() { feature() }\n").unwrap();
        let head = git(&wt, &["rev-parse", "feature"]);

        let parent = TempDir::new().unwrap();
        let sandbox = Sandbox::create(&wt, parent.path()).unwrap();
        let sb = sandbox.path();
        assert!(sb.join(".git").is_dir());
        assert!(
            git(sb, &["status", "--short", "--branch"]).starts_with("## feature\n M src/main.rs")
        );
        git(sb, &["commit", "-q", "-am", "in the sandbox"]);
        // The real branch and worktree did not move.
        assert_eq!(git(&wt, &["rev-parse", "feature"]), head);
        assert_eq!(git(&wt, &["status", "--short"]), " M src/main.rs\n");
        assert_ne!(git(sb, &["rev-parse", "HEAD"]), head);
    }
}
