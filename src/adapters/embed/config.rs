//! The `embedder` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::http_section;
use crate::base::problem::{Checked, Problem};

/// Most buckets of the hash embedder: 65536 (a vector of 256 KiB per text).
pub const MAX_DIMENSIONS: usize = 65_536;

http_section! {
    #[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    pub struct EmbedderConfig {
        /// `hash` (builtin bag of words) or `openai` (any OpenAI-compatible `/embeddings`).
        pub kind: EmbedderKind = EmbedderKind::Hash,
        /// Buckets of the hash embedder.
        pub dimensions: usize = crate::adapters::embed::hash::DEFAULT_DIMENSIONS,
        /// Model name sent to the server (`openai` only).
        pub model: String = "text-embedding-3-small".into(),
        /// Texts per request (`openai` only).
        pub batch_size: usize = 64,
        /// Embedding requests in flight at once (`openai` only).
        pub concurrency: usize = 4,
        /// `openai` only: embed the texts the cache does not hold through the server's Batch
        /// API (`sweep --batch-out` writes them into the batch file), for a corpus too large
        /// to embed live (docs/batch.md).
        pub batch: bool = false,
        @server("OPENAI_API_KEY") {
            /// Base URL with the version path (`openai` only), or a list of servers of the same model.
            /// Default: `$OPENAI_BASE_URL`, else OpenAI's.
        }
        @retries(60.0)
        /// The most tokens the model reads in one input (all-MiniLM-L6-v2: 512). A chunk or question
        /// estimated longer is refused before the sweep, naming it. Default: no limit.
        pub max_input_tokens: Option<usize> = None,
        @rate_limits {
            /// Requests sent per minute at most, paced evenly (`openai` only). Default: no limit.
        } {
            /// Tokens sent per minute at most: a request costs its estimated prompt tokens plus
            /// `max_tokens` (`openai` only). Default: no limit.
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    #[default]
    Hash,
    Openai,
}

impl EmbedderKind {
    /// The name the config writes.
    pub fn name(self) -> &'static str {
        match self {
            EmbedderKind::Hash => "hash",
            EmbedderKind::Openai => "openai",
        }
    }
}

impl EmbedderConfig {
    /// The section's own check (`embedder:` or an `embedders:` profile).
    pub fn check(&self) -> Checked {
        self.http().check()?;
        if let Some(why) = crate::base::input::concurrency_problem(self.concurrency) {
            return Err(Problem::new("concurrency", why));
        }
        if self.batch && self.kind != EmbedderKind::Openai {
            return Err(Problem::new(
                "batch",
                format!(
                    "batch engines embed with `openai` embedders only, and this section is of kind `{}` (builtin, no server to send a batch to): set `batch: false`",
                    self.kind.name()
                ),
            ));
        }
        if self.batch_size == 0 {
            return Err(Problem::new("batch_size", "must be at least 1"));
        }
        if self.max_input_tokens == Some(0) {
            return Err(Problem::new(
                "max_input_tokens",
                "must be at least 1 (leave it out for no limit)",
            ));
        }
        if !(1..=MAX_DIMENSIONS).contains(&self.dimensions) {
            return Err(Problem::new(
                "dimensions",
                format!(
                    "must be from 1 to {MAX_DIMENSIONS}, got {}",
                    self.dimensions
                ),
            ));
        }
        Ok(())
    }
}

impl crate::adapters::http::config::KeyEnv for EmbedderConfig {
    fn key_env(&self) -> &str {
        &self.api_key_env
    }
}
