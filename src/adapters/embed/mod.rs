//! Embedders: text -> unit vectors. The builtin `hash` embedder runs offline; HTTP embedders
//! plug in behind the same trait.

pub mod config;

pub mod hash;
pub mod openai;

pub use hash::HashEmbedder;
pub use openai::OpenAiEmbedder;

use crate::base::BoxFuture;

/// Why an embedding request failed. Embedding happens once, before the sweep, so a failure
/// aborts the run (exit status 2) instead of becoming an `error` run.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EmbedError(pub String);

/// A server refused one input as longer than the model reads, although its estimate fit: the
/// message, saying where and what the server said. The caller splits that text and asks again.
#[derive(Debug, Clone, PartialEq)]
pub struct TooLong(pub String);

/// One input's answer from [`Embedder::embed_each`]: its vector, or the server's refusal.
pub type Embedded = Result<Vec<f32>, TooLong>;

/// Turns texts into vectors. Implementations must be deterministic for a given model.
pub trait Embedder: Send + Sync {
    /// A name that identifies the model: part of cache keys and reports.
    fn model(&self) -> String;

    /// The embedder this one is a layer over (the embedding cache, a batch deferral), whose
    /// answers the provided methods below give; `None` (the default) for an embedder that
    /// answers itself.
    fn inner(&self) -> Option<&dyn Embedder> {
        None
    }

    /// The most tokens the model reads in one input, when known: longer texts are refused before
    /// any request (a server answers them with an error, not a truncation).
    fn max_input_tokens(&self) -> Option<usize> {
        self.inner().and_then(Embedder::max_input_tokens)
    }

    /// One vector per text, in order: [`Embedder::embed_each`]'s answers, the first refusal
    /// failing the call.
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async move { all_embedded(self.embed_each(texts).await?) })
    }

    /// One answer per text, in order: its vector, or [`TooLong`] when the server refused that
    /// input as too long (the other inputs still get their vectors). Any other failure fails
    /// the call. An embedder that reads any length never refuses.
    fn embed_each<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Embedded>, EmbedError>>;

    /// Warnings gathered since the last call (a cache write that failed), for the command to
    /// print: the library never writes to the terminal.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// [`Embedder::embed_each`]'s answers as [`Embedder::embed`]'s: the first refusal fails the call.
fn all_embedded(answers: Vec<Embedded>) -> Result<Vec<Vec<f32>>, EmbedError> {
    answers
        .into_iter()
        .map(|a| a.map_err(|TooLong(why)| EmbedError(why)))
        .collect()
}

/// Whether a failed embedding request was refused because an input is longer than the model
/// reads. Servers word it differently, so this looks for the gist: a refused request (a 4xx
/// other than 429, or a 5xx: llama-server's older builds answer 500) whose message speaks of
/// tokens, context or length, and of a limit passed.
///
/// - llama-server: `input (516 tokens) is larger than the max context size (512 tokens)`, and
///   `input is too large to process. increase the physical batch size`;
/// - OpenAI and vLLM: `This model's maximum context length is 8192 tokens, however you requested
///   ...`, code `context_length_exceeded`;
/// - text-embeddings-inference: `413 Payload Too Large: Input validation error: inputs must have
///   less than 512 tokens. Given: 600`;
/// - Ollama: `the input length exceeds the context length`.
pub fn refused_as_too_long(kind: crate::vocab::call::ErrorKind, message: &str) -> bool {
    use crate::vocab::call::ErrorKind;
    if !matches!(kind, ErrorKind::Client | ErrorKind::Server) {
        return false;
    }
    let m = message.to_lowercase();
    if m.starts_with("413") {
        return true;
    }
    let about = ["token", "context", "length", "input", "sequence"];
    let passed = [
        "too long",
        "too large",
        "too many tokens",
        "larger than",
        "longer than",
        "exceed",
        "maximum context",
        "max context",
        "must have less than",
        "reduce the length",
        "context_length",
    ];
    about.iter().any(|w| m.contains(w)) && passed.iter().any(|w| m.contains(w))
}

/// Cosine similarity of two L2-normalised vectors, accumulated in f64 so that the result does
/// not depend on how the vectors reached us.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

/// Scale `v` to unit length in place; a zero vector stays zero.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in v {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::call::ErrorKind::{Client, Connect, RateLimited, Server};

    #[test]
    fn too_long_refusals_are_recognised_in_every_servers_words() {
        for (kind, message) in [
            (Client, "400 Bad Request: input (516 tokens) is larger than the max context size (512 tokens)"),
            (Server, "500 Internal Server Error: input is too large to process. increase the physical batch size"),
            (Client, "400 Bad Request: This model's maximum context length is 8192 tokens, however you requested 9000 tokens"),
            (Client, "400 Bad Request: This model's maximum context length is 512 tokens. However, you requested 600 tokens in the input for embedding generation. Please reduce the length of the input."),
            (Client, "413 Payload Too Large: Input validation error: `inputs` must have less than 512 tokens. Given: 600"),
            (Server, "500 Internal Server Error: the input length exceeds the context length"),
            (Client, "422 Unprocessable Entity: Sequence too long"),
        ] {
            assert!(refused_as_too_long(kind, message), "{message}");
        }
        for (kind, message) in [
            (
                RateLimited,
                "429 Too Many Requests: rate limit exceeded: too many tokens per minute",
            ),
            (
                Connect,
                "cannot connect to http://127.0.0.1:9/v1 (input too long)",
            ),
            (Client, "400 Bad Request: unknown model `mini`"),
            (Server, "503 Service Unavailable: loading model"),
            (
                Client,
                "400 Bad Request: input must be a string or a list of strings",
            ),
        ] {
            assert!(!refused_as_too_long(kind, message), "{message}");
        }
    }
}
