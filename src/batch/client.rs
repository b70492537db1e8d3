//! A client of a provider's Files and Batches endpoints (OpenAI's, and those that copied
//! them): upload a batch input file, create a batch, poll it, cancel it, download its output
//! and error files. Every request goes to the section's own base URL with its key and headers
//! ([`Endpoint`]), with its retries; a message never quotes a secret.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{anyhow, bail, Result};
use reqwest::header::CONTENT_TYPE;
use reqwest::Method;
use serde_json::{json, Value};

use crate::adapters::http::{self, transport_failure, Endpoint, Failure};
use crate::base::BoxFuture;
use crate::vocab::call::ErrorKind;

/// A batch as the server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub id: String,
    pub status: BatchState,
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    /// The `errors` of a failed batch, as `line N: code: message`.
    pub errors: Vec<String>,
}

/// Where a batch is, as the server names it in `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchState {
    Validating,
    InProgress,
    Finalizing,
    Completed,
    Failed,
    Expired,
    Cancelling,
    Cancelled,
    /// A state this rageval does not know, as the server wrote it.
    Other(String),
}

impl BatchState {
    const NAMED: [(BatchState, &'static str); 8] = [
        (BatchState::Validating, "validating"),
        (BatchState::InProgress, "in_progress"),
        (BatchState::Finalizing, "finalizing"),
        (BatchState::Completed, "completed"),
        (BatchState::Failed, "failed"),
        (BatchState::Expired, "expired"),
        (BatchState::Cancelling, "cancelling"),
        (BatchState::Cancelled, "cancelled"),
    ];

    /// The state the server's text names.
    pub fn of(text: &str) -> Self {
        Self::NAMED
            .iter()
            .find(|(_, name)| *name == text)
            .map_or_else(|| BatchState::Other(text.into()), |(s, _)| s.clone())
    }

    /// The server's text.
    pub fn as_str(&self) -> &str {
        match self {
            BatchState::Other(text) => text,
            known => Self::NAMED
                .iter()
                .find(|(s, _)| s == known)
                .map_or("", |(_, name)| name),
        }
    }

    /// Whether a batch in this state will change no more.
    pub fn is_done(&self) -> bool {
        matches!(
            self,
            BatchState::Completed
                | BatchState::Failed
                | BatchState::Expired
                | BatchState::Cancelled
        )
    }
}

impl std::fmt::Display for BatchState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Status {
    /// Whether the batch will change no more.
    pub fn is_done(&self) -> bool {
        self.status.is_done()
    }

    /// Requests that ended, answered or failed, as the server counts them. Its counts are the
    /// server's text: they add without wrapping around.
    pub fn done(&self) -> u64 {
        self.completed.saturating_add(self.failed)
    }

    fn read(v: &Value) -> Option<Status> {
        let counts = &v["request_counts"];
        let id_of = |f: &str| v[f].as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let errors = v["errors"]["data"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|e| {
                        let line = e["line"]
                            .as_u64()
                            .map(|n| format!("line {n}: "))
                            .unwrap_or_default();
                        format!(
                            "{line}{}: {}",
                            e["code"].as_str().unwrap_or("error"),
                            e["message"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(Status {
            id: v["id"].as_str()?.to_string(),
            status: BatchState::of(v["status"].as_str()?),
            total: counts["total"].as_u64().unwrap_or(0),
            completed: counts["completed"].as_u64().unwrap_or(0),
            failed: counts["failed"].as_u64().unwrap_or(0),
            output_file_id: id_of("output_file_id"),
            error_file_id: id_of("error_file_id"),
            errors,
        })
    }
}

/// What the batch cycle asks of a server with a Files and Batches API: [`Client`] over HTTP,
/// or a test's script.
pub trait Server: Send + Sync {
    /// The base URL as messages show it.
    fn shown(&self) -> &str;
    /// Upload a batch input file: its file id.
    fn upload<'a>(&'a self, name: &'a str, file: &'a [u8]) -> BoxFuture<'a, Result<String>>;
    /// Create a batch of an uploaded file for a URL path (`/v1/chat/completions`).
    fn create<'a>(&'a self, input_file_id: &'a str, url: &'a str) -> BoxFuture<'a, Result<Status>>;
    /// Where a batch is.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Status>>;
    /// Download an output or error file into `dest` (created or truncated): its size.
    fn download<'a>(&'a self, id: &'a str, dest: &'a Path) -> BoxFuture<'a, Result<u64>>;
}

impl Server for Client {
    fn shown(&self) -> &str {
        Client::shown(self)
    }
    fn upload<'a>(&'a self, name: &'a str, file: &'a [u8]) -> BoxFuture<'a, Result<String>> {
        Box::pin(Client::upload(self, name, file))
    }
    fn create<'a>(&'a self, input_file_id: &'a str, url: &'a str) -> BoxFuture<'a, Result<Status>> {
        Box::pin(Client::create(self, input_file_id, url))
    }
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Status>> {
        Box::pin(Client::get(self, id))
    }
    fn download<'a>(&'a self, id: &'a str, dest: &'a Path) -> BoxFuture<'a, Result<u64>> {
        Box::pin(Client::download(self, id, dest))
    }
}

/// The Files and Batches endpoints under one base URL.
pub struct Client {
    client: reqwest::Client,
    endpoint: Endpoint,
    /// What to set to call the section live instead (`` `chat.batch: false` ``), for the
    /// message of a server without batches.
    switch: String,
}

/// The largest output or error file downloaded.
pub const MAX_FILE_BYTES: usize = 1 << 30;

impl Client {
    pub fn new(endpoint: Endpoint, switch: String) -> Result<Self> {
        Ok(Client {
            client: http::client().map_err(|e| anyhow!(e))?,
            endpoint,
            switch,
        })
    }

    /// The base URL as messages show it.
    pub fn shown(&self) -> &str {
        &self.endpoint.shown
    }

    /// One request with the endpoint's key, headers and retries; the body of its success.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, String)>,
        limit: usize,
    ) -> Result<Vec<u8>> {
        let e = &self.endpoint;
        self.send_with(method, path, body, |response| {
            e.reply_body(response, path, limit)
        })
        .await
    }

    /// One request with the endpoint's key, headers and retries; what `read` makes of each
    /// attempt's reply (a success's body, or the failure its status gives).
    async fn send_with<T, R, Fut>(
        &self,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, String)>,
        read: R,
    ) -> Result<T>
    where
        R: Fn(reqwest::Response) -> Fut,
        Fut: std::future::Future<Output = Result<T, Failure>>,
    {
        let e = &self.endpoint;
        let read = &read;
        // Whether the server answered 404 (not retried: the last attempt's answer).
        let not_found = AtomicBool::new(false);
        let not_found = &not_found;
        let outcome = http::call(e, || {
            let body = body.clone();
            let method = method.clone();
            async move {
                let (bytes, content_type) = body.unwrap_or_default();
                let mut request = e
                    .post(&self.client, path, bytes)
                    .build()
                    .map_err(|err| transport_failure(&err, e))?;
                *request.method_mut() = method.clone();
                if method == Method::GET {
                    *request.body_mut() = None;
                    request.headers_mut().remove(CONTENT_TYPE);
                } else if !content_type.is_empty() {
                    request.headers_mut().insert(
                        CONTENT_TYPE,
                        content_type.parse().map_err(|_| {
                            Failure::fatal(ErrorKind::Client, "invalid content type")
                        })?,
                    );
                }
                let response = self
                    .client
                    .execute(request)
                    .await
                    .map_err(|err| transport_failure(&err, e))?;
                not_found.store(
                    response.status() == reqwest::StatusCode::NOT_FOUND,
                    Ordering::Relaxed,
                );
                read(response).await
            }
        })
        .await;
        outcome.map_err(|err| {
            let url = e.shown_url(path);
            if not_found.load(Ordering::Relaxed) && (path == "files" || path == "batches") {
                anyhow!("{url} answered 404 Not Found: the server at {} serves no Files and Batches API; set {} to call it live", e.shown, self.switch)
            } else if not_found.load(Ordering::Relaxed) {
                // The routes exist (the batch was made through them): this file or batch is
                // what the server does not know (expired, deleted, or another server's).
                anyhow!("{url} answered 404 Not Found: the server at {} has no such file or batch", e.shown)
            } else {
                anyhow!("{method} {url} failed: {err}")
            }
        })
    }

    async fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, String)>,
    ) -> Result<Status> {
        let bytes = self.send(method, path, body, http::MAX_REPLY_BYTES).await?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
            anyhow!(
                "the reply of {} is not JSON: {e}",
                self.endpoint.shown_url(path)
            )
        })?;
        Status::read(&v).ok_or_else(|| {
            anyhow!(
                "the reply of {} is not a batch (no `id` and `status`)",
                self.endpoint.shown_url(path)
            )
        })
    }

    /// Upload `file` for a batch: its file id.
    pub async fn upload(&self, name: &str, file: &[u8]) -> Result<String> {
        let (body, content_type) = super::multipart::form("batch", name, file);
        let bytes = self
            .send(
                Method::POST,
                "files",
                Some((body, content_type)),
                http::MAX_REPLY_BYTES,
            )
            .await?;
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        match v["id"].as_str() {
            Some(id) => Ok(id.to_string()),
            None => bail!(
                "the reply of {} names no file `id`",
                self.endpoint.shown_url("files")
            ),
        }
    }

    /// Create a batch of the uploaded `input_file_id` for `endpoint` (`/v1/chat/completions`).
    pub async fn create(&self, input_file_id: &str, endpoint: &str) -> Result<Status> {
        let body = json!({"input_file_id": input_file_id, "endpoint": endpoint, "completion_window": "24h",
            "metadata": {"created_by": "rageval"}});
        let body = (serde_json::to_vec(&body)?, "application/json".to_string());
        self.json(Method::POST, "batches", Some(body)).await
    }

    pub async fn get(&self, id: &str) -> Result<Status> {
        self.json(Method::GET, &format!("batches/{}", segment(id)), None)
            .await
    }

    pub async fn cancel(&self, id: &str) -> Result<Status> {
        self.json(
            Method::POST,
            &format!("batches/{}/cancel", segment(id)),
            None,
        )
        .await
    }

    /// File `id` (at most [`MAX_FILE_BYTES`]) written into `dest` as it arrives, so a large
    /// output file is never held in memory; its size.
    pub async fn download(&self, id: &str, dest: &Path) -> Result<u64> {
        let path = format!("files/{}/content", segment(id));
        let (e, url) = (&self.endpoint, path.as_str());
        self.send_with(Method::GET, url, None, |response| async move {
            let mut file = std::fs::File::create(dest).map_err(|err| {
                Failure::fatal(
                    ErrorKind::Client,
                    format!("cannot create `{}`: {err}", dest.display()),
                )
            })?;
            e.reply_to_file(response, url, MAX_FILE_BYTES, &mut file)
                .await
        })
        .await
    }
}

/// An id the server gave, as one segment of a URL path: every byte but ASCII letters, digits,
/// `-` and `_` percent-encoded. An id is the server's text: `../../files` or `a/b?c` must name
/// that id at the server, not another route (a `.` is encoded too, so `..` cannot climb).
pub fn segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::segment;

    #[test]
    fn an_id_is_one_path_segment_whatever_it_holds() {
        assert_eq!(segment("batch_abc-123"), "batch_abc-123");
        assert_eq!(segment("../../x"), "%2E%2E%2F%2E%2E%2Fx");
        assert_eq!(segment("a?b#c d"), "a%3Fb%23c%20d");
        assert_eq!(segment("é"), "%C3%A9");
    }
}
