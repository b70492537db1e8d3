//! The offline stand-ins for the pipeline's models, together: the mock chat model
//! (`chat.kind: mock`, run in process) and the mock judge it answers grading requests with.
//! The mock generator and verifier of `rageval generate` stand with the generator
//! (`crate::generate::mock`), which the wiring hands the mock model ([`chat::Formatted`]); the
//! server that serves them all over HTTP (`rageval mock-llm`) stands on its own floor,
//! `crate::mock_llm`.

pub mod chat;
pub mod judge;

pub use chat::MockModel;

/// A sentence needs this many shared words to be chosen.
pub const MIN_SHARED_WORDS: usize = 2;
