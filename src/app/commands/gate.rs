//! `rageval gate`: hold one setting of a results file to the policy; exit 1 on a regression,
//! 2 when the input cannot be judged.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::app::options::{GateOptions, GateSummaryTo};
use crate::base::exit::ExitStatus;
use crate::base::input::{open_limited, FileError, MAX_RESULTS_BYTES};
use crate::output::gate::{self, ResultsError};
use crate::output::report::{write_atomic, Results};
use crate::sweep::Setting;
use crate::vocab::limit::{Kind, Limit};

pub fn run(s: &GateOptions) -> Result<ExitStatus> {
    let current = load(
        &s.results,
        "results",
        "run `rageval sweep` first, or name a results file",
    )?;
    let baseline = match (&s.policy.baseline, s.update_baseline) {
        (Some(path), false) => Some((
            load(path, "baseline", gate::NO_BASELINE_HINT)?,
            path.as_path(),
        )),
        _ => None,
    };
    let report = gate::evaluate(
        (&current, &s.results),
        baseline.as_ref().map(|(doc, path)| (doc, *path)),
        &s.policy,
    )?;
    let mut text = String::new();
    if let Some(warning) = unguarded(s) {
        text.push_str(&warning);
        text.push('\n');
    }
    if s.update_baseline {
        let Some(target) = &s.policy.baseline else {
            bail!("`--update-baseline` needs a baseline path: pass `--baseline FILE` or set `gate.baseline` in rageval.yaml");
        };
        update_baseline(&s.results, target)?;
        text.push_str(&format!(
            "baseline: wrote {} from {} (not compared)\n",
            target.display(),
            s.results.display()
        ));
    }
    text.push_str(&gate::output::human(&report));
    match s.summary {
        GateSummaryTo::Stdout => super::print(&text)?,
        GateSummaryTo::Stderr => super::eprint_raw(&crate::base::safe_text::visible(&text)),
        GateSummaryTo::Nowhere => {}
    }
    if let Some(path) = &s.junit {
        write_file(path, gate::junit::junit(&report).as_bytes())?;
    }
    let md = gate::output::markdown(&report);
    if let Some(path) = &s.markdown {
        write_file(path, md.as_bytes())?;
    }
    if let Some(path) = &s.step_summary {
        append(path, &md).with_context(|| {
            format!(
                "cannot append to `GITHUB_STEP_SUMMARY` `{}`",
                path.display()
            )
        })?;
    }
    Ok(if report.passed() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// A gate without rate or token limits (its own or a tag's) or a baseline checks only failed calls: say so, with
/// the fix.
pub fn unguarded(s: &GateOptions) -> Option<String> {
    let limited = s
        .policy
        .limits
        .iter()
        .any(|(limit, _)| matches!(limit.kind(), Kind::Share | Kind::Tokens));
    // A tag held to its own limits (`gate.tags`) is a rate limit too.
    if limited || !s.policy.tags.is_empty() || s.policy.baseline.is_some() {
        return None;
    }
    let (ua, fr) = (Limit::MaxUnwantedAnswerRate, Limit::MaxFalseRefusalRate);
    Some(format!(
        "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.{}` and `gate.{}` (or pass `{}` and `{}`), see docs/ci.md",
        ua.key(),
        fr.key(),
        ua.flag(),
        fr.flag()
    ))
}

/// `sweep --gate`, before the sweep: the gated setting is in the grid, the baseline reads and
/// parses and holds that setting. A mistake here would otherwise show only after every model
/// call was made and the previous reports were overwritten.
pub fn preflight(s: &GateOptions, grid: &[Setting]) -> Result<()> {
    // Every dimension, as the grid is planned: a results file names the same or fewer.
    let columns = crate::vocab::dim::Dim::ALL;
    let source = if s.setting_from_flag {
        "--setting"
    } else {
        "gate.setting"
    };
    if let Some(spec) = &s.policy.setting {
        spec.find(grid, &columns)
            .map_err(|e| anyhow::anyhow!("cannot gate `{source} {spec}`: {e}; nothing was run"))?;
    }
    if let (Some(path), false) = (&s.policy.baseline, s.update_baseline) {
        let base = load(path, "baseline", gate::NO_BASELINE_HINT)?;
        if let Some(spec) = &s.policy.setting {
            spec.find_in(&base).map_err(|e| {
                anyhow::anyhow!(
                    "the baseline `{}` cannot be compared at `{spec}`: {e}; nothing was run",
                    path.display()
                )
            })?;
        }
    }
    Ok(())
}

/// Read a results file; a missing one gets a hint at how to make it.
fn load(path: &Path, what: &str, hint: &str) -> Result<Results> {
    match gate::load(path) {
        Ok(doc) => Ok(doc),
        Err(ResultsError::Read {
            reason: FileError::Io(e),
            ..
        }) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{what} `{}` does not exist: {hint}", path.display())
        }
        // The message already holds its cause; a chain would print the cause twice.
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

/// Copy the results over the baseline, atomically, byte for byte, streamed: a record of
/// millions of runs is never held whole.
fn update_baseline(results: &Path, target: &Path) -> Result<()> {
    if crate::base::input::same_file(results, target) {
        return Ok(());
    }
    let cannot_read = |e: &dyn std::fmt::Display| {
        anyhow::anyhow!("cannot read results `{}`: {e}", results.display())
    };
    let mut reader = open_limited(results, MAX_RESULTS_BYTES).map_err(|e| cannot_read(&e))?;
    create_parent(target)?;
    write_atomic(target, |w| {
        std::io::copy(&mut reader, w).map_err(|e| cannot_read(&e))?;
        Ok(())
    })
}

/// Create the folder `path` goes in.
fn create_parent(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create folder `{}`", dir.display()))?;
    }
    Ok(())
}

/// Write a whole file atomically, creating its folder.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    create_parent(path)?;
    write_atomic(path, |w| Ok(w.write_all(bytes)?))
}

/// Append to a file that other steps write too (GitHub's job summary).
fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.write_all(b"\n")
}
