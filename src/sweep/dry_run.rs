//! `--dry-run`: plan the whole sweep and count what it would cost, without a model call.
//!
//! Corpus and question embeddings are computed and, with a reranker, the rerank calls are made
//! (retrieval and its scores decide which prompts exist; both go through their caches, so the
//! sweep that follows reranks from the cache), and the response cache is consulted, so the count of calls to make is the count a real sweep
//! makes. `model` rewrites are not made either: their follow-ups are planned as asked, which
//! is what a rewrite that changes nothing would give.

use anyhow::Result;
use serde::Serialize;

use super::{rewrite_requests, Engine, Grid, Planning, Prepared};
use crate::adapters::chat::ChatModel;
use crate::adapters::evalset::Workspace;
use crate::adapters::rewrite::Rewrite;
use crate::vocab::call::Pricing;

/// What a sweep would do with one chat profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DryRun {
    /// The chat profile: a key of `models:`, or `default` for the `chat:` section.
    pub profile: String,
    /// The chat model's name.
    pub model: String,
    /// (question, setting) runs.
    pub runs: usize,
    /// Runs no passage reaches: refused before the model, at no cost.
    pub early_refusals: usize,
    /// Distinct prompts among the other runs: the answer calls a sweep needs (times N with
    /// `--repeat N`: each repeat is its own request). A prompt that two profiles of the same
    /// model identity share is one call, counted under the first of them.
    pub distinct_prompts: usize,
    /// Of those, prompts the response cache already answers.
    pub cached_prompts: usize,
    /// Distinct `model` rewrite calls of follow-up questions, and how many are cached (made by
    /// the `chat:` model, so counted in the first row).
    pub rewrite_calls: usize,
    pub cached_rewrites: usize,
    /// Calls the sweep would make: the uncached prompts and rewrites.
    pub calls: usize,
    /// Estimated prompt tokens of those calls (four characters a token).
    pub prompt_tokens: u64,
    /// `prompt_tokens` at the pricing's prompt price; completions are not known in advance.
    pub prompt_cost: f64,
    /// Question texts embedded to plan the prompts (the sweep's, in the first row; 0 in the
    /// others).
    pub question_embeddings: usize,
    /// With a reranker: the distinct rerank calls made to plan the prompts, the number a sweep
    /// from the same cache makes (first row; 0 in the others), and how many of them the rerank
    /// cache answered.
    pub rerank_calls: usize,
    pub cached_reranks: usize,
}

impl Engine {
    /// Plan `grid` over `ws` and count its calls, one row per chat profile of the grid; no chat
    /// call is made.
    pub async fn dry_run(
        &self,
        ws: &Workspace,
        grid: &Grid,
        pricing: &Pricing,
    ) -> Result<Vec<DryRun>> {
        let questions: Vec<_> = ws.questions().cloned().collect();
        let rewrites = if grid.rewrites().any(|r| r == Rewrite::Model) {
            rewrite_requests(&questions, self.asked_by_model(grid)).requests
        } else {
            Vec::new()
        };
        let Prepared {
            mut plan,
            question_embeddings,
            planning: Planning { settings, .. },
            slots,
            reranks,
            ..
        } = self.prepare(ws, grid, |_| None, None).await?;
        let cached_reranks = reranks.values().filter(|c| c.cached).count();
        // Each distinct request is counted under the first profile whose runs need it.
        let row_of = |s: usize| grid.chats().position(|c| c == settings[s].chat);
        let mut owner: Vec<Option<usize>> = vec![None; plan.requests.len()];
        for run in &plan.runs {
            if let (Some(c), Some(row)) = (run.call, row_of(run.setting)) {
                owner[c] = Some(owner[c].map_or(row, |o| o.min(row)));
            }
        }
        let distinct = plan.requests.len();
        // `--repeat N`: each repeat is its own request (its own seed and cache entry).
        plan.requests = crate::sweep::repeat::requests(plan.requests, self.repeat);
        let uncached = |requests: &[crate::adapters::chat::ChatRequest]| -> Vec<usize> {
            (0..requests.len())
                .filter(|&i| !slots.is_cached(&requests[i]))
                .collect()
        };
        let to_make = uncached(&plan.requests);
        let rewrites_to_make = uncached(&rewrites);
        let rewrite_tokens: u64 = rewrites_to_make
            .iter()
            .map(|&i| rewrites[i].estimated_prompt_tokens())
            .sum();
        let rows = grid
            .chats()
            .enumerate()
            .map(|(row, profile)| {
                let first = row == 0;
                let mine = |i: &usize| owner[*i % distinct.max(1)] == Some(row);
                let runs: Vec<_> = plan
                    .runs
                    .iter()
                    .filter(|r| row_of(r.setting) == Some(row))
                    .collect();
                let requests = (0..plan.requests.len()).filter(mine).count();
                let making: Vec<usize> = to_make.iter().copied().filter(mine).collect();
                let prompt_tokens: u64 = making
                    .iter()
                    .map(|&i| plan.requests[i].estimated_prompt_tokens())
                    .sum::<u64>()
                    + if first { rewrite_tokens } else { 0 };
                let (rewrite_calls, rewrites_made) = if first {
                    (rewrites.len(), rewrites_to_make.len())
                } else {
                    (0, 0)
                };
                let model = settings
                    .iter()
                    .zip(slots.of_settings(&settings).unwrap_or_default())
                    .find(|(s, _)| s.chat == *profile)
                    .map_or_else(|| self.model.model(), |(_, slot)| slots.model(slot).model());
                DryRun {
                    profile: profile.to_string(),
                    model,
                    runs: runs.len(),
                    early_refusals: runs.iter().filter(|r| r.call.is_none()).count(),
                    distinct_prompts: requests,
                    cached_prompts: requests - making.len(),
                    rewrite_calls,
                    cached_rewrites: rewrite_calls - rewrites_made,
                    calls: making.len() + rewrites_made,
                    prompt_tokens,
                    prompt_cost: prompt_tokens as f64 * pricing.prompt_per_million / 1e6,
                    question_embeddings: if first { question_embeddings } else { 0 },
                    rerank_calls: if first { reranks.len() } else { 0 },
                    cached_reranks: if first { cached_reranks } else { 0 },
                }
            })
            .collect();
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::grid::parse_min_scores;

    #[tokio::test]
    async fn counts_equal_what_the_sweep_then_does() {
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("evalsets/club.yaml");
        let ws = Workspace::load(&[sample]).unwrap();
        let engine = crate::sweep::tests::engine();
        let grid = Grid::new(parse_min_scores("0.1..0.5").unwrap(), vec![1, 2, 4]);
        let pricing = Pricing {
            prompt_per_million: 2.0,
            completion_per_million: 0.0,
            ..Pricing::default()
        };
        let dry = engine.dry_run(&ws, &grid, &pricing).await.unwrap();
        let [dry] = &dry[..] else {
            panic!("one row per chat profile: {dry:?}")
        };
        let sweep = engine.sweep(&ws, &grid).await.unwrap();
        assert_eq!(dry.runs, sweep.runs.len());
        assert_eq!(
            dry.early_refusals,
            sweep.runs.iter().filter(|r| r.call.is_none()).count()
        );
        assert_eq!(dry.distinct_prompts, sweep.calls.distinct_prompts);
        assert_eq!((dry.cached_prompts, dry.calls), (0, dry.distinct_prompts));
        assert_eq!(dry.prompt_cost, dry.prompt_tokens as f64 * 2.0 / 1e6);
        assert!(dry.prompt_tokens > 0);
    }

    /// A follow-up's `model` rewrite is made only while some setting that asks it runs the
    /// question: once every such setting is dropped before it, neither the sweep nor the
    /// dry run makes it.
    #[tokio::test]
    async fn a_rewrite_only_dropped_settings_would_ask_is_not_made() {
        use crate::vocab::dim::Dim;
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("evalsets/club.yaml");
        let ws = Workspace::load(&[sample]).unwrap();
        let follow_up = ws.questions().position(|q| !q.history.is_empty()).unwrap();
        let grid = Grid::new(parse_min_scores("0.1").unwrap(), vec![2])
            .with(Dim::Rewrite, [Rewrite::None, Rewrite::Model]);
        let full = crate::sweep::tests::engine();
        let mut coverage = crate::sweep::Coverage::all();
        coverage.restrict(
            1,
            (0..ws.questions().count()).map(|q| q < follow_up).collect(),
        );
        let dropped = Engine {
            coverage,
            ..full.clone()
        };
        let pricing = Pricing::default();
        for (engine, calls) in [(&full, 1), (&dropped, 0)] {
            let dry = engine.dry_run(&ws, &grid, &pricing).await.unwrap();
            let sweep = engine.sweep(&ws, &grid).await.unwrap();
            assert_eq!(
                (dry[0].rewrite_calls, sweep.calls.rewrite_calls),
                (calls, calls)
            );
        }
    }

    /// With settings dropped, the engine plans and calls nothing for their later questions,
    /// the other runs are the full sweep's, each kept prompt is one call, and the dry run
    /// counts what the sweep then does.
    #[tokio::test]
    async fn dropped_pairs_are_neither_planned_nor_called_nor_counted() {
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("evalsets/club.yaml");
        let ws = Workspace::load(&[sample]).unwrap();
        let grid = Grid::new(parse_min_scores("0.1..0.5").unwrap(), vec![1, 2, 4]);
        let n = ws.questions().count();
        let full = crate::sweep::tests::engine();
        let mut coverage = crate::sweep::Coverage::all();
        // The two lowest minScores at k 4 send the most prompts: dropped after a third and
        // after half of the questions.
        coverage.restrict(2, (0..n).map(|q| q < n / 3).collect());
        coverage.restrict(5, (0..n).map(|q| q % 2 == 0).collect());
        let engine = Engine {
            coverage: coverage.clone(),
            ..full.clone()
        };
        let (all, some) = (
            full.sweep(&ws, &grid).await.unwrap(),
            engine.sweep(&ws, &grid).await.unwrap(),
        );
        let key = |r: &crate::sweep::Run| {
            (
                r.question,
                r.setting,
                r.verdict.clone(),
                r.passages.clone(),
                r.answer.clone(),
            )
        };
        let kept: Vec<_> = all
            .runs
            .iter()
            .filter(|r| coverage.runs(r.setting, r.question))
            .collect();
        assert!(kept.len() < all.runs.len());
        assert_eq!(
            some.runs.iter().map(key).collect::<Vec<_>>(),
            kept.iter().map(|r| key(r)).collect::<Vec<_>>()
        );
        assert_eq!(some.runs_of(2).len(), n / 3);
        // One call per distinct prompt the kept runs send, and no other.
        let digest =
            |s: &crate::sweep::Sweep, c: u32| s.call_log.get_index(c as usize).unwrap().0.clone();
        let wanted: std::collections::HashSet<String> = kept
            .iter()
            .filter_map(|r| r.call)
            .map(|c| digest(&all, c))
            .collect();
        assert!(wanted.len() < all.calls.distinct_prompts);
        assert_eq!(some.calls.distinct_prompts, wanted.len());
        let made: std::collections::HashSet<String> = some
            .runs
            .iter()
            .filter_map(|r| r.call)
            .map(|c| digest(&some, c))
            .collect();
        assert_eq!(made, wanted);
        let dry = engine
            .dry_run(&ws, &grid, &Pricing::default())
            .await
            .unwrap();
        assert_eq!(
            (dry[0].runs, dry[0].distinct_prompts),
            (some.runs.len(), some.calls.distinct_prompts)
        );
    }
}
