//! `rageval.yaml`: the project's configuration. Every field is optional; the defaults run
//! offline on the builtin embedder and mock model.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::base::error::InputError;
use crate::vocab::dim::{Dim, Value};
use crate::vocab::grid::Grid;
use crate::vocab::limit::Scope;

/// rageval's configuration, `rageval.yaml` (docs/config.md). Every field is optional.
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(title = "rageval configuration")]
pub struct Config {
    /// Question sets, relative to the config file. Default: every `evalsets/*.yaml`.
    pub evalsets: Vec<String>,
    /// How markdown sections become chunks.
    pub corpus: CorpusConfig,
    pub embedder: EmbedderConfig,
    pub chat: ChatConfig,
    /// Named chat profiles, each with the fields of `chat:`, for `--chat NAME,NAME`
    /// (docs/models.md). `default` names the `chat:` section.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub models: IndexMap<String, ChatConfig>,
    /// Named embedder profiles, each with the fields of `embedder:`, for `--embedder NAME,NAME`.
    /// `default` names the `embedder:` section.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub embedders: IndexMap<String, EmbedderConfig>,
    pub prompt: PromptConfig,
    pub sweep: SweepConfig,
    pub pricing: PricingConfig,
    pub cache: CacheConfig,
    pub scan: ScanConfig,
    /// How the recommended setting is chosen (docs/insight.md).
    pub recommend: RecommendConfig,
    /// Report folder, relative to the config file.
    pub out: Option<String>,
    pub gate: GateConfig,
    /// Where passages come from (docs/retrievers.md).
    pub retriever: RetrieverConfig,
    /// The optional judge model; absent: no judge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeConfig>,
    /// The optional reranker; absent: passages keep their retrieval order and scores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranker: Option<RerankerConfig>,
    /// How `rageval generate` writes and verifies questions (docs/generate.md).
    pub generate: GenerateConfig,
}

pub mod identity;
pub mod profiles;
mod sections;

/// The JSON Schema of `rageval.yaml`, generated from the types that parse it.
pub fn json_schema() -> serde_json::Value {
    schemars::schema_for!(Config).to_value()
}

pub use sections::*;

// Each adapter owns its section; the config file is their sum.
pub use crate::adapters::cache::config::*;
pub use crate::adapters::chat::config::*;
pub use crate::adapters::corpus::config::*;
pub use crate::adapters::embed::config::*;
pub use crate::adapters::generate::config::*;
pub use crate::adapters::http::config::*;
pub use crate::adapters::judge::config::*;
pub use crate::adapters::prompt::config::*;
pub use crate::adapters::rerank::config::*;
pub use crate::adapters::retriever::config::*;
pub use crate::adapters::scan::config::*;
pub use crate::analysis::insight::config::*;
pub use crate::output::gate::config::*;
pub use crate::vocab::spec::*;

/// Most passages sent to the reranker per question (`reranker.candidates`, `reranker.top_n`).
pub const MAX_RERANK_CANDIDATES: usize = 1_000;

/// Most buckets of the hash embedder: 65536 (a vector of 256 KiB per text).
pub const MAX_DIMENSIONS: usize = 65_536;

/// The grid `sweep:` of `c` names: each dimension's values, parsed by [`Dim::values`], or the
/// first dimension (in [`Dim::ALL`] order) whose spec is wrong and why.
pub fn sweep_grid(c: &Config) -> Result<Grid, (Dim, String)> {
    Grid::try_from_fn(|d| {
        d.values(c.sweep.spec(d).as_deref())
            .and_then(|values| known_profiles(c, d, &values).map(|()| values))
            .map_err(|msg| (d, msg))
    })
}

/// For a dimension of profiles, that each of `values` is `default` or a profile of `c`.
pub(crate) fn known_profiles(c: &Config, d: Dim, values: &[Value]) -> Result<(), String> {
    let (kind, section, names): (_, _, Vec<&String>) = match d {
        Dim::Chat => ("chat", "models", c.models.keys().collect()),
        Dim::Embedder => ("embedder", "embedders", c.embedders.keys().collect()),
        _ => return Ok(()),
    };
    for v in values {
        let name = v.to_string();
        if name != crate::vocab::grid::DEFAULT_PROFILE && !names.contains(&&name) {
            return Err(format!(
                "unknown {kind} profile `{name}`; `{section}:` defines {}",
                profiles::known(names.into_iter())
            ));
        }
    }
    Ok(())
}

/// A loaded config and the folder its relative paths start from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    /// The file it came from; `None` when the defaults are used.
    pub path: Option<PathBuf>,
    pub base: PathBuf,
    /// The file's text, for the results' digest.
    pub text: String,
    /// The grid `sweep:` names, parsed (once) by the check: what flags do not replace.
    pub grid: Grid,
}

impl LoadedConfig {
    /// `explicit` must exist; without it, `rageval.yaml` in the current folder is read when it
    /// exists and the defaults are used when it does not.
    pub fn load(explicit: Option<&Path>) -> Result<Self, InputError> {
        let path = match explicit {
            Some(p) => p.to_path_buf(),
            None if Path::new("rageval.yaml").exists() => PathBuf::from("rageval.yaml"),
            None => {
                let config = Config::default();
                return Ok(LoadedConfig {
                    grid: sweep_grid(&config).expect("the default grid parses"),
                    config,
                    path: None,
                    base: PathBuf::from("."),
                    text: String::new(),
                });
            }
        };
        let text = crate::base::input::read_yaml(&path)
            .map_err(|e| InputError::reading(&path, "config", e))?;
        let config: Config = if text.trim().is_empty() {
            Config::default()
        } else {
            serde_yaml::from_str(&text).map_err(|e| InputError::from_yaml_text(&path, &text, &e))?
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        let mut loaded = LoadedConfig {
            config,
            path: Some(path),
            base,
            text,
            grid: Grid::new(Vec::new(), Vec::new()),
        };
        loaded.grid = loaded.check()?;
        Ok(loaded)
    }

    /// Check the config; its grid, when it is valid.
    fn check(&self) -> Result<Grid, InputError> {
        let path = self.path.as_deref().unwrap_or(Path::new("rageval.yaml"));
        let loc = crate::base::yaml_loc::Locator::new(&self.text);
        let fail = |segs: &[crate::base::yaml_loc::Seg<'_>], field: &str, msg: String| {
            Err(InputError::new(path, msg).at(loc.line(segs)).field(field))
        };
        use crate::adapters::http::{authorization_conflict, authorization_conflict_message};
        use crate::base::yaml_loc::Seg::{Index, Key};
        let c = &self.config;
        // Profiles first: a profile's name must be usable before its fields are read.
        for (map, names) in [
            ("models", c.models.keys().collect::<Vec<_>>()),
            ("embedders", c.embedders.keys().collect()),
        ] {
            for name in names {
                if let Err(msg) = profiles::check_name(name) {
                    return fail(&[Key(map), Key(name)], &format!("{map}.{name}"), msg);
                }
            }
        }
        let judge = c.judge.as_ref().map(|j| (vec!["judge"], j.http()));
        let reranker = c.reranker.as_ref().map(|r| (vec!["reranker"], r.http()));
        let sections = [
            (vec!["chat"], c.chat.http()),
            (vec!["embedder"], c.embedder.http()),
        ];
        let models = c.models.iter().map(|(n, m)| (vec!["models", n], m.http()));
        let embedders = c
            .embedders
            .iter()
            .map(|(n, e)| (vec!["embedders", n], e.http()));
        for (path, http) in sections
            .into_iter()
            .chain(judge)
            .chain(reranker)
            .chain(models)
            .chain(embedders)
        {
            let section = path.join(".");
            let section = section.as_str();
            // The YAML path of `field` in this section.
            let at = |field: &'static str| -> Vec<crate::base::yaml_loc::Seg<'_>> {
                path.iter().map(|p| Key(p)).chain([Key(field)]).collect()
            };
            if let Some(header) = authorization_conflict(http.headers.keys(), http.api_key_env) {
                let segs: Vec<_> = path
                    .iter()
                    .map(|p| Key(p))
                    .chain([Key("headers"), Key(&header)])
                    .collect();
                return fail(
                    &segs,
                    &format!("{section}.headers.{header}"),
                    authorization_conflict_message(&header, http.api_key_env),
                );
            }
            if !(http.timeout_s > 0.0 && http.timeout_s <= MAX_TIMEOUT_S) {
                return fail(
                    &at("timeout_s"),
                    &format!("{section}.timeout_s"),
                    format!("must be a number of seconds above 0 and at most {MAX_TIMEOUT_S}"),
                );
            }
            if http.max_retries > MAX_RETRIES {
                return fail(
                    &at("max_retries"),
                    &format!("{section}.max_retries"),
                    format!("must be from 0 to {MAX_RETRIES}, got {}", http.max_retries),
                );
            }
            if http.backoff_ms > MAX_BACKOFF_MS {
                return fail(
                    &at("backoff_ms"),
                    &format!("{section}.backoff_ms"),
                    format!(
                        "must be from 0 to {MAX_BACKOFF_MS} milliseconds, got {}",
                        http.backoff_ms
                    ),
                );
            }
            if let Some(urls) = &http.base_url {
                if urls.urls().is_empty() {
                    return fail(
                        &at("base_url"),
                        &format!("{section}.base_url"),
                        "lists no URL (leave it out for the default)".into(),
                    );
                }
                for (i, url) in urls.urls().iter().enumerate() {
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        let (segs, field) = match urls {
                            BaseUrls::One(_) => (at("base_url"), format!("{section}.base_url")),
                            BaseUrls::Many(_) => (
                                at("base_url").into_iter().chain([Index(i)]).collect(),
                                format!("{section}.base_url[{i}]"),
                            ),
                        };
                        return fail(
                            &segs,
                            &field,
                            format!(
                                "`{}` must start with http:// or https://",
                                crate::base::redact::url(url)
                            ),
                        );
                    }
                }
            }
            if let Some(r) = http.requests_per_minute {
                if !(1..=MAX_REQUESTS_PER_MINUTE).contains(&r) {
                    return fail(
                        &at("requests_per_minute"),
                        &format!("{section}.requests_per_minute"),
                        format!("must be from 1 to {MAX_REQUESTS_PER_MINUTE} (leave it out for no limit), got {r}"),
                    );
                }
            }
            if let Some(t) = http.tokens_per_minute {
                if !(1..=MAX_TOKENS_PER_MINUTE).contains(&t) {
                    return fail(
                        &at("tokens_per_minute"),
                        &format!("{section}.tokens_per_minute"),
                        format!("must be from 1 to {MAX_TOKENS_PER_MINUTE} (leave it out for no limit), got {t}"),
                    );
                }
            }
        }
        let chats = std::iter::once((vec!["chat"], &c.chat)).chain(
            c.models
                .iter()
                .map(|(n, m)| (vec!["models", n.as_str()], m)),
        );
        for (path, m) in chats {
            if let Err((key, field, msg)) = profiles::check_chat_kind(m) {
                let segs: Vec<_> = path.iter().map(|p| Key(p)).chain([Key(key)]).collect();
                return fail(&segs, &format!("{}.{field}", path.join(".")), msg);
            }
        }
        if c.judge.as_ref().is_some_and(|j| j.kind == ChatKind::Http) {
            return fail(
                &[Key("judge"), Key("kind")],
                "judge.kind",
                "`http` is the generation contract, which sends no rubric; the judge is `openai` or `mock`".into(),
            );
        }
        if let Some(r) = &c.reranker {
            if r.base_url.is_none() {
                return fail(
                    &[Key("reranker")],
                    "reranker.base_url",
                    "is missing: the reranker needs its server's URL (`POST {base_url}/rerank`)"
                        .into(),
                );
            }
            for (field, n) in [("candidates", r.candidates), ("top_n", r.top_n)] {
                if n.is_some_and(|n| !(1..=MAX_RERANK_CANDIDATES).contains(&n)) {
                    return fail(
                        &[Key("reranker"), Key(field)],
                        &format!("reranker.{field}"),
                        format!("must be from 1 to {MAX_RERANK_CANDIDATES} (leave it out for the grid's largest k)"),
                    );
                }
            }
        }
        let r = &c.retriever;
        if r.kind == RetrieverKind::Http {
            match &r.url {
                None => {
                    return fail(
                        &[Key("retriever"), Key("kind")],
                        "retriever.url",
                        "is missing: `retriever.kind: http` needs the search endpoint's URL".into(),
                    )
                }
                Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                    return fail(
                        &[Key("retriever"), Key("url")],
                        "retriever.url",
                        format!(
                            "`{}` must start with http:// or https://",
                            crate::base::redact::url(url)
                        ),
                    )
                }
                Some(_) => {}
            }
        }
        if !(r.timeout_s > 0.0 && r.timeout_s <= MAX_TIMEOUT_S) {
            return fail(
                &[Key("retriever"), Key("timeout_s")],
                "retriever.timeout_s",
                format!("must be a number of seconds above 0 and at most {MAX_TIMEOUT_S}"),
            );
        }
        if r.max_retries > MAX_RETRIES || r.backoff_ms > MAX_BACKOFF_MS {
            return fail(
                &[Key("retriever")],
                "retriever.max_retries",
                format!("max_retries must be from 0 to {MAX_RETRIES} and backoff_ms from 0 to {MAX_BACKOFF_MS}"),
            );
        }
        if let Some(header) = authorization_conflict(r.headers.keys(), &r.api_key_env)
            .filter(|_| r.kind == RetrieverKind::Http)
        {
            return fail(
                &[Key("retriever"), Key("headers"), Key(&header)],
                &format!("retriever.headers.{header}"),
                authorization_conflict_message(&header, &r.api_key_env),
            );
        }
        if r.query_per_k && r.kind == RetrieverKind::Builtin {
            return fail(
                &[Key("retriever"), Key("query_per_k")],
                "retriever.query_per_k",
                "applies to `http` and `pgvector` retrievers: the builtin index is exact, so each k's hits are the first k of the largest".into(),
            );
        }
        if r.query_per_k && c.reranker.is_some() {
            return fail(
                &[Key("retriever"), Key("query_per_k")],
                "retriever.query_per_k",
                "cannot be combined with a `reranker`, which reorders one list of candidates per question (raise `retriever.ef_search` instead)".into(),
            );
        }
        if r.ef_search.is_some_and(|ef| !(1..=1000).contains(&ef)) {
            return fail(
                &[Key("retriever"), Key("ef_search")],
                "retriever.ef_search",
                "must be from 1 to 1000 (pgvector's range)".into(),
            );
        }
        if r.kind == RetrieverKind::Pgvector
            && (r.table.trim().is_empty()
                || r.columns.embedding.is_empty()
                || r.columns.id.is_empty()
                || r.columns.text.is_empty()
                || r.columns.source.is_empty())
        {
            return fail(
                &[Key("retriever")],
                "retriever.table",
                "`table` and the `id`, `source`, `text` and `embedding` columns must be named"
                    .into(),
            );
        }
        if let Err(msg) = crate::adapters::scan::Scanner::new(&c.scan.patterns) {
            return fail(&[Key("scan"), Key("patterns")], "scan.patterns", msg);
        }
        if c.embedder.concurrency == 0 {
            return fail(
                &[Key("embedder"), Key("concurrency")],
                "embedder.concurrency",
                "must be at least 1".into(),
            );
        }
        if c.embedder.batch_size == 0 {
            return fail(
                &[Key("embedder"), Key("batch_size")],
                "embedder.batch_size",
                "must be at least 1".into(),
            );
        }
        if c.chat.max_tokens == Some(0) {
            return fail(
                &[Key("chat"), Key("max_tokens")],
                "chat.max_tokens",
                "must be at least 1 (leave it out for the server's default)".into(),
            );
        }
        if !(0.0..=2.0).contains(&c.chat.temperature) {
            return fail(
                &[Key("chat"), Key("temperature")],
                "chat.temperature",
                "must be between 0 and 2".into(),
            );
        }
        for (name, m) in &c.models {
            if let Err((field, msg)) = profiles::check_chat(m) {
                return fail(
                    &[Key("models"), Key(name), Key(field)],
                    &format!("models.{name}.{field}"),
                    msg,
                );
            }
        }
        for (name, e) in &c.embedders {
            if let Err((field, msg)) = profiles::check_embedder(e) {
                return fail(
                    &[Key("embedders"), Key(name), Key(field)],
                    &format!("embedders.{name}.{field}"),
                    msg,
                );
            }
        }
        if c.embedder.max_input_tokens == Some(0) {
            return fail(
                &[Key("embedder"), Key("max_input_tokens")],
                "embedder.max_input_tokens",
                "must be at least 1 (leave it out for no limit)".into(),
            );
        }
        if !(1..=MAX_DIMENSIONS).contains(&c.embedder.dimensions) {
            return fail(
                &[Key("embedder"), Key("dimensions")],
                "embedder.dimensions",
                format!(
                    "must be from 1 to {MAX_DIMENSIONS}, got {}",
                    c.embedder.dimensions
                ),
            );
        }
        if c.sweep.concurrency == 0 {
            return fail(
                &[Key("sweep"), Key("concurrency")],
                "sweep.concurrency",
                "must be at least 1".into(),
            );
        }
        if c.prompt.refusal.trim().is_empty() {
            return fail(
                &[Key("prompt"), Key("refusal")],
                "prompt.refusal",
                "is empty".into(),
            );
        }
        if let Err(e) = c.prompt.prompt() {
            return fail(
                &[Key("prompt"), Key(e.field)],
                &format!("prompt.{}", e.field),
                e.error.to_string(),
            );
        }
        if let Err(e) = c.generate.prompts() {
            return fail(
                &[Key("generate"), Key(e.field)],
                &format!("generate.{}", e.field),
                e.error.to_string(),
            );
        }
        if let Err((field, msg)) = c.generate.check() {
            return fail(
                &[Key("generate"), Key(field)],
                &format!("generate.{field}"),
                msg,
            );
        }
        let writer = match c.generate.model.as_deref() {
            None | Some(crate::vocab::grid::DEFAULT_PROFILE) => Some(&c.chat),
            Some(name) => c.models.get(name),
        };
        if writer.is_some_and(|w| w.kind == ChatKind::Http) && c.generate.model.is_some() {
            return fail(
                &[Key("generate"), Key("model")],
                "generate.model",
                "names a generation endpoint (kind: http), which builds its own prompt: the generator needs a model of kind openai or mock".into(),
            );
        }
        if let Some(name) = c.generate.model.as_deref() {
            if name != crate::vocab::grid::DEFAULT_PROFILE && !c.models.contains_key(name) {
                return fail(
                    &[Key("generate"), Key("model")],
                    "generate.model",
                    format!(
                        "unknown chat profile `{name}`; `models:` defines {}",
                        profiles::known(c.models.keys())
                    ),
                );
            }
        }
        if let Err((i, msg)) =
            crate::adapters::prompt::RefusalPatterns::new(&c.prompt.refusal_patterns)
        {
            return fail(
                &[
                    Key("prompt"),
                    Key("refusal_patterns"),
                    crate::base::yaml_loc::Seg::Index(i),
                ],
                &format!("prompt.refusal_patterns[{i}]"),
                msg,
            );
        }
        let cached_price = c
            .pricing
            .cached_prompt_per_million
            .map(|v| ("pricing", "cached_prompt_per_million", v));
        let judge_prices = c.judge.as_ref().map(|j| {
            [
                ("judge", "prompt_per_million", j.prompt_per_million),
                ("judge", "completion_per_million", j.completion_per_million),
            ]
        });
        for (section, field, v) in [
            (
                "pricing",
                "prompt_per_million",
                c.pricing.prompt_per_million,
            ),
            (
                "pricing",
                "completion_per_million",
                c.pricing.completion_per_million,
            ),
        ]
        .into_iter()
        .chain(cached_price)
        .chain(judge_prices.into_iter().flatten())
        {
            if !(v >= 0.0 && v.is_finite()) {
                return fail(
                    &[Key(section), Key(field)],
                    &format!("{section}.{field}"),
                    "must be a price of 0 or more".into(),
                );
            }
        }
        // A policy's limits, each checked as its kind asks: the first bad one.
        let bad_limit =
            |section: &'static str, scope: Scope, limits: crate::vocab::limit::Limits| {
                limits.iter().find_map(|(limit, v)| {
                    let field = limit.key();
                    limit.check(scope, v).err().map(|msg| {
                        fail(
                            &[Key(section), Key(field)],
                            &format!("{section}.{field}"),
                            msg,
                        )
                    })
                })
            };
        if let Some(err) = bad_limit("recommend", Scope::Recommend, c.recommend.limits()) {
            return err;
        }
        let r = &c.recommend;
        for (field, v) in [
            ("false_refusal_rate", r.weights.false_refusal_rate),
            ("unwanted_answer_rate", r.weights.unwanted_answer_rate),
            (
                "prompt_tokens_per_question",
                r.weights.prompt_tokens_per_question,
            ),
            ("wrong_answer_rate", r.weights.wrong_answer_rate),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return fail(
                    &[Key("recommend"), Key("weights"), Key(field)],
                    &format!("recommend.weights.{field}"),
                    format!("must be a weight of 0 or more, got {v}"),
                );
            }
        }
        // Certification and its resampling (docs/insight.md).
        if let Err((field, msg)) = r.check() {
            return fail(
                &[Key("recommend"), Key(field)],
                &format!("recommend.{field}"),
                msg,
            );
        }
        let grid = match sweep_grid(c) {
            Ok(grid) => grid,
            Err((d, msg)) => {
                let key = d.config_key();
                return fail(&[Key("sweep"), Key(key)], &format!("sweep.{key}"), msg);
            }
        };
        // The `gate:` section: a share, a valid alpha, its limits, a parsable setting.
        use crate::output::gate::policy::{check_alpha, Validator};
        let g = &c.gate;
        let gate_numbers: [(&str, f64, Validator); 2] = [
            ("tolerance", g.tolerance, crate::vocab::limit::check_share),
            ("alpha", g.alpha, check_alpha),
        ];
        for (field, value, check) in gate_numbers {
            if let Err(msg) = check(value) {
                return fail(&[Key("gate"), Key(field)], &format!("gate.{field}"), msg);
            }
        }
        if let Some(err) = bad_limit("gate", Scope::Gate, c.gate.limits()) {
            return err;
        }
        if let Some(Err(msg)) = g
            .setting
            .as_deref()
            .map(str::parse::<crate::output::gate::SettingSpec>)
        {
            return fail(&[Key("gate"), Key("setting")], "gate.setting", msg);
        }
        Ok(grid)
    }

    /// The question sets the config names, or every `evalsets/*.yaml` beside it.
    pub fn evalsets(&self) -> Vec<PathBuf> {
        if !self.config.evalsets.is_empty() {
            return self
                .config
                .evalsets
                .iter()
                .map(|p| self.resolve(p))
                .collect();
        }
        let dir = self.resolve("evalsets");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        found.sort();
        found
    }

    /// The report folder.
    pub fn out_dir(&self) -> PathBuf {
        self.resolve(self.config.out.as_deref().unwrap_or("reports/latest"))
    }

    /// A path from the config, relative to the config's folder (`scripts/../x` reads as `x`).
    pub fn resolve(&self, path: impl AsRef<Path>) -> PathBuf {
        let joined = if self.base == Path::new(".") {
            path.as_ref().to_path_buf()
        } else {
            self.base.join(path)
        };
        let mut out = PathBuf::new();
        for part in joined.components() {
            match part {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir
                    if matches!(
                        out.components().next_back(),
                        Some(std::path::Component::Normal(_))
                    ) =>
                {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        if out.as_os_str().is_empty() {
            out.push(".");
        }
        out
    }
}
