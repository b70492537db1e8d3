//! Chat and embedder profiles (`models:`, `embedders:`): the models that `--chat`,
//! `--temperature` and `--embedder` name, built beside the configured ones.

use std::sync::Arc;

use anyhow::Result;

use super::{chat_model, ChatRole, Pipeline};
use crate::adapters::cache::{CachedEmbedder, CachedModel};
use crate::adapters::chat::ChatModel;
use crate::adapters::embed::{Embedder, HashEmbedder};
use crate::adapters::http::endpoints;
use crate::app::config::{EmbedderKind, LoadedConfig};
use crate::vocab::grid::Grid;

impl Pipeline {
    /// Build the chat model of every (profile, temperature) of `grid` but the configured one:
    /// a profile is `models.NAME` (`default`: the `chat:` section) with the temperature set.
    /// A variant with the identity of one already built (same model and parameters) reuses
    /// it, so its equal requests are one call; all share `chat.jsonl`.
    pub fn add_chat_variants(&mut self, cfg: &LoadedConfig, grid: &Grid) -> Result<()> {
        let c = &cfg.config;
        let mut built: Vec<((String, String), Arc<dyn ChatModel>)> = vec![(
            (self.model.model(), self.model.params().to_string()),
            self.model.clone(),
        )];
        for profile in grid.chats() {
            let section = chat_profile(cfg, profile)?;
            for temperature in grid.temperatures() {
                if profile == crate::vocab::grid::DEFAULT_PROFILE && temperature.is_none() {
                    continue;
                }
                let mut section = section.clone();
                if let Some(t) = temperature {
                    section.temperature = t.to_f64();
                }
                section.stream |= c.chat.stream || self.stream;
                let chat = chat_model(&section, ChatRole::Answer, &c.prompt.refusal, &self.held)?;
                if chat.rate_limited {
                    self.rate_limited = Some(self.held.clone());
                }
                let remote = chat.dead.is_some();
                let server = chat.dead.map(|dead| super::ChatServer {
                    profile: profile.to_string(),
                    shown: section.endpoint().shown(),
                    dead,
                });
                let raw = chat.model;
                let id = (raw.model(), raw.params().to_string());
                let model = match built.iter().find(|(b, _)| *b == id) {
                    Some((_, m)) => m.clone(),
                    None => {
                        let model = if remote {
                            self.shared_chat_cache(raw)?
                        } else {
                            raw
                        };
                        built.push((id, model.clone()));
                        // Only a model built here calls its own servers.
                        self.chat_servers.extend(server);
                        model
                    }
                };
                self.chat_variants.push(crate::sweep::ChatVariant {
                    profile: profile.to_string(),
                    temperature,
                    model,
                });
            }
        }
        Ok(())
    }
}

impl Pipeline {
    /// Build the embedder of every profile of `grid` but `default`, sharing
    /// `embeddings.jsonl`.
    pub fn add_embedders(&mut self, cfg: &LoadedConfig, grid: &Grid) -> Result<()> {
        for name in grid.embedders() {
            if name == crate::vocab::grid::DEFAULT_PROFILE {
                continue;
            }
            let e = embedder_profile(cfg, name)?;
            let embedder: Arc<dyn Embedder> = match e.kind {
                EmbedderKind::Hash => Arc::new(HashEmbedder::new(e.dimensions)),
                EmbedderKind::Openai => {
                    let endpoints = endpoints(e.http(), &self.held)?;
                    if endpoints.limiter.is_some() {
                        self.rate_limited = Some(self.held.clone());
                    }
                    let http = super::openai_embedder(e, endpoints)?;
                    match self.cache {
                        Some(mode) => {
                            let store = match &self.embed_store {
                                Some(s) => s.clone(),
                                None => {
                                    let s = CachedEmbedder::open_store(&self.cache_dir, mode)?;
                                    self.embed_store = Some(s.clone());
                                    s
                                }
                            };
                            Arc::new(CachedEmbedder::sharing(http, store, mode))
                        }
                        None => http,
                    }
                }
            };
            self.embedders.push((name.to_string(), embedder));
        }
        Ok(())
    }

    /// The chat model of profile `name` at its own temperature (`default`:
    /// [`Pipeline::model`]); the first variant of the profile when the grid sets temperatures.
    pub fn chat_model_of(&self, name: &str) -> Arc<dyn ChatModel> {
        if name == crate::vocab::grid::DEFAULT_PROFILE {
            return self.model.clone();
        }
        self.chat_variants
            .iter()
            .find(|v| v.profile == name)
            .map_or_else(|| self.model.clone(), |v| v.model.clone())
    }

    /// The embedder of profile `name` (`default`: [`Pipeline::embedder`]).
    pub fn embedder_of(&self, name: &str) -> Arc<dyn Embedder> {
        self.embedders
            .iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| self.embedder.clone(), |(_, e)| e.clone())
    }
}

impl Pipeline {
    /// The model `rageval generate` asks (`generate.model`, default the `chat:` section),
    /// with `generate.structured_output`, behind the response cache `chat.jsonl` when calls
    /// are cached.
    pub fn generator(&mut self, cfg: &LoadedConfig) -> Result<Arc<dyn ChatModel>> {
        let c = &cfg.config;
        let name = c
            .generate
            .model
            .as_deref()
            .unwrap_or(crate::vocab::grid::DEFAULT_PROFILE);
        let section = chat_profile(cfg, name)?;
        if section.kind.takes_passages() {
            // The config check refuses it first.
            anyhow::bail!(
                "`generate.model`: `{name}` is a generation endpoint (kind: {}), which builds its own prompt; name a model of kind openai or mock",
                section.kind
            );
        }
        let role = ChatRole::Generator {
            structured_output: c.generate.structured_output,
        };
        let built = chat_model(section, role, &c.prompt.refusal, &self.held)?;
        if built.rate_limited {
            self.rate_limited = Some(self.held.clone());
        }
        if built.dead.is_none() {
            return Ok(built.model);
        }
        self.shared_chat_cache(built.model)
    }

    /// `raw` behind the response cache `chat.jsonl` (opened once, shared by every chat
    /// model), when calls are cached; `raw` itself otherwise.
    fn shared_chat_cache(&mut self, raw: Arc<dyn ChatModel>) -> Result<Arc<dyn ChatModel>> {
        let Some(mode) = self.cache else {
            return Ok(raw);
        };
        let store = match &self.chat_store {
            Some(s) => s.clone(),
            None => {
                let s = CachedModel::open_store(&self.cache_dir, mode)?;
                self.chat_store = Some(s.clone());
                s
            }
        };
        Ok(Arc::new(CachedModel::sharing(raw, store, mode)))
    }
}

/// The config section of embedder profile `name`; an unknown name lists the known ones.
pub(crate) fn embedder_profile<'c>(
    cfg: &'c LoadedConfig,
    name: &str,
) -> Result<&'c crate::app::config::EmbedderConfig> {
    if name == crate::vocab::grid::DEFAULT_PROFILE {
        return Ok(&cfg.config.embedder);
    }
    cfg.config.embedders.get(name).ok_or_else(|| {
        anyhow::anyhow!(
            "invalid --embedder: unknown embedder profile `{name}`; the config defines {}",
            crate::app::config::profiles::known(cfg.config.embedders.keys())
        )
    })
}

/// The config section of chat profile `name`; an unknown name lists the known ones.
pub(crate) fn chat_profile<'c>(
    cfg: &'c LoadedConfig,
    name: &str,
) -> Result<&'c crate::app::config::ChatConfig> {
    if name == crate::vocab::grid::DEFAULT_PROFILE {
        return Ok(&cfg.config.chat);
    }
    cfg.config.models.get(name).ok_or_else(|| {
        anyhow::anyhow!(
            "invalid --chat: unknown chat profile `{name}`; the config defines {}",
            crate::app::config::profiles::known(cfg.config.models.keys())
        )
    })
}

impl Pipeline {
    /// The retrieval variants of the grid's (embedder profile, chunk size) pairs; empty when
    /// the grid names neither dimension. `retriever` is the `default` embedder's; a pgvector
    /// retriever is opened per embedder from `section`, so each one's dimensions are checked
    /// against the table. `members`: each chunk size's members of the joined corpora.
    pub async fn retrieval_variants(
        &self,
        section: &crate::app::config::RetrieverConfig,
        grid: &Grid,
        retriever: &Option<Arc<dyn crate::adapters::retriever::Retriever>>,
        members: Option<Vec<Vec<Vec<usize>>>>,
    ) -> Result<Vec<crate::sweep::RetrievalVariant>> {
        use crate::vocab::dim::Dim;
        if grid.at_default(Dim::Embedder) && grid.at_default(Dim::ChunkTokens) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for profile in grid.embedders() {
            let embedder = self.embedder_of(profile);
            let retriever = if profile == crate::vocab::grid::DEFAULT_PROFILE {
                retriever.clone()
            } else {
                crate::adapters::retriever::open(section, embedder.clone())
                    .await
                    .map_err(|e| anyhow::anyhow!("embedder profile `{profile}`: {e:#}"))?
            };
            for (i, chunk_tokens) in grid.chunk_tokens().enumerate() {
                out.push(crate::sweep::RetrievalVariant {
                    embedder_profile: profile.to_string(),
                    chunk_tokens,
                    embedder: embedder.clone(),
                    retriever: retriever.clone(),
                    members: members.as_ref().map(|m| m[i].clone()),
                });
            }
        }
        Ok(out)
    }
}
