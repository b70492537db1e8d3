//! The optional reranker stage: a `/rerank` server rescores the retrieved passages of each
//! question, and its scores replace the retrieval scores for ordering and minScore.
//!
//! The request and reply are the shape llama.cpp's server, Hugging Face TEI, Jina and Cohere
//! share: `POST {base_url}/rerank` with `{"model", "query", "documents": [text, ...], "top_n"}`,
//! answered by `{"results": [{"index", "relevance_score"}, ...]}`. Replies are cached by
//! (model, query, documents, top_n), like embeddings, so a second sweep makes no rerank call.

pub mod config;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures_util::stream::{self, StreamExt};
use serde::Deserialize;
use serde_json::json;

use crate::adapters::cache::{CacheMode, Store};
use crate::adapters::chat::{estimate_tokens, CallError, ErrorKind, Usage};
use crate::adapters::http::{self, Endpoint, Endpoints, Failure};
use crate::base::BoxFuture;

/// Rerank requests in flight at once.
const CONCURRENCY: usize = 8;

/// One passage as the reranker scored it: its position in the documents sent, and its score.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, Deserialize)]
pub struct Scored {
    pub index: usize,
    pub score: f64,
}

/// One rerank call's reply: the passages scored, and what the call cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Reranked {
    pub scored: Vec<Scored>,
    /// The server's token count (`usage.prompt_tokens`, else `usage.total_tokens`) when its
    /// reply has one; zero otherwise, and for a reply from the cache.
    pub usage: Usage,
    /// Wall time of the call; `None` for a reply from the cache.
    pub latency: Option<Duration>,
    /// The reply came from the rerank cache.
    pub cached: bool,
}

impl Reranked {
    /// A reply that made no call to a server.
    fn of(scored: Vec<Scored>) -> Self {
        Reranked {
            scored,
            usage: Usage::default(),
            latency: None,
            cached: false,
        }
    }
}

/// Why reranking one question's passages failed: the sweep stops (exit status 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct RerankError {
    pub kind: ErrorKind,
    pub message: String,
}

impl RerankError {
    /// The error as a call log records it.
    pub fn to_call_error(&self) -> CallError {
        CallError {
            kind: self.kind,
            message: self.message.clone(),
            deferred: false,
        }
    }
}

/// A reranker: rescores a query's passages.
pub trait Reranker: Send + Sync {
    /// The model name: part of cache keys and the run identity.
    fn model(&self) -> String;

    /// Passages to ask the retriever for per question; `None`: the grid's largest k.
    fn candidates(&self) -> Option<usize>;

    /// The best passages the server returns per question; `None`: the grid's largest k.
    fn top_n(&self) -> Option<usize>;

    /// The scored passages of `documents` for `query`, at most `top_n`, best first (equal
    /// scores keep the order sent).
    fn rerank<'a>(
        &'a self,
        query: &'a str,
        documents: &'a [String],
        top_n: usize,
    ) -> BoxFuture<'a, Result<Reranked, RerankError>>;

    /// Warnings gathered since the last call (a cache write that failed), for the command.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Rerank every (query, documents) job, [`CONCURRENCY`] at a time; results in job order.
pub async fn rerank_all(
    reranker: &dyn Reranker,
    jobs: &[(String, Vec<String>)],
    top_n: usize,
) -> Vec<Result<Reranked, RerankError>> {
    let calls: Vec<_> = jobs
        .iter()
        .map(|(query, documents)| reranker.rerank(query, documents, top_n))
        .collect();
    stream::iter(calls).buffered(CONCURRENCY).collect().await
}

/// Check a reply against the contract and order it best first: every index names a document
/// sent, once; every score is a finite number; at most `top_n` results. A violation is named,
/// never mended.
pub fn checked(reply: &[u8], documents: usize, top_n: usize) -> Result<Vec<Scored>, String> {
    #[derive(Deserialize)]
    struct Reply {
        results: Vec<serde_json::Value>,
    }
    let reply: Reply = serde_json::from_slice(reply).map_err(|e| {
        format!("the reply is not `{{\"results\": [{{index, relevance_score}}]}}`: {e}")
    })?;
    if reply.results.len() > top_n {
        return Err(format!(
            "{} results for top_n = {top_n}: a reranker must return at most top_n",
            reply.results.len()
        ));
    }
    let mut seen = vec![false; documents];
    let mut out = Vec::with_capacity(reply.results.len());
    for (i, r) in reply.results.iter().enumerate() {
        let index = r["index"]
            .as_u64()
            .ok_or_else(|| format!("result {i} has no `index` (a whole number)"))?
            as usize;
        if index >= documents {
            return Err(format!(
                "result {i} has `index` {index}, but {documents} documents were sent"
            ));
        }
        if std::mem::replace(&mut seen[index], true) {
            return Err(format!("result {i} repeats `index` {index}"));
        }
        // A NaN or an infinity is written `null` by most JSON writers.
        let score = r
            .get("relevance_score")
            .ok_or_else(|| format!("result {i} has no `relevance_score`"))?
            .as_f64()
            .filter(|s| s.is_finite())
            .ok_or_else(|| {
                format!("result {i} has a `relevance_score` that is not a finite number")
            })?;
        out.push(Scored { index, score });
    }
    // Best first; equal scores keep the order the documents were sent in (retrieval order).
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    Ok(out)
}

/// The tokens a reply says the call cost: `usage.prompt_tokens` (llama.cpp, Jina), else
/// `usage.total_tokens` (TEI); `None` when the reply says nothing of them.
pub fn reported_tokens(reply: &[u8]) -> Option<u64> {
    let reply: serde_json::Value = serde_json::from_slice(reply).ok()?;
    let usage = reply.get("usage")?;
    usage
        .get("prompt_tokens")
        .and_then(serde_json::Value::as_u64)
        .or_else(|| {
            usage
                .get("total_tokens")
                .and_then(serde_json::Value::as_u64)
        })
}

/// `reranker.kind: http`: any server with a `/rerank` endpoint.
pub struct HttpReranker {
    client: reqwest::Client,
    endpoints: Endpoints,
    model: String,
    candidates: Option<usize>,
    top_n: Option<usize>,
}

impl HttpReranker {
    pub fn new(
        endpoints: Endpoints,
        model: &str,
        candidates: Option<usize>,
        top_n: Option<usize>,
    ) -> Result<Self, String> {
        Ok(HttpReranker {
            client: http::client()?,
            endpoints,
            model: model.to_string(),
            candidates,
            top_n,
        })
    }

    async fn call(
        &self,
        server: &Endpoint,
        query: &str,
        documents: &[String],
        top_n: usize,
    ) -> Result<(Vec<Scored>, Option<u64>), Failure> {
        let body = serde_json::to_vec(
            &json!({"model": self.model, "query": query, "documents": documents, "top_n": top_n}),
        )
        .expect("strings and a number serialize");
        let bytes = server.post_for_body(&self.client, "rerank", body).await?;
        // A reply that is not JSON at all may be a proxy's hiccup: it is retried. A JSON reply
        // that breaks the contract is what the server meant: it is not.
        if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_err() {
            return Err(Failure::retryable(
                ErrorKind::Malformed,
                "the reply is not JSON",
            ));
        }
        let scored = checked(&bytes, documents.len(), top_n)
            .map_err(|m| Failure::fatal(ErrorKind::Malformed, m))?;
        Ok((scored, reported_tokens(&bytes)))
    }
}

impl Reranker for HttpReranker {
    fn model(&self) -> String {
        self.model.clone()
    }

    fn candidates(&self) -> Option<usize> {
        self.candidates
    }

    fn top_n(&self) -> Option<usize> {
        self.top_n
    }

    fn rerank<'a>(
        &'a self,
        query: &'a str,
        documents: &'a [String],
        top_n: usize,
    ) -> BoxFuture<'a, Result<Reranked, RerankError>> {
        Box::pin(async move {
            if documents.is_empty() {
                return Ok(Reranked::of(Vec::new()));
            }
            let top_n = top_n.min(documents.len());
            let tokens =
                estimate_tokens(query) + documents.iter().map(|d| estimate_tokens(d)).sum::<u64>();
            let start = Instant::now();
            let (scored, reported) = http::call_any(&self.endpoints, tokens, move |server| {
                self.call(server, query, documents, top_n)
            })
            .await
            .map_err(|e| RerankError {
                kind: e.kind,
                message: format!(
                    "{} at {}: {}",
                    e.kind.as_str(),
                    self.endpoints.shown_url("rerank"),
                    e.message
                ),
            })?;
            Ok(Reranked {
                scored,
                usage: Usage {
                    prompt_tokens: reported.unwrap_or(0),
                    ..Usage::default()
                },
                latency: Some(start.elapsed()),
                cached: false,
            })
        })
    }
}

/// The cache key of one rerank request: no URL, no key.
pub fn rerank_key(model: &str, query: &str, documents: &[String], top_n: usize) -> String {
    use sha2::{Digest, Sha256};
    let material =
        json!({"model": model, "query": query, "documents": documents, "top_n": top_n}).to_string();
    Sha256::digest(material.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digest that names a rerank call in the call log: the first 16 hex digits of its cache
/// key (`top_n` as sent: at most the documents' count).
pub fn rerank_digest(model: &str, query: &str, documents: &[String], top_n: usize) -> String {
    let mut digest = rerank_key(model, query, documents, top_n.min(documents.len()));
    digest.truncate(16);
    digest
}

/// A reranker behind the response cache (`rerank.jsonl`): a request seen before is answered
/// from it. Failed calls are not cached.
pub struct CachedReranker {
    inner: Arc<dyn Reranker>,
    store: Store<Vec<Scored>>,
    mode: CacheMode,
}

impl CachedReranker {
    pub fn new(inner: Arc<dyn Reranker>, dir: &Path, mode: CacheMode) -> Result<Self> {
        Ok(CachedReranker {
            inner,
            store: Store::open(&dir.join("rerank.jsonl"), mode)?,
            mode,
        })
    }
}

impl Reranker for CachedReranker {
    fn model(&self) -> String {
        self.inner.model()
    }

    fn candidates(&self) -> Option<usize> {
        self.inner.candidates()
    }

    fn top_n(&self) -> Option<usize> {
        self.inner.top_n()
    }

    fn warnings(&self) -> Vec<String> {
        self.store.take_warnings()
    }

    fn rerank<'a>(
        &'a self,
        query: &'a str,
        documents: &'a [String],
        top_n: usize,
    ) -> BoxFuture<'a, Result<Reranked, RerankError>> {
        Box::pin(async move {
            let top_n = top_n.min(documents.len());
            let key = rerank_key(&self.inner.model(), query, documents, top_n);
            if self.mode == CacheMode::Use {
                if let Some(hit) = self.store.get(&key) {
                    return Ok(Reranked {
                        cached: true,
                        ..Reranked::of(hit)
                    });
                }
            }
            let reply = self.inner.rerank(query, documents, top_n).await?;
            self.store.put_or_warn(key, reply.scored.clone());
            Ok(reply)
        })
    }
}

/// The mock server's relevance score (`rageval mock-llm`, `POST /v1/rerank`): the share of the
/// query's distinct words that the document contains, from 0 to 1. Words are maximal runs of
/// letters and digits, lowercased.
pub fn overlap_score(query: &str, document: &str) -> f64 {
    let words = |t: &str| -> std::collections::BTreeSet<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let q = words(query);
    if q.is_empty() {
        return 0.0;
    }
    let d = words(document);
    q.intersection(&d).count() as f64 / q.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_ordered_best_first_keeping_ties_in_the_order_sent() {
        let reply = br#"{"results": [{"index": 2, "relevance_score": 0.5},
            {"index": 0, "relevance_score": 0.9}, {"index": 1, "relevance_score": 0.5}]}"#;
        assert_eq!(
            checked(reply, 3, 3).unwrap(),
            [
                Scored {
                    index: 0,
                    score: 0.9
                },
                Scored {
                    index: 1,
                    score: 0.5
                },
                Scored {
                    index: 2,
                    score: 0.5
                },
            ]
        );
    }

    #[test]
    fn a_reply_that_breaks_the_contract_is_named() {
        let cases: [(&[u8], &str); 7] = [
            (
                br#"{"results": [{"index": 3, "relevance_score": 0.5}]}"#,
                "result 0 has `index` 3, but 3 documents were sent",
            ),
            (
                br#"{"results": [{"index": 0}]}"#,
                "result 0 has no `relevance_score`",
            ),
            (
                br#"{"results": [{"index": 0, "relevance_score": null}]}"#,
                "result 0 has a `relevance_score` that is not a finite number",
            ),
            (
                br#"{"results": [{"index": 0, "relevance_score": 0.1}, {"index": 1, "relevance_score": "NaN"}]}"#,
                "result 1 has a `relevance_score` that is not a finite number",
            ),
            (
                br#"{"results": [{"index": 0, "relevance_score": 0.1}, {"index": 0, "relevance_score": 0.2}]}"#,
                "result 1 repeats `index` 0",
            ),
            (
                br#"{"results": [{"relevance_score": 0.1}]}"#,
                "result 0 has no `index` (a whole number)",
            ),
            (
                br#"{"results": [{"index": 0, "relevance_score": 0.1}, {"index": 1, "relevance_score": 0.2}, {"index": 2, "relevance_score": 0.3}]}"#,
                "3 results for top_n = 2: a reranker must return at most top_n",
            ),
        ];
        for (reply, want) in cases {
            let top_n = if want.starts_with('3') { 2 } else { 3 };
            assert_eq!(checked(reply, 3, top_n), Err(want.to_string()));
        }
        assert_eq!(
            checked(br#"{"hits": []}"#, 3, 3),
            Err("the reply is not `{\"results\": [{index, relevance_score}]}`: missing field `results` at line 1 column 12".into())
        );
    }

    #[test]
    fn the_mock_score_is_the_share_of_query_words_in_the_document() {
        assert_eq!(
            overlap_score("How much is the FEE?", "The fee: 10 dollars."),
            0.4
        );
        assert_eq!(overlap_score("fee fee", "fee"), 1.0);
        assert_eq!(overlap_score("", "anything"), 0.0);
        assert_eq!(overlap_score("parking", "membership fee"), 0.0);
    }

    #[test]
    fn cache_keys_change_with_every_input() {
        let docs = vec!["a".to_string(), "b".to_string()];
        let k = rerank_key("m", "q", &docs, 2);
        assert_eq!(k.len(), 64);
        assert_ne!(k, rerank_key("m2", "q", &docs, 2));
        assert_ne!(k, rerank_key("m", "q2", &docs, 2));
        assert_ne!(k, rerank_key("m", "q", &docs[..1], 2));
        assert_ne!(k, rerank_key("m", "q", &docs, 1));
    }
}
