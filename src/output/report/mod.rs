//! Reports: one module per format behind [`Exporter`], all fed from one [`Results`] value.
//!
//! Files are written atomically (a temporary file in the same folder, then a rename), so an
//! interrupted run leaves the previous report whole; a device, FIFO or link at the path is
//! written through, never replaced ([`write_to`]).

pub mod chart;
mod csv;
mod drilldown;
pub mod html;
mod json;
mod markdown;
pub mod retrieval;
pub mod summary;
pub mod table;
mod tags;
pub mod terminal;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub(crate) use self::csv::neutralize;
pub use self::csv::{RunsCsv, SummaryCsv};
pub use self::html::HtmlReport;
pub use self::json::JsonResults;
pub use self::markdown::MarkdownReport;
pub use self::summary::Summary;
pub use self::tags::TagsCsv;
pub use crate::output::record::SCHEMA;

pub use crate::results::{Meta, Results, SetMeta, SettingText};

/// A report format that writes a whole [`Results`] to a stream. `Send + Sync` so that the
/// reports of a sweep are written at once, each on its own thread.
pub trait Exporter: Send + Sync {
    /// The file name under the report folder.
    fn file_name(&self) -> &'static str;
    fn write(&self, results: &Results, out: &mut dyn Write) -> Result<()>;
    /// Write the report with `summary`, the one built for every report of this sweep (and the
    /// terminal's): the reports for people (Markdown, HTML) render it, the others read the
    /// results alone.
    fn write_with(&self, results: &Results, summary: &Summary, out: &mut dyn Write) -> Result<()> {
        let _ = summary;
        self.write(results, out)
    }
}

/// Every file report of a sweep.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(SummaryCsv),
        Box::new(RunsCsv),
        Box::new(TagsCsv),
        Box::new(JsonResults),
        Box::new(MarkdownReport),
        Box::new(HtmlReport),
    ]
}

/// Write every report into `dir`, each atomically, the reports for people rendering `summary`.
/// Returns the paths written.
///
/// The reports are independent, so each is written on its own thread: a large sweep's
/// runs.csv, results.json and report.html take about the same time, and together they are
/// most of the in-process work. The first error in [`exporters`] order is the one returned.
pub fn write_all(results: &Results, summary: &Summary, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create report folder `{}`", dir.display()))?;
    remove_stale_temporaries(dir);
    // Worked out once here rather than raced for by the writers.
    let _ = results.text();
    let exporters = exporters();
    let outcomes: Vec<Result<PathBuf>> = std::thread::scope(|scope| {
        let handles: Vec<_> = exporters
            .iter()
            .map(|exporter| {
                let path = dir.join(exporter.file_name());
                scope.spawn(move || {
                    let written = write_atomic(&path, |w| exporter.write_with(results, summary, w));
                    crate::base::timing::mark(exporter.file_name());
                    written.map(|()| path)
                })
            })
            .collect();
        handles
            .into_iter()
            // A writer only panics on a bug: crash as the sequential loop would have.
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    outcomes.into_iter().collect()
}

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
    let (tmp, _in_flight) = InFlight::create(dir)?;
    hold_for_tests();
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

/// Tests of interruption need a report write that is still in progress when their signal
/// arrives: `RAGEVAL_TEST_HOLD_TEMPORARY_MS` keeps each temporary file open that long before it
/// is filled. Unset (always, outside tests) it costs one environment lookup per file.
fn hold_for_tests() {
    if let Some(ms) = std::env::var("RAGEVAL_TEST_HOLD_TEMPORARY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// How our temporary files start: `.rageval-tmp-<pid>-<random>`, so that a later run can tell
/// its own stale ones (left by a `kill -9`) from anyone else's files.
pub const TEMP_PREFIX: &str = ".rageval-tmp-";

/// Temporary files being written now, for [`remove_in_flight`].
static IN_FLIGHT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Registers a temporary file while it is written.
struct InFlight(PathBuf);

fn in_flight() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // The list stays whole whatever a writer did while holding it.
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())
}

impl InFlight {
    /// A new temporary file in `dir`, registered as it is created: a signal handled between
    /// the two would otherwise leave it behind.
    fn create(dir: &Path) -> Result<(tempfile::NamedTempFile, InFlight)> {
        let mut list = in_flight();
        let tmp = tempfile::Builder::new()
            .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
            .tempfile_in(dir)
            .with_context(|| format!("cannot create a temporary file in `{}`", dir.display()))?;
        list.push(tmp.path().to_path_buf());
        let registered = InFlight(tmp.path().to_path_buf());
        Ok((tmp, registered))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        in_flight().retain(|p| p != &self.0);
    }
}

/// Remove the temporary files being written: for a process about to exit on a signal, whose
/// destructors will not run. The list stays locked afterwards, so that no writer creates
/// another temporary file before the process exits.
pub fn remove_in_flight() {
    let list = in_flight();
    for path in list.iter() {
        let _ = std::fs::remove_file(path);
    }
    std::mem::forget(list);
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

#[cfg(test)]
pub(crate) mod fixture;
