//! The choice among settings, as the numbers alone decide it: the lowest weighted cost among
//! the certified settings, else among those within the limits on the measured rates, ties
//! broken by a fixed list of rules; when nothing meets the limits, the setting closest to them.

use std::cmp::Ordering;

use super::config::RecommendConfig;
use super::counts::Counts;
use super::recommendation::{Miss, TieRule};
use crate::sweep::Setting;
use crate::vocab::limit::Limit;

/// Costs closer than this are equal: sums of the same rates may differ in the last bit.
const COST_EPSILON: f64 = 1e-12;

/// The weighted cost of a setting's counts; undefined rates count as 0.
pub fn cost(c: &Counts, policy: &RecommendConfig) -> f64 {
    let w = &policy.weights;
    let rate = |l: Limit| c.value(l).unwrap_or(0.0);
    w.false_refusal_rate * rate(Limit::MaxFalseRefusalRate)
        + w.unwanted_answer_rate * rate(Limit::MaxUnwantedAnswerRate)
        + w.prompt_tokens_per_question * c.tokens_per_question()
        + w.wrong_answer_rate * rate(Limit::MaxWrongAnswerRate)
}

/// The limits `c` breaks on its measured values, smallest relative miss first. A limit on an
/// undefined statistic (no probes, say) holds.
pub fn misses(c: &Counts, limits: &[(Limit, f64)]) -> Vec<Miss> {
    let mut out: Vec<Miss> = limits
        .iter()
        .filter_map(|&(limit, max)| {
            let value = c.value(limit)?;
            (!limit.holds(value, max, 0.0)).then_some(Miss {
                limit,
                max,
                value,
                excess: value - max,
            })
        })
        .collect();
    out.sort_by(|a, b| a.relative().total_cmp(&b.relative()));
    out
}

/// Whether `c` meets every limit on its measured values.
fn meets(c: &Counts, limits: &[(Limit, f64)]) -> bool {
    limits
        .iter()
        .all(|&(limit, max)| c.value(limit).is_none_or(|v| limit.holds(v, max, 0.0)))
}

impl TieRule {
    /// How `a` compares with `b` under this rule (less: `a` first).
    fn compare(self, a: (&Setting, &Counts), b: (&Setting, &Counts)) -> Ordering {
        match self {
            TieRule::FewerPromptTokens => {
                a.1.tokens_per_question()
                    .total_cmp(&b.1.tokens_per_question())
            }
            TieRule::HigherMinScore => b.0.min_score.to_f64().total_cmp(&a.0.min_score.to_f64()),
            TieRule::SmallerK => a.0.k.cmp(&b.0.k),
            TieRule::GridOrder => Ordering::Equal,
        }
    }
}

/// The tie-break between two settings of equal cost, and the rule that decided.
fn tie_break(a: (&Setting, &Counts), b: (&Setting, &Counts)) -> (Ordering, Option<TieRule>) {
    [
        TieRule::FewerPromptTokens,
        TieRule::HigherMinScore,
        TieRule::SmallerK,
    ]
    .into_iter()
    .map(|rule| (rule.compare(a, b), rule))
    .find(|(o, _)| o.is_ne())
    .map(|(o, rule)| (o, Some(rule)))
    .unwrap_or((Ordering::Equal, None))
}

/// The choice among settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Choice {
    /// The chosen setting: the best certified one, else the best within the limits on the
    /// measured rates; `None` when no setting meets them.
    pub best: Option<usize>,
    /// Whether `best` is certified.
    pub certified: bool,
    /// Per setting: certified.
    pub certified_flags: Vec<bool>,
    /// Settings within the limits on the measured rates.
    pub feasible: usize,
    /// The tie-break rule that put `best` ahead of the runner-up.
    pub tie_break: Option<TieRule>,
    /// When nothing meets the limits: the setting closest to meeting them.
    pub closest: Option<usize>,
}

/// Choose among `settings`, counted as `counts`, certified as `certified` (all parallel),
/// never one an adaptive sweep dropped (`dropped[i]`; a shorter slice: the rest were not).
pub fn choose(
    settings: &[Setting],
    counts: &[Counts],
    policy: &RecommendConfig,
    limits: &[(Limit, f64)],
    certified_flags: Vec<bool>,
    dropped: &[bool],
) -> Choice {
    let n = settings.len().min(counts.len()).min(certified_flags.len());
    let feasible: Vec<usize> = (0..n)
        .filter(|&i| meets(&counts[i], limits) && !dropped.get(i).copied().unwrap_or(false))
        .collect();
    let certified: Vec<usize> = (0..n).filter(|&i| certified_flags[i]).collect();
    let mut choice = Choice {
        feasible: feasible.len(),
        certified_flags,
        ..Choice::default()
    };
    let pool = if certified.is_empty() {
        feasible
    } else {
        certified
    };
    if pool.is_empty() {
        choice.closest = closest(&settings[..n], &counts[..n], limits);
        return choice;
    }
    let costs: Vec<f64> = pool.iter().map(|&i| cost(&counts[i], policy)).collect();
    let lowest = costs.iter().copied().fold(f64::INFINITY, f64::min);
    let mut tied: Vec<usize> = pool
        .iter()
        .zip(&costs)
        .filter(|(_, &c)| c - lowest <= COST_EPSILON * lowest.abs().max(1.0))
        .map(|(&i, _)| i)
        .collect();
    tied.sort_by(|&a, &b| {
        tie_break((&settings[a], &counts[a]), (&settings[b], &counts[b]))
            .0
            .then(a.cmp(&b))
    });
    let best = tied[0];
    choice.tie_break = tied.get(1).map(|&second| {
        tie_break(
            (&settings[best], &counts[best]),
            (&settings[second], &counts[second]),
        )
        .1
        .unwrap_or(TieRule::GridOrder)
    });
    choice.certified = choice.certified_flags[best];
    choice.best = Some(best);
    choice
}

/// When no setting meets the limits: the fewest limits missed, then the smallest total miss on
/// the common scale, then the usual tie-break.
fn closest(settings: &[Setting], counts: &[Counts], limits: &[(Limit, f64)]) -> Option<usize> {
    let n = settings.len().min(counts.len());
    // Each setting's misses once, not once per comparison.
    let keys: Vec<(usize, f64)> = (0..n)
        .map(|i| {
            let m = misses(&counts[i], limits);
            (m.len(), m.iter().map(Miss::relative).sum())
        })
        .collect();
    (0..n).min_by(|&a, &b| {
        let (ka, kb) = (keys[a], keys[b]);
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(tie_break((&settings[a], &counts[a]), (&settings[b], &counts[b])).0)
            .then(a.cmp(&b))
    })
}
