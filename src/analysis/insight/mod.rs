//! Tuning insight: what the table of settings means for the choice of one.
//!
//! - [`recommend`]: the setting to ship under the policy in `rageval.yaml`, or why none fits;
//! - [`pareto`]: the settings no other setting beats on false refusals, unwanted answers and
//!   prompt tokens at once;
//! - [`separability`]: whether any minScore separates answerable from unanswerable questions,
//!   whatever the grid;
//! - [`wilson`]: 95% intervals, so that 1 of 8 does not read as exactly 12.5%;
//! - [`counts`]: what every run counts toward the rate limits, recounted by the resampling.

pub mod adaptive;
pub mod certifier;
pub mod certify;
pub mod choice;
pub mod config;
pub mod counts;
pub mod format;
pub mod pareto;
pub mod ppi;
pub mod rate_test;
pub mod recommend;
pub mod recommendation;
pub mod resample;
pub mod separability;
pub mod sequence;
#[cfg(test)]
mod simulation;
#[cfg(test)]
mod simulation_labels;
pub mod wilson;

use serde::Serialize;

use crate::adapters::evalset::Question;
use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::stats::SettingStats;
use crate::sweep::Setting;

pub use recommendation::Recommendation;
pub use separability::Separability;

/// Everything the reports say beyond the per-setting numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Insight {
    /// The policy the recommendation followed.
    pub policy: RecommendConfig,
    pub recommendation: Recommendation,
    /// Per setting, in grid order: whether it is Pareto-optimal.
    pub pareto: Vec<bool>,
    /// Per setting, in grid order: whether it is certified (see [`recommend`]).
    pub certified: Vec<bool>,
    pub separability: Separability,
    /// With a reranker (`separability` then measures the rerank score): the same for the best
    /// retrieval score before reranking. `None` without a reranker.
    pub retrieval_separability: Option<Separability>,
    /// With more than one retrieval variant (`--embedder`, `--chunk-tokens`): separability
    /// and the recommendation within each, since thresholds do not carry across embedding
    /// models or chunk sizes; empty otherwise.
    pub by_retrieval: Vec<RetrievalInsight>,
}

/// One retrieval variant's insight.
// `R` is how its recommendation is given: the facts here, and with the sentences the reports
// print in results.json (`output::record`, whose schema names the type `RetrievalSummary`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[schemars(rename = "RetrievalSummary")]
pub struct RetrievalInsight<R = Recommendation> {
    /// The variant's retrieval dimensions: `embedder=NAME`, `chunk_tokens=N`, or both.
    pub retrieval: String,
    /// The recommendation among the variant's settings alone.
    pub recommendation: R,
    /// Separability of the best score under the variant's retrieval (with a reranker, of the
    /// rerank score).
    pub separability: Separability,
    /// With a reranker: separability of the variant's best retrieval score before reranking.
    /// Absent without a reranker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrieval_separability: Option<Separability>,
}

impl<R> RetrievalInsight<R> {
    /// The same insight with its recommendation given as `give` gives it.
    pub fn giving<S>(&self, give: impl FnOnce(&R) -> S) -> RetrievalInsight<S> {
        RetrievalInsight {
            retrieval: self.retrieval.clone(),
            recommendation: give(&self.recommendation),
            separability: self.separability.clone(),
            retrieval_separability: self.retrieval_separability.clone(),
        }
    }
}

/// Per-question scores, in question order.
pub struct QuestionFacts<'a> {
    pub questions: &'a [Question],
    /// The best retrieval score of each question.
    pub best_scores: &'a [Option<f64>],
    /// The best score of an expected chunk within the largest k searched.
    pub expected_scores: &'a [Option<f64>],
    /// With a reranker, the best retrieval score of each question before reranking.
    pub retrieval_scores: &'a [Option<f64>],
}

impl Insight {
    pub fn new(
        facts: QuestionFacts<'_>,
        settings: &[Setting],
        stats: &[SettingStats],
        table: &counts::RunTable,
        policy: &RecommendConfig,
    ) -> Self {
        let costs: Vec<pareto::Costs> = stats
            .iter()
            .map(|s| pareto::Costs {
                false_refusal_rate: s.false_refusal_rate.unwrap_or(0.0),
                unwanted_answer_rate: s.unwanted_answer_rate.unwrap_or(0.0),
                prompt_tokens_per_question: s.prompt_tokens_per_question,
            })
            .collect();
        // Per question, its id and class with a best score from `best`, and the score that
        // still reaches an expected source (answerable questions only) when `expected` is given.
        let scores = |best: &[Option<f64>], expected: Option<&[Option<f64>]>| {
            facts
                .questions
                .iter()
                .enumerate()
                .map(|(i, q)| separability::QuestionScores {
                    id: q.id.clone(),
                    answerable: q.answerable,
                    best_score: best.get(i).copied().flatten(),
                    max_min_score: expected
                        .filter(|_| q.answerable)
                        .and_then(|e| e.get(i).copied().flatten()),
                })
                .collect()
        };
        let questions = scores(facts.best_scores, Some(facts.expected_scores));
        let retrieval_separability = facts
            .retrieval_scores
            .iter()
            .any(Option::is_some)
            .then(|| Separability::new(scores(facts.retrieval_scores, None)));
        let (mut recommendation, certified) = recommend::recommend(settings, table, policy);
        let n = recommendation.settings;
        if n > 0 {
            let resampling = recommend::Resampling::of(policy, table);
            let settings = &settings[..n];
            recommendation.bootstrap =
                resample::bootstrap(table, settings, policy, recommendation.index, resampling);
            recommendation.cross_validation =
                resample::cross_validate(table, settings, policy, resampling);
        }
        Insight {
            retrieval_separability,
            policy: policy.clone(),
            recommendation,
            certified,
            pareto: pareto::pareto(&costs),
            separability: Separability::new(questions),
            by_retrieval: Vec::new(),
        }
    }

    /// Whether setting `i` is recommended.
    pub fn is_recommended(&self, i: usize) -> bool {
        self.recommendation.index == Some(i)
    }

    /// Whether setting `i` is certified.
    pub fn is_certified(&self, i: usize) -> bool {
        self.certified.get(i).copied().unwrap_or(false)
    }

    /// Whether setting `i` is Pareto-optimal.
    pub fn is_pareto(&self, i: usize) -> bool {
        self.pareto.get(i).copied().unwrap_or(false)
    }
}
