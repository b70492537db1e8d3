//! Seeded simulations of certification with labels (issue 37), on a known truth: a grader
//! that misses failures makes the grader-only certificate break its promise, and the
//! prediction-powered test of [`super::ppi`] keeps it, alone and through the ordered
//! procedure on a grid. Each test asserts a figure a broken test would miss; the figures
//! print with `cargo test --lib simulation_labels -- --nocapture`.

use super::certifier::{Certifier, Evidence};
use super::certify;
use super::config::{Method, RecommendConfig};
use super::counts::Counts;
use super::ppi::{Observation, RateSamples, Sample};
use super::simulation::{counts, policy, Pool};

/// A grader of one rate's failures: the chance it reads a failure as one (sensitivity) and a
/// pass as a pass (specificity).
#[derive(Clone, Copy)]
struct Grader {
    sensitivity: f64,
    specificity: f64,
}

/// The graders: one that misses 40% of answers, one that misses 10% and flags 3% of
/// refusals as answers.
const MISSES_40: Grader = Grader {
    sensitivity: 0.6,
    specificity: 0.99,
};
const MISSES_10: Grader = Grader {
    sensitivity: 0.9,
    specificity: 0.97,
};

/// One setting's runs of a rate.
struct Drawn {
    sample: Sample,
    /// Failures as the grader read them.
    graded_failures: u64,
    /// Labels, and failures among them.
    labels: u64,
    labelled_failures: u64,
}

/// `n` model replies whose true failure rate is `rate`, graded by `g`, each labelled with
/// probability `inclusion` (Poisson sampling).
fn draw(rng: &mut fastrand::Rng, n: usize, rate: f64, g: Grader, inclusion: f64) -> Drawn {
    let (mut graded_failures, mut labels, mut labelled_failures) = (0, 0, 0);
    let observations = (0..n)
        .map(|_| {
            let truth = rng.f64() < rate;
            let graded = if truth {
                rng.f64() < g.sensitivity
            } else {
                rng.f64() >= g.specificity
            };
            graded_failures += u64::from(graded);
            if rng.f64() < inclusion {
                labels += 1;
                labelled_failures += u64::from(truth);
                Observation::Labelled {
                    graded,
                    truth,
                    inclusion,
                }
            } else {
                Observation::Graded(graded)
            }
        })
        .collect();
    Drawn {
        sample: Sample::new(observations, inclusion),
        graded_failures,
        labels,
        labelled_failures,
    }
}

/// Over `samples` draws of 400 graded replies with 60 labels expected (π = 0.15) and a true
/// rate of 5%: the share whose one-sided 95% bound covers the truth with labels and on the
/// grader's reading alone (Clopper–Pearson), and the median bounds with labels and of
/// Clopper–Pearson on the labels alone.
struct Coverage {
    with_labels: f64,
    grader_only: f64,
    median_with_labels: f64,
    median_labels_alone: f64,
}

fn coverage(g: Grader, samples: usize, seed: u64) -> Coverage {
    let (n, rate, alpha) = (400, 0.05, 0.05);
    let mut rng = fastrand::Rng::with_seed(seed);
    let (mut covered, mut grader_covered) = (0, 0);
    let (mut bounds, mut alone) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        let d = draw(&mut rng, n, rate, g, 60.0 / 400.0);
        let bound = d.sample.upper_bound(alpha);
        covered += usize::from(bound >= rate);
        grader_covered +=
            usize::from(certify::upper_bound(d.graded_failures, n as u64, alpha) >= rate);
        bounds.push(bound);
        alone.push(certify::upper_bound(d.labelled_failures, d.labels, alpha));
    }
    let share = |k: usize| k as f64 / samples as f64;
    Coverage {
        with_labels: share(covered),
        grader_only: share(grader_covered),
        median_with_labels: median(&mut bounds),
        median_labels_alone: median(&mut alone),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// (a) A grader that misses 40% of answers (true unwanted rate 5%, 400 graded replies, 60
/// labels): the bound with labels covers the truth in at least 94% of 2000 samples, the
/// grader-only bound in fewer (so the check can fail). With a grader that misses 10% and
/// flags 3%, the bound with labels covers as well, and its median is below that of
/// Clopper–Pearson on the labels alone: the grades add to what the labels say.
#[test]
fn with_labels_the_bound_covers_the_truth_where_the_graders_does_not() {
    let samples = 2000;
    let c = coverage(MISSES_40, samples, 37);
    eprintln!(
        "sensitivity 0.6, specificity 0.99, {samples} samples: with 60 labels covered {:.2}%, grader only {:.2}%; median bound {:.2}%, labels alone {:.2}%",
        c.with_labels * 100.0,
        c.grader_only * 100.0,
        c.median_with_labels * 100.0,
        c.median_labels_alone * 100.0
    );
    assert!(c.with_labels >= 0.94, "with labels: {}", c.with_labels);
    assert!(c.grader_only < 0.94, "grader only: {}", c.grader_only);
    let c = coverage(MISSES_10, samples, 38);
    eprintln!(
        "sensitivity 0.9, specificity 0.97, {samples} samples: with 60 labels covered {:.2}%, grader only {:.2}%; median bound {:.2}%, labels alone {:.2}%",
        c.with_labels * 100.0,
        c.grader_only * 100.0,
        c.median_with_labels * 100.0,
        c.median_labels_alone * 100.0
    );
    assert!(c.with_labels >= 0.94, "with labels: {}", c.with_labels);
    assert!(
        c.median_with_labels < c.median_labels_alone,
        "median {} against {} on the labels alone",
        c.median_with_labels,
        c.median_labels_alone
    );
}

/// One sample of the ordered grid of issue 29's test (a): per setting, `n` unanswerable
/// questions whose true unwanted rate is the limit (20%) where `bad` says so and 5%
/// elsewhere, graded by `g` and labelled with probability `inclusion`; every answerable
/// question answered (its family passes its level on). The counts as the grader reads them,
/// the counts and samples with labels.
fn grid_sample(
    rng: &mut fastrand::Rng,
    bad: &[bool],
    n: usize,
    g: Grader,
) -> (Vec<Counts>, Vec<Counts>, Vec<RateSamples>) {
    let (mut graded, mut corrected, mut samples) = (Vec::new(), Vec::new(), Vec::new());
    for &b in bad {
        let d = draw(rng, n, if b { 0.2 } else { 0.05 }, g, 0.15);
        let truth = d
            .sample
            .observations()
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Observation::Labelled { truth: true, .. } | Observation::Graded(true)
                )
            })
            .count() as u64;
        let n = n as u64;
        graded.push(counts(d.graded_failures, 0, n));
        corrected.push(counts(truth, 0, n));
        samples.push([Some(d.sample), None, None, None]);
    }
    (graded, corrected, samples)
}

/// Over `samples` samples of the grid: the share in which a setting at the limit was
/// certified with the grader's counts alone, and with labels; and the share in which the
/// labels certified some setting.
fn grid_run(samples: usize, seed: u64) -> (f64, f64, f64) {
    let bad: Vec<bool> = Pool::grid()
        .iter()
        .map(|&(t, ..)| t <= 0.25 + 1e-9)
        .collect();
    let settings = Pool::settings();
    let p = policy(Method::Ordered, false, 0.5);
    let mut certifier = Certifier::new(&p, &settings);
    let mut rng = fastrand::Rng::with_seed(seed);
    let (mut graded_broke, mut broke, mut any) = (0, 0, 0);
    let breaks = |flags: &[bool]| (0..flags.len()).any(|i| flags[i] && bad[i]);
    for _ in 0..samples {
        let (graded, corrected, labelled) = grid_sample(&mut rng, &bad, 200, MISSES_40);
        graded_broke += usize::from(breaks(&certifier.certified(&graded)));
        let flags = certifier.certified_on(Evidence {
            counts: &corrected,
            labelled: Some(&labelled),
        });
        broke += usize::from(breaks(&flags));
        any += usize::from(flags.contains(&true));
    }
    let share = |k: usize| k as f64 / samples as f64;
    (share(graded_broke), share(broke), share(any))
}

/// (b) The same through the whole certification, on the ordered grid where every setting up
/// to minScore 0.25 sits exactly at the unwanted limit (200 replies per setting, 30 labels
/// expected): with the grader that misses 40% of answers, its counts alone certify a setting
/// at the limit in far more than 5% of samples; with labels, in at most 5% (and three
/// standard errors), while the settings below the limit are still certified.
#[test]
fn through_the_ordered_procedure_labels_keep_the_promise_the_grader_breaks() {
    let samples = 1000;
    let (graded_broke, broke, any) = grid_run(samples, 29);
    eprintln!(
        "ordered grid, grader missing 40%, {samples} samples: a setting at the limit certified {:.1}% on the grader's counts, {:.1}% with labels; some setting certified with labels {:.1}%",
        graded_broke * 100.0,
        broke * 100.0,
        any * 100.0
    );
    let slack = 3.0 * (0.05f64 * 0.95 / samples as f64).sqrt();
    assert!(broke <= 0.05 + slack, "with labels: {broke}");
    assert!(graded_broke > 0.05 + slack, "grader only: {graded_broke}");
    assert!(any >= 0.9, "with labels some setting certified in {any}");
}

/// Re-sweeps of one setting whose unwanted rate is at its limit (12.5%), graded by the
/// grader that misses 40%, each reply labelled with probability 0.15, checked after every 10
/// more questions from 20 to 300 in sequential mode: the share of histories ever certified.
fn labelled_optional_stopping(histories: usize, seed: u64) -> f64 {
    let settings = [crate::sweep::Setting::new("0.3".parse().unwrap(), 1)];
    let p = RecommendConfig {
        max_unwanted_answer_rate: 0.125,
        sequential: true,
        ..RecommendConfig::default()
    };
    let mut certifier = Certifier::new(&p, &settings);
    let mut rng = fastrand::Rng::with_seed(seed);
    let ever = (0..histories)
        .filter(|_| {
            let d = draw(&mut rng, 300, 0.125, MISSES_40, 0.15);
            let all = d.sample.observations();
            (20..=300).step_by(10).any(|n| {
                let sample = Sample::new(all[..n].to_vec(), 0.15);
                let labelled = [[Some(sample), None, None, None]];
                let c = [counts(0, 0, n as u64)];
                certifier.certified_on(Evidence {
                    counts: &c,
                    labelled: Some(&labelled),
                })[0]
            })
        })
        .count();
    ever as f64 / histories as f64
}

/// The sequential mode with labels: re-sweeping until certified is falsely certified in at
/// most 5% of histories (and three standard errors).
#[test]
fn re_sweeping_with_labels_keeps_the_promise() {
    let histories = 600;
    let ever = labelled_optional_stopping(histories, 3);
    eprintln!("re-sweeping 20..300 at the limit with labels, {histories} histories: falsely certified in {:.2}%", ever * 100.0);
    let slack = 3.0 * (0.05f64 * 0.95 / histories as f64).sqrt();
    assert!(ever <= 0.05 + slack, "sequential with labels: {ever}");
}

/// Per number of labels expected among 400 graded replies (true rate 5%), the median 95%
/// bound with labels and of Clopper–Pearson on the labels alone, over `samples` draws.
fn by_labels(g: Grader, samples: usize, seed: u64) -> Vec<(usize, f64, f64)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    [20, 40, 60, 100, 200]
        .into_iter()
        .map(|labels| {
            let (mut with, mut alone) = (Vec::new(), Vec::new());
            for _ in 0..samples {
                let d = draw(&mut rng, 400, 0.05, g, labels as f64 / 400.0);
                with.push(d.sample.upper_bound(0.05));
                alone.push(certify::upper_bound(d.labelled_failures, d.labels, 0.05));
            }
            (labels, median(&mut with), median(&mut alone))
        })
        .collect()
}

/// The worked example of docs/insight.md: how many labels help. With either grader, more
/// labels give a lower median bound; with the grader that misses 10%, the grades add to the
/// labels from 40 to 100 labels (with 20 the bet is too small to gain, with 200 of 400 the
/// labels alone do as well).
#[test]
fn the_figures_of_how_many_labels_help() {
    for (name, g, seed) in [("misses 40%", MISSES_40, 41), ("misses 10%", MISSES_10, 42)] {
        let rows = by_labels(g, 300, seed);
        for &(labels, with, alone) in &rows {
            eprintln!(
                "grader {name}, 400 replies, {labels} labels: median bound {:.1}% with labels, {:.1}% on the labels alone",
                with * 100.0,
                alone * 100.0
            );
        }
        assert!(
            rows.windows(2).all(|w| w[1].1 < w[0].1),
            "{name}: more labels, a lower bound: {rows:?}"
        );
        if name == "misses 10%" {
            assert!(
                rows.iter()
                    .filter(|r| (40..=100).contains(&r.0))
                    .all(|r| r.1 < r.2),
                "{rows:?}"
            );
        }
    }
}
