//! One OpenAI-compatible server: its URL, API key and headers (kept out of every message),
//! and the requests sent to it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};

use super::{DeadServer, Failure, RetryPolicy};

/// A value that must never be shown.
#[derive(Clone)]
pub struct Secret(pub(super) String);

impl Secret {
    /// A secret read from somewhere other than an endpoint's key variable (a CI token).
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

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
    pub(super) api_key: Option<Secret>,
    pub headers: HeaderMap,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Shared by every clone: the calls of a sweep count together.
    pub dead: Arc<DeadServer>,
    /// The key, every header value and the URL's credentials: hidden from any text this
    /// server sends back before it is shown or written ([`Endpoint::hide`]).
    pub(super) secrets: crate::base::redact::Secrets,
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
    pub(super) fn hidden(&self, mut f: Failure) -> Failure {
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
}

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
