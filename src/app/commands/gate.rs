//! `rageval gate`: hold one setting of a results file to the policy; exit 1 on a regression,
//! 2 when the input cannot be judged.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::app::options::{GateOptions, GateSummaryTo};
use crate::base::exit::ExitStatus;
use crate::base::input::{open_limited, FileError, MAX_RESULTS_BYTES};
use crate::output::gate::comment::Comment;
use crate::output::gate::github::{self, Posted, PullRequest};
use crate::output::gate::{self, metrics, ResultsError};
use crate::output::labels::LabelsFile;
use crate::output::report::{self, write_atomic, Results};
use crate::sweep::Setting;
use crate::vocab::limit::{Kind, Limit};

pub async fn run(s: &GateOptions) -> Result<ExitStatus> {
    let mut current = load(
        &s.results,
        "results",
        "run `rageval sweep` first, or name a results file",
    )?;
    if let Some(path) = &s.labels {
        current = labelled(current, path)?;
        let error = current.grader_error();
        if let Some(warning) = error.as_ref().and_then(report::summary::grader_warning) {
            super::eprint_line(&warning);
        }
    }
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
    for warning in report.trend.iter().flat_map(|t| &t.warnings) {
        super::eprint_line(warning);
    }
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
    write_metrics(s, &report, &current)?;
    if let Some(target) = &s.comment {
        let comment = Comment {
            report: &report,
            current: &current,
            baseline: baseline.as_ref().map(|(doc, _)| doc),
            // The trend alarm's line (`gate --trend`), when the gate runs one.
            trend: report.trend.as_ref().map(|t| t.line()),
        };
        post_comment(s, target, &comment).await;
    }
    Ok(if report.passed() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// `--benchmark-json` and `--openmetrics`: the gated setting's numbers for CI dashboards.
fn write_metrics(s: &GateOptions, report: &gate::Report, current: &Results) -> Result<()> {
    if s.benchmark_json.is_none() && s.openmetrics.is_none() {
        return Ok(());
    }
    let setting = current
        .settings
        .iter()
        .position(|x| x.id() == report.setting)
        .context("the gated setting is not in the results")?;
    let numbers = metrics::of(current, setting);
    if let Some(path) = &s.benchmark_json {
        let text = metrics::benchmark_json(&numbers, &report.setting, report.questions);
        write_file(path, text.as_bytes())?;
    }
    if let Some(path) = &s.openmetrics {
        write_file(
            path,
            metrics::openmetrics(&numbers, &report.setting).as_bytes(),
        )?;
    }
    Ok(())
}

/// `--comment`: create or update the pull request's comment. Nothing here changes the gate's
/// verdict: without a pull request or a token, or when GitHub refuses, a notice on stderr says
/// so.
async fn post_comment(
    s: &GateOptions,
    target: &Result<PullRequest, String>,
    comment: &Comment<'_>,
) {
    let pr = match target {
        Ok(pr) => pr,
        Err(why) => {
            super::eprint_line(&format!("notice: --comment: {why}; no comment posted"));
            return;
        }
    };
    let place = format!("pull request {}#{}", pr.repository, pr.number);
    match github::upsert(pr, &comment.body()).await {
        Ok(posted) if s.summary != GateSummaryTo::Nowhere => {
            let (verb, id) = match posted {
                Posted::Created(id) => ("created", id),
                Posted::Updated(id) => ("updated", id),
            };
            super::eprint_line(&format!("gate: {verb} comment {id} on {place}"));
        }
        Ok(_) => {}
        Err(e) => super::eprint_line(&format!(
            "notice: --comment: no comment posted on {place}: {e}; the gate's verdict stands"
        )),
    }
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

/// `current` with the labels of `path` in place of the grader's reading, every count and the
/// certification recomputed.
fn labelled(current: Results, path: &Path) -> Result<Results> {
    let checked = LabelsFile::load(path)?.checked(path, &current)?;
    Ok(current.with_labels_by(&checked.labels, checked.ids))
}

/// Read a results file; a missing one gets a hint at how to make it.
pub(super) fn load(path: &Path, what: &str, hint: &str) -> Result<Results> {
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
pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
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
