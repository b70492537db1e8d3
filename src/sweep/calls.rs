//! The call log (every distinct call a sweep made, by digest) and the counters read from it.

use super::Run;
use crate::adapters::chat::{CallError, ChatModel, ChatReply, ChatRequest, Usage};
use crate::vocab::call::{ByKind, CallRecord, CallRole};

/// Counters for the calls a sweep made.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct CallStats {
    /// Runs that needed the model to answer (at least one hit passed).
    pub runs_with_call: usize,
    /// Distinct prompts among them: the answer calls the sweep made.
    pub distinct_prompts: usize,
    /// Distinct `model` rewrite calls made for follow-up questions.
    pub rewrite_calls: usize,
    /// Calls (answer or rewrite) answered from the response cache.
    pub cache_hits: usize,
    /// Prompt tokens of the answer and rewrite calls the server answered in this sweep (not
    /// from the response cache), each distinct call once.
    pub prompt_tokens: u64,
    /// Of those, the tokens the server reported reusing from its prompt cache.
    pub cached_prompt_tokens: u64,
    /// Answer calls that failed after retries (their runs are `error`).
    pub failed: usize,
    /// Rewrite calls that failed after retries (their questions were asked as written).
    pub rewrite_failed: usize,
    /// Failed calls by error kind.
    #[schemars(with = "std::collections::BTreeMap<String, usize>")]
    pub errors_by_kind: ByKind,
    /// Question texts embedded (one per distinct question or rewrite).
    pub question_embeddings: usize,
    /// Distinct judge calls (one per distinct question, expected answers, passages and reply).
    pub judge_calls: usize,
    /// Judge calls answered from the judge's cache.
    pub judge_cache_hits: usize,
    /// Judge calls that failed after retries or replied something other than the rubric's
    /// JSON (those grades are errors; the string rules stand).
    pub judge_failed: usize,
    /// Failed judge calls by error kind (`malformed` for a reply that is not the JSON).
    #[schemars(with = "std::collections::BTreeMap<String, usize>")]
    pub judge_errors_by_kind: ByKind,
    /// Distinct rerank calls (one per distinct corpus, question text and retrieved passages).
    pub rerank_calls: usize,
    /// Rerank calls answered from the rerank cache.
    pub rerank_cache_hits: usize,
    /// Rerank calls that failed after retries (a failed rerank stops the sweep, so a record a
    /// sweep wrote has none).
    pub rerank_failed: usize,
    /// Calls (answer, rewrite, judge) a batch engine answered (`batch import`, `chat.batch`);
    /// absent when none was.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch_calls: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl CallStats {
    /// The counters of a call log and the runs that use it.
    pub fn of(log: &CallLog, runs: &[Run], question_embeddings: usize) -> CallStats {
        let mut c = CallStats {
            question_embeddings,
            runs_with_call: runs.iter().filter(|r| r.call.is_some()).count(),
            ..CallStats::default()
        };
        for call in log.values() {
            c.batch_calls += usize::from(call.batch && call.error.is_none());
            if call.role == CallRole::Rerank {
                c.rerank_calls += 1;
                c.rerank_cache_hits += usize::from(call.cached);
                c.rerank_failed += usize::from(call.error.is_some());
                continue;
            }
            if call.role == CallRole::Judge {
                c.judge_calls += 1;
                c.judge_cache_hits += usize::from(call.cached);
                if let Some(e) = &call.error {
                    c.judge_failed += 1;
                    *c.judge_errors_by_kind.entry(e.kind).or_default() += 1;
                }
                continue;
            }
            let answer = call.role == CallRole::Answer;
            if answer {
                c.distinct_prompts += 1;
            } else {
                c.rewrite_calls += 1;
            }
            c.cache_hits += usize::from(call.cached);
            if !call.cached && call.error.is_none() {
                c.prompt_tokens = c.prompt_tokens.saturating_add(call.usage.prompt_tokens);
                c.cached_prompt_tokens = c
                    .cached_prompt_tokens
                    .saturating_add(call.usage.cached_prompt_tokens);
            }
            if let Some(e) = &call.error {
                if answer {
                    c.failed += 1;
                } else {
                    c.rewrite_failed += 1;
                }
                *c.errors_by_kind.entry(e.kind).or_default() += 1;
            }
        }
        c
    }
}

/// Every distinct model call of a sweep, by request digest, in the order they were planned.
pub type CallLog = indexmap::IndexMap<String, CallRecord>;

/// The digest that names a request in the call log: the first 16 hex digits of its cache key.
pub fn request_digest(model: &dyn ChatModel, request: &ChatRequest) -> String {
    let mut digest = crate::adapters::cache::chat_key(model, request);
    digest.truncate(16);
    digest
}

/// Add the calls named by `digests` and their `replies` to `log`; returns each one's index.
pub(crate) fn log_calls(
    log: &mut CallLog,
    role: CallRole,
    digests: Vec<String>,
    replies: &[Result<ChatReply, CallError>],
) -> Vec<u32> {
    digests
        .into_iter()
        .zip(replies)
        .map(|(digest, reply)| {
            let record = match reply {
                Ok(r) => CallRecord {
                    role,
                    reply: r.text.clone(),
                    usage: r.usage,
                    latency_ms: Some(crate::vocab::call::to_ms(r.latency)),
                    ttft_ms: r.ttft.map(crate::vocab::call::to_ms),
                    error: None,
                    cached: r.cached,
                    repeat: 0,
                    batch: r.batch,
                },
                Err(e) => CallRecord {
                    role,
                    reply: String::new(),
                    usage: Usage::default(),
                    latency_ms: None,
                    ttft_ms: None,
                    error: Some(e.clone()),
                    cached: false,
                    repeat: 0,
                    batch: false,
                },
            };
            log.insert_full(digest, record).0 as u32
        })
        .collect()
}

/// The call log's record of one rerank call.
pub(crate) fn rerank_record(
    reply: &Result<crate::adapters::rerank::Reranked, crate::adapters::rerank::RerankError>,
) -> CallRecord {
    match reply {
        Ok(r) => CallRecord {
            role: CallRole::Rerank,
            reply: String::new(),
            usage: r.usage,
            latency_ms: r.latency.map(crate::vocab::call::to_ms),
            ttft_ms: None,
            error: None,
            cached: r.cached,
            repeat: 0,
            batch: false,
        },
        Err(e) => CallRecord {
            role: CallRole::Rerank,
            reply: String::new(),
            usage: Usage::default(),
            latency_ms: None,
            ttft_ms: None,
            error: Some(e.to_call_error()),
            cached: false,
            repeat: 0,
            batch: false,
        },
    }
}
