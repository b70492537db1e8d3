//! The Files and Batches endpoints of `rageval mock-llm`, as OpenAI serves them: upload a JSONL
//! file (`POST /v1/files`, multipart), create a batch of it (`POST /v1/batches`), poll it
//! (`GET /v1/batches/{id}`), cancel it, and download its output and error files
//! (`GET /v1/files/{id}/content`).
//!
//! Each line is answered by the server's own chat (or embeddings) handler, so a batch answers
//! exactly as the live calls would, faults included: a line whose call fails (`--fail-rate`,
//! `--fail-every`, a malformed or dropped reply) goes to the error file. `--batch-delay`
//! spreads a batch's lines over that time, so a client sees it in progress.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::{authorize, error, parse_json, AppState};

/// The files and batches the server holds, and what it did.
#[derive(Default)]
pub(super) struct Batches {
    files: Mutex<HashMap<String, StoredFile>>,
    batches: Mutex<HashMap<String, Batch>>,
    next_id: AtomicU64,
    /// Batches created and lines answered, for `GET /stats`.
    created: AtomicU64,
    lines: AtomicU64,
}

struct StoredFile {
    name: String,
    purpose: String,
    bytes: Bytes,
}

#[derive(Clone)]
struct Batch {
    object: Value,
    cancel: Arc<AtomicBool>,
}

impl Batches {
    fn id(&self, prefix: &str) -> String {
        format!(
            "{prefix}-mock-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed) + 1
        )
    }

    fn store(&self, name: &str, purpose: &str, bytes: Bytes) -> Value {
        let id = self.id("file");
        let object = file_object(&id, name, purpose, bytes.len());
        self.files.lock().expect("files lock").insert(
            id,
            StoredFile {
                name: name.into(),
                purpose: purpose.into(),
                bytes,
            },
        );
        object
    }

    fn update(&self, id: &str, f: impl FnOnce(&mut Value)) {
        if let Some(b) = self.batches.lock().expect("batches lock").get_mut(id) {
            f(&mut b.object);
        }
    }

    /// `{"created", "lines"}` for `GET /stats`.
    pub(super) fn stats(&self) -> Value {
        json!({"created": self.created.load(Ordering::Relaxed), "lines": self.lines.load(Ordering::Relaxed)})
    }
}

fn file_object(id: &str, name: &str, purpose: &str, bytes: usize) -> Value {
    json!({"id": id, "object": "file", "bytes": bytes, "created_at": now(), "filename": name, "purpose": purpose})
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The routes, merged into the server's router.
pub(super) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/files", post(upload))
        .route("/v1/files/{id}", get(file))
        .route("/v1/files/{id}/content", get(content))
        .route("/v1/batches", post(create))
        .route("/v1/batches/{id}", get(batch))
        .route("/v1/batches/{id}/cancel", post(cancel))
}

fn not_found(what: &str, id: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        &format!("No {what} with id '{id}'."),
    )
}

async fn upload(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = authorize(&state, &headers) {
        return r;
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let Some(fields) = crate::batch::multipart::fields(content_type, &body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "the body must be multipart/form-data with `purpose` and `file`",
        );
    };
    let field = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let (Some(purpose), Some(file)) = (field("purpose"), field("file")) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "the form must hold `purpose` and `file`",
        );
    };
    let purpose = String::from_utf8_lossy(&purpose).into_owned();
    Json(
        state
            .batches
            .store("upload.jsonl", &purpose, Bytes::from(file)),
    )
    .into_response()
}

/// `answer` of stored file `id`, for an authorized request; 404 when there is none.
fn with_file(
    state: &AppState,
    headers: &HeaderMap,
    id: &str,
    answer: impl FnOnce(&StoredFile) -> Response,
) -> Response {
    if let Err(r) = authorize(state, headers) {
        return r;
    }
    match state.batches.files.lock().expect("files lock").get(id) {
        Some(f) => answer(f),
        None => not_found("file", id),
    }
}

async fn file(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    with_file(&state, &headers, &id, |f| {
        Json(file_object(&id, &f.name, &f.purpose, f.bytes.len())).into_response()
    })
}

async fn content(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    with_file(&state, &headers, &id, |f| {
        let jsonl = HeaderValue::from_static("application/jsonl");
        ([(header::CONTENT_TYPE, jsonl)], f.bytes.clone()).into_response()
    })
}

/// Answer a request about batch `id` with `answer`, once authorized; 404 for an unknown one.
fn with_batch(
    state: &AppState,
    headers: &HeaderMap,
    id: &str,
    answer: impl FnOnce(&mut Batch) -> Response,
) -> Response {
    if let Err(r) = authorize(state, headers) {
        return r;
    }
    match state
        .batches
        .batches
        .lock()
        .expect("batches lock")
        .get_mut(id)
    {
        Some(b) => answer(b),
        None => not_found("batch", id),
    }
}

async fn batch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    with_batch(&state, &headers, &id, |b| {
        Json(b.object.clone()).into_response()
    })
}

async fn cancel(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    with_batch(&state, &headers, &id, |b| {
        if b.object["status"] == "in_progress" || b.object["status"] == "validating" {
            b.cancel.store(true, Ordering::Relaxed);
            b.object["status"] = json!("cancelling");
        }
        Json(b.object.clone()).into_response()
    })
}

async fn create(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = authorize(&state, &headers) {
        return r;
    }
    let req = match parse_json(&body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (Some(input), Some(endpoint)) = (req["input_file_id"].as_str(), req["endpoint"].as_str())
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "`input_file_id` and `endpoint` are required",
        );
    };
    let Some(bytes) = state
        .batches
        .files
        .lock()
        .expect("files lock")
        .get(input)
        .map(|f| f.bytes.clone())
    else {
        return not_found("file", input);
    };
    let id = state.batches.id("batch");
    state.batches.created.fetch_add(1, Ordering::Relaxed);
    // Lines that are not requests of this batch's endpoint fail the whole batch, as OpenAI's
    // validation does.
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for (i, text) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(v) if v["url"] == endpoint && v["custom_id"].is_string() => lines.push(v),
            Ok(_) => errors.push(json!({"code": "invalid_request", "line": i + 1,
                "message": format!("the line has no `custom_id` or its `url` is not {endpoint}")})),
            Err(e) => errors.push(json!({"code": "invalid_json_line", "line": i + 1,
                "message": format!("This line is not parseable as valid JSON: {e}")})),
        }
    }
    let mut object = json!({
        "id": id, "object": "batch", "endpoint": endpoint, "errors": null,
        "input_file_id": input, "completion_window": req["completion_window"].as_str().unwrap_or("24h"),
        "status": "in_progress", "output_file_id": null, "error_file_id": null,
        "created_at": now(), "in_progress_at": now(), "completed_at": null, "failed_at": null,
        "request_counts": {"total": lines.len(), "completed": 0, "failed": 0},
        "metadata": req["metadata"].clone(),
    });
    let cancel = Arc::new(AtomicBool::new(false));
    if !errors.is_empty() {
        object["status"] = json!("failed");
        object["failed_at"] = json!(now());
        object["errors"] = json!({"object": "list", "data": errors});
    } else {
        tokio::spawn(work(
            state.clone(),
            id.clone(),
            lines,
            headers,
            cancel.clone(),
        ));
    }
    state.batches.batches.lock().expect("batches lock").insert(
        id,
        Batch {
            object: object.clone(),
            cancel,
        },
    );
    Json(object).into_response()
}

/// Answer the lines of batch `id` one after the other, spread over the batch delay, then write
/// the output and error files (those answered so far, when cancelled).
async fn work(
    state: Arc<AppState>,
    id: String,
    lines: Vec<Value>,
    headers: HeaderMap,
    cancel: Arc<AtomicBool>,
) {
    let pause = state.opts.batch_delay / u32::try_from(lines.len().max(1)).unwrap_or(u32::MAX);
    let (mut output, mut errors) = (String::new(), String::new());
    let (mut completed, mut failed) = (0u64, 0u64);
    let mut cancelled = false;
    for (i, line) in lines.iter().enumerate() {
        if cancel.load(Ordering::Relaxed) {
            cancelled = true;
            break;
        }
        tokio::time::sleep(pause).await;
        let body = Bytes::from(line["body"].to_string());
        let response = if line["url"] == "/v1/embeddings" {
            super::embeddings(State(state.clone()), headers.clone(), body).await
        } else {
            super::chat::chat(State(state.clone()), headers.clone(), body).await
        };
        state.batches.lines.fetch_add(1, Ordering::Relaxed);
        let status = response.status().as_u16();
        let read = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        let request_id = format!("req-mock-{}", i + 1);
        let (response, error) = match read.map(|b| serde_json::from_slice::<Value>(&b)) {
            Ok(Ok(body)) => (
                json!({"status_code": status, "request_id": request_id, "body": body}),
                Value::Null,
            ),
            Ok(Err(e)) => (
                Value::Null,
                json!({"code": "malformed_response", "message": format!("the model's reply is not JSON: {e}")}),
            ),
            Err(e) => (
                Value::Null,
                json!({"code": "connection_error", "message": e.to_string()}),
            ),
        };
        let failed_line = status != 200 || !error.is_null();
        let out = json!({"id": format!("batch_req-{}", i + 1), "custom_id": line["custom_id"],
            "response": response, "error": error});
        if failed_line {
            failed += 1;
            errors.push_str(&format!("{out}\n"));
        } else {
            completed += 1;
            output.push_str(&format!("{out}\n"));
        }
        state.batches.update(&id, |b| {
            b["request_counts"]["completed"] = json!(completed);
            b["request_counts"]["failed"] = json!(failed);
        });
    }
    let batches = &state.batches;
    let output_id = (!output.is_empty()).then(|| {
        batches.store("batch_output.jsonl", "batch_output", Bytes::from(output))["id"].clone()
    });
    let error_id = (!errors.is_empty()).then(|| {
        batches.store("batch_errors.jsonl", "batch_output", Bytes::from(errors))["id"].clone()
    });
    batches.update(&id, |b| {
        b["output_file_id"] = output_id.unwrap_or(Value::Null);
        b["error_file_id"] = error_id.unwrap_or(Value::Null);
        if cancelled {
            b["status"] = json!("cancelled");
            b["cancelled_at"] = json!(now());
        } else {
            b["status"] = json!("completed");
            b["completed_at"] = json!(now());
        }
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::{router, Faults, ServerOptions};
    use crate::adapters::http::Endpoint;
    use crate::batch::client::Client;

    fn options(fail_every: u64) -> ServerOptions {
        ServerOptions {
            api_key: None,
            delay: Duration::ZERO,
            token_delay: Duration::ZERO,
            dimensions: 64,
            refusal: crate::adapters::prompt::REFUSAL.into(),
            max_body_bytes: 8 << 20,
            faults: Faults {
                fail_status: 500,
                fail_every,
                ..Faults::default()
            },
            vary_per_repeat: false,
            paraphrase: false,
            keep_requests: 0,
            prompt_cache_slots: 0,
            prompt_word_time: Duration::ZERO,
            batch_delay: Duration::from_millis(50),
        }
    }

    async fn start(app: axum::Router) -> Client {
        start_at(app).await.0
    }

    /// The client of `app` served on loopback, and its base URL.
    async fn start_at(app: axum::Router) -> (Client, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let url = format!("http://{addr}/v1");
        let client = Client::new(
            Endpoint::for_tests(&url),
            "`chat.batch: false` (or drop `--batch`)".into(),
        )
        .unwrap();
        (client, url)
    }

    fn line(id: usize) -> String {
        serde_json::json!({"custom_id": format!("k{id}"), "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "mock", "messages": [{"role": "user", "content": format!("Question {id}?")}]}})
        .to_string()
            + "\n"
    }

    /// File `id` downloaded the way the batch cycle does, into a file, and read back.
    async fn downloaded(client: &Client, id: &str) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("file.jsonl");
        let size = client.download(id, &dest).await.unwrap();
        let bytes = std::fs::read(&dest).unwrap();
        assert_eq!(size, bytes.len() as u64);
        bytes
    }

    async fn until_done(client: &Client, id: &str) -> crate::batch::client::Status {
        loop {
            let st = client.get(id).await.unwrap();
            if st.is_done() {
                return st;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A batch answers each line as the chat endpoint would, every third one failing into
    /// the error file, and its files download as uploaded lines answered.
    #[tokio::test]
    async fn a_batch_answers_its_lines_and_puts_failures_in_the_error_file() {
        let client = start(router(options(3))).await;
        let input: String = (1..=7).map(line).collect();
        let file = client
            .upload("calls.jsonl", input.as_bytes())
            .await
            .unwrap();
        let created = client.create(&file, "/v1/chat/completions").await.unwrap();
        assert_eq!((created.status.as_str(), created.total), ("in_progress", 7));
        let st = until_done(&client, &created.id).await;
        assert_eq!(
            (st.status.as_str(), st.completed, st.failed),
            ("completed", 5, 2)
        );
        let out = downloaded(&client, st.output_file_id.as_deref().unwrap()).await;
        let err = downloaded(&client, st.error_file_id.as_deref().unwrap()).await;
        let ids = |bytes: &[u8]| -> Vec<String> {
            String::from_utf8_lossy(bytes)
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["custom_id"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        assert_eq!(ids(&out), ["k1", "k2", "k4", "k5", "k7"]);
        assert_eq!(ids(&err), ["k3", "k6"]);
        let first: serde_json::Value =
            serde_json::from_str(String::from_utf8_lossy(&out).lines().next().unwrap()).unwrap();
        assert_eq!(first["response"]["status_code"], 200);
        assert!(first["response"]["body"]["choices"][0]["message"]["content"].is_string());
    }

    /// An embeddings line is answered by the live embeddings endpoint: the same vector the
    /// server gives the same text live.
    #[tokio::test]
    async fn an_embeddings_batch_gives_the_live_vectors() {
        use crate::adapters::embed::{Embedder, OpenAiEmbedder};
        let (client, url) = start_at(router(options(0))).await;
        let texts: Vec<String> = vec!["The club meets on Tuesdays.".into(), "Room B2".into()];
        let input: String = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                serde_json::json!({"custom_id": format!("e{i}"), "method": "POST", "url": "/v1/embeddings",
                    "body": {"model": "m", "input": [t]}})
                .to_string()
                    + "\n"
            })
            .collect();
        let file = client
            .upload("embed.jsonl", input.as_bytes())
            .await
            .unwrap();
        let created = client.create(&file, "/v1/embeddings").await.unwrap();
        let st = until_done(&client, &created.id).await;
        assert_eq!((st.completed, st.failed), (2, 0));
        let out = downloaded(&client, st.output_file_id.as_deref().unwrap()).await;
        let batched: Vec<Vec<f32>> = String::from_utf8_lossy(&out)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                serde_json::from_value(v["response"]["body"]["data"][0]["embedding"].clone())
                    .unwrap()
            })
            .collect();
        let live = OpenAiEmbedder::new(Endpoint::for_tests(&url), "m", 64, 1)
            .unwrap()
            .embed(&texts)
            .await
            .unwrap();
        assert_eq!(batched, live);
        assert_eq!(live[0].len(), 64);
    }

    /// A file with a line that is no request fails the batch with its `errors`, naming the
    /// line; an unknown batch and a server without the endpoints are a 404 that says what to do.
    #[tokio::test]
    async fn a_bad_file_fails_the_batch_and_a_server_without_batches_says_so() {
        let client = start(router(options(0))).await;
        let file = client
            .upload("calls.jsonl", format!("{}not json\n", line(1)).as_bytes())
            .await
            .unwrap();
        let st = client.create(&file, "/v1/chat/completions").await.unwrap();
        assert_eq!(st.status.as_str(), "failed");
        assert_eq!(st.errors.len(), 1);
        assert!(
            st.errors[0].starts_with("line 2: invalid_json_line: "),
            "{:?}",
            st.errors
        );
        let e = client.get("batch-none").await.unwrap_err().to_string();
        assert!(
            e.contains("/v1/batches/batch-none answered 404 Not Found: the server at ")
                && e.ends_with("/v1 has no such file or batch"),
            "{e}"
        );
        let bare = start(axum::Router::new()).await;
        let e = bare
            .upload("calls.jsonl", b"{}\n")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("serves no Files and Batches API; set `chat.batch: false` (or drop `--batch`) to call it live"), "{e}");
    }

    /// A cancelled batch keeps the lines it answered before the cancel.
    #[tokio::test]
    async fn a_cancelled_batch_keeps_what_it_answered() {
        let mut opts = options(0);
        opts.batch_delay = Duration::from_millis(2000);
        let client = start(router(opts)).await;
        let input: String = (1..=20).map(line).collect();
        let file = client
            .upload("calls.jsonl", input.as_bytes())
            .await
            .unwrap();
        let created = client.create(&file, "/v1/chat/completions").await.unwrap();
        tokio::time::sleep(Duration::from_millis(350)).await;
        client.cancel(&created.id).await.unwrap();
        let st = until_done(&client, &created.id).await;
        assert_eq!(st.status.as_str(), "cancelled");
        assert!(st.completed > 0 && st.completed < 20, "{st:?}");
        let out = downloaded(&client, st.output_file_id.as_deref().unwrap()).await;
        assert_eq!(
            String::from_utf8_lossy(&out).lines().count() as u64,
            st.completed
        );
    }
}
