//! `results.json`: the machine-readable record that the gate and baselines read.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::{Exporter, Meta, Results};
use crate::classify::{Outcome, Refusal, Stage};
use crate::config::RecommendConfig;
use crate::evalset::Expect;
use crate::insight::{Recommendation, Separability};
use crate::prompt::RefusalTier;
use crate::sweep::CallStats;

/// The schema of results.json; a reader refuses another major version.
pub const SCHEMA: &str = "rageval.results/1";

pub struct JsonResults;

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    #[serde(flatten)]
    meta: &'a Meta,
    /// Names of the setting dimensions, in column order.
    dimensions: &'static [&'static str],
    calls: &'a CallStats,
    /// The recommended setting's id, or null when no setting meets the policy's limits.
    recommended: Option<&'a str>,
    recommendation: RecommendationRecord<'a>,
    separability: &'a Separability,
    settings: Vec<SettingRecord<'a>>,
    questions: Vec<QuestionRecord<'a>>,
    /// Chunks the scan flags that reached at least one prompt.
    flagged_in_prompts: Vec<FlaggedRecord<'a>>,
    runs: Vec<RunRecord<'a>>,
}

#[derive(Serialize)]
struct FlaggedRecord<'a> {
    chunk: &'a str,
    /// The pattern that matched.
    pattern: &'a str,
    /// Runs whose prompt held it.
    runs: usize,
}

#[derive(Serialize)]
struct RecommendationRecord<'a> {
    #[serde(flatten)]
    recommendation: &'a Recommendation,
    /// The policy it followed.
    policy: &'a RecommendConfig,
}

#[derive(Serialize)]
struct SettingRecord<'a> {
    id: &'a str,
    #[serde(flatten)]
    setting: &'a crate::sweep::Setting,
    #[serde(flatten)]
    stats: &'a crate::stats::SettingStats,
    /// No other setting has fewer false refusals, unwanted answers and prompt tokens at once.
    pareto: bool,
    recommended: bool,
    /// Runs whose prompt held a chunk the scan flags.
    flagged_in_prompt_runs: usize,
}

#[derive(Serialize)]
struct QuestionRecord<'a> {
    id: &'a str,
    question: &'a str,
    answerable: bool,
    tags: &'a [String],
    expect: &'a Expect,
    /// The best retrieval score, whatever the setting.
    best_score: Option<f64>,
    /// Answerable questions: the highest minScore at which an expected source still reaches
    /// the prompt (null when it is not within the largest k searched).
    max_min_score: Option<f64>,
}

/// One (question, setting) run.
#[derive(Serialize)]
struct RunRecord<'a> {
    question_id: &'a str,
    setting_id: &'a str,
    outcome: Outcome,
    refusal: Option<Refusal>,
    /// The tier that recognised the refusal; null when the run is not a refusal.
    refusal_match: Option<RefusalTier>,
    stage: Option<Stage>,
    best_score: Option<f64>,
    /// Chunk ids sent, in prompt order: `[n]` is the n-th.
    passages: Vec<&'a str>,
    expected_in_top_k: Option<bool>,
    expected_in_prompt: Option<bool>,
    expected_rank: Option<usize>,
    expected_recall: Option<f64>,
    cited: &'a [String],
    invalid_citations: &'a [u32],
    expected_cited: Option<bool>,
    answer_match: Option<bool>,
    /// An answer to an answerable question that the judge marked incorrect or (ungraded) that
    /// holds no expected answer text.
    wrong_answer: Option<bool>,
    /// The judge's grade; null when no judge graded the reply.
    judge_refused: Option<bool>,
    judge_correct: Option<bool>,
    judge_supported: Option<bool>,
    judge_error: Option<&'a str>,
    injected: Option<bool>,
    /// Passages sent that the scan flags as suspicious.
    flagged_passages: Vec<&'a str>,
    /// The text searched and asked: the question or its rewrite.
    asked: &'a str,
    rewrite_note: Option<&'a str>,
    answer: &'a str,
    model_calls: usize,
    prompt_tokens: u64,
    completion_tokens: u64,
    judge_prompt_tokens: u64,
    judge_completion_tokens: u64,
    latency_ms: Option<f64>,
    ttft_ms: Option<f64>,
    error: Option<&'a crate::chat::CallError>,
}

impl Exporter for JsonResults {
    fn file_name(&self) -> &'static str {
        "results.json"
    }

    fn write(&self, r: &Results, out: &mut dyn Write) -> Result<()> {
        let doc = Document {
            schema: SCHEMA,
            meta: &r.meta,
            dimensions: crate::sweep::Setting::COLUMNS,
            calls: &r.calls,
            recommended: r.insight.recommendation.setting.as_deref(),
            recommendation: RecommendationRecord {
                recommendation: &r.insight.recommendation,
                policy: &r.insight.policy,
            },
            separability: &r.insight.separability,
            settings: r
                .settings
                .iter()
                .zip(&r.stats)
                .enumerate()
                .map(|(i, (setting, stats))| SettingRecord {
                    id: r.setting_id(i),
                    setting,
                    stats,
                    pareto: r.insight.is_pareto(i),
                    recommended: r.insight.is_recommended(i),
                    flagged_in_prompt_runs: r.flagged_runs(i),
                })
                .collect(),
            questions: r
                .questions
                .iter()
                .enumerate()
                .map(|(i, q)| QuestionRecord {
                    id: &q.id,
                    question: &q.question,
                    answerable: q.answerable,
                    tags: &q.tags,
                    expect: &q.expect,
                    best_score: r.best_score(i),
                    max_min_score: r
                        .insight
                        .separability
                        .questions
                        .get(i)
                        .and_then(|q| q.max_min_score),
                })
                .collect(),
            flagged_in_prompts: r
                .flagged_in_prompts()
                .into_iter()
                .map(|(chunk, pattern, runs)| FlaggedRecord {
                    chunk,
                    pattern,
                    runs,
                })
                .collect(),
            runs: r
                .runs
                .iter()
                .map(|run| RunRecord {
                    question_id: &r.questions[run.question].id,
                    setting_id: r.setting_id(run.setting),
                    outcome: run.verdict.outcome,
                    refusal: run.verdict.refusal,
                    refusal_match: run.verdict.refusal_match,
                    stage: run.verdict.stage,
                    best_score: run.best_score,
                    passages: run
                        .passages
                        .iter()
                        .map(|h| r.chunk_id(run.question, h.chunk))
                        .collect(),
                    expected_in_top_k: run.verdict.expected_in_top_k,
                    expected_in_prompt: run.verdict.expected_in_prompt,
                    expected_rank: run.verdict.expected_rank,
                    expected_recall: run.verdict.expected_recall,
                    cited: &run.verdict.cited,
                    invalid_citations: &run.verdict.invalid_citations,
                    expected_cited: run.verdict.expected_cited,
                    answer_match: run.verdict.answer_match,
                    wrong_answer: run.verdict.wrong_answer,
                    judge_refused: run.verdict.judge_refused,
                    judge_correct: run.verdict.judge_correct,
                    judge_supported: run.verdict.judge_supported,
                    judge_error: run.verdict.judge_error.as_deref(),
                    injected: run.verdict.injected,
                    flagged_passages: r.flagged_passages(run),
                    asked: &run.asked,
                    rewrite_note: run.rewrite_note.as_deref(),
                    answer: &run.answer,
                    model_calls: run.model_calls,
                    prompt_tokens: run.prompt_tokens,
                    completion_tokens: run.completion_tokens,
                    judge_prompt_tokens: run.judge_prompt_tokens,
                    judge_completion_tokens: run.judge_completion_tokens,
                    latency_ms: run.latency.map(|l| l.as_secs_f64() * 1000.0),
                    ttft_ms: run.ttft.map(|l| l.as_secs_f64() * 1000.0),
                    error: run.error.as_ref(),
                })
                .collect(),
        };
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        out.write_all(b"\n")?;
        Ok(())
    }
}
