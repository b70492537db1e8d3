//! The `gate:` section of `rageval.yaml`, with its documented defaults.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::base::problem::{Checked, Problem, Under};
use crate::output::gate::trend::Same;
use crate::output::history::Rate;
use crate::vocab::limit::{Limit, Limits, Scope};

/// The CI gate (`rageval gate`, `rageval sweep --gate`). Flags override every field.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GateConfig {
    /// The gated setting, as `min_score=0.2,k=4`. Default: the results' recommended setting.
    pub setting: Option<String>,
    /// Results to compare with, relative to the config file. Default: no baseline.
    pub baseline: Option<String>,
    /// How much each rate may worsen against the baseline (0.05 = 5 points). Default: 0.
    pub tolerance: f64,
    /// Significance level of the paired test on flipped questions. Default: 0.05.
    pub alpha: f64,
    /// Fail a baseline regression only when the paired test finds it significant.
    pub require_significance: bool,
    /// Fail when the gated setting is not certified (`recommend.confidence`; docs/insight.md).
    pub require_certified: bool,
    /// Absolute limits at the gated setting; a limit left out is not checked.
    pub max_unwanted_answer_rate: Option<f64>,
    pub max_false_refusal_rate: Option<f64>,
    /// Runs whose model call failed. Default: 0.
    pub max_error_runs: u64,
    pub max_prompt_tokens_per_question: Option<f64>,
    /// Share of answered answerable questions whose answer holds an expected answer text.
    pub min_answer_match_rate: Option<f64>,
    /// Share of repeated runs (`sweep --repeat N`) whose outcome differs from their
    /// question's most frequent one.
    pub max_flip_rate: Option<f64>,
    /// Share of answerable questions answered wrongly: the judge marked the answer incorrect
    /// or, ungraded, it holds none of the expected answer texts.
    pub max_wrong_answer_rate: Option<f64>,
    /// Limits for the questions of one tag, at the gated setting:
    /// `tags: {near-miss: {max_unwanted_answer_rate: 0.3}}`. A question counts under each of
    /// its tags (`generated` and `reviewed` too, when the results hold generated questions).
    pub tags: IndexMap<String, TagLimits>,
    /// The trend alarm: fail when a rate of the gated setting rises across the last runs of
    /// the history (docs/history.md).
    pub trend: TrendConfig,
}

/// `gate.trend`: the exact test for a rising rate over the last comparable runs.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TrendConfig {
    /// Runs tested, the gated results the newest (`--trend N`); 0: no trend alarm. Default: 0.
    pub runs: usize,
    /// The alarm's false-alarm rate, all rates together. Default: 0.05.
    pub alpha: f64,
    /// Which runs of the history are comparable with the gated results: the same `config`
    /// digest, the same `questions` digest, both (the default) or neither (`[]`).
    pub same: Vec<Same>,
    /// The rates tested. Default: all three.
    pub rates: Vec<Rate>,
}

impl Default for TrendConfig {
    fn default() -> Self {
        TrendConfig {
            runs: 0,
            alpha: crate::output::gate::policy::DEFAULT_ALPHA,
            same: vec![Same::Config, Same::Questions],
            rates: Rate::ALL.to_vec(),
        }
    }
}

impl TrendConfig {
    /// At least two runs (or none), a valid alpha, a rate to test.
    pub fn check(&self) -> Checked {
        crate::output::gate::policy::check_alpha(self.alpha)
            .map_err(|msg| Problem::new("alpha", msg))?;
        check_runs(self.runs).map_err(|msg| Problem::new("runs", msg))?;
        if self.rates.is_empty() {
            return Err(Problem::new(
                "rates",
                "is empty: name a rate to test, or set `runs: 0`",
            ));
        }
        Ok(())
    }
}

/// The most runs a trend window holds.
pub const MAX_TREND_RUNS: usize = 1000;

/// A window of runs: 0 (off), or from 2 to [`MAX_TREND_RUNS`].
pub fn check_runs(runs: usize) -> Result<usize, String> {
    if runs == 1 || runs > MAX_TREND_RUNS {
        return Err(format!(
            "must be from 2 to {MAX_TREND_RUNS} runs (0: no trend alarm), not {runs}"
        ));
    }
    Ok(runs)
}

/// The limits one tag's questions are held to (`gate.tags.TAG`): the rates counted by tag.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TagLimits {
    /// Share of the tag's unanswerable questions answered.
    pub max_unwanted_answer_rate: Option<f64>,
    /// Share of the tag's answerable questions refused.
    pub max_false_refusal_rate: Option<f64>,
    /// Share of the tag's answerable questions answered wrongly.
    pub max_wrong_answer_rate: Option<f64>,
}

impl TagLimits {
    /// Its limits by [`Limit`].
    pub fn limits(&self) -> Limits {
        [
            (Limit::MaxUnwantedAnswerRate, self.max_unwanted_answer_rate),
            (Limit::MaxFalseRefusalRate, self.max_false_refusal_rate),
            (Limit::MaxWrongAnswerRate, self.max_wrong_answer_rate),
        ]
        .into_iter()
        .collect()
    }
}

impl GateConfig {
    /// The limits of each tag of `gate.tags`, in the section's order.
    pub fn tag_limits(&self) -> Vec<(String, Limits)> {
        self.tags
            .iter()
            .map(|(tag, t)| (tag.clone(), t.limits()))
            .collect()
    }

    /// Each tag's limits: a share each, at least one per tag, a non-empty tag.
    fn check_tags(&self) -> Checked {
        for (tag, t) in &self.tags {
            if tag.trim().is_empty() {
                return Err(Problem::at(&["tags", tag], "is not a tag: name one"));
            }
            let limits = t.limits();
            if limits.iter().next().is_none() {
                return Err(Problem::at(
                    &["tags", tag],
                    "sets no limit: give `max_unwanted_answer_rate`, `max_false_refusal_rate` or `max_wrong_answer_rate`",
                ));
            }
            for (limit, v) in limits.iter() {
                if let Err(msg) = limit.check(crate::vocab::limit::Scope::Gate, v) {
                    return Err(Problem::at(&["tags", tag, limit.key()], msg));
                }
            }
        }
        Ok(())
    }
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            setting: None,
            baseline: None,
            tolerance: 0.0,
            alpha: crate::output::gate::policy::DEFAULT_ALPHA,
            require_significance: false,
            require_certified: false,
            max_unwanted_answer_rate: None,
            max_false_refusal_rate: None,
            max_error_runs: 0,
            max_prompt_tokens_per_question: None,
            min_answer_match_rate: None,
            max_flip_rate: None,
            max_wrong_answer_rate: None,
            tags: IndexMap::new(),
            trend: TrendConfig::default(),
        }
    }
}

impl GateConfig {
    /// The section's own check: a share, a valid alpha, its limits as [`Limit`] checks them,
    /// a setting that parses.
    pub fn check(&self) -> Checked {
        use crate::output::gate::policy::{check_alpha, check_share, Validator};
        let numbers: [(&str, f64, Validator); 2] = [
            ("tolerance", self.tolerance, check_share),
            ("alpha", self.alpha, check_alpha),
        ];
        for (field, value, check) in numbers {
            check(value).map_err(|msg| Problem::new(field, msg))?;
        }
        if let Err((limit, msg)) = self.limits().check(Scope::Gate) {
            return Err(Problem::new(limit.key(), msg));
        }
        if let Some(Err(msg)) = self
            .setting
            .as_deref()
            .map(str::parse::<crate::output::gate::SettingSpec>)
        {
            return Err(Problem::new("setting", msg));
        }
        self.check_tags()?;
        self.trend.check().under(&["trend"])
    }

    /// Its limits by [`Limit`]: the one place that maps its limit fields to the enum (a test
    /// holds it to [`Limit::ALL`] and to the section's keys).
    pub fn limits(&self) -> Limits {
        [
            (Limit::MaxUnwantedAnswerRate, self.max_unwanted_answer_rate),
            (Limit::MaxFalseRefusalRate, self.max_false_refusal_rate),
            (Limit::MaxErrorRuns, Some(self.max_error_runs as f64)),
            (
                Limit::MaxPromptTokensPerQuestion,
                self.max_prompt_tokens_per_question,
            ),
            (Limit::MinAnswerMatchRate, self.min_answer_match_rate),
            (Limit::MaxFlipRate, self.max_flip_rate),
            (Limit::MaxWrongAnswerRate, self.max_wrong_answer_rate),
        ]
        .into_iter()
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(yaml: &str) -> Result<(), (String, String)> {
        serde_yaml::from_str::<GateConfig>(yaml)
            .unwrap()
            .check()
            .map_err(|p| (p.field_name(), p.message))
    }

    #[test]
    fn tag_limits_read_and_check_themselves() {
        let g: GateConfig = serde_yaml::from_str(
            "tags: {near-miss: {max_unwanted_answer_rate: 0.3}, billing: {max_false_refusal_rate: 0.1, max_wrong_answer_rate: 0.2}}",
        )
        .unwrap();
        assert_eq!(g.check(), Ok(()));
        let limits = g.tag_limits();
        assert_eq!(limits[0].0, "near-miss");
        assert_eq!(limits[0].1.get(Limit::MaxUnwantedAnswerRate), Some(0.3));
        assert_eq!(limits[1].1.get(Limit::MaxWrongAnswerRate), Some(0.2));
        assert_eq!(limits[1].1.get(Limit::MaxUnwantedAnswerRate), None);
        let (path, msg) = check("tags: {near-miss: {max_unwanted_answer_rate: 1.5}}").unwrap_err();
        assert_eq!(path, "tags.near-miss.max_unwanted_answer_rate");
        assert_eq!(msg, "must be a share from 0 to 1, not 1.5");
        let (path, msg) = check("tags: {near-miss: {}}").unwrap_err();
        assert_eq!(path, "tags.near-miss");
        assert!(msg.starts_with("sets no limit"), "{msg}");
        // Only the rates counted by tag: anything else is an unknown field.
        assert!(serde_yaml::from_str::<GateConfig>("tags: {a: {max_error_runs: 1}}").is_err());
    }
}
