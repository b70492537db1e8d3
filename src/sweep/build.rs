//! A run put together from its plan, the reply to its call and its verdict.

use std::sync::Arc;
use std::time::Duration;

use super::{PlannedRun, View};
use crate::adapters::chat::{CallError, ChatReply};
use crate::adapters::classify::{
    classify_read, Labelled, Needles, Passages, Read, Reading, Rules, Verdict,
};
use crate::adapters::evalset::Question;
use crate::adapters::judge::Judged;
use crate::adapters::search::Hit;

/// One (question, setting) run with its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub question: usize,
    pub setting: usize,
    /// The text searched and asked: the question, or its rewrite.
    pub asked: Arc<str>,
    /// Why a `model` rewrite was not used, when it was not.
    pub rewrite_note: Option<String>,
    /// The best score for the text asked, whatever minScore and k: the best rerank score when
    /// a reranker is configured, else the best retrieval score.
    pub best_score: Option<f64>,
    /// With a reranker: the best retrieval score before reranking. `None` without one.
    pub best_retrieval_score: Option<f64>,
    /// Passages sent, in prompt order (empty for an early refusal).
    pub passages: Vec<Hit>,
    /// The verdict counts use: the grader's, or a person's label of the reply where one was
    /// given (then `labelled` keeps the grader's).
    pub verdict: Verdict,
    /// When a person labelled this run's reply: what the grader said before the label
    /// replaced it, and the probability the reply was sampled with (docs/labels.md).
    pub labelled: Option<Labelled>,
    /// The reply, or the refusal sentence for an early refusal, or empty for an error.
    pub answer: Arc<str>,
    /// Model calls a production system makes for this run: the rewrite and the answer.
    pub model_calls: usize,
    /// Tokens of those calls (rewrite included).
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those the server reported reusing from its prompt cache.
    pub cached_prompt_tokens: u64,
    pub completion_tokens: u64,
    pub tokens_estimated: bool,
    /// Wall time of the call behind this run (shared by runs with the same prompt).
    pub latency: Option<Duration>,
    /// Time to the first streamed token.
    pub ttft: Option<Duration>,
    pub error: Option<CallError>,
    /// Judge calls a production system would make for this run (0 or 1) and their tokens.
    pub judge_calls: usize,
    pub judge_prompt_tokens: u64,
    pub judge_completion_tokens: u64,
    /// The answer call, an index into the sweep's call log; `None` for an early refusal.
    pub call: Option<u32>,
    /// The `model` rewrite call this run's question was asked through, an index into the log.
    pub rewrite_call: Option<u32>,
    /// The judge call that graded the reply, an index into the log.
    pub judge_call: Option<u32>,
    /// The rerank call that scored the passages of the text asked, an index into the log;
    /// `None` without a reranker.
    pub rerank_call: Option<u32>,
    /// `--repeat N`: the outcomes of repeats 1 to N-1 (this run is repeat 0); empty for N = 1.
    pub repeats: Vec<crate::sweep::repeat::Repeat>,
}

impl Run {
    /// Question `question`'s run at setting `setting`, asking `asked`, classed `verdict`, with
    /// `answer`, before anything else is known of it: no best score, no passage, no model or
    /// judge call with their tokens and times, no call in the log, no rewrite note, no repeat.
    /// The builders (a sweep's, results.json's reader) set the rest.
    pub fn new(
        question: usize,
        setting: usize,
        asked: Arc<str>,
        verdict: Verdict,
        answer: Arc<str>,
    ) -> Run {
        Run {
            question,
            setting,
            asked,
            rewrite_note: None,
            best_score: None,
            best_retrieval_score: None,
            passages: Vec::new(),
            verdict,
            labelled: None,
            answer,
            model_calls: 0,
            prompt_tokens: 0,
            cached_prompt_tokens: 0,
            completion_tokens: 0,
            tokens_estimated: false,
            latency: None,
            ttft: None,
            error: None,
            judge_calls: 0,
            judge_prompt_tokens: 0,
            judge_completion_tokens: 0,
            call: None,
            rewrite_call: None,
            judge_call: None,
            rerank_call: None,
            repeats: Vec::new(),
        }
    }
}

/// Put a run together from its plan, its verdict and its reply, with the judge's grade of the
/// reply when a judge graded it.
#[allow(clippy::too_many_arguments)]
pub fn build_run(
    planned: &PlannedRun,
    question: &Question,
    corpus: &crate::adapters::corpus::Corpus,
    view: &View,
    k: usize,
    reply: Option<&Result<ChatReply, CallError>>,
    rules: &Rules,
    judged: Option<&Judged>,
) -> Run {
    let reading = reply.map(|r| r.as_ref().ok().map(|r| Reading::of(&r.text, rules)));
    let answer = match reply {
        None => rules.refusal.as_str(),
        Some(Ok(r)) => r.text.as_str(),
        Some(Err(_)) => "",
    };
    let texts = RunTexts {
        asked: view.text.as_str().into(),
        answer: answer.into(),
    };
    let mut planned = planned.clone();
    let inputs = RunInputs {
        question,
        needles: &Needles::of(question),
        passages: &Passages::new(corpus),
        view,
        k,
    };
    let read = Read::of(reading.as_ref().map(Option::as_ref));
    build_read_run(&mut planned, &inputs, texts, reply, read, judged)
}

/// What a run is built from besides its plan and its reply.
pub struct RunInputs<'a> {
    pub question: &'a Question,
    pub needles: &'a Needles,
    /// The question's corpus, with its passages' digests shared by every run.
    pub passages: &'a Passages<'a>,
    pub view: &'a View,
    pub k: usize,
}

/// The texts a run shares with the other runs of its view and its call.
pub struct RunTexts {
    /// The text searched and asked.
    pub asked: Arc<str>,
    /// The reply, the refusal sentence for an early refusal, or empty for an error.
    pub answer: Arc<str>,
}

/// [`build_run`] from a reply already read; the plan's passages move into the run.
pub fn build_read_run(
    planned: &mut PlannedRun,
    inputs: &RunInputs<'_>,
    texts: RunTexts,
    reply: Option<&Result<ChatReply, CallError>>,
    read: Read<'_>,
    judged: Option<&Judged>,
) -> Run {
    let view = inputs.view;
    let verdict = classify_read(
        inputs.question,
        inputs.needles,
        inputs.passages,
        view.top(inputs.k),
        &planned.passages,
        read,
        judged.map(|j| &j.grade),
    );
    let mut run = Run {
        best_score: view.ranked.first().map(|h| h.score),
        best_retrieval_score: view.best_retrieval_score,
        passages: std::mem::take(&mut planned.passages),
        judge_calls: usize::from(judged.is_some()),
        judge_prompt_tokens: judged.map_or(0, |j| j.usage.prompt_tokens),
        judge_completion_tokens: judged.map_or(0, |j| j.usage.completion_tokens),
        ..Run::new(
            planned.question,
            planned.setting,
            texts.asked,
            verdict,
            texts.answer,
        )
    };
    match reply {
        None => {}
        Some(Ok(r)) => {
            run.model_calls = 1;
            run.prompt_tokens = r.usage.prompt_tokens;
            run.cached_prompt_tokens = r.usage.cached_prompt_tokens;
            run.completion_tokens = r.usage.completion_tokens;
            run.tokens_estimated = r.usage.estimated;
            run.latency = Some(r.latency);
            run.ttft = r.ttft;
        }
        Some(Err(e)) => {
            run.model_calls = 1;
            run.error = Some(e.clone());
        }
    }
    run
}
