//! The baseline comparison: which questions both files share, which flipped, whether the
//! rates worsened beyond the tolerance, and whether the flips are more than chance.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{bail, Result};

use super::{listed, mcnemar, output, Check, Comparison, Flip, Policy, TagChange};
use super::{EPS, MAX_MISSING_SHARE};
use crate::adapters::classify::Outcome;
use crate::analysis::stats::{aggregate, SettingStats};
use crate::output::report::Results;
use crate::vocab::limit::{Direction, Limit, Scope};

/// How good an outcome is: error < wrong < right. A flip is worse when this falls.
fn rank(o: Outcome) -> u8 {
    match o {
        Outcome::Error => 0,
        Outcome::FalseRefusal | Outcome::UnwantedAnswer => 1,
        Outcome::Answer | Outcome::EarlyRefusal | Outcome::ModelRefusal => 2,
    }
}

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
        changed,
        common,
    } = shared(cur, base, base_path)?;
    let (runs, bruns) = (cur.runs_of(s), base.runs_of(bs));
    let now = aggregate(
        common.iter().map(|&(q, _)| &runs[q]),
        &cur.questions,
        &cur.meta.pricing,
    );
    let before = aggregate(
        common.iter().map(|&(_, b)| &bruns[b]),
        &base.questions,
        &base.meta.pricing,
    );
    let (mut worse, mut better) = (Vec::new(), Vec::new());
    for &(q, b) in &common {
        let (b, a) = (bruns[b].verdict.outcome, runs[q].verdict.outcome);
        let flip = Flip {
            id: cur.questions[q].id.clone(),
            before: b,
            after: a,
        };
        match rank(a).cmp(&rank(b)) {
            std::cmp::Ordering::Less => worse.push(flip),
            std::cmp::Ordering::Greater => better.push(flip),
            std::cmp::Ordering::Equal => {}
        }
    }
    let p = mcnemar::p_value(worse.len() as u64, better.len() as u64);
    let checks: Vec<Check> = Limit::of(Scope::Gate)
        .filter(|l| l.stat().compared_with_baseline())
        .map(|limit| baseline_check(limit, &now, &before, policy, p))
        .collect();
    let tags_worse = tags_worse(
        &crate::analysis::tags::by_tag(common.iter().map(|&(q, _)| &runs[q]), &cur.questions),
        &crate::analysis::tags::by_tag(common.iter().map(|&(_, b)| &bruns[b]), &base.questions),
        policy.tolerance,
    );
    let comparison = Comparison {
        path: base_path.display().to_string(),
        common: common.len(),
        added,
        removed,
        changed,
        regressed: checks.iter().any(|c| !c.passed),
        worse,
        better,
        p_value: p,
        config_changed: cur.meta.identity.digest != base.meta.identity.digest,
        tags_worse,
    };
    Ok((comparison, checks))
}

/// The questions of the current results and the baseline, by id.
struct Shared {
    /// In the current results only.
    added: Vec<String>,
    /// In the baseline only.
    removed: Vec<String>,
    /// Moved between answerable and unanswerable.
    changed: Vec<String>,
    /// (question in `cur`, question in `base`) of the questions both ask alike.
    common: Vec<(usize, usize)>,
}

/// Match the questions of `cur` with the baseline's; an error when too many of the
/// baseline's are gone for the comparison to mean anything.
fn shared(cur: &Results, base: &Results, base_path: &Path) -> Result<Shared> {
    let cur_q: HashMap<&str, usize> = cur
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| (q.id.as_str(), i))
        .collect();
    let base_ids: HashSet<&str> = base.questions.iter().map(|q| q.id.as_str()).collect();
    let added: Vec<String> = cur
        .questions
        .iter()
        .filter(|q| !base_ids.contains(q.id.as_str()))
        .map(|q| q.id.clone())
        .collect();
    let mut removed = Vec::new();
    let mut changed = Vec::new();
    let mut common: Vec<(usize, usize)> = Vec::new();
    for (b, bq) in base.questions.iter().enumerate() {
        match cur_q.get(bq.id.as_str()) {
            None => removed.push(bq.id.clone()),
            Some(&q) if cur.questions[q].answerable != bq.answerable => changed.push(bq.id.clone()),
            Some(&q) => common.push((q, b)),
        }
    }
    let missing = removed.len() + changed.len();
    if common.is_empty() || missing as f64 > MAX_MISSING_SHARE * base.questions.len() as f64 + EPS {
        bail!(
            "the question set changed too much to compare with the baseline `{}`: {missing} of its {} questions are gone (removed: {}; moved between answerable and unanswerable: {}; added: {}); more than {:.0}% missing makes the comparison meaningless, so gate without a baseline or replace it on purpose with `--update-baseline`",
            base_path.display(),
            base.questions.len(),
            listed(removed.iter().map(String::as_str), 10),
            listed(changed.iter().map(String::as_str), 10),
            listed(added.iter().map(String::as_str), 10),
            MAX_MISSING_SHARE * 100.0
        );
    }
    Ok(Shared {
        added,
        removed,
        changed,
        common,
    })
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

/// The rates of the tags in both `now` and `before` that got worse by more than `tolerance`,
/// in tag order.
fn tags_worse(
    now: &crate::analysis::tags::ByTag,
    before: &crate::analysis::tags::ByTag,
    tolerance: f64,
) -> Vec<TagChange> {
    let mut worse = Vec::new();
    for (tag, t) in now {
        let Some(b) = before.get(tag) else { continue };
        for stat in crate::analysis::tags::TAG_STATS {
            if let (Some(after), Some(before)) = (t.stat(stat), b.stat(stat)) {
                if after - before > tolerance + EPS {
                    worse.push(TagChange {
                        tag: tag.clone(),
                        stat: stat.name(),
                        before,
                        after,
                    });
                }
            }
        }
    }
    worse
}
