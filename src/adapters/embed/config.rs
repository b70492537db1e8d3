//! The `embedder` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::{http_view, BaseUrls, DEFAULT_BACKOFF_MS};

http_view!(EmbedderConfig);

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedderConfig {
    /// `hash` (builtin bag of words) or `openai` (any OpenAI-compatible `/embeddings`).
    pub kind: EmbedderKind,
    /// Buckets of the hash embedder.
    pub dimensions: usize,
    /// Model name sent to the server (`openai` only).
    pub model: String,
    /// Texts per request (`openai` only).
    pub batch_size: usize,
    /// Embedding requests in flight at once (`openai` only).
    pub concurrency: usize,
    /// Base URL with the version path (`openai` only), or a list of servers of the same model.
    /// Default: `$OPENAI_BASE_URL`, else OpenAI's.
    pub base_url: Option<BaseUrls>,
    /// The environment variable holding the API key; the key itself never goes in a file.
    pub api_key_env: String,
    /// Seconds before an attempt is abandoned.
    pub timeout_s: f64,
    /// Attempts after the first one, on connect errors, timeouts, 429 and 5xx.
    pub max_retries: u32,
    /// The first retry waits a random time up to this many milliseconds; each further retry
    /// doubles it, up to 20 s.
    pub backoff_ms: u64,
    /// Extra request headers (values are redacted in reports).
    pub headers: std::collections::BTreeMap<String, String>,
    /// The most tokens the model reads in one input (all-MiniLM-L6-v2: 512). A chunk or question
    /// estimated longer is refused before the sweep, naming it. Default: no limit.
    pub max_input_tokens: Option<usize>,
    /// Requests sent per minute at most, paced evenly (`openai` only). Default: no limit.
    pub requests_per_minute: Option<u32>,
    /// Tokens sent per minute at most: a request costs its estimated prompt tokens plus
    /// `max_tokens` (`openai` only). Default: no limit.
    pub tokens_per_minute: Option<u64>,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig {
            kind: EmbedderKind::Hash,
            dimensions: crate::adapters::embed::hash::DEFAULT_DIMENSIONS,
            model: "text-embedding-3-small".into(),
            batch_size: 64,
            concurrency: 4,
            base_url: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_s: 60.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            max_input_tokens: None,
            requests_per_minute: None,
            tokens_per_minute: None,
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
