//! One model call as the sweep makes it and the record keeps it: its role, its token usage,
//! and why it failed. Chat models, embedders, rerankers and retrievers report their failures
//! as a [`CallError`]; the engine turns replies into [`CallRecord`]s; the record writes them.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Token counts for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those the server reported reusing from its prompt cache instead of
    /// evaluating them (OpenAI's `usage.prompt_tokens_details.cached_tokens`, llama.cpp's
    /// `timings.cache_n`); 0 when it reports none. Absent from a record when 0, so the record
    /// of a server without a prompt cache reads as before.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_prompt_tokens: u64,
    /// True when the counts are our estimate, not the server's.
    pub estimated: bool,
}

/// The most tokens one call may count in any field: a thousand times the largest context window
/// offered today. A server that claims more is wrong, and its counts summed over a sweep would
/// overflow the totals that the gate then refuses as inconsistent.
pub const MAX_CALL_TOKENS: u64 = 1_000_000_000;

impl Usage {
    /// Why these counts cannot describe one call, naming the field (`usage.prompt_tokens is
    /// ...`): a count past [`MAX_CALL_TOKENS`], or more cached prompt tokens than prompt tokens.
    pub fn implausible(&self) -> Option<String> {
        for (field, n) in [
            ("prompt_tokens", self.prompt_tokens),
            ("completion_tokens", self.completion_tokens),
            ("cached_prompt_tokens", self.cached_prompt_tokens),
        ] {
            if n > MAX_CALL_TOKENS {
                return Some(format!(
                    "`usage.{field}` is {n}, more than one call can count ({MAX_CALL_TOKENS})"
                ));
            }
        }
        (self.cached_prompt_tokens > self.prompt_tokens).then(|| {
            format!(
                "`usage.cached_prompt_tokens` is {}, more than its `prompt_tokens`, {}",
                self.cached_prompt_tokens, self.prompt_tokens
            )
        })
    }
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// Why a call failed after all retries. It becomes an `error` run, never a refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallError {
    /// Read by name; a name no rageval writes is refused naming the field and the value.
    #[serde(deserialize_with = "kind_named")]
    pub kind: ErrorKind,
    pub message: String,
    /// The call was not made but kept for a batch engine (`sweep --batch`): no failure of
    /// the model's, and never in a record (a sweep that keeps calls writes no report).
    #[serde(skip)]
    pub deferred: bool,
}

/// The kind of a call error read by name, or an error naming `error.kind`, its value and the
/// kinds there are (a results file's call that no rageval wrote).
fn kind_named<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ErrorKind, D::Error> {
    let name = String::deserialize(d)?;
    ErrorKind::named(&name).ok_or_else(|| {
        let mut all = ErrorKind::ALL;
        all.sort();
        let all: Vec<String> = all.iter().map(|k| format!("`{}`", k.as_str())).collect();
        serde::de::Error::custom(format!(
            "`error.kind` is `{name}`, not an error kind: one of {}",
            all.join(", ")
        ))
    })
}

/// Error kinds, counted separately in reports. They order by name ([`ErrorKind::as_str`]), so
/// counts keyed by kind ([`ByKind`]) list them as results.json always has: alphabetically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Every kind.
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::RateLimited,
        ErrorKind::Server,
        ErrorKind::Auth,
        ErrorKind::Client,
        ErrorKind::Transport,
        ErrorKind::Malformed,
    ];

    /// The kind [`ErrorKind::as_str`] names `name`.
    pub fn named(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The server could not be reached or did not answer in time: is it running?
    pub fn is_unreachable(self) -> bool {
        matches!(self, ErrorKind::Connect | ErrorKind::Timeout)
    }

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

impl PartialOrd for ErrorKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// By name, not by declaration: the order reports and results.json list kinds in.
impl Ord for ErrorKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// Failed calls counted by error kind, listed by name.
pub type ByKind = std::collections::BTreeMap<ErrorKind, usize>;

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

/// What a call was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallRole {
    /// The answer to a prompt.
    Answer,
    /// A `model` rewrite of a follow-up question.
    Rewrite,
    /// The judge's grade of a reply.
    Judge,
    /// A reranker's scores for one question text's retrieved passages (its reply is not
    /// kept: the scores are the runs' passage scores).
    Rerank,
}

/// One distinct model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallRecord {
    pub role: CallRole,
    /// The reply (empty when the call failed).
    pub reply: String,
    #[schemars(with = "UsageSchema")]
    pub usage: Usage,
    /// Wall time of the call (of the call that produced a cached reply).
    pub latency_ms: Option<f64>,
    /// Time to the first streamed token.
    pub ttft_ms: Option<f64>,
    /// Why the call failed after retries; for a judge call, also why its reply (kept in
    /// `reply`) is not the rubric's JSON (kind `malformed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<ErrorSchema>")]
    pub error: Option<CallError>,
    /// The reply came from the response cache.
    pub cached: bool,
    /// `--repeat N`: which repeat made the call (sent as its `seed`); absent for repeat 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
    /// A batch engine answered the call (`batch import`, `chat.batch`), at the batch price
    /// (`pricing.batch_discount`); absent for a live call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct UsageSchema {
    prompt_tokens: u64,
    completion_tokens: u64,
    /// Of `prompt_tokens`, those the server reported reusing from its prompt cache; absent
    /// when it reported none.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    cached_prompt_tokens: u64,
    /// The counts are rageval's estimate, not the server's.
    estimated: bool,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct ErrorSchema {
    /// `connect`, `timeout`, `rate_limited`, `server`, `auth`, `client`, `transport` or `malformed`.
    kind: String,
    message: String,
}

/// Milliseconds of a duration, exact to the nanosecond when read back by [`from_ms`].
pub fn to_ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// The duration [`to_ms`] wrote.
pub fn from_ms(ms: f64) -> Duration {
    Duration::from_nanos((ms * 1e6).round().max(0.0) as u64)
}

/// Prices per million tokens, for the cost estimate.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Pricing {
    pub prompt_per_million: f64,
    /// The price of a million prompt tokens the server reused from its prompt cache
    /// (`pricing.cached_prompt_per_million`, OpenAI's discounted rate); absent: the same as
    /// `prompt_per_million`, so records without one read and write as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_per_million: Option<f64>,
    pub completion_per_million: f64,
    /// The judge's prices (`judge.prompt_per_million`, `judge.completion_per_million`);
    /// absent (0) without a judge, so records without one read and write as before.
    #[serde(default, skip_serializing_if = "is_zero_price")]
    pub judge_prompt_per_million: f64,
    #[serde(default, skip_serializing_if = "is_zero_price")]
    pub judge_completion_per_million: f64,
    /// `pricing.batch_discount`: the share off the price of the calls a batch engine answered;
    /// absent (0) in records written before batches.
    #[serde(default, skip_serializing_if = "is_zero_price")]
    pub batch_discount: f64,
}

/// Check a price (of a million tokens): 0 or more.
pub fn check_price(v: f64) -> Result<f64, String> {
    if v >= 0.0 && v.is_finite() {
        Ok(v)
    } else {
        Err("must be a price of 0 or more".into())
    }
}

fn is_zero_price(v: &f64) -> bool {
    *v == 0.0
}

impl Pricing {
    /// What `call` cost when a batch engine answered it: its tokens at its role's prices (the
    /// judge's for a grade, else the chat model's), less the batch discount; 0 for a live call.
    pub fn batch_cost(&self, call: &CallRecord) -> f64 {
        if !call.batch || call.error.is_some() {
            return 0.0;
        }
        self.full_cost(call) * (1.0 - self.batch_discount)
    }

    /// What `call`'s tokens cost at its role's prices (the judge's for a grade, else the chat
    /// model's), with no discount.
    pub fn full_cost(&self, call: &CallRecord) -> f64 {
        let u = &call.usage;
        match call.role {
            CallRole::Judge => {
                (u.prompt_tokens as f64 * self.judge_prompt_per_million
                    + u.completion_tokens as f64 * self.judge_completion_per_million)
                    / 1e6
            }
            _ => self.cost(u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens),
        }
    }

    /// The cost of a chat model's tokens: `cached` of the `prompt` tokens at the cached rate,
    /// the rest at the prompt rate.
    pub fn cost(&self, prompt: u64, cached: u64, completion: u64) -> f64 {
        let cached = cached.min(prompt);
        let cached_rate = self
            .cached_prompt_per_million
            .unwrap_or(self.prompt_per_million);
        ((prompt - cached) as f64 * self.prompt_per_million
            + cached as f64 * cached_rate
            + completion as f64 * self.completion_per_million)
            / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kinds order by the names results.json writes (its `errors_by_kind` keys are listed in
    /// this order), not as declared; each name is the one serde writes and reads.
    #[test]
    fn kinds_order_by_their_names() {
        let mut kinds = ErrorKind::ALL;
        kinds.sort();
        let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "auth",
                "client",
                "connect",
                "malformed",
                "rate_limited",
                "server",
                "timeout",
                "transport"
            ]
        );
        for k in ErrorKind::ALL {
            let written = serde_json::to_string(&k).unwrap();
            assert_eq!(written, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<ErrorKind>(&written).unwrap(), k);
            assert_eq!(ErrorKind::named(k.as_str()), Some(k));
        }
    }

    #[test]
    fn a_call_error_of_an_unknown_kind_is_refused_naming_the_field() {
        let err = serde_json::from_str::<CallError>(r#"{"kind":"gone","message":"m"}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "`error.kind` is `gone`, not an error kind: one of `auth`, `client`, `connect`, `malformed`, `rate_limited`, `server`, `timeout`, `transport` at line 1 column 14"
        );
        let read: CallError =
            serde_json::from_str(r#"{"kind":"rate_limited","message":"m"}"#).unwrap();
        assert_eq!(read.kind, ErrorKind::RateLimited);
    }
}
