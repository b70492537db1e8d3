//! A failed attempt and how a transport error or a status becomes one: retryable or not, its
//! message free of secrets.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;

use super::{retry_after_seconds, Endpoint};
use crate::vocab::call::{CallError, ErrorKind};

/// A failed attempt: the error and whether another attempt may help.
#[derive(Debug)]
pub struct Failure {
    pub error: CallError,
    pub retry: bool,
    pub retry_after: Option<Duration>,
}

impl Failure {
    /// A failure whose message may quote a server's words: they are kept on one line.
    pub fn fatal(kind: ErrorKind, message: impl Into<String>) -> Self {
        let message: String = message.into();
        Failure {
            error: CallError {
                kind,
                message: crate::base::safe_text::one_line(&message).into_owned(),
                deferred: false,
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
        } else if endpoint.api_key_env.is_empty() {
            "no API key (the section names no `api_key_env`)".to_string()
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
