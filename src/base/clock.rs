//! The time of day as records write it: UTC, RFC 3339, whole seconds (`2026-12-05T08:14:14Z`),
//! computed from the system clock without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as [`rfc3339`] writes it.
pub fn now() -> String {
    rfc3339(SystemTime::now())
}

/// `t` in UTC as `YYYY-MM-DDTHH:MM:SSZ`; a time before 1970 is written as 1970's start.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> String {
        rfc3339(UNIX_EPOCH + Duration::from_secs(secs))
    }

    #[test]
    fn known_instants() {
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        // `date -u -d @951782400`: the leap day of 2000, a year divisible by 400.
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(at(1_733_386_454), "2024-12-05T08:14:14Z");
        assert_eq!(at(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[test]
    fn every_day_follows_the_last() {
        // Thirty years of days, one after another: never a gap, never the same day twice.
        let mut last = at(0);
        for day in 1..(30 * 366) {
            let next = at(day * 86_400);
            assert!(next > last, "{last} then {next}");
            assert_eq!(&next[10..], "T00:00:00Z");
            last = next;
        }
    }
}
