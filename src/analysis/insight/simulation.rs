//! Seeded simulations of certification's promises, on known populations (issue 29): the
//! ordered procedure keeps the family-wise error at the level and certifies more often than
//! Bonferroni; a shuffled, non-monotone order still keeps the error; the anytime-valid mode
//! survives re-sweeping until certified while fixed-size tests do not. Each test asserts a
//! figure that a broken procedure would miss. The larger runs behind the figures in
//! docs/insight.md are `the_figures_of_the_docs_hold`, which prints them with
//! `cargo test --lib simulation::the_figures -- --nocapture`.

use super::certifier::Certifier;
use super::config::{Method, RecommendConfig};
use super::counts::{Counts, Tally};
use crate::sweep::Setting;

/// A pool like the issue's: 30 settings (minScore 0.05 to 0.5 by 0.05, k 1, 2, 4) over
/// questions whose scores overlap. An unanswerable question has a best score `0.63 X`,
/// `X ~ Kumaraswamy(1.2, 1.5)`, and is answered when a passage passes minScore and its own
/// draw is below `q_k` (more passages, more made-up answers); an answerable one has a score
/// `~ U(0.25, 0.9)` and is refused when it is under minScore or its draw is above `r_k` (the
/// right passage missed at small k). Rates are monotone along minScore for each k, and exact.
pub(super) struct Pool;

const SCALE: f64 = 0.63;
const UNANSWERED_K: [(usize, f64); 3] = [(1, 0.5), (2, 0.65), (4, 0.8)];
const ANSWERED_K: [(usize, f64); 3] = [(1, 0.85), (2, 0.92), (4, 0.95)];

impl Pool {
    pub(super) fn grid() -> Vec<(f64, usize, f64, f64)> {
        let mut out = Vec::new();
        for i in 1..=10 {
            let t = f64::from(i) * 0.05;
            for (&(k, q), &(_, r)) in UNANSWERED_K.iter().zip(&ANSWERED_K) {
                out.push((t, k, q, r));
            }
        }
        out
    }

    pub(super) fn settings() -> Vec<Setting> {
        Self::grid()
            .iter()
            .map(|&(t, k, _, _)| Setting::new(format!("{t:.2}").parse().unwrap(), k))
            .collect()
    }

    /// The true rates (unwanted, false refusals) of each setting.
    fn truth() -> Vec<(f64, f64)> {
        Self::grid()
            .iter()
            .map(|&(t, _, q, r)| {
                let x = (t / SCALE).clamp(0.0, 1.0);
                let passes = (1.0 - x.powf(1.2)).powf(1.5);
                let under = ((t - 0.25) / 0.65).clamp(0.0, 1.0);
                (q * passes, under + (1.0 - under) * (1.0 - r))
            })
            .collect()
    }

    /// One question set: per question its draws, answerable and unanswerable.
    fn questions(rng: &mut fastrand::Rng, n: usize) -> Vec<[f64; 4]> {
        (0..n)
            .map(|_| {
                let u = SCALE * (1.0 - (1.0 - rng.f64()).powf(1.0 / 1.5)).powf(1.0 / 1.2);
                [u, rng.f64(), 0.25 + 0.65 * rng.f64(), rng.f64()]
            })
            .collect()
    }

    /// Each setting's counts over the first `n` questions of `qs`.
    fn counts(qs: &[[f64; 4]], n: usize) -> Vec<Counts> {
        Self::grid()
            .iter()
            .map(|&(t, _, q, r)| {
                let qs = &qs[..n];
                let answered = qs.iter().filter(|d| d[0] >= t && d[1] < q).count() as u64;
                let refused = qs.iter().filter(|d| d[2] < t || d[3] > r).count() as u64;
                counts(answered, refused, n as u64)
            })
            .collect()
    }
}

/// Counts of `n` questions per class with these failures.
pub(super) fn counts(answered: u64, refused: u64, n: u64) -> Counts {
    Counts::two_rates(Tally::of(answered, n), Tally::of(refused, n), 100 * n)
}

pub(super) fn policy(method: Method, sequential: bool, max_false_refusals: f64) -> RecommendConfig {
    RecommendConfig {
        max_unwanted_answer_rate: 0.2,
        max_false_refusal_rate: max_false_refusals,
        method,
        sequential,
        ..RecommendConfig::default()
    }
}

/// Whether setting `i` breaks a limit of `p` on the pool's true rates.
fn breaks(truth: &[(f64, f64)], p: &RecommendConfig, i: usize) -> bool {
    truth[i].0 > p.max_unwanted_answer_rate || truth[i].1 > p.max_false_refusal_rate
}

/// Over `samples` question sets of `n` per class: samples with a certified setting, and with
/// a certified setting that breaks a limit, for the ordered procedure and for Bonferroni; and
/// the samples in which Bonferroni certified a setting and the ordered procedure none (the
/// pool's counts are monotone along minScore in every sample, so there should be none).
fn pool_run(seed: u64, samples: usize, n: usize) -> ([(usize, usize); 2], usize) {
    let settings = Pool::settings();
    let truth = Pool::truth();
    let mut out = [(0, 0); 2];
    let methods = [Method::Ordered, Method::Bonferroni];
    let mut certifiers = methods.map(|m| Certifier::new(&policy(m, false, 0.5), &settings));
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut only_bonferroni = 0;
    for _ in 0..samples {
        let qs = Pool::questions(&mut rng, n);
        let counts = Pool::counts(&qs, n);
        let mut any = [false; 2];
        for (m, certifier) in certifiers.iter_mut().enumerate() {
            let flags = certifier.certified(&counts);
            let p = policy(methods[m], false, 0.5);
            any[m] = flags.iter().any(|&c| c);
            out[m].0 += usize::from(any[m]);
            out[m].1 += usize::from((0..flags.len()).any(|i| flags[i] && breaks(&truth, &p, i)));
        }
        only_bonferroni += usize::from(any[1] && !any[0]);
    }
    (out, only_bonferroni)
}

/// (a) On the pool, the ordered procedure certifies a setting in at least 28 of 100 samples of
/// 100 questions per class and 55 of 150, at least as often as Bonferroni on the same
/// samples (in each sample, not only in total), and no more than 6 of 100 certify a setting
/// that breaks a limit.
#[test]
fn the_ordered_procedure_certifies_more_and_keeps_its_promise_on_the_pool() {
    for (n, at_least) in [(100, 28), (150, 55)] {
        let ([(ordered, ordered_broke), (bonferroni, bonferroni_broke)], only_bonferroni) =
            pool_run(29, 100, n);
        eprintln!(
            "{n} per class, 100 samples: ordered certified {ordered} (broke a limit {ordered_broke}), Bonferroni {bonferroni} ({bonferroni_broke})"
        );
        assert!(
            ordered >= at_least,
            "{n} per class: certified in {ordered} of 100 (Bonferroni {bonferroni})"
        );
        assert!(ordered >= bonferroni, "{ordered} < {bonferroni} at {n}");
        assert_eq!(
            only_bonferroni, 0,
            "{n} per class: only Bonferroni certified"
        );
        assert!(
            ordered_broke <= 6 && bonferroni_broke <= 6,
            "{n}: {ordered_broke} and {bonferroni_broke} of 100 broke a limit"
        );
    }
}

/// Samples of `n` unanswerable questions per setting, whose true unwanted rate is exactly the
/// limit (20%) where `bad` says so and 5% elsewhere: of `samples`, how many certified some
/// setting at the limit (an error of the procedure), and how many would have if each setting
/// were tested alone at the full 5%.
fn at_the_limit(bad: &[bool], rng: &mut fastrand::Rng, samples: usize) -> (f64, f64) {
    let settings = Pool::settings();
    let p = policy(Method::Ordered, false, 0.5);
    let mut certifier = Certifier::new(&p, &settings);
    let n = 60u64;
    let (mut broke, mut naive_broke) = (0, 0);
    for _ in 0..samples {
        let counts: Vec<Counts> = bad
            .iter()
            .map(|&b| {
                let rate = if b { 0.2 } else { 0.05 };
                let answered = (0..n).filter(|_| rng.f64() < rate).count() as u64;
                counts(answered, 0, n)
            })
            .collect();
        let flags = certifier.certified(&counts);
        broke += usize::from((0..flags.len()).any(|i| flags[i] && bad[i]));
        naive_broke +=
            usize::from(counts.iter().zip(bad).any(|(c, &b)| {
                b && super::certify::certifies(c.certified[0].failures, n, 0.2, 0.05)
            }));
    }
    let share = |k: usize| k as f64 / samples as f64;
    (share(broke), share(naive_broke))
}

/// Issue 29's test (a) on an ordered grid: the unwanted rate falls as minScore rises, and
/// every setting up to minScore 0.25 sits exactly at the limit (the hardest case for the
/// procedure: the chains walk down from 0.5 and reach the limit with the level they carry).
/// Some setting at the limit is certified in at most 5% of samples; each setting tested alone
/// at the full level would break that (the test could fail).
#[test]
fn on_an_ordered_grid_a_setting_at_the_limit_is_certified_at_most_at_the_level() {
    let bad: Vec<bool> = Pool::grid()
        .iter()
        .map(|&(t, ..)| t <= 0.25 + 1e-9)
        .collect();
    assert_eq!(bad.iter().filter(|&&b| b).count(), 15);
    let samples = 2000;
    let (broke, naive) = at_the_limit(&bad, &mut fastrand::Rng::with_seed(11), samples);
    println!("ordered grid, {samples} samples: at the limit certified {broke:.4}, alone at 5% {naive:.4}");
    let slack = 3.0 * (0.05f64 * 0.95 / samples as f64).sqrt();
    assert!(
        broke <= 0.05 + slack,
        "certified a setting at the limit in {broke}"
    );
    assert!(naive > 0.05 + slack, "each at the full level: {naive}");
}

/// The same with half the settings at the limit in a shuffled order (the rates no longer
/// monotone along minScore): the guarantee does not rest on the order being right.
#[test]
fn a_shuffled_order_still_keeps_the_error_at_the_level() {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut bad: Vec<bool> = (0..Pool::settings().len()).map(|i| i % 2 == 0).collect();
    rng.shuffle(&mut bad);
    let samples = 2000;
    let (broke, naive) = at_the_limit(&bad, &mut rng, samples);
    println!(
        "shuffled, {samples} samples: at the limit certified {broke:.4}, alone at 5% {naive:.4}"
    );
    let slack = 3.0 * (0.05f64 * 0.95 / samples as f64).sqrt();
    assert!(
        broke <= 0.05 + slack,
        "certified a setting at the limit in {broke}"
    );
    assert!(naive > 0.05 + slack, "each at the full level: {naive}");
}

/// Re-sweeps of one setting whose unwanted rate is exactly at its limit (12.5%) after every 10
/// more questions from 20 to `last`, over `histories` histories: the share of histories in
/// which it was ever certified (every answerable question answered, so the false-refusal
/// family passes its level on and the unwanted limit is tested at the full 5%).
fn optional_stopping(sequential: bool, histories: usize, last: u64, seed: u64) -> f64 {
    let settings = [Setting::new("0.3".parse().unwrap(), 1)];
    let p = RecommendConfig {
        max_unwanted_answer_rate: 0.125,
        sequential,
        ..RecommendConfig::default()
    };
    let mut certifier = Certifier::new(&p, &settings);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut ever = 0;
    for _ in 0..histories {
        let mut answered = 0;
        let mut certified = false;
        for n in 1..=last {
            answered += u64::from(rng.f64() < 0.125);
            if n >= 20 && n % 10 == 0 && !certified {
                certified = certifier.certified(&[counts(answered, 0, n)])[0];
            }
        }
        ever += usize::from(certified);
    }
    ever as f64 / histories as f64
}

/// (c) Optional stopping: the anytime-valid mode is ever falsely certified in at most 5% of
/// histories (with three standard errors of slack), the fixed-size tests in more.
#[test]
fn re_sweeping_until_certified_keeps_the_promise_only_in_sequential_mode() {
    let histories = 600;
    let slack = 3.0 * (0.05f64 * 0.95 / histories as f64).sqrt();
    let sequential = optional_stopping(true, histories, 300, 3);
    let fixed = optional_stopping(false, histories, 300, 3);
    assert!(sequential <= 0.05 + slack, "sequential: {sequential}");
    assert!(fixed > 0.05 + slack, "fixed: {fixed}");
}

/// With false refusals ≤ 65%, a team that re-sweeps the pool after every 10 questions per
/// class from 20 to 150 in sequential mode, stopping once certified: certified trials.
fn sequential_power(trials: usize, seed: u64) -> usize {
    let settings = Pool::settings();
    let mut certifier = Certifier::new(&policy(Method::Ordered, true, 0.65), &settings);
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..trials)
        .filter(|_| {
            let qs = Pool::questions(&mut rng, 150);
            (20..=150)
                .step_by(10)
                .any(|n| certifier.certified(&Pool::counts(&qs, n)).contains(&true))
        })
        .count()
}

#[test]
fn a_team_re_sweeping_in_sequential_mode_gets_certified() {
    let certified = sequential_power(100, 5);
    assert!(certified >= 80, "certified in {certified} of 100 trials");
}

/// The figures of docs/insight.md, on 1000 samples per size and 10,000 histories, held to the
/// issue's targets scaled to 1000 samples (at least 28% certified at 100 questions per class and
/// 55% at 150, at most 6% broke a limit, the ordered procedure never behind Bonferroni;
/// re-sweeping falsely certified in at most 5.5% in sequential mode and in more than 5% with
/// fixed-size tests; sequential power at least 80%).
#[test]
fn the_figures_of_the_docs_hold() {
    for n in [30, 60, 100, 150] {
        let ([(o, ob), (b, bb)], only_b) = pool_run(2029, 1000, n);
        eprintln!(
            "{n} per class, 1000 samples: ordered certified {o} (broke a limit {ob}), Bonferroni {b} ({bb})"
        );
        assert!(o >= b, "{n} per class: ordered {o} < Bonferroni {b}");
        assert_eq!(
            only_b, 0,
            "{n} per class: only Bonferroni certified in {only_b}"
        );
        assert!(
            ob <= 60 && bb <= 60,
            "{n} per class: {ob} and {bb} broke a limit"
        );
        match n {
            100 => assert!(o >= 280, "100 per class: {o} of 1000 certified"),
            150 => assert!(o >= 550, "150 per class: {o} of 1000 certified"),
            _ => {}
        }
    }
    let fixed = optional_stopping(false, 10_000, 300, 11);
    let sequential = optional_stopping(true, 10_000, 300, 11);
    eprintln!(
        "re-sweeping 20..300 at the limit, 10,000 histories: falsely certified in {:.2}% with fixed-size tests, {:.2}% in sequential mode",
        fixed * 100.0,
        sequential * 100.0
    );
    assert!(sequential <= 0.055, "sequential: {sequential}");
    assert!(fixed > 0.05, "fixed: {fixed}");
    let power = sequential_power(1000, 17);
    eprintln!(
        "sequential power, false refusals ≤ 65%, 20..150 by 10, 1000 trials: {power} certified"
    );
    assert!(power >= 800, "sequential power: {power} of 1000");
}
