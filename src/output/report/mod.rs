//! Reports: one module per format behind [`Exporter`], all fed from one [`Results`] value.
//!
//! Files are written atomically (a temporary file in the same folder, then a rename), so an
//! interrupted run leaves the previous report whole; a device, FIFO or link at the path is
//! written through, never replaced ([`write_to`], from `base::atomic`).

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
pub use crate::base::atomic::{remove_stale_temporaries, write_atomic, write_to, Existing};
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

/// The reports a sweep wrote.
#[derive(Debug)]
pub struct Written {
    /// Every report's path, in [`exporters`] order.
    pub paths: Vec<PathBuf>,
    /// `sha256:<hex>` of results.json's bytes, digested as they were written: what the
    /// history records of the results, without reading the file back.
    pub results_digest: String,
}

/// Write every report into `dir`, each atomically, the reports for people rendering `summary`.
///
/// The reports are independent, so each is written on its own thread: a large sweep's
/// runs.csv, results.json and report.html take about the same time, and together they are
/// most of the in-process work. The first error in [`exporters`] order is the one returned.
pub fn write_all(results: &Results, summary: &Summary, dir: &Path) -> Result<Written> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create report folder `{}`", dir.display()))?;
    remove_stale_temporaries(dir);
    // Worked out once here rather than raced for by the writers.
    let _ = results.text();
    let exporters = exporters();
    let outcomes: Vec<Result<(PathBuf, Option<String>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = exporters
            .iter()
            .map(|exporter| {
                let path = dir.join(exporter.file_name());
                let digested = exporter.file_name() == JsonResults.file_name();
                scope.spawn(move || {
                    let mut digest = None;
                    let written = write_atomic(&path, |w| {
                        if !digested {
                            return exporter.write_with(results, summary, w);
                        }
                        let mut w = crate::base::digest::Digesting::new(w);
                        exporter.write_with(results, summary, &mut w)?;
                        digest = Some(w.finish());
                        Ok(())
                    });
                    crate::base::timing::mark(exporter.file_name());
                    written.map(|()| (path, digest))
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
    let mut written = Written {
        paths: Vec::new(),
        results_digest: String::new(),
    };
    for outcome in outcomes {
        let (path, digest) = outcome?;
        written.paths.push(path);
        written.results_digest.extend(digest);
    }
    Ok(written)
}

#[cfg(test)]
pub(crate) mod fixture;

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest the history records is the sha256 of the results.json on disk, byte for
    /// byte, as reading it back gave; the other reports are listed in order.
    #[test]
    fn the_results_digest_is_the_sha256_of_the_written_results_json() {
        let r = fixture::results();
        let dir = tempfile::tempdir().unwrap();
        let written = write_all(&r, &Summary::of(&r), dir.path()).unwrap();
        let json = dir.path().join("results.json");
        assert_eq!(
            written.results_digest,
            crate::base::digest::file_digest(&json).unwrap()
        );
        let bytes = std::fs::read(&json).unwrap();
        assert!(bytes.len() > 1000, "{}", bytes.len());
        use sha2::Digest;
        let plain: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(written.results_digest, format!("sha256:{plain}"));
        let names: Vec<_> = exporters()
            .iter()
            .map(|e| dir.path().join(e.file_name()))
            .collect();
        assert_eq!(written.paths, names);
    }
}
