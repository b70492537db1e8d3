//! Resolved options: the flags and `rageval.yaml` merged into one checked value per command
//! (flags win), the way ripgrep turns its low-level arguments into high-level ones.

mod adaptive;
mod questions;
mod sweep;

pub use adaptive::AdaptivePlan;
pub use questions::Questions;
pub use sweep::SweepOptions;

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::adapters::cache::CacheMode;
use crate::app::cli::{AskArgs, GateArgs, GenerateArgs};
use crate::app::config::LoadedConfig;
use crate::app::wiring::{Pipeline, Wiring};
use crate::output::gate::github::PullRequest;
use crate::output::gate::policy::{self, Policy};
use crate::output::gate::trend::TrendPolicy;
use crate::vocab::grid::Decimal;
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

/// Everything `rageval ask` and `rageval prompt` need, checked.
pub struct AskOptions {
    pub config: LoadedConfig,
    pub question: String,
    pub k: usize,
    pub min_score: Decimal,
    pub order: crate::adapters::prompt::Order,
    pub format: crate::adapters::prompt::Format,
    /// A corpus folder given on the command line; else the first question set's.
    pub corpus: Option<PathBuf>,
    pub pipeline: Pipeline,
}

impl AskOptions {
    pub fn new(args: AskArgs, config: Option<PathBuf>) -> Result<Self> {
        let cfg = LoadedConfig::load(config.as_deref())?;
        if args.question.trim().is_empty() {
            bail!("the question is empty");
        }
        if args.k == 0 {
            bail!("invalid --k: must be at least 1");
        }
        let min_score: Decimal = args
            .min_score
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid --min-score: {e}"))?;
        let pipeline = Pipeline::from_config(
            &cfg,
            &Wiring {
                strict_refusal: args.strict_refusal,
                cache: Some(CacheMode::Use),
                ..Wiring::default()
            },
        )?;
        let order = args
            .order
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid --order: {e}"))?;
        let format = args
            .format
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid --format: {e}"))?;
        Ok(AskOptions {
            order,
            format,
            question: args.question,
            k: args.k,
            min_score,
            corpus: args.corpus,
            pipeline,
            config: cfg,
        })
    }
}

/// What `rageval generate` does with an `--out` that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Refuse to touch it.
    New,
    /// `--force`: replace it.
    Force,
    /// `--append`: add to it.
    Append,
}

/// Everything `rageval generate` needs, checked.
pub struct GenerateOptions {
    pub config: LoadedConfig,
    pub pipeline: Pipeline,
    /// The model that writes and verifies the questions.
    pub generator: std::sync::Arc<dyn crate::adapters::chat::ChatModel>,
    pub answerable: usize,
    pub unanswerable: usize,
    pub off_topic: f64,
    pub false_premise: f64,
    pub out: PathBuf,
    pub corpus: Option<PathBuf>,
    pub seed: u64,
    pub write: WriteMode,
    pub dry_run: bool,
    /// `--rejected`: where every rejected candidate is written.
    pub rejected: Option<PathBuf>,
    pub concurrency: usize,
    pub quiet: bool,
}

impl GenerateOptions {
    pub fn new(args: GenerateArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        use crate::generate::MAX_QUESTIONS;
        let cfg = LoadedConfig::load(config.as_deref())?;
        for (flag, n) in [
            ("--answerable", args.answerable),
            ("--unanswerable", args.unanswerable),
        ] {
            if n > MAX_QUESTIONS {
                bail!("invalid {flag}: at most {MAX_QUESTIONS} questions per run, got {n}");
            }
        }
        if args.answerable == 0 && args.unanswerable == 0 {
            bail!("nothing to generate: --answerable and --unanswerable are both 0");
        }
        if !(0.0..=1.0).contains(&args.off_topic) {
            bail!(
                "invalid --off-topic: must be a share from 0 to 1, got {}",
                args.off_topic
            );
        }
        if !(0.0..=1.0).contains(&args.false_premise) {
            bail!(
                "invalid --false-premise: must be a share from 0 to 1, got {}",
                args.false_premise
            );
        }
        if args.off_topic + args.false_premise > 1.0 + 1e-9 {
            bail!(
                "invalid --false-premise: with --off-topic {} the shares add up to more than 1",
                args.off_topic
            );
        }
        let concurrency = args.concurrency.unwrap_or(cfg.config.sweep.concurrency);
        if let Some(why) = crate::sweep::concurrency_problem(concurrency) {
            bail!("invalid --concurrency: {why}");
        }
        let cache = (!args.no_cache).then_some(CacheMode::Use);
        let mut pipeline = Pipeline::from_config(
            &cfg,
            &Wiring {
                cache,
                ..Wiring::default()
            },
        )?;
        let generator = pipeline.generator(&cfg)?;
        Ok(GenerateOptions {
            write: match (args.force, args.append) {
                (true, _) => WriteMode::Force,
                (_, true) => WriteMode::Append,
                _ => WriteMode::New,
            },
            answerable: args.answerable,
            unanswerable: args.unanswerable,
            off_topic: args.off_topic,
            false_premise: args.false_premise,
            out: args.out,
            corpus: args.corpus,
            seed: args.seed,
            dry_run: args.dry_run,
            rejected: args.rejected,
            concurrency,
            quiet,
            generator,
            pipeline,
            config: cfg,
        })
    }
}
