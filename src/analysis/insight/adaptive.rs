//! What an adaptive sweep (`sweep --until-certified`) decides after each round, from the
//! counts of the questions so far: whether to stop, and which settings are out.
//!
//! **Stopping.** In the anytime-valid mode (`recommend.sequential`) every test holds at any
//! number of questions at once, however that number was chosen, so the sweep may stop the
//! first time the recommendation is certified: the certificate keeps its level. The fixed-size
//! tests do not (the simulation below measures how far they miss); an adaptive sweep refuses
//! to run without the anytime-valid mode.
//!
//! **Dropping.** A setting whose anytime-valid *lower* bound on a rate is above that rate's
//! limit, at the family's level, cannot be certified by any later question: its measured rate
//! is above the limit, and the test of "rate ≤ limit" certifies nothing at or above it. It gets
//! no more calls. Dropping certifies nothing, so it cannot raise the chance of a false
//! certificate: every hypothesis is still tested by a confidence sequence read at a stopping
//! time (its own), which Ville's inequality covers, and a dropped setting is never certified.
//!
//! **Futility.** No setting can be certified, even if every remaining question of the pool
//! went its way, when each one has a rate whose failures so far would not be certified at the
//! pool's full size at the whole level `1 - confidence` (the most any test of the procedure
//! can get).

use super::certify::Needed;
use super::config::{Method, RecommendConfig};
use super::counts::{slot, Counts, Tally};
use super::rate_test::Test;
use super::sequence;
use crate::vocab::limit::Limit;

/// Why an adaptive sweep stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// The recommendation is certified.
    Certified,
    /// No setting can be certified with the questions of the pool.
    Futile,
    /// Every question of the pool is used.
    Exhausted,
    /// The next round would spend more than `--max-calls` or `--max-cost` allows.
    Budget,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Certified => "certified",
            Stop::Futile => "futile",
            Stop::Exhausted => "exhausted",
            Stop::Budget => "budget",
        }
    }
}

/// The questions of the whole pool each rate is counted over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pool {
    pub answerable: u64,
    pub unanswerable: u64,
    /// Questions with an `attack:` (injection probes).
    pub attacks: u64,
}

impl Pool {
    /// The questions the rate in `slot` of [`Counts`] is over, in the whole pool.
    fn base(self, slot: usize) -> u64 {
        match slot {
            0 => self.unanswerable,
            3 => self.attacks,
            _ => self.answerable,
        }
    }
}

/// The level dropping tests at: a family's share of `1 - confidence` (ordered), or a
/// setting's (Bonferroni).
fn drop_level(policy: &RecommendConfig, settings: usize, families: usize) -> f64 {
    let delta = 1.0 - policy.confidence;
    match policy.method {
        Method::Ordered => delta / families.max(1) as f64,
        Method::Bonferroni => delta / settings.max(1) as f64,
    }
}

/// The rate limits of the policy: limit, value, slot in [`Counts`].
fn rates(policy: &RecommendConfig) -> Vec<(Limit, f64, usize)> {
    policy
        .limits()
        .iter()
        .filter_map(|(l, max)| slot(l).map(|i| (l, max, i)))
        .collect()
}

/// Whether `t` shows a rate above `max` at level `alpha`, at any number of questions at once:
/// the anytime-valid test of "the rate of successes is at least `1 - max`" rejected.
pub fn broken(t: Tally, max: f64, alpha: f64) -> bool {
    max < 1.0 && sequence::certifies(t.questions - t.failures, t.questions, 1.0 - max, alpha)
}

/// Per setting (counts parallel to the grid), the first rate limit whose anytime-valid lower
/// bound is above it at the family's level: the settings that are out.
pub fn out(policy: &RecommendConfig, counts: &[Counts]) -> Vec<Option<Limit>> {
    let rates = rates(policy);
    let alpha = drop_level(policy, counts.len(), rates.len());
    counts
        .iter()
        .map(|c| {
            rates
                .iter()
                .find(|&&(_, max, i)| broken(c.certified[i], max, alpha))
                .map(|&(l, _, _)| l)
        })
        .collect()
}

/// When no setting can be certified with the pool: the closest one (the fewest questions its
/// hardest rate would need with no further failure), that rate, and how many questions of
/// its class it would need (`None`: no number would do).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Futile {
    pub setting: usize,
    pub limit: Limit,
    /// Questions of the rate's class it would need with no further failure.
    pub needed: Option<u64>,
    /// Questions of that class in the pool.
    pub pool: u64,
}

/// Whether every setting not yet dropped (`dropped[s]`) is beyond certification with `pool`:
/// `None` while some setting can still be certified.
pub fn futile(
    policy: &RecommendConfig,
    counts: &[Counts],
    dropped: &[bool],
    pool: Pool,
) -> Option<Futile> {
    if policy.confidence <= 0.0 {
        return None;
    }
    let alpha = 1.0 - policy.confidence;
    let rates = rates(policy);
    let mut closest: Option<(f64, Futile)> = None;
    for (s, c) in counts.iter().enumerate() {
        let mut hardest: Option<(f64, Futile)> = None;
        for &(limit, max, i) in &rates {
            let t = c.certified[i];
            let base = pool.base(i);
            // Probes are held only where there are any.
            if limit == Limit::MaxAttackSuccessRate && base == 0 {
                continue;
            }
            let best_case = t.questions.max(base);
            let needed = match Test::Sequential.needed_with_failures(t.failures, max, alpha) {
                Needed::Questions(n) => Some(n),
                Needed::MoreThan(_) | Needed::Never => None,
            };
            let certifiable = sequence::certifies(t.failures, best_case, max, alpha);
            // How far out of reach: the share of the pool the rate would need (infinite: never).
            let reach = needed.map_or(f64::INFINITY, |n| n as f64 / base.max(1) as f64);
            if !certifiable && hardest.is_none_or(|(r, _)| reach > r) {
                let f = Futile {
                    setting: s,
                    limit,
                    needed,
                    pool: base,
                };
                hardest = Some((reach, f));
            }
        }
        match hardest {
            // This setting can still be certified (or is out already and does not count).
            None if !dropped.get(s).copied().unwrap_or(false) => return None,
            Some((reach, f)) if closest.is_none_or(|(r, _)| reach < r) => {
                closest = Some((reach, f));
            }
            _ => {}
        }
    }
    closest.map(|(_, f)| f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::certifier::Certifier;
    use crate::sweep::Setting;

    fn policy(sequential: bool) -> RecommendConfig {
        RecommendConfig {
            max_unwanted_answer_rate: 0.2,
            max_false_refusal_rate: 1.0,
            sequential,
            resamples: 0,
            folds: Some(0),
            ..RecommendConfig::default()
        }
    }

    #[test]
    fn a_setting_far_above_a_limit_is_out_and_one_near_it_is_not() {
        let p = policy(true);
        let at = |failures, n| Counts::two_rates(Tally::of(failures, n), Tally::of(0, n), 0);
        // 30 of 40 answered against a limit of 20%: out; 10 of 40: not yet.
        let out = out(&p, &[at(30, 40), at(10, 40), at(0, 40)]);
        assert_eq!(out, [Some(Limit::MaxUnwantedAnswerRate), None, None]);
        // The lower bound is anytime-valid: it asks for more than the measured rate.
        assert!(!broken(Tally::of(5, 10), 0.2, 0.05 / 2.0));
        assert!(broken(Tally::of(50, 100), 0.2, 0.05 / 2.0));
    }

    #[test]
    fn futility_names_the_closest_setting_and_what_it_would_need() {
        let p = policy(true);
        let pool = Pool {
            answerable: 30,
            unanswerable: 30,
            attacks: 0,
        };
        let at = |failures, n| Counts::two_rates(Tally::of(failures, n), Tally::of(0, n), 0);
        // 2 of 20 answered: even 10 more questions without an answer leave 2 of 30, short of
        // certifying 20% at 5% anytime-valid; 0 of 20 could still be certified.
        let f = futile(&p, &[at(2, 20), at(3, 20)], &[false, false], pool).unwrap();
        assert_eq!((f.setting, f.limit), (0, Limit::MaxUnwantedAnswerRate));
        let needed = f.needed.unwrap();
        assert!(needed > 30, "{needed}");
        assert!(sequence::certifies(2, needed, 0.2, 0.05));
        assert!(!sequence::certifies(2, needed - 1, 0.2, 0.05));
        assert_eq!(
            futile(&p, &[at(2, 20), at(0, 20)], &[false, false], pool),
            None
        );
        // A dropped setting does not keep the sweep going.
        assert!(futile(&p, &[at(2, 20), at(15, 20)], &[false, true], pool).is_some());
    }

    /// The stopping rule of an adaptive sweep: one setting whose true unwanted rate is exactly
    /// the limit (20%), questions added from 20 in steps of 10 up to 600, stopped the first
    /// time the recommendation is certified. Over 2000 seeded histories the anytime-valid mode
    /// certifies falsely in at most 5% (plus three standard errors of the simulation); the
    /// fixed-size test with the same stopping rule exceeds 5%, so the test can fail.
    #[test]
    fn stopping_when_certified_keeps_the_level_only_in_the_sequential_mode() {
        let settings = [Setting::new("0.3".parse().unwrap(), 2)];
        let histories = 2000;
        let false_rate = |sequential: bool| {
            let p = policy(sequential);
            // What the recommendation certifies (its critical counts cached per size).
            let mut certifier = Certifier::new(&p, &settings);
            let mut rng = fastrand::Rng::with_seed(39);
            let mut certified = 0;
            for _ in 0..histories {
                let draws: Vec<bool> = (0..600).map(|_| rng.f64() < 0.2).collect();
                let stopped = (20..=600).step_by(10).any(|n| {
                    let answered = draws[..n].iter().filter(|&&a| a).count() as u64;
                    let c =
                        Counts::two_rates(Tally::of(answered, n as u64), Tally::of(0, n as u64), 0);
                    certifier.certified(&[c])[0]
                });
                certified += usize::from(stopped);
            }
            certified as f64 / histories as f64
        };
        let tolerance = 3.0 * (0.05_f64 * 0.95 / histories as f64).sqrt();
        let sequential = false_rate(true);
        let fixed = false_rate(false);
        eprintln!("falsely certified: sequential {sequential}, fixed-size {fixed}");
        assert!(sequential <= 0.05 + tolerance, "sequential: {sequential}");
        assert!(fixed > 0.05 + tolerance, "fixed-size: {fixed}");
    }

    /// Dropping keeps the level. Two settings in one ordered false-refusal chain: minScore 0.3
    /// leads it (false refusals 1%, unwanted answers 60%: out within a few rounds, then
    /// frozen), minScore 0.5 follows (false refusals exactly at the 20% limit, no unwanted
    /// answer), so any certificate of it is false. Rounds as above, the out setting dropped
    /// with [`out`] and tested on the questions it had, stopped at the first certificate:
    /// over 1000 seeded histories the anytime-valid mode certifies falsely in at most 5% (plus
    /// three standard errors), with the setting dropped in nearly every history; the
    /// fixed-size tests with the same rule exceed it, so the test can fail.
    #[test]
    fn dropping_a_setting_keeps_the_level_of_the_others() {
        let settings = [
            Setting::new("0.3".parse().unwrap(), 2),
            Setting::new("0.5".parse().unwrap(), 2),
        ];
        let histories = 1000;
        let run = |sequential: bool| {
            let p = RecommendConfig {
                max_false_refusal_rate: 0.2,
                ..policy(sequential)
            };
            let mut certifier = Certifier::new(&p, &settings);
            let mut rng = fastrand::Rng::with_seed(41);
            let (mut false_certified, mut dropped_in) = (0, 0);
            for _ in 0..histories {
                // Per question: (0.3 refused it, 0.3 answered its unanswerable twin, 0.5
                // refused it).
                let draws: Vec<(bool, bool, bool)> = (0..600)
                    .map(|_| (rng.f64() < 0.01, rng.f64() < 0.6, rng.f64() < 0.2))
                    .collect();
                let count = |n: usize, f: fn(&(bool, bool, bool)) -> bool| {
                    draws[..n].iter().filter(|d| f(d)).count() as u64
                };
                let mut frozen: Option<Counts> = None;
                for n in (20..=600).step_by(10) {
                    let (q, m) = (n as u64, frozen.is_some());
                    let low = frozen.unwrap_or_else(|| {
                        Counts::two_rates(
                            Tally::of(count(n, |d| d.1), q),
                            Tally::of(count(n, |d| d.0), q),
                            0,
                        )
                    });
                    let high =
                        Counts::two_rates(Tally::of(0, q), Tally::of(count(n, |d| d.2), q), 0);
                    let counts = [low, high];
                    let e = super::super::certifier::Evidence {
                        counts: &counts,
                        labelled: None,
                    };
                    let certified =
                        super::super::recommend::certify(&mut certifier, e, &[m]).certified;
                    assert!(!(m && certified[0]), "a dropped setting certified");
                    if certified[1] {
                        false_certified += 1;
                        break;
                    }
                    if certified[0] {
                        break;
                    }
                    if frozen.is_none() && out(&p, &counts)[0].is_some() {
                        frozen = Some(low);
                    }
                }
                dropped_in += usize::from(frozen.is_some());
            }
            let share = |k: usize| k as f64 / histories as f64;
            (share(false_certified), share(dropped_in))
        };
        let tolerance = 3.0 * (0.05_f64 * 0.95 / histories as f64).sqrt();
        let (sequential, dropped) = run(true);
        let (fixed, _) = run(false);
        eprintln!("with dropping, falsely certified: sequential {sequential} (dropped in {dropped}), fixed-size {fixed}");
        assert!(dropped > 0.95, "dropped in {dropped}");
        assert!(sequential <= 0.05 + tolerance, "sequential: {sequential}");
        assert!(fixed > 0.05 + tolerance, "fixed-size: {fixed}");
    }
}
