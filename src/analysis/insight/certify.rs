//! Exact binomial statistics for certifying rate limits: the binomial tail, the one-sided
//! Clopper–Pearson upper bound, the test of "rate ≤ limit", and how many questions a test needs.
//!
//! A rate limit `max` is certified from `x` failures in `n` questions at level `alpha` when the
//! exact binomial test rejects "the true rate is above `max`": `P(X ≤ x) ≤ alpha` for
//! `X ~ Binomial(n, max)`. That is the same as the Clopper–Pearson upper bound at confidence
//! `1 - alpha` being at most `max`. No normal approximation is used anywhere; sums of binomial
//! terms run in log space, so a few thousand questions neither underflow nor lose precision.
//!
//! How the level is shared over a grid (the family-wise correction) is the recommendation's job
//! ([`super::recommend`]); this module only knows one test.

/// `ln C(n, i) + i ln p + (n - i) ln(1 - p)` for `i = 0..=x`, one at a time: the log
/// probabilities of the binomial terms, from the first, by their ratio.
fn log_terms(x: u64, n: u64, p: f64) -> impl Iterator<Item = f64> {
    let odds = (p / (1.0 - p)).ln();
    let first = n as f64 * (-p).ln_1p();
    (0..=x.min(n)).scan(first, move |lp, i| {
        let here = *lp;
        *lp += ((n - i) as f64).ln() - ((i + 1) as f64).ln() + odds;
        Some(here)
    })
}

/// `ln(e^a + e^b)` without overflow or underflow.
fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// The binomial tail `P(X ≤ x)` for `X ~ Binomial(n, p)`, exactly (to floating point).
pub fn binomial_cdf(x: u64, n: u64, p: f64) -> f64 {
    log_binomial_cdf(x, n, p).exp().min(1.0)
}

/// `ln P(X ≤ x)` for `X ~ Binomial(n, p)`, summed in log space.
pub fn log_binomial_cdf(x: u64, n: u64, p: f64) -> f64 {
    if x >= n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return f64::NEG_INFINITY;
    }
    log_terms(x, n, p).fold(f64::NEG_INFINITY, log_add).min(0.0)
}

/// `ln P(X = x)` for `X ~ Binomial(n, p)`.
pub fn log_binomial_pmf(x: u64, n: u64, p: f64) -> f64 {
    if x > n {
        return f64::NEG_INFINITY;
    }
    if p <= 0.0 || p >= 1.0 {
        let sure = if p <= 0.0 { 0 } else { n };
        return if x == sure { 0.0 } else { f64::NEG_INFINITY };
    }
    log_terms(x, n, p).last().unwrap_or(f64::NEG_INFINITY)
}

/// Whether `x` failures in `n` questions certify "rate ≤ `max`" at level `alpha`: the exact
/// binomial test rejects "rate > `max`". A limit of 1 or more always holds; a limit of 0 is
/// never certified by a sample (no number of questions rules out a rate just above 0); no
/// questions certify nothing.
pub fn certifies(x: u64, n: u64, max: f64, alpha: f64) -> bool {
    if max >= 1.0 {
        return true;
    }
    n > 0 && max > 0.0 && binomial_cdf(x, n, max) <= alpha
}

/// The largest number of failures in `n` questions that still certifies `max` at `alpha`, or
/// `None` when even none does. One walk over the terms; the resampled recommendations test many
/// counts against the same `n` and compare with this instead.
pub fn critical_failures(n: u64, max: f64, alpha: f64) -> Option<u64> {
    if max >= 1.0 {
        return Some(n);
    }
    if n == 0 || max <= 0.0 {
        return None;
    }
    let mut cdf = f64::NEG_INFINITY;
    let mut last = None;
    let log_alpha = alpha.ln();
    for (i, lp) in log_terms(n, n, max).enumerate() {
        cdf = log_add(cdf, lp);
        if cdf > log_alpha {
            break;
        }
        last = Some(i as u64);
    }
    last
}

/// The one-sided Clopper–Pearson upper bound at confidence `1 - alpha`: the rate `p` at which
/// `P(X ≤ x) = alpha`. 1 when every question failed or there are none. `1 - alpha^(1/n)` when
/// none failed.
pub fn upper_bound(x: u64, n: u64, alpha: f64) -> f64 {
    if n == 0 || x >= n {
        return 1.0;
    }
    if x == 0 {
        return 1.0 - alpha.powf(1.0 / n as f64);
    }
    // The tail falls as p rises: bisect between the measured rate and 1.
    smallest_rate(x as f64 / n as f64, 1.0, 1e-15, |p| {
        binomial_cdf(x, n, p) <= alpha
    })
}

/// The smallest rate in `(lo, hi]` that `passes`, to within `tolerance`, when `lo` fails,
/// `hi` passes and passing holds from some rate on: bisection (at most 200 halvings).
pub fn smallest_rate(
    mut lo: f64,
    mut hi: f64,
    tolerance: f64,
    passes: impl Fn(f64) -> bool,
) -> f64 {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi - lo < tolerance {
            break;
        }
    }
    hi
}

/// The most questions [`questions_needed`] looks at; more is reported as "more than this".
pub const MAX_QUESTIONS: u64 = 10_000_000;

/// How many questions a limit takes to certify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needed {
    /// This many questions, with the failures the case names.
    Questions(u64),
    /// More than [`MAX_QUESTIONS`].
    MoreThan(u64),
    /// No number of questions: the limit is 0, or the rate is at or above it.
    Never,
}

impl Needed {
    /// The number of questions, when there is one within reach.
    pub fn questions(self) -> Option<u64> {
        match self {
            Needed::Questions(n) => Some(n),
            Needed::MoreThan(_) | Needed::Never => None,
        }
    }
}

/// The smallest value in `(lo, hi]` that `passes`, when `lo` fails, `hi` passes and `passes`
/// holds from some value on: bisection.
pub fn first_passing(mut lo: u64, mut hi: u64, passes: impl Fn(u64) -> bool) -> u64 {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Doubling from `start` (at least 1), the first value whose `passes` holds and the one
/// before it, or `None` once `bound(value)` reaches [`MAX_QUESTIONS`] without one.
pub fn double_until(
    start: u64,
    passes: impl Fn(u64) -> bool,
    bound: impl Fn(u64) -> u64,
) -> Option<(u64, u64)> {
    let mut hi = start.max(1);
    while !passes(hi) {
        if bound(hi) >= MAX_QUESTIONS {
            return None;
        }
        hi *= 2;
    }
    Some((hi / 2, hi))
}

/// The smallest number of questions with at most `failures` failures that certifies `max` at
/// `alpha`. The tail falls as questions are added, so a binary search finds it exactly.
pub fn needed_with_failures(failures: u64, max: f64, alpha: f64) -> Needed {
    needed_with(failures, max, |n| certifies(failures, n, max, alpha))
}

/// The smallest number of questions with at most `failures` failures that `passes`, when
/// passing holds from some size on.
pub fn needed_with(failures: u64, max: f64, passes: impl Fn(u64) -> bool) -> Needed {
    if max >= 1.0 {
        return Needed::Questions(failures.max(1));
    }
    if max <= 0.0 {
        return Needed::Never;
    }
    let Some((lo, hi)) = double_until(failures + 1, &passes, |n| n) else {
        return Needed::MoreThan(MAX_QUESTIONS);
    };
    // Up to `failures` questions never certify a limit below 1.
    Needed::Questions(first_passing(lo.max(failures), hi, passes))
}

/// The smallest number of questions that certifies `max` at `alpha` if the measured rate
/// `x / n` held: `N` questions with `floor(N x / n)` failures. Never when the rate is at or
/// above the limit.
pub fn questions_needed(x: u64, n: u64, max: f64, alpha: f64) -> Needed {
    if x == 0 || n == 0 || max >= 1.0 {
        return needed_with_failures(0, max, alpha);
    }
    if max <= 0.0 || x as f64 / n as f64 >= max {
        return Needed::Never;
    }
    // With `f` failures, the sizes whose rounded-down failures are `f` run from `first(f)` to
    // `first(f + 1) - 1`; within that run the tail falls as the size grows, so the run passes
    // exactly when its last size does, and its smallest passing size is found by bisection.
    // Across runs the last sizes' tails fall nearly, not exactly, monotonically (the rounding
    // differs from run to run): bisect over the runs, then look back over earlier ones.
    let first = |f: u64| (f as u128 * n as u128).div_ceil(x as u128) as u64;
    let last = |f: u64| first(f + 1) - 1;
    let passes_run = |f: u64| certifies(f, last(f), max, alpha);
    let Some((lo, hi)) = double_until(1, passes_run, last) else {
        return Needed::MoreThan(MAX_QUESTIONS);
    };
    let hi = first_passing(lo, hi, passes_run);
    let f = (hi.saturating_sub(64)..hi)
        .find(|&f| passes_run(f))
        .unwrap_or(hi);
    let passes = |m: u64| certifies(f, m, max, alpha);
    let lo = first(f);
    if passes(lo) {
        return Needed::Questions(lo);
    }
    Needed::Questions(first_passing(lo, last(f), passes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn the_tail_matches_direct_sums() {
        // P(X ≤ 1), n = 22, p = 0.2: 0.8^22 + 22 * 0.2 * 0.8^21.
        let direct = 0.8f64.powi(22) + 22.0 * 0.2 * 0.8f64.powi(21);
        assert!(close(binomial_cdf(1, 22, 0.2), direct, 1e-12));
        assert!(close(binomial_cdf(0, 9, 0.2), 0.8f64.powi(9), 1e-12));
        assert_eq!(binomial_cdf(9, 9, 0.2), 1.0);
        assert_eq!(binomial_cdf(3, 9, 0.0), 1.0);
        assert_eq!(binomial_cdf(3, 9, 1.0), 0.0);
        // A large n whose first term underflows in linear space (0.8^6500 is about e^-1450):
        // mpmath at 50 digits gives 0.061873412233803096 (see the next test).
        let big = binomial_cdf(1250, 6500, 0.2);
        assert!(close(big, 0.061_873_412_233_803_1, 1e-9), "{big}");
    }

    /// Reference values from an independent implementation: mpmath 1.3 at 50 digits, summing
    /// `binomial(n, i) p^i (1-p)^(n-i)` term by term and bisecting the tail for the bounds.
    #[test]
    fn bounds_match_an_independent_implementation() {
        // 0 of 9 at 95%: 1 - 0.05^(1/9).
        assert!(close(
            upper_bound(0, 9, 0.05),
            0.283_128_835_563_113_5,
            1e-12
        ));
        let cases: [(u64, u64, f64, f64); 6] = [
            (1, 9, 0.05, 0.429_135_547_031_434_6),
            (1, 10, 0.05, 0.394_163_302_436_504_77),
            (5, 17, 0.05, 0.521_917_693_113_631),
            (3, 100, 0.0025, 0.113_708_055_691_906_33),
            (12, 40, 0.01, 0.494_484_004_641_690_2),
            (250, 1000, 0.05, 0.273_553_631_323_720_2),
        ];
        for (x, n, alpha, want) in cases {
            let got = upper_bound(x, n, alpha);
            assert!(
                close(got, want, 1e-9),
                "{x} of {n} at {alpha}: {got} != {want}"
            );
            // The bound and the test agree: the tail at the bound is alpha.
            assert!(close(binomial_cdf(x, n, got), alpha, 1e-6));
        }
        assert_eq!(upper_bound(9, 9, 0.05), 1.0);
        assert_eq!(upper_bound(0, 0, 0.05), 1.0);
    }

    #[test]
    fn the_test_agrees_with_the_bound_and_the_critical_count() {
        for n in [1, 5, 9, 14, 22, 60, 200] {
            for max in [0.05, 0.1, 0.2, 0.5] {
                for alpha in [0.05, 0.0025] {
                    let crit = critical_failures(n, max, alpha);
                    for x in 0..=n {
                        let by_test = certifies(x, n, max, alpha);
                        assert_eq!(
                            by_test,
                            crit.is_some_and(|c| x <= c),
                            "{x}/{n} {max} {alpha}"
                        );
                        // The bound is at most the limit exactly when the test certifies (up to
                        // the bisection's last bit at the boundary).
                        let bound = upper_bound(x, n, alpha);
                        if (bound - max).abs() > 1e-9 {
                            assert_eq!(by_test, bound <= max, "{x}/{n} {max} {alpha}: {bound}");
                        }
                    }
                }
            }
        }
        assert!(
            !certifies(0, 1000, 0.0, 0.05),
            "a limit of 0 is never certified"
        );
        assert!(certifies(5, 5, 1.0, 0.05), "a limit of 1 always holds");
        assert!(!certifies(0, 0, 0.2, 0.05), "no questions certify nothing");
    }

    #[test]
    fn the_issues_worked_example() {
        // unwanted ≤ 20% at 95% for one setting: 14 questions with none answered, or 22 with at
        // most one.
        assert_eq!(needed_with_failures(0, 0.2, 0.05), Needed::Questions(14));
        assert_eq!(needed_with_failures(1, 0.2, 0.05), Needed::Questions(22));
        assert!(!certifies(0, 13, 0.2, 0.05) && certifies(0, 14, 0.2, 0.05));
        assert_eq!(questions_needed(0, 9, 0.2, 0.05), Needed::Questions(14));
        // Over 20 settings (Bonferroni: 0.05 / 20) it takes more.
        assert_eq!(
            needed_with_failures(0, 0.2, 0.05 / 20.0),
            Needed::Questions(27)
        );
        assert_eq!(needed_with_failures(0, 0.0, 0.05), Needed::Never);
    }

    #[test]
    fn questions_needed_at_the_measured_rate() {
        // 1 of 9 (11.1%) against 20%: the smallest N with floor(N/9) failures that certifies.
        let Needed::Questions(n) = questions_needed(1, 9, 0.2, 0.05) else {
            panic!("a rate under the limit can be certified");
        };
        assert!(certifies(n / 9, n, 0.2, 0.05));
        assert!(
            (1..n).all(|m| !certifies(m / 9, m, 0.2, 0.05)),
            "{n} is the smallest"
        );
        assert_eq!(
            questions_needed(2, 9, 0.2, 0.05),
            Needed::Never,
            "22% ≥ 20%"
        );
        assert_eq!(
            questions_needed(1, 5, 0.2, 0.05),
            Needed::Never,
            "at the limit"
        );
        // A rate a hair under the limit needs more than the search goes to.
        assert_eq!(
            questions_needed(1_999_999, 10_000_000, 0.2, 0.05),
            Needed::MoreThan(MAX_QUESTIONS)
        );
    }
}
