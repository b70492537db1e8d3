//! Checked settings: the flags and `rageval.yaml` merged into one value per command (flags win).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use std::time::Duration;

use crate::adapters::cache::{CacheMode, CachedEmbedder, CachedModel};
use crate::adapters::chat::{ChatModel, OpenAiChat};
use crate::adapters::classify::Rules;
use crate::adapters::embed::{Embedder, HashEmbedder, OpenAiEmbedder};
use crate::adapters::http::{Endpoint, Endpoints, Held, RateLimiter, RetryPolicy};
use crate::adapters::mock::MockModel;
use crate::adapters::prompt::{RefusalMatch, RefusalPatterns};
use crate::analysis::stats::Pricing;
use crate::app::cli::{AskArgs, GateArgs, OutputFormat, SweepArgs};
use crate::app::config::{ChatKind, EmbedderKind, HttpConfig, LoadedConfig};
use crate::base::error::InputError;
use crate::output::gate::policy::{self, Policy};
use crate::vocab::grid::{self, Decimal, Grid};
use crate::vocab::limit::{Limits, Scope};

/// The pipeline under test: embedder, model and how replies are read.
#[derive(Clone)]
pub struct Pipeline {
    pub embedder: Arc<dyn Embedder>,
    pub model: Arc<dyn ChatModel>,
    pub rules: Rules,
    pub pricing: Pricing,
    pub currency: String,
    /// The judge model, when `judge:` is configured.
    pub judge: Option<Arc<dyn ChatModel>>,
    /// The servers of the chat models the sweep may call (`openai` only), the `chat:`
    /// section's first: when one refused [`crate::adapters::http::DEAD_AFTER`] connections in a row, the
    /// sweep stops early naming it.
    pub chat_servers: Vec<ChatServer>,
    /// Time calls were held back by a rate limit, when any section sets one (for progress).
    pub rate_limited: Option<Arc<Held>>,
    /// The same for the judge's server.
    pub judge_dead: Option<Arc<crate::adapters::http::DeadServer>>,
    /// The chat models of `--chat`/`--temperature` besides `model` (see
    /// [`Pipeline::add_chat_variants`]); empty otherwise.
    pub chat_variants: Vec<crate::sweep::ChatVariant>,
    /// The response cache `model` writes through, which the variants share.
    pub(crate) chat_store:
        Option<Arc<crate::adapters::cache::Store<crate::adapters::cache::CachedReply>>>,
    /// The embedder profiles of `--embedder` besides `default` (see
    /// [`Pipeline::add_embedders`]), by name; empty otherwise.
    pub embedders: Vec<(String, Arc<dyn Embedder>)>,
    /// The embedding cache `embedder` writes through, which the profiles share.
    pub(crate) embed_store: Option<Arc<crate::adapters::cache::Store<Vec<f32>>>>,
    /// Whether calls are cached, and how (`None`: not at all).
    pub(crate) cache: Option<CacheMode>,
    pub(crate) cache_dir: PathBuf,
    pub(crate) held: Arc<Held>,
    /// The reranker, when `reranker:` is configured.
    pub reranker: Option<Arc<dyn crate::adapters::rerank::Reranker>>,
}

/// The servers of one chat model: which profile they serve, as messages show them, and
/// whether they are dead.
#[derive(Clone)]
pub struct ChatServer {
    /// A key of `models:`, or `default` for the `chat:` section.
    pub profile: String,
    /// The base URLs, redacted (see [`HttpConfig::shown`]).
    pub shown: String,
    pub dead: Arc<crate::adapters::http::DeadServer>,
}

/// The servers of a section with its rate limit; waiting is counted in `held`.
pub(crate) fn endpoint(http: HttpConfig<'_>, held: &Arc<Held>) -> Result<Endpoints> {
    let headers: Vec<(String, String)> = http
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let servers = http
        .base_urls()
        .iter()
        .map(|url| {
            Endpoint::new(
                url,
                http.api_key_env,
                &headers,
                Duration::from_secs_f64(http.timeout_s),
                RetryPolicy {
                    max_attempts: http.max_retries + 1,
                    base_delay: Duration::from_millis(http.backoff_ms),
                    ..RetryPolicy::default()
                },
            )
            .map_err(|e| anyhow::anyhow!(e))
        })
        .collect::<Result<Vec<_>>>()?;
    let limiter = RateLimiter::new(
        http.requests_per_minute,
        http.tokens_per_minute,
        held.clone(),
    )
    .map(Arc::new);
    Ok(Endpoints::new(servers, limiter))
}

impl Pipeline {
    /// Build the configured models. HTTP models sit behind the response cache unless `cache`
    /// is `None`; the builtin ones are instant and never cached.
    pub fn from_config(
        cfg: &LoadedConfig,
        strict_refusal: bool,
        cache: Option<CacheMode>,
    ) -> Result<Self> {
        let c = &cfg.config;
        let cache_dir = cfg.resolve(&c.cache.dir);
        let cache = cache.filter(|_| c.cache.enabled);
        let held = Arc::new(Held::default());
        let mut rate_limited = false;
        let mut embed_store = None;
        let embedder: Arc<dyn Embedder> = match c.embedder.kind {
            EmbedderKind::Hash => Arc::new(HashEmbedder::new(c.embedder.dimensions)),
            EmbedderKind::Openai => {
                let http: Arc<dyn Embedder> = Arc::new(
                    OpenAiEmbedder::new(
                        {
                            let endpoints = endpoint(c.embedder.http(), &held)?;
                            rate_limited |= endpoints.limiter.is_some();
                            endpoints
                        },
                        &c.embedder.model,
                        c.embedder.batch_size,
                        c.embedder.concurrency,
                    )
                    .map_err(|e| anyhow::anyhow!(e))?
                    .with_max_input_tokens(c.embedder.max_input_tokens),
                );
                match cache {
                    Some(mode) => {
                        let store = CachedEmbedder::open_store(&cache_dir, mode)?;
                        embed_store = Some(store.clone());
                        Arc::new(CachedEmbedder::sharing(http, store, mode))
                    }
                    None => http,
                }
            }
        };
        let mut chat_servers = Vec::new();
        let mut chat_store = None;
        let model: Arc<dyn ChatModel> = match c.chat.kind {
            ChatKind::Mock => Arc::new(MockModel::new(&c.prompt.refusal)),
            ChatKind::Openai => {
                let endpoint = endpoint(c.chat.http(), &held)?;
                chat_servers.push(ChatServer {
                    profile: grid::DEFAULT_PROFILE.to_string(),
                    shown: c.chat.http().shown(),
                    dead: endpoint.dead.clone(),
                });
                rate_limited |= endpoint.limiter.is_some();
                let http: Arc<dyn ChatModel> = Arc::new(
                    OpenAiChat::new(
                        endpoint,
                        &c.chat.model,
                        c.chat.temperature,
                        c.chat.max_tokens,
                        c.chat.stream,
                    )
                    .map_err(|e| anyhow::anyhow!(e))?,
                );
                match cache {
                    Some(mode) => {
                        let store = CachedModel::open_store(&cache_dir, mode)?;
                        chat_store = Some(store.clone());
                        Arc::new(CachedModel::sharing(http, store, mode))
                    }
                    None => http,
                }
            }
        };
        let mut judge_dead = None;
        let judge: Option<Arc<dyn ChatModel>> = match &c.judge {
            None => None,
            Some(j) if j.kind == ChatKind::Mock => {
                Some(Arc::new(MockModel::new(&c.prompt.refusal)))
            }
            Some(j) => {
                // Temperature 0 and no token cap: a grade should not depend on the dice.
                let endpoint = endpoint(j.http(), &held)?;
                judge_dead = Some(endpoint.dead.clone());
                rate_limited |= endpoint.limiter.is_some();
                let http: Arc<dyn ChatModel> = Arc::new(
                    OpenAiChat::new(endpoint, &j.model, 0.0, None, false)
                        .map_err(|e| anyhow::anyhow!(e))?,
                );
                Some(match cache {
                    Some(mode) => Arc::new(CachedModel::open(
                        http,
                        &cache_dir.join("judge.jsonl"),
                        mode,
                    )?),
                    None => http,
                })
            }
        };
        let reranker: Option<Arc<dyn crate::adapters::rerank::Reranker>> = match &c.reranker {
            None => None,
            Some(r) => {
                let endpoints = endpoint(r.http(), &held)?;
                rate_limited |= endpoints.limiter.is_some();
                let http: Arc<dyn crate::adapters::rerank::Reranker> = Arc::new(
                    crate::adapters::rerank::HttpReranker::new(
                        endpoints,
                        &r.model,
                        r.candidates,
                        r.top_n,
                    )
                    .map_err(|e| anyhow::anyhow!(e))?,
                );
                Some(match cache {
                    Some(mode) => Arc::new(crate::adapters::rerank::CachedReranker::new(
                        http, &cache_dir, mode,
                    )?),
                    None => http,
                })
            }
        };
        let strict = strict_refusal || c.prompt.strict_refusal;
        // Both were checked when the config was loaded.
        let prompt = c
            .prompt
            .prompt()
            .map_err(|e| anyhow::anyhow!("`prompt.{}`: {}", e.field, e.error))?;
        let patterns = RefusalPatterns::new(&c.prompt.refusal_patterns)
            .map_err(|(i, msg)| anyhow::anyhow!("`prompt.refusal_patterns[{i}]`: {msg}"))?;
        Ok(Pipeline {
            reranker,
            chat_servers,
            judge_dead,
            chat_variants: Vec::new(),
            chat_store,
            embedders: Vec::new(),
            embed_store,
            cache,
            cache_dir,
            rate_limited: rate_limited.then_some(held.clone()),
            held,
            embedder,
            model,
            judge,
            rules: Rules {
                refusal: c.prompt.refusal.clone(),
                refusal_match: if strict {
                    RefusalMatch::Strict
                } else {
                    RefusalMatch::Lenient
                },
                patterns,
                prompt,
            },
            pricing: Pricing {
                prompt_per_million: c.pricing.prompt_per_million,
                completion_per_million: c.pricing.completion_per_million,
                judge_prompt_per_million: c.judge.as_ref().map_or(0.0, |j| j.prompt_per_million),
                judge_completion_per_million: c
                    .judge
                    .as_ref()
                    .map_or(0.0, |j| j.completion_per_million),
            },
            currency: if c.pricing.currency.is_empty() {
                "USD".into()
            } else {
                c.pricing.currency.clone()
            },
        })
    }
}

/// Everything `rageval sweep` needs, checked.
pub struct SweepSettings {
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
    pub gate: Option<GateSettings>,
    /// The effective settings that change a result, as recorded in results.json.
    pub identity: crate::results::identity::RunIdentity,
    /// `--max-runs`: the most runs (questions x settings) the sweep may plan.
    pub max_runs: u64,
    /// `--dry-run`: plan and count, make no chat call, write no report.
    pub dry_run: bool,
    /// `--shard I/N`: run only the questions of that shard.
    pub shard: Option<crate::sweep::Shard>,
    /// `--repeat N`: every distinct answer call made N times (1: once, as without the flag).
    pub repeat: u32,
}

impl SweepSettings {
    pub fn new(args: SweepArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        let mut cfg = LoadedConfig::load(config.as_deref())?;
        let min_spec = args
            .min_score
            .unwrap_or_else(|| cfg.config.sweep.min_score.to_spec());
        let k_spec = args.k.unwrap_or_else(|| cfg.config.sweep.k.to_spec());
        let min_scores = grid::parse_min_scores(&min_spec)
            .map_err(|e| anyhow::anyhow!("invalid --min-score: {e}"))?;
        let ks = grid::parse_ks(&k_spec).map_err(|e| anyhow::anyhow!("invalid --k: {e}"))?;
        // `--format json|table` chooses the output (as documented before passage formats were a
        // dimension); `numbered`/`tagged` are passage formats.
        let mut format_arg = args.format;
        let legacy = match format_arg.as_deref().map(str::trim) {
            Some("json") => Some(OutputFormat::Json),
            Some("table") => Some(OutputFormat::Table),
            _ => None,
        };
        if legacy.is_some() {
            format_arg = None;
        }
        let output = match (args.output, legacy) {
            (Some(a), Some(b)) if a != b => {
                bail!("`--output` and `--format` ask for different outputs: give one of them")
            }
            (a, b) => a.or(b).unwrap_or(OutputFormat::Table),
        };
        // An empty list is refused by `parse_names` below, as any empty item is.
        let order_spec = args
            .order
            .unwrap_or_else(|| cfg.config.sweep.order.to_spec());
        let format_spec = format_arg.unwrap_or_else(|| cfg.config.sweep.format.to_spec());
        let rewrite_spec = args
            .rewrite
            .unwrap_or_else(|| cfg.config.sweep.rewrite.to_spec());
        let orders =
            grid::parse_names(&order_spec).map_err(|e| anyhow::anyhow!("invalid --order: {e}"))?;
        let formats = grid::parse_names(&format_spec)
            .map_err(|e| anyhow::anyhow!("invalid --format: {e}"))?;
        let rewrites = grid::parse_names(&rewrite_spec)
            .map_err(|e| anyhow::anyhow!("invalid --rewrite: {e}"))?;
        let chat_spec = args
            .chat
            .or_else(|| cfg.config.sweep.chat.as_ref().map(|s| s.to_spec()));
        let chats = match &chat_spec {
            None => vec![grid::DEFAULT_PROFILE.to_string()],
            Some(spec) => {
                grid::parse_profiles(spec).map_err(|e| anyhow::anyhow!("invalid --chat: {e}"))?
            }
        };
        for name in &chats {
            crate::app::profiles::chat_profile(&cfg, name)?;
        }
        let embedder_spec = args
            .embedder
            .or_else(|| cfg.config.sweep.embedder.as_ref().map(|s| s.to_spec()));
        let embedders = match &embedder_spec {
            None => vec![grid::DEFAULT_PROFILE.to_string()],
            Some(spec) => grid::parse_profiles(spec)
                .map_err(|e| anyhow::anyhow!("invalid --embedder: {e}"))?,
        };
        for name in &embedders {
            crate::app::profiles::embedder_profile(&cfg, name)?;
        }
        let chunk_spec = args
            .chunk_tokens
            .or_else(|| cfg.config.sweep.chunk_tokens.as_ref().map(|s| s.to_spec()));
        let chunk_tokens = match &chunk_spec {
            None => vec![None],
            Some(spec) => grid::parse_chunk_tokens(spec)
                .map_err(|e| anyhow::anyhow!("invalid --chunk-tokens: {e}"))?
                .into_iter()
                .map(Some)
                .collect(),
        };
        let retriever_kind = cfg.config.retriever.kind;
        if chunk_spec.is_some() && retriever_kind != crate::app::config::RetrieverKind::Builtin {
            bail!(
                "invalid --chunk-tokens: `retriever.kind: {}` returns passages chunked by the search service; chunk sizes apply to the builtin retriever only",
                if retriever_kind == crate::app::config::RetrieverKind::Http {
                    "http"
                } else {
                    "pgvector"
                }
            );
        }
        if embedder_spec.is_some() && retriever_kind == crate::app::config::RetrieverKind::Http {
            bail!(
                "invalid --embedder: `retriever.kind: http` searches with the service's own embedder; embedder profiles apply to the builtin and pgvector retrievers"
            );
        }
        let temperature_spec = args
            .temperature
            .or_else(|| cfg.config.sweep.temperature.as_ref().map(|s| s.to_spec()));
        let temperatures = match &temperature_spec {
            None => vec![None],
            Some(spec) => grid::parse_temperatures(spec)
                .map_err(|e| anyhow::anyhow!("invalid --temperature: {e}"))?
                .into_iter()
                .map(Some)
                .collect(),
        };
        cfg.config.sweep.order = crate::app::config::NameSpec::Text(order_spec);
        cfg.config.sweep.format = crate::app::config::NameSpec::Text(format_spec);
        cfg.config.sweep.rewrite = crate::app::config::NameSpec::Text(rewrite_spec);
        cfg.config.sweep.chat = chat_spec.map(crate::app::config::NameSpec::Text);
        cfg.config.sweep.temperature = temperature_spec.map(crate::app::config::ValueSpec::Text);
        cfg.config.sweep.embedder = embedder_spec.map(crate::app::config::NameSpec::Text);
        cfg.config.sweep.chunk_tokens = chunk_spec.map(crate::app::config::ValueSpec::Text);
        // The effective values go back into the config, so reports and the digest show them.
        cfg.config.sweep.min_score = crate::app::config::ValueSpec::Text(min_spec);
        cfg.config.sweep.k = crate::app::config::ValueSpec::Text(k_spec);
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
        if concurrency == 0 {
            bail!("invalid --concurrency: must be at least 1");
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
                (true, _) => Summary::Nowhere,
                (false, OutputFormat::Json) => Summary::Stderr,
                (false, OutputFormat::Table) => Summary::Stdout,
            };
            // Its inputs are checked before the sweep: see `commands::gate::preflight`.
            Some(GateSettings::new(
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
        if !(1..=crate::analysis::repeat::MAX_REPEAT).contains(&args.repeat) {
            bail!(
                "invalid --repeat: must be from 1 to {}",
                crate::analysis::repeat::MAX_REPEAT
            );
        }
        let grid = Grid {
            min_scores,
            ks,
            orders,
            formats,
            rewrites,
            chats,
            temperatures,
            embedders,
            chunk_tokens,
        };
        pipeline.add_chat_variants(&cache_cfg, &grid)?;
        pipeline.add_embedders(&cache_cfg, &grid)?;
        let mut effective = crate::results::identity::EffectiveConfig::new(&cfg.config);
        effective.sweep.repeat = args.repeat;
        let defaults = crate::results::identity::EffectiveConfig::new(&Default::default());
        let identity = crate::results::identity::RunIdentity::new(effective, &defaults);
        Ok(SweepSettings {
            identity,
            max_runs: args.max_runs,
            dry_run: args.dry_run,
            shard,
            repeat: args.repeat,
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

/// Where the gate's summary for people goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summary {
    Stdout,
    Stderr,
    Nowhere,
}

/// Everything `rageval gate` needs, checked.
#[derive(Debug, Clone)]
pub struct GateSettings {
    pub results: PathBuf,
    /// The gated setting came from `--setting`, not from `gate.setting` (for messages).
    pub setting_from_flag: bool,
    pub policy: Policy,
    pub update_baseline: bool,
    pub junit: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    /// `$GITHUB_STEP_SUMMARY`: a file the Markdown is appended to.
    pub step_summary: Option<PathBuf>,
    pub summary: Summary,
}

impl GateSettings {
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
            Summary::Nowhere
        } else {
            Summary::Stdout
        };
        GateSettings::new(args, results, &cfg, summary)
    }

    /// The `gate:` section of the config with the flags on top.
    pub fn new(
        args: GateArgs,
        results: PathBuf,
        cfg: &LoadedConfig,
        summary: Summary,
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
        };
        Ok(GateSettings {
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
pub struct AskSettings {
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

impl AskSettings {
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
        Ok(AskSettings {
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
