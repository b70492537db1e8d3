//! An OpenAI-compatible embedder over HTTP: `POST {base_url}/embeddings`, batched, retried.

use serde_json::{json, Value};

use super::{refused_as_too_long, EmbedError, Embedded, Embedder, TooLong};
use crate::adapters::chat::{estimate_tokens, CallError, ErrorKind};
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

    /// One request: per text its vector, or `None` where the reply's item is missing, empty
    /// or not a list of numbers. A refusal as too long is not retried: the same input would be
    /// refused again.
    async fn batch(
        &self,
        server: &Endpoint,
        texts: &[String],
    ) -> Result<Vec<Option<Vec<f32>>>, Failure> {
        let body = serde_json::to_vec(&json!({"model": self.model, "input": texts})).expect("JSON");
        let bytes = server
            .post_for_body(&self.client, "embeddings", body)
            .await
            .map_err(|mut f| {
                if refused_as_too_long(f.error.kind, &f.error.message) {
                    f.retry = false;
                }
                f
            })?;
        let malformed =
            |m: &str| Failure::fatal(ErrorKind::Malformed, format!("embeddings response {m}"));
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| malformed("is not JSON"))?;
        let data = v["data"]
            .as_array()
            .ok_or_else(|| malformed("has no `data` list"))?;
        if data.len() > texts.len() {
            return Err(malformed(&format!(
                "has {} vectors for {} texts",
                data.len(),
                texts.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, item) in data.iter().enumerate() {
            let i = item["index"].as_u64().map(|i| i as usize).unwrap_or(pos);
            let slot = out
                .get_mut(i)
                .ok_or_else(|| malformed("has an index out of range"))?;
            *slot = serde_json::from_value::<Vec<f32>>(item["embedding"].clone())
                .ok()
                .filter(|v| !v.is_empty());
        }
        Ok(out)
    }

    /// One request through the fleet, its failure as the call's error.
    async fn request(&self, texts: &[String]) -> Result<Vec<Option<Vec<f32>>>, CallError> {
        // Under `tokens_per_minute` a batch costs the estimated tokens of its texts.
        let tokens = texts.iter().map(|t| estimate_tokens(t)).sum();
        http::call_any(&self.endpoints, tokens, move |server| {
            self.batch(server, texts)
        })
        .await
    }

    /// One batch's answers. A batch refused as too long is asked again one text at a time, so
    /// that only the texts refused alone are [`TooLong`]; a text whose vector came back empty,
    /// malformed, missing, or of other dimensions than the batch's others (llama-server
    /// returns an empty embedding for one input of a batch now and then) is asked again on its
    /// own before anything fails.
    async fn answers(&self, texts: &[String]) -> Result<Vec<Embedded>, CallError> {
        let vectors = match self.request(texts).await {
            Ok(vectors) => vectors,
            Err(e) if refused_as_too_long(e.kind, &e.message) => {
                if texts.len() == 1 {
                    return Ok(vec![Err(TooLong(self.describe(&e)))]);
                }
                let mut out = Vec::with_capacity(texts.len());
                for text in texts {
                    out.extend(Box::pin(self.answers(std::slice::from_ref(text))).await?);
                }
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        // The dimensions most of the batch's vectors have (the first such, on a tie).
        let mut counts: Vec<(usize, usize)> = Vec::new();
        for v in vectors.iter().flatten() {
            match counts.iter_mut().find(|(d, _)| *d == v.len()) {
                Some((_, n)) => *n += 1,
                None => counts.push((v.len(), 1)),
            }
        }
        let usual = counts
            .iter()
            .fold(None, |best: Option<(usize, usize)>, &(d, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((d, n)),
            })
            .map(|(d, _)| d);
        if usual.is_none() && texts.len() > 1 {
            // Not one input's hiccup: asking each alone would only repeat it.
            return Err(CallError {
                kind: ErrorKind::Malformed,
                message: format!(
                    "embeddings response holds no vector (an `embedding` list of numbers) for any of its {} texts",
                    texts.len()
                ),
                deferred: false,
            });
        }
        let mut out = Vec::with_capacity(texts.len());
        for (text, v) in texts.iter().zip(vectors) {
            match v {
                Some(v) if texts.len() == 1 || Some(v.len()) == usual => out.push(Ok(v)),
                _ if texts.len() > 1 => {
                    out.extend(Box::pin(self.answers(std::slice::from_ref(text))).await?)
                }
                // Alone and still without a vector: the dimension check names the text.
                _ => out.push(Ok(Vec::new())),
            }
        }
        Ok(out)
    }

    /// A failed call as messages say it: the kind, where, and what the server said (the URL
    /// without its query, which may hold a key).
    fn describe(&self, e: &CallError) -> String {
        format!(
            "{} at {}/embeddings: {}",
            e.kind.as_str(),
            self.endpoints.shown,
            e.message
        )
    }
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> String {
        self.model.clone()
    }

    fn max_input_tokens(&self) -> Option<usize> {
        self.max_input_tokens
    }

    fn embed_each<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Embedded>, EmbedError>> {
        Box::pin(async move {
            use futures_util::stream::{self, StreamExt, TryStreamExt};
            // Batches go `concurrency` at a time; `buffered` keeps them in order.
            // The futures are built first so the stream's type holds no closure (the Send
            // check of a boxed future cannot see through a closure's lifetimes).
            let calls: Vec<_> = texts
                .chunks(self.batch_size)
                .map(|batch| self.answers(batch))
                .collect();
            let batches: Vec<Vec<Embedded>> = stream::iter(calls)
                .buffered(self.concurrency)
                .map_err(|e| EmbedError(self.describe(&e)))
                .try_collect()
                .await?;
            Ok(batches.into_iter().flatten().collect())
        })
    }
}
