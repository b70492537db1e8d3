//! Which requests of a sweep go through batches, and what they cost there: a question of the
//! sweep's plan, which the batch cycle, the dry run and an adaptive sweep's budget all ask.

use crate::app::config::{ChatConfig, EmbedderConfig, JudgeConfig};
use crate::batch::cycle::Sections;
use crate::batch::Section;
use crate::sweep::DryRun;
use crate::vocab::grid::DEFAULT_PROFILE;

use super::{GenerateOptions, SweepOptions};

impl SweepOptions {
    /// Whether the requests of config section `section` go through batches in a `batch: true`
    /// sweep: the chat section's and the judge's with `chat.batch` (or `--batch`), a profile's
    /// and an embedder's with their own `batch` (or `--batch-embeddings`).
    pub fn batched(&self, section: &Section) -> bool {
        match section {
            Section::Chat | Section::Judge => self.batch(),
            Section::Model(name) => self.chat(name).is_some_and(|m| m.batch),
            Section::Embedder => self.embedder(DEFAULT_PROFILE).is_some_and(|e| e.batch),
            Section::Embedders(name) => self.embedder(name).is_some_and(|e| e.batch),
        }
    }

    /// Whether the calls of chat profile `profile` go through batches (and cost the batch
    /// price).
    pub fn chat_batched(&self, profile: &str) -> bool {
        self.batched(&Section::chat(profile))
    }

    /// Whether the texts of any swept embedder profile go through batches.
    pub fn embeddings_batched(&self) -> bool {
        self.grid()
            .embedders()
            .any(|p| self.batched(&Section::embedder(p)))
    }

    /// Whether any request of the sweep goes through batches (`batch: true` somewhere).
    pub fn any_batched(&self) -> bool {
        self.grid().chats().any(|p| self.chat_batched(p))
            || self.embeddings_batched()
            || self.batch()
    }

    /// Price a dry run's rows as the sweep will pay them: a chat profile whose calls go through
    /// batches at the batch price (`pricing.batch_discount` off), as `--batch-out` prices its
    /// file. The sections so priced, for the dry run's note.
    pub fn batch_priced(&self, rows: &mut [DryRun]) -> Vec<Section> {
        let discount = self.pipeline().pricing.batch_discount;
        rows.iter_mut()
            .filter(|r| self.chat_batched(&r.profile))
            .map(|r| {
                r.prompt_cost *= 1.0 - discount;
                Section::chat(&r.profile)
            })
            .collect()
    }
}

impl Sections for SweepOptions {
    fn chat(&self, profile: &str) -> Option<&ChatConfig> {
        SweepOptions::chat(self, profile)
    }
    fn embedder(&self, profile: &str) -> Option<&EmbedderConfig> {
        SweepOptions::embedder(self, profile)
    }
    fn judge(&self) -> Option<&JudgeConfig> {
        SweepOptions::judge(self)
    }
}

/// `rageval generate` sends batches to its generator's section only.
impl Sections for GenerateOptions {
    fn chat(&self, profile: &str) -> Option<&ChatConfig> {
        GenerateOptions::chat(self, profile)
    }
    fn embedder(&self, _: &str) -> Option<&EmbedderConfig> {
        None
    }
    fn judge(&self) -> Option<&JudgeConfig> {
        None
    }
}
