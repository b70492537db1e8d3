//! The offline stand-ins for real servers, together: the mock chat model, the mock judge it
//! answers grading requests with, the mock generator and verifier of `rageval generate`, and
//! the OpenAI-compatible server (`rageval mock-llm`) that serves them with the builtin embedder
//! and a reranker, optionally behind an emulated prompt cache.

pub mod chat;
pub mod generate;
pub mod judge;
pub mod prompt_cache;
pub mod server;

pub use chat::MockModel;

/// A sentence needs this many shared words to be chosen.
pub const MIN_SHARED_WORDS: usize = 2;
