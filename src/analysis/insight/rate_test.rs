//! Which test certifies a rate: the exact fixed-size test of [`super::certify`], or the
//! anytime-valid one of [`super::sequence`]; with what each asks of a question set: the
//! questions that give a chance of certifying (a power statement), and the questions that
//! certify with no (or one) failure.

use super::certify::{self, double_until, first_passing, needed_with, Needed};
use super::sequence;

/// Which test certifies a rate: fixed-size, or valid at every size at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// The exact binomial test at the size the questions have (Clopper–Pearson).
    Fixed,
    /// The anytime-valid test of [`super::sequence`].
    Sequential,
}

/// The most questions [`Test::questions_for_power`] looks at.
pub const MAX_POWER_QUESTIONS: u64 = 100_000;

impl Test {
    pub fn certifies(self, x: u64, n: u64, max: f64, alpha: f64) -> bool {
        match self {
            Test::Fixed => certify::certifies(x, n, max, alpha),
            Test::Sequential => sequence::certifies(x, n, max, alpha),
        }
    }

    pub fn critical_failures(self, n: u64, max: f64, alpha: f64) -> Option<u64> {
        match self {
            Test::Fixed => certify::critical_failures(n, max, alpha),
            Test::Sequential => sequence::critical_failures(n, max, alpha),
        }
    }

    pub fn upper_bound(self, x: u64, n: u64, alpha: f64) -> f64 {
        match self {
            Test::Fixed => certify::upper_bound(x, n, alpha),
            Test::Sequential => sequence::upper_bound(x, n, alpha),
        }
    }

    /// The smallest number of questions with at most `failures` failures that certifies `max`
    /// at `alpha`: the evidence grows as questions are added at the same failures.
    pub fn needed_with_failures(self, failures: u64, max: f64, alpha: f64) -> Needed {
        needed_with(failures, max, |n| self.certifies(failures, n, max, alpha))
    }

    /// The chance that `n` questions certify `max` at `alpha` when the true rate is `rate`.
    pub fn power(self, n: u64, rate: f64, max: f64, alpha: f64) -> f64 {
        match self.critical_failures(n, max, alpha) {
            Some(c) => certify::binomial_cdf(c, n, rate),
            None => 0.0,
        }
    }

    /// The smallest number of questions that certifies `max` at `alpha` with chance at least
    /// `power` if the true rate is `rate`. The chance rises with the size in a saw-tooth (a
    /// failure more is allowed every few questions): found by doubling, bisection, and a look
    /// back over the last teeth. Never when the rate is at or above the limit.
    pub fn questions_for_power(self, rate: f64, max: f64, alpha: f64, power: f64) -> Needed {
        if rate <= 0.0 {
            return self.needed_with_failures(0, max, alpha);
        }
        if max <= 0.0 || rate >= max {
            return Needed::Never;
        }
        if max >= 1.0 {
            return Needed::Questions(1);
        }
        let passes = |n: u64| self.power(n, rate, max, alpha) >= power;
        // Doubling stops once the size reaches MAX_POWER_QUESTIONS.
        let scale = certify::MAX_QUESTIONS / MAX_POWER_QUESTIONS;
        let Some((lo, hi)) = double_until(1, passes, |n| n.saturating_mul(scale)) else {
            return Needed::MoreThan(MAX_POWER_QUESTIONS);
        };
        let hi = first_passing(lo, hi, passes);
        let tooth = (4.0 / max).ceil() as u64;
        let first = (hi.saturating_sub(tooth).max(1)..hi)
            .find(|&n| passes(n))
            .unwrap_or(hi);
        Needed::Questions(first)
    }
}
