//! A prediction-powered test of "rate ≤ limit" for a rate whose grades were checked on a
//! labelled sample: every run's grade, corrected by the labels, in a test valid at every
//! number of questions (Csillag, Struchiner and Guedes 2025, "Prediction-powered e-values",
//! arXiv 2502.04294; the betting construction of Waudby-Smith and Ramdas 2024).
//!
//! **The data.** A rate's runs, in question order. A run's grade is exact when no model graded
//! it (an early refusal, a failed call: never sampled for labelling). Every model reply was
//! sampled for a label independently with a known probability `π > 0` (Poisson sampling; the
//! same `π` for all, or one per stratum of the grader's reading). Per run: `Ŷ`, whether the
//! grader read it as a failure; `ξ`, whether it was labelled; `Y`, the person's reading,
//! known when `ξ = 1`.
//!
//! **The statistic.** With a prediction `f_t(Ŷ)` in `[0, 1]` of the label from the grade,
//! learned from the labels of earlier runs only (the share of labelled failures among earlier
//! runs graded alike, starting from the grader's own reading),
//!
//! ```text
//! Z_t = f_t(Ŷ_t) + (ξ_t / π_t) (Y_t − f_t(Ŷ_t))        (Z_t = Y_t for an exact grade)
//! ```
//!
//! Given the run and the past, `E[Z_t] = f_t + π_t (Y_t − f_t) / π_t = Y_t`, so `Z_t` is an
//! unbiased estimate of the run's true failure whatever the grader's errors; the calibration
//! `f_t` only lowers its variance. It lies in `[f_min (1 − 1/π), f_min + (1 − f_min)/π]`,
//! at most `z_max = f_min + (1 − f_min) / π_min` with `f_min = min(f_t(0), f_t(1))`.
//!
//! **The evidence.** For a limit `m`, the wealth of a bettor against "the rate is at least
//! `m`" is `K_n = Π_{t ≤ n} (1 + λ_t (m − Z_t))` with `λ_t = c / (z_max,t − m)`, `c = 0.95`.
//! Every factor is at least `1 − c > 0`. The questions are drawn independently from the
//! questions the setting will meet, so under "the rate is `θ ≥ m`" `E[Z_t | past] = θ` and
//! `E[K_t | past] = K_{t−1} (1 + λ_t (m − θ)) ≤ K_{t−1}` (`λ_t` and `f_t` are fixed before run
//! `t` is seen): `K` is a non-negative supermartingale from 1, and Ville's inequality gives
//! `P(K_n ≥ 1/α for some n) ≤ α`. The limit is certified at level `α` once the wealth has
//! reached `1/α`: valid at the fixed number of questions and at every number at once, so the
//! same test serves both modes, inside the ordered procedure as any valid test does. No normal
//! approximation enters anywhere: the promise holds at 60 labels as at 6000.
//!
//! **Why this bet.** The wealth factor for a labelled failure the grader missed is `1 − c`;
//! everything else pays `λ (m − Z)`. With few labels that miss is what limits the bet
//! (`λ ≤ 1 / (z_max − m)`), so the bet is kept at a fixed share of the most it may be. A share
//! learned from the data (the Kelly bet on the earlier runs) starts too cautious to gain over a
//! few hundred questions: in an exploration on simulation (a)'s second grader (300 samples,
//! the final wealth), its median bound was 12.4–13.7% and that of a plug-in bet from a running
//! mean and variance 12.8%, against 11.8% for the fixed share. Each factor grows with `m` (its derivative has the sign of
//! `z_max − Z ≥ 0`), so the evidence grows with the limit and the bound below is the exact
//! edge of the confidence set.

use super::certify::smallest_rate;

/// One run's grade for one rate: whether the run counts as a failure of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Observation {
    /// A grade no model gave, so it is the truth: an early refusal, a failed call.
    Exact(bool),
    /// A model reply as the grader read it, not labelled.
    Graded(bool),
    /// A model reply the grader read as `graded` and a person as `truth`, sampled for its label
    /// with probability `inclusion`.
    Labelled {
        graded: bool,
        truth: bool,
        inclusion: f64,
    },
}

/// One setting's labelled samples, per rate limit in [`super::counts::RATE_LIMITS`] order;
/// `None` for a rate the labels do not grade (the probes').
pub type RateSamples = [Option<Sample>; 4];

/// One rate's runs of one setting, in question order, with the sampling design.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    observations: Vec<Observation>,
    /// The smallest inclusion probability of the design: what bounds a label's weight.
    smallest_inclusion: f64,
}

/// The share of the most the bet may be that it stakes: see the module's comment.
pub const FRACTION: f64 = 0.95;

/// The weight, in labels, of the grader's own reading before any label is seen.
const PRIOR_LABELS: f64 = 4.0;

impl Sample {
    /// `observations` in question order; `smallest_inclusion`: the smallest probability with
    /// which the design samples a reply for a label (taken down to any smaller one observed).
    pub fn new(observations: Vec<Observation>, smallest_inclusion: f64) -> Self {
        let observed = observations.iter().filter_map(|o| match o {
            Observation::Labelled { inclusion, .. } => Some(*inclusion),
            _ => None,
        });
        let smallest = observed
            .fold(smallest_inclusion, f64::min)
            .clamp(f64::MIN_POSITIVE, 1.0);
        Sample {
            observations,
            smallest_inclusion: smallest,
        }
    }

    pub fn observations(&self) -> &[Observation] {
        &self.observations
    }

    /// Runs in the sample.
    pub fn questions(&self) -> u64 {
        self.observations.len() as u64
    }

    /// Runs whose grade a person checked.
    pub fn labels(&self) -> u64 {
        self.observations
            .iter()
            .filter(|o| matches!(o, Observation::Labelled { .. }))
            .count() as u64
    }

    /// `ln sup_{t ≤ n} K_t`: the most log wealth reached against a rate of at least `max`
    /// (`0 < max < 1`).
    pub fn log_evidence(&self, max: f64) -> f64 {
        // Per grader reading: labelled failures and labels, from the grader's own reading.
        let mut seen = [(0.0, PRIOR_LABELS), (PRIOR_LABELS, PRIOR_LABELS)];
        let (mut wealth, mut best) = (0.0_f64, 0.0_f64);
        for o in &self.observations {
            let f = [seen[0].0 / seen[0].1, seen[1].0 / seen[1].1];
            let low = f[0].min(f[1]);
            let z_max = low + (1.0 - low) / self.smallest_inclusion;
            let lambda = FRACTION / (z_max - max);
            let z = match *o {
                Observation::Exact(y) => f64::from(u8::from(y)),
                Observation::Graded(g) => f[usize::from(g)],
                Observation::Labelled {
                    graded,
                    truth,
                    inclusion,
                } => {
                    let p = f[usize::from(graded)];
                    p + (f64::from(u8::from(truth)) - p) / inclusion
                }
            };
            wealth += (lambda * (max - z)).ln_1p();
            best = best.max(wealth);
            if let Observation::Labelled {
                graded,
                truth,
                inclusion,
            } = *o
            {
                if inclusion < 1.0 {
                    let s = &mut seen[usize::from(graded)];
                    s.0 += f64::from(u8::from(truth));
                    s.1 += 1.0;
                }
            }
        }
        best
    }

    /// Whether the sample certifies "rate ≤ `max`" at level `alpha`. A limit of 1 or more
    /// always holds; a limit of 0 never; no runs certify nothing.
    pub fn certifies(&self, max: f64, alpha: f64) -> bool {
        if max >= 1.0 {
            return true;
        }
        !self.observations.is_empty() && max > 0.0 && self.log_evidence(max) >= -alpha.ln()
    }

    /// The smallest limit the sample certifies at `alpha`: the upper end of the confidence
    /// sequence. 1 with no runs.
    pub fn upper_bound(&self, alpha: f64) -> f64 {
        let need = -alpha.ln();
        if self.observations.is_empty() || self.log_evidence(1.0 - 1e-12) < need {
            return 1.0;
        }
        // The evidence grows with the limit: bisect.
        smallest_rate(0.0, 1.0, 1e-9, |max| self.log_evidence(max) >= need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Observation::{Exact, Graded, Labelled};

    fn labelled(graded: bool, truth: bool, inclusion: f64) -> Observation {
        Labelled {
            graded,
            truth,
            inclusion,
        }
    }

    #[test]
    fn every_run_labelled_with_certainty_is_a_bet_on_the_truth() {
        // With every reply labelled (π = 1) Z is the truth: 2 failures of 40, whatever the
        // grader read, and the wealth is the product of the bets by hand.
        let mut obs: Vec<Observation> = (0..40).map(|i| labelled(i % 3 == 0, i < 2, 1.0)).collect();
        obs.push(Exact(false));
        let s = Sample::new(obs.clone(), 1.0);
        let max = 0.2;
        let lambda = FRACTION / (1.0 - max);
        let by_hand = 2.0 * (lambda * (max - 1.0)).ln_1p() + 39.0 * (lambda * max).ln_1p();
        // The wealth falls over the first two runs (the failures), then rises.
        assert!((s.log_evidence(max) - by_hand).abs() < 1e-12);
        let graded_otherwise: Vec<Observation> = obs
            .iter()
            .map(|o| match *o {
                Labelled { truth, .. } => labelled(!truth, truth, 1.0),
                other => other,
            })
            .collect();
        assert_eq!(
            Sample::new(graded_otherwise, 1.0).log_evidence(max),
            s.log_evidence(max)
        );
    }

    #[test]
    fn the_best_wealth_counts_and_a_limit_of_one_or_zero_decides_alone() {
        // Ten passes, then ten failures: the wealth peaks after the passes.
        let obs: Vec<Observation> = (0..20).map(|i| Exact(i >= 10)).collect();
        let s = Sample::new(obs, 1.0);
        let lambda = FRACTION / (1.0 - 0.3);
        assert!((s.log_evidence(0.3) - 10.0 * (0.3 * lambda).ln_1p()).abs() < 1e-12);
        assert!(s.certifies(1.0, 0.05));
        assert!(!s.certifies(0.0, 0.05));
        assert!(!Sample::new(Vec::new(), 0.1).certifies(0.5, 0.05));
        assert_eq!(Sample::new(Vec::new(), 0.1).upper_bound(0.05), 1.0);
    }

    #[test]
    fn a_missed_failure_found_in_the_labels_costs_the_bet_its_stake() {
        let passes = |n: usize| (0..n).map(|_| Graded(false));
        let mut clean: Vec<Observation> = passes(200).collect();
        clean.push(labelled(false, false, 0.1));
        let mut missed: Vec<Observation> = passes(200).collect();
        missed.push(labelled(false, true, 0.1));
        let (clean, missed) = (Sample::new(clean, 0.1), Sample::new(missed, 0.1));
        assert_eq!((clean.labels(), clean.questions()), (1, 201));
        // The peak is before the label in both; the miss takes the wealth down to 5% of it.
        let max = 0.1;
        let before = Sample::new(passes(200).collect(), 0.1).log_evidence(max);
        assert!(clean.log_evidence(max) > before);
        assert_eq!(missed.log_evidence(max), before);
        assert!(missed.upper_bound(0.05) > clean.upper_bound(0.05));
    }

    #[test]
    fn the_bound_is_the_edge_of_the_test() {
        let mut rng = fastrand::Rng::with_seed(4);
        for _ in 0..20 {
            let obs: Vec<Observation> = (0..300)
                .map(|_| {
                    let y = rng.f64() < 0.08;
                    let g = if y { rng.f64() < 0.8 } else { rng.f64() < 0.03 };
                    match rng.f64() {
                        u if u < 0.1 => Exact(false),
                        u if u < 0.3 => labelled(g, y, 0.2),
                        _ => Graded(g),
                    }
                })
                .collect();
            let s = Sample::new(obs, 0.2);
            let bound = s.upper_bound(0.05);
            assert!(bound > 0.0 && bound < 1.0);
            for max in [0.05, 0.1, 0.15, 0.2, 0.3] {
                if (bound - max).abs() > 1e-6 {
                    assert_eq!(s.certifies(max, 0.05), bound <= max, "{bound} {max}");
                }
            }
            // The evidence grows with the limit.
            let e: Vec<f64> = (1..99)
                .map(|i| s.log_evidence(f64::from(i) / 100.0))
                .collect();
            assert!(e.windows(2).all(|w| w[0] <= w[1] + 1e-12));
        }
    }
}
