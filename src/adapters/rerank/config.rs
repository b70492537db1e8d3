//! The `reranker` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::http::config::http_section;
use crate::base::problem::{Checked, Problem};

/// Most passages sent to the reranker per question (`reranker.candidates`, `reranker.top_n`).
pub const MAX_RERANK_CANDIDATES: usize = 1_000;

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

impl RerankerConfig {
    /// The section's own check: its server (which it cannot do without) and its counts.
    pub fn check(&self) -> Checked {
        self.http().check()?;
        if self.base_url.is_none() {
            return Err(Problem::new(
                "base_url",
                "is missing: the reranker needs its server's URL (`POST {base_url}/rerank`)",
            )
            .shown_at(&[]));
        }
        for (field, n) in [("candidates", self.candidates), ("top_n", self.top_n)] {
            if n.is_some_and(|n| !(1..=MAX_RERANK_CANDIDATES).contains(&n)) {
                return Err(Problem::new(
                    field,
                    format!("must be from 1 to {MAX_RERANK_CANDIDATES} (leave it out for the grid's largest k)"),
                ));
            }
        }
        Ok(())
    }
}

impl crate::adapters::http::config::KeyEnv for RerankerConfig {
    fn key_env(&self) -> &str {
        &self.api_key_env
    }
}
