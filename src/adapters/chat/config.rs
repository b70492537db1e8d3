//! The `chat` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::{http_section, not_http};
use crate::base::problem::{Checked, Problem};
use crate::vocab::grid::MAX_TEMPERATURE;

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
        pub batch_retry: BatchRetry = BatchRetry::Live,
        @server("") {
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

/// What becomes of a batch's failed lines (`chat.batch_retry`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum BatchRetry {
    /// Called live by the sweep that follows, at the live price.
    #[default]
    Live,
    /// Sent once more as a new batch; what fails again is called live.
    Batch,
}

/// The variable `openai` takes its key from when `api_key_env` is not set.
pub const DEFAULT_OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";

/// A chat section's key: from the variable it names; unnamed, `openai`'s default variable, and
/// none for `http` (a team's own chain, perhaps on another host, never gets the OpenAI key) or
/// the mock.
impl crate::adapters::http::config::KeyEnv for ChatConfig {
    fn key_env(&self) -> &str {
        match (self.kind, self.api_key_env.as_str()) {
            (ChatKind::Openai, "") => DEFAULT_OPENAI_KEY_ENV,
            (_, named) => named,
        }
    }
}

/// The model name `openai` sends when `model` is not set.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";

impl ChatConfig {
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

    /// The section's own check (a `chat:` section or a `models:` profile): its servers, the
    /// fields of its kind, its numbers.
    pub fn check(&self) -> Checked {
        self.http().check()?;
        self.check_kind()?;
        if self.max_tokens == Some(0) {
            return Err(Problem::new(
                "max_tokens",
                "must be at least 1 (leave it out for the server's default)",
            ));
        }
        if !(0.0..=MAX_TEMPERATURE).contains(&self.temperature) {
            return Err(Problem::new("temperature", "must be between 0 and 2"));
        }
        if self.batch && self.kind != ChatKind::Openai {
            return Err(Problem::new(
                "batch",
                format!(
                    "batch engines answer `openai` models only, and this section is of kind `{}`: set `batch: false`",
                    self.kind
                ),
            ));
        }
        Ok(())
    }

    /// The fields that belong to one kind: a generation endpoint takes `url` and none of the
    /// fields of a chat API, and the others take no `url`.
    fn check_kind(&self) -> Checked {
        if !self.kind.takes_passages() {
            return match self.url {
                Some(_) => Err(Problem::new(
                    "url",
                    "applies to `kind: http` (a generation endpoint); `kind: openai` takes `base_url`",
                )),
                None => Ok(()),
            };
        }
        let Some(urls) = &self.url else {
            return Err(Problem::new(
                "url",
                "is missing: `kind: http` needs the generation endpoint's URL (`POST {url}` with the question and passages)",
            )
            .shown_at(&["kind"]));
        };
        if urls.urls().is_empty() {
            return Err(Problem::new("url", "lists no URL"));
        }
        if let Some(msg) = urls.urls().iter().find_map(|u| not_http(u)) {
            return Err(Problem::new("url", msg));
        }
        if self.base_url.is_some() {
            return Err(Problem::new(
                "base_url",
                "applies to `kind: openai`; a generation endpoint (`kind: http`) takes `url`, the whole URL it is posted to",
            ));
        }
        for (field, set) in [
            ("stream", self.stream),
            ("max_tokens", self.max_tokens.is_some()),
        ] {
            if set {
                return Err(Problem::new(
                    field,
                    "applies to `kind: openai`: a generation endpoint (`kind: http`) is sent the question and passages alone",
                ));
            }
        }
        Ok(())
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

impl ChatKind {
    /// A generation endpoint: it is sent the question and passages and builds its own prompt,
    /// so it cannot be given a prompt of ours (a judge's rubric, a rewrite, a generator's
    /// request).
    pub fn takes_passages(self) -> bool {
        self == ChatKind::Http
    }

    /// Its calls go to a server: they can fail, need a key and a URL.
    pub fn is_remote(self) -> bool {
        self != ChatKind::Mock
    }
}

impl std::fmt::Display for ChatKind {
    /// Its name as `kind:` writes it (derived from the serde name, never typed again).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::base::serde_name(self))
    }
}
