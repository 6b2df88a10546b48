//! A project is its repository, not its folder: two clones of one repository on two machines
//! are one project, two unrelated folders both called `app` are not.

use crate::TeamError;
use std::path::Path;
use std::process::Command;

/// The project's identity: its `origin` remote (else its first remote), normalized.
pub fn project_id(root: &Path) -> Result<String, TeamError> {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let remote = git(&["config", "--get", "remote.origin.url"]).or_else(|| {
        let first = git(&["remote"])?.lines().next()?.to_string();
        git(&["config", "--get", &format!("remote.{first}.url")])
    });
    let remote = remote.ok_or_else(|| {
        TeamError::NoRemote(format!(
            "{} has no git remote: team memory follows a repository (add one with `git remote add origin URL`)",
            root.display()
        ))
    })?;
    normalize_remote(&remote)
        .ok_or_else(|| TeamError::NoRemote(format!("cannot read the git remote {remote:?}")))
}

/// `host/path` of a git remote, whatever its spelling: `https://github.com/Org/Repo.git`,
/// `git@github.com:Org/Repo`, `ssh://git@github.com:22/Org/Repo/` all give
/// `github.com/org/repo`. Credentials never come through. Hosts and paths are lowercased (the
/// big forges treat them so); a local path stays a path.
pub fn normalize_remote(remote: &str) -> Option<String> {
    let r = remote.trim();
    if r.is_empty() {
        return None;
    }
    let (host, path) = if let Some((scheme, rest)) = r.split_once("://") {
        if scheme == "file" {
            ("", rest)
        } else {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, after)| after);
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = authority.split(':').next().unwrap_or(authority);
            (host, path)
        }
    } else if let Some((before, path)) = r.split_once(':').filter(|(b, _)| !b.contains('/')) {
        // scp-like: [user@]host:path
        let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
        (host, path)
    } else {
        ("", r)
    };
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    if path.is_empty() {
        return None;
    }
    let id = if host.is_empty() {
        path.to_string()
    } else {
        format!("{}/{}", host.to_lowercase(), path.to_lowercase())
    };
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_repository_one_identity_whatever_the_spelling() {
        let want = Some("github.com/org/repo".to_string());
        for r in [
            "https://github.com/Org/Repo.git",
            "https://github.com/org/repo",
            "https://user:token@github.com/org/repo.git/",
            "git@github.com:Org/Repo.git",
            "ssh://git@github.com:22/org/repo",
            "ssh://git@GitHub.com/org/repo.git",
        ] {
            assert_eq!(normalize_remote(r), want, "{r}");
        }
        assert_eq!(
            normalize_remote("https://gitlab.example.com/group/sub/app.git").as_deref(),
            Some("gitlab.example.com/group/sub/app")
        );
        assert_ne!(
            normalize_remote("git@github.com:a/app.git"),
            normalize_remote("git@github.com:b/app.git")
        );
        assert_eq!(normalize_remote(""), None);
        assert_eq!(normalize_remote("https://github.com/"), None);
    }

    #[test]
    fn the_identity_is_the_remote_and_a_folder_without_one_has_none() {
        let run = |dir: &Path, args: &[&str]| {
            assert!(Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .output()
                .unwrap()
                .status
                .success());
        };
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for d in [a.path(), b.path()] {
            run(d, &["init", "-q"]);
        }
        run(
            a.path(),
            &["remote", "add", "origin", "git@github.com:Org/App.git"],
        );
        run(
            b.path(),
            &["remote", "add", "upstream", "https://github.com/org/app"],
        );
        assert_eq!(project_id(a.path()).unwrap(), "github.com/org/app");
        assert_eq!(project_id(b.path()).unwrap(), "github.com/org/app");
        let c = tempfile::tempdir().unwrap();
        run(c.path(), &["init", "-q"]);
        assert!(matches!(project_id(c.path()), Err(TeamError::NoRemote(_))));
    }
}
