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

/// Turns texts into vectors. Implementations must be deterministic for a given model.
pub trait Embedder: Send + Sync {
    /// A name that identifies the model: part of cache keys and reports.
    fn model(&self) -> String;

    /// The most tokens the model reads in one input, when known: longer texts are refused before
    /// any request (a server answers them with an error, not a truncation).
    fn max_input_tokens(&self) -> Option<usize> {
        None
    }

    /// One vector per text, in order.
    fn embed<'a>(&'a self, texts: &'a [String])
        -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>;

    /// Warnings gathered since the last call (a cache write that failed), for the command to
    /// print: the library never writes to the terminal.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
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
