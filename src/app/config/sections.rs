//! The sections of `rageval.yaml`, each with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocab::spec::{NameSpec, ValueSpec};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SweepConfig {
    /// minScore values: `a..b`, `a..b:step`, `a,b,c`, a number, or a list of numbers.
    pub min_score: ValueSpec,
    /// k values, in the same forms.
    pub k: ValueSpec,
    /// Context orders: `score`, `edge`, or both (`score,edge` or a list).
    pub order: NameSpec,
    /// Passage formats: `numbered`, `tagged`, or both.
    pub format: NameSpec,
    /// Follow-up rewrite strategies: `none`, `heuristic`, `model`.
    pub rewrite: NameSpec,
    /// Chat profiles (keys of `models:`, `default` for `chat:`). Default: `default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat: Option<NameSpec>,
    /// Chat temperatures, in the forms of `min_score`. Default: each profile's `temperature`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<ValueSpec>,
    /// Embedder profiles (keys of `embedders:`, `default` for `embedder:`). Default: `default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder: Option<NameSpec>,
    /// Chunk sizes of the builtin chunker, in the forms of `k`. Default:
    /// `corpus.max_chunk_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_tokens: Option<ValueSpec>,
    /// Model calls in flight at once.
    pub concurrency: usize,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            min_score: ValueSpec::Text("0.1..0.5".into()),
            k: ValueSpec::Text("1,2,4,8".into()),
            order: NameSpec::Text("score".into()),
            format: NameSpec::Text("numbered".into()),
            rewrite: NameSpec::Text("none".into()),
            chat: None,
            temperature: None,
            embedder: None,
            chunk_tokens: None,
            concurrency: 8,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PricingConfig {
    /// Price of a million prompt tokens.
    pub prompt_per_million: f64,
    /// Price of a million completion tokens.
    pub completion_per_million: f64,
    /// Currency of the prices, for display.
    pub currency: String,
}

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
}

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
        }
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
