//! The offline stand-ins for real models, together: the mock chat model (`chat.kind: mock`,
//! run in process), the mock judge it answers grading requests with, and the mock generator and
//! verifier of `rageval generate`. The server that serves them over HTTP (`rageval mock-llm`)
//! stands on its own floor, `crate::mock_llm`.

pub mod chat;
pub mod generate;
pub mod judge;

pub use chat::MockModel;

/// A sentence needs this many shared words to be chosen.
pub const MIN_SHARED_WORDS: usize = 2;
