//! Resolved options: the flags and `rageval.yaml` merged into one checked value per command
//! (flags win), the way ripgrep turns its low-level arguments into high-level ones.

mod adaptive;
mod ask;
mod batching;
mod commands;
mod generate;
mod questions;
mod sweep;

pub use adaptive::AdaptivePlan;
pub use ask::AskOptions;
pub use commands::{
    BatchImportOptions, Connect, CorpusSource, HistoryOptions, IndexOptions, LabelOptions,
    ScanOptions, ValidateOptions,
};
pub use generate::{GenerateOptions, WriteMode};
pub use questions::Questions;
pub use sweep::SweepOptions;

use std::path::PathBuf;

use anyhow::Result;

use crate::app::cli::GateArgs;
use crate::app::config::LoadedConfig;
use crate::output::gate::github::PullRequest;
use crate::output::gate::policy::{self, Policy};
use crate::output::gate::trend::TrendPolicy;
use crate::vocab::limit::{Limits, Scope};

/// Where the gate's summary for people goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateSummaryTo {
    Stdout,
    Stderr,
    Nowhere,
}

/// Everything `rageval gate` needs, checked.
#[derive(Debug, Clone)]
pub struct GateOptions {
    pub results: PathBuf,
    /// The gated setting came from `--setting`, not from `gate.setting` (for messages).
    pub setting_from_flag: bool,
    pub policy: Policy,
    pub update_baseline: bool,
    pub junit: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    /// `$GITHUB_STEP_SUMMARY`: a file the Markdown is appended to.
    pub step_summary: Option<PathBuf>,
    pub summary: GateSummaryTo,
    /// `--comment`: the pull request to comment on, or why there is none.
    pub comment: Option<Result<PullRequest, String>>,
    /// `--benchmark-json FILE` and `--openmetrics FILE`.
    pub benchmark_json: Option<PathBuf>,
    pub openmetrics: Option<PathBuf>,
    /// `--labels` (else `recommend.labels`): labels applied to the results before the gate
    /// counts; `None` for the gate of a sweep, whose results hold its labels already.
    pub labels: Option<PathBuf>,
}

impl GateOptions {
    /// `rageval gate [RESULTS]`: RESULTS defaults to the last sweep's results.json.
    pub fn from_command(
        args: GateArgs,
        results: Option<PathBuf>,
        labels: Option<PathBuf>,
        config: Option<PathBuf>,
        quiet: bool,
    ) -> Result<Self> {
        let cfg = LoadedConfig::load(config.as_deref())?;
        let results = results.unwrap_or_else(|| cfg.out_dir().join("results.json"));
        let summary = if quiet {
            GateSummaryTo::Nowhere
        } else {
            GateSummaryTo::Stdout
        };
        let labels =
            labels.or_else(|| cfg.config.recommend.labels.as_ref().map(|l| cfg.resolve(l)));
        Ok(GateOptions {
            labels,
            ..GateOptions::new(args, results, &cfg, summary)?
        })
    }

    /// The `gate:` section of the config with the flags on top.
    pub fn new(
        args: GateArgs,
        results: PathBuf,
        cfg: &LoadedConfig,
        summary: GateSummaryTo,
    ) -> Result<Self> {
        let g = &cfg.config.gate;
        let flag = |name: &str, v: Option<f64>, check: policy::Validator| {
            v.map(check)
                .transpose()
                .map_err(|e| anyhow::anyhow!("invalid --{name}: {e}"))
        };
        let setting = match args.setting.as_deref().or(g.setting.as_deref()) {
            None => None,
            Some(text) => Some(
                text.parse()
                    .map_err(|e| anyhow::anyhow!("invalid --setting: {e}"))?,
            ),
        };
        // Each limit: its flag, checked, else the config's value.
        let config_limits = g.limits();
        let mut limits = Limits::default();
        for (limit, value) in args.limit_flags() {
            let checked = value
                .map(|v| limit.check(Scope::Gate, v))
                .transpose()
                .map_err(|e| anyhow::anyhow!("invalid {}: {e}", limit.flag()))?;
            limits.set(limit, checked.or(config_limits.get(limit)));
        }
        let policy = Policy {
            setting,
            baseline: args
                .baseline
                .or_else(|| g.baseline.as_ref().map(|b| cfg.resolve(b))),
            limits,
            tolerance: flag("tolerance", args.tolerance, policy::check_share)?
                .unwrap_or(g.tolerance),
            alpha: flag("alpha", args.alpha, policy::check_alpha)?.unwrap_or(g.alpha),
            require_significance: args.require_significance.unwrap_or(g.require_significance),
            require_certified: args.require_certified.unwrap_or(g.require_certified),
            tags: g.tag_limits(),
            trend: trend_policy(args.trend, cfg)?,
        };
        Ok(GateOptions {
            setting_from_flag: args.setting.is_some(),
            results,
            policy,
            update_baseline: args.update_baseline,
            junit: args.junit,
            markdown: args.markdown,
            step_summary: std::env::var_os("GITHUB_STEP_SUMMARY")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            summary,
            comment: args
                .comment
                .then(|| PullRequest::from_env(|name| std::env::var(name).ok())),
            benchmark_json: args.benchmark_json,
            openmetrics: args.openmetrics,
            labels: None,
        })
    }
}

/// The trend alarm: `--trend N` over `gate.trend.runs`, the rest from `gate.trend`, the
/// history where sweeps append (`history.file`); `None` when off.
fn trend_policy(flag: Option<usize>, cfg: &LoadedConfig) -> Result<Option<TrendPolicy>> {
    let t = &cfg.config.gate.trend;
    let runs = match flag {
        Some(n) => crate::output::gate::config::check_runs(n)
            .map_err(|e| anyhow::anyhow!("invalid --trend: {e}"))?,
        None => t.runs,
    };
    Ok((runs > 0).then(|| TrendPolicy {
        runs,
        alpha: t.alpha,
        same: t.same.clone(),
        rates: t.rates.clone(),
        history: cfg.history_file(),
    }))
}
