//! The `reranker` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::http_section;

http_section! {
    /// The optional reranker (docs/retrievers.md): `POST {base_url}/rerank` with the retrieved
    /// passages, whose scores then replace the retrieval scores for ordering and minScore.
    #[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    pub struct RerankerConfig {
        /// `http`: a `/rerank` endpoint (llama.cpp's server, Hugging Face TEI, Jina, Cohere).
        pub kind: RerankerKind = RerankerKind::Http,
        /// Model name sent to the server.
        pub model: String = "rerank".into(),
        @server("RERANKER_API_KEY") {
            /// Base URL with the version path, or a list of servers of the same model (required).
        }
        /// Passages asked from the retriever and sent to the reranker per question. Default: the
        /// grid's largest k.
        pub candidates: Option<usize> = None,
        /// `top_n` sent to the server: the best passages it returns. Default: the grid's largest k.
        pub top_n: Option<usize> = None,
        @retries(60.0) {
            /// Attempts after the first one, on connect errors, timeouts, 429, 5xx and unreadable replies.
        }
        @rate_limits {
            /// Requests sent per minute at most, paced evenly. Default: no limit.
        } {
            /// Tokens sent per minute at most: a request costs the estimated tokens of its query and
            /// passages. Default: no limit.
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
