//! Wilson score intervals: how far a rate measured on a few questions may be from the truth.
//!
//! 1 false refusal in 8 answerable questions is a rate of 12.5%, but a true rate anywhere between
//! 2% and 47% gives that count easily. The Wilson interval (Wilson 1927) is the standard choice for
//! small samples: unlike the normal approximation it never leaves [0, 1] and it is not empty at
//! 0 of n or n of n.

use serde::Serialize;

/// The normal quantile for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A rate with its 95% Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

/// The 95% Wilson score interval of `successes` out of `trials`; `None` without trials.
pub fn wilson(successes: usize, trials: usize) -> Option<Interval> {
    wilson_z(successes, trials, Z95)
}

/// The Wilson score interval for quantile `z`.
pub fn wilson_z(successes: usize, trials: usize, z: f64) -> Option<Interval> {
    if trials == 0 || successes > trials {
        return None;
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // At 0 of n and n of n the exact bound is 0 or 1; rounding must not push it past.
    let lo = if successes == 0 { 0.0 } else { center - half };
    let hi = if successes == trials {
        1.0
    } else {
        center + half
    };
    Some(Interval {
        lo: lo.clamp(0.0, 1.0),
        hi: hi.clamp(0.0, 1.0),
    })
}

/// `n / d`, undefined (`None`) without a denominator.
pub fn ratio(n: usize, d: usize) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// `n / d` and its 95% Wilson interval, both undefined without a denominator.
pub fn rate(n: usize, d: usize) -> (Option<f64>, Option<Interval>) {
    (ratio(n, d), wilson(n, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round4(i: Interval) -> (f64, f64) {
        ((i.lo * 1e4).round() / 1e4, (i.hi * 1e4).round() / 1e4)
    }

    #[test]
    fn one_in_eight() {
        assert_eq!(round4(wilson(1, 8).unwrap()), (0.0224, 0.4709));
    }

    #[test]
    fn textbook_values() {
        // 5 of 17 (the sample's false refusals at minScore 0.1, k=1).
        assert_eq!(round4(wilson(5, 17).unwrap()), (0.1328, 0.5313));
        // 50 of 100: symmetric around one half.
        assert_eq!(round4(wilson(50, 100).unwrap()), (0.4038, 0.5962));
        // 1 of 9.
        assert_eq!(round4(wilson(1, 9).unwrap()), (0.0199, 0.4350));
    }

    #[test]
    fn ends_stay_inside_zero_and_one() {
        let none = wilson(0, 8).unwrap();
        assert_eq!(none.lo, 0.0);
        assert_eq!((none.hi * 1e4).round() / 1e4, 0.3244);
        let all = wilson(8, 8).unwrap();
        assert_eq!(all.hi, 1.0);
        assert_eq!((all.lo * 1e4).round() / 1e4, 0.6756);
    }

    #[test]
    fn no_trials_no_interval() {
        assert_eq!(wilson(0, 0), None);
        assert_eq!(wilson(3, 2), None);
    }
}
