//! The `chat` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::http_section;

http_section! {
    #[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    pub struct ChatConfig {
        /// `mock` (builtin, deterministic) or `openai` (any OpenAI-compatible `/chat/completions`).
        pub kind: ChatKind = ChatKind::Mock,
        /// Model name sent to the server (`openai` only).
        pub model: String = "gpt-4o-mini".into(),
        pub temperature: f64 = 0.0,
        /// Cap on completion tokens; unset sends none.
        pub max_tokens: Option<u32> = None,
        /// Use the streamed endpoint (records time to first token).
        pub stream: bool = false,
        @server("OPENAI_API_KEY") {
            /// Base URL with the version path (`openai` only), or a list of servers of the same model.
            /// Default: `$OPENAI_BASE_URL`, else OpenAI's.
        }
        @retries(120.0)
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
pub enum ChatKind {
    #[default]
    Mock,
    Openai,
}
