//! An OpenAI-compatible embedder over HTTP: `POST {base_url}/embeddings`, batched, retried.

use serde_json::{json, Value};

use super::{EmbedError, Embedder};
use crate::adapters::chat::{estimate_tokens, ErrorKind};
use crate::adapters::http::{self, Endpoint, Endpoints, Failure};
use crate::base::BoxFuture;

#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    endpoints: Endpoints,
    model: String,
    batch_size: usize,
    concurrency: usize,
    max_input_tokens: Option<usize>,
}

impl OpenAiEmbedder {
    /// A client of `endpoints`: one server, or several sharing a rate limit.
    pub fn new(
        endpoints: impl Into<Endpoints>,
        model: &str,
        batch_size: usize,
        concurrency: usize,
    ) -> Result<Self, String> {
        Ok(OpenAiEmbedder {
            client: http::client()?,
            endpoints: endpoints.into(),
            model: model.to_string(),
            batch_size: batch_size.max(1),
            concurrency: concurrency.max(1),
            max_input_tokens: None,
        })
    }

    /// Refuse texts estimated longer than `tokens` before sending them.
    pub fn with_max_input_tokens(mut self, tokens: Option<usize>) -> Self {
        self.max_input_tokens = tokens;
        self
    }

    async fn batch(&self, server: &Endpoint, texts: &[String]) -> Result<Vec<Vec<f32>>, Failure> {
        let body = serde_json::to_vec(&json!({"model": self.model, "input": texts})).expect("JSON");
        let bytes = server
            .post_for_body(&self.client, "embeddings", body)
            .await?;
        let malformed =
            |m: &str| Failure::fatal(ErrorKind::Malformed, format!("embeddings response {m}"));
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| malformed("is not JSON"))?;
        let data = v["data"]
            .as_array()
            .ok_or_else(|| malformed("has no `data` list"))?;
        if data.len() != texts.len() {
            return Err(malformed(&format!(
                "has {} vectors for {} texts",
                data.len(),
                texts.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, item) in data.iter().enumerate() {
            let i = item["index"].as_u64().map(|i| i as usize).unwrap_or(pos);
            let vector: Vec<f32> = serde_json::from_value(item["embedding"].clone())
                .map_err(|_| malformed("has an `embedding` that is not a list of numbers"))?;
            *out.get_mut(i)
                .ok_or_else(|| malformed("has an index out of range"))? = Some(vector);
        }
        out.into_iter()
            .map(|v| v.ok_or_else(|| malformed("misses an index")))
            .collect()
    }
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> String {
        self.model.clone()
    }

    fn max_input_tokens(&self) -> Option<usize> {
        self.max_input_tokens
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async move {
            use futures_util::stream::{self, StreamExt, TryStreamExt};
            // Batches go `concurrency` at a time; `buffered` keeps them in order.
            // The futures are built first so the stream's type holds no closure (the Send
            // check of a boxed future cannot see through a closure's lifetimes).
            let calls: Vec<_> = texts
                .chunks(self.batch_size)
                .map(|batch| {
                    // Under `tokens_per_minute` a batch costs the estimated tokens of its texts.
                    let tokens = batch.iter().map(|t| estimate_tokens(t)).sum();
                    http::call_any(&self.endpoints, tokens, move |server| {
                        self.batch(server, batch)
                    })
                })
                .collect();
            let batches: Vec<Vec<Vec<f32>>> = stream::iter(calls)
                .buffered(self.concurrency)
                .map_err(|e| {
                    // The URL without its query, which may hold a key.
                    EmbedError(format!(
                        "{} at {}/embeddings: {}",
                        e.kind.as_str(),
                        self.endpoints.shown,
                        e.message
                    ))
                })
                .try_collect()
                .await?;
            Ok(batches.into_iter().flatten().collect())
        })
    }
}
