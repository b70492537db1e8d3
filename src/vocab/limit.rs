//! The limits a setting is held to: one enum for the recommendation policy (`recommend:`) and
//! the CI gate (`gate:`, `rageval gate --max-...`).
//!
//! A limit knows its config key, its flag, its direction, how its value is checked, its short
//! label and the statistic it reads; the config check, the flag merge, the gate's checks and the
//! recommendation all walk [`Limit::ALL`], so adding a limit is a variant here, its field in the
//! config section (the serde shape), its flag and the statistic's value in `stats`.
//!
//! This is the vocabulary layer: it imports nothing of the crate.

use serde::Serialize;

/// One limit. Serialized (in the recommendation's misses) as its config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    MaxUnwantedAnswerRate,
    MaxFalseRefusalRate,
    MaxPromptTokensPerQuestion,
    MaxAttackSuccessRate,
    MinAnswerMatchRate,
    MaxWrongAnswerRate,
    MaxFlipRate,
    MaxErrorRuns,
}

/// Whether a limit is a ceiling or a floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The statistic may not exceed the limit: higher is worse.
    Max,
    /// The statistic may not fall below the limit: lower is worse.
    Min,
}

/// What a limit's value is, and so how it is checked and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A share from 0 to 1.
    Share,
    /// Prompt tokens per question, 0 or more.
    Tokens,
    /// A whole number of runs.
    Count,
}

/// Where a limit is set: the two policies that hold settings to limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The `recommend:` section: which settings may be recommended.
    Recommend,
    /// The `gate:` section and the gate's flags: what the gated setting must meet.
    Gate,
}

/// The per-setting statistic a limit reads (a summary.csv column; the gate names its check
/// after it). The statistics layer maps each to its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stat {
    UnwantedAnswerRate,
    FalseRefusalRate,
    PromptTokensPerQuestion,
    AttackSuccessRate,
    AnswerMatchRate,
    WrongAnswerRate,
    FlipRate,
    ErrorRuns,
}

impl Stat {
    /// Its name: `unwanted_answer_rate`.
    pub fn name(self) -> &'static str {
        match self {
            Stat::UnwantedAnswerRate => "unwanted_answer_rate",
            Stat::FalseRefusalRate => "false_refusal_rate",
            Stat::PromptTokensPerQuestion => "prompt_tokens_per_question",
            Stat::AttackSuccessRate => "attack_success_rate",
            Stat::AnswerMatchRate => "answer_match_rate",
            Stat::WrongAnswerRate => "wrong_answer_rate",
            Stat::FlipRate => "flip_rate",
            Stat::ErrorRuns => "error_runs",
        }
    }

    /// Why the statistic can be undefined, as the gate says it (a limit on an undefined
    /// statistic holds).
    pub fn undefined(self) -> &'static str {
        match self {
            Stat::UnwantedAnswerRate => "n/a (no unanswerable questions)",
            Stat::FalseRefusalRate | Stat::WrongAnswerRate => "n/a (no answerable questions)",
            Stat::AnswerMatchRate => "n/a (no answered question with an expected answer)",
            Stat::AttackSuccessRate => "n/a (no injection probes)",
            Stat::FlipRate => "not measured: the sweep made no repeats (`--repeat N`)",
            Stat::PromptTokensPerQuestion | Stat::ErrorRuns => "n/a",
        }
    }

    /// Whether a baseline comparison holds it steady, question by question (the outcome
    /// rates; tokens, repeats and failed calls are held to absolute limits only).
    pub fn compared_with_baseline(self) -> bool {
        matches!(
            self,
            Stat::UnwantedAnswerRate
                | Stat::FalseRefusalRate
                | Stat::AnswerMatchRate
                | Stat::WrongAnswerRate
        )
    }
}

impl Limit {
    /// Every limit, in the order policies list them.
    pub const ALL: [Limit; 8] = [
        Limit::MaxUnwantedAnswerRate,
        Limit::MaxFalseRefusalRate,
        Limit::MaxPromptTokensPerQuestion,
        Limit::MaxAttackSuccessRate,
        Limit::MinAnswerMatchRate,
        Limit::MaxWrongAnswerRate,
        Limit::MaxFlipRate,
        Limit::MaxErrorRuns,
    ];

    /// Its config key in `recommend:` and `gate:`: `max_unwanted_answer_rate`.
    pub fn key(self) -> &'static str {
        match self {
            Limit::MaxUnwantedAnswerRate => "max_unwanted_answer_rate",
            Limit::MaxFalseRefusalRate => "max_false_refusal_rate",
            Limit::MaxPromptTokensPerQuestion => "max_prompt_tokens_per_question",
            Limit::MaxAttackSuccessRate => "max_attack_success_rate",
            Limit::MinAnswerMatchRate => "min_answer_match_rate",
            Limit::MaxWrongAnswerRate => "max_wrong_answer_rate",
            Limit::MaxFlipRate => "max_flip_rate",
            Limit::MaxErrorRuns => "max_error_runs",
        }
    }

    /// Its flag of `rageval gate` and `rageval sweep --gate`: `--max-unwanted-answer-rate`.
    pub fn flag(self) -> &'static str {
        match self {
            Limit::MaxUnwantedAnswerRate => "--max-unwanted-answer-rate",
            Limit::MaxFalseRefusalRate => "--max-false-refusal-rate",
            Limit::MaxPromptTokensPerQuestion => "--max-prompt-tokens-per-question",
            Limit::MaxAttackSuccessRate => "--max-attack-success-rate",
            Limit::MinAnswerMatchRate => "--min-answer-match-rate",
            Limit::MaxWrongAnswerRate => "--max-wrong-answer-rate",
            Limit::MaxFlipRate => "--max-flip-rate",
            Limit::MaxErrorRuns => "--max-error-runs",
        }
    }

    /// The statistic it reads.
    pub fn stat(self) -> Stat {
        match self {
            Limit::MaxUnwantedAnswerRate => Stat::UnwantedAnswerRate,
            Limit::MaxFalseRefusalRate => Stat::FalseRefusalRate,
            Limit::MaxPromptTokensPerQuestion => Stat::PromptTokensPerQuestion,
            Limit::MaxAttackSuccessRate => Stat::AttackSuccessRate,
            Limit::MinAnswerMatchRate => Stat::AnswerMatchRate,
            Limit::MaxWrongAnswerRate => Stat::WrongAnswerRate,
            Limit::MaxFlipRate => Stat::FlipRate,
            Limit::MaxErrorRuns => Stat::ErrorRuns,
        }
    }

    pub fn direction(self) -> Direction {
        match self {
            Limit::MinAnswerMatchRate => Direction::Min,
            _ => Direction::Max,
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            Limit::MaxPromptTokensPerQuestion => Kind::Tokens,
            Limit::MaxErrorRuns => Kind::Count,
            _ => Kind::Share,
        }
    }

    /// Whether a policy of `scope` has this limit.
    pub fn in_scope(self, scope: Scope) -> bool {
        match scope {
            Scope::Recommend => matches!(
                self,
                Limit::MaxUnwantedAnswerRate
                    | Limit::MaxFalseRefusalRate
                    | Limit::MaxPromptTokensPerQuestion
                    | Limit::MaxAttackSuccessRate
                    | Limit::MaxWrongAnswerRate
            ),
            Scope::Gate => self != Limit::MaxAttackSuccessRate,
        }
    }

    /// The limits of a policy of `scope`, in [`Limit::ALL`] order.
    pub fn of(scope: Scope) -> impl Iterator<Item = Limit> {
        Limit::ALL.into_iter().filter(move |l| l.in_scope(scope))
    }

    /// The statistic as people read it in a line of limits: `unwanted`, as in `unwanted ≤ 20%`.
    pub fn label(self) -> &'static str {
        match self {
            Limit::MaxUnwantedAnswerRate => "unwanted",
            Limit::MaxFalseRefusalRate => "false refusals",
            Limit::MaxPromptTokensPerQuestion => "prompt tokens/question",
            Limit::MaxAttackSuccessRate => "attack success",
            Limit::MinAnswerMatchRate => "answer matches",
            Limit::MaxWrongAnswerRate => "wrong answers",
            Limit::MaxFlipRate => "flips",
            Limit::MaxErrorRuns => "failed runs",
        }
    }

    /// `≤` for a ceiling, `≥` for a floor.
    pub fn bound(self) -> &'static str {
        match self.direction() {
            Direction::Max => "≤",
            Direction::Min => "≥",
        }
    }

    /// Whether `value` of the statistic meets the limit `limit`; `eps` absorbs rounding.
    pub fn holds(self, value: f64, limit: f64, eps: f64) -> bool {
        match self.direction() {
            Direction::Max => value <= limit + eps,
            Direction::Min => value >= limit - eps,
        }
    }

    /// Check a value of this limit as the policy of `scope` takes it: the value, or what is
    /// wrong with it (the sentence after `gate.max_flip_rate:`).
    pub fn check(self, scope: Scope, v: f64) -> Result<f64, String> {
        match (self.kind(), scope) {
            (Kind::Share, Scope::Gate) => check_share(v),
            (Kind::Share, Scope::Recommend) if (0.0..=1.0).contains(&v) => Ok(v),
            (Kind::Share, Scope::Recommend) => Err(format!("must be a rate from 0 to 1, got {v}")),
            (Kind::Tokens, Scope::Gate) if v >= 0.0 && v.is_finite() => Ok(v),
            (Kind::Tokens, Scope::Gate) => {
                Err(format!("must be a number of tokens of 0 or more, not {v}"))
            }
            (Kind::Tokens, Scope::Recommend) if v > 0.0 && v.is_finite() => Ok(v),
            (Kind::Tokens, Scope::Recommend) => {
                Err(format!("must be a number of tokens above 0, got {v}"))
            }
            (Kind::Count, _) if v >= 0.0 && v.is_finite() && v.fract() == 0.0 => Ok(v),
            (Kind::Count, _) => Err(format!("must be a whole number of 0 or more, not {v}")),
        }
    }
}

/// Check a share, such as a rate limit of the gate or its tolerance: a number from 0 to 1.
pub fn check_share(v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be a share from 0 to 1, not {v}"))
    }
}

/// A value for some limits: a map from [`Limit`] to its value; a limit without one is not
/// checked.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits([Option<f64>; Limit::ALL.len()]);

impl Limits {
    /// The value of `limit`, when it is set.
    pub fn get(&self, limit: Limit) -> Option<f64> {
        self.0[limit as usize]
    }

    /// Set (or, with `None`, clear) `limit`.
    pub fn set(&mut self, limit: Limit, value: Option<f64>) {
        self.0[limit as usize] = value;
    }

    /// The limits that are set and their values, in [`Limit::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Limit, f64)> + '_ {
        Limit::ALL
            .into_iter()
            .filter_map(|l| self.get(l).map(|v| (l, v)))
    }

    /// Each limit set, checked as its kind asks in `scope`: the first bad one and why.
    pub fn check(&self, scope: Scope) -> Result<(), (Limit, String)> {
        self.iter()
            .find_map(|(limit, v)| limit.check(scope, v).err().map(|msg| (limit, msg)))
            .map_or(Ok(()), Err)
    }
}

/// Check a weight of the recommendation's objective (one per [`Stat`] it weighs): 0 or more.
pub fn check_weight(v: f64) -> Result<f64, String> {
    if v >= 0.0 && v.is_finite() {
        Ok(v)
    } else {
        Err(format!("must be a weight of 0 or more, got {v}"))
    }
}

impl FromIterator<(Limit, Option<f64>)> for Limits {
    fn from_iter<I: IntoIterator<Item = (Limit, Option<f64>)>>(iter: I) -> Self {
        let mut limits = Limits::default();
        for (l, v) in iter {
            limits.set(l, v);
        }
        limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_every_variant_once_in_declaration_order() {
        for (i, l) in Limit::ALL.into_iter().enumerate() {
            assert_eq!(l as usize, i, "{l:?}");
        }
    }

    #[test]
    fn key_flag_and_statistic_name_say_the_same() {
        for l in Limit::ALL {
            let prefix = match l.direction() {
                Direction::Max => "max_",
                Direction::Min => "min_",
            };
            assert_eq!(l.key(), format!("{prefix}{}", l.stat().name()), "{l:?}");
            assert_eq!(
                l.flag(),
                format!("--{}", l.key().replace('_', "-")),
                "{l:?}"
            );
            assert_eq!(
                serde_json::to_value(l).unwrap(),
                serde_json::json!(l.key()),
                "{l:?}"
            );
        }
    }

    #[test]
    fn values_are_checked_by_kind_and_scope() {
        let share = Limit::MaxFlipRate;
        assert!(share.check(Scope::Gate, 0.0).is_ok() && share.check(Scope::Gate, 1.0).is_ok());
        assert_eq!(
            share.check(Scope::Gate, 1.5).unwrap_err(),
            "must be a share from 0 to 1, not 1.5"
        );
        assert!(share.check(Scope::Gate, f64::NAN).is_err());
        assert_eq!(
            Limit::MaxWrongAnswerRate
                .check(Scope::Recommend, -0.1)
                .unwrap_err(),
            "must be a rate from 0 to 1, got -0.1"
        );
        let tokens = Limit::MaxPromptTokensPerQuestion;
        assert!(tokens.check(Scope::Gate, 0.0).is_ok());
        assert!(tokens.check(Scope::Gate, f64::INFINITY).is_err());
        assert!(tokens.check(Scope::Recommend, 0.0).is_err());
        assert!(tokens.check(Scope::Recommend, 300.0).is_ok());
        assert!(Limit::MaxErrorRuns.check(Scope::Gate, 2.0).is_ok());
        assert!(Limit::MaxErrorRuns.check(Scope::Gate, 0.5).is_err());
    }

    #[test]
    fn a_set_of_limits_is_a_map() {
        let mut l = Limits::default();
        assert_eq!(l.iter().count(), 0);
        l.set(Limit::MaxErrorRuns, Some(0.0));
        l.set(Limit::MaxUnwantedAnswerRate, Some(0.2));
        assert_eq!(l.get(Limit::MaxErrorRuns), Some(0.0));
        assert_eq!(l.get(Limit::MaxFlipRate), None);
        let set: Vec<(Limit, f64)> = l.iter().collect();
        assert_eq!(
            set,
            [
                (Limit::MaxUnwantedAnswerRate, 0.2),
                (Limit::MaxErrorRuns, 0.0)
            ]
        );
        assert_eq!(
            set.iter().map(|&(l, v)| (l, Some(v))).collect::<Limits>(),
            l
        );
    }

    #[test]
    fn holds_by_direction() {
        assert!(Limit::MaxUnwantedAnswerRate.holds(0.2, 0.2, 1e-9));
        assert!(!Limit::MaxUnwantedAnswerRate.holds(0.21, 0.2, 1e-9));
        assert!(Limit::MinAnswerMatchRate.holds(0.5, 0.5, 1e-9));
        assert!(!Limit::MinAnswerMatchRate.holds(0.4, 0.5, 1e-9));
    }
}
