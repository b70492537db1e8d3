//! Seeded simulations of certification with labels (issue 37), on a known truth: a grader
//! that misses failures makes the grader-only certificate break its promise, and the
//! prediction-powered test of [`super::ppi`] keeps it, alone and through the ordered
//! procedure on a grid. Each test asserts a figure a broken test would miss; the figures
//! print with `cargo test --lib simulation_labels -- --nocapture`.

use super::certify;
use super::ppi::{Observation, Sample};

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
