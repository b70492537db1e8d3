//! The `retriever` section of `rageval.yaml`, with its documented defaults.

use serde::{Deserialize, Serialize};

use crate::adapters::http::config::DEFAULT_BACKOFF_MS;

/// Where passages come from: the builtin index, the user's search service, or pgvector
/// (docs/retrievers.md).
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RetrieverConfig {
    /// `builtin` (markdown chunks, exact cosine), `http` or `pgvector`.
    pub kind: RetrieverKind,
    /// `http`: the search endpoint, `POST {url}` with `{"query", "k"}`.
    pub url: Option<String>,
    /// `http`: the environment variable holding the bearer token.
    pub api_key_env: String,
    pub timeout_s: f64,
    pub max_retries: u32,
    pub backoff_ms: u64,
    /// `http`: extra request headers (values are redacted in reports).
    pub headers: std::collections::BTreeMap<String, String>,
    /// `pgvector`: the environment variable holding the connection string.
    pub dsn_env: String,
    /// `pgvector`: the table (`schema.table` allowed).
    pub table: String,
    /// `pgvector`: column names.
    pub columns: crate::adapters::retriever::pgvector::Columns,
    /// `pgvector`: `cosine`, `inner_product` or `l2`.
    pub distance: crate::adapters::retriever::pgvector::Distance,
    /// `pgvector`: `hnsw.ef_search` for the session (candidates an HNSW scan keeps).
    pub ef_search: Option<u32>,
    /// Retrieve once per distinct k of the grid instead of once at the largest k: for an
    /// approximate index or a server-side threshold, where the top 2 need not be the first 2
    /// of the top 8.
    pub query_per_k: bool,
}

impl Default for RetrieverConfig {
    fn default() -> Self {
        RetrieverConfig {
            kind: RetrieverKind::Builtin,
            url: None,
            api_key_env: "RETRIEVER_API_KEY".into(),
            timeout_s: 30.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            dsn_env: "DATABASE_URL".into(),
            table: "rageval_chunks".into(),
            columns: Default::default(),
            distance: Default::default(),
            ef_search: None,
            query_per_k: false,
        }
    }
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RetrieverKind {
    #[default]
    Builtin,
    Http,
    Pgvector,
}
