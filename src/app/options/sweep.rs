//! `rageval sweep`'s plan: the flags and `rageval.yaml` resolved once (flags win) into one
//! read-only value, which builds what the command asks for on demand.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::{GateOptions, GateSummaryTo};
use crate::adapters::cache::CacheMode;
use crate::adapters::prompt::RefusalMatch;
use crate::app::cli::{OutputFormat, SweepArgs};
use crate::app::config::identity::Chosen;
use crate::app::config::{
    ChatConfig, EmbedderConfig, JudgeConfig, LoadedConfig, RecommendConfig, RetrieverConfig,
};
use crate::app::wiring::{Pipeline, Wiring};
use crate::base::error::InputError;
use crate::results::identity::RunIdentity;
use crate::vocab::dim::Dim;
use crate::vocab::grid::{Grid, DEFAULT_PROFILE};

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
    /// `chat:` and `embedder:` (as `default`) and every chat and embedder profile's, with
    /// `--batch-embeddings` on the swept `openai` embedders.
    retriever: RetrieverConfig,
    judge: Option<JudgeConfig>,
    chats: Vec<(String, ChatConfig)>,
    embedders: Vec<(String, EmbedderConfig)>,
    max_chunk_tokens: usize,
    /// `recommend:` with `--folds` and `--sequential` on top.
    policy: RecommendConfig,
    scan_patterns: Vec<String>,
    /// The history file a finished sweep appends to; `None`: `--no-history`,
    /// `history.enabled: false`, or a shard (`rageval merge` joins shards, not the history).
    history: Option<PathBuf>,
    /// The folder the config's paths start from: where the commit is asked of `git`.
    base: PathBuf,
    /// `--until-certified` and its flags.
    adaptive: Option<super::AdaptivePlan>,
}

impl SweepOptions {
    pub fn new(mut args: SweepArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        let cfg = LoadedConfig::load(config.as_deref())?;
        let output = output_format(&args)?;
        let (grid, specs) = grid_with_flags(&cfg, args.dim_flags())?;
        let embedders = embedder_sections(&cfg.config, &grid, args.batch_embeddings)?;
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
        policy.labels = match args.labels.take() {
            Some(flag) => Some(flag),
            None => policy.labels.as_ref().map(|l| cfg.resolve(l)),
        };
        let adaptive = super::AdaptivePlan::resolve(&args.adaptive, &policy)?;
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
                // As the pipeline resolved it (flag or `prompt.strict_refusal`), not again.
                strict_refusal: pipeline.rules.refusal_match == RefusalMatch::Strict,
                repeat: args.repeat,
            },
        );
        let chats = std::iter::once((DEFAULT_PROFILE, &c.chat))
            .chain(c.models.iter().map(|(p, m)| (p.as_str(), m)))
            .map(|(p, m)| (p.to_string(), m.clone()))
            .collect();
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
            embedders,
            max_chunk_tokens: c.corpus.max_chunk_tokens,
            policy,
            scan_patterns: c.scan.patterns.clone(),
            history: (c.history.enabled && !args.no_history && shard.is_none())
                .then(|| cfg.history_file()),
            base: cfg.base.clone(),
            adaptive,
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
    /// `--labels`, else `recommend.labels`: the labels file the results take.
    pub fn labels(&self) -> Option<&Path> {
        self.policy.labels.as_deref()
    }

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
    /// The history file to append to, if any.
    pub fn history(&self) -> Option<&Path> {
        self.history.as_deref()
    }

    /// The config's folder.
    pub fn base(&self) -> &Path {
        &self.base
    }

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
    /// `--until-certified`: the plan of an adaptive sweep.
    pub fn adaptive(&self) -> Option<&super::AdaptivePlan> {
        self.adaptive.as_ref()
    }
    /// The recommendation policy: `recommend:` with `--folds` and `--sequential` on top.
    pub fn policy(&self) -> &RecommendConfig {
        &self.policy
    }
    /// The `retriever:` section.
    pub fn retriever(&self) -> &RetrieverConfig {
        &self.retriever
    }
    /// The `judge:` section, when there is one.
    pub fn judge(&self) -> Option<&JudgeConfig> {
        self.judge.as_ref()
    }
    /// The section of chat profile `profile` (`default`: `chat:`), swept or not.
    pub fn chat(&self, profile: &str) -> Option<&ChatConfig> {
        self.chats
            .iter()
            .find(|(p, _)| p == profile)
            .map(|(_, c)| c)
    }
    /// The section of embedder profile `profile` (`default`: `embedder:`), swept or not, with
    /// `--batch-embeddings` applied.
    pub fn embedder(&self, profile: &str) -> Option<&EmbedderConfig> {
        self.embedders
            .iter()
            .find(|(p, _)| p == profile)
            .map(|(_, e)| e)
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
            strict_refusal: p.rules.refusal_match == RefusalMatch::Strict,
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
    let dir = crate::app::wiring::cache_folder(cfg, args.cache_dir.as_deref(), shard)?;
    let mode = if args.refresh_cache {
        CacheMode::Refresh
    } else {
        CacheMode::Use
    };
    Ok(Wiring {
        strict_refusal: args.strict_refusal,
        stream: args.stream,
        cache: (!args.no_cache).then_some(mode),
        cache_dir: Some(dir),
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

/// `embedder:` (as `default`) and every embedder profile's section; with
/// `--batch-embeddings`, `batch: true` on every `openai` embedder of the grid (a grid of
/// builtin embedders alone has nothing to batch).
fn embedder_sections(
    c: &crate::app::config::Config,
    grid: &Grid,
    batch_all: bool,
) -> Result<Vec<(String, EmbedderConfig)>> {
    use crate::app::config::EmbedderKind;
    let mut sections: Vec<(String, EmbedderConfig)> =
        std::iter::once((DEFAULT_PROFILE, &c.embedder))
            .chain(c.embedders.iter().map(|(p, e)| (p.as_str(), e)))
            .map(|(p, e)| (p.to_string(), e.clone()))
            .collect();
    if !batch_all {
        return Ok(sections);
    }
    let mut any = false;
    for (name, e) in &mut sections {
        if grid.embedders().any(|p| p == name) && e.kind == EmbedderKind::Openai {
            e.batch = true;
            any = true;
        }
    }
    if !any {
        bail!("invalid --batch-embeddings: the sweep embeds with the builtin `hash` embedder (`embedder.kind: {}`), which has no server to send a batch to; drop the flag, or set `embedder.kind: openai`", c.embedder.kind.name());
    }
    Ok(sections)
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
