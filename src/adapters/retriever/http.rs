//! `retriever.kind: http`: the user's own search service, `POST {url}` with `{"query", "k"}`.

use futures_util::stream::{self, StreamExt};
use serde::Deserialize;

use super::{checked, Passage, RetrieveError, Retriever};
use crate::adapters::chat::ErrorKind;
use crate::adapters::http::{self, Endpoint, Failure};
use crate::base::BoxFuture;

/// Searches in flight at once.
const CONCURRENCY: usize = 8;

pub struct HttpRetriever {
    endpoint: Endpoint,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct Reply {
    hits: Vec<serde_json::Value>,
}

impl HttpRetriever {
    pub fn new(endpoint: Endpoint) -> Result<Self, String> {
        Ok(HttpRetriever {
            endpoint,
            client: http::client()?,
        })
    }

    async fn search(&self, query: &str, k: usize) -> Result<Vec<Passage>, Failure> {
        let body = serde_json::to_vec(&serde_json::json!({ "query": query, "k": k }))
            .expect("a string and a number serialize");
        let bytes = self.endpoint.post_for_body(&self.client, "", body).await?;
        let malformed = |why: String| {
            Failure::fatal(
                ErrorKind::Malformed,
                format!("the reply is not `{{\"hits\": [{{id, source, heading?, text, score}}]}}`: {why}"),
            )
        };
        // A reply that is not JSON at all (a proxy's error page, a body cut short) may mend on
        // another attempt: it is retried. JSON that breaks the contract is what the service
        // meant: it is not.
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            return Err(Failure::retryable(
                ErrorKind::Malformed,
                format!("the reply is not JSON: {e}"),
            ));
        }
        let reply: Reply = serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
        // One hit at a time, so a message names the hit rather than a byte column. A
        // credential the service echoes is hidden before a prompt or report carries it.
        let hide = |t: String| self.endpoint.hide_owned(t);
        reply
            .hits
            .into_iter()
            .enumerate()
            .map(|(i, hit)| {
                let p: Passage =
                    serde_json::from_value(hit).map_err(|e| malformed(format!("hit {i}: {e}")))?;
                Ok(Passage {
                    id: hide(p.id),
                    source: hide(p.source),
                    heading: p.heading.map(hide),
                    text: hide(p.text),
                    score: p.score,
                })
            })
            .collect()
    }
}

impl Retriever for HttpRetriever {
    fn describe(&self) -> String {
        self.endpoint.shown.clone()
    }

    fn retrieve<'a>(
        &'a self,
        queries: &'a [String],
        k: usize,
    ) -> BoxFuture<'a, Vec<Result<Vec<Passage>, RetrieveError>>> {
        Box::pin(async move {
            let calls: Vec<_> = queries
                .iter()
                .map(|q| http::call(&self.endpoint, move || self.search(q, k)))
                .collect();
            let mut answers = stream::iter(calls).buffered(CONCURRENCY).map(|r| {
                r.map_err(|e| {
                    RetrieveError(format!(
                        "{} at {}: {}",
                        e.kind.as_str(),
                        self.endpoint.shown,
                        e.message
                    ))
                })
                .and_then(|hits| checked(hits, k))
            });
            // The first failure (after its retries) stops the sweep: the searches still in
            // flight are dropped and the rest never start, so a service that is down costs one
            // question's retries, not every question's.
            let mut out = Vec::with_capacity(queries.len());
            while let Some(answer) = answers.next().await {
                let failed = answer.is_err();
                out.push(answer);
                if failed {
                    break;
                }
            }
            let skipped = RetrieveError("not searched: an earlier search failed".into());
            out.resize(queries.len(), Err(skipped));
            out
        })
    }
}
