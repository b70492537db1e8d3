//! The `retriever` section of `rageval.yaml`, with its documented defaults.

use serde::{Deserialize, Serialize};

use crate::adapters::http::config::{
    not_http, DEFAULT_BACKOFF_MS, MAX_BACKOFF_MS, MAX_RETRIES, MAX_TIMEOUT_S,
};
use crate::base::problem::{Checked, Problem};

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

impl RetrieverConfig {
    /// The section's own check: the fields its kind needs, numbers in range.
    pub fn check(&self) -> Checked {
        let remote = !self.kind.chunks_itself();
        if self.kind.is_http() {
            match &self.url {
                None => {
                    return Err(Problem::new(
                        "url",
                        format!(
                            "is missing: `retriever.kind: {}` needs the search endpoint's URL",
                            self.kind
                        ),
                    )
                    .shown_at(&["kind"]))
                }
                Some(url) => {
                    if let Some(msg) = not_http(url) {
                        return Err(Problem::new("url", msg));
                    }
                }
            }
        }
        if !(self.timeout_s > 0.0 && self.timeout_s <= MAX_TIMEOUT_S) {
            return Err(Problem::new(
                "timeout_s",
                format!("must be a number of seconds above 0 and at most {MAX_TIMEOUT_S}"),
            ));
        }
        if self.max_retries > MAX_RETRIES || self.backoff_ms > MAX_BACKOFF_MS {
            return Err(Problem::new(
                "max_retries",
                format!("max_retries must be from 0 to {MAX_RETRIES} and backoff_ms from 0 to {MAX_BACKOFF_MS}"),
            )
            .shown_at(&[]));
        }
        if let Some(header) =
            crate::adapters::http::authorization_conflict(self.headers.keys(), &self.api_key_env)
                .filter(|_| self.kind.is_http())
        {
            return Err(Problem::new(
                "headers",
                crate::adapters::http::authorization_conflict_message(&header, &self.api_key_env),
            )
            .key(&header));
        }
        if self.query_per_k && !remote {
            return Err(Problem::new(
                "query_per_k",
                format!("applies to {} retrievers: the builtin index is exact, so each k's hits are the first k of the largest", RetrieverKind::named(|k| !k.chunks_itself())),
            ));
        }
        if self.ef_search.is_some_and(|ef| !(1..=1000).contains(&ef)) {
            return Err(Problem::new(
                "ef_search",
                "must be from 1 to 1000 (pgvector's range)",
            ));
        }
        if self.kind.reads_table()
            && (self.table.trim().is_empty()
                || self.columns.embedding.is_empty()
                || self.columns.id.is_empty()
                || self.columns.text.is_empty()
                || self.columns.source.is_empty())
        {
            return Err(Problem::new(
                "table",
                "`table` and the `id`, `source`, `text` and `embedding` columns must be named",
            )
            .shown_at(&[]));
        }
        Ok(())
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

impl RetrieverKind {
    /// Every kind, in the order `kind:` documents them.
    pub const ALL: [RetrieverKind; 3] = [
        RetrieverKind::Builtin,
        RetrieverKind::Http,
        RetrieverKind::Pgvector,
    ];

    /// It searches the markdown corpus rageval chunks and embeds itself (the builtin index);
    /// the others return passages some service chunked, from sources rageval never reads.
    pub fn chunks_itself(self) -> bool {
        self == RetrieverKind::Builtin
    }

    /// It embeds the question with the service's own embedder (rageval's embedder and its
    /// profiles do not apply).
    pub fn embeds_itself(self) -> bool {
        self == RetrieverKind::Http
    }

    /// It is an HTTP search endpoint (`url`, headers, a key).
    pub fn is_http(self) -> bool {
        self == RetrieverKind::Http
    }

    /// It reads a database table (`table`, `columns`, `dsn_env`; `rageval index` fills it).
    pub fn reads_table(self) -> bool {
        self == RetrieverKind::Pgvector
    }

    /// The kinds for which `which` holds, as messages list them: `` `http` and `pgvector` ``.
    pub fn named(which: impl Fn(RetrieverKind) -> bool) -> String {
        let names: Vec<String> = RetrieverKind::ALL
            .into_iter()
            .filter(|k| which(*k))
            .map(|k| format!("`{k}`"))
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }
}

impl std::fmt::Display for RetrieverKind {
    /// Its name as `kind:` writes it (derived from the serde name, never typed again).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::base::serde_name(self))
    }
}
