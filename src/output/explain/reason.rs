//! The recommendation's line: the choice with its rates and certificate, or the closest
//! setting and what it misses; and the limits and misses as other lines name them.

use super::procedure::{by, promise, settings};
use super::Explain;
use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::insight::format::{percent, percent_points, rate_with_interval};
use crate::analysis::insight::recommendation::Miss;
use crate::vocab::limit::{Kind, Limit};

impl Explain<'_> {
    /// One line: the choice and the reason, or why there is none.
    pub fn reason(&self) -> String {
        let rec = self.rec;
        match (&rec.setting, &rec.closest) {
            (Some(id), _) => self.chosen_reason(id),
            (None, Some(closest)) => {
                let described: Vec<String> = closest.misses.iter().map(describe).collect();
                format!(
                    "no setting meets the limits ({}); closest: {}, which misses {}",
                    limits_text(self.policy),
                    closest.setting,
                    described.join(" and ")
                )
            }
            (None, None) => "no settings to recommend from".into(),
        }
    }

    fn chosen_reason(&self, id: &str) -> String {
        let rec = self.rec;
        let tie = rec
            .tie_break
            .map(|rule| format!("; equal cost broken by {}", rule.name()))
            .unwrap_or_default();
        let rates = self.stats.map_or_else(String::new, |s| {
            format!(
                ": false refusals {}, unwanted {}, wrong answers {}, {:.1} prompt tokens/question",
                rate_with_interval(s.false_refusal_rate, s.false_refusal_rate_ci),
                rate_with_interval(s.unwanted_answer_rate, s.unwanted_answer_rate_ci),
                rate_with_interval(s.wrong_answer_rate, s.wrong_answer_rate_ci),
                s.prompt_tokens_per_question,
            )
        });
        let cost = rec.cost.unwrap_or(0.0);
        let c = rec.certification;
        if !c.is_on() {
            format!(
                "recommended: {id}{rates}; the lowest weighted cost ({cost:.3}) of {} of {} settings within the limits ({}){tie}",
                rec.feasible,
                rec.settings,
                limits_text(self.policy),
            )
        } else if rec.certified {
            let bounds: Vec<String> = rec
                .bounds
                .iter()
                .map(|b| {
                    format!(
                        "{} {} (limit {})",
                        b.limit.label(),
                        percent(b.upper_bound),
                        percent(b.max)
                    )
                })
                .collect();
            let labels = c
                .labels()
                .map(|n| format!("; the certificate rests on {n} labelled replies, every run's grade corrected by them"))
                .unwrap_or_default();
            format!(
                "recommended: {id}, certified {} over {}{rates}; upper bounds {}; {}{labels}; the lowest weighted cost ({cost:.3}) of {} certified settings{tie}",
                by(c),
                settings(rec.settings),
                bounds.join(", "),
                promise(c),
                rec.certified_settings,
            )
        } else {
            format!(
                "recommended: {id} (best, not certified {}){rates}; the lowest weighted cost ({cost:.3}) of {} of {} settings within the limits ({}) on the measured rates, but none is certified{tie}",
                by(c),
                rec.feasible,
                rec.settings,
                limits_text(self.policy),
            )
        }
    }
}

/// How the recommendation shows a limit's value: rates in percent, tokens with one decimal.
fn show(limit: Limit, v: f64) -> String {
    match limit.kind() {
        Kind::Tokens => format!("{v:.1} tokens"),
        Kind::Share | Kind::Count => percent(v),
    }
}

/// `false refusals 64.7% (limit 50%)`.
pub fn short(m: &Miss) -> String {
    format!(
        "{} {} (limit {})",
        m.limit.label(),
        show(m.limit, m.value),
        show(m.limit, m.max)
    )
}

/// `max_unwanted_answer_rate by 11.1 points (11.1% against a limit of 0%)`.
fn describe(m: &Miss) -> String {
    let by = match m.limit.kind() {
        Kind::Tokens => format!("{:.1} tokens", m.excess),
        Kind::Share | Kind::Count => format!("{} points", percent_points(m.excess)),
    };
    format!(
        "{} by {by} ({} against a limit of {})",
        m.limit.key(),
        show(m.limit, m.value),
        show(m.limit, m.max)
    )
}

/// The limits, compactly: `unwanted ≤ 20%, false refusals ≤ 50%`.
pub fn limits_text(policy: &RecommendConfig) -> String {
    let parts: Vec<String> = policy
        .limits()
        .iter()
        .map(|(limit, v)| {
            let value = match limit.kind() {
                Kind::Tokens => v.to_string(),
                Kind::Share | Kind::Count => percent(v),
            };
            format!("{} {} {value}", limit.label(), limit.bound())
        })
        .collect();
    parts.join(", ")
}
