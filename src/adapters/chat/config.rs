//! The `chat` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::http_section;

http_section! {
    #[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    pub struct ChatConfig {
        /// `mock` (builtin, deterministic), `openai` (any OpenAI-compatible `/chat/completions`)
        /// or `http` (your own generation step: `POST {url}` with the question and passages).
        pub kind: ChatKind = ChatKind::Mock,
        /// `openai`: the model name sent to the server (default `gpt-4o-mini`). `http`: the name
        /// reports and cache keys give your chain (default `http`); change it when the chain
        /// changes, so that no cached reply of the old one is reused.
        pub model: Option<String> = None,
        /// `http` only: the generation endpoint, `POST {url}` with `{"question", "passages"}`,
        /// or a list of servers of the same chain (calls go to the one with the fewest in flight).
        pub url: Option<crate::adapters::http::config::BaseUrls> = None,
        pub temperature: f64 = 0.0,
        /// Cap on completion tokens; unset sends none.
        pub max_tokens: Option<u32> = None,
        /// Use the streamed endpoint (records time to first token).
        pub stream: bool = false,
        /// `openai` only: send the sweep's calls (and the judge's) through the server's Batch
        /// API, at its batch price, instead of live (docs/batch.md).
        pub batch: bool = false,
        /// With `batch`: the lines a batch did not answer are called `live`, or sent as one more
        /// `batch` (what fails again is called live).
        pub batch_retry: crate::adapters::batch::BatchRetry = crate::adapters::batch::BatchRetry::Live,
        @server("OPENAI_API_KEY") {
            /// Base URL with the version path (`openai` only), or a list of servers of the same model.
            /// Default: `$OPENAI_BASE_URL`, else OpenAI's. (`http` takes `url`.)
        }
        @retries(120.0)
        @rate_limits {
            /// Requests sent per minute at most, paced evenly (`openai` and `http`). Default: no
            /// limit.
        } {
            /// Tokens sent per minute at most: a request costs its estimated prompt tokens plus
            /// `max_tokens` (`openai`; for `http`, the question and passages). Default: no limit.
        }
    }
}

/// The model name `openai` sends when `model` is not set.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";

impl ChatConfig {
    /// Check the batch fields: the field and the message of the first one that cannot be.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.batch && self.kind != ChatKind::Openai {
            return Err((
                "batch",
                format!(
                    "batch engines answer `openai` models only, and this section is of kind `{}`: set `batch: false`",
                    match self.kind {
                        ChatKind::Mock => "mock",
                        ChatKind::Http => "http",
                        ChatKind::Openai => "openai",
                    }
                ),
            ));
        }
        Ok(())
    }

    /// The model's name: `mock`, `model` (or [`DEFAULT_OPENAI_MODEL`]) for `openai`, `model`
    /// (or `http`) for a generation endpoint.
    pub fn model_name(&self) -> String {
        match (self.kind, &self.model) {
            (ChatKind::Mock, _) => "mock".into(),
            (_, Some(m)) => m.clone(),
            (ChatKind::Openai, None) => DEFAULT_OPENAI_MODEL.into(),
            (ChatKind::Http, None) => "http".into(),
        }
    }

    /// Where the section's calls go: `base_url` for `openai`, `url` for `http`, with the
    /// section's key, headers, retries and rate limits.
    pub fn endpoint(&self) -> crate::adapters::http::config::HttpConfig<'_> {
        let http = self.http();
        match self.kind {
            ChatKind::Http => crate::adapters::http::config::HttpConfig {
                base_url: &self.url,
                ..http
            },
            _ => http,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    #[default]
    Mock,
    Openai,
    /// The team's own generation step behind `POST {url}` (docs/python.md).
    Http,
}
