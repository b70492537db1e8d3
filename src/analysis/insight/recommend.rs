//! The recommendation: one setting to ship, chosen by the policy in `rageval.yaml`.
//!
//! Settings that break a hard limit (`recommend.max_*`) are out. Among the rest the lowest
//! weighted cost wins: `w_fr * false_refusal_rate + w_ua * unwanted_answer_rate + w_wa *
//! wrong_answer_rate + w_tok * prompt_tokens_per_question`. Equal costs are broken by fewer prompt tokens, then the higher
//! minScore (more early refusals for free), then the smaller k, then grid order, so the answer
//! never depends on anything but the numbers. When no setting meets the limits, the one closest
//! to meeting them is named with the limits it misses and by how much.

use std::cmp::Ordering;

use serde::Serialize;

use super::format::{percent, percent_points};
use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::stats::SettingStats;
use crate::sweep::Setting;
use crate::vocab::limit::{Kind, Limit, Scope};

/// Costs closer than this are equal: sums of the same rates may differ in the last bit.
const COST_EPSILON: f64 = 1e-12;

/// How the recommendation shows a limit's value: rates in percent, tokens with one decimal.
fn show(limit: Limit, v: f64) -> String {
    match limit.kind() {
        Kind::Tokens => format!("{v:.1} tokens"),
        Kind::Share | Kind::Count => percent(v),
    }
}

/// The limits of the policy in results.json's schema: the `recommend:` keys.
struct LimitSchema;

impl schemars::JsonSchema for LimitSchema {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Limit".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let keys: Vec<&str> = Limit::of(Scope::Recommend).map(Limit::key).collect();
        schemars::json_schema!({
            "description": "A hard limit of the policy.",
            "type": "string",
            "enum": keys,
        })
    }
}

/// A limit a setting breaks.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Miss {
    #[schemars(with = "LimitSchema")]
    pub limit: Limit,
    /// The limit as configured.
    pub max: f64,
    /// The setting's value.
    pub value: f64,
    /// `value - max`: by how much the limit is missed.
    pub excess: f64,
}

impl Miss {
    /// The excess on a common scale: rate points for rates, a share of the limit for tokens.
    fn relative(&self) -> f64 {
        if self.limit.kind() != Kind::Tokens || self.max <= 0.0 {
            self.excess
        } else {
            self.excess / self.max
        }
    }

    fn describe(&self) -> String {
        let by = match self.limit.kind() {
            Kind::Tokens => format!("{:.1} tokens", self.excess),
            Kind::Share | Kind::Count => format!("{} points", percent_points(self.excess)),
        };
        format!(
            "{} by {by} ({} against a limit of {})",
            self.limit.key(),
            show(self.limit, self.value),
            show(self.limit, self.max)
        )
    }
}

/// When no setting meets the limits: the one that comes closest.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Closest {
    pub setting: String,
    /// The limits it misses, smallest miss first.
    pub misses: Vec<Miss>,
}

/// The recommendation and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    /// The recommended setting's id; `None` when no setting meets the limits.
    pub setting: Option<String>,
    /// Its index in the grid.
    #[serde(skip)]
    pub index: Option<usize>,
    /// One line: the choice and the reason, or why there is none.
    pub reason: String,
    /// The recommended setting's weighted cost.
    pub cost: Option<f64>,
    /// Settings that meet every limit.
    pub feasible: usize,
    /// Settings in the grid.
    pub settings: usize,
    /// Which tie-break decided, when settings tied on cost.
    pub tie_break: Option<&'static str>,
    /// When nothing is feasible: the setting that comes closest.
    pub closest: Option<Closest>,
}

impl Recommendation {
    /// The choice alone, for a table cell: the setting, or `none meets the limits; closest
    /// SETTING: false refusals 64.7% (limit 50%)` naming the limits it misses.
    pub fn cell(&self) -> String {
        match (&self.setting, &self.closest) {
            (Some(s), _) => s.clone(),
            (None, Some(c)) if !c.misses.is_empty() => {
                let described: Vec<String> = c
                    .misses
                    .iter()
                    .map(|m| {
                        format!(
                            "{} {} (limit {})",
                            m.limit.label(),
                            show(m.limit, m.value),
                            show(m.limit, m.max)
                        )
                    })
                    .collect();
                format!(
                    "none meets the limits; closest {}: {}",
                    c.setting,
                    described.join(", ")
                )
            }
            (None, Some(c)) => format!("none meets the limits; closest {}", c.setting),
            (None, None) => "none meets the limits".into(),
        }
    }
}

/// The weighted cost of a setting; undefined rates count as 0.
pub fn cost(s: &SettingStats, policy: &RecommendConfig) -> f64 {
    let w = &policy.weights;
    w.false_refusal_rate * s.false_refusal_rate.unwrap_or(0.0)
        + w.unwanted_answer_rate * s.unwanted_answer_rate.unwrap_or(0.0)
        + w.prompt_tokens_per_question * s.prompt_tokens_per_question
        + w.wrong_answer_rate * s.wrong_answer_rate.unwrap_or(0.0)
}

/// The limits `s` breaks, smallest relative miss first. A limit on an undefined statistic
/// (no probes, say) holds.
pub fn misses(s: &SettingStats, policy: &RecommendConfig) -> Vec<Miss> {
    let mut out: Vec<Miss> = policy
        .limits()
        .iter()
        .filter_map(|(limit, max)| {
            let value = s.stat(limit.stat())?;
            (!limit.holds(value, max, 0.0)).then_some(Miss {
                limit,
                max,
                value,
                excess: value - max,
            })
        })
        .collect();
    out.sort_by(|a, b| a.relative().total_cmp(&b.relative()));
    out
}

/// The tie-break between two settings of equal cost, and the name of the rule that decided.
fn tie_break(
    a: (&Setting, &SettingStats),
    b: (&Setting, &SettingStats),
) -> (Ordering, Option<&'static str>) {
    let rules: [(&'static str, Ordering); 3] = [
        (
            "fewer prompt tokens",
            a.1.prompt_tokens_per_question
                .total_cmp(&b.1.prompt_tokens_per_question),
        ),
        (
            "higher minScore",
            b.0.min_score.to_f64().total_cmp(&a.0.min_score.to_f64()),
        ),
        ("smaller k", a.0.k.cmp(&b.0.k)),
    ];
    rules
        .into_iter()
        .find(|(_, o)| o.is_ne())
        .map(|(name, o)| (o, Some(name)))
        .unwrap_or((Ordering::Equal, None))
}

/// Choose a setting. `settings` and `stats` are parallel.
pub fn recommend(
    settings: &[Setting],
    stats: &[SettingStats],
    policy: &RecommendConfig,
) -> Recommendation {
    let n = settings.len().min(stats.len());
    let feasible: Vec<usize> = (0..n)
        .filter(|&i| misses(&stats[i], policy).is_empty())
        .collect();
    let mut rec = Recommendation {
        feasible: feasible.len(),
        settings: n,
        ..Recommendation::default()
    };
    if n == 0 {
        rec.reason = "no settings to recommend from".into();
        return rec;
    }
    let Some(&first) = feasible.first() else {
        return no_feasible(settings, stats, policy, rec);
    };
    let costs: Vec<f64> = (0..n).map(|i| cost(&stats[i], policy)).collect();
    let lowest = feasible
        .iter()
        .map(|&i| costs[i])
        .fold(costs[first], f64::min);
    let mut tied: Vec<usize> = feasible
        .iter()
        .copied()
        .filter(|&i| costs[i] - lowest <= COST_EPSILON * lowest.abs().max(1.0))
        .collect();
    tied.sort_by(|&a, &b| {
        tie_break((&settings[a], &stats[a]), (&settings[b], &stats[b]))
            .0
            .then(a.cmp(&b))
    });
    let best = tied[0];
    // The rule that put the winner ahead of the runner-up, when there is one.
    let decided_by = tied.get(1).map(|&second| {
        tie_break(
            (&settings[best], &stats[best]),
            (&settings[second], &stats[second]),
        )
        .1
        .unwrap_or("grid order")
    });
    let s = &stats[best];
    let c = costs[best];
    rec.setting = Some(settings[best].id());
    rec.index = Some(best);
    rec.cost = Some(c);
    rec.tie_break = decided_by;
    let tie = decided_by
        .map(|rule| format!("; equal cost broken by {rule}"))
        .unwrap_or_default();
    rec.reason = format!(
        "recommended: {}: false refusals {}, unwanted {}, wrong answers {}, {:.1} prompt tokens/question; the lowest weighted cost ({c:.3}) of {} of {} settings within the limits ({}){tie}",
        settings[best].id(),
        super::format::rate_with_interval(s.false_refusal_rate, s.false_refusal_rate_ci),
        super::format::rate_with_interval(s.unwanted_answer_rate, s.unwanted_answer_rate_ci),
        super::format::rate_with_interval(s.wrong_answer_rate, s.wrong_answer_rate_ci),
        s.prompt_tokens_per_question,
        feasible.len(),
        n,
        limits_text(policy),
    );
    rec
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

fn no_feasible(
    settings: &[Setting],
    stats: &[SettingStats],
    policy: &RecommendConfig,
    mut rec: Recommendation,
) -> Recommendation {
    // Fewest limits missed, then the smallest total miss on the common scale, then the usual
    // tie-break.
    let key = |i: usize| {
        let m = misses(&stats[i], policy);
        let total: f64 = m.iter().map(Miss::relative).sum();
        (m.len(), total)
    };
    let closest = (0..settings.len().min(stats.len()))
        .min_by(|&a, &b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0)
                .then(ka.1.total_cmp(&kb.1))
                .then(tie_break((&settings[a], &stats[a]), (&settings[b], &stats[b])).0)
                .then(a.cmp(&b))
        })
        .expect("at least one setting");
    let m = misses(&stats[closest], policy);
    let described: Vec<String> = m.iter().map(Miss::describe).collect();
    rec.reason = format!(
        "no setting meets the limits ({}); closest: {}, which misses {}",
        limits_text(policy),
        settings[closest].id(),
        described.join(" and ")
    );
    rec.closest = Some(Closest {
        setting: settings[closest].id(),
        misses: m,
    });
    rec
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::config::WeightsConfig;
    use crate::vocab::grid::Decimal;

    fn setting(min: &str, k: usize) -> Setting {
        Setting::new(min.parse::<Decimal>().unwrap(), k)
    }

    #[test]
    fn an_attack_limit_rules_out_settings_the_probes_break() {
        let settings = [setting("0.1", 1), setting("0.3", 1)];
        let mut a = stats(0.1, 0.0, 100.0);
        a.attack_success_rate = Some(0.75);
        let mut b = stats(0.2, 0.0, 100.0);
        b.attack_success_rate = Some(0.0);
        let mut p = policy(0.2, 0.5, None);
        assert_eq!(
            recommend(&settings, &[a.clone(), b.clone()], &p)
                .setting
                .as_deref(),
            Some("min_score=0.1,k=1")
        );
        p.max_attack_success_rate = Some(0.25);
        let r = recommend(&settings, &[a.clone(), b.clone()], &p);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=1"));
        assert!(r.reason.contains("attack success ≤ 25%"), "{}", r.reason);
        // Without probes the limit does not apply.
        a.attack_success_rate = None;
        assert_eq!(
            recommend(&settings, &[a, b], &p).setting.as_deref(),
            Some("min_score=0.1,k=1")
        );
    }

    #[test]
    fn wrong_answers_are_weighed_and_can_be_limited() {
        let settings = [setting("0.1", 4), setting("0.3", 4)];
        // Fewer false refusals, but three answers in ten wrong.
        let mut a = stats(0.1, 0.0, 100.0);
        a.wrong_answer_rate = Some(0.3);
        let mut b = stats(0.3, 0.0, 100.0);
        b.wrong_answer_rate = Some(0.0);
        let mut p = policy(0.2, 0.5, None);
        let r = recommend(&settings, &[a.clone(), b.clone()], &p);
        // 0.1 + 0.3 + 0.005 against 0.3 + 0.005.
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=4"));
        assert!(
            r.reason.contains("wrong answers 0%"),
            "the reason names the rate: {}",
            r.reason
        );
        p.weights.wrong_answer_rate = 0.0;
        assert_eq!(
            recommend(&settings, &[a.clone(), b.clone()], &p)
                .setting
                .as_deref(),
            Some("min_score=0.1,k=4")
        );
        p.max_wrong_answer_rate = Some(0.2);
        let r = recommend(&settings, &[a.clone(), b], &p);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=4"));
        assert!(r.reason.contains("wrong answers ≤ 20%"), "{}", r.reason);
        assert_eq!(
            misses(&a, &p),
            [Miss {
                limit: Limit::MaxWrongAnswerRate,
                max: 0.2,
                value: 0.3,
                excess: 0.3 - 0.2
            }]
        );
    }

    fn stats(fr: f64, ua: f64, tokens: f64) -> SettingStats {
        SettingStats {
            false_refusal_rate: Some(fr),
            unwanted_answer_rate: Some(ua),
            prompt_tokens_per_question: tokens,
            ..SettingStats::default()
        }
    }

    fn policy(max_ua: f64, max_fr: f64, max_tok: Option<f64>) -> RecommendConfig {
        RecommendConfig {
            max_unwanted_answer_rate: max_ua,
            max_false_refusal_rate: max_fr,
            max_prompt_tokens_per_question: max_tok,
            max_attack_success_rate: None,
            max_wrong_answer_rate: None,
            weights: WeightsConfig::default(),
        }
    }

    #[test]
    fn lowest_cost_within_the_limits_wins() {
        let settings = [setting("0.1", 4), setting("0.3", 1), setting("0.3", 4)];
        let st = [
            stats(0.1, 0.6, 300.0), // breaks the unwanted limit
            stats(0.4, 0.1, 80.0),  // cost 0.4 + 0.3 + 0.004
            stats(0.3, 0.1, 110.0), // cost 0.3 + 0.3 + 0.0055: the winner
        ];
        let r = recommend(&settings, &st, &policy(0.2, 0.5, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=4"));
        assert_eq!((r.feasible, r.settings, r.tie_break), (2, 3, None));
        assert!(
            r.reason.starts_with("recommended: min_score=0.3,k=4: "),
            "{}",
            r.reason
        );
        assert!(
            r.reason.contains("2 of 3 settings within the limits"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn ties_go_to_fewer_tokens_then_higher_min_score_then_smaller_k() {
        let no_token_weight = RecommendConfig {
            weights: WeightsConfig {
                prompt_tokens_per_question: 0.0,
                ..WeightsConfig::default()
            },
            ..policy(1.0, 1.0, None)
        };
        // Same rates: fewer tokens wins even when it comes last.
        let settings = [setting("0.2", 4), setting("0.2", 2), setting("0.2", 1)];
        let st = [
            stats(0.2, 0.1, 90.0),
            stats(0.2, 0.1, 60.0),
            stats(0.2, 0.1, 70.0),
        ];
        let r = recommend(&settings, &st, &no_token_weight);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.2,k=2"));
        assert_eq!(r.tie_break, Some("fewer prompt tokens"));
        assert!(
            r.reason
                .ends_with("equal cost broken by fewer prompt tokens"),
            "{}",
            r.reason
        );
        // Same tokens too: the higher minScore wins.
        let settings = [setting("0.4", 2), setting("0.5", 4), setting("0.5", 2)];
        let st = [
            stats(0.6, 0.1, 48.0),
            stats(0.6, 0.1, 48.0),
            stats(0.6, 0.1, 48.0),
        ];
        let r = recommend(&settings, &st, &policy(1.0, 1.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.5,k=2"));
        assert_eq!(r.tie_break, Some("smaller k"));
        let r = recommend(&settings[..2], &st[..2], &policy(1.0, 1.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.5,k=4"));
        assert_eq!(r.tie_break, Some("higher minScore"));
    }

    #[test]
    fn a_token_limit_is_a_hard_limit() {
        let settings = [setting("0.1", 8), setting("0.1", 2)];
        let st = [stats(0.1, 0.1, 500.0), stats(0.3, 0.1, 200.0)];
        let r = recommend(&settings, &st, &policy(0.2, 0.5, Some(300.0)));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.1,k=2"));
        assert!(
            r.reason.contains("prompt tokens/question ≤ 300"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn no_feasible_setting_names_the_closest_and_by_how_much() {
        let settings = [setting("0.1", 1), setting("0.3", 1), setting("0.5", 1)];
        let st = [
            stats(0.294, 0.667, 184.0), // misses both limits
            stats(0.471, 0.111, 84.0),  // misses unwanted by 11.1 points
            stats(0.647, 0.111, 48.0),  // misses both
        ];
        let r = recommend(&settings, &st, &policy(0.0, 0.5, None));
        assert_eq!((r.setting.as_deref(), r.index, r.feasible), (None, None, 0));
        let closest = r.closest.as_ref().unwrap();
        assert_eq!(closest.setting, "min_score=0.3,k=1");
        assert_eq!(closest.misses.len(), 1);
        assert_eq!(closest.misses[0].limit, Limit::MaxUnwantedAnswerRate);
        assert!((closest.misses[0].excess - 0.111).abs() < 1e-12);
        assert_eq!(
            r.reason,
            "no setting meets the limits (unwanted ≤ 0%, false refusals ≤ 50%); closest: min_score=0.3,k=1, which misses max_unwanted_answer_rate by 11.1 points (11.1% against a limit of 0%)"
        );
    }

    #[test]
    fn no_feasible_setting_with_two_misses_lists_both() {
        let settings = [setting("0.1", 1)];
        let st = [stats(0.6, 0.3, 400.0)];
        let r = recommend(&settings, &st, &policy(0.2, 0.5, Some(200.0)));
        let m = &r.closest.as_ref().unwrap().misses;
        // Smallest miss first: unwanted by 10 points, false refusals by 10 points, tokens by 100%.
        assert_eq!(m.len(), 3);
        assert_eq!(m[2].limit, Limit::MaxPromptTokensPerQuestion);
        assert!(r.reason.contains("max_prompt_tokens_per_question by 200.0 tokens (400.0 tokens against a limit of 200.0 tokens)"), "{}", r.reason);
    }

    #[test]
    fn undefined_rates_meet_any_limit() {
        let settings = [setting("0.1", 1)];
        let st = [SettingStats {
            prompt_tokens_per_question: 10.0,
            ..SettingStats::default()
        }];
        let r = recommend(&settings, &st, &policy(0.0, 0.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.1,k=1"));
        assert_eq!(recommend(&[], &[], &policy(0.0, 0.0, None)).setting, None);
    }
}
