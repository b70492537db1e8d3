//! The `judge` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::chat::config::ChatKind;
use crate::adapters::http::config::http_section;
use crate::base::problem::{Checked, Problem};

http_section! {
    /// The optional judge model (docs/judge.md): an OpenAI-compatible chat endpoint, or the builtin
    /// mock judge, that grades every reply the refusal sentence does not settle.
    #[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    pub struct JudgeConfig {
        /// `openai` (any OpenAI-compatible `/chat/completions`) or `mock` (builtin, deterministic).
        pub kind: ChatKind = ChatKind::Openai,
        /// Model name sent to the server.
        pub model: String = "gpt-4o-mini".into(),
        @server("OPENAI_API_KEY") {
            /// Base URL with the version path, or a list of them (calls go to the server with the
            /// fewest in flight). Default: `$OPENAI_BASE_URL`, else OpenAI's.
        }
        @retries(120.0)
        @rate_limits {
            /// Requests sent per minute at most, paced evenly. Default: no limit.
        } {
            /// Tokens sent per minute at most: a request costs its estimated prompt tokens. Default:
            /// no limit.
        }
        /// Send the grade's JSON Schema as `response_format` (structured output: OpenAI,
        /// llama-server and vLLM constrain the reply to it). `false` for a server that rejects it.
        pub structured_output: bool = true,
        /// Price of a million judge prompt tokens.
        pub prompt_per_million: f64 = 0.0,
        /// Price of a million judge completion tokens.
        pub completion_per_million: f64 = 0.0,
    }
}

impl JudgeConfig {
    /// The judge as a chat section: its model and servers at temperature 0 with no token cap
    /// (a grade should not depend on the dice), streaming off.
    pub fn as_chat(&self) -> crate::adapters::chat::config::ChatConfig {
        crate::adapters::chat::config::ChatConfig {
            kind: self.kind,
            model: Some(self.model.clone()),
            url: None,
            temperature: 0.0,
            max_tokens: None,
            stream: false,
            batch: false,
            batch_retry: crate::adapters::chat::config::BatchRetry::Live,
            base_url: self.base_url.clone(),
            api_key_env: self.api_key_env.clone(),
            timeout_s: self.timeout_s,
            max_retries: self.max_retries,
            backoff_ms: self.backoff_ms,
            headers: self.headers.clone(),
            requests_per_minute: self.requests_per_minute,
            tokens_per_minute: self.tokens_per_minute,
        }
    }

    /// The section's own check: its servers, a kind that takes a rubric, its prices.
    pub fn check(&self) -> Checked {
        self.http().check()?;
        if self.kind.takes_passages() {
            return Err(Problem::new(
                "kind",
                format!("`{}` is the generation contract, which sends no rubric; the judge is `openai` or `mock`", self.kind),
            ));
        }
        for (field, v) in [
            ("prompt_per_million", self.prompt_per_million),
            ("completion_per_million", self.completion_per_million),
        ] {
            crate::vocab::call::check_price(v).map_err(|msg| Problem::new(field, msg))?;
        }
        Ok(())
    }
}

impl crate::adapters::http::config::KeyEnv for JudgeConfig {
    fn key_env(&self) -> &str {
        &self.api_key_env
    }
}
