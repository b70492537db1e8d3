//! What the recommendation found, as facts: the types results.json records under
//! `summary.recommendation`, filled by [`super::recommend`]. The sentences that explain them
//! are written by `output::explain`, from these facts alone.

use serde::Serialize;

use super::certifier::{Certification, Procedure};
use crate::vocab::limit::{Kind, Limit, Scope};

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
    pub fn relative(&self) -> f64 {
        if self.limit.kind() != Kind::Tokens || self.max <= 0.0 {
            self.excess
        } else {
            self.excess / self.max
        }
    }
}

/// When no setting meets the limits: the one that comes closest.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Closest {
    pub setting: String,
    /// The limits it misses, smallest miss first.
    pub misses: Vec<Miss>,
}

/// One rate limit of the chosen setting, as certification sees it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Bound {
    #[schemars(with = "LimitSchema")]
    pub limit: Limit,
    /// The limit as configured.
    pub max: f64,
    /// Failures (a failed call counts as one) among the questions the rate is over.
    pub failures: u64,
    pub questions: u64,
    /// The level of its test: where the procedure tested it (or, when its chain stopped
    /// before it, the level it would get next).
    pub level: f64,
    /// The exact one-sided upper bound at that level (Clopper–Pearson; with
    /// `recommend.sequential`, the confidence sequence's; with labels, the prediction-powered
    /// test's): the true rate is below it with the stated confidence, for the whole grid at
    /// once.
    pub upper_bound: f64,
    /// With labels: the labelled replies among the rate's runs of this setting; the bound is
    /// then the prediction-powered test's (every run's grade corrected by the labels).
    /// Absent without labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<u64>,
    /// Whether the limit is certified.
    pub certified: bool,
    /// When its chain along the ordered dimension stopped before reaching it: the setting
    /// it stopped at. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
    /// Questions that give a `recommend.power` chance of certifying the limit if the measured
    /// rate is the true one, at the level of its test; null when no number does (the
    /// rate is at or above the limit, or the limit is 0). Absent when certified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions_needed: Option<u64>,
    /// Questions that would certify it with no failure at all; null when no number does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions_needed_with_none: Option<u64>,
    /// With no failure so far: questions that would certify it with at most one failure.
    /// Absent otherwise, and when no number does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions_needed_with_one: Option<u64>,
}

/// How often resampled questions choose the same setting (a seeded, stratified bootstrap:
/// no new model call, only the choice is made again).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ChoiceStability {
    pub resamples: usize,
    /// Share of resamples whose choice is the recommended setting.
    pub chosen_share: f64,
    /// Share of resamples whose choice is certified.
    pub certified_share: f64,
    /// The setting chosen most often after the recommended one (null: no setting at all), and
    /// its share; absent when every resample chose the recommended setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_up: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_up_share: Option<f64>,
}

/// One rate measured on questions the choice did not see.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HeldOut {
    #[schemars(with = "LimitSchema")]
    pub limit: Limit,
    pub failures: u64,
    pub questions: u64,
    pub rate: Option<f64>,
    /// Its 95% Wilson interval.
    pub interval: Option<crate::analysis::insight::wilson::Interval>,
}

/// The settings the folds chose.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FoldChoice {
    /// The setting, or null for folds where no setting met the limits.
    pub setting: Option<String>,
    pub folds: usize,
}

/// K-fold cross-validation of the whole choice: choose on K-1 folds, measure the chosen setting
/// on the held-out fold, pool the held-out runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CrossValidation {
    pub folds: usize,
    /// The pooled held-out rates of the settings the folds chose.
    pub held_out: Vec<HeldOut>,
    /// What the folds chose, most often first.
    pub choices: Vec<FoldChoice>,
    /// Folds whose choice was certified on their training questions.
    pub certified_folds: usize,
}

/// The recommendation and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    /// The chosen setting's id, certified or not; `None` when no setting meets the limits
    /// even on the measured rates.
    pub setting: Option<String>,
    /// Its index in the grid.
    #[serde(skip)]
    pub index: Option<usize>,
    /// The chosen setting's weighted cost.
    pub cost: Option<f64>,
    /// Settings that meet every limit on the measured rates.
    pub feasible: usize,
    /// Settings in the grid.
    pub settings: usize,
    /// Which tie-break decided, when settings tied on cost.
    pub tie_break: Option<TieRule>,
    /// When nothing is feasible: the setting that comes closest.
    pub closest: Option<Closest>,
    /// Whether the chosen setting is certified.
    pub certified: bool,
    /// Whether and how settings are certified; `Off` with `recommend.confidence: 0`.
    #[serde(skip)]
    pub certification: Certification,
    /// `recommend.confidence`; 0: the choice on the measured rates alone.
    pub confidence: f64,
    /// How settings are certified; null with `recommend.confidence: 0`.
    pub procedure: Option<Procedure>,
    /// Whether the tests are anytime-valid (`recommend.sequential`): the certificate holds
    /// however many times the questions were added to and the sweep re-run.
    pub sequential: bool,
    /// `recommend.power`: the chance of certifying that `bounds[*].questions_needed` plans for.
    pub power: f64,
    /// Settings certified.
    pub certified_settings: usize,
    /// The chosen (or closest) setting's rate limits under certification.
    pub bounds: Vec<Bound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<ChoiceStability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_validation: Option<CrossValidation>,
}

/// The rule that broke a tie of equal costs, in the order they are tried. Serialized as its
/// name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub enum TieRule {
    #[serde(rename = "fewer prompt tokens")]
    FewerPromptTokens,
    /// More questions refused early, for free.
    #[serde(rename = "higher minScore")]
    HigherMinScore,
    #[serde(rename = "smaller k")]
    SmallerK,
    /// Equal on every rule: the earlier setting of the grid.
    #[serde(rename = "grid order")]
    GridOrder,
}

impl TieRule {
    /// The rule in words: `fewer prompt tokens`.
    pub fn name(self) -> &'static str {
        match self {
            TieRule::FewerPromptTokens => "fewer prompt tokens",
            TieRule::HigherMinScore => "higher minScore",
            TieRule::SmallerK => "smaller k",
            TieRule::GridOrder => "grid order",
        }
    }
}
