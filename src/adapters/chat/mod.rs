//! Chat models: messages in, a reply and its token usage out. The builtin `mock` runs in
//! process; HTTP models plug in behind the same trait.

pub mod openai;

pub use openai::OpenAiChat;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::adapters::prompt::Message;
use crate::base::BoxFuture;

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

/// Token counts for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// True when the counts are our estimate, not the server's.
    pub estimated: bool,
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

/// Why a call failed after all retries. It becomes an `error` run, never a refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallError {
    pub kind: ErrorKind,
    pub message: String,
}

/// Error kinds, counted separately in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server could not be reached.
    Connect,
    /// No complete answer within the timeout.
    Timeout,
    /// 429 after every retry.
    RateLimited,
    /// 5xx after every retry.
    Server,
    /// 401 or 403: the key was missing or rejected.
    Auth,
    /// Another 4xx: the request itself was refused.
    Client,
    /// The connection broke mid-response.
    Transport,
    /// The body was not the JSON an OpenAI-compatible server sends.
    Malformed,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Server => "server",
            ErrorKind::Auth => "auth",
            ErrorKind::Client => "client",
            ErrorKind::Transport => "transport",
            ErrorKind::Malformed => "malformed",
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
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
