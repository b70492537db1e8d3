//! A folder that rageval writes whole (`import squad FILE --out DIR`): built in a temporary
//! folder beside `DIR` and put in place only when complete, so that bad input or an interrupt
//! leaves nothing behind, and never put in place of anything rageval did not write.
//!
//! The rules, each from an audit's data loss (issue 41):
//! - `DIR` must be a folder or absent: a file, device node, FIFO or link at `DIR` is refused,
//!   with or without `--force`;
//! - `--force` replaces only a folder carrying rageval's marker file ([`MARKER`]) and not
//!   holding the input;
//! - a `DIR` that appears while the import runs is never replaced (the new folder is put in
//!   place with `RENAME_NOREPLACE`, or claimed empty first where that is missing);
//! - the old folder stays until the new one is in place: both are swapped in one step
//!   (`RENAME_EXCHANGE`), then the old one is removed; where the exchange is missing, the old
//!   folder is set aside and put back if the new one cannot take its place;
//! - the temporary folder is registered in [`crate::base::in_flight`], so Ctrl-C removes it.

use std::path::{Path, PathBuf};

use crate::base::in_flight::{self, Registered};

/// The file rageval writes into every folder it builds whole: `--force` replaces a folder
/// only when this file is in it.
pub const MARKER: &str = ".rageval-folder";

/// A folder being built for `out`.
pub struct Staging {
    /// The temporary folder, beside `out`; removed as this drops unless put in place.
    tmp: tempfile::TempDir,
    _registered: Registered,
    out: PathBuf,
    /// Whether `out` was a folder of ours when the import began (and `--force` was given).
    replace: bool,
    /// What the marker file says.
    marker: String,
}

/// Why a folder cannot be written; the message names no path (the caller's error does).
pub type Refusal = String;

/// Check `out` and start a temporary folder beside it. `inputs` are the files the build reads:
/// a folder that holds one is never replaced. `marker` is the text of the marker file (who
/// wrote the folder, from what).
pub fn stage(out: &Path, force: bool, inputs: &[&Path], marker: &str) -> Result<Staging, Refusal> {
    let replace = check(out, force, inputs)?;
    let parent = parent_of(out);
    std::fs::create_dir_all(&parent)
        .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
    let (tmp, registered) = in_flight::create(
        || {
            tempfile::Builder::new()
                .prefix(".rageval-import-")
                .tempdir_in(&parent)
        },
        |t| t.path(),
    )
    .map_err(|e| format!("cannot write in `{}`: {e}", parent.display()))?;
    in_flight::hold_for_tests();
    Ok(Staging {
        tmp,
        _registered: registered,
        out: out.to_path_buf(),
        replace,
        marker: marker.to_string(),
    })
}

/// Whether `out` is to be replaced (it is a folder of ours and `force`), or refused.
fn check(out: &Path, force: bool, inputs: &[&Path]) -> Result<bool, Refusal> {
    let meta = match std::fs::symlink_metadata(out) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    if !meta.is_dir() {
        let kind = if meta.file_type().is_symlink() {
            "a link"
        } else {
            crate::base::input::odd_kind(&meta).unwrap_or("a file")
        };
        return Err(format!(
            "is {kind}, not a folder: choose another `--out` (nothing was written; `--force` replaces only a folder rageval wrote)"
        ));
    }
    if !force {
        return Err("exists: pass `--force` to replace it (nothing was written)".into());
    }
    if !is_ours(out) {
        return Err(format!(
            "was not written by rageval (it has no `{MARKER}` file): `--force` replaces only a folder rageval wrote; remove it yourself or choose another `--out` (nothing was written)"
        ));
    }
    let real_out = std::fs::canonicalize(out).map_err(|e| format!("cannot read: {e}"))?;
    for input in inputs {
        let real = std::fs::canonicalize(input).unwrap_or_else(|_| input.to_path_buf());
        if real.starts_with(&real_out) {
            return Err(format!(
                "holds the input `{}`: `--force` would delete it; choose another `--out` (nothing was written)",
                input.display()
            ));
        }
    }
    Ok(true)
}

/// Whether the folder `dir` carries rageval's marker file (a regular file, not a link).
fn is_ours(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file())
}

fn parent_of(out: &Path) -> PathBuf {
    match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl Staging {
    /// The temporary folder to write into.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Put the finished folder in place of `out`.
    pub fn finish(self) -> Result<(), Refusal> {
        std::fs::write(self.tmp.path().join(MARKER), &self.marker)
            .map_err(|e| format!("cannot write: {e}"))?;
        if self.replace {
            self.swap()
        } else {
            self.place_new()
        }
    }

    /// `out` did not exist: move the folder there, never over something that appeared since.
    fn place_new(self) -> Result<(), Refusal> {
        let appeared = || {
            "appeared while the import ran: it is kept as it is (nothing was written; pass `--force` to replace a folder rageval wrote)".to_string()
        };
        match rename_noreplace(self.tmp.path(), &self.out) {
            Ok(true) => {}
            Ok(false) => {
                // No `RENAME_NOREPLACE` here: claim the name with an empty folder first (a
                // rename replaces only an empty one).
                std::fs::create_dir(&self.out).map_err(|e| match e.kind() {
                    std::io::ErrorKind::AlreadyExists => appeared(),
                    _ => format!("cannot write: {e}"),
                })?;
                std::fs::rename(self.tmp.path(), &self.out).map_err(|_| appeared())?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(appeared()),
            Err(e) => return Err(format!("cannot write: {e}")),
        }
        // In place: nothing is left to remove.
        let _ = self.tmp.keep();
        Ok(())
    }

    /// `out` was a folder of ours: swap the new one in, then remove the old one, which must
    /// still be ours (it is put back otherwise).
    fn swap(self) -> Result<(), Refusal> {
        let fail = |e: std::io::Error| format!("cannot write: {e}");
        if exchange(self.tmp.path(), &self.out).map_err(fail)? {
            // The temporary path now holds the old folder; it is removed as `self.tmp` drops.
            if !is_ours(self.tmp.path()) {
                if !matches!(exchange(self.tmp.path(), &self.out), Ok(true)) {
                    // Never removed: the folder is someone else's, so it stays where it is.
                    let kept = self.tmp.keep();
                    return Err(format!(
                        "was replaced while the import ran by a folder without `{MARKER}`, which could not be put back: it is at `{}`",
                        kept.display()
                    ));
                }
                return Err(format!("was replaced while the import ran by a folder without `{MARKER}`: it is kept as it is (nothing was written)"));
            }
            return Ok(());
        }
        self.swap_by_renames()
    }

    /// Where there is no `RENAME_EXCHANGE`: set the old folder aside (in a folder that a signal
    /// leaves alone, so it can be found), put the new one in place, and the old one back if
    /// that fails.
    fn swap_by_renames(self) -> Result<(), Refusal> {
        let fail = |e: std::io::Error| format!("cannot write: {e}");
        let old = tempfile::Builder::new()
            .prefix(".rageval-import-old-")
            .tempdir_in(parent_of(&self.out))
            .map_err(fail)?;
        let aside = old.path().join("old");
        std::fs::rename(&self.out, &aside).map_err(fail)?;
        if !is_ours(&aside) {
            let _ = std::fs::rename(&aside, &self.out);
            return Err(format!("was replaced while the import ran by a folder without `{MARKER}`: it is kept as it is (nothing was written)"));
        }
        if let Err(e) = std::fs::rename(self.tmp.path(), &self.out) {
            let _ = std::fs::rename(&aside, &self.out);
            return Err(fail(e));
        }
        let _ = self.tmp.keep();
        // `old` and the old folder in it are removed as it drops.
        Ok(())
    }
}

/// Rename `from` to `to` unless `to` exists: `Ok(false)` where the system cannot say so in
/// one step.
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<bool> {
    renameat2(from, to, RenameFlag::NoReplace)
}

/// Swap `a` and `b` in one step: `Ok(false)` where the system cannot.
fn exchange(a: &Path, b: &Path) -> std::io::Result<bool> {
    renameat2(a, b, RenameFlag::Exchange)
}

#[derive(Clone, Copy)]
enum RenameFlag {
    NoReplace,
    Exchange,
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn renameat2(from: &Path, to: &Path, flag: RenameFlag) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let (from, to) = (c(from)?, c(to)?);
    let flags = match flag {
        RenameFlag::NoReplace => libc::RENAME_NOREPLACE,
        RenameFlag::Exchange => libc::RENAME_EXCHANGE,
    };
    // SAFETY: both paths are valid NUL-terminated strings that live across the call.
    let done = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if done == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // The kernel or the file system has no such rename.
        Some(libc::ENOSYS | libc::EINVAL) => Ok(false),
        _ => Err(e),
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn renameat2(_: &Path, _: &Path, _: RenameFlag) -> std::io::Result<bool> {
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in `dir`.
    fn entries(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    }

    fn folder(root: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for (f, text) in files {
            std::fs::write(dir.join(f), text).unwrap();
        }
        dir
    }

    #[test]
    fn an_exchange_swaps_two_folders_in_one_step() {
        let root = tempfile::tempdir().unwrap();
        let a = folder(root.path(), "a", &[("x", "old")]);
        let b = folder(root.path(), "b", &[("y", "new")]);
        if !exchange(&a, &b).unwrap() {
            return; // no RENAME_EXCHANGE on this system: `swap` sets aside instead.
        }
        assert_eq!(std::fs::read_to_string(a.join("y")).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(b.join("x")).unwrap(), "old");
    }

    #[test]
    fn a_rename_without_replace_keeps_what_is_there() {
        let root = tempfile::tempdir().unwrap();
        let a = folder(root.path(), "a", &[("x", "new")]);
        let b = folder(root.path(), "b", &[]);
        match rename_noreplace(&a, &b) {
            Ok(false) => {}
            Ok(true) => panic!("an empty folder was replaced"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists),
        }
        assert!(a.join("x").exists());
    }

    #[test]
    fn the_fallback_swap_puts_the_new_folder_in_place_and_drops_only_the_old() {
        let root = tempfile::tempdir().unwrap();
        let out = folder(root.path(), "out", &[(MARKER, "old"), ("old.md", "o")]);
        let staging = stage(&out, true, &[], "new").unwrap();
        std::fs::write(staging.path().join("new.md"), "n").unwrap();
        std::fs::write(staging.path().join(MARKER), "new").unwrap();
        staging.swap_by_renames().unwrap();
        assert!(out.join("new.md").exists() && !out.join("old.md").exists());
        let left = entries(root.path());
        assert_eq!(left, ["out"]);
    }

    #[test]
    fn the_fallback_swap_puts_back_a_folder_that_is_not_ours() {
        let root = tempfile::tempdir().unwrap();
        let out = folder(root.path(), "out", &[(MARKER, "old")]);
        let staging = stage(&out, true, &[], "new").unwrap();
        std::fs::remove_file(out.join(MARKER)).unwrap();
        std::fs::write(out.join("canary"), "keep").unwrap();
        let e = staging.swap_by_renames().unwrap_err();
        assert!(e.contains("without `.rageval-folder`"), "{e}");
        assert_eq!(std::fs::read_to_string(out.join("canary")).unwrap(), "keep");
        let left = entries(root.path());
        assert_eq!(left, ["out"]);
    }

    #[test]
    fn a_folder_swapped_in_meanwhile_without_the_marker_is_put_back_whole() {
        let root = tempfile::tempdir().unwrap();
        let out = folder(root.path(), "out", &[(MARKER, "old")]);
        let staging = stage(&out, true, &[], "new").unwrap();
        std::fs::write(staging.path().join("new.md"), "n").unwrap();
        // Someone else's folder takes the place of ours while the import runs.
        std::fs::remove_dir_all(&out).unwrap();
        let out = folder(root.path(), "out", &[("canary", "keep")]);
        let e = staging.finish().unwrap_err();
        assert!(e.contains("without `.rageval-folder`"), "{e}");
        assert_eq!(std::fs::read_to_string(out.join("canary")).unwrap(), "keep");
        assert!(!out.join("new.md").exists());
        let left = entries(root.path());
        assert_eq!(left, ["out"]);
    }
}
