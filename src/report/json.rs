//! `results.json`: the machine-readable record that the gate and baselines read.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::{Exporter, Meta, Results};
use crate::classify::{Outcome, Refusal, Stage};
use crate::evalset::Expect;
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
struct SettingRecord<'a> {
    id: String,
    #[serde(flatten)]
    setting: &'a crate::sweep::Setting,
    #[serde(flatten)]
    stats: &'a crate::stats::SettingStats,
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
}

/// One (question, setting) run.
#[derive(Serialize)]
struct RunRecord<'a> {
    question_id: &'a str,
    setting_id: String,
    outcome: Outcome,
    refusal: Option<Refusal>,
    stage: Option<Stage>,
    best_score: Option<f64>,
    /// Chunk ids sent, in prompt order: `[n]` is the n-th.
    passages: Vec<&'a str>,
    expected_in_top_k: Option<bool>,
    expected_in_prompt: Option<bool>,
    cited: &'a [String],
    invalid_citations: &'a [u32],
    expected_cited: Option<bool>,
    answer_match: Option<bool>,
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
            settings: r
                .settings
                .iter()
                .zip(&r.stats)
                .map(|(setting, stats)| SettingRecord {
                    id: setting.id(),
                    setting,
                    stats,
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
                    best_score: r.runs.get(i).and_then(|run| run.best_score),
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
                    setting_id: r.settings[run.setting].id(),
                    outcome: run.verdict.outcome,
                    refusal: run.verdict.refusal,
                    stage: run.verdict.stage,
                    best_score: run.best_score,
                    passages: run
                        .passages
                        .iter()
                        .map(|h| r.chunk_id(run.question, h.chunk))
                        .collect(),
                    expected_in_top_k: run.verdict.expected_in_top_k,
                    expected_in_prompt: run.verdict.expected_in_prompt,
                    cited: &run.verdict.cited,
                    invalid_citations: &run.verdict.invalid_citations,
                    expected_cited: run.verdict.expected_cited,
                    answer_match: run.verdict.answer_match,
                    injected: run.verdict.injected,
                    flagged_passages: r.flagged_passages(run),
                    asked: &run.asked,
                    rewrite_note: run.rewrite_note.as_deref(),
                    answer: &run.answer,
                    model_calls: run.model_calls,
                    prompt_tokens: run.prompt_tokens,
                    completion_tokens: run.completion_tokens,
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
