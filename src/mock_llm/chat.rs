//! The chat routes: `POST /v1/chat/completions` (the builtin mock model, streamed or not,
//! through the prompt cache when it has slots) and `POST /generate`, the generation contract
//! of `chat.kind: http` (the mock's grounded answer).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{
    authorize, authorized_json, error, inject, keep_request, parse_json, wait_until, AppState,
    MAX_ARRIVALS,
};
use crate::adapters::chat::{estimate_prompt_tokens, estimate_tokens, ChatRequest, ReplyFormat};
use crate::adapters::prompt::{Message, Role};
use crate::mock_llm::prompt_cache::{words, Lease};

/// `content` as a string, or the text parts of a content array.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

pub(super) async fn chat(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reply_at = std::time::Instant::now() + state.opts.delay;
    {
        let mut a = state.arrivals.lock().expect("arrivals lock");
        if a.len() < MAX_ARRIVALS {
            a.push(state.started.elapsed());
        }
    }
    if let Err(r) = authorize(&state, &headers) {
        return r;
    }
    keep_request(&state, &body);
    let req = match parse_json(&body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let messages = match messages(&req) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let stream = req["stream"].as_bool().unwrap_or(false);
    let model = req["model"].as_str().unwrap_or("mock").to_string();
    count_chat(&state, &req, stream, &model);
    let seed = req["seed"].as_u64();
    // A generator's or judge's call names its reply format; the mock answers in it.
    let format = req["response_format"]["json_schema"]["name"]
        .as_str()
        .and_then(format_named);
    let request = ChatRequest {
        messages,
        seed: seed.and_then(|s| u32::try_from(s).ok()),
        grounded: None,
        slot: 0,
        format,
    };
    if crate::adapters::judge::is_judge_request(&request) {
        state
            .counters
            .judge_requests
            .fetch_add(1, Ordering::Relaxed);
    }
    let text = if state.opts.vary_per_repeat && seed.is_some_and(|s| s % 2 == 1) {
        state.opts.refusal.clone()
    } else {
        state.model.reply(&request)
    };
    let Served {
        usage,
        timings,
        lease,
        reply_at,
    } = serve_prompt(&state, &request, &text, reply_at).await;
    let mut full = json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": usage,
    });
    if !timings.is_null() {
        full["timings"] = timings.clone();
    }
    let fault = state.fault();
    wait_until(reply_at).await;
    if let Some(r) = inject(&state, fault, &full).await {
        return r;
    }
    state
        .counters
        .chat_completed
        .fetch_add(1, Ordering::Relaxed);
    if !stream {
        drop(lease);
        return Json(full).into_response();
    }
    sse(
        &model,
        &text,
        (usage, timings),
        state.opts.token_delay,
        lease,
    )
}

/// A chat request's `messages`, which must be a non-empty list.
fn messages(req: &Value) -> Result<Vec<Message>, Response> {
    let Some(raw) = req["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "`messages` must be a non-empty list",
        ));
    };
    Ok(raw
        .iter()
        .map(|m| Message {
            role: match m["role"].as_str() {
                Some("system") | Some("developer") => Role::System,
                Some("assistant") => Role::Assistant,
                _ => Role::User,
            },
            content: content_text(&m["content"]),
        })
        .collect())
}

/// Count a chat request: streamed or not, by model and by temperature.
fn count_chat(state: &AppState, req: &Value, stream: bool, model: &str) {
    state.counters.chat_requests.fetch_add(1, Ordering::Relaxed);
    if stream {
        state
            .counters
            .chat_stream_requests
            .fetch_add(1, Ordering::Relaxed);
    }
    *state
        .by_model
        .lock()
        .expect("counter lock")
        .entry(model.to_string())
        .or_default() += 1;
    *state
        .by_temperature
        .lock()
        .expect("counter lock")
        .entry(req["temperature"].to_string())
        .or_default() += 1;
}

/// What serving a prompt cost: the reply's `usage` and `timings` (null without a prompt
/// cache), the cache's slot while it is taken, and when the reply is due.
struct Served {
    usage: Value,
    timings: Value,
    lease: Option<Lease>,
    reply_at: std::time::Instant,
}

/// Serve `request`'s prompt (through the prompt cache, when there is one) for the reply
/// `text`, due at `reply_at` without a cache.
async fn serve_prompt(
    state: &AppState,
    request: &ChatRequest,
    text: &str,
    reply_at: std::time::Instant,
) -> Served {
    match &state.prompt_cache {
        None => {
            let prompt_tokens = estimate_prompt_tokens(&request.messages);
            let completion_tokens = estimate_tokens(text);
            let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens});
            Served {
                usage,
                timings: Value::Null,
                lease: None,
                reply_at,
            }
        }
        // Tokens are words, as the cache counts them; reported both ways llama-server does.
        Some(cache) => {
            let (lease, cost) = cache.serve(&request.messages).await;
            let evaluated = cost.evaluated();
            // The slot's work starts once it is free.
            let reply_at = std::time::Instant::now()
                + state.opts.delay
                + state.opts.prompt_word_time * u32::try_from(evaluated).unwrap_or(u32::MAX);
            let completion_tokens = words(text);
            let usage = json!({"prompt_tokens": cost.prompt, "completion_tokens": completion_tokens,
                "total_tokens": cost.prompt + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cost.cached}});
            let timings = json!({"cache_n": cost.cached, "prompt_n": evaluated, "predicted_n": completion_tokens});
            Served {
                usage,
                timings,
                lease: Some(lease),
                reply_at,
            }
        }
    }
}

/// `POST /generate`, the generation contract of `chat.kind: http`: `{"question", "passages":
/// [{id, source, heading, text, score}]}` answered with `{"answer", "usage"}`, the answer the
/// mock gives to the chapter's prompt of those passages (numbered), so that a sweep through it
/// equals the builtin mock's run for run.
pub(super) async fn grounded_answer(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reply_at = std::time::Instant::now() + state.opts.delay;
    keep_request(&state, &body);
    let req = match authorized_json(&state, &headers, &body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let text = |p: &Value, field: &str| p[field].as_str().map(str::to_string);
    let passages: Option<Vec<crate::adapters::corpus::Chunk>> =
        req["passages"].as_array().and_then(|ps| {
            ps.iter()
                .map(|p| {
                    Some(crate::adapters::corpus::Chunk {
                        id: text(p, "id")?,
                        source: text(p, "source")?,
                        heading: text(p, "heading").unwrap_or_default(),
                        text: text(p, "text")?,
                    })
                })
                .collect()
        });
    let (Some(question), Some(passages)) = (req["question"].as_str(), passages) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "the body must be `{\"question\": \"...\", \"passages\": [{id, source, heading, text, score}]}`",
        );
    };
    state
        .counters
        .grounded_requests
        .fetch_add(1, Ordering::Relaxed);
    let refs: Vec<&crate::adapters::corpus::Chunk> = passages.iter().collect();
    let request = ChatRequest::of(crate::adapters::prompt::build(
        question,
        &refs,
        &state.opts.refusal,
        crate::adapters::prompt::Format::Numbered,
    ));
    let answer = state.model.reply(&request);
    let prompt_tokens = estimate_prompt_tokens(&request.messages);
    let completion_tokens = estimate_tokens(&answer);
    let full = json!({
        "answer": answer,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    });
    let fault = state.fault();
    wait_until(reply_at).await;
    if let Some(r) = inject(&state, fault, &full).await {
        return r;
    }
    Json(full).into_response()
}

/// The reply as server-sent events: one chunk per word, a final chunk with `usage` (and
/// `timings`, when not null, as llama-server sends them), `[DONE]`. A prompt cache's slot stays
/// taken until the last event is sent.
fn sse(
    model: &str,
    text: &str,
    (usage, timings): (Value, Value),
    token_delay: Duration,
    lease: Option<Lease>,
) -> Response {
    // `last` is the final chunk's `usage` and `timings`.
    let chunk = |delta: Value, finish: Value, last: Option<(Value, Value)>| {
        let mut c = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        if let Some((usage, timings)) = last {
            c["usage"] = usage;
            if !timings.is_null() {
                c["timings"] = timings;
            }
        }
        Bytes::from(format!("data: {c}\n\n"))
    };
    let mut events: Vec<(Duration, Bytes)> = vec![(
        Duration::ZERO,
        chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
            None,
        ),
    )];
    for (i, word) in text.split(' ').enumerate() {
        let piece = if i == 0 {
            word.to_string()
        } else {
            format!(" {word}")
        };
        let wait = if i == 0 { Duration::ZERO } else { token_delay };
        events.push((wait, chunk(json!({"content": piece}), Value::Null, None)));
    }
    events.push((
        Duration::ZERO,
        chunk(json!({}), json!("stop"), Some((usage, timings))),
    ));
    events.push((Duration::ZERO, Bytes::from_static(b"data: [DONE]\n\n")));
    // The lease goes along with the events and is dropped before the final chunk (the one
    // with `finish_reason` and `usage`) is sent: a client that sends its next prompt as soon
    // as it reads that chunk finds the slot idle (dropped later, the slot could still look
    // busy then, and the next prompt go to another slot, as timing decided).
    let stream =
        futures_util::stream::unfold((events.into_iter(), lease), |(mut it, lease)| async move {
            let (wait, bytes) = it.next()?;
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            let lease = if it.len() <= 1 {
                drop(lease);
                None
            } else {
                lease
            };
            Some((Ok::<_, std::io::Error>(bytes), (it, lease)))
        });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .expect("stream response")
}

/// The reply format named `name`, if a rageval call asks for one by that name: the judge's or
/// one of the generator's.
fn format_named(name: &str) -> Option<ReplyFormat> {
    std::iter::once(crate::adapters::judge::GRADE_FORMAT)
        .chain(crate::generate::FORMATS)
        .find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_format_rageval_asks_for_is_found_by_name() {
        use super::format_named;
        let judge = crate::adapters::judge::GRADE_FORMAT;
        for f in std::iter::once(judge).chain(crate::generate::FORMATS) {
            assert_eq!(format_named(f.name), Some(f));
        }
        assert_eq!(format_named("json_object"), None);
    }
}
