//! Resolved options: the flags and `rageval.yaml` merged into one checked value per command
//! (flags win), the way ripgrep turns its low-level arguments into high-level ones.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::adapters::cache::CacheMode;
use crate::app::cli::{AskArgs, GateArgs, GenerateArgs, OutputFormat, SweepArgs};
use crate::app::config::LoadedConfig;
use crate::base::error::InputError;
use crate::output::gate::policy::{self, Policy};
use crate::vocab::dim::Dim;
use crate::vocab::grid::{Decimal, Grid};
use crate::vocab::limit::{Limits, Scope};

use crate::app::wiring::Pipeline;
/// Everything `rageval sweep` needs, checked.
pub struct SweepOptions {
    pub config: LoadedConfig,
    pub evalsets: Vec<PathBuf>,
    pub grid: Grid,
    pub out: PathBuf,
    pub pipeline: Pipeline,
    pub concurrency: usize,
    pub format: OutputFormat,
    pub quiet: bool,
    /// `--wide`: every column of the settings table, however wide.
    pub wide: bool,
    /// Write reports and exit 0 even when some model calls failed.
    pub allow_errors: bool,
    /// `--gate`: gate the results written to `out`.
    pub gate: Option<GateOptions>,
    /// The effective settings that change a result, as recorded in results.json.
    pub identity: crate::results::identity::RunIdentity,
    /// `--max-runs`: the most runs (questions x settings) the sweep may plan.
    pub max_runs: u64,
    /// `--dry-run`: plan and count, make no chat call, write no report.
    pub dry_run: bool,
    /// `--batch-out FILE`: plan, make no chat call, write the requests for a batch engine.
    pub batch_out: Option<PathBuf>,
    /// `--batch` or `chat.batch`: the calls go through the chat server's Batch API first.
    pub batch: bool,
    /// `--shard I/N`: run only the questions of that shard.
    pub shard: Option<crate::sweep::Shard>,
    /// `--only`: sweep only generated, or only reviewed, questions.
    pub only: Option<crate::app::cli::Only>,
    /// `--repeat N`: every distinct answer call made N times (1: once, as without the flag).
    pub repeat: u32,
    /// Where the folds were set, for messages: `--folds` or `recommend.folds`.
    pub folds_from: &'static str,
}

impl SweepOptions {
    pub fn new(mut args: SweepArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        let mut cfg = LoadedConfig::load(config.as_deref())?;
        // `--format json|table` chooses the output (as documented before passage formats were a
        // dimension); `numbered`/`tagged` are passage formats.
        let legacy = match args.format.as_deref().map(str::trim) {
            Some("json") => Some(OutputFormat::Json),
            Some("table") => Some(OutputFormat::Table),
            _ => None,
        };
        if legacy.is_some() {
            args.format = None;
        }
        let output = match (args.output, legacy) {
            (Some(a), Some(b)) if a != b => {
                bail!("`--output` and `--format` ask for different outputs: give one of them")
            }
            (a, b) => a.or(b).unwrap_or(OutputFormat::Table),
        };
        let grid = grid_with_flags(&mut cfg, args.dim_flags())?;
        if args.batch_embeddings {
            batch_embeddings(&mut cfg, &grid)?;
        }
        cfg.config.prompt.strict_refusal |= args.strict_refusal;
        cfg.config.chat.stream |= args.stream;
        if args.no_cache {
            cfg.config.cache.enabled = false;
        }
        if let Some(dir) = args.cache_dir {
            // Relative to the current folder, as every other flag's path is.
            let dir = std::path::absolute(&dir)
                .with_context(|| format!("invalid --cache-dir `{}`", dir.display()))?;
            cfg.config.cache.dir = dir.to_string_lossy().into_owned();
        }
        let concurrency = args.concurrency.unwrap_or(cfg.config.sweep.concurrency);
        if let Some(why) = crate::sweep::concurrency_problem(concurrency) {
            bail!("invalid --concurrency: {why}");
        }
        let evalsets = if args.evalset.is_empty() {
            cfg.evalsets()
        } else {
            args.evalset
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
        let out = args.out.unwrap_or_else(|| cfg.out_dir());
        let mode = if args.refresh_cache {
            CacheMode::Refresh
        } else {
            CacheMode::Use
        };
        let shard = match &args.shard {
            Some(spec) => Some(
                spec.parse::<crate::sweep::Shard>()
                    .map_err(|e| anyhow::anyhow!("invalid --shard: {e}"))?,
            ),
            None => None,
        };
        // Each shard keeps its own cache files, so shards on one machine never share one.
        let mut cache_cfg = cfg.clone();
        if let Some(sh) = shard {
            cache_cfg.config.cache.dir = format!(
                "{}/shard-{}-of-{}",
                cfg.config.cache.dir, sh.index, sh.count
            );
        }
        let mut pipeline = Pipeline::from_config(&cache_cfg, args.strict_refusal, Some(mode))?;
        let gate = if args.gate {
            // With --format json, stdout belongs to the results document.
            let summary = match (quiet, output) {
                (true, _) => GateSummaryTo::Nowhere,
                (false, OutputFormat::Json) => GateSummaryTo::Stderr,
                (false, OutputFormat::Table) => GateSummaryTo::Stdout,
            };
            // Its inputs are checked before the sweep: see `commands::gate::preflight`.
            Some(GateOptions::new(
                args.gate_args,
                out.join("results.json"),
                &cfg,
                summary,
            )?)
        } else {
            let given = args.gate_args.given();
            if !given.is_empty() {
                let verb = if given.len() == 1 { "applies" } else { "apply" };
                bail!("{} {verb} only with `--gate`", given.join(", "));
            }
            None
        };
        if !(1..=crate::sweep::repeat::MAX_REPEAT).contains(&args.repeat) {
            bail!(
                "invalid --repeat: must be from 1 to {}",
                crate::sweep::repeat::MAX_REPEAT
            );
        }
        let folds_from = match args.folds {
            Some(k) => {
                crate::analysis::insight::config::check_folds(k)
                    .map_err(|e| anyhow::anyhow!("invalid --folds: {e}"))?;
                cfg.config.recommend.folds = Some(k);
                "--folds"
            }
            None => "recommend.folds",
        };
        if args.sequential {
            cfg.config.recommend.sequential = true;
        }
        pipeline.add_chat_variants(&cache_cfg, &grid)?;
        pipeline.add_embedders(&cache_cfg, &grid)?;
        let identity = crate::app::config::identity::run_identity(&cfg.config, args.repeat);
        Ok(SweepOptions {
            identity,
            max_runs: args.max_runs,
            dry_run: args.dry_run,
            batch_out: args.batch_out,
            batch: args.batch || cfg.config.chat.batch,
            shard,
            only: args.only,
            repeat: args.repeat,
            folds_from,
            gate,
            allow_errors: args.allow_errors,
            grid,
            evalsets,
            out,
            pipeline,
            concurrency,
            format: output,
            quiet,
            wide: args.wide,
            config: cfg,
        })
    }
}

/// `--batch-embeddings`: `batch: true` on every `openai` embedder of the grid; a grid of
/// builtin embedders alone has nothing to batch.
fn batch_embeddings(cfg: &mut LoadedConfig, grid: &Grid) -> Result<()> {
    use crate::app::config::EmbedderKind;
    let c = &mut cfg.config;
    let mut any = false;
    for name in grid.embedders() {
        let section = if name == crate::vocab::grid::DEFAULT_PROFILE {
            Some(&mut c.embedder)
        } else {
            c.embedders.get_mut(name)
        };
        if let Some(e) = section.filter(|e| e.kind == EmbedderKind::Openai) {
            e.batch = true;
            any = true;
        }
    }
    if !any {
        bail!("invalid --batch-embeddings: the sweep embeds with the builtin `hash` embedder (`embedder.kind: {}`), which has no server to send a batch to; drop the flag, or set `embedder.kind: openai`", c.embedder.kind.name());
    }
    Ok(())
}

/// The grid: each dimension's flag, parsed, else the config's values (parsed by its check).
/// The effective specs go back into `cfg`'s `sweep:`, so reports and the digest show them.
fn grid_with_flags(
    cfg: &mut LoadedConfig,
    flags: [(Dim, Option<String>); Dim::COUNT],
) -> Result<Grid> {
    let mut given: [Option<String>; Dim::COUNT] = Default::default();
    for (d, flag) in flags {
        given[d as usize] = flag;
    }
    let grid = Grid::try_from_fn(|d| -> Result<_> {
        let flag = given[d as usize].take();
        let values = match &flag {
            Some(spec) => d
                .parse(spec)
                .map_err(|e| anyhow::anyhow!("invalid {}: {e}", d.flag()))?,
            None => cfg.grid.axis(d).to_vec(),
        };
        // A flag's profiles are checked as the config's are, by the one check.
        crate::app::config::known_profiles(&cfg.config, d, &values)
            .map_err(|e| anyhow::anyhow!("invalid {}: {e}", d.flag()))?;
        let spec = flag.or_else(|| cfg.config.sweep.spec(d));
        cfg.config.sweep.set_spec(d, spec);
        Ok(values)
    })?;
    let sweep = &cfg.config.sweep;
    let retriever_kind = cfg.config.retriever.kind;
    if sweep.spec(Dim::ChunkTokens).is_some() && !retriever_kind.chunks_itself() {
        bail!(
            "invalid --chunk-tokens: `retriever.kind: {retriever_kind}` returns passages chunked by the search service; chunk sizes apply to the builtin retriever only"
        );
    }
    if sweep.spec(Dim::Embedder).is_some() && retriever_kind.embeds_itself() {
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
    Ok(grid)
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
        let pipeline = Pipeline::from_config(&cfg, args.strict_refusal, Some(CacheMode::Use))?;
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
        let mut pipeline = Pipeline::from_config(&cfg, false, cache)?;
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
