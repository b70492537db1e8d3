//! `rageval mock-llm`: the builtin mock model and hash embedder behind an OpenAI-compatible
//! HTTP API, so the HTTP path is tested for real without a paid API. `POST /generate` serves
//! the same mock behind the generation contract of `chat.kind: http`.
//!
//! Chat runs the same algorithm as the in-process `mock`, and embeddings are the builtin `hash`
//! vectors, so an HTTP sweep equals a builtin sweep run for run. For tests and demos it can add
//! latency and inject faults (errors, malformed bodies, dropped connections, hangs) from a
//! seeded random generator, and it counts what it served at `GET /stats`.
//!
//! Requests that carry the judge's rubric get the mock judge's grade, and those whose
//! `response_format` names a `rageval generate` format get the mock generator's or verifier's
//! reply ([`crate::generate::mock`]); `paraphrase` rewords
//! every other reply (see [`crate::adapters::mock::chat::paraphrase`]); `keep_requests` keeps the last
//! chat request bodies, byte for byte, at `GET /requests`, so a test can see exactly what a
//! client sent.

// Handlers return `Result<_, Response>`: the error *is* the HTTP answer, built once per request.
#![allow(clippy::result_large_err)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::adapters::chat::estimate_tokens;
use crate::adapters::embed::HashEmbedder;
use crate::adapters::mock::MockModel;
use crate::mock_llm::prompt_cache::PromptCache;

mod batch;
mod chat;
pub mod prompt_cache;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Required bearer key; `None` accepts every request.
    pub api_key: Option<String>,
    /// How long after its request arrived every answer is sent, the mock's own work included
    /// (so that a client sees the latency asked for, not that plus the mock's time).
    pub delay: Duration,
    /// Between streamed words.
    pub token_delay: Duration,
    pub dimensions: usize,
    pub refusal: String,
    /// Larger request bodies get 413.
    pub max_body_bytes: usize,
    pub faults: Faults,
    /// `--vary-per-repeat`: a request whose `seed` is odd is refused (the refusal sentence),
    /// whatever the prompt; seed 0, even seeds and no seed get the usual reply. This is a
    /// server that answers differently per repeat of `sweep --repeat N`, exactly predictably.
    pub vary_per_repeat: bool,
    /// Reword answers and refusals deterministically.
    pub paraphrase: bool,
    /// Chat request bodies kept for `GET /requests` (the newest last).
    pub keep_requests: usize,
    /// `--prompt-cache-slots N`: serve chat from N slots with a prompt cache each, as
    /// llama-server does ([`prompt_cache`]), and report the words reused; 0: none.
    pub prompt_cache_slots: usize,
    /// With a prompt cache, how long each word evaluated (not reused) adds to a reply, as a
    /// server's prompt processing would.
    pub prompt_word_time: Duration,
    /// `--batch-delay`: how long a batch takes, its lines spread over it ([`batch`]).
    pub batch_delay: Duration,
}

/// Seeded fault injection. Rates are probabilities per request and add up to at most 1.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    pub seed: u64,
    pub fail_rate: f64,
    /// 500, 503 or 429 (429 and 503 carry `Retry-After`).
    pub fail_status: u16,
    pub retry_after_s: u64,
    pub malformed_rate: f64,
    pub drop_rate: f64,
    pub hang_rate: f64,
    /// Also inject faults into `/v1/embeddings` (by default only chat is affected).
    pub embeddings: bool,
    /// `--fail-every N`: every Nth request that may fail gets `fail_status`, exactly (0: none).
    pub fail_every: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Fail,
    Malformed,
    Drop,
    Hang,
}

#[derive(Default)]
struct Counters {
    chat_requests: AtomicU64,
    chat_stream_requests: AtomicU64,
    chat_completed: AtomicU64,
    /// `POST /generate` (chat kind `http`), reported as `generate_requests`.
    grounded_requests: AtomicU64,
    judge_requests: AtomicU64,
    embedding_requests: AtomicU64,
    texts_embedded: AtomicU64,
    rerank_requests: AtomicU64,
    documents_reranked: AtomicU64,
    unauthorized: AtomicU64,
    failed: AtomicU64,
    malformed: AtomicU64,
    dropped: AtomicU64,
    hung: AtomicU64,
    /// Requests that could have been given a fault, for `--fail-every`.
    faultable: AtomicU64,
}

/// Most chat arrival times kept for `GET /stats/arrivals`.
const MAX_ARRIVALS: usize = 10_000;

struct AppState {
    opts: ServerOptions,
    counters: Counters,
    /// When the server started, and when each chat request arrived (the first
    /// [`MAX_ARRIVALS`]), so tests can check a client's pacing by the server's clock.
    started: std::time::Instant,
    arrivals: Mutex<Vec<Duration>>,
    rng: Mutex<fastrand::Rng>,
    model: MockModel,
    embedder: HashEmbedder,
    requests: Mutex<std::collections::VecDeque<String>>,
    /// Chat requests per `model` and per `temperature` of the request body, so tests see
    /// which profile and temperature each call was made with.
    by_model: Mutex<std::collections::BTreeMap<String, u64>>,
    by_temperature: Mutex<std::collections::BTreeMap<String, u64>>,
    /// Requests per query string (`api-version=...`), to show a base URL's query arrives.
    queries: Mutex<std::collections::BTreeMap<String, u64>>,
    /// `--prompt-cache-slots`: the emulated prompt cache.
    prompt_cache: Option<Arc<PromptCache>>,
    /// The Files and Batches endpoints' state.
    batches: batch::Batches,
}

impl AppState {
    fn fault(&self) -> Option<Fault> {
        let f = &self.opts.faults;
        let n = self.counters.faultable.fetch_add(1, Ordering::Relaxed) + 1;
        if f.fail_every > 0 && n % f.fail_every == 0 {
            self.counters.failed.fetch_add(1, Ordering::Relaxed);
            return Some(Fault::Fail);
        }
        let r = self.rng.lock().expect("rng lock").f64();
        let mut edge = 0.0;
        for (rate, fault) in [
            (f.fail_rate, Fault::Fail),
            (f.malformed_rate, Fault::Malformed),
            (f.drop_rate, Fault::Drop),
            (f.hang_rate, Fault::Hang),
        ] {
            edge += rate;
            if r < edge {
                let counter = match fault {
                    Fault::Fail => &self.counters.failed,
                    Fault::Malformed => &self.counters.malformed,
                    Fault::Drop => &self.counters.dropped,
                    Fault::Hang => &self.counters.hung,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                return Some(fault);
            }
        }
        None
    }
}

/// The router, for embedding the server in tests or other programs.
pub fn router(opts: ServerOptions) -> Router {
    let state = Arc::new(AppState {
        rng: Mutex::new(fastrand::Rng::with_seed(opts.faults.seed)),
        model: MockModel::new(&opts.refusal)
            .paraphrasing(opts.paraphrase)
            .answering(crate::generate::mock::reply),
        requests: Mutex::new(Default::default()),
        embedder: HashEmbedder::new(opts.dimensions),
        counters: Counters::default(),
        queries: Mutex::default(),
        by_model: Mutex::default(),
        by_temperature: Mutex::default(),
        started: std::time::Instant::now(),
        arrivals: Mutex::new(Vec::new()),
        prompt_cache: (opts.prompt_cache_slots > 0)
            .then(|| PromptCache::new(opts.prompt_cache_slots)),
        batches: batch::Batches::default(),
        opts: opts.clone(),
    });
    Router::new()
        .route("/v1/chat/completions", post(chat::chat))
        .route("/generate", post(chat::grounded_answer))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/rerank", post(rerank))
        .route("/v1/models", get(models))
        .route("/stats", get(stats))
        .route("/requests", get(requests))
        .route("/stats/arrivals", get(arrivals))
        .merge(batch::routes())
        .layer(DefaultBodyLimit::max(opts.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            count_query,
        ))
        .with_state(state)
}

async fn count_query(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(q) = request.uri().query() {
        *state
            .queries
            .lock()
            .expect("queries lock")
            .entry(q.to_string())
            .or_default() += 1;
    }
    next.run(request).await
}

/// Serve until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, opts: ServerOptions) -> std::io::Result<()> {
    axum::serve(listener, router(opts)).await
}

fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"message": message, "type": kind, "code": Value::Null}})),
    )
        .into_response()
}

fn authorize(state: &AppState, headers: &HeaderMap) -> Result<(), Response> {
    let Some(key) = &state.opts.api_key else {
        return Ok(());
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given == Some(key.as_str()) {
        return Ok(());
    }
    state.counters.unauthorized.fetch_add(1, Ordering::Relaxed);
    // Like OpenAI's, but never quoting the key that was sent.
    Err(error(
        StatusCode::UNAUTHORIZED,
        "invalid_request_error",
        "Incorrect API key provided.",
    ))
}

/// Apply an injected fault, or `None` to answer normally.
async fn inject(state: &AppState, fault: Option<Fault>, valid_body: &Value) -> Option<Response> {
    match fault? {
        Fault::Fail => {
            let status = StatusCode::from_u16(state.opts.faults.fail_status)
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut r = error(status, "server_error", "injected failure");
            if matches!(status.as_u16(), 429 | 503) {
                r.headers_mut().insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(state.opts.faults.retry_after_s),
                );
            }
            Some(r)
        }
        Fault::Malformed => Some(
            Response::builder()
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{\"choices\": [{\"message\": "))
                .expect("static response"),
        ),
        Fault::Drop => {
            // Half of a valid body, then the connection is cut.
            let text = valid_body.to_string();
            let half = Bytes::from(text[..text.len() / 2].to_string());
            let parts: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(half),
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "injected drop",
                )),
            ];
            Some(
                Response::builder()
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from_stream(futures_util::stream::iter(parts)))
                    .expect("stream response"),
            )
        }
        Fault::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Some(error(StatusCode::GATEWAY_TIMEOUT, "server_error", "hung"))
        }
    }
}

/// [`authorize`] a request, then [`parse_json`] its body: the reply to send instead when either
/// fails.
fn authorized_json(state: &AppState, headers: &HeaderMap, body: &Bytes) -> Result<Value, Response> {
    authorize(state, headers)?;
    parse_json(body)
}

/// Count one more request in `requests` and the `n` items (texts, documents) it carries in
/// `items`.
fn tally(requests: &AtomicU64, items: &AtomicU64, n: usize) {
    requests.fetch_add(1, Ordering::Relaxed);
    items.fetch_add(n as u64, Ordering::Relaxed);
}

fn parse_json(body: &Bytes) -> Result<Value, Response> {
    serde_json::from_slice(body).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            &format!("invalid JSON body: {e}"),
        )
    })
}

/// Wait until `at`, to a fraction of a millisecond. tokio's timers round a deadline up to the
/// next millisecond tick and then wake on a millisecond poll timeout, so `--delay-ms 20`
/// answered in 21.5 ms on average and a client's throughput looked 8% worse than it was. The
/// last few milliseconds are slept on a blocking thread, whose timer is exact to about 0.1 ms;
/// everything before them stays a tokio timer, which a dropped request cancels.
async fn wait_until(at: std::time::Instant) {
    const EXACT: Duration = Duration::from_millis(3);
    let now = std::time::Instant::now();
    if at <= now {
        return;
    }
    if at - now > EXACT {
        tokio::time::sleep_until((at - EXACT).into()).await;
    }
    let _ = tokio::task::spawn_blocking(move || {
        let now = std::time::Instant::now();
        if at > now {
            std::thread::sleep(at - now);
        }
    })
    .await;
}

/// Keep the request's body, the last `keep_requests` of them, for `GET /requests`.
fn keep_request(state: &AppState, body: &Bytes) {
    if state.opts.keep_requests > 0 {
        let mut kept = state.requests.lock().expect("requests lock");
        if kept.len() == state.opts.keep_requests {
            kept.pop_front();
        }
        kept.push_back(String::from_utf8_lossy(body).into_owned());
    }
}

async fn embeddings(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reply_at = std::time::Instant::now() + state.opts.delay;
    let req = match authorized_json(&state, &headers, &body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let texts: Vec<String> = match &req["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) if items.iter().all(Value::is_string) => items
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "`input` must be a string or a list of strings",
            )
        }
    };
    let c = &state.counters;
    tally(&c.embedding_requests, &c.texts_embedded, texts.len());
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": state.embedder.vector(t)}))
        .collect();
    let tokens: u64 = texts.iter().map(|t| estimate_tokens(t)).sum();
    let full = json!({"object": "list", "data": data, "model": req["model"].as_str().unwrap_or("hash"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}});
    let fault = if state.opts.faults.embeddings {
        state.fault()
    } else {
        None
    };
    wait_until(reply_at).await;
    if let Some(r) = inject(&state, fault, &full).await {
        return r;
    }
    Json(full).into_response()
}

/// `POST /v1/rerank`: `{"model", "query", "documents", "top_n"}` answered with each document's
/// [`crate::adapters::rerank::overlap_score`], best first (ties in the order sent), the best `top_n`.
async fn rerank(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    let reply_at = std::time::Instant::now() + state.opts.delay;
    let req = match authorized_json(&state, &headers, &body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (Some(query), Some(documents)) = (req["query"].as_str(), req["documents"].as_array())
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "`query` must be a string and `documents` a list of strings",
        );
    };
    let documents: Vec<&str> = documents.iter().filter_map(Value::as_str).collect();
    let c = &state.counters;
    tally(&c.rerank_requests, &c.documents_reranked, documents.len());
    let mut scored: Vec<(usize, f64)> = documents
        .iter()
        .map(|d| crate::adapters::rerank::overlap_score(query, d))
        .enumerate()
        .collect();
    // A stable sort: equal scores stay in the order sent.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top_n = req["top_n"].as_u64().map_or(scored.len(), |n| n as usize);
    scored.truncate(top_n);
    let results: Vec<Value> = scored
        .iter()
        .map(|&(index, score)| json!({"index": index, "relevance_score": score}))
        .collect();
    // Tokens as llama.cpp's server reports them for a rerank: the query and every document.
    let tokens = crate::adapters::chat::estimate_tokens(query)
        + documents
            .iter()
            .map(|d| crate::adapters::chat::estimate_tokens(d))
            .sum::<u64>();
    wait_until(reply_at).await;
    Json(json!({
        "model": req["model"].as_str().unwrap_or("rerank"),
        "results": results,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
    .into_response()
}

async fn models(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(r) = authorize(&state, &headers) {
        return r;
    }
    Json(json!({"object": "list", "data": [
        {"id": "mock", "object": "model", "owned_by": "rageval"},
        {"id": format!("hash-{}", state.opts.dimensions), "object": "model", "owned_by": "rageval"},
    ]}))
    .into_response()
}

async fn stats(State(state): State<Arc<AppState>>) -> Response {
    let c = &state.counters;
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut stats = json!({
        "chat_requests": n(&c.chat_requests),
        "chat_stream_requests": n(&c.chat_stream_requests),
        "chat_completed": n(&c.chat_completed),
        "generate_requests": n(&c.grounded_requests),
        "judge_requests": n(&c.judge_requests),
        "embedding_requests": n(&c.embedding_requests),
        "texts_embedded": n(&c.texts_embedded),
        "rerank_requests": n(&c.rerank_requests),
        "documents_reranked": n(&c.documents_reranked),
        "unauthorized": n(&c.unauthorized),
        "faults": {"failed": n(&c.failed), "malformed": n(&c.malformed), "dropped": n(&c.dropped), "hung": n(&c.hung)},
        "queries": state.queries.lock().expect("queries lock").clone(),
        "chat_by_model": state.by_model.lock().expect("counter lock").clone(),
        "chat_by_temperature": state.by_temperature.lock().expect("counter lock").clone(),
        "batches": state.batches.stats(),
    });
    if let Some(cache) = &state.prompt_cache {
        stats["prompt_cache"] = cache.stats();
    }
    Json(stats).into_response()
}

/// `GET /requests`: the kept chat request bodies, oldest first, each as the text received.
async fn requests(State(state): State<Arc<AppState>>) -> Response {
    let kept: Vec<String> = state
        .requests
        .lock()
        .expect("requests lock")
        .iter()
        .cloned()
        .collect();
    Json(json!({ "requests": kept })).into_response()
}

/// `{"chat_ms": [...]}`: when each chat request arrived, in milliseconds since the server
/// started, in arrival order.
async fn arrivals(State(state): State<Arc<AppState>>) -> Response {
    let a = state.arrivals.lock().expect("arrivals lock");
    let ms: Vec<f64> = a.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    Json(json!({ "chat_ms": ms })).into_response()
}

/// The address text users connect to.
pub fn base_url(addr: SocketAddr) -> String {
    format!("http://{addr}/v1")
}
