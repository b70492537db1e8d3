//! `sweep --until-certified`'s plan: the flags of an adaptive sweep, checked against the
//! policy they need (anytime-valid tests) before any question is asked.

use anyhow::{bail, Result};

use crate::app::cli::AdaptiveArgs;
use crate::app::config::RecommendConfig;

/// How an adaptive sweep takes its questions and when it must stop for its budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptivePlan {
    /// Seed of the order the questions of each class are taken in.
    pub seed: u64,
    /// Questions of each class per round; `None`: 10% of the smaller class, at least 10.
    pub step: Option<usize>,
    /// The most model calls the sweep may make.
    pub max_calls: Option<u64>,
    /// The most estimated prompt cost the sweep may spend.
    pub max_cost: Option<f64>,
}

/// The smallest default round.
pub const MIN_STEP: usize = 10;

impl AdaptivePlan {
    /// The plan of `--until-certified` and its flags, or `None` without it (its flags alone
    /// are an error). A batch engine is refused by the command, which knows every section's.
    pub fn resolve(args: &AdaptiveArgs, policy: &RecommendConfig) -> Result<Option<AdaptivePlan>> {
        if !args.until_certified {
            let given = args.given();
            if !given.is_empty() {
                let verb = if given.len() == 1 { "applies" } else { "apply" };
                bail!("{} {verb} only with `--until-certified`", given.join(", "));
            }
            return Ok(None);
        }
        if !policy.sequential {
            bail!("`--until-certified` stops the first time the recommendation is certified, which keeps its confidence only with tests valid at every number of questions: add `--sequential` (or set `recommend.sequential: true`)");
        }
        if policy.confidence <= 0.0 {
            bail!("`--until-certified` needs certification, and `recommend.confidence: 0` certifies nothing: set a confidence such as 0.95");
        }
        if args.step == Some(0) {
            bail!("invalid --step: must be at least 1 question of each class per round, got 0");
        }
        if args.max_calls == Some(0) {
            bail!("invalid --max-calls: must be at least 1 model call, got 0");
        }
        if let Some(cost) = args.max_cost {
            if !(cost.is_finite() && cost > 0.0) {
                bail!("invalid --max-cost: must be an amount above 0, got {cost}");
            }
        }
        Ok(Some(AdaptivePlan {
            seed: args.seed.unwrap_or(0),
            step: args.step,
            max_calls: args.max_calls,
            max_cost: args.max_cost,
        }))
    }

    /// Questions of each class per round for classes of `sizes` questions (an empty class
    /// does not count).
    pub fn step_for(&self, sizes: [usize; 2]) -> usize {
        self.step.unwrap_or_else(|| {
            let smaller = sizes.into_iter().filter(|&n| n > 0).min().unwrap_or(0);
            smaller.div_ceil(10).max(MIN_STEP)
        })
    }
}
