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
    }
}
