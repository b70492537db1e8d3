//! What `rageval validate` says under a set: what the set's size can certify at best, and
//! the plan, how many questions per class give a `recommend.power` chance of certifying.

use super::needed::count_or_more;
use super::procedure::{level_text, procedure};
use super::{questions_of, whole_percent};
use crate::analysis::insight::certifier::{Certification, Procedure};
use crate::analysis::insight::certify;
use crate::analysis::insight::config::{Method, RecommendConfig};
use crate::analysis::insight::format::{percent, percent_apart};
use crate::analysis::insight::rate_test::{self, Test};
use crate::vocab::limit::{Kind, Limit};

/// A question set's size per class, for `rageval validate`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetSize {
    pub answerable: u64,
    pub unanswerable: u64,
    /// Injection probes (`attack:` questions).
    pub probes: u64,
}

impl SetSize {
    /// The questions a rate limit's rate is over.
    fn of(self, limit: Limit) -> u64 {
        match limit {
            Limit::MaxUnwantedAnswerRate => self.unanswerable,
            Limit::MaxAttackSuccessRate => self.probes,
            _ => self.answerable,
        }
    }
}

/// What `rageval validate` says under a set: what its size can certify at best, and how many
/// questions per class give a `recommend.power` chance of certifying each rate limit of the
/// policy if its true rate is half the limit, at the level where the grid's procedure starts
/// (`settings` settings; fewer than two: one setting). One line with certification off.
pub fn size_lines(
    size: SetSize,
    policy: &RecommendConfig,
    procedure: Option<&Procedure>,
    settings: usize,
) -> Vec<String> {
    let c = Certification::of(policy);
    let Some(p) = procedure.filter(|_| c.is_on()) else {
        return vec!["certification is off (recommend.confidence: 0)".into()];
    };
    let grid = (settings >= 2).then(|| (p.first_level, grid_start(p, settings)));
    let mut lines = vec![best_line(size, c, grid.clone())];
    let (level, start) = match grid {
        Some((level, how)) => (level, how),
        None => (p.first_level, "for one setting".to_string()),
    };
    lines.push(plan_line(size, policy, c, level, &start));
    lines
}

/// Where the grid's procedure starts testing: `at the first setting of each of the 4 chains
/// along min_score of the configured grid`.
fn grid_start(p: &Procedure, settings: usize) -> String {
    match (p.method, &p.along) {
        (Method::Bonferroni, _) => {
            format!("over the {settings} settings of the configured grid")
        }
        (Method::Ordered, Some(d)) => format!(
            "at the first setting of each of the {} chains along {d} of the configured grid",
            p.chains.unwrap_or(0)
        ),
        (Method::Ordered, None) => format!(
            "over the {} settings of the configured grid",
            p.chains.unwrap_or(0)
        ),
    }
}

/// `at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3%
/// and false refusals ≤ 16.2% for one setting, unwanted ≤ 45% and false refusals ≤ 26.2% at
/// the first setting of each of the 4 chains of the configured grid`: with no question
/// failing, for one setting, and at the level `grid` starts its tests from and how it is
/// shared.
fn best_line(size: SetSize, c: Certification, grid: Option<(f64, String)>) -> String {
    // A large set certifies bounds below 0.05%, and a confidence may be just below 1: neither
    // reads as 0% or 100%.
    let test = c.test();
    let best = |alpha: f64| {
        let part = |n: u64, label: &str, class: &str| {
            if n == 0 {
                format!("nothing on {label} (no {class} questions)")
            } else {
                format!("{label} ≤ {}", percent_apart(test.upper_bound(0, n, alpha)))
            }
        };
        format!(
            "{} and {}",
            part(size.unanswerable, "unwanted", "unanswerable"),
            part(size.answerable, "false refusals", "answerable")
        )
    };
    let anytime = match test {
        Test::Fixed => "",
        Test::Sequential => " (anytime-valid)",
    };
    let mut line = format!(
        "at {}{anytime}, {} unanswerable and {} answerable questions can certify at best {} for one setting",
        percent_apart(c.confidence()),
        size.unanswerable,
        size.answerable,
        best(c.delta())
    );
    if let Some((alpha, how)) = grid {
        line.push_str(&format!(", {} {how}", best(alpha)));
    }
    line
}

/// `plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of
/// each of the 4 chains ...), if each true rate is half its limit: unwanted 10% needs 96
/// unanswerable questions (this set has 9), or 23 with none answered; ...`.
fn plan_line(
    size: SetSize,
    policy: &RecommendConfig,
    c: Certification,
    level: f64,
    start: &str,
) -> String {
    let test = c.test();
    let parts: Vec<String> = policy
        .limits()
        .iter()
        .filter(|&(l, _)| l.kind() != Kind::Tokens)
        .filter(|&(l, _)| l != Limit::MaxAttackSuccessRate || size.probes > 0)
        .map(|(limit, max)| {
            let (questions, none) = questions_of(limit);
            let has = size.of(limit);
            if max <= 0.0 {
                return format!(
                    "{} ≤ 0% is never certified by a sample; allow a small rate",
                    limit.label()
                );
            }
            let rate = max / 2.0;
            let n = count_or_more(
                test.questions_for_power(rate, max, level, policy.power)
                    .questions(),
                rate_test::MAX_POWER_QUESTIONS,
            );
            let floor = count_or_more(
                test.needed_with_failures(0, max, level).questions(),
                certify::MAX_QUESTIONS,
            );
            format!(
                "{} {} needs {n} {questions} (this set has {has}), or {floor} with {none}",
                limit.label(),
                percent(rate)
            )
        })
        .collect();
    format!(
        "plan for a chance of {} at {} by {} (level {}, {start}), if each true rate is half its limit: {}",
        whole_percent(policy.power),
        percent_apart(c.confidence()),
        procedure(c),
        level_text(level),
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::certifier::Certifier;
    use crate::sweep::Setting;

    fn setting(min: &str, k: usize) -> Setting {
        Setting::new(min.parse().unwrap(), k)
    }

    #[test]
    fn a_sets_size_says_what_it_can_certify_and_what_the_limits_need() {
        let size = SetSize {
            answerable: 17,
            unanswerable: 9,
            probes: 0,
        };
        let policy = RecommendConfig::default();
        // The sample's grid: minScore 0.1..0.5 by 0.1 x k 1, 2, 4, 8: 4 chains along min_score.
        let settings: Vec<Setting> = [1, 2, 4, 8]
            .iter()
            .flat_map(|&k| ["0.1", "0.2", "0.3", "0.4", "0.5"].map(|m| setting(m, k)))
            .collect();
        let certifier = Certifier::new(&policy, &settings);
        assert_eq!(
            size_lines(size, &policy, certifier.procedure().as_ref(), settings.len()),
            [
                "at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting, unwanted ≤ 43.1% and false refusals ≤ 25.8% at the first setting of each of the 4 chains along min_score of the configured grid",
                "plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of each of the 4 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 145 unanswerable questions (this set has 9), or 23 with none answered; false refusals 25% needs 44 answerable questions (this set has 17), or 8 with none refused",
            ]
        );
        let bonferroni = RecommendConfig {
            method: Method::Bonferroni,
            ..policy.clone()
        };
        let certifier = Certifier::new(&bonferroni, &settings);
        assert_eq!(
            size_lines(size, &bonferroni, certifier.procedure().as_ref(), 20)[0],
            "at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting, unwanted ≤ 48.6% and false refusals ≤ 29.7% over the 20 settings of the configured grid"
        );
        // One setting: the plan at the level the procedure starts from.
        let one = Certifier::new(&policy, &[]);
        let none = SetSize {
            answerable: 3,
            unanswerable: 0,
            probes: 0,
        };
        let l = size_lines(none, &policy, one.procedure().as_ref(), 0);
        assert!(
            l[0].contains(
                "nothing on unwanted (no unanswerable questions) and false refusals ≤ 63.2%"
            ),
            "{}",
            l[0]
        );
        assert!(
            l[1].starts_with(
                "plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), "
            ),
            "{}",
            l[1]
        );
        // A huge set's bound is no 0%, and a confidence just below 1 is no 100% (issue 33).
        let huge = SetSize {
            answerable: 25_000,
            unanswerable: 25_000,
            probes: 0,
        };
        assert_eq!(
            size_lines(huge, &policy, one.procedure().as_ref(), 0)[0],
            "at 95%, 25000 unanswerable and 25000 answerable questions can certify at best unwanted ≤ 0.012% and false refusals ≤ 0.012% for one setting"
        );
        let sure = RecommendConfig {
            confidence: 0.999_999_999_999_999_9,
            ..policy.clone()
        };
        let p = Certifier::new(&sure, &[]).procedure();
        assert!(size_lines(size, &sure, p.as_ref(), 0)[0].starts_with("at 99.99999999999999%, "));
        let off = RecommendConfig {
            confidence: 0.0,
            ..policy
        };
        assert_eq!(
            size_lines(size, &off, None, 20),
            ["certification is off (recommend.confidence: 0)"]
        );
    }
}
