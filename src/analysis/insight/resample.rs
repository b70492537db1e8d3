//! How much the recommendation owes to the particular questions: the choice made again on
//! resampled question sets (a stratified bootstrap), and K-fold cross-validation (choose on K-1
//! folds, measure on the one held out). Both recount the runs already made ([`RunTable`]): no
//! model call, only the selection is recomputed.
//!
//! Everything is seeded (`recommend.resampling_seed`): the same record gives the same figures, whatever
//! the machine and its number of cores (each resample draws from its own generator).

use std::collections::HashMap;

use super::certifier::{Certifier, Evidence};
use super::choice::choose;
use super::counts::{slot, RunTable, Tally, RATE_LIMITS};
use super::recommend::{certify, Resampling};
use super::recommendation::{ChoiceStability, CrossValidation, FoldChoice, HeldOut};
use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::insight::wilson::wilson;
use crate::sweep::Setting;
use crate::vocab::limit::Limit;

/// Question indices by stratum (answerable or not, probe or not), in question order.
fn strata(table: &RunTable) -> Vec<Vec<usize>> {
    let mut by: std::collections::BTreeMap<u8, Vec<usize>> = Default::default();
    for (q, &class) in table.strata().iter().enumerate() {
        by.entry(class).or_default().push(q);
    }
    by.into_values().collect()
}

/// What one resample chose: the setting (or none) and whether it was certified.
type Chosen = (Option<usize>, bool);

/// The choices of resamples `range`, each drawn from the generator seeded by its own number.
fn resample_choices(
    table: &RunTable,
    settings: &[Setting],
    policy: &RecommendConfig,
    seed: u64,
    range: std::ops::Range<usize>,
) -> Vec<Chosen> {
    let strata = strata(table);
    let mut certifier = Certifier::new(policy, settings);
    let mut weights = vec![0u32; table.questions()];
    range
        .map(|b| {
            let mut rng =
                fastrand::Rng::with_seed(seed ^ (b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            weights.fill(0);
            for members in &strata {
                for _ in 0..members.len() {
                    weights[members[rng.usize(..members.len())]] += 1;
                }
            }
            let c = choice_under(&mut certifier, table, &weights, (settings, policy));
            (c.best, c.certified)
        })
        .collect()
}

/// The choice with the questions weighing `weights`: certified by `certifier`, never a
/// setting an adaptive sweep dropped (in a resample either).
fn choice_under(
    certifier: &mut Certifier,
    table: &RunTable,
    weights: &[u32],
    (settings, policy): (&[Setting], &RecommendConfig),
) -> crate::analysis::insight::choice::Choice {
    let counts = table.all_counts(Some(weights));
    let labelled = table.all_samples(Some(weights));
    let e = Evidence {
        counts: &counts,
        labelled: labelled.as_deref(),
    };
    let dropped = table.dropped();
    let certified = certify(certifier, e, dropped).certified;
    choose(
        settings,
        &counts,
        policy,
        &certifier.limits,
        certified,
        dropped,
    )
}

/// The stability of the choice over `r.resamples` bootstrap resamples; `None` when resampling
/// is off or there is nothing to resample.
pub fn bootstrap(
    table: &RunTable,
    settings: &[Setting],
    policy: &RecommendConfig,
    chosen: Option<usize>,
    r: Resampling,
) -> Option<ChoiceStability> {
    if r.resamples == 0 || table.questions() == 0 || settings.is_empty() {
        return None;
    }
    // The resamples are independent: share them out over the cores, in fixed blocks.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(r.resamples);
    let block = r.resamples.div_ceil(threads);
    let choices: Vec<Chosen> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let range = (t * block).min(r.resamples)..((t + 1) * block).min(r.resamples);
                scope.spawn(move || resample_choices(table, settings, policy, r.seed, range))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let total = choices.len().max(1) as f64;
    let mut freq: HashMap<Option<usize>, usize> = HashMap::new();
    for (best, _) in &choices {
        *freq.entry(*best).or_default() += 1;
    }
    let certified = choices.iter().filter(|(_, c)| *c).count();
    // The runner-up: the most frequent other choice; ties to the earlier setting, none last.
    let runner_up = freq
        .iter()
        .filter(|(s, _)| **s != chosen)
        .max_by(|a, b| {
            a.1.cmp(b.1).then_with(|| {
                b.0.map_or(usize::MAX, |i| i)
                    .cmp(&a.0.map_or(usize::MAX, |i| i))
            })
        })
        .map(|(s, n)| (*s, *n));
    Some(ChoiceStability {
        resamples: choices.len(),
        chosen_share: freq.get(&chosen).copied().unwrap_or(0) as f64 / total,
        certified_share: certified as f64 / total,
        runner_up: runner_up.map(|(s, _)| s.map(|i| settings[i].id())),
        runner_up_share: runner_up.map(|(_, n)| n as f64 / total),
    })
}

/// Each question's fold, stratified: every stratum is shuffled and dealt round the folds,
/// carrying on where the previous stratum stopped, so folds differ in size by at most one.
pub fn folds(table: &RunTable, k: usize, seed: u64) -> Vec<usize> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut fold = vec![0; table.questions()];
    let mut next = 0;
    for mut members in strata(table) {
        rng.shuffle(&mut members);
        for q in members {
            fold[q] = next % k;
            next += 1;
        }
    }
    fold
}

/// The rates the cross-validation reports: false refusals and unwanted answers always, the
/// other rate limits when the policy sets them.
fn reported(policy: &RecommendConfig) -> Vec<Limit> {
    let limits = policy.limits();
    RATE_LIMITS
        .into_iter()
        .filter(|&l| {
            matches!(l, Limit::MaxUnwantedAnswerRate | Limit::MaxFalseRefusalRate)
                || limits.get(l).is_some()
        })
        .collect()
}

/// K-fold cross-validation of the choice; `None` with fewer than 2 folds.
pub fn cross_validate(
    table: &RunTable,
    settings: &[Setting],
    policy: &RecommendConfig,
    r: Resampling,
) -> Option<CrossValidation> {
    if r.folds < 2 || table.questions() < r.folds || settings.is_empty() {
        return None;
    }
    let fold = folds(table, r.folds, r.seed);
    let limits = reported(policy);
    let mut pooled = vec![Tally::default(); limits.len()];
    let mut chose: Vec<(Option<usize>, usize)> = Vec::new();
    let mut certified_folds = 0;
    let mut certifier = Certifier::new(policy, settings);
    for f in 0..r.folds {
        let train: Vec<u32> = fold.iter().map(|&g| u32::from(g != f)).collect();
        let c = choice_under(&mut certifier, table, &train, (settings, policy));
        certified_folds += usize::from(c.certified);
        match chose.iter_mut().find(|(s, _)| *s == c.best) {
            Some((_, n)) => *n += 1,
            None => chose.push((c.best, 1)),
        }
        let Some(s) = c.best else { continue };
        let test: Vec<u32> = train.iter().map(|&w| 1 - w).collect();
        let held = table.counts(s, Some(&test));
        for (t, &l) in pooled.iter_mut().zip(&limits) {
            let m = held.measured[slot(l).unwrap_or(0)];
            t.failures += m.failures;
            t.questions += m.questions;
        }
    }
    // Most often first; ties in grid order, no setting last.
    chose.sort_by(|a, b| {
        b.1.cmp(&a.1).then_with(|| {
            a.0.map_or(usize::MAX, |i| i)
                .cmp(&b.0.map_or(usize::MAX, |i| i))
        })
    });
    Some(CrossValidation {
        folds: r.folds,
        held_out: limits
            .iter()
            .zip(&pooled)
            .map(|(&limit, t)| HeldOut {
                limit,
                failures: t.failures,
                questions: t.questions,
                rate: t.rate(),
                interval: wilson(t.failures as usize, t.questions as usize),
            })
            .collect(),
        choices: chose
            .into_iter()
            .map(|(s, folds)| FoldChoice {
                setting: s.map(|i| settings[i].id()),
                folds,
            })
            .collect(),
        certified_folds,
    })
}
