//! Chat models: messages in, a reply and its token usage out. The builtin `mock` runs in
//! process; HTTP models plug in behind the same trait.

pub mod config;

pub mod openai;

pub use openai::OpenAiChat;

use std::time::Duration;

use serde::Serialize;

use crate::adapters::prompt::Message;
use crate::base::BoxFuture;
pub use crate::vocab::call::{CallError, ErrorKind, Usage};

/// Everything that can change a reply. Two equal requests must get equal replies from a
/// deterministic model, which is what makes deduplication and caching sound.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    /// The repeat index of a `--repeat N` sweep (N above 1), sent as OpenAI's `seed` so a
    /// repeated call is a distinct request, cached apart; `None` for a single sweep.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
    /// Which of the sweep's chat models answers it (see [`crate::sweep::ChatSlots`]); 0, the
    /// configured `chat:` model, everywhere else. Not part of the cache key: the model's own
    /// identity is.
    #[serde(skip)]
    pub slot: u32,
}

/// A successful call.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    pub text: String,
    pub usage: Usage,
    /// Wall time of the call (for a cached reply: of the call that produced it).
    pub latency: Duration,
    /// Time to the first streamed token, when the reply was streamed.
    pub ttft: Option<Duration>,
    /// True when the reply came from the response cache, not from the model.
    pub cached: bool,
}

/// A chat model.
pub trait ChatModel: Send + Sync {
    /// A name that identifies the model: part of cache keys and reports.
    fn model(&self) -> String;

    /// Every parameter besides the messages that changes the reply (temperature, max_tokens,
    /// ...): part of the cache key.
    fn params(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatReply, CallError>>;

    /// Whether `request` would be answered without calling the model (from a cache): what
    /// `sweep --dry-run` counts as a cached prompt.
    fn is_cached(&self, _request: &ChatRequest) -> bool {
        false
    }

    /// Whether the model's server may keep a prompt cache (llama.cpp, vLLM, hosted APIs), so
    /// that the sweep sends its prompts in prefix order; the in-process mock keeps none.
    fn prefix_cached(&self) -> bool {
        false
    }

    /// Warnings gathered since the last call (a cache write that failed), for the command to
    /// print: the library never writes to the terminal.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The rough estimate used when a server reports no usage: four characters per token, rounded
/// up, over the message contents.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// [`estimate_tokens`] over every message of a request.
pub fn estimate_prompt_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(|m| estimate_tokens(&m.content)).sum()
}
