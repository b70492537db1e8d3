//! The `reranker` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::{http_view, BaseUrls, DEFAULT_BACKOFF_MS};

http_view!(RerankerConfig);

/// The optional reranker (docs/retrievers.md): `POST {base_url}/rerank` with the retrieved
/// passages, whose scores then replace the retrieval scores for ordering and minScore.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RerankerConfig {
    /// `http`: a `/rerank` endpoint (llama.cpp's server, Hugging Face TEI, Jina, Cohere).
    pub kind: RerankerKind,
    /// Model name sent to the server.
    pub model: String,
    /// Base URL with the version path, or a list of servers of the same model (required).
    pub base_url: Option<BaseUrls>,
    /// The environment variable holding the API key; the key itself never goes in a file.
    pub api_key_env: String,
    /// Passages asked from the retriever and sent to the reranker per question. Default: the
    /// grid's largest k.
    pub candidates: Option<usize>,
    /// `top_n` sent to the server: the best passages it returns. Default: the grid's largest k.
    pub top_n: Option<usize>,
    /// Seconds before an attempt is abandoned.
    pub timeout_s: f64,
    /// Attempts after the first one, on connect errors, timeouts, 429, 5xx and unreadable replies.
    pub max_retries: u32,
    /// The first retry waits a random time up to this many milliseconds; each further retry
    /// doubles it, up to 20 s.
    pub backoff_ms: u64,
    /// Extra request headers (values are redacted in reports).
    pub headers: std::collections::BTreeMap<String, String>,
    /// Requests sent per minute at most, paced evenly. Default: no limit.
    pub requests_per_minute: Option<u32>,
    /// Tokens sent per minute at most: a request costs the estimated tokens of its query and
    /// passages. Default: no limit.
    pub tokens_per_minute: Option<u64>,
}

impl Default for RerankerConfig {
    fn default() -> Self {
        RerankerConfig {
            kind: RerankerKind::Http,
            model: "rerank".into(),
            base_url: None,
            api_key_env: "RERANKER_API_KEY".into(),
            candidates: None,
            top_n: None,
            timeout_s: 60.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RerankerKind {
    #[default]
    Http,
}
