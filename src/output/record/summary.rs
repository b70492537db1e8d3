//! The derived part of results.json: per-setting statistics, the recommendation and score
//! separability, as the reports show them. Written for readers; never read back (the reader
//! recomputes it from the record).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::insight::{Recommendation, RetrievalInsight, Separability};
use crate::analysis::stats::SettingStats;
use crate::output::explain::Explain;
use crate::results::Results;
use crate::sweep::CallStats;

/// Everything derived from the record.
// results.json's `summary`, named `Summary` in its schema; the reports render another thing,
// `output::report::Summary`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "Summary")]
pub struct Derived {
    /// Counters of the calls the sweep made.
    pub calls: CallStats,
    /// The recommended setting's id, certified or not (see `recommendation.certified`), or
    /// null when no setting meets the policy's limits on the measured rates.
    pub recommended: Option<String>,
    pub recommendation: RecommendationSummary,
    /// The policy the recommendation followed (`recommend` in rageval.yaml).
    #[schemars(with = "serde_json::Value")]
    pub policy: RecommendConfig,
    pub separability: Separability,
    /// With a reranker (`separability` then measures the best rerank score): the separability
    /// of the best retrieval score before reranking. Absent without a reranker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrieval_separability: Option<Separability>,
    /// With more than one retrieval variant (`--embedder`, `--chunk-tokens`): per variant, the
    /// recommendation among its settings and its separability; absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_retrieval: Vec<RetrievalInsight<RecommendationSummary>>,
    /// Per setting id, in grid order.
    pub settings: IndexMap<String, SettingSummary>,
    /// Chunks the scan flags that reached at least one prompt.
    pub flagged_in_prompts: Vec<FlaggedSummary>,
    /// `--repeat N` (N > 1): per question id, its flip rate over every setting (repeats whose
    /// outcome differs from the question's most frequent one at their setting, over all its
    /// repeats); absent without repeats.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub flip_rates: IndexMap<String, f64>,
    /// With labels (docs/labels.md): the grader's confusion matrices against them, over the
    /// distinct labelled replies, with 95% Wilson intervals; absent without labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grader: Option<crate::results::grader::GraderError>,
    /// The grader's checks on its own grades: prefix refusals, judge grades set aside and how
    /// the judge agrees with `answer_match`, replies that copy the prompt, and the warnings.
    pub grader_checks: crate::analysis::checks::GraderChecks,
}

/// The recommendation as results.json records it: the facts insight returned (the contract)
/// and, for readers who want the line, the sentences the reports print, written from those
/// facts by `output::explain`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RecommendationSummary {
    #[serde(flatten)]
    pub facts: Recommendation,
    /// The line printed under the table, written from the facts: the choice and the reason,
    /// or why there is none.
    pub reason: String,
    /// The procedure in words, written from `procedure` and `settings`.
    pub method: String,
    /// When not certified: what certification would take, one line written from `bounds`
    /// (and the closest setting's token misses). Omitted when certified or with certification
    /// off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed: Option<String>,
}

impl RecommendationSummary {
    fn of(r: &Results, rec: &Recommendation) -> Self {
        let explained = Explain::variant(r, rec);
        RecommendationSummary {
            facts: rec.clone(),
            reason: explained.reason(),
            method: explained.method(),
            needed: explained.needed(),
        }
    }
}

/// One setting's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SettingSummary {
    #[serde(flatten)]
    pub stats: SettingStats,
    /// No other setting has fewer false refusals, unwanted answers and prompt tokens at once.
    pub pareto: bool,
    pub recommended: bool,
    /// Every rate limit of the policy holds at `recommend.confidence` for the whole grid at
    /// once (always false with confidence 0).
    pub certified: bool,
    /// Runs whose prompt held a chunk the scan flags.
    pub flagged_in_prompt_runs: usize,
    /// Every rate by tag (a question counts under each of its tags; with generated questions,
    /// `generated` and `reviewed` are tags too), tags in name order; absent when no question
    /// carries a tag.
    #[serde(skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub tags: crate::analysis::tags::ByTag,
}

/// A flagged chunk that reached a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FlaggedSummary {
    pub chunk: String,
    /// The pattern that matched.
    pub pattern: String,
    /// Runs whose prompt held it.
    pub runs: usize,
}

impl Derived {
    pub fn of(r: &Results) -> Derived {
        Derived {
            calls: r.calls.clone(),
            recommended: r.insight.recommendation.setting.clone(),
            recommendation: RecommendationSummary::of(r, &r.insight.recommendation),
            policy: r.insight.policy.clone(),
            separability: r.insight.separability.clone(),
            retrieval_separability: r.insight.retrieval_separability.clone(),
            by_retrieval: r
                .insight
                .by_retrieval
                .iter()
                .map(|v| v.giving(|rec| RecommendationSummary::of(r, rec)))
                .collect(),
            settings: r
                .stats
                .iter()
                .enumerate()
                .map(|(i, stats)| {
                    let summary = SettingSummary {
                        stats: stats.clone(),
                        pareto: r.insight.is_pareto(i),
                        recommended: r.insight.is_recommended(i),
                        certified: r.insight.is_certified(i),
                        flagged_in_prompt_runs: r.flagged_runs(i),
                        tags: r.by_tag(i).clone(),
                    };
                    (r.setting_id(i).to_string(), summary)
                })
                .collect(),
            flagged_in_prompts: r
                .flagged_in_prompts()
                .into_iter()
                .map(|(chunk, pattern, runs)| FlaggedSummary {
                    chunk: chunk.into(),
                    pattern: pattern.into(),
                    runs,
                })
                .collect(),
            flip_rates: crate::analysis::repeat::question_flip_rates(&r.runs, r.questions.len())
                .into_iter()
                .zip(&r.questions)
                .map(|(rate, q)| (q.id.clone(), rate))
                .collect(),
            grader: r.grader_error(),
            grader_checks: r.grader_checks(),
        }
    }
}
