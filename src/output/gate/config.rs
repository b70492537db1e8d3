//! The `gate:` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::base::problem::{Checked, Problem};
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
        Ok(())
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
