//! A test for a rate rising across runs: the exact (conditional) Cochran–Armitage test.
//!
//! Run `i` of a window (oldest first, `i = 0..N-1`) counted `x_i` events (unwanted answers,
//! say) in `n_i` trials (unanswerable questions). Under "the rate is the same in every run"
//! the total `T = Σ x_i` carries everything about that common rate, and given `T` the counts
//! are a multivariate hypergeometric draw: `T` events spread over the `Σ n_i` trials at
//! random, whatever the rate. The statistic is Cochran–Armitage's `S = Σ i·x_i` (events
//! weighted by how recent their run is); the p-value is `P(S ≥ s_observed | T)` under that
//! draw, summed exactly. Because it conditions on `T`, the test needs no estimate of the
//! rate and holds its level at any count, small ones included; the discreteness of `S`
//! only makes it conservative. The usual Cochran–Armitage z-test approximates the same
//! distribution with a normal one, which misses its level when events are few.
//!
//! The exact sum walks the runs with the distribution of (events so far, `S` so far),
//! dropping chances below 1e-30 (which moves a p-value by less than 1e-24); its work grows
//! at most as `N² T³`. Past [`EXACT_BUDGET`] steps the p-value is a Monte Carlo one over
//! [`RESAMPLES`] draws of the same conditional distribution with a fixed seed,
//! `(1 + #{S* ≥ s}) / (1 + B)`, which is a valid p-value at any number of draws (its level
//! holds exactly; only its resolution is coarser).

use serde::Serialize;

/// Steps of the exact sum above which the Monte Carlo p-value is used.
pub const EXACT_BUDGET: f64 = 4e8;

/// Draws of the Monte Carlo p-value.
pub const RESAMPLES: u32 = 9_999;

/// Chances below this are dropped from the exact sum: at most a million such terms, so the
/// p-value moves by less than 1e-24.
const TINY: f64 = 1e-30;

/// The seed of the Monte Carlo draws: the same counts always give the same p-value.
const SEED: u64 = 0x0074_7265_6e64;

/// How a p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The conditional distribution summed exactly.
    Exact,
    /// [`RESAMPLES`] seeded draws of it.
    MonteCarlo,
}

/// The one-sided p-value for a rising rate, and how it was computed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TrendTest {
    pub p_value: f64,
    pub method: Method,
    /// `Σ i·x_i` as observed, runs numbered from 0.
    pub statistic: u64,
    /// `T`: the events of every run.
    pub events: u64,
}

/// The test of "the rate rises from the first run to the last" on `(events, trials)` per run,
/// oldest first. A run with no trials adds nothing; fewer than two runs with trials, or no
/// event at all, give a p-value of 1.
pub fn rising(runs: &[(u64, u64)]) -> TrendTest {
    let runs: Vec<(u64, u64, u64)> = runs
        .iter()
        .enumerate()
        .filter(|(_, &(_, n))| n > 0)
        .map(|(i, &(x, n))| (i as u64, x.min(n), n))
        .collect();
    let total: u64 = runs.iter().map(|r| r.1).sum();
    let statistic: u64 = runs.iter().map(|&(i, x, _)| i * x).sum();
    let mut test = TrendTest {
        p_value: 1.0,
        method: Method::Exact,
        statistic,
        events: total,
    };
    if runs.len() < 2 || total == 0 {
        return test;
    }
    let scores: Vec<u64> = runs.iter().map(|r| r.0).collect();
    let trials: Vec<u64> = runs.iter().map(|r| r.2).collect();
    if exact_work(&scores, total) <= EXACT_BUDGET {
        test.p_value = Null::new(&scores, &trials, total).at_least(statistic);
    } else {
        test.method = Method::MonteCarlo;
        test.p_value = monte_carlo(&scores, &trials, total, statistic);
    }
    test
}

/// Steps of the exact sum: per run, states (events, statistic) times the counts each can take.
fn exact_work(scores: &[u64], total: u64) -> f64 {
    let span = scores.last().copied().unwrap_or(0) as f64;
    let t = total as f64;
    scores.len() as f64 * span * t * t * t / 6.0
}

/// The conditional distribution of `S` given `T`: `P(S = s | T)` for every `s`.
#[derive(Debug, Clone)]
pub struct Null {
    /// Indexed by `s`.
    probabilities: Vec<f64>,
}

impl Null {
    /// The distribution for runs with these scores (increasing) and trials, `total` events in
    /// all: the row `total` of [`joint`], divided by its sum.
    pub fn new(scores: &[u64], trials: &[u64], total: u64) -> Null {
        let all: u64 = trials.iter().sum();
        let mut rows = joint(scores, trials, total as f64 / all as f64, total);
        Null::given(rows.swap_remove(total as usize))
    }

    /// The conditional distribution from one row of [`joint`].
    pub(super) fn given(row: Vec<f64>) -> Null {
        let sum: f64 = row.iter().sum();
        Null {
            probabilities: row.into_iter().map(|p| p / sum).collect(),
        }
    }

    /// `P(S ≥ s)`.
    pub fn at_least(&self, s: u64) -> f64 {
        let s = (s as usize).min(self.probabilities.len());
        self.probabilities[s..].iter().sum::<f64>().clamp(0.0, 1.0)
    }

    /// The upper tails `P(S ≥ s)` for every `s` (one more entry, 0, past the largest).
    pub fn tails(&self) -> Vec<f64> {
        let mut tails = vec![0.0; self.probabilities.len() + 1];
        for s in (0..self.probabilities.len()).rev() {
            tails[s] = (tails[s + 1] + self.probabilities[s]).min(1.0);
        }
        tails
    }
}

/// The joint chances of (events, statistic), `rows[t][s]` for `t` up to `t_max`, when each
/// trial is an event with chance `rate` on its own. Given `t`, every placement of the `t`
/// events has the same chance whatever the rate, so a row divided by its sum is the
/// conditional distribution of [`Null`]; the rate only keeps the numbers in floating-point
/// range (best near `t / trials`). Walks the runs: run `j` adds `x` events, with its binomial
/// chance, and `score_j * x` to the statistic.
pub(super) fn joint(scores: &[u64], trials: &[u64], rate: f64, t_max: u64) -> Vec<Vec<f64>> {
    let t_max = t_max as usize;
    let rate = rate.clamp(1e-12, 1.0 - 1e-12);
    let width = scores.iter().copied().max().unwrap_or(0) as usize * t_max + 1;
    let ln_fact = ln_factorials(trials.iter().copied().max().unwrap_or(0) as usize);
    let mut rows = vec![vec![0.0; width]; t_max + 1];
    rows[0][0] = 1.0;
    // The highest score so far: with t events, the statistic is at most `reach * t`.
    let mut reach = 0usize;
    for (&score, &n) in scores.iter().zip(trials) {
        let n = n as usize;
        let chance: Vec<f64> = (0..=n.min(t_max))
            .map(|x| {
                (ln_fact[n] - ln_fact[x] - ln_fact[n - x]
                    + x as f64 * rate.ln()
                    + (n - x) as f64 * (-rate).ln_1p())
                .exp()
            })
            .collect();
        let mut next = vec![vec![0.0; width]; t_max + 1];
        for (t, row) in rows.iter().enumerate() {
            let row = &row[..=(reach * t).min(width - 1)];
            // Only the part of the row that holds more than [`TINY`] matters.
            let Some(first) = row.iter().position(|&p| p > TINY) else {
                continue;
            };
            let end = row.iter().rposition(|&p| p > TINY).map_or(first, |i| i) + 1;
            let row = &row[first..end];
            for (x, &px) in chance.iter().enumerate().take(t_max - t + 1) {
                if px <= TINY {
                    continue;
                }
                let shift = first + score as usize * x;
                let target = &mut next[t + x][shift..shift + row.len()];
                for (into, &p) in target.iter_mut().zip(row) {
                    *into += p * px;
                }
            }
        }
        rows = next;
        reach = score as usize;
    }
    rows
}

/// `ln k!` for `k = 0..=n`.
fn ln_factorials(n: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(n + 1);
    let mut acc = 0.0;
    v.push(0.0);
    for k in 1..=n {
        acc += (k as f64).ln();
        v.push(acc);
    }
    v
}

/// The Monte Carlo p-value: `T` of the trials drawn at random [`RESAMPLES`] times (Floyd's
/// sampling), each draw's statistic compared with the observed one.
fn monte_carlo(scores: &[u64], trials: &[u64], total: u64, observed: u64) -> f64 {
    let mut rng = fastrand::Rng::with_seed(SEED);
    // The first trial of each run, to find a drawn trial's run.
    let mut starts = Vec::with_capacity(trials.len());
    let mut acc = 0u64;
    for &n in trials {
        starts.push(acc);
        acc += n;
    }
    let all = acc;
    let mut taken = std::collections::HashSet::with_capacity(total as usize * 2);
    let mut at_least = 0u32;
    for _ in 0..RESAMPLES {
        taken.clear();
        let mut s = 0u64;
        for j in (all - total)..all {
            let pick = rng.u64(0..=j);
            let item = if taken.insert(pick) {
                pick
            } else {
                taken.insert(j);
                j
            };
            let run = starts.partition_point(|&start| start <= item) - 1;
            s += scores[run];
        }
        at_least += u32::from(s >= observed);
    }
    f64::from(1 + at_least) / f64::from(1 + RESAMPLES)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way to place the events, enumerated: `P(S >= s | T)` by brute force, run `i`
    /// scored `i`.
    fn brute(runs: &[(u64, u64)]) -> f64 {
        let scored: Vec<(u64, u64, u64)> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (i as u64, r.0, r.1))
            .collect();
        brute_scored(&scored)
    }

    /// The same over `(score, events, trials)`.
    fn brute_scored(runs: &[(u64, u64, u64)]) -> f64 {
        let total: u64 = runs.iter().map(|r| r.1).sum();
        let observed: u64 = runs.iter().map(|r| r.0 * r.1).sum();
        let choose = |n: u64, k: u64| -> f64 {
            (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
        };
        let (mut hit, mut all) = (0.0, 0.0);
        let mut xs = vec![0u64; runs.len()];
        loop {
            if xs.iter().sum::<u64>() == total {
                let w: f64 = xs.iter().zip(runs).map(|(&x, r)| choose(r.2, x)).product();
                let s: u64 = xs.iter().zip(runs).map(|(&x, r)| r.0 * x).sum();
                all += w;
                if s >= observed {
                    hit += w;
                }
            }
            // The next vector of counts, odometer-style.
            let mut i = 0;
            loop {
                if i == xs.len() {
                    return hit / all;
                }
                if xs[i] < runs[i].2 {
                    xs[i] += 1;
                    break;
                }
                xs[i] = 0;
                i += 1;
            }
        }
    }

    #[test]
    fn the_exact_sum_equals_enumeration() {
        for runs in [
            vec![(0, 5), (1, 5), (2, 5), (3, 5)],
            vec![(3, 5), (2, 5), (1, 5), (0, 5)],
            vec![(1, 4), (0, 6), (2, 3), (1, 7), (3, 5)],
            vec![(2, 2), (0, 3)],
            vec![(0, 9), (0, 9), (1, 9)],
        ] {
            let t = rising(&runs);
            assert_eq!(t.method, Method::Exact);
            let want = brute(&runs);
            assert!(
                (t.p_value - want).abs() < 1e-12,
                "{runs:?}: {} vs {want}",
                t.p_value
            );
        }
    }

    #[test]
    fn hand_computed_values() {
        // One event in the last of two runs of one trial each: P(S >= 1) = 1/2.
        assert!((rising(&[(0, 1), (1, 1)]).p_value - 0.5).abs() < 1e-15);
        // Two events in the last run of three runs of two trials: C(2,2) / C(6,2) = 1/15.
        assert!((rising(&[(0, 2), (0, 2), (2, 2)]).p_value - 1.0 / 15.0).abs() < 1e-15);
        // Falling counts are no evidence of a rise.
        assert!(rising(&[(5, 10), (3, 10), (0, 10)]).p_value > 0.99);
        // Nothing to test.
        assert_eq!(rising(&[(3, 10)]).p_value, 1.0);
        assert_eq!(rising(&[(0, 10), (0, 10)]).p_value, 1.0);
        assert_eq!(rising(&[]).p_value, 1.0);
    }

    #[test]
    fn runs_without_trials_are_left_out_and_keep_their_place() {
        let with = rising(&[(0, 4), (0, 0), (1, 4), (3, 4)]);
        assert_eq!(with.statistic, 2 + 3 * 3);
        let want = brute_scored(&[(0, 0, 4), (2, 1, 4), (3, 3, 4)]);
        assert!(
            (with.p_value - want).abs() < 1e-12,
            "{} vs {want}",
            with.p_value
        );
    }

    #[test]
    fn the_distribution_sums_to_one() {
        let null = Null::new(&[0, 1, 2, 3, 4], &[50, 50, 50, 50, 50], 25);
        let tails = null.tails();
        assert!((tails[0] - 1.0).abs() < 1e-12, "{}", tails[0]);
        assert_eq!(*tails.last().unwrap(), 0.0);
    }

    #[test]
    fn monte_carlo_agrees_with_the_exact_sum() {
        let runs = [(8u64, 100u64), (11, 100), (9, 100), (14, 100), (16, 100)];
        let scores = [0, 1, 2, 3, 4];
        let trials = [100; 5];
        let total = 58;
        let s: u64 = runs.iter().enumerate().map(|(i, r)| i as u64 * r.0).sum();
        let exact = Null::new(&scores, &trials, total).at_least(s);
        let mc = monte_carlo(&scores, &trials, total, s);
        // The Monte Carlo error's sd is sqrt(p(1-p)/B), under 0.005 here.
        assert!((exact - mc).abs() < 0.02, "exact {exact}, monte carlo {mc}");
        assert!(exact < 0.05, "{exact}");
    }

    #[test]
    fn a_large_window_takes_the_seeded_monte_carlo_p_value() {
        // 525 events over 10 runs: the exact sum would take about 2e9 steps.
        let rising_counts: Vec<(u64, u64)> = (0..10).map(|i| (30 + 5 * i, 100)).collect();
        let t = rising(&rising_counts);
        assert_eq!(t.method, Method::MonteCarlo);
        // No draw reaches a rise this steep: the smallest p-value the draws can give.
        assert_eq!(t.p_value, 1.0 / 10_000.0);
        assert_eq!(
            rising(&rising_counts),
            t,
            "seeded: the same counts, the same p-value"
        );
        let flat: Vec<(u64, u64)> = (0..10).map(|i| (50 + i % 2, 100)).collect();
        let f = rising(&flat);
        assert_eq!(f.method, Method::MonteCarlo);
        assert!(f.p_value > 0.2 && f.p_value < 0.8, "{}", f.p_value);
    }
}
