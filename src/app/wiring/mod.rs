//! The wiring: the pipeline under test built once from the checked config (embedder, chat
//! model, reranker, judge, each behind its HTTP endpoints, rate limits and response cache),
//! and the chat and embedder profiles beside it (`profiles`).

pub mod batch;
pub mod profiles;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

use crate::adapters::cache::{CacheMode, CachedEmbedder, CachedModel};
use crate::adapters::chat::{ChatModel, HttpChat, OpenAiChat};
use crate::adapters::classify::Rules;
use crate::adapters::embed::{Embedder, HashEmbedder, OpenAiEmbedder};
use crate::adapters::http::{endpoints, Endpoints, Held};
use crate::adapters::mock::MockModel;
use crate::adapters::prompt::{RefusalMatch, RefusalPatterns};
use crate::analysis::stats::Pricing;
use crate::app::config::{ChatConfig, ChatKind, EmbedderKind, LoadedConfig};
use crate::vocab::grid::{self};

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
    /// The judge's response cache (`judge.jsonl`), when it has one.
    pub(crate) judge_store:
        Option<Arc<crate::adapters::cache::Store<crate::adapters::cache::CachedReply>>>,
    /// The embedder profiles of `--embedder` besides `default` (see
    /// [`Pipeline::add_embedders`]), by name; empty otherwise.
    pub embedders: Vec<(String, Arc<dyn Embedder>)>,
    /// The embedding cache `embedder` writes through, which the profiles share.
    pub(crate) embed_store: Option<Arc<crate::adapters::cache::Store<Vec<f32>>>>,
    /// Whether calls are cached, and how (`None`: not at all).
    pub(crate) cache: Option<CacheMode>,
    pub(crate) cache_dir: PathBuf,
    /// `--stream`: every chat model streams, whatever its section says.
    pub(crate) stream: bool,
    pub(crate) held: Arc<Held>,
    /// The reranker, when `reranker:` is configured.
    pub reranker: Option<Arc<dyn crate::adapters::rerank::Reranker>>,
}

/// What a command's flags change in how the pipeline is built, on top of the config (which is
/// never written): the flags resolved once by [`crate::app::options`].
#[derive(Debug, Clone, Default)]
pub struct Wiring {
    /// `--strict-refusal`: on whatever `prompt.strict_refusal` says.
    pub strict_refusal: bool,
    /// `--stream`: every chat model streams, whatever its section says.
    pub stream: bool,
    /// Whether calls are cached, and how (`None`: not at all, as `--no-cache`).
    pub cache: Option<CacheMode>,
    /// The cache's folder instead of `cache.dir` (`--cache-dir`, a shard's own folder).
    pub cache_dir: Option<PathBuf>,
}

/// The response cache's folder, worked out here for every command: `--cache-dir` (relative
/// to the current folder, as every other flag's path is) else the config's `cache.dir`, and
/// under it the folder of `shard` when the sweep runs one (each shard keeps its own cache
/// files, so shards on one machine never share one).
pub fn cache_folder(
    cfg: &LoadedConfig,
    flag: Option<&std::path::Path>,
    shard: Option<crate::sweep::Shard>,
) -> Result<PathBuf> {
    use anyhow::Context;
    let dir = match flag {
        Some(dir) => std::path::absolute(dir)
            .with_context(|| format!("invalid --cache-dir `{}`", dir.display()))?,
        None => cfg.resolve(&cfg.config.cache.dir),
    };
    Ok(match shard {
        Some(sh) => dir.join(sh.folder()),
        None => dir,
    })
}

/// The servers of one chat model: which profile they serve, as messages show them, and
/// whether they are dead.
#[derive(Clone)]
pub struct ChatServer {
    /// A key of `models:`, or `default` for the `chat:` section.
    pub profile: String,
    /// The base URLs, redacted (see [`crate::app::config::HttpConfig::shown`]).
    pub shown: String,
    pub dead: Arc<crate::adapters::http::DeadServer>,
}

/// What a chat model is asked to do, which decides how it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatRole {
    /// Answer the sweep's prompts (`chat:`, `models:`).
    Answer,
    /// Grade replies (`judge:`), sending the rubric's reply format as `response_format`
    /// when `structured_output` is on.
    Judge { structured_output: bool },
    /// Write and verify questions (`rageval generate`), likewise.
    Generator { structured_output: bool },
}

/// A chat model as [`chat_model`] builds it: uncached, with its servers' state.
pub(crate) struct BuiltChat {
    pub model: Arc<dyn ChatModel>,
    /// Whether its servers are dead; `None` for a model that calls no server.
    pub dead: Option<Arc<crate::adapters::http::DeadServer>>,
    /// Whether its section sets a rate limit.
    pub rate_limited: bool,
}

/// The one place a chat model is built from its section (`chat:`, a `models:` profile, the
/// judge's section as [`crate::app::config::JudgeConfig::as_chat`]) for `role`: the kind says
/// whether it calls a server and whether it builds its own prompt; the section gives the rest.
/// The builtin mock says `refusal`; waiting for a rate limit is counted in `held`.
pub(crate) fn chat_model(
    section: &crate::app::config::ChatConfig,
    role: ChatRole,
    refusal: &str,
    held: &Arc<Held>,
) -> Result<BuiltChat> {
    if section.kind.takes_passages() && role != ChatRole::Answer {
        // The config check refuses it first.
        anyhow::bail!(
            "`{}` is a generation endpoint (kind: {}), which builds its own prompt: it cannot be the {role:?} model",
            section.model_name(),
            section.kind
        );
    }
    // One arm per kind: a new kind does not compile until it says how it is built.
    let name = section.model_name();
    match section.kind {
        ChatKind::Mock => Ok(BuiltChat {
            model: Arc::new(MockModel::new(refusal).answering(crate::generate::mock::reply)),
            dead: None,
            rate_limited: false,
        }),
        ChatKind::Http => remote_chat(section, held, |e| Ok(Arc::new(HttpChat::new(e, &name)?))),
        ChatKind::Openai => remote_chat(section, held, |e| {
            let chat = OpenAiChat::new(
                e,
                &name,
                section.temperature,
                section.max_tokens,
                section.stream,
            )?;
            Ok(Arc::new(match role {
                ChatRole::Answer => chat,
                ChatRole::Judge { structured_output }
                | ChatRole::Generator { structured_output } => {
                    chat.with_structured_output(structured_output)
                }
            }))
        }),
    }
}

/// A chat model that calls the servers of `section`: `build` makes it over their endpoints.
fn remote_chat(
    section: &crate::app::config::ChatConfig,
    held: &Arc<Held>,
    build: impl FnOnce(Endpoints) -> std::result::Result<Arc<dyn ChatModel>, String>,
) -> Result<BuiltChat> {
    let endpoints = endpoints(section.endpoint(), held)?;
    let dead = Some(endpoints.dead.clone());
    let rate_limited = endpoints.limiter.is_some();
    Ok(BuiltChat {
        model: build(endpoints).map_err(|e| anyhow::anyhow!(e))?,
        dead,
        rate_limited,
    })
}

/// The OpenAI-compatible embedder of an `embedder:` section or `embedders:` profile, behind
/// `endpoints`, uncached.
pub(crate) fn openai_embedder(
    section: &crate::app::config::EmbedderConfig,
    endpoints: Endpoints,
) -> Result<Arc<dyn Embedder>> {
    let embedder = OpenAiEmbedder::new(
        endpoints,
        &section.model,
        section.batch_size,
        section.concurrency,
    )
    .map_err(|e| anyhow::anyhow!(e))?
    .with_max_input_tokens(section.max_input_tokens);
    Ok(Arc::new(embedder))
}

impl Pipeline {
    /// The sweep engine over this pipeline: its models, judge, reranker and rules, with
    /// `retriever` and the `retrieval` variants; no progress feed, one repeat.
    pub fn engine(
        &self,
        retriever: Option<Arc<dyn crate::adapters::retriever::Retriever>>,
        retrieval: Vec<crate::sweep::RetrievalVariant>,
        concurrency: usize,
    ) -> crate::sweep::Engine {
        crate::sweep::Engine {
            embedder: self.embedder.clone(),
            model: self.model.clone(),
            chat_variants: self.chat_variants.clone(),
            retrieval,
            judge: self.judge.clone(),
            rules: self.rules.clone(),
            concurrency,
            progress: None,
            retriever,
            reranker: self.reranker.clone(),
            repeat: 1,
            coverage: crate::sweep::Coverage::all(),
        }
    }

    /// Build the configured models as `wiring` says. HTTP models sit behind the response
    /// cache unless `wiring.cache` is `None` (or `cache.enabled` is off); the builtin ones are
    /// instant and never cached.
    pub fn from_config(cfg: &LoadedConfig, wiring: &Wiring) -> Result<Self> {
        let c = &cfg.config;
        let mut parts = Parts {
            c,
            cache_dir: match &wiring.cache_dir {
                Some(dir) => dir.clone(),
                None => cache_folder(cfg, None, None)?,
            },
            cache: wiring.cache.filter(|_| c.cache.enabled),
            stream: wiring.stream,
            held: Arc::new(Held::default()),
            rate_limited: false,
        };
        let (embedder, embed_store) = parts.embedder()?;
        let answer = parts.answer_model()?;
        let judge = parts.judge()?;
        let reranker = parts.reranker()?;
        let rules = rules(c, wiring.strict_refusal)?;
        let Parts {
            cache,
            cache_dir,
            held,
            rate_limited,
            ..
        } = parts;
        Ok(Pipeline {
            reranker,
            chat_servers: answer.servers,
            judge_dead: judge.dead,
            chat_variants: Vec::new(),
            chat_store: answer.store,
            judge_store: judge.store,
            embedders: Vec::new(),
            embed_store,
            cache,
            cache_dir,
            stream: wiring.stream,
            rate_limited: rate_limited.then_some(held.clone()),
            held,
            embedder,
            model: answer.model,
            judge: judge.model,
            rules,
            pricing: Pricing {
                prompt_per_million: c.pricing.prompt_per_million,
                cached_prompt_per_million: c.pricing.cached_prompt_per_million,
                completion_per_million: c.pricing.completion_per_million,
                judge_prompt_per_million: c.judge.as_ref().map_or(0.0, |j| j.prompt_per_million),
                judge_completion_per_million: c
                    .judge
                    .as_ref()
                    .map_or(0.0, |j| j.completion_per_million),
                batch_discount: c.pricing.batch_discount,
            },
            currency: if c.pricing.currency.is_empty() {
                "USD".into()
            } else {
                c.pricing.currency.clone()
            },
        })
    }
}

type ReplyStore = Arc<crate::adapters::cache::Store<crate::adapters::cache::CachedReply>>;
type EmbedStore = Arc<crate::adapters::cache::Store<Vec<f32>>>;

/// The `chat:` model as the pipeline holds it, its server and the store of its cache.
struct AnswerModel {
    model: Arc<dyn ChatModel>,
    servers: Vec<ChatServer>,
    store: Option<ReplyStore>,
}

/// The judge as the pipeline holds it, whether its server is dead, and its cache's store.
struct JudgeModel {
    model: Option<Arc<dyn ChatModel>>,
    dead: Option<Arc<crate::adapters::http::DeadServer>>,
    store: Option<ReplyStore>,
}

/// What [`Pipeline::from_config`] builds each model from: the config, the response cache and
/// the rate limits' shared state; `rate_limited` says whether any section set a limit.
struct Parts<'a> {
    c: &'a crate::app::config::Config,
    cache_dir: PathBuf,
    cache: Option<CacheMode>,
    /// `--stream`: the answer model streams whatever `chat.stream` says.
    stream: bool,
    held: Arc<Held>,
    rate_limited: bool,
}

impl Parts<'_> {
    /// The embedder, behind the cache when it calls a server; with the cache's store.
    fn embedder(&mut self) -> Result<(Arc<dyn Embedder>, Option<EmbedStore>)> {
        let c = self.c;
        match c.embedder.kind {
            EmbedderKind::Hash => Ok((Arc::new(HashEmbedder::new(c.embedder.dimensions)), None)),
            EmbedderKind::Openai => {
                let endpoints = endpoints(c.embedder.http(), &self.held)?;
                self.rate_limited |= endpoints.limiter.is_some();
                let http = openai_embedder(&c.embedder, endpoints)?;
                Ok(match self.cache {
                    Some(mode) => {
                        let store = CachedEmbedder::open_store(&self.cache_dir, mode)?;
                        let cached = Arc::new(CachedEmbedder::sharing(http, store.clone(), mode));
                        (cached, Some(store))
                    }
                    None => (http, None),
                })
            }
        }
    }

    /// The `chat:` model, behind the cache when it calls a server; its server (whether it is
    /// dead) and the cache's store.
    fn answer_model(&mut self) -> Result<AnswerModel> {
        let c = self.c;
        let section = ChatConfig {
            stream: c.chat.stream || self.stream,
            ..c.chat.clone()
        };
        let chat = chat_model(&section, ChatRole::Answer, &c.prompt.refusal, &self.held)?;
        self.rate_limited |= chat.rate_limited;
        let Some(dead) = chat.dead else {
            return Ok(AnswerModel {
                model: chat.model,
                servers: Vec::new(),
                store: None,
            });
        };
        let servers = vec![ChatServer {
            profile: grid::DEFAULT_PROFILE.to_string(),
            shown: c.chat.endpoint().shown(),
            dead,
        }];
        Ok(match self.cache {
            Some(mode) => {
                let store = CachedModel::open_store(&self.cache_dir, mode)?;
                let cached = Arc::new(CachedModel::sharing(chat.model, store.clone(), mode));
                AnswerModel {
                    model: cached,
                    servers,
                    store: Some(store),
                }
            }
            None => AnswerModel {
                model: chat.model,
                servers,
                store: None,
            },
        })
    }

    /// The judge, when one is configured, behind its own cache file when it calls a server;
    /// whether its server is dead, and the cache's store.
    fn judge(&mut self) -> Result<JudgeModel> {
        let c = self.c;
        let Some(j) = &c.judge else {
            return Ok(JudgeModel {
                model: None,
                dead: None,
                store: None,
            });
        };
        let role = ChatRole::Judge {
            structured_output: j.structured_output,
        };
        let built = chat_model(&j.as_chat(), role, &c.prompt.refusal, &self.held)?;
        self.rate_limited |= built.rate_limited;
        let dead = built.dead;
        Ok(match self.cache.filter(|_| dead.is_some()) {
            Some(mode) => {
                let store = Arc::new(crate::adapters::cache::Store::open(
                    &self.cache_dir.join("judge.jsonl"),
                    mode,
                )?);
                let cached = Arc::new(CachedModel::sharing(built.model, store.clone(), mode));
                JudgeModel {
                    model: Some(cached),
                    dead,
                    store: Some(store),
                }
            }
            None => JudgeModel {
                model: Some(built.model),
                dead,
                store: None,
            },
        })
    }

    /// The reranker, when one is configured, behind the cache.
    fn reranker(&mut self) -> Result<Option<Arc<dyn crate::adapters::rerank::Reranker>>> {
        let Some(r) = &self.c.reranker else {
            return Ok(None);
        };
        let endpoints = endpoints(r.http(), &self.held)?;
        self.rate_limited |= endpoints.limiter.is_some();
        let http: Arc<dyn crate::adapters::rerank::Reranker> = Arc::new(
            crate::adapters::rerank::HttpReranker::new(endpoints, &r.model, r.candidates, r.top_n)
                .map_err(|e| anyhow::anyhow!(e))?,
        );
        Ok(Some(match self.cache {
            Some(mode) => Arc::new(crate::adapters::rerank::CachedReranker::new(
                http,
                &self.cache_dir,
                mode,
            )?),
            None => http,
        }))
    }
}

/// How replies are classified: the refusal, how strictly it is matched, the patterns and the
/// prompt.
fn rules(c: &crate::app::config::Config, strict_refusal: bool) -> Result<Rules> {
    let strict = strict_refusal || c.prompt.strict_refusal;
    // Both were checked when the config was loaded.
    let prompt = c
        .prompt
        .prompt()
        .map_err(|e| anyhow::anyhow!("`prompt.{}`: {}", e.field, e.error))?;
    let patterns = RefusalPatterns::new(&c.prompt.refusal_patterns)
        .map_err(|(i, msg)| anyhow::anyhow!("`prompt.refusal_patterns[{i}]`: {msg}"))?;
    Ok(Rules {
        refusal: c.prompt.refusal.clone(),
        refusal_match: if strict {
            RefusalMatch::Strict
        } else {
            RefusalMatch::Lenient
        },
        patterns,
        prompt,
    })
}
