//! The baseline comparison: which questions both files share, which flipped, whether the
//! rates worsened beyond the tolerance, and whether the flips are more than chance.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Result};

use super::results::{QuestionRow, ResultsFile, RunRow};
use super::{listed, mcnemar, output, Check, Comparison, Figures, Flip, Policy, Rate};
use super::{EPS, MAX_MISSING_SHARE};
use crate::adapters::classify::Outcome;

/// How good an outcome is: error < wrong < right. A flip is worse when this falls.
fn rank(o: Outcome) -> u8 {
    match o {
        Outcome::Error => 0,
        Outcome::FalseRefusal | Outcome::UnwantedAnswer => 1,
        Outcome::Answer | Outcome::EarlyRefusal | Outcome::ModelRefusal => 2,
    }
}

pub(super) fn compare(
    cur: &ResultsFile,
    runs: &HashMap<&str, &RunRow>,
    base: &ResultsFile,
    bruns: &HashMap<&str, &RunRow>,
    base_path: &Path,
    policy: &Policy,
) -> Result<(Comparison, Vec<Check>)> {
    let cur_q: HashMap<&str, &QuestionRow> =
        cur.questions.iter().map(|q| (q.id.as_str(), q)).collect();
    let base_q: HashMap<&str, &QuestionRow> =
        base.questions.iter().map(|q| (q.id.as_str(), q)).collect();
    let added: Vec<String> = cur
        .questions
        .iter()
        .filter(|q| !base_q.contains_key(q.id.as_str()))
        .map(|q| q.id.clone())
        .collect();
    let mut removed = Vec::new();
    let mut changed = Vec::new();
    let mut common: Vec<(&QuestionRow, &QuestionRow)> = Vec::new();
    for bq in &base.questions {
        match cur_q.get(bq.id.as_str()) {
            None => removed.push(bq.id.clone()),
            Some(q) if q.answerable != bq.answerable => changed.push(bq.id.clone()),
            Some(q) => common.push((q, bq)),
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

    let now = Figures::of(common.iter().map(|(q, _)| (*q, runs[q.id.as_str()])));
    let before = Figures::of(common.iter().map(|(_, bq)| (*bq, bruns[bq.id.as_str()])));
    let (mut worse, mut better) = (Vec::new(), Vec::new());
    for (q, _) in &common {
        let (b, a) = (bruns[q.id.as_str()].outcome, runs[q.id.as_str()].outcome);
        let flip = Flip {
            id: q.id.clone(),
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
    let significant = p < policy.alpha;

    let mut checks = Vec::new();
    for rate in Rate::ALL {
        let name = format!("{} vs baseline", rate.name());
        let (Some(v), Some(b)) = (now.rate(rate), before.rate(rate)) else {
            checks.push(Check {
                name,
                passed: true,
                figures: rate.undefined().into(),
            });
            continue;
        };
        let tol = policy.tolerance;
        let (worsened, figures) = if rate.higher_is_worse() {
            let w = v - b > tol + EPS;
            let op = if w { ">" } else { "<=" };
            (w, format!("{v:.3} {op} {b:.3} + tolerance {tol:.3}"))
        } else {
            let w = b - v > tol + EPS;
            let op = if w { "<" } else { ">=" };
            (w, format!("{v:.3} {op} {b:.3} - tolerance {tol:.3}"))
        };
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
        checks.push(Check {
            name,
            passed,
            figures,
        });
    }
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
        config_changed: match (&cur.config_digest, &base.config_digest) {
            (Some(a), Some(b)) => a != b,
            _ => false,
        },
    };
    Ok((comparison, checks))
}
