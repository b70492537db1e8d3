//! The `judge` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::chat::config::ChatKind;
use crate::adapters::http::config::{http_view, BaseUrls, DEFAULT_BACKOFF_MS};

http_view!(JudgeConfig);

/// The optional judge model (docs/judge.md): an OpenAI-compatible chat endpoint, or the builtin
/// mock judge, that grades every reply the refusal sentence does not settle.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct JudgeConfig {
    /// `openai` (any OpenAI-compatible `/chat/completions`) or `mock` (builtin, deterministic).
    pub kind: ChatKind,
    /// Model name sent to the server.
    pub model: String,
    /// Base URL with the version path, or a list of them (calls go to the server with the
    /// fewest in flight). Default: `$OPENAI_BASE_URL`, else OpenAI's.
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
    /// Requests sent per minute at most, paced evenly. Default: no limit.
    pub requests_per_minute: Option<u32>,
    /// Tokens sent per minute at most: a request costs its estimated prompt tokens. Default:
    /// no limit.
    pub tokens_per_minute: Option<u64>,
    /// Price of a million judge prompt tokens.
    pub prompt_per_million: f64,
    /// Price of a million judge completion tokens.
    pub completion_per_million: f64,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            kind: ChatKind::Openai,
            model: "gpt-4o-mini".into(),
            base_url: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_s: 120.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            requests_per_minute: None,
            tokens_per_minute: None,
            prompt_per_million: 0.0,
            completion_per_million: 0.0,
        }
    }
}
