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
    draw_stratified(rng, n, rate, g, [inclusion; 2])
}

/// [`draw`] with a stratified design: a reply the grader read as a pass is labelled with
/// probability `inclusion[0]`, one read as a failure with `inclusion[1]`.
fn draw_stratified(
    rng: &mut fastrand::Rng,
    n: usize,
    rate: f64,
    g: Grader,
    inclusion: [f64; 2],
) -> Drawn {
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
            let inclusion = inclusion[usize::from(graded)];
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
        sample: Sample::new(observations, inclusion[0].min(inclusion[1])),
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

/// Over `samples` draws of 400 replies (true rate 5%) under a stratified design (the
/// grader's reading `raised` drawn `factor` times as often as the other, 60 labels expected):
/// the coverage of the prediction-powered 95% bound, of the same bound with every label
/// weighed by the design's average probability (the strata ignored), and of Clopper–Pearson
/// on the labels alone; and the mean, over the samples, of the Horvitz–Thompson estimate
/// `Σ ξ Y / π / n` and of the labels' plain share of failures, with the standard error of each.
struct Stratified {
    covered: f64,
    covered_ignoring: f64,
    covered_unweighted: f64,
    covered_labels_alone: f64,
    median_bound: f64,
    weighted: (f64, f64),
    plain: (f64, f64),
}

fn stratified(g: Grader, raised: bool, factor: f64, samples: usize, seed: u64) -> Stratified {
    let (n, rate, alpha, labels) = (400usize, 0.05, 0.05, 60.0);
    // The base probability that gives 60 labels expected: n × P(read as `raised`) replies at
    // factor × p, the rest at p.
    let p_failure = rate * g.sensitivity + (1.0 - rate) * (1.0 - g.specificity);
    let p_raised = if raised { p_failure } else { 1.0 - p_failure };
    let base = labels / (n as f64 * (p_raised * factor + 1.0 - p_raised));
    let mut inclusion = [base; 2];
    inclusion[usize::from(raised)] = (base * factor).min(1.0);
    let mut rng = fastrand::Rng::with_seed(seed);
    let (mut covered, mut ignoring, mut unweighted, mut alone) = (0, 0, 0, 0);
    let (mut weighted, mut plain, mut bounds) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        let d = draw_stratified(&mut rng, n, rate, g, inclusion);
        covered += usize::from(d.sample.upper_bound(alpha) >= rate);
        bounds.push(d.sample.upper_bound(alpha));
        let flat = reweighed(&d.sample, labels / n as f64);
        ignoring += usize::from(flat.upper_bound(alpha) >= rate);
        unweighted += usize::from(reweighed(&d.sample, 1.0).upper_bound(alpha) >= rate);
        alone += usize::from(certify::upper_bound(d.labelled_failures, d.labels, alpha) >= rate);
        let ht: f64 = d
            .sample
            .observations()
            .iter()
            .map(|o| match *o {
                Observation::Labelled {
                    truth: true,
                    inclusion,
                    ..
                } => 1.0 / inclusion,
                _ => 0.0,
            })
            .sum();
        weighted.push(ht / n as f64);
        if d.labels > 0 {
            plain.push(d.labelled_failures as f64 / d.labels as f64);
        }
    }
    let share = |k: usize| k as f64 / samples as f64;
    Stratified {
        covered: share(covered),
        covered_ignoring: share(ignoring),
        covered_unweighted: share(unweighted),
        covered_labels_alone: share(alone),
        median_bound: median(&mut bounds),
        weighted: mean_and_error(&weighted),
        plain: mean_and_error(&plain),
    }
}

/// `sample` with every label's inclusion probability taken to be `inclusion`.
fn reweighed(sample: &Sample, inclusion: f64) -> Sample {
    let observations = sample
        .observations()
        .iter()
        .map(|o| match *o {
            Observation::Labelled { graded, truth, .. } => Observation::Labelled {
                graded,
                truth,
                inclusion,
            },
            other => other,
        })
        .collect();
    Sample::new(observations, inclusion)
}

/// The mean of `v` and its standard error.
fn mean_and_error(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Stratified sampling (`rageval label --oversample`, docs/labels.md): with either grader and
/// either stratum of its reading drawn four times as often, the prediction-powered bound,
/// which weighs each label by its own inclusion probability, covers the truth in at least 94%
/// of 2000 samples, and the Horvitz–Thompson estimate is unbiased (its mean over the samples
/// within four standard errors of the truth). Ignoring the probabilities is not: the labels'
/// plain share of failures is biased (towards the raised stratum's rate), and with the passes
/// raised the Clopper–Pearson bound on the labels alone covers in under 94% (80–90%). The
/// figures also show the price of raising a large stratum: with the passes raised every other
/// reply's probability falls, and the median bound doubles (about 25% against 12%).
#[test]
fn under_a_stratified_design_the_bound_covers_and_the_plain_share_is_biased() {
    let (samples, rate) = (2000, 0.05);
    for (name, g, seed) in [("misses 40%", MISSES_40, 71), ("misses 10%", MISSES_10, 72)] {
        for raised in [true, false] {
            let s = stratified(g, raised, 4.0, samples, seed + 10 * u64::from(raised));
            let stratum = if raised { "failures" } else { "passes" };
            eprintln!(
                "grader {name}, read {stratum} x4, {samples} samples: covered {:.2}%, median bound {:.1}% (strata ignored {:.2}%, labels as if certain {:.2}%, Clopper-Pearson on the labels alone {:.2}%); Horvitz-Thompson mean {:.3}% (se {:.3}), plain share {:.3}% (se {:.3})",
                s.covered * 100.0,
                s.median_bound * 100.0,
                s.covered_ignoring * 100.0,
                s.covered_unweighted * 100.0,
                s.covered_labels_alone * 100.0,
                s.weighted.0 * 100.0,
                s.weighted.1 * 100.0,
                s.plain.0 * 100.0,
                s.plain.1 * 100.0
            );
            assert!(s.covered >= 0.94, "{name} {stratum}: covered {}", s.covered);
            assert!(
                (s.weighted.0 - rate).abs() < 4.0 * s.weighted.1,
                "{name} {stratum}: weighted mean {:?}",
                s.weighted
            );
            assert!(
                (s.plain.0 - rate).abs() > 10.0 * s.plain.1,
                "{name} {stratum}: plain share {:?}",
                s.plain
            );
            if !raised {
                assert!(
                    s.covered_labels_alone < 0.94,
                    "{name} {stratum}: the labels alone, unweighted, covered {}",
                    s.covered_labels_alone
                );
            }
        }
    }
}
