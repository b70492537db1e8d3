//! Resolved options: the flags and `rageval.yaml` merged into one checked value per command
//! (flags win), the way ripgrep turns its low-level arguments into high-level ones.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::adapters::cache::CacheMode;
use crate::app::cli::{AskArgs, GateArgs, GenerateArgs, OutputFormat, SweepArgs};
use crate::app::config::identity::Chosen;
use crate::app::config::{ChatConfig, JudgeConfig, LoadedConfig, RecommendConfig, RetrieverConfig};
use crate::app::wiring::profiles::chat_profile;
use crate::base::error::InputError;
use crate::output::gate::policy::{self, Policy};
use crate::results::identity::RunIdentity;
use crate::vocab::dim::Dim;
use crate::vocab::grid::{Decimal, Grid, DEFAULT_PROFILE};
use crate::vocab::limit::{Limits, Scope};

use crate::app::wiring::{Pipeline, Wiring};

/// Everything `rageval sweep` needs, resolved once from the flags and the loaded config (flags
/// win) and read-only after: the plan of the sweep. The config is never written; what a
/// command needs of it is asked of the plan (ripgrep's `HiArgs::from_low_args`).
pub struct SweepOptions {
    evalsets: Vec<PathBuf>,
    grid: Grid,
    out: PathBuf,
    pipeline: Pipeline,
    concurrency: usize,
    output: OutputFormat,
    quiet: bool,
    wide: bool,
    allow_errors: bool,
    gate: Option<GateOptions>,
    identity: RunIdentity,
    max_runs: u64,
    dry_run: bool,
    batch_out: Option<PathBuf>,
    batch: bool,
    shard: Option<crate::sweep::Shard>,
    only: Option<crate::app::cli::Only>,
    repeat: u32,
    folds_from: &'static str,
    /// The sections of the config the commands read, as loaded: the retriever's, the judge's,
    /// `chat:` (as `default`) and each swept chat profile's.
    retriever: RetrieverConfig,
    judge: Option<JudgeConfig>,
    chats: Vec<(String, ChatConfig)>,
    max_chunk_tokens: usize,
    /// `recommend:` with `--folds` and `--sequential` on top.
    policy: RecommendConfig,
    scan_patterns: Vec<String>,
}

impl SweepOptions {
    pub fn new(mut args: SweepArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        let cfg = LoadedConfig::load(config.as_deref())?;
        let output = output_format(&args)?;
        let (grid, specs) = grid_with_flags(&cfg, args.dim_flags())?;
        let concurrency = args.concurrency.unwrap_or(cfg.config.sweep.concurrency);
        if let Some(why) = crate::sweep::concurrency_problem(concurrency) {
            bail!("invalid --concurrency: {why}");
        }
        let evalsets = evalsets(&cfg, std::mem::take(&mut args.evalset))?;
        let out = args.out.take().unwrap_or_else(|| cfg.out_dir());
        let shard = match &args.shard {
            Some(spec) => Some(
                spec.parse::<crate::sweep::Shard>()
                    .map_err(|e| anyhow::anyhow!("invalid --shard: {e}"))?,
            ),
            None => None,
        };
        let mut pipeline = Pipeline::from_config(&cfg, &wiring(&cfg, &args, shard)?)?;
        let gate = gate(&mut args, &cfg, &out, quiet, output)?;
        if !(1..=crate::sweep::repeat::MAX_REPEAT).contains(&args.repeat) {
            bail!(
                "invalid --repeat: must be from 1 to {}",
                crate::sweep::repeat::MAX_REPEAT
            );
        }
        let mut policy = cfg.config.recommend.clone();
        let folds_from = match args.folds {
            Some(k) => {
                crate::analysis::insight::config::check_folds(k)
                    .map_err(|e| anyhow::anyhow!("invalid --folds: {e}"))?;
                policy.folds = Some(k);
                "--folds"
            }
            None => "recommend.folds",
        };
        policy.sequential |= args.sequential;
        pipeline.add_chat_variants(&cfg, &grid)?;
        pipeline.add_embedders(&cfg, &grid)?;
        let c = &cfg.config;
        let profiles = |d: Dim| -> Vec<String> {
            match specs[d as usize] {
                Some(_) => grid.axis(d).iter().map(ToString::to_string).collect(),
                None => Vec::new(),
            }
        };
        let identity = crate::app::config::identity::run_identity(
            c,
            &Chosen {
                specs: &specs,
                chats: profiles(Dim::Chat),
                embedders: profiles(Dim::Embedder),
                strict_refusal: c.prompt.strict_refusal || args.strict_refusal,
                repeat: args.repeat,
            },
        );
        let chats = std::iter::once(DEFAULT_PROFILE)
            .chain(grid.chats().filter(|p| *p != DEFAULT_PROFILE))
            .map(|p| Ok((p.to_string(), chat_profile(&cfg, p)?.clone())))
            .collect::<Result<_>>()?;
        Ok(SweepOptions {
            identity,
            max_runs: args.max_runs,
            dry_run: args.dry_run,
            batch_out: args.batch_out,
            batch: args.batch || c.chat.batch,
            shard,
            only: args.only,
            repeat: args.repeat,
            folds_from,
            gate,
            allow_errors: args.allow_errors,
            evalsets,
            out,
            pipeline,
            concurrency,
            output,
            quiet,
            wide: args.wide,
            retriever: c.retriever.clone(),
            judge: c.judge.clone(),
            chats,
            max_chunk_tokens: c.corpus.max_chunk_tokens,
            policy,
            scan_patterns: c.scan.patterns.clone(),
            grid,
        })
    }

    /// The question sets to sweep: `--evalset`, else the config's.
    pub fn evalsets(&self) -> &[PathBuf] {
        &self.evalsets
    }
    /// The grid of settings: each dimension's flag, else the config's values.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }
    /// The folder the reports are written to.
    pub fn out(&self) -> &Path {
        &self.out
    }
    /// The pipeline under test, built once.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
    /// Model calls in flight at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }
    /// `--output`: what goes to stdout.
    pub fn output(&self) -> OutputFormat {
        self.output
    }
    pub fn quiet(&self) -> bool {
        self.quiet
    }
    /// `--wide`: every column of the settings table, however wide.
    pub fn wide(&self) -> bool {
        self.wide
    }
    /// `--allow-errors`: write reports and exit 0 even when some model calls failed.
    pub fn allow_errors(&self) -> bool {
        self.allow_errors
    }
    /// `--gate`: gate the results written to [`SweepOptions::out`].
    pub fn gate(&self) -> Option<&GateOptions> {
        self.gate.as_ref()
    }
    /// `--max-runs`: the most runs (questions x settings x repeats) the sweep may plan.
    pub fn max_runs(&self) -> u64 {
        self.max_runs
    }
    /// `--dry-run`: plan and count, make no chat call, write no report.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }
    /// `--batch-out FILE`: plan, make no chat call, write the requests for a batch engine.
    pub fn batch_out(&self) -> Option<&Path> {
        self.batch_out.as_deref()
    }
    /// `--batch` or `chat.batch`: the calls go through the chat server's Batch API first.
    pub fn batch(&self) -> bool {
        self.batch
    }
    /// `--shard I/N`: run only the questions of that shard.
    pub fn shard(&self) -> Option<crate::sweep::Shard> {
        self.shard
    }
    /// `--only`: sweep only generated, or only reviewed, questions.
    pub fn only(&self) -> Option<crate::app::cli::Only> {
        self.only
    }
    /// `--repeat N`: every distinct answer call made N times.
    pub fn repeat(&self) -> u32 {
        self.repeat
    }
    /// The cross-validation's folds (`--folds`, else `recommend.folds`), and where they were
    /// set, for messages.
    pub fn folds(&self) -> (Option<usize>, &'static str) {
        (self.policy.folds, self.folds_from)
    }
    /// The `retriever:` section.
    pub fn retriever(&self) -> &RetrieverConfig {
        &self.retriever
    }
    /// The `judge:` section, when there is one.
    pub fn judge(&self) -> Option<&JudgeConfig> {
        self.judge.as_ref()
    }
    /// The section of a swept chat profile, or of `default` (`chat:`) whether swept or not.
    pub fn chat(&self, profile: &str) -> Option<&ChatConfig> {
        self.chats
            .iter()
            .find(|(p, _)| p == profile)
            .map(|(_, c)| c)
    }
    /// `corpus.max_chunk_tokens`.
    pub fn max_chunk_tokens(&self) -> usize {
        self.max_chunk_tokens
    }

    /// The facts of this run every report shows: the identity, the models, the policy.
    pub fn meta(&self, evalsets: Vec<crate::results::SetMeta>) -> crate::results::Meta {
        let p = &self.pipeline;
        crate::results::Meta {
            identity: self.identity.clone(),
            embedder: p.embedder.model(),
            model: p.model.model(),
            models: swept_profiles(&self.grid, Dim::Chat, |n| p.chat_model_of(n).model()),
            embedders: swept_profiles(&self.grid, Dim::Embedder, |n| p.embedder_of(n).model()),
            judge: p.judge.as_ref().map(|j| j.model()),
            refusal: p.rules.refusal.clone(),
            strict_refusal: p.rules.refusal_match == crate::adapters::prompt::RefusalMatch::Strict,
            currency: p.currency.clone(),
            pricing: p.pricing,
            policy: self.policy.clone(),
            evalsets,
        }
    }

    /// The injection scan of `scan.patterns` (checked when the config was loaded).
    pub fn scanner(&self) -> crate::adapters::scan::Scanner {
        use crate::adapters::scan::Scanner;
        Scanner::new(&self.scan_patterns)
            .or_else(|_| Scanner::new(&Scanner::default_patterns()))
            .expect("default patterns compile")
    }
}

/// `--output`: what goes to stdout. `--format` names passage formats, in `sweep` as in `ask`;
/// the `json` and `table` it once also took are refused with the flag that chooses them.
fn output_format(args: &SweepArgs) -> Result<OutputFormat> {
    let spec = args.format.as_deref().unwrap_or_default();
    if let Some(name) = spec
        .split(',')
        .map(str::trim)
        .find(|n| matches!(*n, "json" | "table"))
    {
        bail!(
            "invalid --format: `{name}` is not a passage format (`numbered`, `tagged`); what goes to stdout is `--output {name}`"
        );
    }
    Ok(args.output.unwrap_or(OutputFormat::Table))
}

/// `--evalset`, else the config's question sets; none is an input error.
fn evalsets(cfg: &LoadedConfig, flags: Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    let evalsets = if flags.is_empty() {
        cfg.evalsets()
    } else {
        flags
    };
    if evalsets.is_empty() {
        match cfg.path.as_deref() {
            Some(path) => bail!(InputError::new(
                path,
                "no question sets: pass `--evalset FILE`, list `evalsets:` in the config, or add evalsets/*.yaml"
            )),
            None => bail!(
                "no question sets: there is no rageval.yaml and no evalsets/*.yaml here; run `rageval init` to start a project, or pass `--evalset FILE`"
            ),
        }
    }
    Ok(evalsets)
}

/// How the flags build the pipeline: the refusal match, streaming, and the cache (each shard
/// keeps its own cache files, so shards on one machine never share one).
fn wiring(
    cfg: &LoadedConfig,
    args: &SweepArgs,
    shard: Option<crate::sweep::Shard>,
) -> Result<Wiring> {
    let dir = match &args.cache_dir {
        // Relative to the current folder, as every other flag's path is.
        Some(dir) => std::path::absolute(dir)
            .with_context(|| format!("invalid --cache-dir `{}`", dir.display()))?,
        None => cfg.resolve(&cfg.config.cache.dir),
    };
    let mode = if args.refresh_cache {
        CacheMode::Refresh
    } else {
        CacheMode::Use
    };
    Ok(Wiring {
        strict_refusal: args.strict_refusal,
        stream: args.stream,
        cache: (!args.no_cache).then_some(mode),
        cache_dir: Some(match shard {
            Some(sh) => dir.join(format!("shard-{}-of-{}", sh.index, sh.count)),
            None => dir,
        }),
    })
}

/// `--gate` and its flags: the gate's options, checked before the sweep; a gate flag without
/// `--gate` is an error.
fn gate(
    args: &mut SweepArgs,
    cfg: &LoadedConfig,
    out: &Path,
    quiet: bool,
    output: OutputFormat,
) -> Result<Option<GateOptions>> {
    if !args.gate {
        let given = args.gate_args.given();
        if !given.is_empty() {
            let verb = if given.len() == 1 { "applies" } else { "apply" };
            bail!("{} {verb} only with `--gate`", given.join(", "));
        }
        return Ok(None);
    }
    // With `--output json`, stdout belongs to the results document.
    let summary = match (quiet, output) {
        (true, _) => GateSummaryTo::Nowhere,
        (false, OutputFormat::Json) => GateSummaryTo::Stderr,
        (false, OutputFormat::Table) => GateSummaryTo::Stdout,
    };
    // Its inputs are checked before the sweep: see `commands::gate::preflight`.
    Ok(Some(GateOptions::new(
        std::mem::take(&mut args.gate_args),
        out.join("results.json"),
        cfg,
        summary,
    )?))
}

/// Each profile of dimension `dim` with its model, unless the grid sweeps the `default`
/// profile alone.
fn swept_profiles(
    grid: &Grid,
    dim: Dim,
    model: impl Fn(&str) -> String,
) -> indexmap::IndexMap<String, String> {
    if grid.at_default(dim) {
        return indexmap::IndexMap::new();
    }
    grid.typed::<&str>(dim)
        .map(|p| (p.to_string(), model(p)))
        .collect()
}

/// The grid: each dimension's flag, parsed, else the config's values (parsed by its check);
/// and each dimension's spec as given (the flag's text, else the config's), for the identity.
fn grid_with_flags(
    cfg: &LoadedConfig,
    flags: [(Dim, Option<String>); Dim::COUNT],
) -> Result<(Grid, [Option<String>; Dim::COUNT])> {
    let mut specs: [Option<String>; Dim::COUNT] = Default::default();
    let mut given = [false; Dim::COUNT];
    for (d, flag) in flags {
        given[d as usize] = flag.is_some();
        specs[d as usize] = flag.or_else(|| cfg.config.sweep.spec(d));
    }
    let grid = Grid::try_from_fn(|d| -> Result<_> {
        let values = match &specs[d as usize] {
            Some(spec) if given[d as usize] => d
                .parse(spec)
                .map_err(|e| anyhow::anyhow!("invalid {}: {e}", d.flag()))?,
            _ => cfg.grid.axis(d).to_vec(),
        };
        // A flag's profiles are checked as the config's are, by the one check.
        crate::app::config::known_profiles(&cfg.config, d, &values)
            .map_err(|e| anyhow::anyhow!("invalid {}: {e}", d.flag()))?;
        Ok(values)
    })?;
    let retriever_kind = cfg.config.retriever.kind;
    if specs[Dim::ChunkTokens as usize].is_some() && !retriever_kind.chunks_itself() {
        bail!(
            "invalid --chunk-tokens: `retriever.kind: {retriever_kind}` returns passages chunked by the search service; chunk sizes apply to the builtin retriever only"
        );
    }
    if specs[Dim::Embedder as usize].is_some() && retriever_kind.embeds_itself() {
        bail!(
            "invalid --embedder: `retriever.kind: {retriever_kind}` searches with the service's own embedder; embedder profiles apply to the builtin and pgvector retrievers"
        );
    }
    if cfg.config.chat.kind.takes_passages()
        && grid
            .rewrites()
            .any(|r| r == crate::adapters::rewrite::Rewrite::Model)
    {
        bail!(
            "invalid --rewrite: `model` asks the `chat:` model to rewrite follow-up questions, and `chat.kind: http` is a generation endpoint, sent questions and passages, not a rewrite prompt; use `heuristic`, or keep an `openai` model in `chat:` and sweep the endpoint as a `models:` profile"
        );
    }
    Ok((grid, specs))
}

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
}

impl GateOptions {
    /// `rageval gate [RESULTS]`: RESULTS defaults to the last sweep's results.json.
    pub fn from_command(
        args: GateArgs,
        results: Option<PathBuf>,
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
        GateOptions::new(args, results, &cfg, summary)
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
        })
    }
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
        use crate::adapters::generate::MAX_QUESTIONS;
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The options of `rageval sweep FLAGS` over the config `yaml`, in a scratch folder.
    fn sweep_options(yaml: &str, flags: &[&str]) -> SweepOptions {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("rageval.yaml");
        std::fs::write(&config, yaml).unwrap();
        let mut argv = vec!["rageval", "sweep", "--evalset", "q.yaml", "--no-cache"];
        argv.extend(flags);
        let cli = crate::app::cli::Cli::try_parse_from(argv).unwrap();
        let crate::app::cli::Command::Sweep(args) = cli.command else {
            unreachable!()
        };
        SweepOptions::new(args, Some(config), true).unwrap()
    }

    const PROFILES: &str = "models:\n  fast:\n    kind: mock\n    temperature: 0.3\nembedders:\n  small:\n    kind: hash\n    dimensions: 64\n";

    /// The recorded identity (results.json's, and the key shards and baselines compare) of
    /// flags over a config, pinned byte for byte: resolving the options another way may not
    /// change it.
    #[test]
    fn the_identity_of_flags_over_a_config_is_pinned() {
        let cases: [(String, &[&str]); 4] = [
            (String::new(), &[]),
            (
                format!("{PROFILES}sweep:\n  order: [score, edge]\n  temperature: 0..0.2\n  k: [1, 2]\n"),
                &[],
            ),
            (
                format!("{PROFILES}sweep:\n  chat: [fast, default]\n  embedder: small\n  format: tagged,numbered\n"),
                &["--k", "3", "--order", "edge"],
            ),
            (
                format!("{PROFILES}prompt:\n  strict_refusal: false\nsweep:\n  order: [score, edge]\n  k: [1, 2]\n"),
                &[
                    "--min-score", "0.1..0.3", "--k", "2,4", "--format", "tagged",
                    "--chat", "fast,default", "--embedder", "small,default",
                    "--strict-refusal", "--repeat", "3", "--stream",
                ],
            ),
        ];
        let got: Vec<String> = cases
            .iter()
            .map(|(yaml, flags)| {
                let id = sweep_options(yaml, flags).identity;
                format!(
                    "{}\n{}",
                    serde_json::to_string(&id.config).unwrap(),
                    id.digest
                )
            })
            .collect();
        let want = [
            "{\"embedder\":{\"kind\":\"hash\",\"model\":\"hash-1024\",\"endpoint\":null},\"chat\":{\"kind\":\"mock\",\"model\":\"mock\",\"temperature\":0.0,\"max_tokens\":null,\"endpoint\":null},\"prompt\":{\"refusal\":\"I don't know based on the provided documents.\",\"strict_refusal\":false},\"sweep\":{\"min_score\":\"0.1..0.5\",\"k\":\"1,2,4,8\",\"order\":\"score\",\"format\":\"numbered\",\"rewrite\":\"none\"},\"pricing\":{\"prompt_per_million\":0.0,\"completion_per_million\":0.0,\"currency\":\"USD\"},\"scan_patterns\":[\"ignore (all )?(the )?(previous|above|prior)\",\"disregard .*(rules|instructions)\",\"you are now\",\"system prompt\"]}\nsha256:411a485216e432ece6b9af94fa32154cf79a2a56d4f81266baa50063f45092bd",
            "{\"embedder\":{\"kind\":\"hash\",\"model\":\"hash-1024\",\"endpoint\":null},\"chat\":{\"kind\":\"mock\",\"model\":\"mock\",\"temperature\":0.0,\"max_tokens\":null,\"endpoint\":null},\"prompt\":{\"refusal\":\"I don't know based on the provided documents.\",\"strict_refusal\":false},\"sweep\":{\"min_score\":\"0.1..0.5\",\"k\":\"1,2\",\"order\":\"score,edge\",\"format\":\"numbered\",\"rewrite\":\"none\",\"temperature\":\"0..0.2\"},\"pricing\":{\"prompt_per_million\":0.0,\"completion_per_million\":0.0,\"currency\":\"USD\"},\"scan_patterns\":[\"ignore (all )?(the )?(previous|above|prior)\",\"disregard .*(rules|instructions)\",\"you are now\",\"system prompt\"]}\nsha256:11ee25bc6ba6dbbf5ebc2714443d38ec09ad4ad9c6966ad7eb20c0b418e9d0ec",
            "{\"embedder\":{\"kind\":\"hash\",\"model\":\"hash-1024\",\"endpoint\":null},\"chat\":{\"kind\":\"mock\",\"model\":\"mock\",\"temperature\":0.0,\"max_tokens\":null,\"endpoint\":null},\"models\":{\"fast\":{\"kind\":\"mock\",\"model\":\"mock\",\"temperature\":0.3,\"max_tokens\":null,\"endpoint\":null}},\"embedders\":{\"small\":{\"kind\":\"hash\",\"model\":\"hash-64\",\"endpoint\":null}},\"prompt\":{\"refusal\":\"I don't know based on the provided documents.\",\"strict_refusal\":false},\"sweep\":{\"min_score\":\"0.1..0.5\",\"k\":\"3\",\"order\":\"edge\",\"format\":\"tagged,numbered\",\"rewrite\":\"none\",\"chat\":\"fast,default\",\"embedder\":\"small\"},\"pricing\":{\"prompt_per_million\":0.0,\"completion_per_million\":0.0,\"currency\":\"USD\"},\"scan_patterns\":[\"ignore (all )?(the )?(previous|above|prior)\",\"disregard .*(rules|instructions)\",\"you are now\",\"system prompt\"]}\nsha256:12226e5232e150641d3e5b2845acfc4b07239007909732926367a8d7e74b1c80",
            "{\"embedder\":{\"kind\":\"hash\",\"model\":\"hash-1024\",\"endpoint\":null},\"chat\":{\"kind\":\"mock\",\"model\":\"mock\",\"temperature\":0.0,\"max_tokens\":null,\"endpoint\":null},\"models\":{\"fast\":{\"kind\":\"mock\",\"model\":\"mock\",\"temperature\":0.3,\"max_tokens\":null,\"endpoint\":null}},\"embedders\":{\"small\":{\"kind\":\"hash\",\"model\":\"hash-64\",\"endpoint\":null}},\"prompt\":{\"refusal\":\"I don't know based on the provided documents.\",\"strict_refusal\":true},\"sweep\":{\"min_score\":\"0.1..0.3\",\"k\":\"2,4\",\"order\":\"score,edge\",\"format\":\"tagged\",\"rewrite\":\"none\",\"chat\":\"fast,default\",\"embedder\":\"small,default\",\"repeat\":3},\"pricing\":{\"prompt_per_million\":0.0,\"completion_per_million\":0.0,\"currency\":\"USD\"},\"scan_patterns\":[\"ignore (all )?(the )?(previous|above|prior)\",\"disregard .*(rules|instructions)\",\"you are now\",\"system prompt\"]}\nsha256:9b3c3537344bc41649ef44187f478ed0643da83965282cc73e911e496ddd0968",
        ];
        for (got, want) in got.iter().zip(want) {
            assert_eq!(got, want);
        }
    }
}
