//! Which test certifies a rate: the exact fixed-size test of [`super::certify`], or the
//! anytime-valid one of [`super::sequence`]; with what each asks of a question set: the
//! questions that give a chance of certifying (a power statement), and what a set of a given
//! size can certify at best (`rageval validate`).

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

/// What question sets of this size can certify at best (no question failing), for
/// `rageval validate`: `at 95%, 9 unanswerable and 17 answerable questions can certify at best
/// unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting, unwanted ≤ 45% and false
/// refusals ≤ 26.2% at the first setting of each of the 4 chains of the configured grid`.
/// `grid` is the level a grid search starts its tests from and how it is shared, when there
/// is a grid of more than one setting; the test is fixed-size or anytime-valid.
pub fn size_line(
    answerable: u64,
    unanswerable: u64,
    confidence: f64,
    test: Test,
    grid: Option<(f64, String)>,
) -> String {
    // A large set certifies bounds below 0.05%, and a confidence may be just below 1: neither
    // reads as 0% or 100%.
    use super::format::percent_apart as percent;
    if confidence <= 0.0 {
        return "certification is off (recommend.confidence: 0)".into();
    }
    let best = |alpha: f64| {
        let part = |n: u64, label: &str, class: &str| {
            if n == 0 {
                format!("nothing on {label} (no {class} questions)")
            } else {
                format!("{label} ≤ {}", percent(test.upper_bound(0, n, alpha)))
            }
        };
        format!(
            "{} and {}",
            part(unanswerable, "unwanted", "unanswerable"),
            part(answerable, "false refusals", "answerable")
        )
    };
    let delta = 1.0 - confidence;
    let anytime = match test {
        Test::Fixed => "",
        Test::Sequential => " (anytime-valid)",
    };
    let mut line = format!(
        "at {}{anytime}, {unanswerable} unanswerable and {answerable} answerable questions can certify at best {} for one setting",
        percent(confidence),
        best(delta)
    );
    if let Some((alpha, how)) = grid {
        line.push_str(&format!(", {} {how}", best(alpha)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sets_size_says_what_it_can_certify() {
        assert_eq!(
            size_line(
                17,
                9,
                0.95,
                Test::Fixed,
                Some((0.05 / 20.0, "over the 20 settings of the configured grid".into()))
            ),
            "at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting, unwanted ≤ 48.6% and false refusals ≤ 29.7% over the 20 settings of the configured grid"
        );
        assert!(size_line(3, 0, 0.9, Test::Fixed, None).contains(
            "nothing on unwanted (no unanswerable questions) and false refusals ≤ 53.6%"
        ));
        // A huge set's bound is no 0%, and a confidence just below 1 is no 100% (issue 33).
        assert_eq!(
            size_line(25_000, 25_000, 0.95, Test::Fixed, None),
            "at 95%, 25000 unanswerable and 25000 answerable questions can certify at best unwanted ≤ 0.012% and false refusals ≤ 0.012% for one setting"
        );
        assert!(
            size_line(10, 10, 0.999_999_999_999_999_9, Test::Fixed, None)
                .starts_with("at 99.99999999999999%, ")
        );
    }
}
