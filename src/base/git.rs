//! Which commit a folder's files are at, asked of `git` itself (a subprocess, no library):
//! the commit and whether tracked files differ from it. No `git` on the PATH, or a folder
//! outside any repository, gives nothing, never an error: a record of a sweep says "unknown".

use std::path::Path;
use std::process::{Command, Stdio};

/// The commit checked out where a sweep ran, and whether tracked files were changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checkout {
    /// The full hash of `HEAD`; `None` outside a repository or without `git`.
    pub commit: Option<String>,
    /// Whether a tracked file differs from `HEAD` (untracked files, such as the reports a
    /// sweep writes, do not count); `None` when `commit` is.
    pub dirty: Option<bool>,
}

/// The checkout `dir` is in.
pub fn checkout(dir: &Path) -> Checkout {
    let Some(commit) = git(dir, &["rev-parse", "--verify", "--quiet", "HEAD"]) else {
        return Checkout::default();
    };
    let commit = commit.trim().to_string();
    if commit.is_empty() {
        return Checkout::default();
    }
    let dirty = git(dir, &["status", "--porcelain", "--untracked-files=no"])
        .map(|changes| !changes.trim().is_empty());
    Checkout {
        commit: Some(commit),
        dirty,
    }
}

/// `git -C dir ARGS`'s stdout when it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        // The environment of a hook or another checkout must not point git elsewhere.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `git` runs here at all.
    fn have_git() -> bool {
        Command::new("git").arg("--version").output().is_ok()
    }

    fn run(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_folder_outside_a_repository_has_no_commit() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(checkout(dir.path()), Checkout::default());
        assert_eq!(checkout(&dir.path().join("missing")), Checkout::default());
    }

    #[test]
    fn a_commit_and_whether_tracked_files_changed() {
        if !have_git() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        run(d, &["init", "-q"]);
        // A repository without a commit has no HEAD yet.
        assert_eq!(checkout(d), Checkout::default());
        std::fs::write(d.join("a.txt"), "one").unwrap();
        run(d, &["add", "a.txt"]);
        run(d, &["commit", "-q", "-m", "one"]);
        let clean = checkout(d);
        let commit = clean.commit.clone().unwrap();
        assert_eq!(commit.len(), 40, "{commit}");
        assert_eq!(clean.dirty, Some(false));
        // An untracked file (a report) leaves it clean; a changed tracked file does not.
        std::fs::write(d.join("report.txt"), "x").unwrap();
        assert_eq!(checkout(d).dirty, Some(false));
        std::fs::write(d.join("a.txt"), "two").unwrap();
        assert_eq!(
            checkout(d),
            Checkout {
                commit: Some(commit),
                dirty: Some(true)
            }
        );
    }
}
