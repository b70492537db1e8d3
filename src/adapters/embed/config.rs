//! The `embedder` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::http_section;

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
