//! `--dry-run`: plan the whole sweep and count what it would cost, without a model call.
//!
//! Corpus and question embeddings are computed (retrieval decides which prompts exist), and
//! the response cache is consulted, so the count of calls to make is the count a real sweep
//! makes. `model` rewrites are not made either: their follow-ups are planned as asked, which
//! is what a rewrite that changes nothing would give.

use anyhow::Result;
use serde::Serialize;

use super::{rewrite_requests, Engine, Grid, Prepared};
use crate::chat::estimate_prompt_tokens;
use crate::evalset::Workspace;
use crate::rewrite::Rewrite;
use crate::stats::Pricing;

/// What a sweep would do with one chat model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DryRun {
    /// The chat model's name.
    pub model: String,
    /// (question, setting) runs.
    pub runs: usize,
    /// Runs no passage reaches: refused before the model, at no cost.
    pub early_refusals: usize,
    /// Distinct prompts among the other runs: the answer calls a sweep needs.
    pub distinct_prompts: usize,
    /// Of those, prompts the response cache already answers.
    pub cached_prompts: usize,
    /// Distinct `model` rewrite calls of follow-up questions, and how many are cached.
    pub rewrite_calls: usize,
    pub cached_rewrites: usize,
    /// Calls the sweep would make: the uncached prompts and rewrites.
    pub calls: usize,
    /// Estimated prompt tokens of those calls (four characters a token).
    pub prompt_tokens: u64,
    /// `prompt_tokens` at the pricing's prompt price; completions are not known in advance.
    pub prompt_cost: f64,
    /// Question texts embedded to plan the prompts.
    pub question_embeddings: usize,
}

impl Engine {
    /// Plan `grid` over `ws` and count its calls; no chat call is made.
    pub async fn dry_run(&self, ws: &Workspace, grid: &Grid, pricing: &Pricing) -> Result<DryRun> {
        let questions: Vec<_> = ws.questions().cloned().collect();
        let rewrites = if grid.rewrites.contains(&Rewrite::Model) {
            rewrite_requests(&questions).requests
        } else {
            Vec::new()
        };
        let Prepared {
            plan,
            question_embeddings,
            ..
        } = self.prepare(ws, grid, |_| None).await?;
        let uncached = |requests: &[crate::chat::ChatRequest]| -> Vec<usize> {
            (0..requests.len())
                .filter(|&i| !self.model.is_cached(&requests[i]))
                .collect()
        };
        let to_make = uncached(&plan.requests);
        let rewrites_to_make = uncached(&rewrites);
        let prompt_tokens: u64 = to_make
            .iter()
            .map(|&i| estimate_prompt_tokens(&plan.requests[i].messages))
            .chain(
                rewrites_to_make
                    .iter()
                    .map(|&i| estimate_prompt_tokens(&rewrites[i].messages)),
            )
            .sum();
        Ok(DryRun {
            model: self.model.model(),
            runs: plan.runs.len(),
            early_refusals: plan.runs.iter().filter(|r| r.call.is_none()).count(),
            distinct_prompts: plan.requests.len(),
            cached_prompts: plan.requests.len() - to_make.len(),
            rewrite_calls: rewrites.len(),
            cached_rewrites: rewrites.len() - rewrites_to_make.len(),
            calls: to_make.len() + rewrites_to_make.len(),
            prompt_tokens,
            prompt_cost: prompt_tokens as f64 * pricing.prompt_per_million / 1e6,
            question_embeddings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::grid::parse_min_scores;

    #[tokio::test]
    async fn counts_equal_what_the_sweep_then_does() {
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("evalsets/club.yaml");
        let ws = Workspace::load(&[sample]).unwrap();
        let engine = crate::sweep::tests::engine();
        let grid = Grid::new(parse_min_scores("0.1..0.5").unwrap(), vec![1, 2, 4]);
        let pricing = Pricing {
            prompt_per_million: 2.0,
            completion_per_million: 0.0,
        };
        let dry = engine.dry_run(&ws, &grid, &pricing).await.unwrap();
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
}
