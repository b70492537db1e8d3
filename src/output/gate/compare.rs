//! The baseline comparison: which questions both files share, which flipped, whether the
//! rates worsened beyond the tolerance, and whether the flips are more than chance.

use std::path::Path;

use anyhow::{bail, Result};

use super::{listed, output, Check, Comparison, Flip, Policy};
use super::{EPS, MAX_MISSING_SHARE};
use crate::analysis::stats::SettingStats;
use crate::output::paired::{self, Shared};
use crate::output::report::Results;
use crate::vocab::limit::{Direction, Limit, Scope};

/// Compare setting `s` of `cur` with setting `bs` of `base`.
pub(super) fn compare(
    (cur, s): (&Results, usize),
    (base, bs): (&Results, usize),
    base_path: &Path,
    policy: &Policy,
) -> Result<(Comparison, Vec<Check>)> {
    let Shared {
        added,
        removed,
        moved,
        common,
    } = shared(cur, base, base_path)?;
    let paired = paired::pair((cur, s), (base, bs), &common);
    let flips = |changes: Vec<&paired::Change>| -> Vec<Flip> {
        changes
            .into_iter()
            .map(|c| Flip {
                id: c.id.clone(),
                before: c.before.outcome,
                after: c.after.outcome,
            })
            .collect()
    };
    let p = paired.p_value();
    let checks: Vec<Check> = Limit::of(Scope::Gate)
        .filter(|l| l.stat().compared_with_baseline())
        .map(|limit| baseline_check(limit, &paired.after, &paired.before, policy, p))
        .collect();
    let tolerance = policy.tolerance;
    let comparison = Comparison {
        path: base_path.display().to_string(),
        common: common.len(),
        added,
        removed,
        changed: moved,
        regressed: checks.iter().any(|c| !c.passed),
        worse: flips(paired.worse().collect()),
        better: flips(paired.better().collect()),
        p_value: p,
        config_changed: cur.meta.identity.digest != base.meta.identity.digest,
        tags_worse: paired.tag_changes(|before, after| after - before > tolerance + EPS),
    };
    Ok((comparison, checks))
}

/// Match the questions of `cur` with the baseline's; an error when too many of the
/// baseline's are gone for the comparison to mean anything.
fn shared(cur: &Results, base: &Results, base_path: &Path) -> Result<Shared> {
    let s = paired::shared(cur, base);
    let missing = s.removed.len() + s.moved.len();
    if s.common.is_empty() || missing as f64 > MAX_MISSING_SHARE * base.questions.len() as f64 + EPS
    {
        bail!(
            "the question set changed too much to compare with the baseline `{}`: {missing} of its {} questions are gone (removed: {}; moved between answerable and unanswerable: {}; added: {}); more than {:.0}% missing makes the comparison meaningless, so gate without a baseline or replace it on purpose with `--update-baseline`",
            base_path.display(),
            base.questions.len(),
            listed(s.removed.iter().map(String::as_str), 10),
            listed(s.moved.iter().map(String::as_str), 10),
            listed(s.added.iter().map(String::as_str), 10),
            MAX_MISSING_SHARE * 100.0
        );
    }
    Ok(s)
}

/// Whether `limit`'s statistic worsened from `before` to `now` by more than the tolerance
/// (and, when the policy asks, significantly: McNemar's `p` below alpha).
fn baseline_check(
    limit: Limit,
    now: &SettingStats,
    before: &SettingStats,
    policy: &Policy,
    p: f64,
) -> Check {
    let stat = limit.stat();
    let name = format!("{} vs baseline", stat.name());
    let (Some(v), Some(b)) = (now.stat(stat), before.stat(stat)) else {
        return Check {
            name,
            passed: true,
            figures: stat.undefined().into(),
        };
    };
    let tol = policy.tolerance;
    let (worsened, figures) = if limit.direction() == Direction::Max {
        let w = v - b > tol + EPS;
        let op = if w { ">" } else { "<=" };
        (w, format!("{v:.3} {op} {b:.3} + tolerance {tol:.3}"))
    } else {
        let w = b - v > tol + EPS;
        let op = if w { "<" } else { ">=" };
        (w, format!("{v:.3} {op} {b:.3} - tolerance {tol:.3}"))
    };
    let significant = p < policy.alpha;
    let (passed, figures) = match (worsened, policy.require_significance) {
        (false, _) => (true, figures),
        (true, false) => (false, figures),
        (true, true) if significant => (
            false,
            format!(
                "{figures}, significant (p={} < alpha {})",
                output::p(p),
                policy.alpha
            ),
        ),
        (true, true) => (
            true,
            format!(
                "{figures}, not significant (p={} >= alpha {})",
                output::p(p),
                policy.alpha
            ),
        ),
    };
    Check {
        name,
        passed,
        figures,
    }
}
