//! Seeded simulations of the trend alarm's promises (issue 38): with the rate constant at 10%,
//! the exact test alarms in at most 6% of windows (its level is 5%) while a fixed cut on the
//! least-squares slope ("worse than 1 point per run") alarms more often the fewer the runs and
//! questions; a rate drifting up one point per run over 8 runs of 100 questions is found in
//! at least half the windows. Print the figures with
//! `cargo test --lib trend_simulation -- --nocapture`.

use std::collections::HashMap;

use super::trend::{self, Null};

const WINDOWS: usize = 2000;
const ALPHA: f64 = 0.05;
const CUT: f64 = 0.01;

/// What the windows gave: alarms of the test and of the slope cut, out of [`WINDOWS`].
struct Alarms {
    test: usize,
    slope: usize,
}

/// [`WINDOWS`] windows of `runs` runs of `questions` questions each, run `i`'s rate `rate(i)`.
/// Windows of equal questions per run share the null distribution of each total.
fn simulate(seed: u64, runs: usize, questions: u64, rate: impl Fn(usize) -> f64) -> Alarms {
    let mut rng = fastrand::Rng::with_seed(seed);
    let scores: Vec<u64> = (0..runs as u64).collect();
    let trials = vec![questions; runs];
    // Every total a window can reach, from one walk (eight standard deviations past the mean).
    let mean: f64 = (0..runs).map(|i| rate(i) * questions as f64).sum();
    let cap = (mean + 8.0 * mean.sqrt() + 10.0) as u64;
    let mut rows = trend::joint(
        &scores,
        &trials,
        mean / (runs as u64 * questions) as f64,
        cap,
    );
    let mut tails: HashMap<u64, Vec<f64>> = HashMap::new();
    let mut alarms = Alarms { test: 0, slope: 0 };
    for _ in 0..WINDOWS {
        let counts: Vec<(u64, u64)> = (0..runs)
            .map(|i| {
                let p = rate(i);
                let x = (0..questions).filter(|_| rng.f64() < p).count() as u64;
                (x, questions)
            })
            .collect();
        let total: u64 = counts.iter().map(|c| c.0).sum();
        let s: u64 = counts.iter().enumerate().map(|(i, c)| i as u64 * c.0).sum();
        let tail = tails
            .entry(total)
            .or_insert_with(|| match rows.get_mut(total as usize) {
                Some(row) => Null::given(std::mem::take(row)).tails(),
                None => Null::new(&scores, &trials, total).tails(),
            });
        let p = if total == 0 { 1.0 } else { tail[s as usize] };
        alarms.test += usize::from(p <= ALPHA);
        alarms.slope += usize::from(slope(&counts) > CUT);
    }
    alarms
}

fn share(n: usize) -> f64 {
    n as f64 / WINDOWS as f64
}

#[test]
fn a_constant_rate_alarms_at_most_six_percent_and_a_slope_cut_more() {
    for (seed, questions, runs) in [
        (1, 50, 5),
        (2, 50, 8),
        (3, 50, 10),
        (4, 100, 5),
        (5, 100, 8),
        (6, 100, 10),
    ] {
        let a = simulate(seed, runs, questions, |_| 0.10);
        eprintln!(
            "constant 10%, {questions} questions, {runs} runs: test {:.1}%, slope cut {:.1}%",
            100.0 * share(a.test),
            100.0 * share(a.slope)
        );
        assert!(
            share(a.test) <= 0.06,
            "{questions} questions, {runs} runs: the test alarmed in {} of {WINDOWS}",
            a.test
        );
        // The cut's false alarms depend on the window: well past 6% on 5 runs.
        if runs == 5 {
            assert!(
                share(a.slope) > 0.06,
                "{questions} questions, {runs} runs: the slope cut alarmed in {} of {WINDOWS}",
                a.slope
            );
        }
    }
}

#[test]
fn a_drift_of_one_point_per_run_is_found_in_half_the_windows() {
    let a = simulate(7, 8, 100, |i| 0.10 + 0.01 * i as f64);
    eprintln!(
        "drift +1 point per run, 100 questions, 8 runs: test {:.1}%, slope cut {:.1}%",
        100.0 * share(a.test),
        100.0 * share(a.slope)
    );
    assert!(share(a.test) >= 0.5, "found in {} of {WINDOWS}", a.test);
}

/// The least-squares slope of the rates `x_i / n_i` against the run number: what a fixed cut
/// ("slope worse than 1 point per run") alarms on, the alarm the test replaces.
fn slope(runs: &[(u64, u64)]) -> f64 {
    let points: Vec<(f64, f64)> = runs
        .iter()
        .enumerate()
        .filter(|(_, &(_, n))| n > 0)
        .map(|(i, &(x, n))| (i as f64, x as f64 / n as f64))
        .collect();
    let k = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / k,
        points.iter().map(|p| p.1).sum::<f64>() / k,
    );
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

#[test]
fn the_slope_of_rates_rising_a_point_per_run_is_a_point() {
    let s = slope(&[(10, 100), (11, 100), (12, 100)]);
    assert!((s - 0.01).abs() < 1e-12, "{s}");
}
