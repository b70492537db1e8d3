//! Chat models: messages in, a reply and its token usage out. The builtin `mock` runs in
//! process; HTTP models plug in behind the same trait. A generation endpoint (`chat.kind:
//! http`, [`HttpChat`]) takes the question and the passages instead of messages: its own chain
//! builds the prompt.

pub mod config;

pub mod http;
pub mod openai;

pub use http::HttpChat;
pub use openai::OpenAiChat;

use std::future::Future;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::adapters::http::{Endpoint, Failure};
use crate::adapters::prompt::Message;
use crate::base::BoxFuture;
pub use crate::vocab::call::{CallError, ErrorKind, Usage};

/// The longest answer taken from a model: 1 MiB, as one retriever passage
/// ([`crate::adapters::retriever::MAX_PASSAGE_BYTES`]). An answer is shown, cached and written
/// into every report; a longer one is an `error` run (kind `malformed`), not cut (a cut answer
/// would be graded as if the model said it).
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// The longest reply to a request that names a [`ReplyFormat`] (a judge's grade, a generated
/// question, a verification): 64 KiB, far above the small JSON object asked for. `generate`
/// holds a round's replies at once; junk past this is an error, never kept or cached.
pub const MAX_FORMATTED_REPLY_BYTES: usize = 64 * 1024;

impl ChatRequest {
    /// The longest reply this request takes, and what it is, for messages.
    pub fn reply_limit(&self) -> (usize, String) {
        match self.format {
            Some(f) => (MAX_FORMATTED_REPLY_BYTES, format!("a `{}` reply", f.name)),
            None => (MAX_ANSWER_BYTES, "one answer".to_string()),
        }
    }
}

/// Why a model's reply cannot be taken, whichever way it came (a live call, a line of a batch
/// engine's output file): counts no call can have, which would saturate the sweep's totals, or
/// a text longer than `limit` bytes for `what` it answers (a cut answer would be graded as if
/// the model said it). Such a reply is an error, never graded, cached or reported. The cache
/// drops the same records when it reads them, so a reply that passes is one it serves.
pub fn reply_problem(
    text: &str,
    usage: Option<&Usage>,
    (limit, what): (usize, &str),
) -> Option<String> {
    usage.and_then(Usage::implausible).or_else(|| {
        (text.len() > limit).then(|| {
            format!(
                "the reply has {} bytes, more than the limit of {} KiB for {what}",
                text.len(),
                limit >> 10
            )
        })
    })
}

/// Everything that can change a reply. Two equal requests must get equal replies from a
/// deterministic model, which is what makes deduplication and caching sound.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    /// The repeat index of a `--repeat N` sweep (N above 1), sent as OpenAI's `seed` so a
    /// repeated call is a distinct request, cached apart; `None` for a single sweep.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
    /// For a model that builds its own prompt ([`ChatModel::takes_passages`]): the question and
    /// passages it is sent, `messages` then empty; `None` for every other model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grounded: Option<Grounded>,
    /// Which of the sweep's chat models answers it (see [`crate::sweep::ChatSlots`]); 0, the
    /// configured `chat:` model, everywhere else. Not part of the cache key: the model's own
    /// identity is.
    #[serde(skip)]
    pub slot: u32,
    /// The JSON object the reply must be (the judge's grade, a generated question, a
    /// verdict): what the builtin mocks answer with, and what an `openai` model with
    /// `structured_output` on is held to by `response_format`. `None` for a sweep's prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<ReplyFormat>,
}

/// A reply format: a name (the mocks dispatch on it) and the JSON Schema of the one object a
/// reply must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct ReplyFormat {
    pub name: &'static str,
    /// The schema as JSON text.
    pub schema: &'static str,
}

impl ReplyFormat {
    /// OpenAI's `response_format` for this schema (also what llama-server and vLLM read).
    pub fn response_format(&self) -> serde_json::Value {
        let schema: serde_json::Value =
            serde_json::from_str(self.schema).expect("a reply format's schema is JSON");
        serde_json::json!({
            "type": "json_schema",
            "json_schema": {"name": self.name, "strict": true, "schema": schema},
        })
    }
}

impl ChatRequest {
    /// A request of `messages` for the configured model, with no seed.
    pub fn of(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            seed: None,
            grounded: None,
            slot: 0,
            format: None,
        }
    }

    /// The same request with seed `seed` (a repeat of `sweep --repeat N`).
    pub fn with_seed(&self, seed: u32) -> Self {
        ChatRequest {
            seed: Some(seed),
            ..self.clone()
        }
    }

    /// [`estimate_tokens`] over what the request carries: its messages, or the question and
    /// passage texts of a grounded request (whose prompt the endpoint builds, unseen).
    pub fn estimated_prompt_tokens(&self) -> u64 {
        let grounded = self.grounded.as_ref().map_or(0, |g| {
            estimate_tokens(&g.question)
                + g.passages
                    .iter()
                    .map(|p| estimate_tokens(&p.text))
                    .sum::<u64>()
        });
        estimate_prompt_tokens(&self.messages) + grounded
    }
}

/// What a generation endpoint (`chat.kind: http`) is sent: the question as asked and the
/// passages that passed, in the order the setting puts them. Nothing else, so that equal
/// requests are one call whatever the prompt format or template.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Grounded {
    pub question: String,
    pub passages: Vec<SentPassage>,
}

impl Grounded {
    /// The request for `question` (trimmed) and `passages` with their scores, in the order sent.
    pub fn of<'a>(
        question: &str,
        passages: impl IntoIterator<Item = (&'a crate::adapters::corpus::Chunk, f64)>,
    ) -> Self {
        Grounded {
            question: question.trim().to_string(),
            passages: passages
                .into_iter()
                .map(|(c, score)| SentPassage {
                    id: c.id.clone(),
                    source: c.source.clone(),
                    heading: c.heading.clone(),
                    text: c.text.clone(),
                    score: Score(score),
                })
                .collect(),
        }
    }
}

/// One passage of a [`Grounded`] request, as the retriever gave it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct SentPassage {
    pub id: String,
    pub source: String,
    /// Empty when the passage has none.
    pub heading: String,
    /// As retrieved: line breaks kept (the chain formats it).
    pub text: String,
    pub score: Score,
}

/// A retrieval score that can key a request: equal when bit for bit equal.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(transparent)]
pub struct Score(pub f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Score {}

impl std::hash::Hash for Score {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
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
    /// True when a batch engine answered it (a cached reply that `batch import` or
    /// `chat.batch` put there), billed at the batch price.
    pub batch: bool,
}

/// What one attempt of a live call read from its server: the reply's text, the usage the
/// server reported (`None`: it reported none), and the time to the first streamed token.
pub(crate) type Read = (String, Option<Usage>, Option<Duration>);

/// One attempt of a live call to `server`, timed: `read`, given the moment the attempt
/// started, gets the reply, which is checked as every live model's is. A server (or chain)
/// that echoes its request would put a credential into the reply, which is shown, cached and
/// written to reports: the credentials `server` is sent are hidden. Counts no call can have
/// would saturate the sweep's totals, and the gate would then refuse the record the sweep
/// wrote: they are an error, as a reply longer than `request` takes is. Usage the server did
/// not report is estimated.
pub(crate) async fn timed_attempt<F: Future<Output = Result<Read, Failure>>>(
    server: &Endpoint,
    request: &ChatRequest,
    read: impl FnOnce(Instant) -> F,
) -> Result<ChatReply, Failure> {
    let started = Instant::now();
    let (text, reported, ttft) = read(started).await?;
    let text = server.hide_owned(text);
    let (limit, what) = request.reply_limit();
    if let Some(why) = reply_problem(&text, reported.as_ref(), (limit, &what)) {
        return Err(Failure::fatal(ErrorKind::Malformed, why));
    }
    let usage = reported.unwrap_or_else(|| Usage {
        prompt_tokens: request.estimated_prompt_tokens(),
        completion_tokens: estimate_tokens(&text),
        cached_prompt_tokens: 0,
        estimated: true,
    });
    Ok(ChatReply {
        text,
        usage,
        latency: started.elapsed(),
        ttft,
        cached: false,
        batch: false,
    })
}

/// A chat model.
pub trait ChatModel: Send + Sync {
    /// A name that identifies the model: part of cache keys and reports.
    fn model(&self) -> String;

    /// The model this one is a layer over (the response cache, a batch deferral), whose
    /// answers the provided methods below give; `None` (the default) for a model that answers
    /// itself.
    fn inner(&self) -> Option<&dyn ChatModel> {
        None
    }

    /// Every parameter besides the messages that changes the reply (temperature, max_tokens,
    /// ...): part of the cache key.
    fn params(&self) -> serde_json::Value {
        self.inner()
            .map_or(serde_json::Value::Null, ChatModel::params)
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatReply, CallError>>;

    /// Whether `request` would be answered without calling the model (from a cache): what
    /// `sweep --dry-run` counts as a cached prompt.
    fn is_cached(&self, request: &ChatRequest) -> bool {
        self.inner().is_some_and(|m| m.is_cached(request))
    }

    /// Whether the model takes a [`Grounded`] request (the question and passages) rather than
    /// messages: it builds its own prompt.
    fn takes_passages(&self) -> bool {
        self.inner().is_some_and(ChatModel::takes_passages)
    }

    /// Whether the model's server may keep a prompt cache (llama.cpp, vLLM, hosted APIs), so
    /// that the sweep sends its prompts in prefix order; the in-process mock keeps none.
    fn prefix_cached(&self) -> bool {
        self.inner().is_some_and(ChatModel::prefix_cached)
    }

    /// Warnings gathered since the last call (a cache write that failed), for the command to
    /// print: the library never writes to the terminal.
    fn warnings(&self) -> Vec<String> {
        self.inner().map_or_else(Vec::new, ChatModel::warnings)
    }

    /// Whether this is the builtin offline mock, whose replies (and generated questions) are
    /// placeholders that show the shape of the output, not what a model would write.
    fn is_mock(&self) -> bool {
        self.inner().is_some_and(ChatModel::is_mock)
    }

    /// The body of `request` as a line of a batch file (`/v1/chat/completions`): what the
    /// live call sends, unstreamed; `None` for a model no batch engine serves.
    fn batch_body(&self, request: &ChatRequest) -> Option<serde_json::Value> {
        self.inner().and_then(|m| m.batch_body(request))
    }
}

/// The body of a reply that must be one JSON object: the reply trimmed, out of a ```` ```json ````
/// (or bare ```` ``` ````) fence when it is in one.
pub fn unfence(reply: &str) -> &str {
    let text = reply.trim();
    text.strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|t| t.strip_suffix("```"))
        .map_or(text, str::trim)
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
