//! The pipeline of a sweep whose calls go to a batch engine: every chat model and the judge
//! behind [`DeferredModel`], so the sweep's uncached requests are collected, not sent.

use std::sync::Arc;

use super::Pipeline;
use crate::adapters::batch::{Collector, DeferredModel, StoreKind};
use crate::adapters::chat::ChatModel;

impl Pipeline {
    /// This pipeline with the calls of its chat model (store `chat.jsonl`), with `profiles`
    /// also of the other chat profiles, and of its judge (`judge.jsonl`) kept in `collector`;
    /// cached replies are given as usual.
    pub fn deferred(&self, collector: &Arc<Collector>, profiles: bool) -> Pipeline {
        let defer = |m: &Arc<dyn ChatModel>, store| -> Arc<dyn ChatModel> {
            Arc::new(DeferredModel::new(m.clone(), store, collector.clone()))
        };
        let mut p = self.clone();
        p.model = defer(&self.model, StoreKind::Chat);
        // The chat section's own model at other temperatures is on its server too.
        let batched = |v: &crate::sweep::ChatVariant| {
            profiles || v.profile == crate::vocab::grid::DEFAULT_PROFILE
        };
        for v in p.chat_variants.iter_mut().filter(|v| batched(v)) {
            v.model = defer(&v.model, StoreKind::Chat);
        }
        p.judge = self.judge.as_ref().map(|j| defer(j, StoreKind::Judge));
        p
    }
}
