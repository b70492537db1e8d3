//! What a batch cycle needs of the pipeline: its response cache.

use super::Pipeline;
use crate::batch::CacheFiles;

impl Pipeline {
    /// The response cache a batch cycle imports into: the folder and the stores this pipeline
    /// writes through; none without a cache (`--no-cache`, `cache.enabled: false`).
    pub fn batch_cache(&self) -> Option<CacheFiles> {
        self.cache.map(|_| CacheFiles {
            dir: self.cache_dir.clone(),
            chat: self.chat_store.clone(),
            judge: self.judge_store.clone(),
            embeddings: self.embed_store.clone(),
        })
    }
}
