//! The recommendation: one setting to ship, chosen by the policy in `rageval.yaml`, and
//! certified when the questions allow it. This file holds what the recommendation says (the
//! types results.json records) and puts it together: [`super::certifier`] decides which
//! settings are certified, [`super::choice`] picks among them. The lines that explain it are
//! written by `output::explain` from the facts returned here.
//!
//! **Certification** (`recommend.confidence`, default 0.95). A setting is certified when every
//! rate limit of the policy holds with that confidence for the whole grid at once: the chance
//! that any certified setting's true rate is above its limit is at most `1 - confidence`,
//! although the grid was searched (the Learn-then-Test construction, Angelopoulos et al.
//! 2021, with ordered family-wise tests; see [`super::certifier`]).
//!
//! **Choice.** Among certified settings the lowest weighted cost wins: `w_fr *
//! false_refusal_rate + w_ua * unwanted_answer_rate + w_wa * wrong_answer_rate + w_tok *
//! prompt_tokens_per_question` on the measured rates. When none is certified, the choice on
//! the measured rates alone (settings that break a limit are out) is named as the best, not
//! certified setting, with the questions each limit would need. Equal costs are broken by fewer
//! prompt tokens, then the higher minScore (more early refusals for free), then the smaller k,
//! then grid order. When no setting meets the limits even on the measured rates, the one
//! closest to meeting them is named with the limits it misses and by how much.

use super::certifier::{Certifier, Evidence, Verdicts};
use super::choice::{choose, misses, Choice};
use super::counts::{Counts, RunTable};
use super::ppi::Sample;
pub use super::recommendation::*;
use crate::analysis::insight::config::RecommendConfig;
use crate::sweep::Setting;
use crate::vocab::limit::Limit;

/// What the resampling figures cost to make: `recommend.resamples` and the folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resampling {
    pub resamples: usize,
    /// Folds of the cross-validation; 0: none.
    pub folds: usize,
    pub seed: u64,
}

impl Resampling {
    /// From the policy, for `table`'s questions: folds default to 5 when each class has at
    /// least 10 questions, else none.
    pub fn of(policy: &RecommendConfig, table: &RunTable) -> Self {
        let answerable = (0..table.questions())
            .filter(|&q| table.answerable(q))
            .count();
        let unanswerable = table.questions() - answerable;
        let folds = match policy.folds {
            Some(k) => k,
            None if answerable.min(unanswerable) >= 10 => 5,
            None => 0,
        };
        Resampling {
            resamples: policy.resamples,
            folds,
            seed: policy.resampling_seed,
        }
    }
}

/// Choose a setting. `settings` and the table's settings are parallel. Returns the
/// recommendation and, per setting, whether it is certified. Its stability and
/// cross-validation are [`super::resample`]'s.
pub fn recommend(
    settings: &[Setting],
    table: &RunTable,
    policy: &RecommendConfig,
) -> (Recommendation, Vec<bool>) {
    let n = settings.len().min(table.settings());
    let counts = table.all_counts(None);
    let labelled = table.all_samples(None);
    let e = Evidence {
        counts: &counts[..n],
        labelled: labelled.as_deref(),
    };
    decide_on(&settings[..n], e, table.labels(), policy, table.dropped())
}

/// The recommendation from each setting's counts (parallel to `settings`).
pub fn decide(
    settings: &[Setting],
    counts: &[Counts],
    policy: &RecommendConfig,
) -> (Recommendation, Vec<bool>) {
    let e = Evidence {
        counts,
        labelled: None,
    };
    decide_on(settings, e, 0, policy, &[])
}

/// The recommendation from each setting's counts and, with `labels` labelled replies, its
/// labelled samples (parallel to `settings`). A setting an adaptive sweep dropped (`dropped[s]`;
/// a shorter slice: the rest were not) is tested on the questions it ran, a confidence
/// sequence read at the round it was dropped (its own stopping time, which the anytime-valid
/// tests allow), so an ordered chain goes on past it as the test says; it is never certified
/// nor chosen.
pub fn decide_on(
    settings: &[Setting],
    e: Evidence<'_>,
    labels: u64,
    policy: &RecommendConfig,
    dropped: &[bool],
) -> (Recommendation, Vec<bool>) {
    let n = settings.len().min(e.counts.len());
    let (settings, counts) = (&settings[..n], &e.counts[..n]);
    let mut certifier = Certifier::new(policy, settings);
    certifier.certification = certifier.certification.with_labels(labels);
    let verdicts = certify(&mut certifier, e, dropped);
    let choice = choose(
        settings,
        counts,
        policy,
        &certifier.limits,
        verdicts.certified.clone(),
        dropped,
    );
    let certification = certifier.certification;
    let mut rec = Recommendation {
        feasible: choice.feasible,
        settings: n,
        certification,
        confidence: certification.confidence(),
        procedure: certifier.procedure(),
        sequential: certification.is_on() && policy.sequential,
        power: policy.power,
        certified_settings: choice.certified_flags.iter().filter(|&&c| c).count(),
        certified: choice.certified,
        ..Recommendation::default()
    };
    if n == 0 {
        return (rec, Vec::new());
    }
    let at = choice.best.or(choice.closest);
    if let (Some(i), true) = (at, certification.is_on()) {
        let facts = Facts {
            certifier: &certifier,
            verdicts: &verdicts,
            settings,
            e,
        };
        rec.bounds = bounds(facts, i, policy);
    }
    match choice.best {
        Some(best) => chosen(&mut rec, &choice, settings, counts, policy, best),
        None => no_feasible(&mut rec, settings, counts, policy, choice.closest),
    }
    (rec, choice.certified_flags)
}

/// The verdicts on `e`, with no setting an adaptive sweep dropped (`dropped[s]`) certified.
pub(crate) fn certify(certifier: &mut Certifier, e: Evidence<'_>, dropped: &[bool]) -> Verdicts {
    let mut verdicts = certifier.verdicts_of(e);
    for (certified, &dropped) in verdicts.certified.iter_mut().zip(dropped) {
        *certified &= !dropped;
    }
    verdicts
}

/// What the bounds are read from: the procedure, its verdicts and the evidence it tested.
struct Facts<'a> {
    certifier: &'a Certifier,
    verdicts: &'a Verdicts,
    settings: &'a [Setting],
    e: Evidence<'a>,
}

/// The rate limits of setting `i` under certification, with what it would take. A rate
/// tested on labels has its bound from them, and no question count: how many more labels
/// or questions it takes depends on the grader's errors, which the counts do not tell.
fn bounds(facts: Facts<'_>, i: usize, policy: &RecommendConfig) -> Vec<Bound> {
    let Facts {
        certifier,
        verdicts,
        settings,
        e,
    } = facts;
    let c = &e.counts[i];
    let test = certifier.certification.test();
    certifier
        .rates()
        .iter()
        .enumerate()
        .filter(|&(_, &(l, _, slot))| {
            l != Limit::MaxAttackSuccessRate || c.certified[slot].questions > 0
        })
        .map(|(f, &(limit, max, slot))| {
            let t = c.certified[slot];
            let v = verdicts.families[f][i];
            let sample = e.sample(i, slot);
            // Planned at the level its test had: more questions keep the other chains'
            // passes, if anything they add to them.
            let plan = (!v.certified && sample.is_none()).then_some(v.level);
            let rate = if t.questions == 0 {
                0.0
            } else {
                t.failures as f64 / t.questions as f64
            };
            Bound {
                limit,
                max,
                failures: t.failures,
                questions: t.questions,
                level: v.level,
                upper_bound: match sample {
                    Some(s) => s.upper_bound(v.level),
                    None => test.upper_bound(t.failures, t.questions, v.level),
                },
                labels: sample.map(Sample::labels),
                certified: v.certified,
                stopped_at: v.stopped_at.map(|s| settings[s].id()),
                questions_needed: plan.and_then(|a| {
                    test.questions_for_power(rate, max, a, policy.power)
                        .questions()
                }),
                questions_needed_with_none: plan
                    .and_then(|a| test.needed_with_failures(0, max, a).questions()),
                questions_needed_with_one: plan
                    .filter(|_| t.failures == 0)
                    .and_then(|a| test.needed_with_failures(1, max, a).questions()),
            }
        })
        .collect()
}

/// The chosen setting: its id and cost.
fn chosen(
    rec: &mut Recommendation,
    choice: &Choice,
    settings: &[Setting],
    counts: &[Counts],
    policy: &RecommendConfig,
    best: usize,
) {
    rec.setting = Some(settings[best].id());
    rec.index = Some(best);
    rec.cost = Some(super::choice::cost(&counts[best], policy));
    rec.tie_break = choice.tie_break;
}

/// No setting meets the limits: the closest one and what it misses.
fn no_feasible(
    rec: &mut Recommendation,
    settings: &[Setting],
    counts: &[Counts],
    policy: &RecommendConfig,
    closest: Option<usize>,
) {
    let Some(closest) = closest else {
        return;
    };
    let limits: Vec<(Limit, f64)> = policy.limits().iter().collect();
    let m = misses(&counts[closest], &limits);
    rec.closest = Some(Closest {
        setting: settings[closest].id(),
        misses: m,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::choice::misses;
    use crate::analysis::insight::config::WeightsConfig;
    use crate::analysis::insight::counts::Tally;
    use crate::analysis::stats::SettingStats;
    use crate::vocab::grid::Decimal;

    fn setting(min: &str, k: usize) -> Setting {
        Setting::new(min.parse::<Decimal>().unwrap(), k)
    }

    #[test]
    fn an_attack_limit_rules_out_settings_the_probes_break() {
        let settings = [setting("0.1", 1), setting("0.3", 1)];
        let mut a = stats(0.1, 0.0, 100.0);
        a.attack_success_rate = Some(0.75);
        let mut b = stats(0.2, 0.0, 100.0);
        b.attack_success_rate = Some(0.0);
        let mut p = policy(0.2, 0.5, None);
        assert_eq!(
            rec(&settings, &[a.clone(), b.clone()], &p)
                .setting
                .as_deref(),
            Some("min_score=0.1,k=1")
        );
        p.max_attack_success_rate = Some(0.25);
        let r = rec(&settings, &[a.clone(), b.clone()], &p);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=1"));
        assert_eq!(r.feasible, 1, "the probes rule out the first");
        // Without probes the limit does not apply.
        a.attack_success_rate = None;
        assert_eq!(
            rec(&settings, &[a, b], &p).setting.as_deref(),
            Some("min_score=0.1,k=1")
        );
    }

    #[test]
    fn wrong_answers_are_weighed_and_can_be_limited() {
        let settings = [setting("0.1", 4), setting("0.3", 4)];
        // Fewer false refusals, but three answers in ten wrong.
        let mut a = stats(0.1, 0.0, 100.0);
        a.wrong_answer_rate = Some(0.3);
        let mut b = stats(0.3, 0.0, 100.0);
        b.wrong_answer_rate = Some(0.0);
        let mut p = policy(0.2, 0.5, None);
        let r = rec(&settings, &[a.clone(), b.clone()], &p);
        // 0.1 + 0.3 + 0.005 against 0.3 + 0.005.
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=4"));
        p.weights.wrong_answer_rate = 0.0;
        assert_eq!(
            rec(&settings, &[a.clone(), b.clone()], &p)
                .setting
                .as_deref(),
            Some("min_score=0.1,k=4")
        );
        p.max_wrong_answer_rate = Some(0.2);
        let r = rec(&settings, &[a.clone(), b], &p);
        assert_eq!(
            (r.setting.as_deref(), r.feasible),
            (Some("min_score=0.3,k=4"), 1)
        );
        assert_eq!(
            misses(&counts_of(&a), &p.limits().iter().collect::<Vec<_>>()),
            [Miss {
                limit: Limit::MaxWrongAnswerRate,
                max: 0.2,
                value: 0.3,
                excess: 0.3 - 0.2
            }]
        );
    }

    fn stats(fr: f64, ua: f64, tokens: f64) -> SettingStats {
        SettingStats {
            false_refusal_rate: Some(fr),
            unwanted_answer_rate: Some(ua),
            prompt_tokens_per_question: tokens,
            ..SettingStats::default()
        }
    }

    fn policy(max_ua: f64, max_fr: f64, max_tok: Option<f64>) -> RecommendConfig {
        RecommendConfig {
            max_unwanted_answer_rate: max_ua,
            max_false_refusal_rate: max_fr,
            max_prompt_tokens_per_question: max_tok,
            max_attack_success_rate: None,
            max_wrong_answer_rate: None,
            weights: WeightsConfig::default(),
            // The choice on the measured rates: the certified choice has its own tests.
            confidence: 0.0,
            resamples: 0,
            folds: None,
            resampling_seed: 0,
            ..RecommendConfig::default()
        }
    }

    /// Counts with the stats' rates over 1000 questions per rate.
    fn counts_of(s: &SettingStats) -> Counts {
        let tally = |r: Option<f64>| {
            r.map_or(Tally::default(), |r| Tally {
                failures: (r * 1000.0).round() as u64,
                questions: 1000,
            })
        };
        let rates = [
            tally(s.unwanted_answer_rate),
            tally(s.false_refusal_rate),
            tally(s.wrong_answer_rate),
            tally(s.attack_success_rate),
        ];
        Counts {
            questions: 1000,
            measured: rates,
            certified: rates,
            prompt_tokens: (s.prompt_tokens_per_question * 1000.0).round() as u64,
        }
    }

    fn rec(
        settings: &[Setting],
        stats: &[SettingStats],
        policy: &RecommendConfig,
    ) -> Recommendation {
        let counts: Vec<Counts> = stats.iter().map(counts_of).collect();
        decide(settings, &counts, policy).0
    }

    #[test]
    fn lowest_cost_within_the_limits_wins() {
        let settings = [setting("0.1", 4), setting("0.3", 1), setting("0.3", 4)];
        let st = [
            stats(0.1, 0.6, 300.0), // breaks the unwanted limit
            stats(0.4, 0.1, 80.0),  // cost 0.4 + 0.3 + 0.004
            stats(0.3, 0.1, 110.0), // cost 0.3 + 0.3 + 0.0055: the winner
        ];
        let r = rec(&settings, &st, &policy(0.2, 0.5, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=4"));
        assert_eq!((r.feasible, r.settings, r.tie_break), (2, 3, None));
        assert_eq!(r.cost, Some(0.3 + 3.0 * 0.1 + 0.00005 * 110.0));
    }

    #[test]
    fn ties_go_to_fewer_tokens_then_higher_min_score_then_smaller_k() {
        let no_token_weight = RecommendConfig {
            weights: WeightsConfig {
                prompt_tokens_per_question: 0.0,
                ..WeightsConfig::default()
            },
            ..policy(1.0, 1.0, None)
        };
        // Same rates: fewer tokens wins even when it comes last.
        let settings = [setting("0.2", 4), setting("0.2", 2), setting("0.2", 1)];
        let st = [
            stats(0.2, 0.1, 90.0),
            stats(0.2, 0.1, 60.0),
            stats(0.2, 0.1, 70.0),
        ];
        let r = rec(&settings, &st, &no_token_weight);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.2,k=2"));
        assert_eq!(r.tie_break, Some(TieRule::FewerPromptTokens));
        // Same tokens too: the higher minScore wins.
        let settings = [setting("0.4", 2), setting("0.5", 4), setting("0.5", 2)];
        let st = [
            stats(0.6, 0.1, 48.0),
            stats(0.6, 0.1, 48.0),
            stats(0.6, 0.1, 48.0),
        ];
        let r = rec(&settings, &st, &policy(1.0, 1.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.5,k=2"));
        assert_eq!(r.tie_break, Some(TieRule::SmallerK));
        let r = rec(&settings[..2], &st[..2], &policy(1.0, 1.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.5,k=4"));
        assert_eq!(r.tie_break, Some(TieRule::HigherMinScore));
    }

    #[test]
    fn a_token_limit_is_a_hard_limit() {
        let settings = [setting("0.1", 8), setting("0.1", 2)];
        let st = [stats(0.1, 0.1, 500.0), stats(0.3, 0.1, 200.0)];
        let r = rec(&settings, &st, &policy(0.2, 0.5, Some(300.0)));
        assert_eq!(
            (r.setting.as_deref(), r.feasible),
            (Some("min_score=0.1,k=2"), 1)
        );
    }

    #[test]
    fn no_feasible_setting_names_the_closest_and_by_how_much() {
        let settings = [setting("0.1", 1), setting("0.3", 1), setting("0.5", 1)];
        let st = [
            stats(0.294, 0.667, 184.0), // misses both limits
            stats(0.471, 0.111, 84.0),  // misses unwanted by 11.1 points
            stats(0.647, 0.111, 48.0),  // misses both
        ];
        let r = rec(&settings, &st, &policy(0.0, 0.5, None));
        assert_eq!((r.setting.as_deref(), r.index, r.feasible), (None, None, 0));
        let closest = r.closest.as_ref().unwrap();
        assert_eq!(closest.setting, "min_score=0.3,k=1");
        assert_eq!(closest.misses.len(), 1);
        assert_eq!(closest.misses[0].limit, Limit::MaxUnwantedAnswerRate);
        assert!((closest.misses[0].excess - 0.111).abs() < 1e-12);
    }

    #[test]
    fn no_feasible_setting_with_two_misses_lists_both() {
        let settings = [setting("0.1", 1)];
        let st = [stats(0.6, 0.3, 400.0)];
        let r = rec(&settings, &st, &policy(0.2, 0.5, Some(200.0)));
        let m = &r.closest.as_ref().unwrap().misses;
        // Smallest miss first: unwanted by 10 points, false refusals by 10 points, tokens by 100%.
        assert_eq!(m.len(), 3);
        assert_eq!(m[2].limit, Limit::MaxPromptTokensPerQuestion);
        assert_eq!((m[2].value, m[2].max, m[2].excess), (400.0, 200.0, 200.0));
    }

    #[test]
    fn undefined_rates_meet_any_limit() {
        let settings = [setting("0.1", 1)];
        let st = [SettingStats {
            prompt_tokens_per_question: 10.0,
            ..SettingStats::default()
        }];
        let r = rec(&settings, &st, &policy(0.0, 0.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.1,k=1"));
        assert_eq!(rec(&[], &[], &policy(0.0, 0.0, None)).setting, None);
    }
}

/// Certification against known populations: the promise holds, and the plain choice breaks it.
#[cfg(test)]
mod certification {
    use super::*;
    use crate::analysis::insight::config::{Method, RecommendConfig};
    use crate::analysis::insight::counts::Tally;
    use crate::vocab::grid::Decimal;

    fn one_setting_counts(unanswerable: u64, answered: u64) -> Counts {
        Counts::two_rates(Tally::of(answered, unanswerable), Tally::of(0, 10), 1000)
    }

    fn decide_counts(
        settings: &[Setting],
        counts: &[Counts],
        p: &RecommendConfig,
    ) -> (Recommendation, Vec<bool>) {
        decide(settings, counts, p)
    }

    /// A setting an adaptive sweep dropped is never certified nor chosen, even with counts
    /// that would certify it: dropping takes a certificate away, never gives one.
    #[test]
    fn a_dropped_setting_is_never_certified_nor_chosen() {
        let settings = [
            Setting::new("0.3".parse().unwrap(), 1),
            Setting::new("0.5".parse().unwrap(), 1),
        ];
        let counts = [one_setting_counts(100, 0), one_setting_counts(100, 1)];
        let e = |c| Evidence {
            counts: c,
            labelled: None,
        };
        // Bonferroni: each setting's tests stand alone.
        let mut p = RecommendConfig {
            method: Method::Bonferroni,
            ..RecommendConfig::default()
        };
        let (kept, certified) = decide_on(&settings, e(&counts), 0, &p, &[]);
        assert_eq!(certified, [true, true]);
        assert_eq!(kept.setting.as_deref(), Some("min_score=0.3,k=1"));
        let (r, certified) = decide_on(&settings, e(&counts), 0, &p, &[true]);
        assert_eq!(certified, [false, true]);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.5,k=1"));
        assert!(r.certified);
        let (r, certified) = decide_on(&settings, e(&counts), 0, &p, &[true, true]);
        assert_eq!(certified, [false, false]);
        assert!(!r.certified);
        // Ordered, minScore 0.3 leads the false-refusal chain: dropped, its test (which
        // passes) lets the chain go on to 0.5.
        p.method = Method::Ordered;
        let (_, certified) = decide_on(&settings, e(&counts), 0, &p, &[true]);
        assert_eq!(certified, [false, true]);
        assert_eq!(r.feasible, 0);
    }

    #[test]
    fn nine_unanswerable_questions_say_how_many_it_takes() {
        let settings = [Setting::new("0.3".parse().unwrap(), 1)];
        let (r, certified) = decide_counts(
            &settings,
            &[one_setting_counts(9, 0)],
            &RecommendConfig::default(),
        );
        assert_eq!(certified, [false]);
        assert!(!r.certified);
        assert_eq!(
            r.setting.as_deref(),
            Some("min_score=0.3,k=1"),
            "still named"
        );
        let b = &r.bounds[0];
        assert_eq!(
            (b.limit, b.certified, b.failures, b.questions),
            (Limit::MaxUnwantedAnswerRate, false, 0, 9)
        );
        // The false-refusal family certified its one setting and passed its level on.
        assert!((b.level - 0.05).abs() < 1e-12, "{}", b.level);
        assert!((b.upper_bound - (1.0 - 0.05f64.powf(1.0 / 9.0))).abs() < 1e-12);
        // 0.8^14 < 0.05 < 0.8^13, and with at most one answered it takes 22.
        assert_eq!(b.questions_needed_with_none, Some(14));
        assert_eq!(b.questions_needed_with_one, Some(22));
        assert_eq!(b.questions_needed, Some(14), "no failure: the floor");
        let p = r.procedure.as_ref().unwrap();
        assert_eq!(
            (
                p.method,
                p.sequential,
                p.families,
                p.chains,
                p.along.as_deref()
            ),
            (
                super::super::config::Method::Ordered,
                false,
                2,
                Some(1),
                None
            )
        );
        assert!((p.first_level - 0.025).abs() < 1e-12);
        // 14 with none answered certifies it.
        let (r, certified) = decide_counts(
            &settings,
            &[one_setting_counts(14, 0)],
            &RecommendConfig::default(),
        );
        assert_eq!(certified, [true]);
        assert!(r.certified && r.bounds.iter().all(|b| b.certified), "{r:?}");
        assert!(r
            .bounds
            .iter()
            .all(|b| b.questions_needed_with_none.is_none()));
    }

    #[test]
    fn the_grid_correction_asks_for_more_and_a_measured_rate_needs_more_still() {
        let settings: Vec<Setting> = (1..=20)
            .map(|k| Setting::new("0.3".parse().unwrap(), k))
            .collect();
        let counts = vec![one_setting_counts(14, 0); 20];
        let (r, _) = decide_counts(&settings, &counts, &RecommendConfig::default());
        assert!(
            !r.certified,
            "14 questions are enough for one setting, not for 20"
        );
        // 20 chains of one setting each (minScore does not vary), each head at 0.05 / 2 / 20.
        // The false-refusal family certifies all (0.5^10 < 0.00125) and passes its level on:
        // the unwanted heads get 0.05 / 20, where 0 of 14 is not enough (0.8^14 > 0.0025) and
        // 27 are.
        let b = &r.bounds[0];
        assert_eq!((b.failures, b.questions, b.certified), (0, 14, false));
        assert!((b.level - 0.05 / 20.0).abs() < 1e-15, "{}", b.level);
        assert_eq!(b.questions_needed_with_none, Some(27));
        let p = r.procedure.as_ref().unwrap();
        assert_eq!((p.chains, p.along.as_deref()), (Some(20), None));
        assert!((p.first_level - 0.05 / 40.0).abs() < 1e-15);
        // One answered in nine: at this rate it takes more than with none.
        let (r, _) = decide_counts(
            &settings[..1],
            &[one_setting_counts(9, 1)],
            &RecommendConfig::default(),
        );
        let b = &r.bounds[0];
        assert_eq!(b.questions_needed_with_none, Some(14));
        assert_eq!(b.questions_needed_with_one, None, "one has failed already");
        assert!(b.questions_needed.is_some_and(|n| n > 14), "{b:?}");
        // Two in nine is above the limit: no number of questions certifies that rate.
        let (r, _) = decide_counts(
            &settings[..1],
            &[one_setting_counts(9, 2)],
            &RecommendConfig::default(),
        );
        assert_eq!(r.bounds[0].questions_needed, None);
        assert_eq!(r.bounds[0].questions_needed_with_none, Some(14));
    }

    #[test]
    fn a_token_limit_no_questions_can_help_is_named_as_such() {
        let settings = [Setting::new("0.3".parse().unwrap(), 1)];
        let p = RecommendConfig {
            max_prompt_tokens_per_question: Some(20.0),
            ..RecommendConfig::default()
        };
        // 1000 tokens over 24 questions: 41.7 per question, over the limit of 20.
        let (r, _) = decide_counts(&settings, &[one_setting_counts(14, 0)], &p);
        assert!(!r.certified && r.setting.is_none());
        let closest = r.closest.as_ref().unwrap();
        assert_eq!(closest.misses.len(), 1);
        assert_eq!(closest.misses[0].limit, Limit::MaxPromptTokensPerQuestion);
        // Its rates are certified: only the tokens stand in the way.
        assert!(r.bounds.iter().all(|b| b.certified), "{:?}", r.bounds);
    }

    #[test]
    fn among_certified_settings_the_lowest_cost_wins() {
        // Two unwanted answers in 40 (5%) are within 10% but not certified at 95% over two
        // settings; none in 40 is (its bound is 8.8%). The first is cheaper on tokens.
        let settings = [
            Setting::new("0.2".parse().unwrap(), 1),
            Setting::new("0.4".parse().unwrap(), 1),
        ];
        let mut cheap = one_setting_counts(40, 2);
        cheap.prompt_tokens = 10;
        let safe = one_setting_counts(40, 0);
        let mut p = RecommendConfig {
            max_unwanted_answer_rate: 0.1,
            ..RecommendConfig::default()
        };
        p.weights.unwanted_answer_rate = 0.0;
        let (r, certified) = decide_counts(&settings, &[cheap, safe], &p);
        assert_eq!(certified, [false, true]);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.4,k=1"));
        assert!(r.certified);
        assert_eq!(r.certified_settings, 1);
        // Without certification the cheaper one wins, as before.
        p.confidence = 0.0;
        let (r, certified) = decide_counts(&settings, &[cheap, safe], &p);
        assert_eq!(certified, [false, false]);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.2,k=1"));
        assert_eq!(r.certification, super::super::certifier::Certification::Off);
        assert!(r.bounds.is_empty() && r.procedure.is_none());
    }

    /// A known population of questions whose best scores overlap: answerable ~ U(0.3, 0.9),
    /// unanswerable ~ U(0, 0.8); a question passes minScore t when its score is at least t.
    /// The true rates are exact: false refusals (t - 0.3) / 0.6, unwanted (0.8 - t) / 0.8.
    struct Population;

    impl Population {
        fn true_false_refusal(t: f64) -> f64 {
            ((t - 0.3) / 0.6).clamp(0.0, 1.0)
        }

        fn true_unwanted(t: f64) -> f64 {
            ((0.8 - t) / 0.8).clamp(0.0, 1.0)
        }

        /// A sample of `n` questions per class counted at each threshold.
        fn sample(rng: &mut fastrand::Rng, n: usize, thresholds: &[f64]) -> Vec<Counts> {
            let mut answerable: Vec<f64> = (0..n).map(|_| 0.3 + 0.6 * rng.f64()).collect();
            let mut unanswerable: Vec<f64> = (0..n).map(|_| 0.8 * rng.f64()).collect();
            answerable.sort_by(f64::total_cmp);
            unanswerable.sort_by(f64::total_cmp);
            thresholds
                .iter()
                .map(|&t| {
                    let refused = answerable.partition_point(|&s| s < t) as u64;
                    let answered = (n - unanswerable.partition_point(|&s| s < t)) as u64;
                    let sent = (n as u64 - refused) + answered;
                    let of_n = |failures| Tally::of(failures, n as u64);
                    Counts::two_rates(of_n(answered), of_n(refused), 100 * sent)
                })
                .collect()
        }
    }

    #[test]
    fn a_certified_choice_breaks_a_limit_at_most_one_time_in_twenty() {
        // minScore 0.10 to 0.80 by 0.01: 71 settings, some just past the frontier.
        let thresholds: Vec<f64> = (10..=80).map(|i| f64::from(i) / 100.0).collect();
        let settings: Vec<Setting> = thresholds
            .iter()
            .map(|t| Setting::new(format!("{t:.2}").parse::<Decimal>().unwrap(), 1))
            .collect();
        // Within the limits: minScore 0.48 to 0.60. The cost falls as minScore rises, so the
        // plain choice sits at the false-refusal frontier.
        let policy = RecommendConfig {
            max_unwanted_answer_rate: 0.4,
            max_false_refusal_rate: 0.5,
            ..RecommendConfig::default()
        };
        let plain = RecommendConfig {
            confidence: 0.0,
            ..policy.clone()
        };
        let breaks = |i: usize| {
            Population::true_unwanted(thresholds[i]) > policy.max_unwanted_answer_rate + 1e-12
                || Population::true_false_refusal(thresholds[i])
                    > policy.max_false_refusal_rate + 1e-12
        };
        let mut rng = fastrand::Rng::with_seed(19);
        let samples = 300;
        let (mut certified, mut certified_broke, mut plain_broke) = (0, 0, 0);
        for _ in 0..samples {
            let counts = Population::sample(&mut rng, 500, &thresholds);
            let (r, flags) = decide_counts(&settings, &counts, &policy);
            // The promise is about every certified setting at once, not only the chosen one.
            certified += usize::from(r.certified);
            certified_broke += usize::from(flags.iter().enumerate().any(|(i, &c)| c && breaks(i)));
            let (p, _) = decide_counts(&settings, &counts, &plain);
            plain_broke += usize::from(p.index.is_some_and(breaks));
        }
        let share = |n: usize| n as f64 / samples as f64;
        // At most 1 - confidence, with three standard errors of slack for the samples.
        let slack = 3.0 * (0.05f64 * 0.95 / samples as f64).sqrt();
        assert!(
            share(certified_broke) <= 0.05 + slack,
            "certified settings broke a limit in {certified_broke} of {samples}"
        );
        // The test could fail: the plain choice does not keep the promise (it broke a limit in
        // 60 of 300 samples with this seed), and certification is not vacuous (it certifies a
        // setting in 234 of 300 samples).
        assert!(
            share(plain_broke) > 0.05 + slack,
            "the plain choice broke a limit in {plain_broke} of {samples}"
        );
        assert!(
            share(certified) > 0.5,
            "certified in {certified} of {samples}"
        );
    }
}
