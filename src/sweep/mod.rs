//! The sweep: plan every (question, setting) run from one retrieval per question, make one
//! model call per distinct prompt, classify every run.
//!
//! A sweep of Q questions over S settings costs Q question embeddings, Q searches (at the
//! largest k) and at most one call per distinct prompt. Because search results are sorted, a
//! setting's hits are a prefix of that one result filtered by minScore; the property test in
//! this module checks that the planned sweep equals evaluating every setting on its own.

pub mod grid;
mod plan;
mod run;

pub use grid::{Grid, Setting};
pub use plan::{Plan, PlannedRun};
pub use run::{execute, CallEvent, ProgressFn};

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::chat::{CallError, ChatModel, ChatReply};
use crate::classify::{classify, Rules, Verdict};
use crate::embed::Embedder;
use crate::evalset::Workspace;
use crate::retrieve::{Hit, Index};

/// One (question, setting) run with its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub question: usize,
    pub setting: usize,
    /// The best retrieval score for the question, whatever the setting.
    pub best_score: Option<f64>,
    /// Passages sent, in prompt order (empty for an early refusal).
    pub passages: Vec<Hit>,
    pub verdict: Verdict,
    /// The reply, or the refusal sentence for an early refusal, or empty for an error.
    pub answer: Arc<str>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub tokens_estimated: bool,
    /// Wall time of the call behind this run (shared by runs with the same prompt).
    pub latency: Option<Duration>,
    pub error: Option<CallError>,
}

/// Counters for the calls a sweep made.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CallStats {
    /// Runs that needed the model (at least one hit passed).
    pub runs_with_call: usize,
    /// Distinct prompts among them: the calls the sweep made.
    pub distinct_prompts: usize,
    /// Calls that failed after retries.
    pub failed: usize,
    /// Question embeddings computed.
    pub question_embeddings: usize,
}

/// Everything a sweep produced.
#[derive(Debug)]
pub struct Sweep {
    pub settings: Vec<Setting>,
    /// Setting-major: all questions of setting 0, then setting 1, ...
    pub runs: Vec<Run>,
    pub calls: CallStats,
    /// Per question: the best score of an expected chunk among the top k of the largest k
    /// searched, which is the highest minScore at which that source still reaches the prompt.
    /// `None` when the question names no source or none ranks that high.
    pub expected_scores: Vec<Option<f64>>,
}

/// What the sweep needs besides the question sets.
pub struct Engine {
    pub embedder: Arc<dyn Embedder>,
    pub model: Arc<dyn ChatModel>,
    pub rules: Rules,
    pub concurrency: usize,
    pub progress: Option<ProgressFn>,
}

impl Engine {
    /// Embed each corpus (one request per corpus) into a search index.
    pub async fn index(&self, ws: &Workspace) -> Result<Vec<Index>> {
        let mut indexes = Vec::with_capacity(ws.corpora.len());
        for corpus in &ws.corpora {
            indexes.push(build_index(self.embedder.as_ref(), corpus.clone()).await?);
        }
        Ok(indexes)
    }

    /// Run the whole grid.
    pub async fn sweep(&self, ws: &Workspace, grid: &Grid) -> Result<Sweep> {
        let indexes = self.index(ws).await?;
        let questions: Vec<_> = ws.questions().cloned().collect();
        let texts: Vec<String> = questions.iter().map(|q| q.question.clone()).collect();
        let vectors = self
            .embedder
            .embed(&texts)
            .await
            .context("cannot embed the questions")?;
        let ranked: Vec<Vec<Hit>> = questions
            .iter()
            .zip(&vectors)
            .map(|(q, v)| indexes[q.corpus].search(v, grid.max_k()))
            .collect();

        let expected_scores = questions
            .iter()
            .zip(&ranked)
            .map(|(q, hits)| {
                let corpus = &indexes[q.corpus].corpus;
                // Best first, so the first expected hit is the best one.
                hits.iter()
                    .find(|h| {
                        q.expect
                            .sources
                            .iter()
                            .any(|e| corpus.chunks[h.chunk].matches(e))
                    })
                    .map(|h| h.score)
            })
            .collect();

        let settings = grid.settings();
        let plan = Plan::new(
            &questions,
            &indexes,
            &ranked,
            &settings,
            &self.rules.refusal,
        );
        let replies = execute(
            self.model.clone(),
            plan.requests.clone(),
            self.concurrency,
            self.progress.clone(),
        )
        .await;

        let mut calls = CallStats {
            question_embeddings: texts.len(),
            distinct_prompts: plan.requests.len(),
            failed: replies.iter().filter(|r| r.is_err()).count(),
            ..CallStats::default()
        };
        let runs: Vec<Run> = plan
            .runs
            .iter()
            .map(|p| {
                let q = &questions[p.question];
                let corpus = &indexes[q.corpus].corpus;
                let k = settings[p.setting].k;
                let top_k = &ranked[p.question][..k.min(ranked[p.question].len())];
                let reply = p.call.map(|c| &replies[c]);
                if reply.is_some() {
                    calls.runs_with_call += 1;
                }
                build_run(p, q, corpus, &ranked[p.question], top_k, reply, &self.rules)
            })
            .collect();
        Ok(Sweep {
            settings,
            runs,
            calls,
            expected_scores,
        })
    }
}

/// Embed every chunk of `corpus` into a search index.
pub async fn build_index(embedder: &dyn Embedder, corpus: crate::corpus::Corpus) -> Result<Index> {
    let texts: Vec<String> = corpus.chunks.iter().map(|c| c.embed_text()).collect();
    let vectors = embedder
        .embed(&texts)
        .await
        .with_context(|| format!("cannot embed corpus `{}`", corpus.root.display()))?;
    Ok(Index::new(corpus, vectors))
}

/// Put a run together from its plan, its verdict and its reply.
pub fn build_run(
    planned: &PlannedRun,
    question: &crate::evalset::Question,
    corpus: &crate::corpus::Corpus,
    ranked: &[Hit],
    top_k: &[Hit],
    reply: Option<&Result<ChatReply, CallError>>,
    rules: &Rules,
) -> Run {
    let verdict = classify(question, corpus, top_k, &planned.passages, reply, rules);
    let (answer, prompt_tokens, completion_tokens, estimated, latency, error): (
        Arc<str>,
        _,
        _,
        _,
        _,
        _,
    ) = match reply {
        None => (rules.refusal.as_str().into(), 0, 0, false, None, None),
        Some(Ok(r)) => (
            r.text.as_str().into(),
            r.usage.prompt_tokens,
            r.usage.completion_tokens,
            r.usage.estimated,
            Some(r.latency),
            None,
        ),
        Some(Err(e)) => ("".into(), 0, 0, false, None, Some(e.clone())),
    };
    Run {
        question: planned.question,
        setting: planned.setting,
        best_score: ranked.first().map(|h| h.score),
        passages: planned.passages.clone(),
        verdict,
        answer,
        prompt_tokens,
        completion_tokens,
        tokens_estimated: estimated,
        latency,
        error,
    }
}

#[cfg(test)]
mod tests;
