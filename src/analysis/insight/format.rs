//! How rates read in tables and sentences: `29% [13–53]`, `11.1%`.

use super::wilson::Interval;

/// A share as a percent with at most one decimal: `20%`, `11.1%`.
pub fn percent(v: f64) -> String {
    format!("{}%", percent_points(v))
}

/// A share in percentage points with at most one decimal, without the sign: `11.1`, `20`.
pub fn percent_points(v: f64) -> String {
    let s = format!("{:.1}", v * 100.0);
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A share as [`percent`] shows it, unless that would read as 0% or 100% when it is neither:
/// then with the digits that tell it apart, two significant ones near 0 (`0.012%`, a bound a
/// large set certifies; `1.0e-298%` past eight decimals) and one near 100
/// (`99.99999999999999%`, a confidence that is not 1).
pub fn percent_apart(v: f64) -> String {
    let points = v * 100.0;
    let shown = percent_points(v);
    let reads = shown.parse::<f64>().unwrap_or(points);
    let decimals = if points > 0.0 && reads == 0.0 {
        let decimals = 1 - points.log10().floor() as i32;
        if decimals > 8 {
            // Past a few zeros the digits are unreadable: `1.0e-298%`.
            return format!("{points:.1e}%");
        }
        decimals
    } else if points < 100.0 && reads == 100.0 {
        -(100.0 - points).log10().floor() as i32
    } else {
        return format!("{shown}%");
    };
    let decimals = decimals.clamp(1, 16) as usize;
    let s = format!("{points:.decimals$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// A rate and its 95% interval in whole percents: `29% [13–53]`; `-` when undefined.
pub fn rate_with_interval(rate: Option<f64>, ci: Option<Interval>) -> String {
    match (rate, ci) {
        (Some(r), Some(i)) => format!(
            "{:.0}% [{:.0}–{:.0}]",
            r * 100.0,
            i.lo * 100.0,
            i.hi * 100.0
        ),
        (Some(r), None) => format!("{:.0}%", r * 100.0),
        (None, _) => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::wilson::wilson;

    #[test]
    fn compact_forms() {
        assert_eq!(percent(0.2), "20%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(1.0 / 9.0), "11.1%");
        assert_eq!(percent_points(0.111), "11.1");
        assert_eq!(
            rate_with_interval(Some(5.0 / 17.0), wilson(5, 17)),
            "29% [13–53]"
        );
        assert_eq!(rate_with_interval(None, None), "-");
        // Too small or too close to 1 for one decimal: the digits that tell it apart.
        assert_eq!(percent_apart(0.2), "20%");
        assert_eq!(percent_apart(0.0), "0%");
        assert_eq!(percent_apart(1.0), "100%");
        assert_eq!(percent_apart(0.000_119_8), "0.012%");
        assert_eq!(percent_apart(0.000_4), "0.04%");
        assert_eq!(percent_apart(0.999_9), "99.99%");
        assert_eq!(percent_apart(0.999_999_999_999_999_9), "99.99999999999999%");
        assert_eq!(percent_apart(0.95), "95%");
        assert_eq!(percent_apart(0.000_000_012_3), "0.0000012%");
        assert_eq!(percent_apart(1e-300), "1.0e-298%");
        assert_eq!(percent_apart(f64::MIN_POSITIVE), "2.2e-306%");
    }
}
