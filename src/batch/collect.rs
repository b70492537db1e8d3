//! One round's requests, collected instead of sent: the engine of a live sweep (or of
//! `rageval generate`) with every chat model and the judge behind a [`DeferredModel`], and the
//! embedders that batch behind a [`DeferredEmbedder`], planned as the live run would plan it.

use std::sync::Arc;

use anyhow::Result;

use super::{CacheFiles, Collector, DeferredEmbedder, DeferredModel, Pending, Section, StoreKind};
use crate::adapters::chat::ChatModel;
use crate::adapters::embed::Embedder;
use crate::adapters::evalset::Workspace;
use crate::sweep::Engine;
use crate::vocab::grid::{Grid, DEFAULT_PROFILE};

/// A sweep whose requests go through batches: the engine the live sweep runs (its models
/// behind the response cache), what it sweeps, and which sections send batches.
pub struct SweepJob<'a> {
    pub engine: Engine,
    pub ws: &'a Workspace,
    pub grid: &'a Grid,
    /// Whether the requests of a section go through batches (`batch: true`, `--batch`,
    /// `--batch-embeddings`); the rest are called live by the sweep that follows.
    pub batched: Box<dyn Fn(&Section) -> bool + 'a>,
}

impl SweepJob<'_> {
    /// Plan the sweep as a live one and collect, instead of sending, every request the cache
    /// does not hold and `wanted` keeps (one round: embeddings first, then rewrites, then
    /// answers, then the judge's grades). Every chat model and the judge are kept; so are the
    /// embedders whose section batches, and then a first plan, with no reranker and no judge
    /// (so that nothing is called live on stand-in vectors), looks for their texts alone.
    pub async fn collect(
        &self,
        cache: &CacheFiles,
        wanted: &dyn Fn(&Pending) -> bool,
    ) -> Result<Vec<Pending>> {
        let collector = Arc::new(Collector::default());
        let (engine, embeddings) = self.deferred(&collector, cache);
        if embeddings {
            let first = Engine {
                judge: None,
                reranker: None,
                ..engine.clone()
            };
            first.sweep(self.ws, self.grid).await?;
            if collector.has_embeddings() {
                return Ok(collector.take(wanted));
            }
            collector.take(&|_| false);
        }
        engine.sweep(self.ws, self.grid).await?;
        Ok(collector.take(wanted))
    }

    /// The engine with the calls of every chat model (store `chat.jsonl`) and of its judge
    /// (`judge.jsonl`) kept in `collector`, and the texts of the embedder profiles that batch
    /// (`embeddings.jsonl`, when the cache has that store); cached replies and vectors are given
    /// as usual. And whether an embedder's texts are kept.
    fn deferred(&self, collector: &Arc<Collector>, cache: &CacheFiles) -> (Engine, bool) {
        let live = &self.engine;
        let defer = |m: &Arc<dyn ChatModel>, store, section| -> Arc<dyn ChatModel> {
            Arc::new(DeferredModel::new(
                m.clone(),
                store,
                section,
                collector.clone(),
            ))
        };
        let mut e = live.clone();
        e.model = defer(&live.model, StoreKind::Chat, Section::Chat);
        for v in &mut e.chat_variants {
            v.model = defer(&v.model, StoreKind::Chat, Section::chat(&v.profile));
        }
        e.judge = live
            .judge
            .as_ref()
            .map(|j| defer(j, StoreKind::Judge, Section::Judge));
        let Some(store) = &cache.embeddings else {
            return (e, false);
        };
        // One deferred embedder per profile, shared by the engine and its retrieval variants.
        let mut embedders: Vec<(String, Arc<dyn Embedder>)> = Vec::new();
        let mut deferred = |profile: &str, inner: &Arc<dyn Embedder>| {
            if !(self.batched)(&Section::embedder(profile)) {
                return None;
            }
            if let Some((_, d)) = embedders.iter().find(|(p, _)| p == profile) {
                return Some(d.clone());
            }
            let d: Arc<dyn Embedder> = Arc::new(DeferredEmbedder::new(
                inner.clone(),
                store.clone(),
                Section::embedder(profile),
                collector.clone(),
            ));
            embedders.push((profile.to_string(), d.clone()));
            Some(d)
        };
        if let Some(d) = deferred(DEFAULT_PROFILE, &live.embedder) {
            e.embedder = d;
        }
        for v in &mut e.retrieval {
            if let Some(d) = deferred(&v.embedder_profile, &v.embedder) {
                v.embedder = d;
            }
        }
        let any = !embedders.is_empty();
        (e, any)
    }
}

/// One round of `rageval generate`'s batches: its generation (or verification) calls kept,
/// as `generator` (at the server of `section`) would be asked them.
pub async fn generated(
    engine: &Engine,
    generator: &Arc<dyn ChatModel>,
    job: &crate::generate::engine::Job<'_>,
    section: &Section,
) -> Result<Vec<Pending>> {
    let collector = Arc::new(Collector::default());
    let model: Arc<dyn ChatModel> = Arc::new(DeferredModel::new(
        generator.clone(),
        StoreKind::Chat,
        section.clone(),
        collector.clone(),
    ));
    crate::generate::engine::generate(engine, &model, job, None).await?;
    Ok(collector.take(&|_| true))
}
