//! `rageval history`: the last entries of the history of sweeps at one setting, as a table
//! with a sparkline per rate, CSV, JSON or a page; and the line every sweep appends.

use std::path::Path;

use anyhow::{anyhow, Context, Result};

use crate::app::options::HistoryOptions;
use crate::base::exit::ExitStatus;
use crate::base::input::FileError;
use crate::output::history::view::{self, Changes, Row};
use crate::output::history::{file, page, Entry, Provenance};
use crate::output::report::{write_atomic, Results};

/// Append the line of a sweep whose results were written to `results_json`, whose bytes'
/// sha256 is `digest` (digested as they were written: see `report::Written`); the commit is
/// asked of `git` in `base`, the config's folder.
pub fn append(
    history: &Path,
    results: &Results,
    results_json: &Path,
    digest: String,
    base: &Path,
) -> Result<()> {
    let entry = Entry::of(
        results,
        Provenance {
            time: crate::base::clock::now(),
            checkout: crate::base::git::checkout(base),
            results: results_json.display().to_string(),
            results_digest: digest,
        },
    );
    file::append(history, &entry)?;
    Ok(())
}

pub fn run(s: &HistoryOptions) -> Result<ExitStatus> {
    let path = s.file();
    let mut changes = Changes::default();
    let read = file::read_last(path, s.last(), |line, entry| {
        Some(view::Line {
            line,
            changed: changes.next(&entry),
            entry,
        })
    })
    .map_err(|e| match e {
        FileError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow!(
            "no history at `{}`: every `rageval sweep` appends a line to it (see docs/history.md)",
            path.display()
        ),
        e => anyhow!("cannot read the history `{}`: {e}", path.display()),
    })?;
    for warning in &read.warnings {
        super::eprint_line(warning);
    }
    let reads: Vec<view::Line> = read.kept.into_iter().collect();
    let setting = view::chosen_setting(&reads, s.setting())
        .map_err(|e| anyhow!("`{}`: {e}", path.display()))?;
    let rows: Vec<Row> = reads.iter().map(|r| Row::new(r, Some(&setting))).collect();
    let shown = path.display().to_string();
    if let Some(out) = s.html() {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create folder `{}`", dir.display()))?;
        }
        write_atomic(out, |w| {
            Ok(w.write_all(page::page(&shown, &setting, &rows).as_bytes())?)
        })?;
        if !s.quiet() {
            super::print(&format!(
                "history: wrote {} ({} entries at {setting})\n",
                out.display(),
                rows.len()
            ))?;
        }
    } else if s.csv() {
        super::print_raw(&view::csv(&rows)?)?;
    } else if s.json() {
        super::print_raw(&view::json(&rows)?)?;
    } else if !s.quiet() {
        super::print(&view::table(&shown, read.entries, &setting, &rows))?;
    }
    Ok(ExitStatus::Success)
}
