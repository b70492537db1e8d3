//! The `chat`/`embedder` HTTP fields of the` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where an OpenAI-compatible server is and how to talk to it: the fields that `chat` and
/// `embedder` share.
#[derive(Debug, Clone)]
pub struct HttpConfig<'a> {
    pub base_url: &'a Option<BaseUrls>,
    pub api_key_env: &'a str,
    pub timeout_s: f64,
    pub max_retries: u32,
    pub backoff_ms: u64,
    pub headers: &'a std::collections::BTreeMap<String, String>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
}

/// Most `requests_per_minute`: a million (past it the limit paces nothing a server notices).
pub const MAX_REQUESTS_PER_MINUTE: u32 = 1_000_000;
/// Most `tokens_per_minute`: ten billion.
pub const MAX_TOKENS_PER_MINUTE: u64 = 10_000_000_000;

/// Longest `timeout_s`: a day. Past it a value is a typo (and `1e20` no duration at all).
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
/// Most `max_retries`.
pub const MAX_RETRIES: u32 = 100;
/// Longest `backoff_ms`: a minute.
pub const MAX_BACKOFF_MS: u64 = 60_000;
/// Default `backoff_ms`.
pub const DEFAULT_BACKOFF_MS: u64 = 200;

impl HttpConfig<'_> {
    /// The base URLs in their listed order: the config's, else `$OPENAI_BASE_URL`, else
    /// OpenAI's.
    pub fn base_urls(&self) -> Vec<String> {
        match self.base_url {
            Some(urls) if !urls.urls().is_empty() => urls.urls().to_vec(),
            _ => vec![std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| "https://api.openai.com/v1".into())],
        }
    }

    /// The base URLs as messages show them: redacted, comma-separated.
    pub fn shown(&self) -> String {
        self.base_urls()
            .iter()
            .map(|u| crate::base::redact::url(u))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `base_url`: one server, or a list of servers that serve the same model (each call goes to
/// the one with the fewest calls in flight; docs/http.md).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum BaseUrls {
    One(String),
    Many(Vec<String>),
}

impl BaseUrls {
    pub fn urls(&self) -> &[String] {
        match self {
            BaseUrls::One(u) => std::slice::from_ref(u),
            BaseUrls::Many(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for BaseUrls {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::base::yaml_de::{either, Either, NoNumber};
        match either::<_, _, NoNumber>(d, "a URL or a list of URLs")? {
            Either::Text(s) => Ok(BaseUrls::One(s)),
            Either::Many(v) => Ok(BaseUrls::Many(v)),
        }
    }
}

macro_rules! http_view {
    ($t:ty) => {
        impl $t {
            pub fn http(&self) -> $crate::adapters::http::config::HttpConfig<'_> {
                $crate::adapters::http::config::HttpConfig {
                    base_url: &self.base_url,
                    api_key_env: &self.api_key_env,
                    timeout_s: self.timeout_s,
                    max_retries: self.max_retries,
                    backoff_ms: self.backoff_ms,
                    headers: &self.headers,
                    requests_per_minute: self.requests_per_minute,
                    tokens_per_minute: self.tokens_per_minute,
                }
            }
        }
    };
}
pub(crate) use http_view;
