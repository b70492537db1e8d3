//! The `chat` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::{http_view, BaseUrls, DEFAULT_BACKOFF_MS};

http_view!(ChatConfig);

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ChatConfig {
    /// `mock` (builtin, deterministic) or `openai` (any OpenAI-compatible `/chat/completions`).
    pub kind: ChatKind,
    /// Model name sent to the server (`openai` only).
    pub model: String,
    pub temperature: f64,
    /// Cap on completion tokens; unset sends none.
    pub max_tokens: Option<u32>,
    /// Use the streamed endpoint (records time to first token).
    pub stream: bool,
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
    /// Requests sent per minute at most, paced evenly (`openai` only). Default: no limit.
    pub requests_per_minute: Option<u32>,
    /// Tokens sent per minute at most: a request costs its estimated prompt tokens plus
    /// `max_tokens` (`openai` only). Default: no limit.
    pub tokens_per_minute: Option<u64>,
}

impl Default for ChatConfig {
    fn default() -> Self {
        ChatConfig {
            kind: ChatKind::Mock,
            model: "gpt-4o-mini".into(),
            temperature: 0.0,
            max_tokens: None,
            stream: false,
            base_url: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_s: 120.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    #[default]
    Mock,
    Openai,
}
