//! The `recommend:` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::base::problem::{Checked, Problem};
use crate::vocab::limit::{check_weight, Limit, Limits, Scope, Stat};

/// The recommendation policy: hard limits a setting must meet, then weights that rank the
/// settings that meet them (lower weighted cost wins). See docs/insight.md.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RecommendConfig {
    /// Highest acceptable unwanted-answer rate (0 to 1).
    pub max_unwanted_answer_rate: f64,
    /// Highest acceptable false-refusal rate (0 to 1).
    pub max_false_refusal_rate: f64,
    /// Highest acceptable prompt tokens per question; no limit when absent.
    pub max_prompt_tokens_per_question: Option<f64>,
    /// Highest acceptable attack success rate of injection probes (questions with `attack:`);
    /// no limit when absent. Settings without probes are not held to it.
    pub max_attack_success_rate: Option<f64>,
    /// Highest acceptable wrong-answer rate (wrong answers over answerable questions); no
    /// limit when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wrong_answer_rate: Option<f64>,
    pub weights: WeightsConfig,
    /// Confidence of certification, from 0 to below 1: at most `1 - confidence` of sweeps
    /// certify any setting that breaks a limit (the whole grid at once; a promise about sweeps,
    /// not about one setting once certified). 0 chooses on the measured rates alone and
    /// certifies nothing.
    pub confidence: f64,
    /// How the level is shared over the grid: `ordered` (one family per rate limit, chains
    /// along the ordered dimension; the default) or `bonferroni` (every setting at
    /// `(1 - confidence) / settings`, as rageval did before).
    pub method: Method,
    /// Test every rate with a bound valid at every number of questions at once, so that a
    /// team may add questions and re-sweep until certified (`--sequential`).
    pub sequential: bool,
    /// The chance of certifying that the question count a report asks for gives, from above 0
    /// to below 1.
    pub power: f64,
    /// Resampled question sets of the stability figure (seeded bootstrap); 0: none.
    pub resamples: usize,
    /// Folds of the cross-validated estimate (2 or more; 0: none). Absent: 5 when each class
    /// has at least 10 questions, else none. `--folds` overrides it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folds: Option<usize>,
    /// Seed of the bootstrap and of the folds.
    pub resampling_seed: u64,
    /// A labels file (`rageval label`, docs/labels.md): a person's grade of a reply replaces
    /// the grader's in every run that shares the reply. `--labels` overrides it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub labels: Option<std::path::PathBuf>,
}

/// How certification shares its level over the grid (docs/insight.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Ordered family-wise tests: each rate limit a family with its share of the level,
    /// chains along the ordered dimension, level passed on from a chain that certified all.
    #[default]
    Ordered,
    /// Every setting's tests at `(1 - confidence) / settings`.
    Bonferroni,
}

/// The default power of the question count.
pub const POWER: f64 = 0.8;

/// Check a number of cross-validation folds: 0 (none), or 2 or more.
pub fn check_folds(k: usize) -> Result<(), String> {
    if k == 1 {
        Err("must be 0 (none) or at least 2 folds, got 1".into())
    } else {
        Ok(())
    }
}

/// The default confidence of certification.
pub const CONFIDENCE: f64 = 0.95;

/// The default number of bootstrap resamples.
pub const RESAMPLES: usize = 200;

/// The most bootstrap resamples a policy may ask for: each one recounts every run.
pub const MAX_RESAMPLES: usize = 100_000;

impl Default for RecommendConfig {
    /// Loose guard rails that only rule out settings nobody should ship; tighten them to the
    /// product's needs.
    fn default() -> Self {
        RecommendConfig {
            max_unwanted_answer_rate: 0.2,
            max_false_refusal_rate: 0.5,
            max_prompt_tokens_per_question: None,
            max_attack_success_rate: None,
            max_wrong_answer_rate: None,
            weights: WeightsConfig::default(),
            confidence: CONFIDENCE,
            method: Method::default(),
            sequential: false,
            power: POWER,
            resamples: RESAMPLES,
            folds: None,
            resampling_seed: 0,
            labels: None,
        }
    }
}

impl RecommendConfig {
    /// The section's own check: its limits and weights as [`Limit`] and [`Stat`] check them,
    /// and the certification's numbers.
    pub fn check(&self) -> Checked {
        if let Err((limit, msg)) = self.limits().check(Scope::Recommend) {
            return Err(Problem::new(limit.key(), msg));
        }
        for (stat, v) in self.weights.by_stat() {
            check_weight(v).map_err(|msg| Problem::at(&["weights", stat.name()], msg))?;
        }
        if !(0.0..1.0).contains(&self.confidence) {
            return Err(Problem::new(
                "confidence",
                format!(
                    "must be a confidence from 0 to below 1 (0.95 is 95%; 0 certifies nothing), got {}",
                    self.confidence
                ),
            ));
        }
        if !(self.power > 0.0 && self.power < 1.0) {
            return Err(Problem::new(
                "power",
                format!(
                    "must be a chance above 0 and below 1 (0.8 is 80%), got {}",
                    self.power
                ),
            ));
        }
        if let Some(Err(msg)) = self.folds.map(check_folds) {
            return Err(Problem::new("folds", msg));
        }
        if self.resamples > MAX_RESAMPLES {
            return Err(Problem::new(
                "resamples",
                format!(
                    "must be from 0 to {MAX_RESAMPLES} resamples, got {}",
                    self.resamples
                ),
            ));
        }
        Ok(())
    }

    /// Its hard limits by [`Limit`]: the one place that maps its limit fields to the enum (a
    /// test holds it to [`Limit::ALL`] and to the section's keys).
    pub fn limits(&self) -> Limits {
        [
            (
                Limit::MaxUnwantedAnswerRate,
                Some(self.max_unwanted_answer_rate),
            ),
            (
                Limit::MaxFalseRefusalRate,
                Some(self.max_false_refusal_rate),
            ),
            (
                Limit::MaxPromptTokensPerQuestion,
                self.max_prompt_tokens_per_question,
            ),
            (Limit::MaxAttackSuccessRate, self.max_attack_success_rate),
            (Limit::MaxWrongAnswerRate, self.max_wrong_answer_rate),
        ]
        .into_iter()
        .collect()
    }
}

/// The default weight of the wrong-answer rate.
pub const WRONG_ANSWER_WEIGHT: f64 = 1.0;

/// Weights of the objective: cost = sum of weight x metric, each metric named as its
/// summary.csv column.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WeightsConfig {
    /// Weight of the false-refusal rate.
    pub false_refusal_rate: f64,
    /// Weight of the unwanted-answer rate: an answer made up from unrelated passages usually
    /// costs more than a refusal the user can work around, hence 3 by default.
    pub unwanted_answer_rate: f64,
    /// Weight of one prompt token per question: 0.00005 makes 1000 tokens per question weigh
    /// as much as 5 points of false refusals.
    pub prompt_tokens_per_question: f64,
    /// Weight of the wrong-answer rate: a wrong answer shown with sources misleads like an
    /// unwanted one.
    pub wrong_answer_rate: f64,
}

impl WeightsConfig {
    /// Each weight with the statistic it weighs (its key is the statistic's name): the one
    /// place that maps the fields to [`Stat`].
    pub fn by_stat(&self) -> [(Stat, f64); 4] {
        [
            (Stat::FalseRefusalRate, self.false_refusal_rate),
            (Stat::UnwantedAnswerRate, self.unwanted_answer_rate),
            (
                Stat::PromptTokensPerQuestion,
                self.prompt_tokens_per_question,
            ),
            (Stat::WrongAnswerRate, self.wrong_answer_rate),
        ]
    }
}

impl Default for WeightsConfig {
    fn default() -> Self {
        WeightsConfig {
            false_refusal_rate: 1.0,
            unwanted_answer_rate: 3.0,
            prompt_tokens_per_question: 0.00005,
            wrong_answer_rate: WRONG_ANSWER_WEIGHT,
        }
    }
}
