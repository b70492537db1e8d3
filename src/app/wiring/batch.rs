//! The pipeline of a sweep whose calls go to a batch engine: every chat model and the judge
//! behind [`DeferredModel`], and the embedders that batch behind [`DeferredEmbedder`], so the
//! sweep's uncached requests are collected, not sent.

use std::sync::Arc;

use super::Pipeline;
use crate::adapters::chat::ChatModel;
use crate::adapters::embed::Embedder;
use crate::batch::cycle::CacheFiles;
use crate::batch::{Collector, DeferredEmbedder, DeferredModel, StoreKind};
use crate::sweep::RetrievalVariant;
use crate::vocab::grid::DEFAULT_PROFILE;

/// The config section of chat profile `profile`: `chat`, or `models.NAME`.
pub fn chat_section(profile: &str) -> String {
    if profile == DEFAULT_PROFILE {
        "chat".into()
    } else {
        format!("models.{profile}")
    }
}

/// The config section of embedder profile `profile`: `embedder`, or `embedders.NAME`.
pub fn embedder_section(profile: &str) -> String {
    if profile == DEFAULT_PROFILE {
        "embedder".into()
    } else {
        format!("embedders.{profile}")
    }
}

/// A pipeline whose calls are kept, with the retrieval variants that search through it.
pub struct Deferred {
    pub pipeline: Pipeline,
    pub retrieval: Vec<RetrievalVariant>,
    /// Whether an embedder's texts are kept too (see [`DeferredEmbedder`]).
    pub embeddings: bool,
}

impl Pipeline {
    /// The response cache a batch cycle imports into: the folder and the stores this pipeline
    /// writes through.
    pub fn batch_cache(&self) -> CacheFiles {
        CacheFiles {
            dir: self.cache_dir.clone(),
            chat: self.chat_store.clone(),
            judge: self.judge_store.clone(),
            embeddings: self.embed_store.clone(),
        }
    }

    /// This pipeline with the calls of every chat model (store `chat.jsonl`) and of its judge
    /// (`judge.jsonl`) kept in `collector`, and the texts of the embedder profiles `batched`
    /// names (`embeddings.jsonl`), in it and in `retrieval`; cached replies and vectors are
    /// given as usual.
    pub fn deferred(
        &self,
        collector: &Arc<Collector>,
        batched: &dyn Fn(&str) -> bool,
        retrieval: Vec<RetrievalVariant>,
    ) -> Deferred {
        let defer = |m: &Arc<dyn ChatModel>, store, section: &str| -> Arc<dyn ChatModel> {
            Arc::new(DeferredModel::new(
                m.clone(),
                store,
                section,
                collector.clone(),
            ))
        };
        let mut p = self.clone();
        p.model = defer(&self.model, StoreKind::Chat, "chat");
        for v in &mut p.chat_variants {
            v.model = defer(&v.model, StoreKind::Chat, &chat_section(&v.profile));
        }
        p.judge = self
            .judge
            .as_ref()
            .map(|j| defer(j, StoreKind::Judge, "judge"));
        // One deferred embedder per profile, shared by the pipeline and the variants.
        let embedders: Vec<(String, Arc<dyn Embedder>)> = match &self.embed_store {
            None => Vec::new(),
            Some(store) => std::iter::once((DEFAULT_PROFILE.to_string(), self.embedder.clone()))
                .chain(self.embedders.iter().cloned())
                .filter(|(name, _)| batched(name))
                .map(|(name, e)| {
                    let e: Arc<dyn Embedder> = Arc::new(DeferredEmbedder::new(
                        e,
                        store.clone(),
                        &embedder_section(&name),
                        collector.clone(),
                    ));
                    (name, e)
                })
                .collect(),
        };
        let of = |name: &str| {
            embedders
                .iter()
                .find(|(n, _)| n == name)
                .map(|e| e.1.clone())
        };
        if let Some(e) = of(DEFAULT_PROFILE) {
            p.embedder = e;
        }
        for (name, e) in &mut p.embedders {
            if let Some(d) = of(name) {
                *e = d;
            }
        }
        let retrieval = retrieval
            .into_iter()
            .map(|mut v| {
                if let Some(e) = of(&v.embedder_profile) {
                    v.embedder = e;
                }
                v
            })
            .collect();
        Deferred {
            pipeline: p,
            retrieval,
            embeddings: !embedders.is_empty(),
        }
    }
}
