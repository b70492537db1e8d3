//! Shared plumbing of the OpenAI-compatible clients: endpoint, API key, error kinds, retries.
//!
//! The API key is read from the environment when a client is built and kept in a [`Secret`]
//! that never prints; no error message, log line, cache record or report contains it. A 401
//! names the variable the key came from, never its value.
//!
//! A section's servers (`base_url` as a list) and its rate limit are [`Endpoints`]
//! (http/fleet.rs, http/rate_limit.rs): every OpenAI-compatible client takes one and calls
//! [`call_any`], so each gets several servers and rate limits through the same config fields.

pub mod config;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, RETRY_AFTER};
use reqwest::StatusCode;

use crate::vocab::call::{CallError, ErrorKind};

mod fleet;
mod rate_limit;

pub use fleet::{call_any, Endpoints};
pub use rate_limit::{Held, RateLimiter};

/// A value that must never be shown.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The key in `$api_key_env`, when it holds one.
fn key_from(api_key_env: &str) -> Option<Secret> {
    std::env::var(api_key_env)
        .ok()
        .filter(|k| !k.is_empty())
        .map(Secret)
}

/// The header among `headers` that is an `Authorization` (any case) while `$api_key_env` holds
/// a key: the key is sent as `Authorization: Bearer`, so a request would carry two and each
/// server would read another. Its name as written.
pub fn authorization_conflict<'a>(
    headers: impl IntoIterator<Item = &'a String>,
    api_key_env: &str,
) -> Option<String> {
    let header = headers
        .into_iter()
        .find(|h| h.eq_ignore_ascii_case(AUTHORIZATION.as_str()))?;
    key_from(api_key_env).map(|_| header.clone())
}

/// Why [`authorization_conflict`] refuses `header`.
pub fn authorization_conflict_message(header: &str, api_key_env: &str) -> String {
    format!(
        "`headers` sets `{header}` and `${api_key_env}` holds an API key (sent as `Authorization: Bearer`): a request carries one `Authorization` header, so keep one of them (remove the header, or point `api_key_env` at a variable that is not set)"
    )
}

/// How failed attempts are retried: exponential backoff with full jitter, bounded attempts.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (attempt counts from 1): a random duration up to
    /// base * 2^(attempt-1), capped; a server's Retry-After wins when it asks for longer.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(1u32 << (attempt - 1).min(16))
            .min(self.max_delay);
        let jittered = ceiling.mul_f64(fastrand::f64());
        match retry_after {
            Some(ra) => ra.min(self.max_delay).max(jittered),
            None => jittered,
        }
    }
}

/// The longest wait a server's `Retry-After` can ask for; the retry policy caps it further.
pub const MAX_RETRY_AFTER_S: f64 = 86_400.0;

/// A `Retry-After` in seconds (a number; an HTTP date is not used), clamped to
/// [`MAX_RETRY_AFTER_S`]: a number from outside never reaches `Duration` unchecked, where
/// `1e308` would panic.
pub fn retry_after_seconds(value: &str) -> Option<Duration> {
    let s = value.trim().parse::<f64>().ok()?;
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(MAX_RETRY_AFTER_S)))
}

/// Connection failures in a row after which a server is taken for dead: every later call fails
/// at once, without a connection attempt, and the sweep stops with "is the server running?".
pub const DEAD_AFTER: u32 = 20;

/// Counts connection failures in a row across all calls to one server (any answer resets it).
#[derive(Debug, Default)]
pub struct DeadServer {
    in_a_row: AtomicU32,
    dead: AtomicBool,
}

impl DeadServer {
    /// Whether [`DEAD_AFTER`] connection attempts in a row failed.
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Relaxed)
    }

    /// Take the server for dead (a fleet, once every one of its servers is).
    fn mark(&self) {
        self.dead.store(true, Ordering::Relaxed);
    }

    fn record<T>(&self, outcome: &Result<T, Failure>) {
        match outcome {
            Err(f) if f.error.kind == ErrorKind::Connect => {
                if self.in_a_row.fetch_add(1, Ordering::Relaxed) + 1 >= DEAD_AFTER {
                    self.dead.store(true, Ordering::Relaxed);
                }
            }
            _ => self.in_a_row.store(0, Ordering::Relaxed),
        }
    }
}

/// One OpenAI-compatible server.
#[derive(Clone)]
pub struct Endpoint {
    /// Base URL including the version path, such as `http://127.0.0.1:8787/v1`; may hold
    /// credentials, so it is only used to send requests.
    base_url: String,
    /// The base URL as shown in messages: [`crate::base::redact::url`] of it.
    pub shown: String,
    /// The environment variable the key is read from (named in error messages).
    pub api_key_env: String,
    api_key: Option<Secret>,
    pub headers: HeaderMap,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Shared by every clone: the calls of a sweep count together.
    pub dead: Arc<DeadServer>,
    /// The key, every header value and the URL's credentials: hidden from any text this
    /// server sends back before it is shown or written ([`Endpoint::hide`]).
    secrets: crate::base::redact::Secrets,
}

impl Endpoint {
    /// Build an endpoint; the key is read from `api_key_env` now (absent: no Authorization).
    /// Credentials in the URL (`http://user:password@host`) are sent as Basic auth (reqwest
    /// moves them into the header), so they and a key would make two `Authorization`
    /// headers, each server reading another: that is refused.
    pub fn new(
        base_url: &str,
        api_key_env: &str,
        headers: &[(String, String)],
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Self, String> {
        let base_url = base_url.trim_end_matches('/').to_string();
        let shown = crate::base::redact::url(&base_url);
        if let Some(why) = crate::base::redact::http_url_problem(&base_url) {
            return Err(format!("base_url {why}"));
        }
        let mut map = HeaderMap::new();
        let mut secrets = crate::base::redact::Secrets::default();
        secrets.add_url(&base_url);
        for (name, value) in headers {
            secrets.add(value);
            let n = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("invalid header name `{name}`"))?;
            let mut v = HeaderValue::from_str(value)
                .map_err(|_| format!("invalid value for header `{name}`"))?;
            v.set_sensitive(true);
            map.insert(n, v);
        }
        let api_key = key_from(api_key_env);
        if let Some(key) = &api_key {
            secrets.add(key.expose());
        }
        if let Some(header) = authorization_conflict(headers.iter().map(|(n, _)| n), api_key_env) {
            return Err(authorization_conflict_message(&header, api_key_env));
        }
        let userinfo = reqwest::Url::parse(&base_url)
            .is_ok_and(|u| !u.username().is_empty() || u.password().is_some());
        if userinfo && api_key.is_some() {
            return Err(format!(
                "base_url `{shown}` holds credentials (`user:password@`, sent as Basic auth) and `${api_key_env}` holds an API key (sent as a Bearer token): a request carries one `Authorization` header, so keep one of them (remove the credentials from the URL, or point `api_key_env` at a variable that is not set)"
            ));
        }
        Ok(Endpoint {
            base_url,
            shown,
            api_key_env: api_key_env.to_string(),
            api_key,
            headers: map,
            timeout,
            retry,
            dead: Arc::default(),
            secrets,
        })
    }

    /// `text` from this server (an error body, a reply) with every configured secret hidden.
    pub fn hide(&self, text: &str) -> String {
        self.secrets.hide(text)
    }

    /// [`Endpoint::hide`] without a copy when `text` holds no secret.
    pub fn hide_owned(&self, text: String) -> String {
        self.secrets.hide_owned(text)
    }

    /// A failure whose message may quote this server: secrets hidden, URLs redacted.
    fn hidden(&self, mut f: Failure) -> Failure {
        f.error.message = self.secrets.message(&f.error.message);
        f
    }

    /// The URL of `path` under the base URL (credentials included: for requests only).
    /// A query in the base URL (`?api-version=...`) stays after the path.
    pub fn url(&self, path: &str) -> String {
        let (base, query) = match self.base_url.find('?') {
            Some(q) => self.base_url.split_at(q),
            None => (self.base_url.as_str(), ""),
        };
        if path.is_empty() {
            // The whole URL is the endpoint (an HTTP retriever's `url`).
            return self.base_url.clone();
        }
        format!(
            "{}/{}{query}",
            base.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }

    /// A POST with the endpoint's headers, key and timeout.
    pub fn post(
        &self,
        client: &reqwest::Client,
        path: &str,
        body: Vec<u8>,
    ) -> reqwest::RequestBuilder {
        let mut rb = client
            .post(self.url(path))
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(self.timeout)
            .body(body);
        if let Some(key) = &self.api_key {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                .unwrap_or(HeaderValue::from_static(""));
            v.set_sensitive(true);
            rb = rb.header(AUTHORIZATION, v);
        }
        rb
    }

    /// The URL of `path` as messages show it: [`Endpoint::url`], redacted.
    pub fn shown_url(&self, path: &str) -> String {
        crate::base::redact::url(&self.url(path))
    }

    /// [`Endpoint::post`] sent and its reply read (at most [`MAX_REPLY_BYTES`]): the body of a
    /// success, else the failure its status or the transport gives (the one path every JSON
    /// endpoint shares).
    pub async fn post_for_body(
        &self,
        client: &reqwest::Client,
        path: &str,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, Failure> {
        let response = self
            .post(client, path, body)
            .send()
            .await
            .map_err(|e| transport_failure(&e, self))?;
        let status = response.status();
        if !status.is_success() {
            return Err(self.error_reply(response).await);
        }
        self.read_body(response, path).await
    }

    /// The body of a success reply, read chunk by chunk up to [`MAX_REPLY_BYTES`]: a larger
    /// one (announced or sent) is refused, naming the URL, before more of it is held.
    pub async fn read_body(
        &self,
        mut response: reqwest::Response,
        path: &str,
    ) -> Result<Vec<u8>, Failure> {
        let too_large = || {
            Failure::fatal(
                ErrorKind::Malformed,
                format!(
                    "the reply from {} is larger than the limit of {} MiB",
                    self.shown_url(path),
                    MAX_REPLY_BYTES >> 20
                ),
            )
        };
        if response
            .content_length()
            .is_some_and(|n| n > MAX_REPLY_BYTES as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_failure(&e, self))?
        {
            if body.len() + chunk.len() > MAX_REPLY_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// The failure of a reply whose status is not a success. Only the first
    /// [`MAX_ERROR_BODY_BYTES`] of its body are read: the message shows a short part of it.
    pub async fn error_reply(&self, mut response: reqwest::Response) -> Failure {
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            let room = MAX_ERROR_BODY_BYTES - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() == MAX_ERROR_BODY_BYTES {
                break;
            }
        }
        status_failure(status, &headers, &body, self)
    }
}

/// The largest reply body read from any server (chat, embedder, retriever, reranker, judge),
/// a stream's included: 32 MiB. An embeddings reply of `batch_size` vectors is the largest a
/// sweep expects (64 vectors of 3072 numbers are about 4 MiB). Replies are read a few at a
/// time (8 searches, `concurrency` calls), so this bounds the memory they hold.
pub const MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;

/// The most of an error reply's body read: 64 KiB (its message is shown cut to 200
/// characters).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

#[cfg(test)]
impl Endpoint {
    /// For tests that never reach the server: `url` with no API key
    /// (`$RAGEVAL_TEST_NO_SUCH_VAR`), no headers, a 1 s timeout and the default retries.
    pub(crate) fn for_tests(url: &str) -> Endpoint {
        Endpoint::new(
            url,
            "RAGEVAL_TEST_NO_SUCH_VAR",
            &[],
            Duration::from_secs(1),
            RetryPolicy::default(),
        )
        .unwrap()
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.shown)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key)
            .field("headers", &self.headers)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// A failed attempt: the error and whether another attempt may help.
#[derive(Debug)]
pub struct Failure {
    pub error: CallError,
    pub retry: bool,
    pub retry_after: Option<Duration>,
}

impl Failure {
    pub fn fatal(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            error: CallError {
                kind,
                message: message.into(),
            },
            retry: false,
            retry_after: None,
        }
    }

    pub fn retryable(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            retry: true,
            ..Failure::fatal(kind, message)
        }
    }
}

/// A transport error from reqwest, as a failure. Keys never appear, since reqwest does not
/// print headers; URLs appear redacted.
pub fn transport_failure(e: &reqwest::Error, endpoint: &Endpoint) -> Failure {
    if e.is_timeout() {
        Failure::retryable(
            ErrorKind::Timeout,
            format!("no answer within {:?}", endpoint.timeout),
        )
    } else if e.is_connect() {
        Failure::retryable(
            ErrorKind::Connect,
            format!("cannot connect to {}", endpoint.shown),
        )
    } else {
        let mut msg = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            msg = format!("{msg}: {s}");
            source = s.source();
        }
        Failure::retryable(ErrorKind::Transport, crate::base::redact::urls_in(&msg))
    }
}

/// A non-success status, as a failure: 429 and 5xx may be retried, other 4xx may not.
pub fn status_failure(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    endpoint: &Endpoint,
) -> Failure {
    let retry_after = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(retry_after_seconds);
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        // The body of a 401 may quote part of the key: it is not shown.
        let key = if endpoint.api_key.is_some() {
            format!("the API key from `${}`", endpoint.api_key_env)
        } else {
            format!("no API key (`${}` is not set)", endpoint.api_key_env)
        };
        // The URL is not named: every caller's message names it already.
        return Failure::fatal(ErrorKind::Auth, format!("{status} rejected {key}"));
    }
    let detail = endpoint.secrets.message(&server_message(body));
    if status.is_redirection() {
        let to = headers
            .get(reqwest::header::LOCATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .map_or_else(
                || "nowhere".to_string(),
                |l| {
                    format!(
                        "`{}`",
                        endpoint.secrets.message(&crate::base::redact::url(&l))
                    )
                },
            );
        return Failure::fatal(
            ErrorKind::Client,
            format!("{status} redirects to {to}: rageval follows no redirect (it would send the request's headers on, and a 301 or 302 would turn the POST into a GET); set the URL to the address the redirect names"),
        );
    }
    if status == StatusCode::TOO_MANY_REQUESTS {
        let mut f = Failure::retryable(ErrorKind::RateLimited, format!("{status}{detail}"));
        f.retry_after = retry_after;
        return f;
    }
    if status.is_server_error() {
        let mut f = Failure::retryable(ErrorKind::Server, format!("{status}{detail}"));
        f.retry_after = retry_after;
        return f;
    }
    Failure::fatal(ErrorKind::Client, format!("{status}{detail}"))
}

/// `: message` from an OpenAI-style error body, short, or nothing.
fn server_message(body: &[u8]) -> String {
    let v: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => return String::new(),
    };
    let msg = v["error"]["message"]
        .as_str()
        .or(v["error"].as_str())
        .or(v["message"].as_str());
    match msg {
        Some(m) => {
            let m: String = m.chars().take(200).collect();
            format!(": {m}")
        }
        None => String::new(),
    }
}

/// After attempt `n` failed with `f`: the failure back when another attempt may mend it, else
/// the call's error (saying how many attempts it took). [`with_retries`] and [`call_any`] end
/// a call by the same rule.
fn retry_or_give_up(f: Failure, n: u32, policy: &RetryPolicy) -> Result<Failure, CallError> {
    if f.retry && n < policy.max_attempts.max(1) {
        return Ok(f);
    }
    let mut error = f.error;
    if n > 1 {
        error.message = format!("{} (after {n} attempts)", error.message);
    }
    Err(error)
}

/// Run `attempt` until it succeeds, fails for good, or the policy's attempts are spent.
pub async fn with_retries<T, F, Fut>(policy: &RetryPolicy, mut attempt: F) -> Result<T, CallError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let mut n = 1;
    loop {
        let f = match attempt().await {
            Ok(v) => return Ok(v),
            Err(f) => retry_or_give_up(f, n, policy)?,
        };
        tokio::time::sleep(policy.delay(n, f.retry_after)).await;
        n += 1;
    }
}

/// [`with_retries`] under `endpoint`'s policy, counting connection failures in a row: once the
/// server is dead ([`DEAD_AFTER`]), attempts fail at once without connecting.
pub async fn call<T, F, Fut>(endpoint: &Endpoint, mut attempt: F) -> Result<T, CallError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let dead = endpoint.dead.clone();
    with_retries(&endpoint.retry, || {
        let next = (!dead.is_dead()).then(&mut attempt);
        let dead = dead.clone();
        let shown = &endpoint.shown;
        async move {
            let Some(next) = next else {
                return Err(Failure::fatal(
                    ErrorKind::Connect,
                    format!(
                        "cannot connect to {shown} ({DEAD_AFTER} connection attempts in a row failed; no more are made)"
                    ),
                ));
            };
            let outcome = next.await.map_err(|f| endpoint.hidden(f));
            dead.record(&outcome);
            outcome
        }
    })
    .await
}

/// One client for every call: connections are pooled and reused.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        // A redirect is an error naming it (see `status_failure`): followed, it would carry
        // the configured headers to another host, and a 301 or 302 would turn the POST into
        // a GET whose reply is used.
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(64)
        .user_agent(concat!("rageval/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let s = Secret("sk-very-secret".into());
        assert!(!format!("{s:?}").contains("sk-"));
    }

    #[test]
    fn urls_keep_the_query_after_the_path_and_show_no_credential() {
        let ep = Endpoint::for_tests("http://u:sk-1@127.0.0.1:1/v1/?api-version=2");
        assert_eq!(
            ep.url("/chat/completions"),
            "http://u:sk-1@127.0.0.1:1/v1/chat/completions?api-version=2"
        );
        assert_eq!(ep.shown, "http://<redacted>@127.0.0.1:1/v1/?<redacted>");
        assert!(!format!("{ep:?}").contains("sk-1"));
    }

    /// A server on loopback that answers with the `Authorization` headers it received.
    async fn echo_authorization() -> String {
        use axum::routing::post;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route(
            "/v1/echo",
            post(|headers: HeaderMap| async move {
                let seen: Vec<String> = headers
                    .get_all(AUTHORIZATION)
                    .iter()
                    .map(|v| v.to_str().unwrap_or("?").to_string())
                    .collect();
                axum::Json(seen)
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("127.0.0.1:{}", addr.port())
    }

    async fn sent(ep: &Endpoint) -> Vec<String> {
        let response = ep
            .post(&client().unwrap(), "echo", Vec::new())
            .send()
            .await
            .unwrap();
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
    }

    fn endpoint(url: &str, key_env: &str) -> Result<Endpoint, String> {
        Endpoint::new(
            url,
            key_env,
            &[],
            Duration::from_secs(60),
            RetryPolicy::default(),
        )
    }

    #[tokio::test]
    async fn credentials_in_the_url_or_a_key_make_one_authorization_header() {
        let host = echo_authorization().await;
        // `user:pass`, as reqwest sends URL credentials: Basic auth, off the URL.
        let ep = endpoint(
            &format!("http://user:pass@{host}/v1"),
            "RAGEVAL_TEST_NO_SUCH_VAR",
        );
        assert_eq!(sent(&ep.unwrap()).await, ["Basic dXNlcjpwYXNz"]);
        // A key (`$PATH` is set wherever tests run) is the Bearer token.
        let key = std::env::var("PATH").unwrap();
        let ep = endpoint(&format!("http://{host}/v1"), "PATH");
        assert_eq!(sent(&ep.unwrap()).await, [format!("Bearer {key}")]);
        // Both would send two: refused, naming neither secret.
        let err = endpoint(&format!("http://user:s3cret@{host}/v1?k=q"), "PATH").unwrap_err();
        assert_eq!(
            err,
            format!("base_url `http://<redacted>@{host}/v1?<redacted>` holds credentials (`user:password@`, sent as Basic auth) and `$PATH` holds an API key (sent as a Bearer token): a request carries one `Authorization` header, so keep one of them (remove the credentials from the URL, or point `api_key_env` at a variable that is not set)")
        );
        // An `Authorization` header beside a key would be a second one too.
        let header = [("authorization".to_string(), "Bearer x".to_string())];
        let both = Endpoint::new(
            &format!("http://{host}/v1"),
            "PATH",
            &header,
            Duration::from_secs(5),
            RetryPolicy::default(),
        );
        assert_eq!(
            both.unwrap_err(),
            authorization_conflict_message("authorization", "PATH")
        );
        // A user name alone is credentials too; an `@` in the path is not.
        assert!(endpoint(&format!("http://user@{host}/v1"), "PATH").is_err());
        assert!(endpoint(&format!("http://{host}/v1/a@b"), "PATH").is_ok());
    }

    /// A reply that announces more than the limit is refused before its body is read, naming
    /// the URL (query redacted); one at the limit is read whole.
    #[tokio::test]
    async fn a_reply_past_the_limit_is_refused_naming_the_url() {
        use axum::routing::post;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new()
            .route(
                "/v1/big",
                post(|| async { vec![b'x'; MAX_REPLY_BYTES + 1] }),
            )
            .route("/v1/full", post(|| async { vec![b'x'; MAX_REPLY_BYTES] }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let ep = endpoint(
            &format!("http://{addr}/v1?key=s3cret"),
            "RAGEVAL_TEST_NO_SUCH_VAR",
        )
        .unwrap();
        let client = client().unwrap();
        let f = ep
            .post_for_body(&client, "big", Vec::new())
            .await
            .unwrap_err();
        assert_eq!(f.error.kind, ErrorKind::Malformed);
        assert!(!f.retry);
        assert_eq!(
            f.error.message,
            format!(
                "the reply from http://{addr}/v1/big?<redacted> is larger than the limit of 32 MiB"
            )
        );
        let body = ep.post_for_body(&client, "full", Vec::new()).await.unwrap();
        assert_eq!(body.len(), MAX_REPLY_BYTES);
    }

    #[test]
    fn a_server_is_dead_after_connection_failures_in_a_row_only() {
        let d = DeadServer::default();
        let refused = || Err::<(), _>(Failure::retryable(ErrorKind::Connect, "refused"));
        for _ in 0..DEAD_AFTER - 1 {
            d.record(&refused());
        }
        d.record(&Err::<(), _>(Failure::retryable(ErrorKind::Server, "500")));
        for _ in 0..DEAD_AFTER - 1 {
            d.record(&refused());
        }
        assert!(!d.is_dead(), "an answer in between resets the count");
        d.record(&refused());
        assert!(d.is_dead());
    }

    #[test]
    fn backoff_grows_is_capped_and_honours_retry_after() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        for _ in 0..100 {
            assert!(p.delay(1, None) <= Duration::from_millis(100));
            assert!(p.delay(3, None) <= Duration::from_millis(400));
            assert!(p.delay(12, None) <= Duration::from_secs(1));
            assert!(p.delay(1, Some(Duration::from_millis(700))) >= Duration::from_millis(700));
            assert_eq!(
                p.delay(1, Some(Duration::from_secs(60))),
                Duration::from_secs(1)
            );
        }
    }

    #[test]
    fn statuses_are_classified() {
        let ep = Endpoint::for_tests("http://127.0.0.1:1/v1");
        let h = HeaderMap::new();
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-abc"}}"#;
        let f = status_failure(StatusCode::UNAUTHORIZED, &h, body, &ep);
        assert_eq!(f.error.kind, ErrorKind::Auth);
        assert!(!f.retry);
        assert!(f.error.message.contains("RAGEVAL_TEST_NO_SUCH_VAR"));
        assert!(
            !f.error.message.contains("sk-abc"),
            "a 401 body is never shown"
        );
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        let f = status_failure(StatusCode::TOO_MANY_REQUESTS, &h, b"", &ep);
        assert!(f.retry);
        assert_eq!(f.retry_after, Some(Duration::from_secs(2)));
        // A number too large for a Duration is the longest wait, never a panic; garbage and
        // negative or non-finite numbers are no Retry-After at all.
        for (value, want) in [
            ("1e308", Some(Duration::from_secs(86_400))),
            ("1e30", Some(Duration::from_secs(86_400))),
            (" 0.5 ", Some(Duration::from_millis(500))),
            ("-1", None),
            ("inf", None),
            ("NaN", None),
            ("Wed, 21 Oct 2015 07:28:00 GMT", None),
        ] {
            h.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
            let f = status_failure(StatusCode::SERVICE_UNAVAILABLE, &h, b"", &ep);
            assert_eq!(f.retry_after, want, "Retry-After: {value}");
        }
        assert!(status_failure(StatusCode::SERVICE_UNAVAILABLE, &h, b"", &ep).retry);
        let f = status_failure(
            StatusCode::BAD_REQUEST,
            &h,
            br#"{"error":{"message":"bad model"}}"#,
            &ep,
        );
        assert!(!f.retry);
        assert!(f.error.message.ends_with(": bad model"));
    }

    #[tokio::test]
    async fn retries_stop_at_the_bound_and_on_fatal_errors() {
        let policy = RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        };
        let mut calls = 0;
        let r: Result<(), _> = with_retries(&policy, || {
            calls += 1;
            async { Err(Failure::retryable(ErrorKind::Server, "500")) }
        })
        .await;
        assert_eq!(calls, 3);
        assert!(r.unwrap_err().message.contains("after 3 attempts"));
        let mut calls = 0;
        let _ = with_retries::<(), _, _>(&policy, || {
            calls += 1;
            async { Err(Failure::fatal(ErrorKind::Client, "400")) }
        })
        .await;
        assert_eq!(calls, 1);
        let mut calls = 0;
        let r = with_retries(&policy, || {
            calls += 1;
            let ok = calls == 2;
            async move {
                if ok {
                    Ok(7)
                } else {
                    Err(Failure::retryable(ErrorKind::Timeout, "t"))
                }
            }
        })
        .await;
        assert_eq!(r.unwrap(), 7);
    }
}
