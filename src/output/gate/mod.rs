//! The CI regression gate: one setting of a results file, held to absolute limits and compared
//! question by question with a baseline.
//!
//! The gate reads results.json as every consumer does, [`Record`] into [`Results`], and checks
//! the gated setting's statistics as `stats::aggregate` counted them; a baseline comparison
//! aggregates the runs of the questions both files share the same way. Latency is never
//! compared: it varies from run to run.

pub mod comment;
mod compare;
pub mod config;
pub mod github;
pub mod junit;
pub mod metrics;
pub mod output;
pub mod policy;
pub mod trend;

use std::path::Path;

use anyhow::{anyhow, bail, Result};

use crate::adapters::classify::Outcome;
use crate::analysis::stats::SettingStats;
pub use crate::output::paired::TagChange;
use crate::output::record::Record;
use crate::output::report::Results;
use crate::vocab::limit::{Direction, Kind, Limit, Limits, Stat};
pub use policy::{Policy, SettingSpec};

pub use crate::output::record::RecordError as ResultsError;

use policy::listed;

/// A baseline that lost more than this share of its questions (removed, or moved between
/// answerable and unanswerable) is not comparable: the gate stops with exit status 2.
pub const MAX_MISSING_SHARE: f64 = 0.2;

/// What to do about a baseline that does not exist yet.
pub const NO_BASELINE_HINT: &str =
    "create it on purpose with `--update-baseline`, which copies the current results";

/// Rates within this distance are equal (they are ratios of small counts).
const EPS: f64 = 1e-9;

/// One check and its figures, as `0.333 > limit 0.250`.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub figures: String,
}

/// A question whose outcome at the gated setting changed between baseline and results.
#[derive(Debug, Clone, PartialEq)]
pub struct Flip {
    pub id: String,
    pub before: Outcome,
    pub after: Outcome,
}

/// The comparison with a baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub path: String,
    /// Questions in both files, compared.
    pub common: usize,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Questions that moved between answerable and unanswerable; not compared.
    pub changed: Vec<String>,
    /// Flipped for the worse: right -> wrong, or anything -> error.
    pub worse: Vec<Flip>,
    /// Flipped for the better.
    pub better: Vec<Flip>,
    /// Exact McNemar p-value over `worse` and `better`.
    pub p_value: f64,
    /// True when a baseline check failed; the flips are then the regression.
    pub regressed: bool,
    /// The baseline was produced with another configuration.
    pub config_changed: bool,
    /// Tags (of the questions both files share) whose rate got worse by more than the
    /// tolerance: flagged, never failed on (a tag's few questions make a noisy rate; hold a
    /// tag to a limit with `gate.tags`).
    pub tags_worse: Vec<TagChange>,
}

/// What the gate found.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The gated setting's id.
    pub setting: String,
    pub results: String,
    pub questions: usize,
    pub checks: Vec<Check>,
    pub baseline: Option<Comparison>,
    pub alpha: f64,
    /// The trend alarm's finding, when it is on.
    pub trend: Option<trend::Trend>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| !c.passed).count()
    }
}

/// Read a results file through the record type, with statistics and insight computed afresh.
pub fn load(path: &Path) -> Result<Results, ResultsError> {
    Record::load(path)?
        .into_results()
        .map_err(|message| ResultsError::Inconsistent {
            path: path.to_path_buf(),
            message,
        })
}

/// The setting the policy gates: `--setting` / `gate.setting`, else the results' recommendation.
pub fn gated_spec(policy: &Policy, current: &Results, path: &Path) -> Result<SettingSpec> {
    if let Some(spec) = &policy.setting {
        return Ok(spec.clone());
    }
    if let Some(rec) = &current.insight.recommendation.setting {
        return rec.parse().map_err(|e| {
            anyhow!(
                "`{}`: the recommended setting `{rec}` is not `name=value`: {e}",
                path.display(),
            )
        });
    }
    let example = current
        .settings
        .first()
        .map_or_else(|| "min_score=0.2,k=4".to_string(), |s| s.id());
    bail!(
        "no gated setting: `{}` has no recommended setting; pass `--setting {example}` or set `gate.setting` in rageval.yaml",
        path.display()
    )
}

/// Run every check of `policy` on `current`, and compare with `baseline` when given.
pub fn evaluate(
    current: (&Results, &Path),
    baseline: Option<(&Results, &Path)>,
    policy: &Policy,
) -> Result<Report> {
    let (cur, cur_path) = current;
    let spec = gated_spec(policy, cur, cur_path)?;
    let setting = spec
        .find_in(cur)
        .map_err(|e| anyhow!("cannot gate `{}`: {e}", cur_path.display()))?;
    let id = cur.setting_id(setting);
    let mut checks = limit_checks(&cur.stats[setting], &policy.limits);
    checks.extend(tag_checks(cur.by_tag(setting), &policy.tags));
    if policy.require_certified {
        checks.push(certified_check(cur, setting));
    }

    let comparison = match baseline {
        None => None,
        Some((base, base_path)) => {
            let bsetting = spec.find_in(base).map_err(|e| {
                anyhow!(
                    "the baseline `{}` cannot be compared at `{id}`: {e}",
                    base_path.display(),
                )
            })?;
            let (cmp, more) =
                compare::compare((cur, setting), (base, bsetting), base_path, policy)?;
            checks.extend(more);
            Some(cmp)
        }
    };
    let trend = match &policy.trend {
        Some(t) => Some(trend::evaluate(t, cur, cur_path, setting)?),
        None => None,
    };
    if let Some(t) = &trend {
        checks.extend(t.checks());
    }
    Ok(Report {
        trend,
        setting: id.to_string(),
        results: cur_path.display().to_string(),
        questions: cur.questions.len(),
        checks,
        baseline: comparison,
        alpha: policy.alpha,
    })
}

/// `gate.require_certified`: whether the gated setting is certified, and if not, what it takes
/// (in `output::explain`'s words).
fn certified_check(r: &Results, setting: usize) -> Check {
    let passed = r.insight.is_certified(setting);
    Check {
        name: "certified".into(),
        passed,
        figures: crate::output::explain::Explain::of(r).certified_check(setting, passed),
    }
}

/// The gate's absolute limits in the order it checks them: failed calls first (always
/// checked), then the rates a baseline also holds, then the rest, each in [`Limit::ALL`] order.
fn gate_order(limits: &Limits) -> Vec<(Limit, f64)> {
    let mut v: Vec<(Limit, f64)> = limits.iter().collect();
    v.sort_by_key(
        |(l, _)| match (l.kind(), l.stat().compared_with_baseline()) {
            (Kind::Count, _) => 0,
            (_, true) => 1,
            (_, false) => 2,
        },
    );
    v
}

/// One check of a limit against the statistics of the gated setting.
fn limit_checks(s: &SettingStats, limits: &Limits) -> Vec<Check> {
    checks_of(|stat| s.stat(stat), limits, "")
}

/// The checks of `gate.tags` at the gated setting, whose rates by tag are `by_tag`: each tag's
/// limits as [`limit_checks`] checks a setting's, named `tag TAG: STAT`. A tag no question
/// carries fails (a misspelt tag would otherwise pass unseen).
fn tag_checks(by_tag: &crate::analysis::tags::ByTag, tags: &[(String, Limits)]) -> Vec<Check> {
    let mut checks = Vec::new();
    for (tag, limits) in tags {
        let prefix = format!("tag {tag}: ");
        match by_tag.get(tag) {
            Some(t) => checks.extend(checks_of(|stat| t.stat(stat), limits, &prefix)),
            None => checks.push(Check {
                name: format!("tag {tag}"),
                passed: false,
                figures: format!(
                    "no question carries the tag; the tags are {}",
                    listed(by_tag.keys().map(String::as_str), 8)
                ),
            }),
        }
    }
    checks
}

/// One check per limit of `limits`, reading each statistic with `value`, named `PREFIXSTAT`.
fn checks_of(value: impl Fn(Stat) -> Option<f64>, limits: &Limits, prefix: &str) -> Vec<Check> {
    gate_order(limits)
        .into_iter()
        .map(|(limit, max)| {
            let stat = limit.stat();
            let name = format!("{prefix}{}", stat.name());
            let Some(v) = value(stat) else {
                return Check {
                    name,
                    passed: true,
                    figures: stat.undefined().into(),
                };
            };
            let ok = limit.holds(v, max, EPS);
            let op = match (limit.direction(), ok) {
                (Direction::Max, true) => "<=",
                (Direction::Max, false) => ">",
                (Direction::Min, true) => ">=",
                (Direction::Min, false) => "<",
            };
            let figures = match limit.kind() {
                Kind::Share => format!("{v:.3} {op} limit {max:.3}"),
                Kind::Tokens => format!("{v:.1} {op} limit {max}"),
                Kind::Count => format!("{} {op} limit {}", v as u64, max as u64),
            };
            Check {
                name,
                passed: ok,
                figures,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
