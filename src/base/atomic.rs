//! Writing a file so that it never replaces what it should not: atomically (a temporary file
//! in the same folder, then a rename), so an interrupted run leaves the previous file whole; a
//! device, FIFO or link at the path is written through, never replaced ([`write_to`]). The
//! reports, the question sets and the batch cycle's open batches are all written this way.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use crate::base::in_flight;

/// Write `path` through a temporary file in the same folder and rename it into place, over
/// whatever regular file is there (see [`write_to`]).
pub fn write_atomic(path: &Path, fill: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    write_to(path, Existing::Replace, fill)
}

/// What [`write_to`] does with a file already at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Replace it.
    Replace,
    /// Keep it: the write fails with [`std::io::ErrorKind::AlreadyExists`] in its chain, even
    /// when the file appeared while the text was being made (two runs at once, or a user).
    Keep,
}

/// Write `path` so that it never replaces what it should not:
///
/// - a device, FIFO, socket or terminal (`/dev/null`, `/dev/stdout` on a pipe) is written into
///   as a stream: renaming over it would replace the machine's `/dev/null` with a plain file;
/// - a link is followed, and the file it points to is replaced, never the link itself;
/// - a regular file, or nothing, is replaced atomically: a temporary file in the same folder,
///   renamed into place, so an interrupted run leaves the previous file whole.
pub fn write_to(
    path: &Path,
    existing: Existing,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let cannot = || format!("cannot write `{}`", path.display());
    let exists = || {
        anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::AlreadyExists))
            .context(format!("`{}` exists", path.display()))
    };
    if let Ok(meta) = std::fs::metadata(path) {
        if existing == Existing::Keep {
            return Err(exists());
        }
        if crate::base::input::odd_kind(&meta).is_some() && !meta.is_dir() {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(cannot)?;
            let mut w = std::io::BufWriter::new(file);
            fill(&mut w).with_context(cannot)?;
            return w.flush().with_context(cannot);
        }
    }
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link {
        match std::fs::canonicalize(path) {
            Ok(real) => real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let to = std::fs::read_link(path).unwrap_or_default();
                anyhow::bail!(
                    "{}: it is a link to `{}`, which does not exist",
                    cannot(),
                    to.display()
                );
            }
            Err(e) => return Err(e).with_context(cannot),
        }
    } else {
        path.to_path_buf()
    };
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => anyhow::bail!("{}: `{}` is not a folder", cannot(), dir.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!(
                "{}: its folder `{}` does not exist",
                cannot(),
                dir.display()
            )
        }
        Err(e) => return Err(e).with_context(cannot),
    }
    let (tmp, _in_flight) = temporary_in(dir).with_context(cannot)?;
    in_flight::hold_for_tests();
    {
        let mut w = std::io::BufWriter::new(tmp.as_file());
        fill(&mut w).with_context(cannot)?;
        w.flush().with_context(cannot)?;
    }
    tmp.as_file().sync_all().ok();
    // Reports are for sharing: readable by all, like any file the user writes (tempfile
    // creates 0600).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644)).ok();
    }
    match existing {
        Existing::Replace => tmp.persist(&target).map(drop),
        Existing::Keep => tmp.persist_noclobber(&target).map(drop),
    }
    .map_err(|e| match e.error.kind() {
        std::io::ErrorKind::AlreadyExists if existing == Existing::Keep => exists(),
        _ => anyhow::Error::from(e.error).context(cannot()),
    })
}

/// How our temporary files start: `.rageval-tmp-<pid>-<random>`, so that a later run can tell
/// its own stale ones (left by a `kill -9`) from anyone else's files.
pub const TEMP_PREFIX: &str = ".rageval-tmp-";

/// A new temporary file in `dir`, registered as it is created ([`in_flight`]): a signal
/// handled between the two would otherwise leave it behind.
fn temporary_in(dir: &Path) -> Result<(tempfile::NamedTempFile, in_flight::Registered)> {
    in_flight::create(
        || {
            tempfile::Builder::new()
                .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
                .tempfile_in(dir)
        },
        |t| t.path(),
    )
    // tempfile's error names the temporary's random path: the folder says more.
    .map_err(|e| match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(e.kind(), e.kind().to_string()),
    })
    .with_context(|| format!("cannot create a temporary file in `{}`", dir.display()))
}

/// Remove our temporary files in `dir` that no running process writes: their process is gone
/// (seen in `/proc`), or, where there is no `/proc`, they are more than an hour old.
pub fn remove_stale_temporaries(dir: &Path) {
    let me = std::process::id();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        let stale = match pid {
            Some(pid) if pid == me => false,
            Some(pid) if Path::new("/proc/self").exists() => {
                !Path::new(&format!("/proc/{pid}")).exists()
            }
            _ => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > std::time::Duration::from_secs(3600)),
        };
        if stale && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
